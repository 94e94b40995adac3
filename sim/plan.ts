/**
 * What-if planning: the smallest value of one scenario field (`--vary hosts.std.count=1000..60000`) whose
 * run meets a target on the report (`--target 'queueDelaySeconds.p99<=60'`). Variants run in parallel
 * Deno workers; each round splits the bracket between the largest failing and the smallest meeting value.
 */
import type { PlanJob, PlanResult } from "./plan_worker.ts";
import { meets, parseRange, parseTarget, reportValue, type Target } from "./overrides.ts";

export interface PlanPoint {
  value: number;
  /** The target's field in that run's report (undefined when the run failed). */
  metric?: number;
  met: boolean;
  wallSeconds?: number;
  error?: string;
}

export interface PlanOutcome {
  scenario: string;
  vary: string;
  range: { lo: number; hi: number };
  target: string;
  seed: number;
  /** The smallest value found to meet the target, within `resolution`; undefined when even `hi` misses it. */
  answer?: number;
  resolution: number;
  /** Every run, by value: the curve of the target's field against the varied one. */
  points: PlanPoint[];
  rounds: number;
  note: string;
}

export interface PlanOptions {
  file: string;
  vary: string;
  target: string;
  seed: number;
  workers: number;
  resolution?: number;
  /** Runs one batch of variants (workers by default; tests may run them in process). */
  run?: (jobs: PlanJob[]) => Promise<PlanResult[]>;
  onRound?: (points: PlanPoint[]) => void;
}

/** Parses `path=LO..HI`; errors name `--vary`. */
export function parseVary(text: string): { path: string; lo: number; hi: number } {
  const at = text.indexOf("=");
  if (at <= 0) throw new Error(`--vary: expected PATH=LO..HI, got "${text}"`);
  return { path: text.slice(0, at), ...named("--vary", () => parseRange(text.slice(at + 1))) };
}

/** Parses `FIELD<=VALUE`; errors name `--target`. */
export function parsePlanTarget(text: string): Target {
  return named("--target", () => parseTarget(text));
}

/** Runs `f`, prefixing any error with the argument it came from, so the CLI's message names it. */
function named<T>(arg: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new Error(`${arg}: ${(e as Error).message}`);
  }
}

export async function plan(o: PlanOptions): Promise<PlanOutcome> {
  const vary = parseVary(o.vary);
  const target = parsePlanTarget(o.target);
  const integer = Number.isInteger(vary.lo) && Number.isInteger(vary.hi);
  const resolution = o.resolution ??
    (integer ? Math.max(1, Math.round((vary.hi - vary.lo) / 100)) : (vary.hi - vary.lo) / 100);
  const run = o.run ?? ((jobs) => runInWorkers(jobs, o.workers));
  const points = new Map<number, PlanPoint>();
  let rounds = 0;
  const evaluate = async (values: number[]) => {
    const fresh = [...new Set(values)].filter((v) => !points.has(v));
    if (!fresh.length) return;
    rounds++;
    const results = await run(fresh.map((value) => ({ file: o.file, path: vary.path, value, seed: o.seed })));
    for (const r of results) points.set(r.value, toPoint(r, target));
    o.onRound?.(fresh.map((v) => points.get(v)!));
  };
  await evaluate([vary.lo, vary.hi]);
  let lo = vary.lo, hi = vary.hi;
  let answer: number | undefined;
  if (points.get(lo)!.met) answer = lo;
  else if (points.get(hi)!.met) {
    // Invariant: lo misses the target, hi meets it.
    while (hi - lo > resolution) {
      const k = Math.max(1, o.workers);
      const step = (hi - lo) / (k + 1);
      const values = Array.from({ length: k }, (_, i) => lo + step * (i + 1))
        .map((v) => (integer ? Math.round(v) : v))
        .filter((v) => v > lo && v < hi);
      if (!values.length) break;
      await evaluate(values);
      for (const v of [...values].sort((a, b) => a - b)) {
        if (points.get(v)!.met) {
          hi = v;
          break;
        }
        lo = v;
      }
    }
    answer = hi;
  }
  const sorted = [...points.values()].sort((a, b) => a.value - b.value);
  return {
    scenario: o.file,
    vary: vary.path,
    range: { lo: vary.lo, hi: vary.hi },
    target: target.text,
    seed: o.seed,
    answer,
    resolution,
    points: sorted,
    rounds,
    note: answer === undefined
      ? `no value up to ${vary.hi} meets ${target.text}`
      : `smallest ${vary.path} meeting ${target.text}: ${answer} (within ${resolution}; assumes the target gets ` +
        `easier as ${vary.path} grows, as more capacity does)`,
  };
}

function toPoint(r: PlanResult, target: Target): PlanPoint {
  if (!r.ok) return { value: r.value, met: false, error: r.error };
  const metric = named(`--target ${target.text}`, () => reportValue(r.report, target.path));
  return { value: r.value, metric, met: meets(target, metric), wallSeconds: r.report.wallSeconds };
}

/** Runs variants in up to `workers` Deno workers at a time, a fresh worker per variant (memory comes back). */
export async function runInWorkers(jobs: PlanJob[], workers: number): Promise<PlanResult[]> {
  const results: PlanResult[] = new Array(jobs.length);
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const i = next++;
      const w = new Worker(new URL("./plan_worker.ts", import.meta.url), { type: "module" });
      try {
        results[i] = await new Promise<PlanResult>((resolve, reject) => {
          w.onmessage = (e: MessageEvent<PlanResult>) => resolve(e.data);
          w.onerror = (e) => {
            e.preventDefault();
            reject(new Error(e.message));
          };
          w.postMessage(jobs[i]);
        });
      } catch (e) {
        results[i] = { ok: false, value: jobs[i].value, error: (e as Error).message };
      } finally {
        w.terminate();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(workers, jobs.length)) }, lane));
  return results;
}
