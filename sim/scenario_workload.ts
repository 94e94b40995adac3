/** The workload part of the scenario format: job types, arrival processes, distributions and task behaviour. */
import { z } from "zod";

/** A number, or a distribution to draw it from. */
export const distribution = z.union([
  z.number().nonnegative(),
  z.object({ fixed: z.number().nonnegative() }).strict(),
  z.object({ uniform: z.tuple([z.number().nonnegative(), z.number().nonnegative()]) }).strict(),
  z.object({ exponential: z.number().positive().describe("mean") }).strict(),
  z.object({ normal: z.object({ mean: z.number(), stddev: z.number().nonnegative() }).strict() }).strict(),
  z.object({
    lognormal: z.object({ median: z.number().positive(), sigma: z.number().nonnegative() }).strict(),
  }).strict(),
  z.object({
    /** Values with weights: `choice: [[1, 0.5], [8, 0.5]]`. */
    choice: z.array(z.tuple([z.number().nonnegative(), z.number().positive()])).min(1),
  }).strict(),
]);
export type Distribution = z.infer<typeof distribution>;

const fraction = z.union([
  z.number().positive().max(1),
  z.object({ uniform: z.tuple([z.number().positive().max(1), z.number().positive().max(1)]) }).strict(),
  z.object({ fixed: z.number().positive().max(1) }).strict(),
]);

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
]);
export type Arrival = z.infer<typeof arrival>;

/** Spark dynamic allocation: the job starts small and asks for executors while it runs. */
const elastic = z.object({
  /** Instances the job grows to. */
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

export const workload = z.object({
  name: z.string().min(1),
  respool: z.string().startsWith("/"),
  /** STATELESS is Peloton's SERVICE; STATEFUL is a service whose tasks keep a persistent volume. */
  type: jobType.default("BATCH"),
  /** A Peloton job YAML file (relative to the scenario) used as the job template. */
  jobFile: z.string().optional(),
  arrival: arrival.default({ at: [0] }),
  /** No arrivals before this time or after `stopSec`. */
  startSec: z.number().nonnegative().default(0),
  stopSec: z.number().positive().optional(),
  /** Stop submitting after this many jobs. */
  maxJobs: z.number().int().positive().optional(),
  instances: distribution.default(1),
  /** How long each task runs; services and daemons without it run until the end. */
  durationSec: distribution.optional(),
  /** Per job: every task of a job asks for the same resources. */
  cpu: distribution.default(1),
  memoryMb: distribution.default(1024),
  diskMb: distribution.default(0),
  gpu: distribution.default(0),
  priority: z.number().int().nonnegative().default(0),
  preemptible: z.boolean().default(true),
  /** Runs on slack: resources other tasks were given but do not use. */
  revocable: z.boolean().default(false),
  /** All instances (true) or the first N placed together or not at all (`minimumRunningInstances`). */
  gang: z.union([z.boolean(), z.number().int().positive()]).default(false),
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
export type Workload = z.infer<typeof workload>;
