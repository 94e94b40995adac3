/** Reads a scenario file and everything it names (job files, respool files, traces), so runs do no I/O. */
import { parse as parseYaml } from "yaml";
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
  const errors: string[] = [];
  const templates: Record<string, Record<string, unknown>> = {};
  const traces: Record<string, TraceJob[]> = {};
  for (const [i, w] of scenario.workloads.entries()) {
    if (w.jobFile) {
      const path = resolve(w.jobFile);
      const job = loadJobConfig(await readOr(path, errors), path);
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
          e instanceof Error && e.name === "TraceError" ? e.message : `cannot read trace ${path}: ${e}`,
        );
      }
    }
  }
  const respools = await resolvePools(scenario.respools, resolve, errors);
  if (errors.length) throw new ScenarioError(errors);
  return { scenario: { ...scenario, respools }, file, templates, traces };
}

/** Replaces `file:` pools by the Peloton respool file's content (the scenario's name and children kept). */
async function resolvePools(
  pools: ScenarioPool[],
  resolve: (p: string) => string,
  errors: string[],
): Promise<ScenarioPool[]> {
  const out: ScenarioPool[] = [];
  for (const pool of pools) {
    const children = await resolvePools(pool.children ?? [], resolve, errors);
    if (!pool.file) {
      out.push({ ...pool, children });
      continue;
    }
    const path = resolve(pool.file);
    const text = await readOr(path, errors);
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

async function readOr(path: string, errors: string[]): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    errors.push(`cannot read ${path}: ${(e as Error).message}`);
    return "";
  }
}
