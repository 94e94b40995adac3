/**
 * What-if planning: the smallest value of one scenario field (`--vary hosts.std.count=1000..60000`) whose
 * run meets a target on the report (`--target 'queueDelaySeconds.p99<=60'`). Variants run in parallel
 * Deno workers; each round splits the bracket between the largest failing and the smallest meeting value.
 */
import { JOB_STATES } from "../core/model/states.ts";
import type { PlanJob, PlanResult } from "./plan_worker.ts";
import { meets, parseRange, type Target } from "./overrides.ts";
import type { Scenario, ScenarioPool } from "./scenario.ts";

const PERCENTILES = ["p50", "p90", "p99", "max", "count"];
const QUEUE_DELAYS = [...PERCENTILES, "waiting"];
const under = (prefix: string, keys: string[]) => keys.map((k) => `${prefix}.${k}`);

/**
 * Every number in a run's report that a target can name (`series` and `poolSeries` are not sent back by
 * the workers, and lists are not targets). A key in angle brackets stands for a key of that map:
 * `<workload>` a workload's name, `<pool>` a pool's path, `<state>` a job state, `<reason>` a placement
 * failure's headline, `<class>` a host class. Kept beside the parser so a bad target is refused before any
 * run; plan_test.ts checks it against a real report, so it cannot drift from reports/report.ts.
 */
export const TARGET_FIELDS: readonly string[] = [
  "seed",
  "hosts",
  "simulatedSeconds",
  "warmupSeconds",
  "wallSeconds",
  "peakRssBytes",
  ...under("tasks", [
    "submitted",
    "launched",
    "succeeded",
    "failed",
    "killed",
    "lost",
    "preempted",
    "unplaced",
  ]),
  ...under("jobs", ["submitted", "accepted", "rejected", "unanswered", "stuck", "byState.<state>"]),
  "launchesPerSec",
  ...under("queueDelaySeconds", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds.afterKill", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds.afterLoss", QUEUE_DELAYS),
  ...under("utilization", ["cpu", "memory", "disk", "gpu"]),
  "fairness",
  ...under("pools.<pool>", [
    "allocationCpu",
    "demandCpu",
    "entitlementCpu",
    "allocationMemMb",
    "demandMemMb",
    "entitlementMemMb",
    "preempted",
    "avgAllocationCpu",
    "avgEntitlementCpu",
    "avgDemandCpu",
  ]),
  ...under("pools.<pool>.queueDelaySeconds", QUEUE_DELAYS),
  "workloads.<workload>.jobs",
  ...under("workloads.<workload>.queueDelaySeconds", QUEUE_DELAYS),
  ...under("workloads.<workload>.rescheduleDelaySeconds", QUEUE_DELAYS),
  ...under("preemptions", ["total", "running", "waiting", "slack", "maintenance"]),
  "placementFailures.total",
  "placementFailures.byReason.<reason>",
  "launchesByHostClass.<workload>.<class>",
];

/** Maps of counts whose missing keys count 0 (no job ended in that state, no attempt failed for that reason). */
const COUNT_MAPS = new Set([
  "jobs.byState.<state>",
  "placementFailures.byReason.<reason>",
  // A class an event adds is listed once work ran on it.
  "launchesByHostClass.<workload>.<class>",
]);

/** The names a scenario's reports use as map keys: its workloads, pool paths and host classes. */
export interface ReportNames {
  workloads: string[];
  pools: string[];
  /** Host classes, those events add included. */
  hostClasses: string[];
  /** Pools with a workload submitting to them or a child: only those have `queueDelaySeconds`. */
  poolsWithWorkloads: string[];
}

export function reportNames(scenario: Scenario): ReportNames {
  const pools: string[] = [];
  const walk = (list: ScenarioPool[], parent: string) => {
    for (const p of list) {
      pools.push(`${parent}/${p.name}`);
      walk(p.children ?? [], `${parent}/${p.name}`);
    }
  };
  walk(scenario.respools, "");
  const respools = scenario.workloads.map((w) => w.respool);
  return {
    workloads: scenario.workloads.map((w) => w.name),
    pools,
    hostClasses: [
      ...scenario.hostClasses.map((c) => c.name),
      ...scenario.events.flatMap((e) => (e.addHostClass ? [e.addHostClass.name] : [])),
    ],
    poolsWithWorkloads: pools.filter((p) => respools.some((r) => r === p || r.startsWith(`${p}/`))),
  };
}

/** A target whose field was found in the report's shape: the keys to walk to its number. */
export interface PlanTarget extends Target {
  keys: string[];
  /** The field is a count in a map that leaves out zeros. */
  zeroIfMissing: boolean;
}

/** Parses `FIELD<=VALUE` and finds FIELD among the report's numbers; errors name `--target`. */
export function parsePlanTarget(text: string, names: ReportNames): PlanTarget {
  // Any text up to the operator: workload names may hold '-', pool paths '/', failure reasons spaces.
  const m = /^\s*([A-Za-z_][^<>=]*?)\s*(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new Error(`--target: expected a target like 'queueDelaySeconds.p99<=60', got "${text}"`);
  const target: Target = {
    path: m[1],
    op: m[2] as Target["op"],
    value: Number(m[3]),
    text: `${m[1]}${m[2]}${m[3]}`,
  };
  return { ...target, ...named(`--target ${target.text}`, () => targetField(target.path, names)) };
}

/** Finds `field` among TARGET_FIELDS, map keys checked against the scenario's names. */
export function targetField(field: string, names: ReportNames): { keys: string[]; zeroIfMissing: boolean } {
  for (const pattern of TARGET_FIELDS) {
    const keys = match(pattern.split("."), field, names);
    if (keys) return { keys, zeroIfMissing: COUNT_MAPS.has(pattern) };
  }
  throw new Error(whyNoField(field, names));
}

function keysFor(placeholder: string, rest: string, last: boolean, names: ReportNames): string[] {
  switch (placeholder) {
    case "<workload>":
      return names.workloads;
    case "<pool>":
      return names.pools;
    case "<class>":
      return names.hostClasses;
    case "<state>":
      return Object.keys(JOB_STATES);
    case "<reason>":
      return last && rest ? [rest] : [];
    default:
      return [placeholder];
  }
}

/** The keys `field` stands for under `pattern`, or undefined; names may hold dots, so each is tried whole. */
function match(pattern: string[], field: string, names: ReportNames): string[] | undefined {
  const [head, ...tail] = pattern;
  for (const key of keysFor(head, field, !tail.length, names)) {
    if (!tail.length) {
      if (field === key) return [key];
      continue;
    }
    if (!field.startsWith(`${key}.`)) continue;
    if (head === "<pool>" && tail[0] === "queueDelaySeconds" && !names.poolsWithWorkloads.includes(key)) {
      continue;
    }
    const rest = match(tail, field.slice(key.length + 1), names);
    if (rest) return [key, ...rest];
  }
  return undefined;
}

function whyNoField(field: string, names: ReportNames): string {
  const top = field.split(".")[0];
  const mapped: Record<string, [string, string[]]> = {
    workloads: ["workload", names.workloads],
    pools: ["pool", names.pools],
    launchesByHostClass: ["workload", names.workloads],
  };
  if (mapped[top]) {
    const [what, list] = mapped[top];
    const rest = field.slice(top.length + 1);
    const name = list.filter((n) => rest.startsWith(`${n}.`)).sort((a, b) => b.length - a.length)[0];
    if (name === undefined) {
      return `the report has no field ${field}: the scenario has no ${what} "${rest.split(".")[0]}" ` +
        `(${list.join(", ")})`;
    }
    if (
      top === "pools" && rest.startsWith(`${name}.queueDelaySeconds`) &&
      !names.poolsWithWorkloads.includes(name)
    ) {
      return `the report has no field ${field}: no workload submits to pool ${name} or its children`;
    }
  }
  const near = TARGET_FIELDS.filter((f) => f.split(".")[0] === top);
  const expected = near.length
    ? `one of ${near.join(", ")}`
    : `a number under one of ${[...new Set(TARGET_FIELDS.map((f) => f.split(".")[0]))].join(", ")}`;
  return `the report has no field ${field}; expected ${expected}`;
}

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
  /** The scenario's workloads and pools, which the target's field may name. */
  names: ReportNames;
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
  const target = parsePlanTarget(o.target, o.names);
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

function toPoint(r: PlanResult, target: PlanTarget): PlanPoint {
  if (!r.ok) return { value: r.value, met: false, error: r.error };
  const metric = named(`--target ${target.text}`, () => valueAt(r.report, target));
  return { value: r.value, metric, met: meets(target, metric), wallSeconds: r.report.wallSeconds };
}

/** The target's number in a report; an optional field a run did not produce (a pool without series) throws. */
export function valueAt(report: unknown, target: PlanTarget): number {
  let cur: unknown = report;
  for (const key of target.keys) {
    cur = cur && typeof cur === "object" ? (cur as Record<string, unknown>)[key] : undefined;
  }
  if (cur === undefined && target.zeroIfMissing) return 0;
  if (typeof cur !== "number") throw new Error(`this run's report has no number at ${target.path}`);
  return cur;
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
