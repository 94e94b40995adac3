/** The workload part of the scenario format: job types, arrival processes, distributions and task behaviour. */
import { z } from "zod";
import { amount, type Distribution, fraction, instanceCount, unionError } from "./scenario_distribution.ts";

export type { Distribution };

/** When jobs arrive. All times are simulated seconds. */
export const arrival = z.union([
  z.object({ ratePerSec: z.number().positive() }).strict().describe("Poisson arrivals"),
  z.object({ at: z.array(z.number().nonnegative()).min(1) }).strict().describe("a fixed schedule"),
  z.object({
    /** Poisson arrivals whose rate follows a daily curve: mean × (1 + amplitude × cos(2π(t − peak)/period)). */
    diurnal: z.object({
      meanPerSec: z.number().positive(),
      amplitude: z.number().min(0).max(1),
      peakAtSec: z.number().nonnegative().default(0),
      periodSec: z.number().positive().default(86_400),
    }).strict(),
  }).strict(),
  z.object({
    /** `jobs` jobs at once every `everySec`, from `firstAtSec`. */
    bursts: z.object({
      everySec: z.number().positive(),
      jobs: z.number().int().positive(),
      firstAtSec: z.number().nonnegative().default(0),
    }).strict(),
  }).strict(),
], {
  error: unionError(
    "one of {ratePerSec: n}, {at: [seconds, ...]}, {diurnal: {meanPerSec, amplitude, peakAtSec, periodSec}} " +
      "or {bursts: {everySec, jobs, firstAtSec}}",
    {
      ratePerSec: "{ratePerSec: n}, n a number above 0 (Poisson arrivals)",
      at: "{at: [seconds, ...]}: at least one time, each at least 0",
      diurnal: "{diurnal: {meanPerSec, amplitude, peakAtSec, periodSec}} (peakAtSec and periodSec optional)",
      bursts: "{bursts: {everySec, jobs, firstAtSec}} (firstAtSec optional)",
    },
  ),
});
export type Arrival = z.infer<typeof arrival>;

/** Spark dynamic allocation: the job starts small and asks for executors while it runs. */
const elastic = z.object({
  /** Instances the job grows to: at least the most it starts with (`instances`). */
  maxInstances: z.number().int().positive(),
  /** Instances added per step (Spark doubles its request; here a fixed step keeps it readable). */
  growBy: z.number().int().positive(),
  everySec: z.number().positive(),
}).strict();

/** Google cluster-data 2011 `task_events` replay. */
export const trace = z.object({
  /** CSV file (optionally .gz) relative to the scenario. */
  file: z.string().min(1),
  /** Requests are fractions of the largest machine: scaled by this host class's resources. */
  hostClass: z.string().min(1),
  /** Trace seconds per simulated second (2: the trace runs twice as fast). */
  speedup: z.number().positive().default(1),
  /** Trace time (seconds) that becomes simulated time 0. */
  startSec: z.number().nonnegative().default(0),
  /** Tasks that never end in the trace run this long (seconds). */
  openEndedSec: z.number().positive().default(3600),
}).strict();
export type TraceSpec = z.infer<typeof trace>;

const JOB_TYPES = ["BATCH", "SERVICE", "STATELESS", "STATEFUL", "DAEMON"] as const;

/** Accepts `batch`, `Batch` or `BATCH`. */
const jobType = z.preprocess(
  (v) => (typeof v === "string" ? v.toUpperCase() : v),
  z.enum(JOB_TYPES),
);

const workloadFields = z.object({
  name: z.string().min(1),
  /** A leaf pool's path (`/org/team`), checked against the scenario's pools. */
  respool: z.string(),
  /** STATELESS is Peloton's SERVICE; STATEFUL is a service whose tasks keep a persistent volume. */
  type: jobType.default("BATCH"),
  /** A Peloton job YAML file (relative to the scenario) used as the job template. */
  jobFile: z.string().optional(),
  arrival: arrival.default({ at: [0] }),
  /**
   * No arrivals before this time or after `stopSec` (later than `startSec`), in simulated seconds; a trace
   * workload's too (its `trace.startSec` is the trace time that becomes simulated time 0).
   */
  startSec: z.number().nonnegative().default(0),
  stopSec: z.number().positive().optional(),
  /** Stop submitting after this many jobs (a trace workload: this many of the jobs its window replays). */
  maxJobs: z.number().int().positive().optional(),
  instances: instanceCount.default(1),
  /** How long each task runs; services and daemons without it run until the end. */
  durationSec: amount("seconds").optional(),
  /** Per job: every task of a job asks for the same resources. */
  cpu: amount("cores").default(1),
  memoryMb: amount("MB").default(1024),
  diskMb: amount("MB").default(0),
  gpu: amount("GPUs").default(0),
  priority: z.number().int().nonnegative().default(0),
  preemptible: z.boolean().default(true),
  /**
   * Services only: at most this many instances of a job down at once for host maintenance, the rest waiting
   * on their draining hosts (the job's `sla.maximumUnavailableInstances`); 0, as without it: no limit.
   */
  maxUnavailableInstances: z.number({ error: "expected a whole number of instances, 0 for no limit" })
    .min(0, { error: "expected at least 0 instances (0: no limit)" })
    // A refinement, not `.int()`: that one stops the checks, and -0.5 would not also be told it is below 0.
    .refine(Number.isInteger, { error: "expected a whole number of instances" })
    .optional(),
  /** Runs on slack: resources other tasks were given but do not use. */
  revocable: z.boolean().default(false),
  /**
   * All instances (true) or the first N placed together or not at all (`minimumRunningInstances`); N is at
   * most the fewest instances a job gets.
   */
  gang: z.union([z.boolean(), z.number().int().positive()], {
    error: unionError("true, false or a whole number of at least 1"),
  }).default(false),
  /** Host attributes a task needs (AND of HOST label constraints), e.g. `{ host_pool: gpu }`. */
  hostAttributes: z.record(z.string(), z.string()).optional(),
  /** A Peloton constraint as in a job file's `defaultConfig.constraint`; ANDed with `hostAttributes`. */
  constraint: z.record(z.string(), z.unknown()).optional(),
  /** At most this many instances of a job per host (a TASK label constraint). */
  maxPerHost: z.number().int().positive().optional(),
  placementStrategy: z.enum(["PACK_HOST", "SPREAD_JOB"]).optional(),
  /** Dynamic ports per task. */
  ports: z.number().int().nonnegative().default(0),
  /** STATEFUL: the persistent volume each task keeps on its host. */
  volumeMb: z.number().positive().default(1024),
  /** Probability that a task run exits non-zero. */
  failureRate: z.number().min(0).max(1).default(0),
  /** Fraction of its cpu limit a task uses; the rest is slack revocable tasks can run on. */
  cpuUsage: fraction.optional(),
  elastic: elastic.optional(),
  trace: trace.optional(),
}).strict();

/** Rules that look at several fields of a workload. */
function checkWorkload(w: z.infer<typeof workloadFields>, ctx: z.RefinementCtx): void {
  const report = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: "custom", path, message });
  if (w.stopSec !== undefined && w.stopSec > 0 && w.startSec >= 0 && w.stopSec <= w.startSec) {
    report(["stopSec"], `expected more than startSec (${w.startSec})`);
  }
  const notServices = misplacedSla(w);
  if (notServices) report(["maxUnavailableInstances"], `expected no maxUnavailableInstances ${notServices}`);
  // A job file's or trace's jobs have their own instance counts; a rule needing a malformed field waits.
  if (w.jobFile !== undefined || w.trace !== undefined || !instanceCount.safeParse(w.instances).success) {
    return;
  }
  const { min, max, kind } = instanceRange(w.instances);
  const fixed = typeof w.instances === "number";
  if (typeof w.gang === "number" && Number.isInteger(w.gang) && w.gang > min) {
    // Placing a gang needs that many instances: a smaller job could never start as one.
    const why = max === Infinity ? ": draws are rounded, and at least 1" : "";
    report(
      ["gang"],
      fixed
        ? `expected at most instances (${min})`
        : `expected at most the fewest instances a job can draw (${min}, instances' ${kind}${why})`,
    );
  }
  const grows = w.elastic?.maxInstances;
  if (grows !== undefined && Number.isInteger(grows) && grows > 0 && grows < max) {
    report(
      ["elastic", "maxInstances"],
      fixed
        ? `expected at least instances (${max}), the count a job starts with`
        : max === Infinity
        ? `expected at least the most instances a job can draw, but instances' ${kind} has no most: use fixed, uniform or choice`
        : `expected at least the most instances a job can draw (${max}, instances' ${kind}), the count it starts with`,
    );
  }
}

const SERVICE_TYPES: readonly string[] = ["SERVICE", "STATELESS", "STATEFUL"];

/**
 * Why `maxUnavailableInstances` would be ignored, if it would (said after "expected no
 * maxUnavailableInstances"): Peloton applies the SLA to services only, and a job file's or trace's jobs are
 * not built from the workload's fields.
 */
function misplacedSla(w: z.infer<typeof workloadFields>): string | undefined {
  if (w.maxUnavailableInstances === undefined) return undefined;
  if (w.jobFile !== undefined) {
    return "with a jobFile: the job file's own sla.maximumUnavailableInstances applies, set it there";
  }
  if (w.trace !== undefined) {
    return "on trace workloads: their jobs are batch jobs, which it does not apply to";
  }
  if (SERVICE_TYPES.includes(w.type)) return undefined;
  return `on ${w.type} workloads: Peloton applies it to services only (type stateless or stateful)`;
}

/**
 * Fields a workload's jobs are not built from when a job file or a trace gives them: each with the job
 * file's field that sets it instead. Given there, it would silently change nothing (and `plan --vary` over it
 * would search a flat curve).
 */
const TEMPLATE_FIELDS: Record<string, string> = {
  type: "type",
  instances: "instanceCount",
  cpu: "defaultConfig.resource.cpuLimit",
  memoryMb: "defaultConfig.resource.memLimitMb",
  diskMb: "defaultConfig.resource.diskLimitMb",
  gpu: "defaultConfig.resource.gpuLimit",
  priority: "sla.priority",
  preemptible: "sla.preemptible",
  revocable: "sla.revocable",
  gang: "sla.minimumRunningInstances",
  hostAttributes: "defaultConfig.constraint",
  constraint: "defaultConfig.constraint",
  maxPerHost: "defaultConfig.constraint",
  placementStrategy: "placementStrategy",
  ports: "defaultConfig.ports",
  volumeMb: "defaultConfig.volume",
};

/** A trace gives its jobs' times, tasks and outcomes too. */
const TRACE_FIELDS = ["arrival", "durationSec", "failureRate", "cpuUsage", "elastic"];

/**
 * Fields of a workload, as written, that would change nothing: those a job file or trace sets instead, and
 * those its type has no use for. Read from the input, before defaults fill the rest in; reported at the
 * field, each with where to set it or why it does not apply.
 */
export function misplacedFields(raw: unknown): { path: string[]; message: string }[] {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return [];
  const w = raw as Record<string, unknown>;
  const given = (k: string) => w[k] !== undefined && w[k] !== null;
  const out: { path: string[]; message: string }[] = [];
  const refuse = (k: string, why: string) => out.push({ path: [k], message: `expected no ${k} ${why}` });
  if (given("jobFile")) {
    for (const [k, there] of Object.entries(TEMPLATE_FIELDS)) {
      if (given(k)) refuse(k, `with a jobFile: the job file's ${there} applies, set it there`);
    }
    return out;
  }
  if (given("trace")) {
    for (const k of [...Object.keys(TEMPLATE_FIELDS), ...TRACE_FIELDS]) {
      if (given(k)) {
        refuse(k, "on trace workloads: the trace gives each job's times, tasks, resources and outcomes");
      }
    }
    return out;
  }
  const parsed = jobType.safeParse(w.type ?? "BATCH");
  if (!parsed.success) return out;
  const type = parsed.data;
  const name = type.toLowerCase();
  if (given("volumeMb") && type !== "STATEFUL") {
    refuse("volumeMb", `on ${name} workloads: only stateful tasks keep a persistent volume`);
  }
  if (given("instances") && type === "DAEMON") {
    refuse("instances", "on daemon workloads: a daemon job runs one task on each host it may run on");
  }
  if (w.gang !== undefined && w.gang !== false && type !== "BATCH") {
    refuse(
      "gang",
      `on ${name} workloads: Peloton places gangs (sla.minimumRunningInstances) of batch jobs only`,
    );
  }
  if (w.revocable === true && w.preemptible === false && type !== "BATCH") {
    out.push({
      path: ["preemptible"],
      message: `expected true, since revocable is true: a revocable ${name} job must be preemptible`,
    });
  }
  return out;
}

export const workload = workloadFields.superRefine(checkWorkload);
export type Workload = z.infer<typeof workload>;

/**
 * A workload's resource fields (a host class's have the same names), the pool resource kind each is counted
 * in, and its unit.
 */
export const RESOURCE_FIELDS = [
  ["cpu", "cpu", "cores"],
  ["memoryMb", "memory", "MB"],
  ["diskMb", "disk", "MB"],
  ["gpu", "gpu", "GPUs"],
] as const;

/** The fewest and most instances a job can get from a valid instance count (draws: rounded, at least 1). */
export function instanceRange(d: Distribution): { min: number; max: number; kind: string } {
  if (typeof d === "number") return { min: d, max: d, kind: "number" };
  const kind = Object.keys(d)[0];
  const at = (n: number) => Math.max(1, Math.round(n));
  if ("fixed" in d) return { min: d.fixed, max: d.fixed, kind };
  if ("uniform" in d) return { min: d.uniform[0], max: d.uniform[1], kind };
  if ("choice" in d) {
    const values = d.choice.map(([v]) => v);
    return { min: Math.min(...values), max: Math.max(...values), kind };
  }
  if ("normal" in d && d.normal.stddev === 0) return { min: at(d.normal.mean), max: at(d.normal.mean), kind };
  if ("lognormal" in d && d.lognormal.sigma === 0) {
    return { min: at(d.lognormal.median), max: at(d.lognormal.median), kind };
  }
  return { min: 1, max: Infinity, kind };
}
