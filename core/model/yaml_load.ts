/** Parses YAML (or takes a plain JSON value) into a source tree that keeps each node's line and column. */
import {
  type Alias,
  Composer,
  CST,
  type Document,
  type DocumentOptions,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type ParseOptions,
  Parser,
  type SchemaOptions,
  visit,
  type YAMLError,
  YAMLParseError,
} from "yaml";

/** Where a node starts in its file, 1-based; absent for values that did not come from text. */
export interface SourcePos {
  line?: number;
  column?: number;
}

/** One `key: value` of a mapping; the position is the key's, which is where a reader looks for the field. */
export interface SourceEntry extends SourcePos {
  key: string;
  value: SourceNode;
  /** Came in through a YAML merge key (`<<: *base`), so an explicit key may override it silently. */
  merged?: boolean;
}

export type SourceNode =
  | ({ kind: "map"; entries: SourceEntry[] } & SourcePos)
  | ({ kind: "seq"; items: SourceNode[] } & SourcePos)
  /** `text` is the scalar as written (`1.0`, `yes`), used where the schema wants text. */
  | ({ kind: "scalar"; value: unknown; text?: string } & SourcePos);

/** A problem the YAML parser reported. */
export interface YamlProblem {
  line: number;
  column: number;
  message: string;
}

export type YamlParseResult =
  | { ok: true; root: SourceNode; warnings: YamlProblem[] }
  | { ok: false; errors: YamlProblem[] };

/**
 * Lists and mappings one inside another: deeper than any config. Deeper text is refused before it is
 * composed (the yaml library's composer recurses, and overflows the stack near 1,000 levels); alias cycles
 * such as `&a [*a]` are cut at the same depth while converting.
 */
export const MAX_DEPTH = 64;
/**
 * Values that aliases may repeat in one document. Nested aliases multiply ("billion laughs": nine levels of
 * ten aliases are 10^9 values); the yaml library's own limit (`maxAliasCount`) only guards its `toJS`.
 */
export const MAX_ALIASED_VALUES = 100_000;

/**
 * Parses one YAML document as YAML 1.1 (what Peloton's Go CLI and PyYAML read). Duplicate keys are
 * allowed here, as they were there (`tests/integration/test_configs/test_stateless_job.yaml` has two
 * `changeLog` keys); the key normalizer reports them.
 */
export function parseYamlSource(text: string): YamlParseResult {
  const lineCounter = new LineCounter();
  // `parseDocument` in its two steps, so the tokens are checked for depth before they are composed.
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const tooDeep = tooDeepAt(tokens);
  const at = (offset: number) => {
    const { line, col } = offset < 0 ? { line: 1, col: 1 } : lineCounter.linePos(offset);
    return { line, column: col };
  };
  if (tooDeep !== undefined) return { ok: false, errors: [{ ...at(tooDeep), message: TOO_DEEP }] };
  const doc = composeOne(tokens, text.length);
  const toProblem = (e: YAMLError) => ({ ...at(e.pos[0]), message: e.message.split("\n")[0] });
  if (doc.errors.length > 0) return { ok: false, errors: doc.errors.map(toProblem) };
  const converter = new Converter(doc, lineCounter);
  // An empty document has no node; its problems are reported on line 1.
  const root = { line: 1, column: 1, ...converter.node(doc.contents as Node | null, 0) };
  if (converter.problems.length > 0) return { ok: false, errors: converter.problems };
  return { ok: true, root, warnings: doc.warnings.map(toProblem) };
}

/** The first document of the tokens, with an error if there is another, as `parseDocument` makes it. */
function composeOne(
  tokens: CST.Token[],
  length: number,
  options: ParseOptions & DocumentOptions & SchemaOptions = {
    uniqueKeys: false,
    version: "1.1",
    // YAML 1.1 would turn timestamps into Date objects; configs only hold them as text.
    customTags: (tags) =>
      tags.filter((t) => typeof t === "string" || t.tag !== "tag:yaml.org,2002:timestamp"),
  },
): Document.Parsed {
  const composer = new Composer(options);
  const [doc, second] = composer.compose(tokens, true, length);
  if (second) {
    const [start, end] = second.range;
    const message = "Source contains multiple documents; please use YAML.parseAllDocuments()";
    doc.errors.push(new YAMLParseError([start, end], "MULTIPLE_DOCS", message));
  }
  return doc;
}

/**
 * The yaml library's `parseDocument` for the readers that walk its document themselves (scenarios, what-if
 * files), with the depth limit of `parseYamlSource`: text nested past MAX_DEPTH is not composed, and comes
 * back as an empty document with that one error where the collection too deep starts.
 */
export function parseDocumentBounded(
  text: string,
  options: ParseOptions & DocumentOptions & SchemaOptions = {},
): Document.Parsed {
  const { lineCounter, ...rest } = options;
  const tokens = [...new Parser(lineCounter?.addNewLine).parse(text)];
  const tooDeep = tooDeepAt(tokens);
  if (tooDeep === undefined) return composeOne(tokens, text.length, rest);
  const empty = composeOne([], text.length, rest);
  empty.errors.push(new YAMLParseError([tooDeep, tooDeep + 1], "BAD_INDENT", TOO_DEEP));
  return empty;
}

/**
 * The plain value of a small YAML file (an auth file, an agents list, a patch), as the yaml library's `parse`
 * gives it; throws the first error, a file nested past MAX_DEPTH included, with its line.
 */
export function parseYamlValue(text: string): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocumentBounded(text, { lineCounter });
  const [first] = doc.errors;
  if (first) {
    throw new Error(`line ${lineCounter.linePos(first.pos[0]).line}: ${first.message.split("\n")[0]}`);
  }
  return doc.toJS();
}

/** The message for lists and mappings nested past MAX_DEPTH, from a file or through aliases. */
const TOO_DEEP = `lists and mappings nested more than ${MAX_DEPTH} levels deep`;

/**
 * Where the first collection nested past MAX_DEPTH starts, found on the parser's tokens (the parser keeps
 * its own stack, so any depth is safe there) and walked without recursion; undefined when none is.
 */
function tooDeepAt(tokens: readonly CST.Token[]): number | undefined {
  // Depth-first in file order, so the first found is the first in the file.
  const stack: [CST.Token, number][] = [];
  for (const doc of [...tokens].reverse()) {
    if (doc.type === "document" && doc.value) stack.push([doc.value, 1]);
  }
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [token, depth] = next;
    if (!CST.isCollection(token)) continue;
    if (depth > MAX_DEPTH) return token.offset;
    for (const item of [...token.items].reverse()) {
      if (item.value) stack.push([item.value, depth + 1]);
      if (item.key) stack.push([item.key, depth + 1]);
    }
  }
  return undefined;
}

/** Wraps a plain JSON-like value (an API body) as a source tree without positions. */
export function plainToSource(value: unknown, depth = 0): SourceNode {
  // Cut cycles and absurd nesting; the schema then reports the null where a value was expected.
  if (depth > MAX_DEPTH) return { kind: "scalar", value: null };
  if (Array.isArray(value)) return { kind: "seq", items: value.map((v) => plainToSource(v, depth + 1)) };
  if (isPlainObject(value)) {
    return {
      kind: "map",
      entries: Object.entries(value).map(([key, v]) => ({ key, value: plainToSource(v, depth + 1) })),
    };
  }
  return { kind: "scalar", value };
}

/** The plain value of a source tree; later duplicate keys win, as in every YAML loader Peloton used. */
export function sourceToPlain(node: SourceNode): unknown {
  switch (node.kind) {
    case "scalar":
      return node.value;
    case "seq":
      return node.items.map(sourceToPlain);
    case "map": {
      const out: Record<string, unknown> = {};
      for (const e of node.entries) out[e.key] = sourceToPlain(e.value);
      return out;
    }
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

class Converter {
  readonly problems: YamlProblem[] = [];
  private aliasedValues = 0;
  /** The outermost alias being expanded, where an expansion over the limit is reported. */
  private aliasAt: SourcePos = {};
  private readonly targets: Map<Alias, Node>;

  constructor(doc: Document, private readonly lines: LineCounter) {
    this.targets = aliasTargets(doc);
  }

  /** `aliased`: the node is reached through an alias, so it counts against MAX_ALIASED_VALUES. */
  node(node: Node | null, depth: number, aliased = false): SourceNode {
    const pos = this.pos(node);
    if (depth > MAX_DEPTH) {
      this.problems.push({ line: pos.line ?? 1, column: pos.column ?? 1, message: TOO_DEEP });
      return { kind: "scalar", value: null, ...pos };
    }
    if (aliased && ++this.aliasedValues > MAX_ALIASED_VALUES) {
      // Reported once; the rest of the expansion is cut short, so the cost stays bounded.
      if (this.aliasedValues === MAX_ALIASED_VALUES + 1) {
        this.problems.push({
          line: this.aliasAt.line ?? 1,
          column: this.aliasAt.column ?? 1,
          message: `aliases expand to more than ${MAX_ALIASED_VALUES} values (nested aliases multiply)`,
        });
      }
      return { kind: "scalar", value: null, ...pos };
    }
    if (node === null) return { kind: "scalar", value: null, ...pos };
    if (isAlias(node)) {
      const target = this.targets.get(node);
      if (!target) {
        // Reported where it is written, not again wherever an alias repeats it.
        const message = `alias *${node.source} has no anchor &${node.source} before it`;
        if (!aliased) this.problems.push({ line: pos.line ?? 1, column: pos.column ?? 1, message });
        return { kind: "scalar", value: null, ...pos };
      }
      if (!aliased) this.aliasAt = pos;
      return { ...this.node(target, depth + 1, true), ...pos };
    }
    if (isMap(node)) return { kind: "map", entries: this.entries(node.items, depth, aliased), ...pos };
    if (isSeq(node)) {
      return {
        kind: "seq",
        items: node.items.map((n) => this.node(n as Node, depth + 1, aliased)),
        ...pos,
      };
    }
    if (isScalar(node)) {
      const value = node.value;
      return {
        kind: "scalar",
        value,
        text: typeof node.source === "string" ? node.source : undefined,
        ...pos,
      };
    }
    return { kind: "scalar", value: null, ...pos };
  }

  private entries(items: unknown[], depth: number, aliased: boolean): SourceEntry[] {
    const merged: SourceEntry[] = [];
    const own: SourceEntry[] = [];
    for (const pair of items) {
      if (!isPair(pair)) continue;
      const keyNode = pair.key as Node | null;
      const value = this.node(pair.value as Node | null, depth + 1, aliased);
      if (isScalar(keyNode) && typeof keyNode.value === "symbol" && keyNode.source === "<<") {
        const sources = value.kind === "seq" ? value.items : [value];
        for (const s of sources) {
          if (s.kind === "map") merged.push(...s.entries.map((e) => ({ ...e, merged: true })));
        }
        continue;
      }
      own.push({ key: this.keyText(keyNode), value, ...this.pos(keyNode) });
    }
    return [...merged, ...own];
  }

  private keyText(key: Node | null): string {
    if (key === null) return "";
    // The key as written: YAML 1.1 reads a key `y` as `true`, but the user meant "y".
    if (isScalar(key)) return typeof key.source === "string" ? key.source : String(key.value);
    return JSON.stringify(key.toJSON());
  }

  private pos(node: Node | null): SourcePos {
    const offset = node?.range?.[0];
    if (offset === undefined) return {};
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }
}

/**
 * Each alias's node: the last one before it with its anchor, as `Alias.resolve` finds it, but in one walk
 * (that method walks the whole document for every alias).
 */
function aliasTargets(doc: Document): Map<Alias, Node> {
  const targets = new Map<Alias, Node>();
  const anchored = new Map<string, Node>();
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) {
        const target = anchored.get(node.source);
        if (target) targets.set(node, target);
      } else if (node.anchor) anchored.set(node.anchor, node);
    },
  });
  return targets;
}
