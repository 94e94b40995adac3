/**
 * A plan worker: runs variants of a scenario (one value of the varied field each) and posts each report back.
 * A worker runs one variant after another, and parses each trace file once for them all.
 */
import { buildReport, type Report } from "../reports/report.ts";
import { variantScenario } from "./overrides.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { TraceCache } from "./trace_file.ts";

export interface PlanJob {
  file: string;
  path: string;
  value: number;
  seed: number;
}

export type PlanResult =
  | { ok: true; value: number; report: Omit<Report, "series" | "poolSeries"> }
  | { ok: false; value: number; error: string };

/**
 * Traces parsed by this thread's variants: every variant reads the same files, and parsing a large trace
 * takes most of a run's time (and a copy of it most of its memory).
 */
const traces = new TraceCache();

/** Runs one variant in this thread (the worker's body; also used without workers). */
export async function runVariant(job: PlanJob): Promise<PlanResult> {
  try {
    // The run's wall time covers loading its inputs, as a `sim` run's does.
    const started = performance.now();
    const loaded = await loadScenarioFile(job.file, traces.get);
    const scenario = variantScenario(loaded, job.path, job.value);
    const sim = await runScenario(scenario, {
      seed: job.seed,
      templates: loaded.templates,
      traces: loaded.traces,
    });
    const { series: _s, poolSeries: _p, ...report } = buildReport(scenario, sim, job.seed, {
      wallSeconds: (performance.now() - started) / 1000,
      // The whole process's, which every worker shares: no measure of this run, so plan refuses it as a
      // target (see NOT_TARGETS in plan.ts).
      peakRssBytes: Deno.memoryUsage().rss,
    });
    return { ok: true, value: job.value, report };
  } catch (e) {
    return { ok: false, value: job.value, error: e instanceof Error ? e.message : String(e) };
  }
}

// As a worker: one job per message, one answer back.
const self = globalThis as unknown as {
  onmessage: ((e: MessageEvent<PlanJob>) => void) | null;
  postMessage(m: unknown): void;
};
if (typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== "undefined") {
  self.onmessage = async (e) => self.postMessage(await runVariant(e.data));
}
