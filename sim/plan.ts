/**
 * What-if planning: the smallest value of one scenario field (`--vary hosts.std.count=1000..60000`) whose
 * run meets a target on the report (`--target 'queueDelaySeconds.p99<=60'`). Variants run in parallel
 * Deno workers; each round splits the bracket between the largest failing and the smallest meeting value.
 */
import { closestName } from "../core/model/_key_normalize.ts";
import { JOB_STATES } from "../core/model/states.ts";
import type { PlanJob, PlanResult } from "./plan_worker.ts";
import {
  checkOverridePath,
  isWholeNumberField,
  meets,
  parseRange,
  type Target,
  variantScenario,
} from "./overrides.ts";
import type { Scenario, ScenarioPool } from "./scenario.ts";
import type { LoadedScenario } from "./scenario_load.ts";

const PERCENTILES = ["p50", "p90", "p99", "max", "count"];
const QUEUE_DELAYS = [...PERCENTILES, "waiting"];
const under = (prefix: string, keys: string[]) => keys.map((k) => `${prefix}.${k}`);

/**
 * Every number in a run's report that a target can name (`series` and `poolSeries` are not sent back by
 * the workers). A key in angle brackets stands for a key of that map: `<workload>` a workload's name,
 * `<pool>` a pool's path, `<state>` a job state, `<reason>` a placement failure's headline, `<class>` a host
 * class; `<index>` an element's place in a list (`events.0.drainSeconds`, also written `events[0]...`),
 * checked against the list's length in each run's report. Kept beside the parser so a bad target is refused before any
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
    "rejected",
  ]),
  ...under("jobs", ["submitted", "accepted", "rejected", "unanswered", "stuck", "byState.<state>"]),
  "launchesPerSec",
  ...under("queueDelaySeconds", QUEUE_DELAYS),
  ...under("admissionDelaySeconds", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds.afterKill", QUEUE_DELAYS),
  ...under("rescheduleDelaySeconds.afterLoss", QUEUE_DELAYS),
  ...under("utilization", ["cpu", "memory", "disk", "gpu", "revocableCpu"]),
  "fairness",
  "fairnessHeld",
  ...under("pools.<pool>", [
    "allocationCpu",
    "demandCpu",
    "entitlementCpu",
    "allocationMemMb",
    "demandMemMb",
    "entitlementMemMb",
    "allocationGpu",
    "demandGpu",
    "entitlementGpu",
    "preempted",
    "avgAllocationCpu",
    "avgEntitlementCpu",
    "avgDemandCpu",
    "heldCpu",
    "heldMemMb",
    "slackAllocationCpu",
    "slackHeldCpu",
    "slackDemandCpu",
    "slackEntitlementCpu",
    "slackAllocationMemMb",
    "slackHeldMemMb",
    "slackDemandMemMb",
    "slackEntitlementMemMb",
    "slackPreempted",
    "avgHeldCpu",
    "avgSlackHeldCpu",
    "avgSlackAllocationCpu",
    "avgSlackEntitlementCpu",
  ]),
  ...under("pools.<pool>.queueDelaySeconds", QUEUE_DELAYS),
  ...under("pools.<pool>.admissionDelaySeconds", QUEUE_DELAYS),
  "workloads.<workload>.jobs",
  ...under("workloads.<workload>.queueDelaySeconds", QUEUE_DELAYS),
  ...under("workloads.<workload>.admissionDelaySeconds", QUEUE_DELAYS),
  ...under("workloads.<workload>.rescheduleDelaySeconds", QUEUE_DELAYS),
  ...under("preemptions", ["total", "running", "waiting", "slack", "maintenance"]),
  ...under("preemptions.beingKilled", ["total", "running", "slack", "maintenance"]),
  "placementFailures.total",
  "placementFailures.byReason.<reason>",
  "placementFailures.handedBack.total",
  "placementFailures.handedBack.byReason.<reason>",
  "launchesByHostClass.<workload>.<class>",
  ...under("events.<index>", [
    "atSec",
    "hosts",
    "drainSeconds",
    "alreadyInMaintenance",
    "drainPending.hosts",
    "drainPending.tasks",
  ]),
  "stuckJobs.<index>.waitingTasks",
];

/** The report's lists a target may index into: their elements are `<index>` in TARGET_FIELDS. */
const LISTS = ["events", "stuckJobs"];

/** `events[0].drainSeconds` as `events.0.drainSeconds`: a list's index in either spelling. */
export function dottedIndexes(field: string): string {
  const m = /^([A-Za-z]+)\[(\d+)\]/.exec(field);
  return m && LISTS.includes(m[1]) ? `${m[1]}.${m[2]}${field.slice(m[0].length)}` : field;
}

/** Maps of counts whose missing keys count 0 (no job ended in that state, no attempt failed for that reason). */
const COUNT_MAPS = new Set([
  "jobs.byState.<state>",
  "placementFailures.byReason.<reason>",
  "placementFailures.handedBack.byReason.<reason>",
  // A class an event adds is listed once work ran on it.
  "launchesByHostClass.<workload>.<class>",
]);

/** The names a scenario's reports use as map keys: its workloads, pool paths and host classes. */
export interface ReportNames {
  workloads: string[];
  pools: string[];
  /** Host classes, those events add included. */
  hostClasses: string[];
  /** Pools with a workload submitting to them or a child: only those have `DELAY_FIELDS`. */
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
  // Any text up to the last operator: workload names may hold '-', pool paths '/', failure reasons spaces,
  // ':' and operators of their own ("no host fits: constraint host_pool=batch failed<=0"). It does not end
  // in one, so a doubled operator (`<<0`) is refused, not read as a field "…<". The value is all that
  // follows the operator, without operators of its own, so a value that is no number is named as such.
  const m = /^\s*([A-Za-z_](?:.*?[^<>=\s])?)\s*(<=|>=|==|<|>)\s*([^<>=\s](?:[^<>=]*[^<>=\s])?)\s*$/.exec(
    text,
  );
  if (!m) throw new Error(`--target: expected a target like 'queueDelaySeconds.p99<=60', got "${text}"`);
  const target: Target = {
    path: m[1],
    op: m[2] as Target["op"],
    value: targetValue(m[3]),
    text: `${m[1]}${m[2]}${m[3]}`,
  };
  return { ...target, ...named(`--target ${target.text}`, () => targetField(target.path, names)) };
}

/** The number a target's value text is, as JavaScript reads one (`60`, `-1.5`, `.5`, `1e1`, `0x10`). */
function targetValue(text: string): number {
  const value = Number(text);
  if (Number.isNaN(value)) {
    throw new Error(`--target: the value "${text}" is not a number; expected one like 60, 0.5, .5 or 1e3`);
  }
  if (!Number.isFinite(value)) throw new Error(`--target: the value "${text}" is not a finite number`);
  return value;
}

/**
 * Numbers of a report that are no result of the simulation, so no target: the same scenario and seed give
 * any value of them. Each with why.
 */
export const NOT_TARGETS: Readonly<Record<string, string>> = {
  seed: "seed is an input of the runs, not a result: every run of a plan has the plan's --seed",
  wallSeconds: "wallSeconds measures the machine, not the simulation: the wall-clock seconds a run took " +
    "vary with the machine's load and the plan's --workers, not only with the varied value",
  peakRssBytes:
    "peakRssBytes measures the machine, not the simulation: a plan's runs share one process, so " +
    "it is the whole process's memory, the other runs' included",
};

/** Finds `field` among TARGET_FIELDS, map keys checked against the scenario's names. */
export function targetField(field: string, names: ReportNames): { keys: string[]; zeroIfMissing: boolean } {
  if (Object.hasOwn(NOT_TARGETS, field)) {
    throw new Error(`${NOT_TARGETS[field]}; expected a number the simulation produced`);
  }
  field = dottedIndexes(field);
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
    case "<index>": {
      // A whole number, without leading zeros: the run's report says whether the list is that long.
      const index = /^(0|[1-9]\d*)(?=\.|$)/.exec(rest);
      return index ? [index[1]] : [];
    }
    default:
      return [placeholder];
  }
}

/** A pool's delays, which only pools with a workload submitting to them (or a child) have. */
const DELAY_FIELDS = new Set(["queueDelaySeconds", "admissionDelaySeconds"]);

/** The keys `field` stands for under `pattern`, or undefined; names may hold dots, so each is tried whole. */
function match(pattern: string[], field: string, names: ReportNames): string[] | undefined {
  const [head, ...tail] = pattern;
  for (const key of keysFor(head, field, !tail.length, names)) {
    if (!tail.length) {
      if (field === key) return [key];
      continue;
    }
    if (!field.startsWith(`${key}.`)) continue;
    if (head === "<pool>" && DELAY_FIELDS.has(tail[0]) && !names.poolsWithWorkloads.includes(key)) continue;
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
      top === "pools" && DELAY_FIELDS.has(rest.slice(name.length + 1).split(".")[0]) &&
      !names.poolsWithWorkloads.includes(name)
    ) {
      return `the report has no field ${field}: no workload submits to pool ${name} or its children`;
    }
  }
  const targets = TARGET_FIELDS.filter((f) => !Object.hasOwn(NOT_TARGETS, f));
  const near = targets.filter((f) => f.split(".")[0] === top);
  const expected = near.length
    ? `one of ${near.join(", ")}`
    : `a number under one of ${[...new Set(targets.map((f) => f.split(".")[0]))].join(", ")}`;
  return `the report has no field ${field}; expected ${expected}`;
}

export interface PlanPoint {
  value: number;
  /** The target's field in that run's report. */
  metric?: number;
  /**
   * `metric` is a lower bound: the target names a drain's `drainSeconds` and the drain was not over by the
   * end of the run (null in the report), so it took longer than the `metric` seconds from its start to the
   * end. Read so only when that decides the target (`drainSeconds<=2` missed); otherwise the run measured
   * nothing for it.
   */
  atLeast?: true;
  met: boolean;
  wallSeconds?: number;
  /** Never set by `plan`, which stops at a run that failed (kept for plan files written before it did). */
  error?: string;
}

export interface PlanOutcome {
  scenario: string;
  vary: string;
  range: { lo: number; hi: number };
  target: string;
  seed: number;
  /**
   * The smallest value found to meet the target, within `resolution`; undefined when even `hi` misses it,
   * and when `lo` meets it but `hi` does not: the target then gets harder as the value grows, and the
   * range's low end is no answer (see `largestMeeting`).
   */
  answer?: number;
  /**
   * When `lo` meets the target and `hi` misses it (a field where more makes the target harder, such as a
   * workload's instances): the largest value found to meet it, within `resolution`.
   */
  largestMeeting?: number;
  /** Values above `largestMeeting` found to meet the target: it is not monotone there either. */
  meetsAbove?: number[];
  resolution: number;
  /** Every run, by value: the curve of the target's field against the varied one. */
  points: PlanPoint[];
  rounds: number;
  /**
   * Values above `answer` found to miss the target: it is not monotone in the varied value there, and the
   * answer is only the smallest value found meeting it (the search skips values above one that meets it).
   */
  missesAbove?: number[];
  note: string;
  /** The plan was interrupted (Ctrl-C): `points` are the runs that finished by then, and there is no answer. */
  partial?: true;
  /**
   * The target names a key of a map of counts that no run counted (a placement failure's reason is any
   * text): it read 0 in every run, as a misspelt key would. Names the key and the keys the runs counted.
   */
  warning?: string;
}

/** What a runner of variants may be given besides the jobs: a signal to stop, and each result as it comes. */
export interface RunHooks {
  /** Aborted: runs under way are dropped, and the results of those done are returned. */
  signal?: AbortSignal;
  onResult?: (result: PlanResult) => void;
}

export interface PlanOptions {
  /** The scenario, loaded with its files: every variant is checked against it before any run. */
  loaded: LoadedScenario;
  vary: string;
  target: string;
  seed: number;
  workers: number;
  resolution?: number;
  /** Runs one batch of variants (workers by default; tests may run them in process). */
  run?: (jobs: PlanJob[], hooks: RunHooks) => Promise<PlanResult[]>;
  onRound?: (points: PlanPoint[]) => void;
  /** Each run's point, as soon as its run is done. */
  onRun?: (point: PlanPoint) => void;
  /** Stops the plan (Ctrl-C): the outcome is then partial, with the runs done by then. */
  signal?: AbortSignal;
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

/** A plan whose arguments are parsed and whose every variant is a valid scenario: ready to run. */
export interface PreparedPlan {
  vary: { path: string; lo: number; hi: number };
  target: PlanTarget;
  resolution: number;
  /** Every value the search may run, ascending, `lo` and `hi` included; each makes a valid scenario. */
  values: number[];
}

/** The most values a plan checks before it runs: a finer resolution would take long to check. */
export const MAX_PLAN_VALUES = 100_001;

/** How many invalid values an error shows in full before it only counts the rest. */
const SHOWN_INVALID = 3;

/**
 * Parses the plan's arguments and checks, before any run, the scenario each value the search may run
 * makes, as `loadScenarioFile` checks a scenario: a range some of whose values make it invalid (a host
 * count of 0, a value out of a field's range, a trace window left empty) is refused at once, naming the
 * values and why, instead of failing mid-search after minutes of runs. The search runs only values of
 * a grid `resolution` apart (`values`), so each can be checked.
 */
export function preparePlan(o: PlanOptions): PreparedPlan {
  const vary = parseVary(o.vary);
  const target = parsePlanTarget(o.target, reportNames(o.loaded.scenario));
  checkOverridePath(o.loaded.scenario, vary.path);
  // Whole numbers by the field's type (a host count, instances), not by how the range is written.
  const integer = isWholeNumberField(o.loaded.scenario, vary.path, vary.lo);
  if (integer) wholeNumbersOnly(vary, o);
  const { resolution, values } = planGrid(vary.lo, vary.hi, o.resolution, integer);
  const invalid: { value: number; error: string }[] = [];
  for (const value of values) {
    try {
      variantScenario(o.loaded, vary.path, value);
    } catch (e) {
      invalid.push({ value, error: (e as Error).message });
    }
  }
  if (invalid.length === 1) throw new Error(invalid[0].error);
  if (invalid.length > 1) {
    const shown = invalid.slice(0, SHOWN_INVALID), rest = invalid.slice(SHOWN_INVALID).map((x) => x.value);
    const which = invalid.length === values.length
      ? `all ${values.length} of the values the plan may run make the scenario invalid`
      : `${invalid.length} of the ${values.length} values the plan may run make the scenario invalid`;
    const these = rest.length ? `these first ${shown.length}, and ${shortList(rest)}` : "these";
    throw new Error([...shown.map((x) => x.error), `--vary ${o.vary}: ${which} (${these})`].join("\n"));
  }
  return { vary, target, resolution, values };
}

/**
 * Refuses, for a field of whole numbers, range ends or a `--resolution` that are not whole: the grid would
 * hold values the field does not take.
 */
function wholeNumbersOnly(vary: { path: string; lo: number; hi: number }, o: PlanOptions): void {
  const notWhole = [vary.lo, vary.hi].filter((x) => !Number.isInteger(x));
  if (notWhole.length) {
    throw new Error(
      `--vary ${o.vary}: got ${shortList(notWhole)}, expected whole numbers: ${vary.path} takes whole ` +
        `numbers only`,
    );
  }
  if (o.resolution !== undefined && !Number.isInteger(o.resolution)) {
    throw new Error(
      `--resolution: got ${o.resolution}, expected a whole number: ${vary.path} takes whole numbers only`,
    );
  }
}

/**
 * The finest resolution whose grid over `span` has at most MAX_PLAN_VALUES values: a whole number for a
 * field of whole numbers, otherwise rounded up to 6 significant digits; either is taken if given back.
 */
function coarsest(span: number, integer: boolean): number {
  const exact = span / (MAX_PLAN_VALUES - 1);
  if (integer) return Math.ceil(exact);
  const scale = 10 ** (Math.floor(Math.log10(exact)) - 5);
  let r = Number((Math.ceil(exact / scale) * scale).toPrecision(6));
  while (Math.ceil(span / r - 1e-9) + 1 > MAX_PLAN_VALUES) r = Number((r + scale).toPrecision(6));
  return r;
}

/**
 * The values a plan may run over `lo..hi`, `resolution` apart (by default a hundredth of the range, whole
 * for a field of whole numbers), `lo` and `hi` included. A resolution wider than the range is the range (the
 * grid is its ends either way, and the answer is no further off); the default carries no float noise
 * (0.0009, not 0.0009000000000000001). A resolution making more than MAX_PLAN_VALUES values is refused,
 * naming the finest one that does not.
 */
export function planGrid(
  lo: number,
  hi: number,
  resolution: number | undefined,
  integer: boolean,
): { resolution: number; values: number[] } {
  const span = hi - lo;
  const clean = (x: number) => Number(x.toPrecision(12));
  const step = Math.min(
    clean(span),
    resolution ?? (integer ? Math.max(1, Math.round(span / 100)) : clean(span / 100)),
  );
  const steps = Math.ceil(span / step - 1e-9);
  if (!(steps + 1 <= MAX_PLAN_VALUES)) {
    throw new Error(
      `--resolution: ${step} makes ${steps + 1} values of ${lo}..${hi} to check; expected at most ` +
        `${MAX_PLAN_VALUES} (a resolution of at least ${coarsest(span, integer)})`,
    );
  }
  return { resolution: step, values: gridOf(lo, hi, step, steps, integer) };
}

/** `lo`, `lo + resolution`, … and `hi` (whole numbers for a field of whole numbers), without repeats. */
function gridOf(lo: number, hi: number, resolution: number, steps: number, integer: boolean): number[] {
  const out: number[] = [];
  for (let k = 0; k < steps; k++) {
    const raw = lo + k * resolution;
    // Whole numbers for a field of whole numbers; otherwise no float noise (0.30000000000000004).
    const v = integer ? Math.round(raw) : Number(raw.toPrecision(12));
    if (v < hi && v !== out.at(-1)) out.push(v);
  }
  out.push(hi);
  return out;
}

/** "1, 2 and 3"; past 10 values, "1, 2, … 10 and 5 more". */
function shortList(values: number[]): string {
  if (values.length > 10) return `${values.slice(0, 10).join(", ")} and ${values.length - 10} more`;
  return values.length > 1 ? `${values.slice(0, -1).join(", ")} and ${values.at(-1)}` : String(values[0]);
}

/**
 * A run of the plan failed (threw, or its worker died): the plan stops, as that value neither meets the
 * target nor misses it. The message names each value and its run's error.
 */
export class PlanRunFailed extends Error {
  constructor(
    readonly path: string,
    readonly target: string,
    readonly seed: number,
    readonly failures: { value: number; error: string }[],
    /** What happened to each run, before its error. */
    what = "the run failed",
  ) {
    super(
      [
        ...failures.map((f) => `${path}=${f.value}: ${what}: ${f.error}`),
        `the plan stopped: it cannot tell whether ${
          failures.length > 1 ? "these values meet" : "this value meets"
        } ${target} (seed ${seed})`,
      ].join("\n"),
    );
    this.name = "PlanRunFailed";
  }
}

/**
 * A run measured nothing for the target's field (null in its report: a percentile of no delays), so it
 * neither meets the target nor misses it; the plan stops as at a run that failed. The message names each
 * value, the field and why it has no value.
 */
export class PlanTargetUnmeasured extends PlanRunFailed {
  constructor(path: string, target: string, seed: number, failures: { value: number; error: string }[]) {
    super(path, target, seed, failures, "the run measured nothing for the target");
    this.name = "PlanTargetUnmeasured";
  }
}

/** Thrown inside `plan` once its signal is aborted: the runs done so far make a partial outcome. */
class Interrupted extends Error {}

/**
 * Finds the smallest value meeting the target, among `prepared.values` (by default, `preparePlan(o)`):
 * each round runs `workers` values evenly spread between the largest one found missing the target and the
 * smallest one found meeting it, until they are neighbours. Stopped by `o.signal`, it gives the runs done
 * so far, marked partial.
 */
export async function plan(o: PlanOptions, prepared = preparePlan(o)): Promise<PlanOutcome> {
  const { vary, target, values } = prepared;
  const points = new Map<number, PlanPoint>();
  const counted = new Set<string>();
  let rounds = 0;
  // The same workers for every round: each parses the scenario's traces once, not once a round.
  const workers = o.run ? undefined : new PlanWorkers(o.workers);
  const run = o.run ?? workers!.run;
  const evaluate = async (batch: number[]) => {
    if (o.signal?.aborted) throw new Interrupted();
    const fresh = [...new Set(batch)].filter((v) => !points.has(v));
    if (!fresh.length) return;
    rounds++;
    await runRound({ ...o, run }, prepared, fresh, points, counted);
  };
  /**
   * Where between the range's ends the target flips: indexes into `values` with values[lo] on the side of
   * the low end and values[hi] on the high end's (`flipped`: the low end meets it and the high end does not).
   */
  const boundary = async (flipped: boolean) => {
    let lo = 0, hi = values.length - 1;
    while (hi - lo > 1) {
      const k = Math.max(1, o.workers);
      const picks = [
        ...new Set(Array.from({ length: k }, (_, i) => lo + Math.round(((hi - lo) * (i + 1)) / (k + 1)))),
      ]
        .filter((i) => i > lo && i < hi);
      await evaluate(picks.map((i) => values[i]));
      for (const i of picks) {
        if (points.get(values[i])!.met !== flipped) {
          hi = i;
          break;
        }
        lo = i;
      }
    }
    return { lo, hi };
  };
  const sorted = () => [...points.values()].sort((a, b) => a.value - b.value);
  const base = () => ({
    scenario: o.loaded.file,
    vary: vary.path,
    range: { lo: vary.lo, hi: vary.hi },
    target: target.text,
    seed: o.seed,
  });
  const warned = (note: string) => {
    const warning = uncountedKey(target, counted, points.size);
    return warning === undefined ? { note } : { note: `${note}. Warning: ${warning}`, warning };
  };
  try {
    await evaluate([vary.lo, vary.hi]);
    const loMeets = points.get(vary.lo)!.met, hiMeets = points.get(vary.hi)!.met;
    let answer: number | undefined, largestMeeting: number | undefined;
    if (loMeets && hiMeets) answer = vary.lo;
    else if (hiMeets) answer = values[(await boundary(false)).hi];
    // Met at the low end and missed at the high end: more makes it harder, and the low end is no answer.
    else if (loMeets) largestMeeting = values[(await boundary(true)).lo];
    const found = answerNote(prepared, sorted(), answer, largestMeeting);
    return {
      ...base(),
      answer,
      ...(largestMeeting !== undefined ? { largestMeeting } : {}),
      resolution: prepared.resolution,
      points: sorted(),
      rounds,
      ...found.above,
      ...warned(found.note),
    };
  } catch (e) {
    if (!(e instanceof Interrupted)) throw e;
    const note = interruptedNote(target.text, vary.path, sorted(), rounds);
    return {
      ...base(),
      resolution: prepared.resolution,
      points: sorted(),
      rounds,
      partial: true,
      ...warned(note),
    };
  } finally {
    workers?.close();
  }
}

/**
 * Runs one round's values and records their points (and, for a target in a map of counts, the keys each
 * report's map counted). A run that failed or measured nothing for the target stops the plan; an aborted
 * signal does too, once the runs it left done are recorded.
 */
async function runRound(
  o: PlanOptions,
  { vary, target }: PreparedPlan,
  fresh: number[],
  points: Map<number, PlanPoint>,
  counted: Set<string>,
): Promise<void> {
  const run = o.run ?? ((jobs, hooks) => runInWorkers(jobs, o.workers, hooks));
  const told = new Set<number>();
  // Each run's line as soon as it is done; a result that cannot be read is left to the checks below.
  const onResult = (r: PlanResult) => {
    const point = r.ok ? tryOr(() => toPoint(r, target), undefined) : undefined;
    if (!point || told.has(r.value)) return;
    told.add(r.value);
    o.onRun?.(point);
  };
  const results = await run(
    fresh.map((value) => ({ file: o.loaded.file, path: vary.path, value, seed: o.seed })),
    { signal: o.signal, onResult },
  );
  const interrupted = o.signal?.aborted === true;
  const failed: { value: number; error: string }[] = [];
  const unmeasured: { value: number; error: string }[] = [];
  for (const value of fresh) {
    const r = results.find((x) => x.value === value);
    // Interrupted, a run under way has no result: it is left out of the plan.
    if (!r && interrupted) continue;
    if (!r) throw new Error(`no result came back for the run at ${vary.path}=${value}`);
    if (!r.ok) {
      failed.push({ value, error: r.error });
      continue;
    }
    if (target.zeroIfMissing) { for (const k of mapKeys(r.report, target)) counted.add(k); }
    const point = toPoint(r, target);
    if (point) points.set(value, point);
    else unmeasured.push({ value, error: whyUnmeasured(r.report, target) });
  }
  for (const v of fresh) if (points.has(v) && !told.has(v)) o.onRun?.(points.get(v)!);
  o.onRound?.(fresh.flatMap((v) => points.get(v) ?? []));
  // A failed run neither meets the target nor misses it: an answer built on it would be wrong. The same
  // variant and seed fail again (runs are deterministic), so it is not retried.
  if (failed.length) throw new PlanRunFailed(vary.path, target.text, o.seed, failed);
  // Nor does a run that measured nothing for the target (a percentile of no delays): read as 0, it met
  // `p99<=10` with no task measured.
  if (unmeasured.length) throw new PlanTargetUnmeasured(vary.path, target.text, o.seed, unmeasured);
  if (interrupted) throw new Interrupted();
}

function tryOr<T, U>(f: () => T, otherwise: U): T | U {
  try {
    return f();
  } catch {
    return otherwise;
  }
}

/** The answer line, and the values the search found out of line with it (not monotone). */
function answerNote(
  { vary, target, resolution }: PreparedPlan,
  sorted: PlanPoint[],
  answer: number | undefined,
  largestMeeting: number | undefined,
): { note: string; above: { missesAbove?: number[]; meetsAbove?: number[] } } {
  // Values above the answer that miss the target: the search assumed none, and went below them.
  const missesAbove = answer === undefined ? [] : sorted.filter((p) => !p.met && p.value > answer!);
  const meetsAbove = largestMeeting === undefined
    ? []
    : sorted.filter((p) => p.met && p.value > largestMeeting!);
  const within = `within ${resolution}`;
  const found = largestMeeting !== undefined
    ? `${target.text} is met at the low end of the range (${vary.path}=${vary.lo}) but not at its high end ` +
      `(${vary.hi}): it gets harder as ${vary.path} grows, so this is not a search for capacity and the low ` +
      `end is no answer. Largest ${vary.path} found meeting it: ${largestMeeting} (${within})`
    : answer === undefined
    ? `no value up to ${vary.hi} meets ${target.text}`
    : answer === vary.lo
    ? `${target.text} is met across the range, at its low end (${vary.path}=${vary.lo}) already: the smallest ` +
      `${vary.path} meeting it is ${vary.lo} or below (lower the range's low end to search further)`
    : `smallest ${vary.path} meeting ${target.text}: ${answer} (${within}; assumes the target gets ` +
      `easier as ${vary.path} grows, as more capacity does)`;
  const note = missesAbove.length
    ? `${found}. ${notMonotone(target.text, vary.path, answer!, missesAbove, "misses")}`
    : meetsAbove.length
    ? `${found}. ${notMonotone(target.text, vary.path, largestMeeting!, meetsAbove, "meets")}`
    : found;
  return {
    note,
    above: {
      ...(missesAbove.length ? { missesAbove: missesAbove.map((p) => p.value) } : {}),
      ...(meetsAbove.length ? { meetsAbove: meetsAbove.map((p) => p.value) } : {}),
    },
  };
}

/** The answer line of an interrupted plan: no answer, and where the runs done so far put it. */
function interruptedNote(target: string, path: string, sorted: PlanPoint[], rounds: number): string {
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? "" : "s"}`;
  const head =
    `partial plan: interrupted (Ctrl-C) after ${n(sorted.length, "run")} in ${n(rounds, "round")}, ` +
    `so there is no answer`;
  if (!sorted.length) return head;
  const said = (p: PlanPoint) => `${p.value} (${p.met ? "meets" : "misses"} it)`;
  // The first neighbours of the runs done on either side of the target: what the search would narrow.
  const flip = sorted.findIndex((p, i) => i > 0 && p.met !== sorted[i - 1].met);
  if (flip > 0) {
    return `${head}; so far ${target} flips between ${path}=${said(sorted[flip - 1])} and ${
      said(sorted[flip])
    }`;
  }
  const all = sorted[0].met ? "meets" : "misses";
  return `${head}; every value run so far (${shortList(sorted.map((p) => p.value))}) ${all} ${target}`;
}

/** The keys of the map of counts a target's last key is looked up in, in one run's report. */
function mapKeys(report: unknown, target: PlanTarget): string[] {
  let map: unknown = report;
  for (const key of target.keys.slice(0, -1)) {
    map = map && typeof map === "object" ? (map as Record<string, unknown>)[key] : undefined;
  }
  return map && typeof map === "object" ? Object.keys(map) : [];
}

/**
 * For a target in a map of counts whose key no run counted (it read 0 in every run, as a misspelt key
 * does): the warning naming it and the keys the runs counted, the closest first if one is close.
 */
function uncountedKey(target: PlanTarget, counted: Set<string>, runs: number): string | undefined {
  const key = target.keys.at(-1)!;
  if (!target.zeroIfMissing || !runs || counted.has(key)) return undefined;
  const map = target.path.slice(0, target.path.length - key.length - 1);
  const near = closestName(key, [...counted]);
  const keys = [...(near === undefined ? [] : [near]), ...[...counted].filter((k) => k !== near).sort()];
  const shown = keys.slice(0, 10).map((k) => (k === near ? `"${k}" (the closest)` : `"${k}"`));
  const more = keys.length > 10 ? ` and ${keys.length - 10} more` : "";
  const those = keys.length ? `the runs counted ${shown.join(", ")}${more}` : `the runs counted no key there`;
  return `no run counted "${key}" in ${map}, so it read 0 in every run, as a misspelt key would; ${those}. ` +
    `If "${key}" is the key meant, the answer holds`;
}

/**
 * The note that values above the answer miss the target (or, for a target harder as the value grows,
 * above the largest value meeting it meet it), which the search assumed none would.
 */
function notMonotone(
  target: string,
  path: string,
  found: number,
  above: PlanPoint[],
  they: "misses" | "meets",
): string {
  const values = above.map((p) => p.value), many = values.length > 1;
  if (they === "meets") {
    return `Note: ${target} is not monotone in ${path} above ${found}: ${found} is the largest value found ` +
      `meeting it before one that misses it, but ${shortList(values)} ${many ? "meet" : "meets"} it again`;
  }
  return `Note: ${target} is not monotone in ${path} between ${found} and ${values.at(-1)}: ${found} meets ` +
    `it but ${shortList(values)} ${many ? "miss" : "misses"} it`;
}

/** The run's point on the curve, or undefined when its report measured nothing for the target. */
function toPoint(r: PlanResult & { ok: true }, target: PlanTarget): PlanPoint | undefined {
  const metric = named(`--target ${target.text}`, () => valueAt(r.report, target));
  if (metric === null) {
    const bound = drainLowerBound(r.report, target);
    return bound === undefined
      ? undefined
      : { value: r.value, metric: bound.seconds, atLeast: true, met: bound.met };
  }
  return { value: r.value, metric, met: meets(target, metric), wallSeconds: r.report.wallSeconds };
}

/**
 * A drain not over by the end (`events.N.drainSeconds` null) took longer than the time from its start to the
 * end: whether that decides the target, and the seconds. Undefined for another field, or where it does not
 * decide it (`drainSeconds>=400` with 250 s left: it may yet have drained in time).
 */
function drainLowerBound(
  report: { simulatedSeconds?: number; events?: unknown },
  target: PlanTarget,
): { seconds: number; met: boolean } | undefined {
  const [list, index, field] = target.keys;
  if (list !== "events" || field !== "drainSeconds" || !Array.isArray(report.events)) return undefined;
  const atSec = (report.events[Number(index)] as { atSec?: unknown } | undefined)?.atSec;
  if (typeof atSec !== "number" || typeof report.simulatedSeconds !== "number") return undefined;
  const seconds = round6(report.simulatedSeconds - atSec);
  // It took more than `seconds`, so more than the target's value when that is no more: a bound short of
  // the value decides nothing.
  if (seconds < target.value) return undefined;
  return { seconds, met: target.op === ">=" || target.op === ">" };
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * The target's number in a report, or null where the report measured nothing (a percentile of no delays);
 * an optional field a run did not produce (a pool without series) throws.
 */
export function valueAt(report: unknown, target: PlanTarget): number | null {
  let cur: unknown = report;
  for (const [i, key] of target.keys.entries()) {
    if (Array.isArray(cur)) {
      const list = target.keys.slice(0, i).join(".");
      if (Number(key) >= cur.length) {
        const has = cur.length
          ? `${cur.length} ${list} (${list}.0 to ${list}.${cur.length - 1})`
          : `no ${list}`;
        throw new Error(`${list}.${key} is out of range: this run's report has ${has}`);
      }
      const element = cur[Number(key)] as Record<string, unknown> | undefined;
      const field = target.keys.slice(i + 1).join(".");
      if (typeof element?.kind === "string" && !(target.keys[i + 1] in element)) {
        throw new Error(`${list}.${key} is a ${element.kind} event, which has no ${field}`);
      }
      cur = element;
      continue;
    }
    cur = cur && typeof cur === "object" ? (cur as Record<string, unknown>)[key] : undefined;
  }
  if (cur === undefined && target.zeroIfMissing) return 0;
  if (cur === null) return null;
  if (typeof cur !== "number") throw new Error(`this run's report has no number at ${target.path}`);
  return cur;
}

/** What the delays a field of `QueueDelays` is a percentile of count, by the report field they are under. */
const DELAYS_OF: Record<string, string> = {
  queueDelaySeconds: "no instance was asked for",
  admissionDelaySeconds: "no instance was asked for",
  rescheduleDelaySeconds: "no run killed or lost was to run again",
  afterKill: "no run killed was to run again",
  afterLoss: "no run lost was to run again",
};

/** Why a report's field the target names is null: the delays it is a percentile of, and what counted them. */
function whyUnmeasured(report: unknown, target: PlanTarget): string {
  const parentKeys = target.keys.slice(0, -1);
  let parent: unknown = report;
  for (const key of parentKeys) {
    parent = parent && typeof parent === "object" ? (parent as Record<string, unknown>)[key] : undefined;
  }
  const field = target.path.slice(0, target.path.length - target.keys.at(-1)!.length - 1);
  const count = (parent as { count?: unknown } | undefined)?.count;
  const warmup = (report as { warmupSeconds?: unknown }).warmupSeconds;
  const after = typeof warmup === "number" && warmup > 0 ? ` after the ${warmup} s warm-up` : "";
  const none = DELAYS_OF[parentKeys.at(-1) ?? ""];
  const simulated = (report as { simulatedSeconds?: unknown }).simulatedSeconds;
  if (!none && typeof warmup === "number" && typeof simulated === "number" && simulated <= warmup) {
    // Figures over the time after the warm-up (utilization, fairness, launches/s, pools' averages).
    return `${target.path} is null in its report: the run measured nothing, as it ended at ${simulated} s, ` +
      `before its ${warmup} s warm-up was over, so the run neither meets nor misses ${target.text}`;
  }
  if (target.keys[0] === "events" && target.keys.at(-1) === "drainSeconds") {
    const tasks = (parent as { drainPending?: { tasks?: unknown } } | undefined)?.drainPending?.tasks;
    const left = typeof tasks === "number" ? ` (${tasks} tasks left on its hosts)` : "";
    return `${target.path} is null in its report: the drain was not over by the end of the run${left}, so ` +
      `the run neither meets nor misses ${target.text}`;
  }
  const samples = count === 0
    ? `${field} has no samples: ${none ?? "none were counted"}${after} (count 0)`
    : `${field} has no value there`;
  return `${target.path} is null in its report: ${samples}, so the run neither meets nor misses ${target.text}`;
}

/**
 * Deno workers that run variants, up to `size` at a time. They are kept from one round of a plan to the
 * next, each running one variant after another, so that each parses the scenario's traces once (see
 * plan_worker.ts); one that fails is replaced by a fresh one. `close` ends them.
 */
export class PlanWorkers {
  readonly #idle: Worker[] = [];
  readonly #all = new Set<Worker>();

  constructor(readonly size: number) {}

  /**
   * Runs a batch of variants. Once `hooks.signal` is aborted the workers under way are ended and no more
   * runs start: only the results of the runs done come back.
   */
  readonly run = async (jobs: PlanJob[], hooks: RunHooks = {}): Promise<PlanResult[]> => {
    const { signal, onResult } = hooks;
    const results: PlanResult[] = [];
    let next = 0;
    const lane = async () => {
      let worker: Worker | undefined;
      try {
        while (next < jobs.length && !signal?.aborted) {
          const job = jobs[next++];
          worker ??= this.#take();
          const result = await this.#runOne(worker, job, signal);
          if (result && !result.kept) worker = this.#end(worker);
          if (result) {
            results.push(result.result);
            onResult?.(result.result);
          }
        }
      } finally {
        // A run under way when the plan stopped is ended with its worker; an idle worker waits for the next.
        if (worker && signal?.aborted) this.#end(worker);
        else if (worker) this.#idle.push(worker);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.size, jobs.length)) }, lane));
    return results;
  };

  /** Ends every worker. */
  close(): void {
    for (const w of this.#all) w.terminate();
    this.#all.clear();
    this.#idle.length = 0;
  }

  #take(): Worker {
    const idle = this.#idle.pop();
    if (idle) return idle;
    const w = new Worker(new URL("./plan_worker.ts", import.meta.url), { type: "module" });
    this.#all.add(w);
    return w;
  }

  #end(w: Worker): undefined {
    w.terminate();
    this.#all.delete(w);
    return undefined;
  }

  /**
   * One variant's result, and whether its worker may run the next (not after an uncaught error, which
   * leaves it in a state unknown); undefined when the signal stopped it first.
   */
  async #runOne(
    w: Worker,
    job: PlanJob,
    signal: AbortSignal | undefined,
  ): Promise<{ result: PlanResult; kept: boolean } | undefined> {
    let stop = () => {};
    try {
      return await new Promise<{ result: PlanResult; kept: boolean } | undefined>((resolve, reject) => {
        w.onmessage = (e: MessageEvent<PlanResult>) => resolve({ result: e.data, kept: true });
        w.onerror = (e) => {
          e.preventDefault();
          reject(new Error(e.message));
        };
        stop = () => resolve(undefined);
        signal?.addEventListener("abort", stop);
        w.postMessage(job);
      }).catch((e) => ({
        result: { ok: false, value: job.value, error: (e as Error).message },
        kept: false,
      }));
    } finally {
      signal?.removeEventListener("abort", stop);
    }
  }
}

/** Runs variants in up to `workers` Deno workers at a time (a `PlanWorkers` for this one batch). */
export async function runInWorkers(
  jobs: PlanJob[],
  workers: number,
  hooks: RunHooks = {},
): Promise<PlanResult[]> {
  const pool = new PlanWorkers(workers);
  try {
    return await pool.run(jobs, hooks);
  } finally {
    pool.close();
  }
}
