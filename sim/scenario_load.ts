/** Reads a scenario file and everything it names (job files, respool files, traces), so runs do no I/O. */
import { type Document, isNode, LineCounter } from "yaml";
import { loadJobConfig, loadRespoolConfig } from "../core/model/load.ts";
import { parseDocumentBounded, parseYamlSource, sourceToPlain } from "../core/model/yaml_load.ts";
import type { CommandInfo, JobConfig, TaskConfig } from "../core/model/config_types.ts";
import { commandEnv, readCommand } from "./shell_reading.ts";
import type { RunInputs } from "./runner.ts";
import { volumeIssues } from "./scenario_arrivals.ts";
import { parseScenario, type Scenario, type ScenarioIssue, type ScenarioPool } from "./scenario.ts";
import { unmatchedConstraints, unplaceableWork } from "./scenario_hosts.ts";
import {
  checkNesting,
  overReservedCluster,
  oversizedGangs,
  parentInFile,
  unadmittableWork,
} from "./scenario_pools.ts";
import { overReservedByUpdates, poolUpdateIssues } from "./scenario_pool_updates.ts";
import { emptyWindow, leftOutBefore, type TraceJob } from "./trace.ts";
import { readTaskEvents } from "./trace_file.ts";

export interface LoadedScenario extends RunInputs {
  scenario: Scenario;
  file: string;
  /** What the run ignores (unknown pool keys not one typo from a known one), each with its file and line. */
  warnings: string[];
}

/** Why a scenario cannot run; `warnings` are what it would have ignored, shown beside the errors. */
export class ScenarioError extends Error {
  override readonly name = "ScenarioError";
  constructor(readonly errors: string[], readonly warnings: string[] = []) {
    super(errors.join("\n"));
  }
}

/**
 * Loads a scenario; throws a ScenarioError listing every problem with its file and line. `readTrace` parses
 * a trace file (streamed, gunzipped; a plan worker passes a TraceCache's, to parse each trace once).
 */
export async function loadScenarioFile(
  file: string,
  readTrace: (path: string) => Promise<TraceJob[]> = readTaskEvents,
): Promise<LoadedScenario> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new ScenarioError([`cannot read scenario ${file}: ${(e as Error).message}`]);
  }
  const res = parseScenario(text, file);
  if (!res.ok) throw new ScenarioError(res.errors, res.warnings);
  const { scenario, dir } = res;
  const warnings = [...res.warnings];
  const resolve = (p: string) => (p.startsWith("/") ? p : `${dir}/${p}`);
  const at = fieldAt(text, file);
  const errors: string[] = [];
  const templates: Record<string, Record<string, unknown>> = {};
  const traces: Record<string, TraceJob[]> = {};
  for (const [i, w] of scenario.workloads.entries()) {
    if (w.jobFile) {
      const path = resolve(w.jobFile);
      const body = await readOr(path, at(["workloads", i, "jobFile"]), "job file", errors);
      const job = body === undefined ? undefined : loadJobConfig(body, path);
      if (!job) continue;
      if (!job.ok) errors.push(...job.errors.map((e) => e.message));
      else templates[w.name] = job.value as unknown as Record<string, unknown>;
    }
    if (w.trace) {
      const path = resolve(w.trace.file);
      let jobs: TraceJob[];
      try {
        jobs = await readTrace(path);
      } catch (e) {
        errors.push(
          e instanceof Error && e.name === "TraceError"
            ? e.message
            : `${at(["workloads", i, "trace", "file"])}: cannot read trace ${path}: ${readError(e)}`,
        );
        continue;
      }
      traces[w.name] = jobs;
      // Work the trace had running or queued before the replayed window is missing from the run's cluster.
      const left = leftOutBefore(jobs, w);
      if (left) warnings.push(`${at(["workloads", i, "trace"])}: ${path}: ${left}`);
    }
  }
  for (const issue of inputIssues(scenario, { templates, traces }, resolve)) {
    errors.push(`${at(issue.path)}: ${issue.message}`);
  }
  const fromFiles = new Map<string, string>();
  const respools = await resolvePools(
    scenario.respools,
    ["respools"],
    resolve,
    at,
    errors,
    warnings,
    fromFiles,
  );
  // The scenario's own pools nest already (parseScenario); those from files are checked now they are read.
  if (fromFiles.size && !errors.length) {
    for (const e of checkNesting(respools)) {
      const { pool, rest } = splitPoolPath(e.path);
      const source = fromFiles.get(JSON.stringify(pool));
      // A file pool's name is the scenario's.
      const field = source === undefined || rest[0] === "name"
        ? at(e.path)
        : `${at([...pool, "file"])}: ${source}: ${formatFields(rest)}`;
      errors.push(`${field}: ${e.message}`);
    }
    // Pool updates were judged without the pools from files: now with them.
    for (const e of poolUpdateIssues(respools, scenario.events)) errors.push(`${at(e.path)}: ${e.message}`);
  }
  if (errors.length) throw new ScenarioError(errors, warnings);
  for (
    const w of [
      ...unplaceableWork(scenario, { templates, resolve }),
      ...unmatchedConstraints(scenario, { templates, resolve }),
      ...unadmittableWork(scenario.workloads, respools, { templates, resolve }),
      ...oversizedGangs(scenario, respools, { templates, resolve }),
      ...overReservedCluster(scenario, respools),
      ...overReservedByUpdates(scenario, respools),
      ...untimedCommands(scenario, templates, resolve),
    ]
  ) {
    warnings.push(`${at(w.path)}: ${w.message}`);
  }
  return { scenario: { ...scenario, respools }, file, templates, traces, warnings };
}

/** The path of the pool a field path is in, and the field's path within that pool. */
function splitPoolPath(path: (string | number)[]): { pool: (string | number)[]; rest: (string | number)[] } {
  let k = path.length - 1;
  while (
    k > 0 && !(typeof path[k] === "number" && (path[k - 1] === "respools" || path[k - 1] === "children"))
  ) {
    k--;
  }
  return { pool: path.slice(0, k + 1), rest: path.slice(k + 1) };
}

function formatFields(path: (string | number)[]): string {
  return path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "");
}

/**
 * What is wrong with a scenario given the files it names (`inputs`, read already): a service or daemon job
 * file with no durationSec to end the run, a job file whose instances bring more tasks than a run can hold,
 * a trace workload whose window holds none of the trace's jobs.
 * Messages name files as `resolve` makes their paths. A plan checks each variant with it too, since an
 * edited field (a shorter run, a later start) can cause either.
 */
export function inputIssues(
  scenario: Scenario,
  inputs: RunInputs,
  resolve: (path: string) => string = (p) => p,
): ScenarioIssue[] {
  const issues: ScenarioIssue[] = [];
  for (const [i, w] of scenario.workloads.entries()) {
    const type = w.jobFile ? inputs.templates?.[w.name]?.type : undefined;
    if (type !== undefined && type !== "BATCH" && scenario.durationSec === undefined) {
      // Services and daemons never end: without a duration the run would not stop.
      issues.push({
        path: ["workloads", i, "jobFile"],
        message: `${resolve(w.jobFile!)} is a ${type} job, which never ends: set the run's durationSec`,
      });
    }
    const template = w.jobFile ? inputs.templates?.[w.name] : undefined;
    if (template && type !== "DAEMON") {
      // The job file's instance count was unknown when the scenario's own fields were judged.
      const instances = Number(template.instanceCount ?? template.instancecount ?? 1);
      for (
        const x of volumeIssues(w, scenario.durationSec, instances).filter((x) => x.path[0] === "jobFile")
      ) {
        issues.push({ path: ["workloads", i, ...x.path], message: `${resolve(w.jobFile!)}: ${x.message}` });
      }
    }
    const jobs = w.trace ? inputs.traces?.[w.name] : undefined;
    // A window that leaves out every job would run an empty cluster and report it as an answer.
    const empty = jobs && emptyWindow(jobs, w, scenario.durationSec);
    if (empty) {
      issues.push({
        path: ["workloads", i, "trace"],
        message: `cannot replay ${resolve(w.trace!.file)}: ${empty}`,
      });
    }
  }
  return issues;
}

/**
 * Job-file commands the simulator cannot time, of workloads without their own `durationSec`: their tasks
 * would run for the sleeps it reads only (a program, `./run.sh` or `python ...`, takes no time), so each
 * distinct command (the job file's defaultConfig's, its instanceConfig's) that runs what it cannot read is
 * named, with what it would be taken as. Peloton's own job files (echo, sleep, `while :` loops) read whole.
 */
export function untimedCommands(
  scenario: Scenario,
  templates: Record<string, Record<string, unknown>>,
  resolve: (path: string) => string = (p) => p,
): ScenarioIssue[] {
  const issues: ScenarioIssue[] = [];
  for (const [i, w] of scenario.workloads.entries()) {
    const job = w.jobFile && w.durationSec === undefined
      ? templates[w.name] as unknown as Partial<JobConfig> | undefined
      : undefined;
    if (!job) continue;
    const commands = new Map<
      string,
      { command: CommandInfo; env: Record<string, string>; where: string[] }
    >();
    const add = (tc: TaskConfig | undefined, where: string) => {
      const command = tc?.command;
      if (!command) return;
      // An instance's own command runs in the default container unless it names its own.
      const vars = Object.fromEntries((command.environment?.variables ?? []).map((v) => [v.name, v.value]));
      const env = commandEnv(vars, tc.container ?? job.defaultConfig?.container);
      const key = JSON.stringify([command.shell, command.value, command.arguments, env]);
      const seen = commands.get(key);
      if (seen) seen.where.push(where);
      else commands.set(key, { command, env, where: [where] });
    };
    const own = Object.entries(job.instanceConfig ?? {}).filter(([, tc]) => tc.command);
    // The default command runs on every instance without one of its own (each of a daemon's).
    const instances = job.instanceCount ?? 1;
    const covered = own.filter(([id]) => Number(id) < instances).length;
    if (job.type === "DAEMON" || covered < instances) add(job.defaultConfig, "defaultConfig.command");
    for (const [id, tc] of own) add(tc, `instanceConfig.${id}.command`);
    for (const { command, env, where } of commands.values()) {
      const reading = readCommand(
        { shell: command.shell ?? true, value: command.value, arguments: command.arguments ?? [] },
        env,
      );
      if (!reading.unread.length) continue;
      const text = command.shell === false
        ? [command.value ?? "", ...(command.arguments ?? [])].join(" ")
        : command.value ?? "";
      const runs = reading.durationMs === Infinity
        ? "until killed"
        : `for ${+(reading.durationMs / 1000).toFixed(3)} s, the time of its readable sleeps only, and ` +
          `exit ${reading.exitCode}`;
      issues.push({
        path: ["workloads", i, "jobFile"],
        message:
          `${resolve(w.jobFile!)}: ${where.join(", ")} ${quoteCommand(text)} runs what the simulator ` +
          `cannot time: ${reading.unread.join(", ")}. Its tasks would be taken to run ${runs}: set the ` +
          "workload's durationSec (and failureRate) to model them",
      });
    }
  }
  return issues;
}

/** A command as a message quotes it: on one line, its first 80 characters. */
function quoteCommand(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 77)}...` : line);
}

/**
 * Replaces `file:` pools by the Peloton respool file's content (the scenario's name and children kept);
 * `fromFiles` gets the path of each (as JSON) and its file.
 */
async function resolvePools(
  pools: ScenarioPool[],
  where: (string | number)[],
  resolve: (p: string) => string,
  at: (path: (string | number)[]) => string,
  errors: string[],
  warnings: string[],
  fromFiles: Map<string, string>,
): Promise<ScenarioPool[]> {
  const out: ScenarioPool[] = [];
  for (const [i, pool] of pools.entries()) {
    const children = await resolvePools(
      pool.children ?? [],
      [...where, i, "children"],
      resolve,
      at,
      errors,
      warnings,
      fromFiles,
    );
    if (!pool.file) {
      out.push({ ...pool, children });
      continue;
    }
    const path = resolve(pool.file);
    const text = await readOr(path, at([...where, i, "file"]), "respool file", errors);
    if (text === undefined) continue;
    const checked = loadRespoolConfig(text, path);
    warnings.push(...checked.warnings.map((w) => w.message));
    if (!checked.ok) {
      errors.push(...checked.errors.map((e) => e.message));
      continue;
    }
    // Refused as `peloton respool validate` refuses it: the parent is where the scenario nests the pool.
    const parent = parentInFile(text, path, checked.value);
    if (parent) {
      errors.push(`${at([...where, i, "file"])}: ${parent}`);
      continue;
    }
    // Read as the check above read it: its aliases bounded, not by the yaml library's limit, which throws.
    const source = parseYamlSource(text);
    const body = (source.ok ? sourceToPlain(source.root) ?? {} : {}) as Record<string, unknown>;
    fromFiles.set(JSON.stringify([...where, i]), path);
    out.push({ ...body, name: pool.name, children });
  }
  return out;
}

/**
 * A file a scenario field names, or undefined with one error naming the scenario's line and field (`field`
 * is `<scenario>:<line>: <field path>`), what the file is and why it could not be read.
 */
async function readOr(
  path: string,
  field: string,
  what: string,
  errors: string[],
): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    errors.push(`${field}: cannot read ${what} ${path}: ${readError(e)}`);
    return undefined;
  }
}

/** Why a file could not be read, without the path Deno repeats at the end ("…: readfile '/a/b'"). */
function readError(e: unknown): string {
  if (e instanceof Deno.errors.NotFound) return "no such file";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (e instanceof Deno.errors.IsADirectory) return "it is a directory";
  return (e instanceof Error ? e.message : String(e)).replace(/: [a-z]+ '[^']*'$/, "");
}

/**
 * Where a field of the scenario is: `<file>:<line>: <field path>` (`s.yaml:14: workloads[0].jobFile`).
 * The scenario parsed already; its document is parsed again for line numbers only when a message needs one.
 */
function fieldAt(text: string, file: string): (path: (string | number)[]) => string {
  let located: { doc: Document.Parsed; lines: LineCounter } | undefined;
  return (path) => {
    if (!located) {
      const lines = new LineCounter();
      located = { doc: parseDocumentBounded(text, { lineCounter: lines }), lines };
    }
    // A field the file leaves to its default is placed at the nearest field around it that is written.
    let node: unknown;
    for (let k = path.length; k > 0 && !(isNode(node) && node.range); k--) {
      node = located.doc.getIn(path.slice(0, k), true);
    }
    const line = isNode(node) && node.range ? `:${located.lines.linePos(node.range[0]).line}` : "";
    const field = path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "");
    return `${file}${line}: ${field}`;
  };
}
