/** Entry points: a config file or an API body in, a normalized config or precise issues out; never throws. */
import type { z } from "zod";
import type { JobConfig, RespoolConfig, StatelessJobSpec, UpdateConfig } from "./config_types.ts";
import {
  type ConfigIssue,
  type ConfigKind,
  type Gaps,
  judged,
  type LoadResult,
  makeIssue,
  NO_GAPS,
  type PathSeg,
  type RuleIssue,
} from "./config_issues.ts";
import { capRestartPolicies, ignoredByType, JobConfigSchema, validateJobConfig } from "./job_config.ts";
import { RespoolConfigSchema, validateRespoolConfig } from "./respool_config.ts";
import {
  capSpecRestartPolicies,
  specPathOf,
  StatelessJobSpecSchema,
  statelessSpecToJobConfig,
  validateStatelessSpec,
} from "./stateless_spec.ts";
import { UpdateConfigSchema } from "./update_config.ts";
import { parseYamlSource, plainToSource, type SourceNode, type YamlProblem } from "./yaml_load.ts";
import { type KeyNote, type Normalized, normalizeKeys, valueAt } from "./_key_normalize.ts";
import { canonKey } from "./_schema_kit.ts";
import { salvage } from "./_salvage.ts";
import { otherKindIssue } from "./_file_shape.ts";

export { type ConfigIssue, type ConfigKind, formatIssues, type LoadResult } from "./config_issues.ts";

export interface LoadOptions {
  /** Run the semantic rules after the schema (default true); false only checks shape and types. */
  validate?: boolean;
  /** Peloton's `max_tasks_per_job` (default 100000). */
  maxTasksPerJob?: number;
}

interface KindSpec<T> {
  name: ConfigKind;
  schema: z.ZodType<T>;
  /** `gaps` names the fields that were malformed, when the config was salvaged from a failed parse. */
  rules(value: T, opts: LoadOptions, gaps: Gaps): RuleIssue[];
  finish?(value: T): T;
}

const JOB: KindSpec<JobConfig> = {
  name: "job",
  schema: JobConfigSchema,
  rules: (config, opts, gaps) => [...validateJobConfig(config, { ...opts, gaps }), ...ignoredByType(config)],
  finish: capRestartPolicies,
};
const RESPOOL: KindSpec<RespoolConfig> = {
  name: "respool",
  schema: RespoolConfigSchema,
  rules: (config, _opts, gaps) => validateRespoolConfig(config, gaps),
};
const UPDATE: KindSpec<UpdateConfig> = { name: "update", schema: UpdateConfigSchema, rules: () => [] };
// A spec is checked as the JobConfig Peloton turns it into; paths are mapped back into the spec.
const SPEC: KindSpec<StatelessJobSpec> = {
  name: "stateless-spec",
  schema: StatelessJobSpecSchema,
  rules: (spec, opts, gaps) => {
    const jobGaps: Gaps = { malformed: (path) => gaps.malformed(specPathOf(path)), original: gaps.original };
    const jobIssues = validateJobConfig(statelessSpecToJobConfig(spec), { ...opts, gaps: jobGaps });
    return [
      ...validateStatelessSpec(spec),
      ...jobIssues.map((i) => ({ ...i, path: specPathOf(i.path), uses: i.uses?.map(specPathOf) })),
    ];
  },
  finish: capSpecRestartPolicies,
};

const KINDS = { job: JOB, respool: RESPOOL, update: UPDATE, "stateless-spec": SPEC } as const;

export const loadJobConfig = (text: string, file: string, opts?: LoadOptions): LoadResult<JobConfig> =>
  loadText(JOB, text, file, opts);
export const loadRespoolConfig = (
  text: string,
  file: string,
  opts?: LoadOptions,
): LoadResult<RespoolConfig> => loadText(RESPOOL, text, file, opts);
export const loadUpdateConfig = (text: string, file: string, opts?: LoadOptions): LoadResult<UpdateConfig> =>
  loadText(UPDATE, text, file, opts);
export const loadStatelessSpec = (
  text: string,
  file: string,
  opts?: LoadOptions,
): LoadResult<StatelessJobSpec> => loadText(SPEC, text, file, opts);

/** The same for API bodies (proto-JSON or YAML-style keys); issues name `source` instead of a file. */
export const parseJobConfig = (obj: unknown, source = "request", opts?: LoadOptions): LoadResult<JobConfig> =>
  run(JOB, plainToSource(obj), source, opts ?? {}, []);
export const parseRespoolConfig = (
  obj: unknown,
  source = "request",
  opts?: LoadOptions,
): LoadResult<RespoolConfig> => run(RESPOOL, plainToSource(obj), source, opts ?? {}, []);
export const parseUpdateConfig = (
  obj: unknown,
  source = "request",
  opts?: LoadOptions,
): LoadResult<UpdateConfig> => run(UPDATE, plainToSource(obj), source, opts ?? {}, []);
export const parseStatelessSpec = (
  obj: unknown,
  source = "request",
  opts?: LoadOptions,
): LoadResult<StatelessJobSpec> => run(SPEC, plainToSource(obj), source, opts ?? {}, []);

/**
 * The JSON-friendly normalization on its own: keys rewritten to the schema's camelCase names, explicit
 * nulls and unknown keys dropped (each reported as a warning), values untouched. `parse*` start with it.
 */
export function normalizeConfigObject(
  kind: Exclude<ConfigKind, "unknown">,
  obj: unknown,
  source = "request",
): { value: unknown; warnings: ConfigIssue[] } {
  const norm = normalizeKeys(plainToSource(obj), KINDS[kind].schema);
  return { value: norm.value, warnings: norm.notes.map((n) => noteIssue(source, n)) };
}

const KIND_KEYS: [ConfigKind, string[]][] = [
  ["stateless-spec", ["defaultspec", "instancespec"]],
  ["job", ["defaultconfig", "instanceconfig", "instancecount", "placementstrategy"]],
  ["respool", ["resources", "controllerlimit", "slacklimit", "parent", "policy"]],
  ["update", [
    "batchsize",
    "batchpercentage",
    "rollbackonfailure",
    "maxinstanceattempts",
    "maxfailureinstances",
    "stopbeforeupdate",
    "startpaused",
    "inplace",
    "starttasks",
    "maxinstanceretries",
    "maxtolerableinstancefailures",
    "startpods",
  ]],
];

/** Which kind of config a YAML text holds, from its top-level keys; "unknown" when unsure or unparsable. */
export function detectConfigKind(text: string): ConfigKind {
  const parsed = parseYamlSource(text);
  return parsed.ok ? detectKindOf(parsed.root) : "unknown";
}

/** The same for an already parsed value. */
export const detectConfigKindOf = (obj: unknown): ConfigKind => detectKindOf(plainToSource(obj));

function detectKindOf(root: SourceNode): ConfigKind {
  if (root.kind !== "map") return "unknown";
  const keys = new Set(root.entries.map((e) => canonKey(e.key)));
  return KIND_KEYS.find(([, markers]) => markers.some((k) => keys.has(k)))?.[0] ?? "unknown";
}

function loadText<T>(kind: KindSpec<T>, text: string, file: string, opts: LoadOptions = {}): LoadResult<T> {
  const parsed = parseYamlSource(text);
  if (!parsed.ok) return { ok: false, errors: parsed.errors.map((p) => yamlIssue(file, p)), warnings: [] };
  // A file plainly of another kind is named for what it is. Not when read without the rules: that is a
  // stored config, or a patch, whose keys are what counts rather than the whole.
  const other = opts.validate === false ? undefined : otherKindIssue(kind.name, parsed.root, file);
  if (other) return { ok: false, errors: [other], warnings: parsed.warnings.map((p) => yamlIssue(file, p)) };
  return run(kind, parsed.root, file, opts, parsed.warnings.map((p) => yamlIssue(file, p)));
}

function run<T>(
  kind: KindSpec<T>,
  root: SourceNode,
  file: string,
  opts: LoadOptions,
  warnings: ConfigIssue[],
): LoadResult<T> {
  const aurora = kind === (JOB as KindSpec<unknown>) ? auroraRequestIssue(root, file) : undefined;
  if (aurora) return { ok: false, errors: [aurora], warnings };
  const norm = normalizeKeys(root, kind.schema);
  // A key one typo away from a known one is refused rather than ignored: ignoring it would silently give
  // the field its default (`shares: 2` leaving a pool's share at 0). Keys Peloton dropped over the years,
  // which its own files still carry, are far from every known key and stay warnings. A stored config
  // (`validate: false`) was accepted once and is read as it is.
  const typos = opts.validate === false ? [] : norm.notes.filter(isTypo);
  warnings.push(...norm.notes.filter((n) => !typos.includes(n)).map((n) => noteIssue(file, n)));
  const typoErrors = typos.map((n) => noteIssue(file, n, true));
  const parse = (v: unknown) => kind.schema.safeParse(v, { error: expectedFor, reportInput: true });
  const parsed = parse(norm.value);
  if (!parsed.success) {
    const errors = [...typoErrors, ...parsed.error.issues.map((iss) => zodIssue(file, norm, iss))];
    // Every problem at once: the rest of the config, parsed without its malformed fields, is checked too.
    const rest = opts.validate === false ? undefined : salvage(norm.value, parsed.error.issues, parse);
    if (rest) {
      reportRules(kind.rules(rest.value, opts, rest.gaps), rest.gaps, file, norm, errors, warnings);
    }
    return { ok: false, errors: byLine(errors), warnings: byLine(warnings) };
  }
  if (opts.validate === false) return { ok: true, value: parsed.data, warnings: byLine(warnings) };
  const errors: ConfigIssue[] = [...typoErrors];
  reportRules(kind.rules(parsed.data, opts, NO_GAPS), NO_GAPS, file, norm, errors, warnings);
  if (errors.length > 0) return { ok: false, errors: byLine(errors), warnings: byLine(warnings) };
  const value = kind.finish ? kind.finish(parsed.data) : parsed.data;
  return { ok: true, value, warnings: byLine(warnings) };
}

/** Ties rule violations to the file; paths of a salvaged config are mapped back to the input first. */
function reportRules(
  rules: RuleIssue[],
  gaps: Gaps,
  file: string,
  norm: Normalized,
  errors: ConfigIssue[],
  warnings: ConfigIssue[],
): void {
  for (const rule of rules) {
    if (!judged(rule, gaps)) continue;
    const path = gaps.original(rule.path);
    const loc = norm.locate(path);
    // A value the user never wrote (a default such as instanceCount 0) reads as missing.
    const written = "value" in rule && valueAt(norm.value, path).present;
    const value = written ? { present: true, value: rule.value } : { present: false };
    const issue = makeIssue({ file, ...loc }, rule.expected, value);
    if (rule.ignored) {
      issue.message = `${
        loc.line === undefined ? file : `${file}:${loc.line}`
      }: ${loc.path}: ${rule.ignored}`;
    }
    (rule.severity === "error" ? errors : warnings).push(issue);
  }
}

const byLine = (issues: ConfigIssue[]) => issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));

const TYPE_NAMES: Record<string, string> = {
  object: "a mapping",
  record: "a mapping",
  array: "a list",
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
};

/** The "expected ..." phrase for issues whose schema did not set one. */
function expectedFor(iss: z.core.$ZodRawIssue): string {
  switch (iss.code) {
    case "invalid_type":
      return TYPE_NAMES[iss.expected] ?? iss.expected;
    case "too_small":
      return iss.origin === "array" ? `at least ${iss.minimum} items` : `at least ${iss.minimum}`;
    case "too_big":
      return iss.origin === "array" ? `at most ${iss.maximum} items` : `at most ${iss.maximum}`;
    case "invalid_value":
      return `one of ${iss.values.map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return iss.message ?? iss.code ?? "a valid value";
  }
}

function zodIssue(file: string, norm: Normalized, iss: z.core.$ZodIssue): ConfigIssue {
  const path = iss.path.map((p) => typeof p === "symbol" ? String(p) : p) as PathSeg[];
  // A bad instanceConfig key: the reason is on the key's own issue.
  const expected = iss.code === "invalid_key" ? iss.issues[0]?.message ?? iss.message : iss.message;
  // Custom issues (enums, constraint shape) carry the parent as input; the value at the path is what counts.
  const given = iss.code === "custom" || iss.input === undefined ? valueAt(norm.value, path) : undefined;
  const value = given ?? { present: true, value: iss.input };
  // An empty document is a missing config rather than a null one.
  if (path.length === 0 && value.value === null) value.present = false;
  return makeIssue({ file, ...norm.locate(path) }, expected, value);
}

function isTypo(note: KeyNote): boolean {
  return note.kind === "unknown-key" && note.suggestion !== undefined;
}

/** A key note as an issue; `refused`: a misspelt key, reported as an error. */
function noteIssue(file: string, note: KeyNote, refused = false): ConfigIssue {
  const where = note.line === undefined ? file : `${file}:${note.line}`;
  const at = { file, line: note.line, column: note.column, path: note.path };
  if (note.kind === "duplicate-key") {
    const expected = "each key once";
    const first = note.firstLine === undefined ? "" : ` on line ${note.firstLine}`;
    return {
      ...at,
      expected,
      message: `${where}: ${note.path}: duplicate key; this value replaces the one${first}`,
    };
  }
  const known = note.known ?? [];
  const hint = note.suggestion ? `did you mean ${note.suggestion}? ` : "";
  const expected = `a known key (${known.join(", ")})`;
  const key = note.path.split(".").pop();
  if (refused) {
    return {
      ...at,
      value: key,
      expected: `a known key: ${note.suggestion}?`,
      message: `${where}: ${note.path}: unknown key; did you mean ${note.suggestion}? ` +
        `(known keys: ${known.join(", ")})`,
    };
  }
  return {
    ...at,
    value: key,
    expected,
    message: `${where}: ${note.path}: unknown key, ignored (${hint}known keys: ${known.join(", ")})`,
  };
}

/**
 * An Aurora `JobUpdateRequest` (`taskConfig`, `instanceCount`, `settings`: the files of Peloton's
 * aurorabridge tests) has a job's instance count but no `defaultConfig`; read as a job config it would fail
 * on a missing command, which says nothing of what is wrong. It is named for what it is instead.
 */
function auroraRequestIssue(root: SourceNode, file: string): ConfigIssue | undefined {
  if (root.kind !== "map") return undefined;
  const entry = root.entries.find((e) => canonKey(e.key) === "taskconfig");
  if (!entry || root.entries.some((e) => canonKey(e.key) === "defaultconfig")) return undefined;
  const expected = "a Peloton job config (defaultConfig, instanceCount, ...); this file is an Aurora " +
    "JobUpdateRequest (taskConfig, instanceCount, settings), the shape Peloton's aurorabridge takes, " +
    "which this scheduler does not serve";
  return {
    file,
    line: entry.line,
    column: entry.column,
    path: entry.key,
    expected,
    message: `${file}:${entry.line}: ${entry.key}: expected ${expected}`,
  };
}

function yamlIssue(file: string, p: YamlProblem): ConfigIssue {
  return {
    file,
    line: p.line,
    column: p.column,
    path: "",
    expected: "valid YAML",
    message: `${file}:${p.line}: invalid YAML: ${p.message}`,
  };
}
