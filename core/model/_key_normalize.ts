/** Pre-pass before zod: maps the user's keys onto the schema's names, remembering where each came from. */

// Keys match case-insensitively ignoring `_` (Go CLI `instancecount`, proto-JSON `instanceCount`, proto
// `instance_count`); explicit nulls read as absent; unknown keys are dropped with a warning. Each field's
// original path and line are kept so errors found later by zod or the rules point into the user's file.
import type { z } from "zod";
import { canonKey, type KeyMeta, keyMeta } from "./_schema_kit.ts";
import { formatPath, type PathSeg } from "./config_issues.ts";
import type { SourceEntry, SourceNode, SourcePos } from "./yaml_load.ts";

/** Where a field is in the user's input: its path as the user spelled it, and its line. */
export interface SourceLoc extends SourcePos {
  path: string;
}

/** Something about the keys worth telling the user; never fatal. */
export interface KeyNote extends SourceLoc {
  kind: "unknown-key" | "duplicate-key";
  /** For unknown keys: the names valid at that place. */
  known?: readonly string[];
  /** For unknown keys: a known name the key is close to. */
  suggestion?: string;
  /** For duplicate keys: the line of the occurrence that was overridden. */
  firstLine?: number;
}

export interface Normalized {
  /** The input with canonical keys, ready for the zod schema. */
  value: unknown;
  notes: KeyNote[];
  /** The user's path and line for a canonical path, from its nearest ancestor present in the input. */
  locate(path: readonly PathSeg[]): SourceLoc;
}

// The slice of zod's internal schema definition the walk reads (zod v4 `_zod.def`).
interface Def {
  type: string;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  getter?: () => Schema;
  options?: Schema[];
  shape?: Record<string, Schema>;
  catchall?: Schema;
  valueType?: Schema;
  element?: Schema;
}
interface Schema {
  _zod: { def: Def };
}

const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "catch", "readonly", "nonoptional"]);

/** Follows wrappers, pipes and lazies down to the schema that decides the shape of a node. */
function resolve(schema: Schema | undefined, kind: SourceNode["kind"]): { core?: Def; meta: KeyMeta } {
  const meta: KeyMeta = {};
  let s = schema;
  for (let guard = 0; s !== undefined && guard < 64; guard++) {
    Object.assign(meta, keyMeta.get(s as unknown as z.ZodType) ?? {});
    const d = s._zod.def;
    if (WRAPPERS.has(d.type)) s = d.innerType;
    else if (d.type === "pipe") s = d.in?._zod.def.type === "transform" ? d.out : d.in;
    else if (d.type === "lazy") s = d.getter?.();
    else if (d.type === "union") s = d.options?.find((o) => fits(resolve(o, kind).core, kind));
    else return { core: d, meta };
  }
  return { meta };
}

function fits(core: Def | undefined, kind: SourceNode["kind"]): boolean {
  const t = core?.type;
  if (kind === "map") return t === "object" || t === "record";
  if (kind === "seq") return t === "array";
  return t !== "object" && t !== "record" && t !== "array";
}

interface KeyTable {
  byCanon: Map<string, string>;
  ignored: Set<string>;
  loose: boolean;
}

const tables = new WeakMap<Def, KeyTable>();

function keyTable(def: Def, meta: KeyMeta): KeyTable {
  let t = tables.get(def);
  if (t) return t;
  const byCanon = new Map<string, string>();
  for (const k of Object.keys(def.shape ?? {})) byCanon.set(canonKey(k), k);
  for (const [alias, k] of Object.entries(meta.aliases ?? {})) byCanon.set(canonKey(alias), k);
  const ignored = new Set((meta.ignoredKeys ?? []).map(canonKey));
  t = { byCanon, ignored, loose: def.catchall !== undefined && def.catchall._zod.def.type !== "never" };
  tables.set(def, t);
  return t;
}

const isNull = (n: SourceNode) => n.kind === "scalar" && n.value === null;
const joinKey = (orig: string, key: string) => orig === "" ? key : `${orig}.${key}`;

class Walker {
  readonly locs = new Map<string, SourceLoc>();
  readonly notes: KeyNote[] = [];

  walk(node: SourceNode, schema: Schema | undefined, path: PathSeg[], orig: string, pos: SourcePos): unknown {
    this.locs.set(JSON.stringify(path), { path: orig, line: pos.line, column: pos.column });
    const { core, meta } = schema === undefined
      ? { core: undefined, meta: {} as KeyMeta }
      : resolve(schema, node.kind);
    if (node.kind === "scalar") {
      const wantsText = meta.text === true && node.value !== null && typeof node.value !== "string";
      return wantsText && node.text !== undefined ? node.text : node.value;
    }
    if (node.kind === "seq") {
      const el = core?.type === "array" ? core.element : undefined;
      return node.items.map((item, i) => this.walk(item, el, [...path, i], `${orig}[${i}]`, item));
    }
    if (core?.type === "object") return this.object(node.entries, core, meta, path, orig);
    const valueSchema = core?.type === "record" ? core.valueType : undefined;
    const out: Record<string, unknown> = {};
    for (const [key, e] of this.chosen(node.entries, (e) => e.key, orig)) {
      out[key] = this.walk(e.value, valueSchema, [...path, key], joinKey(orig, e.key), e);
    }
    return out;
  }

  /**
   * The entry each name keeps, by `nameOf` (undefined: not kept). A name given twice is noted (YAML `1:`
   * and `"1":` are the same instance of `instanceConfig`, and only one can be kept), and the later one
   * wins, except that a key written in the map overrides one brought in by `<<: *base`, never the other way
   * round.
   */
  private chosen(
    entries: SourceEntry[],
    nameOf: (e: SourceEntry) => string | undefined,
    orig: string,
  ): Map<string, SourceEntry> {
    const chosen = new Map<string, SourceEntry>();
    for (const e of entries) {
      if (isNull(e.value)) continue;
      const name = nameOf(e);
      if (name === undefined) continue;
      const prev = chosen.get(name);
      if (prev && !prev.merged && !e.merged) {
        this.notes.push({
          kind: "duplicate-key",
          path: joinKey(orig, e.key),
          line: e.line,
          column: e.column,
          firstLine: prev.line,
        });
      }
      if (!prev || !e.merged || prev.merged) chosen.set(name, e);
    }
    return chosen;
  }

  private object(entries: SourceEntry[], def: Def, meta: KeyMeta, path: PathSeg[], orig: string) {
    const table = keyTable(def, meta);
    const chosen = this.chosen(entries, (e) => {
      const canon = canonKey(e.key);
      const name = table.byCanon.get(canon) ?? (table.loose ? e.key : undefined);
      if (name === undefined && !table.ignored.has(canon)) this.unknownKey(e, def, joinKey(orig, e.key));
      return name;
    }, orig);
    const out: Record<string, unknown> = {};
    for (const [name, e] of chosen) {
      out[name] = this.walk(e.value, def.shape?.[name], [...path, name], joinKey(orig, e.key), e);
    }
    return out;
  }

  private unknownKey(e: SourceEntry, def: Def, path: string) {
    const known = Object.keys(def.shape ?? {});
    const suggestion = closestName(e.key, known);
    this.notes.push({ kind: "unknown-key", path, line: e.line, column: e.column, known, suggestion });
  }
}

/**
 * The one of `known` that `given` is likely a typo of (the "did you mean" of every error that names an
 * unknown key, flag or command): a few edits away (a quarter of its length, at least 2, and fewer than it has
 * characters, so "ls" is no typo of "up") once both are `canon`'s (case and `_` aside by default); undefined
 * when none is that close.
 */
export function closestName(
  given: string,
  known: readonly string[],
  canon: (name: string) => string = canonKey,
): string | undefined {
  const g = canon(given);
  let best = Math.min(Math.max(2, Math.floor(g.length / 4)), g.length - 1) + 1, meant: string | undefined;
  for (const k of known) {
    const d = editDistance(g, canon(k));
    if (d < best) [best, meant] = [d, k];
  }
  return meant;
}

/** Levenshtein distance: the fewest single-character edits that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** Runs the pre-pass over a source tree for the given zod schema. */
export function normalizeKeys(root: SourceNode, schema: z.ZodType): Normalized {
  const w = new Walker();
  const value = w.walk(root, schema as unknown as Schema, [], "", root);
  const locate = (path: readonly PathSeg[]): SourceLoc => {
    for (let n = path.length; n >= 0; n--) {
      const loc = w.locs.get(JSON.stringify(path.slice(0, n)));
      if (!loc) continue;
      const rest = formatPath(path.slice(n));
      const sep = rest === "" || rest.startsWith("[") || loc.path === "" ? "" : ".";
      return { ...loc, path: loc.path + sep + rest };
    }
    return { path: formatPath(path) };
  };
  return { value, notes: w.notes, locate };
}

/** The value at a canonical path of a normalized input, if any. */
export function valueAt(root: unknown, path: readonly PathSeg[]): { present: boolean; value?: unknown } {
  let v: unknown = root;
  for (const seg of path) {
    if (v === null || typeof v !== "object" || !(seg in v)) return { present: false };
    v = (v as Record<PathSeg, unknown>)[seg];
  }
  return { present: v !== undefined, value: v };
}
