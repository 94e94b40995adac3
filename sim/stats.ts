/** Statistics a simulation collects: task counts from the message flow, queue delays, and sampled time series. */
import type { Gang, Message, Preemption } from "../core/messages.ts";
import type { Address } from "../core/ports/transport.ts";
import { parseMesosTaskId, type TaskRecord } from "../core/model/records.ts";
import type { ClusterCapacity } from "../core/messages.ts";
import { jain, type PoolShare, poolShares as corePoolShares } from "../core/resmgr/fairness.ts";
import type { RespoolNode } from "../core/resmgr/respool_node.ts";
import type { RespoolTree } from "../core/resmgr/respool_tree.ts";
import { PLACED, PLACING, READY, type TaskTable } from "../core/resmgr/task_table.ts";
import { REVOCABLE } from "../core/resmgr/allocation.ts";
import { type SimTaskStatus, SLACK_PREEMPTED_REASON } from "./cluster.ts";
import type { Simulation } from "./runner.ts";
import {
  averagesBetween,
  CPU,
  DISK,
  emptyAreas,
  GPU,
  HELD_CPU,
  HELD_MEM,
  MEM,
  SLACK_HELD_CPU,
  SLACK_HELD_MEM,
  type UsageAreas,
  type UsageAverages,
  type UsageMeter,
} from "./usage_meter.ts";

export { jain, type PoolShare };

export interface TaskCounts {
  /** Instances of submitted jobs (grown elastic jobs and daemon instances included). */
  submitted: number;
  /** Task runs launched, one per task id (a task run again counts again; a repeated status does not). */
  launched: number;
  succeeded: number;
  failed: number;
  /** Task runs killed, and instances stopped before they launched (dropped from the queue, never run). */
  killed: number;
  lost: number;
  /**
   * Preempted: running tasks evicted for a pool's entitlement and revocable ones whose slack went, counted
   * as their runs end killed (in `killed` too), and waiting ones, as they are sent back.
   */
  preempted: number;
  /**
   * Instances never launched by the end, of jobs accepted or not answered yet (submitted so close to the
   * end that their create had no answer), and not stopped before they launched (those are `killed`).
   */
  unplaced: number;
  /**
   * Instances of jobs the API refused. Every submitted instance is launched (at least once), killed before
   * it launched, unplaced or rejected.
   */
  rejected: number;
}

/**
 * The run's time series, a point per sample time `t`. What a point is depends on the series: utilization
 * (`cpuUtil` …) and `revocableCpu` are exact averages over the interval the point ends (from the sample
 * before, or from 0), integrated over every change in between; counts per interval (`launchesPerSec`,
 * `placementFailures`, `queueDelayP*`) cover that interval too; the rest are what held at the sample time.
 */
export interface Series {
  t: number[];
  /**
   * Fraction of the cpu of the hosts up that tasks hold (launched until they end, revocable tasks
   * included: it may pass 1 when they run on slack) over the interval: core-seconds held over core-seconds
   * of the hosts up in it, so a change of capacity within it weighs by time.
   */
  cpuUtil: (number | null)[];
  memUtil: (number | null)[];
  diskUtil: (number | null)[];
  /** Null where no host (or, for GPUs, no GPU) was up in the interval, as each of these. */
  gpuUtil: (number | null)[];
  runningTasks: number[];
  /** Tasks in the pools' pending queues: waiting for admission (Peloton's demand). */
  queuedTasks: number[];
  /**
   * Admitted tasks waiting for a host: READY, PLACING, or PLACED and not yet taken by the job manager to
   * launch. Admitted, they count in their pool's allocation, not its demand.
   */
  placingTasks: number[];
  launchesPerSec: number[];
  /** Tasks preempted so far (cumulative, as `tasks.preempted` counts them). */
  preemptedTasks: number[];
  /**
   * Submit-to-running delays of the tasks that started running in each interval, seconds; null for an
   * interval in which no task started (tasks may still have been waiting).
   */
  queueDelayP50: (number | null)[];
  queueDelayP90: (number | null)[];
  queueDelayP99: (number | null)[];
  /**
   * Jain's index of cpu allocation against each leaf pool's due, over pools that want cpu: see `jain`.
   * Allocation is what the resource manager admitted, so a pool counts its share before its tasks run.
   */
  fairness: number[];
  /**
   * The same index over the cpu each pool's tasks hold on hosts (`PoolSeries.heldCpu`): a pool whose
   * admitted tasks still wait for hosts others hold counts only what runs.
   */
  fairnessHeld: number[];
  /**
   * Slack the hosts lend, at the sample time, and the cpu revocable tasks hold, averaged over the interval,
   * in cores.
   */
  slackCpu: number[];
  revocableCpu: number[];
  /**
   * Hosts whose capacity counts: agents registered (not failed, lost or removed) and not DOWN for
   * maintenance. A host DRAINING still runs tasks and is up; once drained its machine is down and it is not,
   * until its maintenance completes.
   */
  hostsUp: number[];
  /**
   * Hosts in maintenance whose agents are registered (draining, drained or down): they take no new work.
   * Those DOWN are not in `hostsUp`; those draining are.
   */
  hostsInMaintenance: number[];
  /**
   * Failed placement attempts per interval, by reason (the reason's headline), as the placement engine
   * reports them: see `SimStats.placementFailures`.
   */
  placementFailures: Record<string, number[]>;
  /** Tasks the placement engine handed back unplaced per interval, their placement deadline passed. */
  placementHandedBack: number[];
  /**
   * Task runs ended so far (cumulative, as `tasks` counts them): lost with their host (lost, dropped, gone,
   * unreachable), killed (preemptions, drains, stops), failed (a non-zero exit or an error).
   */
  lostTasks: number[];
  killedTasks: number[];
  failedTasks: number[];
}

/**
 * One pool over time, in Peloton's units (cores, MB); non-leaf pools sum their leaves. Split as Peloton's
 * `createRespoolUsage` splits a pool's usage: the unprefixed series are regular (non-revocable) tasks,
 * weighed against the non-slack entitlement; the `slack` ones are revocable tasks, weighed against the slack
 * entitlement, as the resource manager weighs them when it admits and preempts.
 */
export interface PoolSeries {
  /** The non-slack entitlement: what regular tasks are admitted against and preempted above. */
  entitlementCpu: number[];
  /** As in Peloton: regular tasks admitted, whether on hosts or still waiting for placement. */
  allocationCpu: number[];
  /** Regular tasks in the pending queue, waiting for admission. */
  demandCpu: number[];
  entitlementMemMb: number[];
  allocationMemMb: number[];
  demandMemMb: number[];
  /**
   * What the pool's tasks hold on hosts, from their launch until they end, averaged over the interval each
   * point ends (exactly, over every launch and end in it). The other series are the values at the sample
   * time.
   */
  heldCpu: number[];
  heldMemMb: number[];
  /** The slack entitlement: what revocable tasks are admitted against. */
  slackEntitlementCpu: number[];
  slackAllocationCpu: number[];
  slackHeldCpu: number[];
  slackDemandCpu: number[];
  slackEntitlementMemMb: number[];
  slackAllocationMemMb: number[];
  slackHeldMemMb: number[];
  slackDemandMemMb: number[];
  /** Regular tasks' GPUs, as their cpu: the non-slack entitlement, the allocation, the pending queue. */
  entitlementGpu: number[];
  allocationGpu: number[];
  demandGpu: number[];
}

/**
 * The series of a pool, in the order of `pools.csv`'s columns (the first six as before the split, the GPUs'
 * after every column of before).
 */
export const POOL_SERIES_KEYS: readonly (keyof PoolSeries)[] = [
  "entitlementCpu",
  "allocationCpu",
  "demandCpu",
  "entitlementMemMb",
  "allocationMemMb",
  "demandMemMb",
  "heldCpu",
  "heldMemMb",
  "slackEntitlementCpu",
  "slackAllocationCpu",
  "slackHeldCpu",
  "slackDemandCpu",
  "slackEntitlementMemMb",
  "slackAllocationMemMb",
  "slackHeldMemMb",
  "slackDemandMemMb",
  "entitlementGpu",
  "allocationGpu",
  "demandGpu",
];

/** Pools beyond this many (in tree order) get no time series, so huge trees do not bloat reports. */
export const MAX_POOL_SERIES = 100;
/** Distinct placement failure reasons charted; the rest count as "other". */
export const MAX_FAILURE_REASONS = 8;

interface JobTrack {
  jobId: string;
  workload: string;
  /** Launches of the workload's tasks by host class index (shared by the workload's jobs). */
  byClass: WorkloadLaunches;
  submitMs: number;
  /**
   * A daemon job: submitted with no instances, it gets one per matching host as the job manager creates
   * them, seen here as they are enqueued to the resource manager.
   */
  daemon: boolean;
  /** Instances known (submitted, grown, or a daemon's created). */
  expected: number;
  /** Per instance: `LAUNCHED`, `RAN`, `ADMITTED` and `STOPPED` bits. */
  flags: Uint8Array;
  /**
   * Per instance: the latest run id a launch was counted for, plus 1 (0: none). Backends repeat statuses
   * (reconciliation sends TASK_STAGING again), so a launch counts once per task id: once per run.
   */
  launchedRuns?: Uint32Array;
  /**
   * Instances from `grownFrom[k]` on were asked for at `grownAtMs[k]`: an elastic job's growth, a daemon
   * job's instance for a host that came later. Instances before the first were asked for at submission.
   */
  grownFrom?: number[];
  grownAtMs?: number[];
}

/**
 * An instance's flags (`JobTrack.flags`): first launched, first ran, first admitted (READY), stopped before
 * it ever launched (dropped from the queue: it is not waiting, and never runs).
 */
const LAUNCHED = 1, RAN = 2, ADMITTED = 4, STOPPED = 8;

/** When instance `i` of the job was asked for: its queue delay runs from then. */
function requestedMs(j: JobTrack, i: number): number {
  const from = j.grownFrom;
  if (from === undefined || i < from[0]) return j.submitMs;
  // `grownFrom` ascends; a daemon job grows once per host (50,000 steps), so search, not scan.
  let lo = 0, hi = from.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (from[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return j.grownAtMs![lo];
}

/** Records that instances from `j.expected` up to `count` were asked for at `nowMs`. */
function grow(j: JobTrack, count: number, nowMs: number): void {
  (j.grownFrom ??= []).push(j.expected);
  (j.grownAtMs ??= []).push(nowMs);
  j.expected = count;
}

interface WorkloadLaunches {
  counts: Uint32Array;
}

/**
 * What the statistics need of the cluster: the class each host row was added with. A launch's status
 * names its host's row (`SimTaskStatus`), so its class is read from a column, not found from its name.
 */
export interface HostClassIndex {
  /** Class names by class index. */
  readonly hostClasses: readonly string[];
  hostClassOf(hostRow: number): number;
}

/**
 * What the job manager is killing a run for, asked as the run's kill status passes (before the job manager
 * sees it): "running" when it evicts the run for its pool's entitlement, "maintenance" for a drain,
 * undefined otherwise (a user's stop, an update, a run it does not know). See `preemptionOf`.
 */
export type RunPreemption = (taskId: string) => "running" | "maintenance" | undefined;

/**
 * What a job manager's task record says its run is being killed for: only an eviction for the resource
 * manager (a pool's entitlement, or host maintenance) leaves a task PREEMPTING until its run ends.
 */
export function preemptionOf(
  task: Pick<TaskRecord, "state" | "terminationReason"> | undefined,
): "running" | "maintenance" | undefined {
  if (task?.state !== "PREEMPTING") return undefined;
  return task.terminationReason === "KILLED_HOST_MAINTENANCE" ? "maintenance" : "running";
}

/** The resource manager's reason for a preemption for a pool's entitlement (a waiting task's sending back). */
const REVOKE: Preemption["reason"] = "PREEMPTION_REASON_REVOKE_RESOURCES";

export interface StatsOptions {
  warmupMs: number;
  sampleMs: number;
}

export class SimStats {
  readonly tasks: TaskCounts = {
    submitted: 0,
    launched: 0,
    succeeded: 0,
    failed: 0,
    killed: 0,
    lost: 0,
    preempted: 0,
    unplaced: 0,
    rejected: 0,
  };
  readonly series: Series = {
    t: [],
    cpuUtil: [],
    memUtil: [],
    diskUtil: [],
    gpuUtil: [],
    runningTasks: [],
    queuedTasks: [],
    placingTasks: [],
    launchesPerSec: [],
    preemptedTasks: [],
    queueDelayP50: [],
    queueDelayP90: [],
    queueDelayP99: [],
    fairness: [],
    slackCpu: [],
    revocableCpu: [],
    hostsUp: [],
    hostsInMaintenance: [],
    placementFailures: {},
    placementHandedBack: [],
    // Last, so the columns of series.csv before them keep their places.
    fairnessHeld: [],
    lostTasks: [],
    killedTasks: [],
    failedTasks: [],
  };
  /** By pool path; a pool created after the first sample has zeros before it existed. */
  readonly pools: Record<string, PoolSeries> = {};
  jobsSubmitted = 0;
  /** Launches after the warm-up. */
  launchedAfterWarmup = 0;
  /**
   * Delays (ms) from asking for an instance (its job's submission, or the growth that added it) to its
   * first run, by workload, for instances asked for after the warm-up. Instances still waiting at the end
   * are not here: `waitingMs` gives their waits so far.
   */
  readonly queueDelaysMs = new Map<string, number[]>();
  /**
   * The part of the queue delay spent waiting for admission: from asking for an instance to its first
   * READY (its pool's admission), by workload, for instances asked for after the warm-up: a wait for the
   * pool's entitlement, which its limit and its share of the cluster cap, so a full cluster shows here as
   * well as a pool at its limit (the pool's allocation against its limit tells which).
   * Instances not admitted by the end are not here: `admissionWaitingMs` gives their waits so far.
   */
  readonly admissionDelaysMs = new Map<string, number[]>();
  /**
   * Delays (ms) from a run killed (host maintenance, preemption, an update) or lost with its host to the
   * same instance's next run, by workload, for runs ended after the warm-up: how long moved work waits to
   * run again elsewhere. Instances still waiting to run again at the end are not here:
   * `rescheduleWaitingMs` gives their waits so far.
   */
  readonly rescheduleDelaysMs = new Map<string, number[]>();
  /** The same delays split by how the run ended: killed, or lost with its host. */
  readonly rescheduleDelaysByEndMs = { killed: [] as number[], lost: [] as number[] };
  /** When and how each instance's last run was killed or lost, until it runs again; few at a time. */
  readonly #endedAt = new Map<JobTrack, Map<number, { ms: number; lost: boolean }>>();
  /**
   * Failed placement attempts by reason headline, over the whole run, per task, as the placement engine
   * reports them to the resource manager: a task still tried has its reason reported after its first
   * failed round, then again only when the reason changed and at most once per `reasonIntervalMs` (30 s by
   * default), so a task failing on for one reason counts once however many rounds it fails; a task handed
   * back at its placement deadline counts once more. A lower bound of the rounds failed, counting each
   * task's first failure and each change of why.
   */
  readonly placementFailures = new Map<string, number>();
  /**
   * Preemptions by kind, each counted as its run ends killed (its kill status passes, as `tasks.killed`
   * counts it), a waiting task's as the resource manager sends it back: running tasks evicted for a pool's
   * entitlement, waiting ones sent back for it, revocable ones killed as their host's slack shrank (the
   * agents' QoS controllers), running ones drained for host maintenance. `tasks.preempted` is the first three.
   */
  readonly preemptions = { running: 0, waiting: 0, slack: 0, maintenance: 0 };
  /**
   * Of the first three (`tasks.preempted`), those of each workload's tasks, by the workload that submitted
   * their job; `slackPreemptedByWorkload` the revocable ones.
   */
  readonly preemptedByWorkload = new Map<string, number>();
  readonly slackPreemptedByWorkload = new Map<string, number>();
  /** Tasks handed back unplaced at their placement deadline, by reason headline (also in `placementFailures`). */
  readonly placementHandedBack = new Map<string, number>();
  readonly #launchesByWorkload = new Map<string, WorkloadLaunches>();
  /** Launched task ids of jobs no workload submitted (`#launched`); few, as only tests make such jobs. */
  readonly #otherLaunches = new Set<string>();
  readonly #jobs = new Map<string, JobTrack>();
  /** The job `#mark` found last. */
  #lastJobId: string | undefined = undefined;
  #lastJob: JobTrack | undefined = undefined;
  /** Daemon jobs submitted: only then are enqueued tasks looked at. */
  #daemonJobs = 0;
  #intervalDelays: number[] = [];
  readonly #intervalFailures = new Map<string, number>();
  #intervalHandedBack = 0;
  #lastLaunched = 0;
  #poolSeriesCount = 0;
  #lastSampleMs = 0;
  /** The usage meter's areas at the last sample, and at the end of the warm-up once it came. */
  #lastAreas: UsageAreas = emptyAreas();
  #warmupAreas: UsageAreas | undefined;

  /** When the last sample was taken (0 before the first). */
  get lastSampleMs(): number {
    return this.#lastSampleMs;
  }

  constructor(
    private readonly hosts: HostClassIndex,
    readonly options: StatsOptions = { warmupMs: 0, sampleMs: 10_000 },
    private readonly preemptionOfRun: RunPreemption = () => undefined,
  ) {}

  /**
   * A job was submitted with `instances` instances; a daemon job (`daemon`) has none yet: its instances
   * count as the job manager creates them, one per matching host.
   */
  submitted(jobId: string, workload: string, instances: number, nowMs: number, daemon = false): void {
    this.jobsSubmitted++;
    this.tasks.submitted += instances;
    if (daemon) this.#daemonJobs++;
    if (jobId === this.#lastJobId) this.#lastJobId = this.#lastJob = undefined;
    let byClass = this.#launchesByWorkload.get(workload);
    if (!byClass) this.#launchesByWorkload.set(workload, byClass = { counts: new Uint32Array(4) });
    this.#jobs.set(jobId, {
      jobId,
      workload,
      byClass,
      submitMs: nowMs,
      daemon,
      expected: instances,
      flags: new Uint8Array(instances),
    });
    if (!this.queueDelaysMs.has(workload)) this.queueDelaysMs.set(workload, []);
    if (!this.admissionDelaysMs.has(workload)) this.admissionDelaysMs.set(workload, []);
  }

  /** An elastic job has asked for more instances: it now has `count`. */
  grew(jobId: string, count: number, nowMs: number): void {
    const j = this.#jobs.get(jobId);
    if (j && count > j.expected) {
      this.tasks.submitted += count - j.expected;
      grow(j, count, nowMs);
    }
  }

  /** Sees every message the transport carries: task statuses, placement failures, daemon instances. */
  observe(_to: Address, msg: Message, nowMs: number): void {
    if (msg.kind === "enqueue-gangs") {
      if (this.#daemonJobs) this.#daemonInstances(msg.gangs, nowMs);
      return;
    }
    if (msg.kind === "set-placements") {
      for (const f of msg.failed) {
        const why = headline(f.reason);
        this.#failedAttempts(why, 1);
        this.placementHandedBack.set(why, (this.placementHandedBack.get(why) ?? 0) + 1);
      }
      this.#intervalHandedBack += msg.failed.length;
      if (msg.pending) {
        for (const p of msg.pending) this.#failedAttempts(headline(p.reason), p.taskIds.length);
      }
      return;
    }
    if (msg.kind === "drop-tasks") {
      // The job manager drops only runs stopped before they launched: they end killed, with no status.
      for (const id of msg.taskIds) this.#dropped(id, nowMs);
      return;
    }
    if (msg.kind === "placements") {
      // The resource manager's changes to the job manager: READY is an instance's admission; PENDING for
      // its pool's entitlement, a waiting task preempted (sent back to its queue).
      for (const c of msg.changes) {
        if (c.state === "READY") this.#mark(c.taskId, ADMITTED, nowMs);
        else if (c.state === "PENDING" && c.reason === REVOKE) this.#preempted(c.taskId, "waiting");
      }
      return;
    }
    if (msg.kind !== "task-statuses") return;
    for (const s of msg.statuses) {
      switch (s.state) {
        case "TASK_STAGING":
          this.#launched(s.taskId, (s as Partial<SimTaskStatus>).hostRow, nowMs);
          break;
        case "TASK_RUNNING":
          // Health results and reconciliation repeat RUNNING; only a run's start carries no reason.
          if (s.reason === undefined) {
            if (this.#endedAt.size) this.#rerun(s.taskId, nowMs);
            this.#mark(s.taskId, RAN, nowMs);
          }
          break;
        case "TASK_FINISHED":
          this.tasks.succeeded++;
          break;
        case "TASK_FAILED":
        case "TASK_ERROR":
          this.tasks.failed++;
          break;
        case "TASK_KILLED": {
          this.tasks.killed++;
          // The agent's kill for slack says so; the job manager's evictions it alone knows of.
          const kind = s.reason === SLACK_PREEMPTED_REASON ? "slack" : this.preemptionOfRun(s.taskId);
          if (kind) this.#preempted(s.taskId, kind);
          this.#ended(s.taskId, nowMs, false);
          break;
        }
        case "TASK_LOST":
        case "TASK_DROPPED":
        case "TASK_GONE":
        case "TASK_UNREACHABLE":
          this.tasks.lost++;
          this.#ended(s.taskId, nowMs, true);
          break;
      }
    }
  }

  #preempted(taskId: string, kind: keyof SimStats["preemptions"]): void {
    this.preemptions[kind]++;
    if (kind === "maintenance") return;
    this.tasks.preempted++;
    const j = this.#instance(taskId) < 0 ? undefined : this.#lastJob;
    if (!j) return;
    this.preemptedByWorkload.set(j.workload, (this.preemptedByWorkload.get(j.workload) ?? 0) + 1);
    if (kind === "slack") {
      this.slackPreemptedByWorkload.set(j.workload, (this.slackPreemptedByWorkload.get(j.workload) ?? 0) + 1);
    }
  }

  #failedAttempts(why: string, tasks: number): void {
    this.#intervalFailures.set(why, (this.#intervalFailures.get(why) ?? 0) + tasks);
    this.placementFailures.set(why, (this.placementFailures.get(why) ?? 0) + tasks);
  }

  /**
   * Counts daemon instances as the job manager creates them: it enqueues each new one at once, so an
   * instance beyond those known is new. Those created with the job, in its first enqueue, were asked for at
   * its submission; those a later enqueue brings (for hosts that came) were asked for then, together.
   */
  #daemonInstances(gangs: Gang[], nowMs: number): void {
    // The highest instance of each daemon job in this message: one message's instances count as one lot.
    const highest = new Map<JobTrack, number>();
    for (const g of gangs) {
      for (const t of g.tasks) {
        if (t.taskType !== "DAEMON") continue;
        const j = this.#jobs.get(t.jobId);
        if (!j?.daemon || t.instanceId < j.expected) continue;
        highest.set(j, Math.max(highest.get(j) ?? 0, t.instanceId));
      }
    }
    for (const [j, top] of highest) {
      const count = top + 1;
      this.tasks.submitted += count - j.expected;
      if (j.expected === 0 && j.grownFrom === undefined) j.expected = count;
      else grow(j, count, nowMs);
    }
  }

  /** The instance a task id names, its job then in `#lastJob`; -1 for a task of no submitted job. */
  #instance(taskId: string): number {
    // Statuses come in runs of one job's tasks: a task of the last job found is parsed without a lookup.
    const i = this.#lastJobId === undefined ? -1 : instanceOf(taskId, this.#lastJobId);
    if (i >= 0) return i;
    const id = parseMesosTaskId(taskId);
    const j = id && this.#jobs.get(id.jobId);
    if (!j) return -1;
    this.#lastJobId = id!.jobId;
    this.#lastJob = j;
    return id!.instanceId;
  }

  /** A run was killed or lost: its instance's next run measures how long it waited to run again. */
  #ended(taskId: string, nowMs: number, lost: boolean): void {
    if (nowMs < this.options.warmupMs) return;
    const i = this.#instance(taskId), j = this.#lastJob;
    if (i < 0 || !j) return;
    let byInstance = this.#endedAt.get(j);
    if (!byInstance) this.#endedAt.set(j, byInstance = new Map());
    byInstance.set(i, { ms: nowMs, lost });
  }

  #rerun(taskId: string, nowMs: number): void {
    const i = this.#instance(taskId), j = this.#lastJob;
    const byInstance = i < 0 || !j ? undefined : this.#endedAt.get(j);
    const ended = byInstance?.get(i);
    if (ended === undefined) return;
    byInstance!.delete(i);
    if (!byInstance!.size) this.#endedAt.delete(j!);
    let list = this.rescheduleDelaysMs.get(j!.workload);
    if (!list) this.rescheduleDelaysMs.set(j!.workload, list = []);
    list.push(nowMs - ended.ms);
    this.rescheduleDelaysByEndMs[ended.lost ? "lost" : "killed"].push(nowMs - ended.ms);
  }

  /**
   * Counts a launch, on its host's class, and marks the instance launched; a task id already counted (a
   * status sent again) is not counted again.
   */
  #launched(taskId: string, hostRow: number | undefined, nowMs: number): void {
    const i = this.#instance(taskId), j = this.#lastJob;
    if (i < 0 || !j) {
      // A task of a job no workload submitted (a test's own API call): known by its id alone.
      if (this.#otherLaunches.has(taskId)) return;
      this.#otherLaunches.add(taskId);
      this.#countLaunch(nowMs);
      return;
    }
    // Run ids grow with each run of an instance: one no newer than the last counted is a repeat.
    const run = runIdOf(taskId) + 1;
    let runs = j.launchedRuns;
    if (!runs || i >= runs.length) {
      runs = new Uint32Array(Math.max(i + 1, j.expected, (runs?.length ?? 0) * 2));
      if (j.launchedRuns) runs.set(j.launchedRuns);
      j.launchedRuns = runs;
    }
    if (runs[i] >= run) return;
    runs[i] = run;
    this.#countLaunch(nowMs);
    if (hostRow === undefined || hostRow < 0) {
      // Only the cluster launches, and its statuses name the host's row; the host manager forwards them.
      throw new Error(
        `cannot count the launch of ${taskId} by host class: its status names no host row ` +
          `(got ${hostRow}); statuses must reach the statistics as the simulated cluster sent them`,
      );
    }
    const c = this.hosts.hostClassOf(hostRow);
    let counts = j.byClass.counts;
    if (c >= counts.length) {
      counts = new Uint32Array(Math.max(c + 1, counts.length * 2));
      counts.set(j.byClass.counts);
      j.byClass.counts = counts;
    }
    counts[c]++;
    this.#markInstance(j, i, LAUNCHED, nowMs);
  }

  #countLaunch(nowMs: number): void {
    this.tasks.launched++;
    if (nowMs >= this.options.warmupMs) this.launchedAfterWarmup++;
  }

  /** Host classes launches were seen on, in the cluster's order: the columns of `launchesByHostClass`. */
  get hostClasses(): string[] {
    return this.#launchedClasses().map((c) => this.hosts.hostClasses[c]);
  }

  #launchedClasses(): number[] {
    const seen: number[] = [];
    for (let c = 0; c < this.hosts.hostClasses.length; c++) {
      for (const { counts } of this.#launchesByWorkload.values()) {
        if (counts[c]) {
          seen.push(c);
          break;
        }
      }
    }
    return seen;
  }

  /**
   * Launches by workload and host class, for the workloads that submitted jobs: where each workload's
   * work ran (a task run again counts again).
   */
  launchesByHostClass(): Map<string, Map<string, number>> {
    const out = new Map<string, Map<string, number>>();
    const classes = this.#launchedClasses();
    for (const [workload, { counts }] of this.#launchesByWorkload) {
      out.set(workload, new Map(classes.map((c) => [this.hosts.hostClasses[c], counts[c] ?? 0])));
    }
    return out;
  }

  /** A run stopped before it launched: killed; an instance that never launched is no longer waiting. */
  #dropped(taskId: string, nowMs: number): void {
    this.tasks.killed++;
    const i = this.#instance(taskId), j = this.#lastJob;
    if (i < 0 || !j || (i < j.flags.length && j.flags[i] & LAUNCHED)) return;
    this.#markInstance(j, i, STOPPED, nowMs);
  }

  /** Records an instance's first launch, first run (its queue delay) or first admission (its admission delay). */
  #mark(taskId: string, bit: number, nowMs: number): void {
    const i = this.#instance(taskId), j = this.#lastJob;
    if (i < 0 || !j) return;
    this.#markInstance(j, i, bit, nowMs);
  }

  #markInstance(j: JobTrack, i: number, bit: number, nowMs: number): void {
    if (i >= j.flags.length) {
      const grown = new Uint8Array(Math.max(i + 1, j.flags.length * 2, 8));
      grown.set(j.flags);
      j.flags = grown;
    }
    if (i >= j.expected) {
      // Every instance is known before it launches (a daemon's once enqueued); should one not be, it was
      // asked for by its launch at the latest.
      this.tasks.submitted += i + 1 - j.expected;
      grow(j, i + 1, nowMs);
    }
    if (j.flags[i] & bit) return;
    j.flags[i] |= bit;
    if (bit === LAUNCHED || bit === STOPPED) return;
    const asked = requestedMs(j, i);
    const delay = nowMs - asked;
    if (bit === ADMITTED) {
      if (asked >= this.options.warmupMs) this.admissionDelaysMs.get(j.workload)!.push(delay);
      return;
    }
    this.#intervalDelays.push(delay);
    if (asked >= this.options.warmupMs) this.queueDelaysMs.get(j.workload)!.push(delay);
  }

  /**
   * Instances of accepted jobs that had not run by `endMs`, by workload: how long each had waited by
   * then, for instances asked for after the warm-up. A queue delay of at least that much, which the
   * report counts in its percentiles, so a cluster too small to start the work does not look fast.
   * Instances stopped before they launched are not waiting: they are to run no more.
   */
  waitingMs(accepted: (jobId: string) => boolean, endMs: number, bit = RAN): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const [jobId, j] of this.#jobs) {
      if (!accepted(jobId)) continue;
      for (let i = 0; i < j.expected; i++) {
        if (i < j.flags.length && j.flags[i] & (bit | STOPPED)) continue;
        const asked = requestedMs(j, i);
        if (asked < this.options.warmupMs) continue;
        let list = out.get(j.workload);
        if (!list) out.set(j.workload, list = []);
        list.push(endMs - asked);
      }
    }
    return out;
  }

  /** Instances of accepted jobs not admitted by `endMs`, as `waitingMs` counts those that had not run. */
  admissionWaitingMs(accepted: (jobId: string) => boolean, endMs: number): Map<string, number[]> {
    return this.waitingMs(accepted, endMs, ADMITTED);
  }

  /**
   * Instances whose last run was killed or lost after the warm-up and that had not run again by `endMs`,
   * although they are still meant to (`stillToRun`: not an instance or job the user stopped, nor one of a
   * job that ended): how long each had waited by then, by workload and by how its run ended. A delay of at
   * least that much, which the report counts in its percentiles, so work that never comes back does not
   * drop out of them.
   */
  rescheduleWaitingMs(
    stillToRun: (jobId: string, instance: number) => boolean,
    endMs: number,
  ): { byWorkload: Map<string, number[]>; killed: number[]; lost: number[] } {
    const out = { byWorkload: new Map<string, number[]>(), killed: [] as number[], lost: [] as number[] };
    for (const [j, byInstance] of this.#endedAt) {
      for (const [i, ended] of byInstance) {
        if (!stillToRun(j.jobId, i)) continue;
        let list = out.byWorkload.get(j.workload);
        if (!list) out.byWorkload.set(j.workload, list = []);
        list.push(endMs - ended.ms);
        out[ended.lost ? "lost" : "killed"].push(endMs - ended.ms);
      }
    }
    return out;
  }

  /** Instances of the jobs `counted` takes that never launched, nor were stopped before they could. */
  unplaced(counted: (jobId: string) => boolean): number {
    let n = 0;
    for (const [jobId, j] of this.#jobs) {
      if (!counted(jobId)) continue;
      for (let i = 0; i < j.expected; i++) if (!(j.flags[i] & (LAUNCHED | STOPPED))) n++;
    }
    return n;
  }

  /** Instances of a submitted job (0 for a job no workload submitted). */
  instancesOf(jobId: string): number {
    return this.#jobs.get(jobId)?.expected ?? 0;
  }

  /** The warm-up ended: averages after it start from the meter's areas now. */
  markWarmup(usage: UsageMeter, nowMs: number): void {
    this.#warmupAreas = usage.areas(nowMs);
  }

  /**
   * Exact time-averages of what hosts hold from the end of the warm-up to `nowMs` (all zero when the run
   * did not get past it).
   */
  usageAfterWarmup(usage: UsageMeter, nowMs: number): UsageAverages {
    const from = this.options.warmupMs > 0 ? this.#warmupAreas : emptyAreas();
    if (!from || nowMs <= from.atMs) return averagesBetween(emptyAreas(nowMs), emptyAreas(nowMs));
    return averagesBetween(from, usage.areas(nowMs));
  }

  sample(nowMs: number, sim: Simulation): void {
    const table = sim.hostmgr.registry.table;
    let up = 0, slack = 0, maintenance = 0;
    for (const h of table.entries) {
      if (h.lost) continue;
      if (h.state !== "HOST_STATE_UP") maintenance++;
      // DOWN for maintenance, its machine is down: no capacity, as the usage meter counts it.
      if (h.state === "HOST_STATE_DOWN") continue;
      up++;
      slack += table.slackCpu[h.index];
    }
    // What hosts held over the interval, exactly: short tasks between samples count for their time.
    const areas = sim.cluster.usage.areas(nowMs);
    const held = averagesBetween(this.#lastAreas, areas);
    this.#lastAreas = areas;
    let queued = 0;
    for (const pool of sim.resmgr.tree.leaves()) queued += pool.queuedTasks;
    const s = this.series;
    const n = s.t.length;
    s.t.push(nowMs / 1000);
    // No host (or no GPU) up in the interval: no fraction to show (a gap), not an idle 0.
    const util = (k: number) => held.ratio[k] === null ? null : round4(held.ratio[k]);
    s.cpuUtil.push(util(CPU));
    s.memUtil.push(util(MEM));
    s.diskUtil.push(util(DISK));
    s.gpuUtil.push(util(GPU));
    s.runningTasks.push(sim.cluster.runningTasks);
    s.queuedTasks.push(queued);
    const placing = waitingForPlacement(sim.resmgr.tasks);
    s.placingTasks.push(placing.tasks);
    const dt = (nowMs - this.#lastSampleMs) / 1000;
    s.launchesPerSec.push(dt > 0 ? round4((this.tasks.launched - this.#lastLaunched) / dt) : 0);
    s.preemptedTasks.push(this.tasks.preempted);
    // The counts the statuses kept, read at the sample: no work per task.
    s.lostTasks.push(this.tasks.lost);
    s.killedTasks.push(this.tasks.killed);
    s.failedTasks.push(this.tasks.failed);
    const delays = this.#intervalDelays.sort((a, b) => a - b);
    // No task started: no delay to show (a gap), not a delay of 0 while tasks may wait.
    const delay = (p: number) => {
      const ms = percentile(delays, p);
      return ms === null ? null : ms / 1000;
    };
    s.queueDelayP50.push(delay(50));
    s.queueDelayP90.push(delay(90));
    s.queueDelayP99.push(delay(99));
    this.#intervalDelays = [];
    const shares = poolShares(sim.resmgr.tree, sim.resmgr.capacity, placing);
    s.fairness.push(jain(shares));
    s.fairnessHeld.push(jain(shares, "held"));
    s.slackCpu.push(slack / 1000);
    s.revocableCpu.push(round4(held.revocableCpu / 1000));
    s.hostsUp.push(up);
    s.hostsInMaintenance.push(maintenance);
    this.#sampleFailures(n);
    this.#lastLaunched = this.tasks.launched;
    this.#lastSampleMs = nowMs;
    const usage = sim.cluster.usage;
    this.#samplePools(sim.resmgr.tree.root, s.t.length, placing, (path) => held.pools[usage.poolOf(path)]);
  }

  /** Appends this interval's failures per reason; a reason first seen now gets zeros before. */
  #sampleFailures(n: number): void {
    const byReason = this.series.placementFailures;
    for (const [why, count] of this.#intervalFailures) {
      const key = why in byReason || Object.keys(byReason).length < MAX_FAILURE_REASONS ? why : "other";
      byReason[key] ??= new Array<number>(n).fill(0);
      const list = byReason[key];
      if (list.length === n) list.push(count);
      else list[n] += count;
    }
    for (const list of Object.values(byReason)) if (list.length === n) list.push(0);
    this.#intervalFailures.clear();
    this.series.placementHandedBack.push(this.#intervalHandedBack);
    this.#intervalHandedBack = 0;
  }

  /**
   * Appends every tracked pool's entitlements, allocations and demand at the sample time, and what its
   * tasks held over the interval (`heldOf` a pool's own, by path); returns the subtree's sums of both.
   */
  #samplePools(
    node: RespoolNode,
    samples: number,
    waiting: WaitingForPlacement,
    heldOf: (path: string) => number[] | undefined,
  ): { sum: PoolTotals; held: number[] } {
    // Series are made parents first, so past the cap it is deep pools that go without.
    const p = node.isRoot ? undefined : this.pools[node.path] ?? this.#newPoolSeries(node.path, samples);
    const sum = leafTotals(node, waiting);
    const held = [...(heldOf(node.path) ?? [0, 0, 0, 0])];
    for (const child of node.children) {
      const c = this.#samplePools(child, samples, waiting, heldOf);
      addTotals(sum, c.sum);
      for (let k = 0; k < held.length; k++) held[k] += c.held[k];
    }
    if (!p) return { sum, held };
    const v = { ...poolValues(node, sum), ...heldValues(held) };
    for (const k of POOL_SERIES_KEYS) p[k].push(v[k]);
    return { sum, held };
  }

  #newPoolSeries(path: string, samples: number): PoolSeries | undefined {
    if (this.#poolSeriesCount >= MAX_POOL_SERIES) return undefined;
    this.#poolSeriesCount++;
    const p = {} as PoolSeries;
    for (const k of POOL_SERIES_KEYS) p[k] = new Array<number>(samples - 1).fill(0);
    return this.pools[path] = p;
  }
}

/** A pool's figures of the moment, in the report's units (cores, MB), from its subtree's sums. */
export function poolValues(node: RespoolNode, t: PoolTotals): Record<keyof PoolSeries, number> {
  return {
    entitlementCpu: round4(node.nonSlackEntitlement.cpu),
    allocationCpu: t.allocCpuMilli / 1000,
    demandCpu: t.demandCpuMilli / 1000,
    entitlementMemMb: round4(node.nonSlackEntitlement.memory),
    allocationMemMb: t.allocMemMb,
    demandMemMb: t.demandMemMb,
    heldCpu: t.heldCpuMilli / 1000,
    heldMemMb: t.heldMemMb,
    slackEntitlementCpu: round4(node.slackEntitlement.cpu),
    slackAllocationCpu: t.slackAllocCpuMilli / 1000,
    slackHeldCpu: t.slackHeldCpuMilli / 1000,
    slackDemandCpu: t.slackDemandCpuMilli / 1000,
    slackEntitlementMemMb: round4(node.slackEntitlement.memory),
    slackAllocationMemMb: t.slackAllocMemMb,
    slackHeldMemMb: t.slackHeldMemMb,
    slackDemandMemMb: t.slackDemandMemMb,
    entitlementGpu: round4(node.nonSlackEntitlement.gpu),
    allocationGpu: t.allocGpuMilli / 1000,
    demandGpu: t.demandGpuMilli / 1000,
  };
}

/**
 * What a pool's tasks held on hosts (the usage meter's pool quantities, in milli-cores and MB), in the
 * report's units.
 */
export function heldValues(
  held: ArrayLike<number>,
): { heldCpu: number; heldMemMb: number; slackHeldCpu: number; slackHeldMemMb: number } {
  return {
    heldCpu: round4(held[HELD_CPU] / 1000),
    heldMemMb: round4(held[HELD_MEM]),
    slackHeldCpu: round4(held[SLACK_HELD_CPU] / 1000),
    slackHeldMemMb: round4(held[SLACK_HELD_MEM]),
  };
}

/** What a leaf pool's admitted tasks still waiting for a host hold of its allocation. */
interface Waiting {
  cpuMilli: number;
  memMb: number;
  gpuMilli: number;
  slackCpuMilli: number;
  slackMemMb: number;
  slackGpuMilli: number;
}

/** Admitted tasks waiting for a host, over the cluster and by leaf pool (pools with none are not listed). */
export interface WaitingForPlacement {
  tasks: number;
  byPool: Map<RespoolNode, Waiting>;
}

/**
 * Admitted tasks waiting for a host (READY, PLACING, PLACED), counted over the resource manager's rows: a
 * pass over a byte column per sample, with nothing to keep up per message. A freed row has no pool. Such
 * a task is in its pool's allocation (admitted, not yet terminal): what hosts hold of the allocation is
 * the rest, so only the few waiting rows are summed, not every running one.
 */
export function waitingForPlacement(t: TaskTable): WaitingForPlacement {
  const { state, pool, flags, resources } = t;
  const byPool = new Map<RespoolNode, Waiting>();
  let n = 0;
  for (let row = 0; row < pool.length; row++) {
    const s = state[row];
    const p = pool[row];
    if ((s !== READY && s !== PLACING && s !== PLACED) || p === null) continue;
    n++;
    // Not in the allocation, it is not taken from it (admission and release keep the two together).
    if (!p.active.has(t, row)) continue;
    let w = byPool.get(p);
    if (!w) {
      byPool.set(
        p,
        w = { cpuMilli: 0, memMb: 0, gpuMilli: 0, slackCpuMilli: 0, slackMemMb: 0, slackGpuMilli: 0 },
      );
    }
    const r = resources[row]!;
    if (flags[row] & REVOCABLE) {
      w.slackCpuMilli += r.cpuMilli, w.slackMemMb += r.memMb, w.slackGpuMilli += r.gpuMilli;
    } else w.cpuMilli += r.cpuMilli, w.memMb += r.memMb, w.gpuMilli += r.gpuMilli;
  }
  return { tasks: n, byPool };
}

/**
 * The instance id of a Mesos task id `<jobId>-<instanceId>-<runId>` of the given job, or -1 when it is
 * not one of that job's (what `parseMesosTaskId` would say, without making its object and job id string).
 */
function instanceOf(taskId: string, jobId: string): number {
  const at = jobId.length;
  if (taskId.charCodeAt(at) !== 45 || !taskId.startsWith(jobId)) return -1;
  let instance = 0, digits = 0, i = at + 1;
  for (; i < taskId.length; i++, digits++) {
    const c = taskId.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    instance = instance * 10 + c;
  }
  if (digits === 0 || taskId.charCodeAt(i) !== 45 || i + 1 === taskId.length) return -1;
  for (i++; i < taskId.length; i++) {
    const c = taskId.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
  }
  return instance;
}

/** The run id of a Mesos task id `<jobId>-<instanceId>-<runId>` (its digits after the last '-'). */
function runIdOf(taskId: string): number {
  let run = 0, scale = 1;
  for (let i = taskId.length - 1; i >= 0; i--, scale *= 10) {
    const c = taskId.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    run += c * scale;
  }
  return run;
}

/** A host a reason names at its start or after a "; " ("host h-1 was reserved for the task but …"). */
const NAMED_HOST = /(^|; )host \S+ /g;

/** The headline of the placement engine's failures for which no stage is a shortage of room. */
const NO_HOST_FITS = "no host fits";
/** What follows "no host fits: ": the stage that rejected the most hosts, then " on N hosts" (or no hosts). */
const TOP_STAGE = /^(.*?) on [\d,]+ hosts(?=, |; |$)/;

/**
 * "no host with 4 free GPUs: insufficient gpu on ..." → "no host with 4 free GPUs". Reasons are counted by
 * their headline, so a host a reason names is left out of it ("host <host> was reserved for the task but
 * did not free up in time; …"): one count per kind of failure rather than per host. The task's own reason
 * keeps the name. A reason that is no shortage of room says only "no host fits", and then which stage
 * rejected the most hosts: that stage is kept, its count of hosts left out ("no host fits: GPU host kept for
 * GPU work on 48 hosts, …" → "no host fits: GPU host kept for GPU work", "no host fits: constraint
 * host_pool=batch failed"), so a planner reads what kept the work out and the counts still group.
 */
export function headline(reason: string): string {
  // A task pinned to one host (a daemon's instance, a volume's host) says why that host would not take it,
  // the host's name left out so the counts group: "required host <host>: host in maintenance (…)".
  const pinned = /^required host \S+?(:|\s)/.exec(reason);
  if (pinned) {
    const rest = reason.slice(pinned[0].length).trim();
    if (pinned[1] !== ":") return `required host <host> ${rest}`;
    // Its own reason ("host in maintenance (…)", "insufficient cpu") as it is; a search's, by its headline.
    return `required host <host>: ${rest.startsWith("no host") ? headline(rest) : rest}`;
  }
  // A gang's failure wraps the reason its tasks could not be placed: that reason is the headline's point.
  const gang = /^gang of \d+ could not be placed whole: /.exec(reason);
  if (gang) return `gang not placed whole: ${headline(reason.slice(gang[0].length))}`;
  const at = reason.indexOf(":");
  let head = at < 0 ? reason : reason.slice(0, at);
  if (at >= 0 && head.endsWith(NO_HOST_FITS)) {
    const rest = reason.slice(at + 2);
    // Only a count of hosts is cut off: a constraint's own text may hold ", " or "; ".
    const stage = TOP_STAGE.exec(rest)?.[1] ?? rest.split("; ")[0];
    if (stage) head += `: ${stage}`;
  }
  return head.startsWith("host ") || head.includes("; host ")
    ? head.replace(NAMED_HOST, "$1host <host> ")
    : head;
}

/**
 * Each leaf pool's share for `jain` (`core/resmgr/fairness.ts`), with what hosts hold of its allocation
 * when `waiting` says what still waits for placement.
 */
export function poolShares(
  tree: RespoolTree,
  capacity: ClusterCapacity,
  waiting?: WaitingForPlacement,
): PoolShare[] {
  const shares = corePoolShares(tree, capacity);
  if (!waiting) return shares;
  let i = 0;
  for (const p of tree.leaves()) {
    const t = leafTotals(p, waiting);
    Object.assign(shares[i++], {
      heldCpu: t.heldCpuMilli / 1000,
      slackHeldCpu: t.slackHeldCpuMilli / 1000,
      heldGpu: t.heldGpuMilli / 1000,
      slackHeldGpu: t.slackHeldGpuMilli / 1000,
    });
  }
  return shares;
}

/**
 * The `p`th percentile (nearest rank) of ascending values; null for no values: nothing was measured, which
 * a 0 would report as the best possible delay.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

const TOTALS = [
  "allocCpuMilli",
  "allocMemMb",
  "heldCpuMilli",
  "heldMemMb",
  "demandCpuMilli",
  "demandMemMb",
  "slackAllocCpuMilli",
  "slackAllocMemMb",
  "slackHeldCpuMilli",
  "slackHeldMemMb",
  "slackDemandCpuMilli",
  "slackDemandMemMb",
  "allocGpuMilli",
  "heldGpuMilli",
  "demandGpuMilli",
  "slackAllocGpuMilli",
  "slackHeldGpuMilli",
] as const;

/**
 * A pool's allocation, the part of it hosts hold, and its queued demand, summed over its leaves: regular
 * (non-revocable) tasks, and revocable ones under `slack*`; GPUs in milli-GPUs.
 */
export type PoolTotals = Record<typeof TOTALS[number], number>;

export function poolTotals(node: RespoolNode, waiting: WaitingForPlacement): PoolTotals {
  const sum = leafTotals(node, waiting);
  for (const child of node.children) addTotals(sum, poolTotals(child, waiting));
  return sum;
}

function leafTotals(node: RespoolNode, waiting: WaitingForPlacement): PoolTotals {
  const t = Object.fromEntries(TOTALS.map((k) => [k, 0])) as PoolTotals;
  if (!node.isLeaf) return t;
  const { nonSlack, slack } = node.allocation;
  const w = waiting.byPool.get(node);
  t.allocCpuMilli = nonSlack.cpuMilli;
  t.allocMemMb = nonSlack.memMb;
  t.heldCpuMilli = nonSlack.cpuMilli - (w?.cpuMilli ?? 0);
  t.heldMemMb = nonSlack.memMb - (w?.memMb ?? 0);
  t.demandCpuMilli = node.demand.cpuMilli;
  t.demandMemMb = node.demand.memMb;
  t.slackAllocCpuMilli = slack.cpuMilli;
  t.slackAllocMemMb = slack.memMb;
  t.slackHeldCpuMilli = slack.cpuMilli - (w?.slackCpuMilli ?? 0);
  t.slackHeldMemMb = slack.memMb - (w?.slackMemMb ?? 0);
  t.slackDemandCpuMilli = node.slackDemand.cpuMilli;
  t.slackDemandMemMb = node.slackDemand.memMb;
  t.allocGpuMilli = nonSlack.gpuMilli;
  t.heldGpuMilli = nonSlack.gpuMilli - (w?.gpuMilli ?? 0);
  t.demandGpuMilli = node.demand.gpuMilli;
  t.slackAllocGpuMilli = slack.gpuMilli;
  t.slackHeldGpuMilli = slack.gpuMilli - (w?.slackGpuMilli ?? 0);
  return t;
}

function addTotals(into: PoolTotals, t: PoolTotals): void {
  for (const k of TOTALS) into[k] += t[k];
}

export function round4(x: number): number {
  return Math.round(x * 10000) / 10000;
}
