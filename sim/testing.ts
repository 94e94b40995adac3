/** Test harness for simulations: load a scenario file with its job templates and run it. */
import { loadJobConfig } from "../core/model/load.ts";
import { type RunOptions, runScenario, type Simulation } from "./runner.ts";
import { parseScenario, type Scenario } from "./scenario.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/** Reads a scenario and the job files its workloads name; throws on any error. */
export async function loadScenario(
  path: string,
): Promise<{ scenario: Scenario; templates: Record<string, Record<string, unknown>> }> {
  const res = parseScenario(await Deno.readTextFile(path), path);
  if (!res.ok) throw new Error(res.errors.join("\n"));
  const templates: Record<string, Record<string, unknown>> = {};
  for (const w of res.scenario.workloads) {
    if (!w.jobFile) continue;
    const file = `${res.dir}/${w.jobFile}`;
    const job = loadJobConfig(await Deno.readTextFile(file), file);
    if (!job.ok) throw new Error(job.errors.map((e) => e.message).join("\n"));
    templates[w.name] = job.value as unknown as Record<string, unknown>;
  }
  return { scenario: res.scenario, templates };
}

/** Runs a scenario file with invariant checks on. */
export async function simulate(
  path: string,
  seed: number,
  extra: Partial<RunOptions> = {},
): Promise<Simulation> {
  const { scenario, templates } = await loadScenario(path);
  return runScenario(scenario, { seed, templates, checkInvariants: true, ...extra });
}

/** Parses an inline scenario (YAML text) or throws with its errors. */
export function inlineScenario(yaml: string): Scenario {
  const res = parseScenario(yaml, "inline.yaml");
  if (!res.ok) throw new Error(res.errors.join("\n"));
  return res.scenario;
}
