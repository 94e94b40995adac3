/** Problems in a configuration, as data: where (file, line, path), what was given, what was expected. */

/** A step in a field path: an object key (instance ids are keys too) or a list index. */
export type PathSeg = string | number;

/** A rule violation found on a parsed config, before it is tied to a file and line. */
export interface RuleIssue {
  path: readonly PathSeg[];
  /** The offending value; omitted when the field is missing. */
  value?: unknown;
  expected: string;
  severity: "error" | "warning";
  /**
   * For a field that is read but has no effect: why, said in place of "got ..., expected ..." (as an unknown
   * key is "unknown key, ignored"), for a warning.
   */
  ignored?: string;
  /**
   * The other fields the rule read, each as precisely as it can be named (`ports[0].value`, not `ports`):
   * when one of them, or the issue's own field, was malformed in the input, the rule is not judged.
   */
  uses?: readonly (readonly PathSeg[])[];
}

/**
 * What the rules must know about a config checked with its malformed parts taken out (see `_salvage.ts`):
 * a field that did not parse is absent or at its default, so a rule that reads it could be wrong.
 */
export interface Gaps {
  /** Whether a path of the checked value is at or inside a field that was malformed in the input. */
  malformed(path: readonly PathSeg[]): boolean;
  /** The path as it is in the input: list entries taken out shift the indices of those after them. */
  original(path: readonly PathSeg[]): PathSeg[];
}

/** The gaps of a config that parsed whole: none. */
export const NO_GAPS: Gaps = { malformed: () => false, original: (path) => [...path] };

/** Whether an issue can be trusted: neither its field nor a field it read was malformed. */
export const judged = (issue: RuleIssue, gaps: Gaps): boolean =>
  !gaps.malformed(issue.path) && !(issue.uses ?? []).some((p) => gaps.malformed(p));

/** The kinds of config file there are; "unknown" when a file is none of them. */
export type ConfigKind = "job" | "respool" | "stateless-spec" | "update" | "unknown";

/** A problem in the user's input; its path is spelled as in the file (`defaultconfig.resource.cpulimit`). */
export interface ConfigIssue {
  file: string;
  line?: number;
  column?: number;
  path: string;
  value?: unknown;
  expected: string;
  /** One line: `<file>:<line>: <path>: got <value>, expected <expected>`. */
  message: string;
  /** Set when the whole file was refused for being a config of another kind: the kind it is. */
  fileKind?: ConfigKind;
}

export type LoadResult<T> =
  | { ok: true; value: T; warnings: ConfigIssue[] }
  | { ok: false; errors: ConfigIssue[]; warnings: ConfigIssue[] };

/** `defaultConfig.ports[0].name`; instance ids are keys, so `instanceConfig.3.command`. */
export function formatPath(path: readonly PathSeg[]): string {
  let out = "";
  for (const seg of path) out += typeof seg === "number" ? `[${seg}]` : out === "" ? seg : `.${seg}`;
  return out;
}

/** A short rendering of a value for a message: strings quoted, collections named. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "string") {
    const s = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(s);
  }
  if (Array.isArray(value)) return value.length === 0 ? "an empty list" : "a list";
  if (value !== null && typeof value === "object") return "a mapping";
  return String(value);
}

/** Builds an issue and its one-line message; `hasValue` false renders as "missing". */
export function makeIssue(
  at: { file: string; line?: number; column?: number; path: string },
  expected: string,
  value: { present: boolean; value?: unknown },
): ConfigIssue {
  const where = at.line === undefined ? at.file : `${at.file}:${at.line}`;
  const field = at.path === "" ? "(top level)" : at.path;
  const got = value.present ? `got ${describeValue(value.value)}` : "missing";
  const issue: ConfigIssue = { ...at, expected, message: `${where}: ${field}: ${got}, expected ${expected}` };
  if (value.present) issue.value = value.value;
  return issue;
}

/** Several issues as text, one message per line, in file order. */
export function formatIssues(issues: readonly ConfigIssue[]): string {
  const sorted = [...issues].sort((a, b) =>
    a.file === b.file ? (a.line ?? 0) - (b.line ?? 0) : a.file < b.file ? -1 : 1
  );
  return sorted.map((i) => i.message).join("\n");
}
