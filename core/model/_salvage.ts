/** After a failed parse: the input with its malformed fields taken out, parsed, so the rules can check the rest. */

// The semantic rules need a parsed config, so without this one bad field would hide every rule problem
// in the file. Each pass takes out the fields zod complained about (a key is deleted, so its default
// applies; a list entry is removed; a required field that is missing takes out what holds it, except a
// list, which becomes empty) and parses again. Everything taken out is remembered, so a rule that reads it
// is not judged (see `Gaps`), and list indices are mapped back to the input's. zod's own issues all come
// from the first parse: a check inside a schema that must run despite a malformed field declares `when`
// (see `ConstraintSchema`), since one found later could be an effect of what was taken out.
import type { z } from "zod";
import type { Gaps, PathSeg } from "./config_issues.ts";
import { isPlainObject } from "./yaml_load.ts";

export interface Salvaged<T> {
  value: T;
  gaps: Gaps;
}

type Parse<T> = (value: unknown) => z.ZodSafeParseResult<T>;

/** Passes before giving up; each one takes fields out or goes a level up, so few are ever needed. */
const MAX_PASSES = 32;

/**
 * The input parsed without the fields `issues` (from parsing `input`) complain about; `undefined` when
 * that leaves nothing to parse (the document itself is malformed). The input is not modified.
 */
export function salvage<T>(
  input: unknown,
  issues: readonly z.core.$ZodIssue[],
  parse: Parse<T>,
): Salvaged<T> | undefined {
  const s = new Salvage(input);
  let pending = issues;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    if (!s.takeOut(pending)) return undefined;
    const parsed = parse(s.root);
    if (parsed.success) {
      const gaps: Gaps = {
        malformed: (path) => s.changed.covers(s.original(path)),
        original: (path) => s.original(path),
      };
      return { value: parsed.data, gaps };
    }
    pending = parsed.error.issues;
  }
  return undefined;
}

class Salvage {
  readonly root: unknown;
  /** What was taken out or emptied, as paths in the input. */
  readonly changed = new PathSet();
  /** Required lists that were missing or malformed and are now empty, as JSON paths in the input. */
  private readonly emptied = new Set<string>();
  /** For each list that lost entries, the input index of each entry left. */
  private readonly inputIndex = new WeakMap<unknown[], number[]>();

  constructor(input: unknown) {
    this.root = copy(input);
  }

  /** A path of the current value as a path in the input. */
  original(path: readonly PathSeg[]): PathSeg[] {
    let v = this.root;
    return path.map((seg) => {
      const list = Array.isArray(v) ? v : undefined;
      v = child(v, seg);
      return list && typeof seg === "number" ? this.inputIndex.get(list)?.[seg] ?? seg : seg;
    });
  }

  /** One pass of removals; false when only the whole document could go. */
  takeOut(issues: readonly z.core.$ZodIssue[]): boolean {
    const targets = new Map<string, { path: PathSeg[]; empty: boolean }>();
    for (const iss of issues) {
      let path = pathOf(iss);
      const holder = nodeAt(this.root, path.slice(0, -1));
      const missing = nodeAt(this.root, path) === undefined;
      const list = iss.code === "invalid_type" && iss.expected === "array";
      // Emptied once only: a list that is wrong even when empty goes, with what holds it.
      const once = !this.emptied.has(JSON.stringify(this.original(path)));
      if (missing && list && isPlainObject(holder) && once) {
        targets.set(JSON.stringify(path), { path, empty: true });
        continue;
      }
      while (path.length > 0 && nodeAt(this.root, path) === undefined) path = path.slice(0, -1);
      if (path.length === 0) return false;
      targets.set(JSON.stringify(path), { path, empty: false });
    }
    // What lies inside another target goes with it; later list entries go first, so earlier indices hold.
    const outer = [...targets.values()].filter(({ path }) =>
      !path.some((_, n) => n > 0 && targets.has(JSON.stringify(path.slice(0, n))))
    );
    outer.sort((a, b) => compareDesc(a.path, b.path));
    for (const { path, empty } of outer) this.remove(path, empty);
    return true;
  }

  private remove(path: PathSeg[], empty: boolean): void {
    const inInput = this.original(path);
    this.changed.add(inInput);
    if (empty) this.emptied.add(JSON.stringify(inInput));
    const holder = nodeAt(this.root, path.slice(0, -1));
    const key = path[path.length - 1];
    if (Array.isArray(holder) && typeof key === "number") {
      const index = this.inputIndex.get(holder) ?? holder.map((_, i) => i);
      index.splice(key, 1);
      this.inputIndex.set(holder, index);
      holder.splice(key, 1);
    } else if (isPlainObject(holder)) {
      if (empty) holder[key] = [];
      else delete holder[key];
    }
  }
}

/** A set of paths, asked whether a path is at or inside one of them. */
class PathSet {
  private readonly top: PathNode = { end: false, next: new Map() };

  add(path: readonly PathSeg[]): void {
    let node = this.top;
    for (const seg of path) {
      let next = node.next.get(seg);
      if (!next) node.next.set(seg, next = { end: false, next: new Map() });
      node = next;
    }
    node.end = true;
  }

  /** One of the paths is `path` or holds it. */
  covers(path: readonly PathSeg[]): boolean {
    let node = this.top;
    for (const seg of path) {
      if (node.end) return true;
      const next = node.next.get(seg);
      if (!next) return false;
      node = next;
    }
    return node.end;
  }
}

interface PathNode {
  end: boolean;
  next: Map<PathSeg, PathNode>;
}

function pathOf(iss: z.core.$ZodIssue): PathSeg[] {
  return iss.path.map((p) => typeof p === "symbol" ? String(p) : p);
}

function child(v: unknown, seg: PathSeg): unknown {
  if (Array.isArray(v)) return typeof seg === "number" ? v[seg] : undefined;
  return isPlainObject(v) && Object.hasOwn(v, seg) ? v[seg] : undefined;
}

function nodeAt(root: unknown, path: readonly PathSeg[]): unknown {
  let v = root;
  for (const seg of path) v = child(v, seg);
  return v;
}

/** Lists and mappings copied, so taking things out leaves the caller's value alone; scalars shared. */
function copy(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copy);
  const proto = isPlainObject(v) ? Object.getPrototypeOf(v) : undefined;
  if (proto !== Object.prototype && proto !== null) return v;
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, copy(x)]));
}

/** Descending order, indices compared as numbers, so a list's later entries come first. */
function compareDesc(a: readonly PathSeg[], b: readonly PathSeg[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i], b[i]];
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return y - x;
    return String(y) < String(x) ? -1 : 1;
  }
  return b.length - a.length;
}
