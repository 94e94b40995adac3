/** Reads a scenario file and everything it names (job files, respool files, traces), so runs do no I/O. */
import { isNode, LineCounter, parse as parseYaml, parseDocument } from "yaml";
import { loadJobConfig, loadRespoolConfig } from "../core/model/load.ts";
import type { RunInputs } from "./runner.ts";
import { parseScenario, type Scenario, type ScenarioPool } from "./scenario.ts";
import { parseTaskEvents, type TraceJob } from "./trace.ts";

export interface LoadedScenario extends RunInputs {
  scenario: Scenario;
  file: string;
}

export class ScenarioError extends Error {
  override readonly name = "ScenarioError";
  constructor(readonly errors: string[]) {
    super(errors.join("\n"));
  }
}

/** Reads a text file, gunzipping `.gz` files. */
export async function readText(path: string): Promise<string> {
  if (!path.endsWith(".gz")) return await Deno.readTextFile(path);
  const file = await Deno.open(path);
  const stream = file.readable.pipeThrough(new DecompressionStream("gzip")).pipeThrough(
    new TextDecoderStream(),
  );
  let text = "";
  for await (const chunk of stream) text += chunk;
  return text;
}

/** Loads a scenario; throws a ScenarioError listing every problem with its file and line. */
export async function loadScenarioFile(file: string): Promise<LoadedScenario> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new ScenarioError([`cannot read scenario ${file}: ${(e as Error).message}`]);
  }
  const res = parseScenario(text, file);
  if (!res.ok) throw new ScenarioError(res.errors);
  const { scenario, dir } = res;
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
      else {
        templates[w.name] = job.value as unknown as Record<string, unknown>;
        if (scenario.durationSec === undefined && job.value.type !== "BATCH") {
          // Services and daemons never end: without a duration the run would not stop.
          errors.push(
            `${file}: workloads[${i}].jobFile: ${path} is a ${job.value.type} job, which never ends: set the run's durationSec`,
          );
        }
      }
    }
    if (w.trace) {
      const path = resolve(w.trace.file);
      try {
        traces[w.name] = parseTaskEvents(await readText(path), path);
      } catch (e) {
        errors.push(
          e instanceof Error && e.name === "TraceError"
            ? e.message
            : `${at(["workloads", i, "trace", "file"])}: cannot read trace ${path}: ${readError(e)}`,
        );
      }
    }
  }
  const respools = await resolvePools(scenario.respools, ["respools"], resolve, at, errors);
  if (errors.length) throw new ScenarioError(errors);
  return { scenario: { ...scenario, respools }, file, templates, traces };
}

/** Replaces `file:` pools by the Peloton respool file's content (the scenario's name and children kept). */
async function resolvePools(
  pools: ScenarioPool[],
  where: (string | number)[],
  resolve: (p: string) => string,
  at: (path: (string | number)[]) => string,
  errors: string[],
): Promise<ScenarioPool[]> {
  const out: ScenarioPool[] = [];
  for (const [i, pool] of pools.entries()) {
    const children = await resolvePools(pool.children ?? [], [...where, i, "children"], resolve, at, errors);
    if (!pool.file) {
      out.push({ ...pool, children });
      continue;
    }
    const path = resolve(pool.file);
    const text = await readOr(path, at([...where, i, "file"]), "respool file", errors);
    if (text === undefined) continue;
    const checked = loadRespoolConfig(text, path);
    if (!checked.ok) {
      errors.push(...checked.errors.map((e) => e.message));
      continue;
    }
    const body = (parseYaml(text) ?? {}) as Record<string, unknown>;
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
  let located: { doc: ReturnType<typeof parseDocument>; lines: LineCounter } | undefined;
  return (path) => {
    if (!located) {
      const lines = new LineCounter();
      located = { doc: parseDocument(text, { lineCounter: lines }), lines };
    }
    const node = located.doc.getIn(path, true);
    const line = isNode(node) && node.range ? `:${located.lines.linePos(node.range[0]).line}` : "";
    const field = path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "");
    return `${file}${line}: ${field}`;
  };
}
