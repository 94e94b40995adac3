/** Builds a simulation's report: the JSON document planners open, compare and search over. */
import type { Simulation } from "../sim/runner.ts";
import type { Scenario } from "../sim/scenario.ts";
import { explainDrain } from "../sim/drain_explain.ts";
import type { EventRecord } from "../sim/events.ts";
import type { StuckJob } from "../sim/stall.ts";
import type { RespoolNode } from "../core/resmgr/respool_node.ts";
import { isTerminalJobState, isTerminalTaskState } from "../core/model/states.ts";
import { mesosTaskId } from "../core/model/records.ts";
import { CPU, DISK, GPU, MEM, REVOCABLE_CPU, type UsageAverages } from "../sim/usage_meter.ts";
import {
  heldValues,
  percentile,
  type PoolSeries,
  poolTotals,
  poolValues,
  preemptionOf,
  round4,
  type Series,
  type TaskCounts,
  waitingForPlacement,
} from "../sim/stats.ts";

export { percentile };

/**
 * Percentiles of delays in seconds, and how many delays there were. With none (`count` 0: no instance asked
 * for after the warm-up, no run ended after it) each percentile is null, not 0: nothing was measured, and a
 * 0 would read as the best delay there is (a target such as `p99<=10` met).
 */
export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  count: number;
}

export interface QueueDelays extends Percentiles {
  /**
   * Instances still waiting at the end of the run (to run at all, or to run again): each counts in the
   * percentiles with its wait so far, a lower bound of its delay.
   */
  waiting: number;
}

/** Reschedule delays of the whole run, also split by how the earlier run ended. */
export interface RescheduleDelays extends QueueDelays {
  afterKill: QueueDelays;
  afterLoss: QueueDelays;
}

export interface Report {
  scenario: string;
  description: string;
  seed: number;
  /**
   * The cluster's size at the end: the scenario's hosts and those events added, less those removed for good
   * (`removeHosts`). A host down for a failure, a lost rack or maintenance still counts, as it is still the
   * cluster's; `series.hostsUp` says how many were up.
   */
  hosts: number;
  simulatedSeconds: number;
  /** Statistics below leave out the run's first `warmupSeconds` (series and task counts do not). */
  warmupSeconds: number;
  /**
   * The wall-clock seconds the run took, loading the scenario and the files it names (a trace's parse)
   * included. Measures the machine: excluded from determinism comparisons, like `peakRssBytes`.
   */
  wallSeconds: number;
  peakRssBytes: number;
  endedEarly: boolean;
  /** Over the whole run, warm-up included (`launchesPerSec` and the delays leave it out). */
  tasks: TaskCounts;
  /**
   * Jobs: `unanswered` were submitted so close to the end that their create had no answer yet; `stuck` were
   * accepted but can never start (an open-ended run stops once only such jobs are left; a run with a
   * durationSec counts those its pools could never admit: see `stuckJobs`).
   */
  jobs: {
    submitted: number;
    accepted: number;
    rejected: number;
    unanswered: number;
    stuck: number;
    byState: Record<string, number>;
  };
  /**
   * Task launches per simulated second after the warm-up; null when the run measured nothing (it ended
   * before its warm-up did): as `utilization`, `fairness`, `fairnessHeld` and the pools' averages then.
   */
  launchesPerSec: number | null;
  /**
   * From asking for each instance (its job's submission, or the elastic growth or new host that added it)
   * to its first RUNNING, for instances asked for after the warm-up. Instances still waiting at the end
   * count with their wait so far (`waiting` says how many).
   */
  queueDelaySeconds: QueueDelays;
  /**
   * The part of the queue delay spent waiting for admission: from asking for each instance to its pool
   * first admitting it (READY), for instances asked for after the warm-up; those not admitted by the end
   * count with their wait so far. As the queue delay counts an instance's first run, this counts its first
   * admission: a task preempted while waiting and admitted again has only its first wait counted here.
   * A pool's entitlement is capped by its limit and by its share of what the cluster has, so this is a wait
   * for the pool's limit or for a full cluster alike: close to `queueDelaySeconds`, the work waits to be
   * admitted; far below it, admitted work waits for placement or to start. The pool's allocation against its
   * limit tells the two apart: at the limit, the limit holds it back; below it, with `cpuUtil` near 1, the
   * cluster does.
   */
  admissionDelaySeconds: QueueDelays;
  /**
   * From a run killed (host maintenance, preemption, an update) or lost with its host to the same
   * instance's next run, for runs ended after the warm-up: how long moved work waited to run again.
   * Instances still waiting to run again at the end count with their wait so far (`waiting` says how
   * many); instances that are not to run again (stopped by the user, of a job that ended) do not count.
   */
  rescheduleDelaySeconds: RescheduleDelays;
  /**
   * The fraction of each resource of the hosts up that tasks held after the warm-up: resource-seconds held
   * (from each task's launch until it ends) over resource-seconds of the hosts up, each integrated exactly
   * over time, so a task shorter than the sample interval counts for the time it ran, and while hosts come
   * and go an hour of a larger cluster weighs more than an hour of a smaller one (it is not the mean of the
   * moment's fractions). With the pools' `avgHeldCpu` (what they held, averaged over the same time) it
   * agrees: their sum over the average cpu of the hosts up. `cpu` counts every task's cpu, revocable ones'
   * included, so it may pass 1 when revocable tasks run on slack (cpu allocated to other tasks but unused);
   * `revocableCpu` is their part of it. The hosts up are those whose agents are registered and that are not
   * DOWN for maintenance (`series.hostsUp`): a host still draining runs tasks and counts, one drained (its
   * machine down) does not until its maintenance completes. Each is null when the run measured nothing (it
   * ended before its warm-up did) or nothing of it was up (`gpu` of a cluster without GPUs; every one when
   * no host was up after the warm-up), not 0.
   */
  utilization: {
    cpu: number | null;
    memory: number | null;
    disk: number | null;
    gpu: number | null;
    revocableCpu: number | null;
  };
  /**
   * Time-average of Jain's fairness index over leaf pools that want cpu (allocated or queued): each pool's
   * cpu allocation over min(what it wants, its fair share), the fair share being the entitlement Peloton's
   * calculator gives it for the demand of the moment (revocable cpu against its slack entitlement, as
   * Peloton admits it). 1 is perfectly fair; a pool that wants cpu and holds none counts 0 (beside one pool
   * holding its share, 0.5), while pools that all hold none read 1, equally starved. Pools whose fair share is 0 are left out. Allocation is what the resource
   * manager admitted (Peloton's view), so a pool whose admitted tasks still wait for hosts counts them.
   * Null when the run measured nothing (it ended before its warm-up did).
   */
  fairness: number | null;
  /**
   * The same index over what each pool's tasks hold on hosts (launched or running; `PoolSummary.heldCpu`)
   * rather than what was admitted: a pool admitted its share while its tasks wait for others' to be
   * preempted counts only what runs. Time-average after the warm-up, as `fairness` (null as it is).
   */
  fairnessHeld: number | null;
  /** Each pool at the end (non-leaf pools sum their leaves), with time-averages after the warm-up. */
  pools: Record<string, PoolSummary>;
  workloads: Record<string, WorkloadSummary>;
  /**
   * Task launches by workload and host class, one per task id (a task run again counts again, a repeated
   * status does not): where each workload's work ran, e.g. whether CPU-only work stayed off the GPU hosts.
   * Every workload and every host class of the scenario is listed, with 0 where none ran; classes events
   * added follow once work ran on them.
   */
  launchesByHostClass: Record<string, Record<string, number>>;
  /**
   * Running tasks killed for entitlement, waiting ones sent back, revocable ones whose slack went, drained
   * ones. Each counts as its run ends killed, when its kill status comes back (so it counts in
   * `tasks.killed` too), a waiting one as it is sent back. `tasks.preempted` is the first three; the leaf
   * pools' `preempted` add up to it, and `series.preemptedTasks` ends at it. `beingKilled`: runs a preemption
   * or a drain was killing as the run ended, their kill status not back yet, so counted in none of these
   * nor in `tasks.killed` (a drain's are also in its event's `drainPending`).
   */
  preemptions: {
    total: number;
    running: number;
    waiting: number;
    slack: number;
    maintenance: number;
    beingKilled: { total: number; running: number; slack: number; maintenance: number };
  };
  /**
   * Failed placement attempts of tasks (a task may fail many times before it is placed), by reason, as
   * the placement engine reports them: a task still tried has its reason reported after its first failed
   * round, then again only when the reason changed, at most once per 30 s (the engine's
   * `reasonIntervalMs`); a task handed back at its placement deadline counts once more. So a task failing
   * round after round for one reason counts when it first fails and when it is handed back, not per round.
   * `handedBack`: of these, tasks handed back unplaced at their placement deadline (the resource
   * manager queues them again); reports made before it existed counted only these, as `total`.
   */
  placementFailures: {
    total: number;
    byReason: Record<string, number>;
    handedBack?: { total: number; byReason: Record<string, number> };
  };
  /**
   * Timed events as they happened; a drain's `drainSeconds` is how long its hosts took to drain, from its
   * start until the last of them had no task left (null: not by the end of the run, and then
   * `drainPending` says what still holds its hosts' tasks).
   */
  events: EventRecord[];
  rejectedJobs: { jobId: string; error: string }[];
  /**
   * The first stuck jobs (`jobs.stuck` counts them all), each with why no host or pool takes it: those an
   * open-ended run stopped waiting for, or those a run with a durationSec ended with that their pool could
   * never admit (a gang over its limit or the cluster) or that queued behind such work.
   */
  stuckJobs: StuckJob[];
  series: Series;
  /**
   * Entitlement, allocation, held and demand per pool over time, regular and slack, aligned with `series.t`
   * (see `PoolSummary`).
   */
  poolSeries: Record<string, PoolSeries>;
}

/**
 * A pool at the end of the run, split as Peloton's `createRespoolUsage` splits its usage. Regular
 * (non-revocable) tasks: `allocationCpu` against `entitlementCpu`, the non-slack entitlement (what they are
 * admitted against and preempted above). Revocable tasks: `slackAllocationCpu` against
 * `slackEntitlementCpu`. As Peloton counts them, allocation holds the pool's admitted tasks, on hosts or
 * still waiting for placement (`series.placingTasks` counts those over the cluster); `heldCpu` is the part
 * hosts hold (tasks launched or running), so allocation less held is what waits for a host; demand is what
 * waits in its pending queue for admission.
 */
export interface PoolSummary {
  allocationCpu: number;
  demandCpu: number;
  entitlementCpu: number;
  allocationMemMb: number;
  demandMemMb: number;
  entitlementMemMb: number;
  heldCpu: number;
  heldMemMb: number;
  slackAllocationCpu: number;
  slackHeldCpu: number;
  slackDemandCpu: number;
  slackEntitlementCpu: number;
  slackAllocationMemMb: number;
  slackHeldMemMb: number;
  slackDemandMemMb: number;
  slackEntitlementMemMb: number;
  /** Regular tasks' GPUs, as their cpu. */
  entitlementGpu: number;
  allocationGpu: number;
  demandGpu: number;
  /**
   * Tasks preempted from the pool (its leaves), by the workloads that submitted them: running ones killed
   * and waiting ones sent back for entitlement, and revocable ones killed as their host's slack shrank
   * (`slackPreempted` of them), counted as `preemptions` counts them. Drains for host maintenance are not
   * counted here (`preemptions.maintenance`). The leaf pools add up to `tasks.preempted`.
   */
  preempted: number;
  slackPreempted: number;
  /**
   * Time-averages after the warm-up (pools with a series). `avgHeldCpu` and `avgSlackHeldCpu` are exact,
   * integrated over every launch and end; the others weigh each sample by the part of the interval it
   * ends that lies after the warm-up. Null when the run measured nothing (it ended before its warm-up did).
   */
  avgAllocationCpu?: number | null;
  avgEntitlementCpu?: number | null;
  avgDemandCpu?: number | null;
  avgHeldCpu?: number | null;
  avgSlackHeldCpu?: number | null;
  avgSlackAllocationCpu?: number | null;
  avgSlackEntitlementCpu?: number | null;
  /** Queue delay of the workloads submitting to this pool (and its children). */
  queueDelaySeconds?: QueueDelays;
  /** Its part spent waiting for admission. */
  admissionDelaySeconds?: QueueDelays;
}

export interface WorkloadSummary {
  type: string;
  respool: string;
  jobs: number;
  queueDelaySeconds: QueueDelays;
  admissionDelaySeconds: QueueDelays;
  rescheduleDelaySeconds: QueueDelays;
}

/** Fields that measure the machine rather than the simulation. */
export const MACHINE_FIELDS = ["wallSeconds", "peakRssBytes"] as const;

/** Percentiles of delays in ms, reported in seconds. */
function percentiles(ms: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(ms).sort();
  const at = (p: number) => {
    const v = percentile(sorted, p);
    return v === null ? null : round4(v / 1000);
  };
  return { p50: at(50), p90: at(90), p99: at(99), max: at(100), count: sorted.length };
}

/**
 * Time-average after `fromSec` of samples each standing for the interval it ends (from the sample before,
 * or from 0), weighted by the part of that interval after `fromSec`: a sample at `fromSec` or before counts
 * nothing, the first one after it only for its interval's time past `fromSec`, and a run's last interval,
 * shorter when it ends between sample times, for its length. With every interval the same length and the
 * warm-up on a sample time this is the plain mean of the samples after it. Null when no time lies after
 * `fromSec` (the run ended before its warm-up did): nothing was measured, which a 0 would report as a value.
 */
export function meanFrom(t: number[], xs: number[], fromSec: number): number | null {
  let sum = 0, weight = 0;
  for (let i = 0; i < xs.length; i++) {
    const dt = t[i] - Math.max(i ? t[i - 1] : 0, fromSec);
    if (dt <= 0) continue;
    sum += xs[i] * dt;
    weight += dt;
  }
  return weight > 0 ? round4(sum / weight) : null;
}

export function buildReport(
  scenario: Scenario,
  sim: Simulation,
  seed: number,
  machine: { wallSeconds: number; peakRssBytes: number },
): Report {
  const stats = sim.stats;
  const warmup = scenario.settings.warmupSec;
  // A drain not over: what still holds its hosts' tasks, as the run ends.
  const workloadOf = new Map(sim.submissions.map((x) => [x.jobId, x.workload]));
  for (const { record, hosts } of sim.drains.pending()) {
    record.drainPending = explainDrain(hosts, sim.cluster, sim.jobmgr, (id) => workloadOf.get(id));
  }
  const s = stats.series;
  const byState: Record<string, number> = {};
  // From the store: the job manager may have forgotten finished jobs.
  for (const job of sim.store.jobRecords()) {
    byState[job.runtime.state] = (byState[job.runtime.state] ?? 0) + 1;
  }
  const accepted = new Set(sim.submissions.filter((x) => x.accepted).map((x) => x.jobId));
  const rejected = sim.submissions.filter((x) => x.accepted === false);
  const rejectedIds = new Set(rejected.map((x) => x.jobId));
  const waitingMs = stats.waitingMs((id) => accepted.has(id), sim.queue.now);
  const rerunWaitingMs = stats.rescheduleWaitingMs(stillToRun(sim), sim.queue.now);
  const delaysOf = (names: string[]): QueueDelays =>
    withWaiting(
      names.map((n) => stats.queueDelaysMs.get(n) ?? []),
      names.map((n) => waitingMs.get(n) ?? []),
    );
  const admissionWaitingMs = stats.admissionWaitingMs((id) => accepted.has(id), sim.queue.now);
  const admissionsOf = (names: string[]): QueueDelays =>
    withWaiting(
      names.map((n) => stats.admissionDelaysMs.get(n) ?? []),
      names.map((n) => admissionWaitingMs.get(n) ?? []),
    );
  const reschedulesOf = (names: string[]): QueueDelays =>
    withWaiting(
      names.map((n) => stats.rescheduleDelaysMs.get(n) ?? []),
      names.map((n) => rerunWaitingMs.byWorkload.get(n) ?? []),
    );
  const workloads: Report["workloads"] = {};
  for (const w of scenario.workloads) {
    workloads[w.name] = {
      type: w.type,
      respool: w.respool,
      jobs: sim.submissions.filter((x) => x.workload === w.name).length,
      queueDelaySeconds: delaysOf([w.name]),
      admissionDelaySeconds: admissionsOf([w.name]),
      rescheduleDelaySeconds: reschedulesOf([w.name]),
    };
  }
  const pools: Report["pools"] = {};
  const placing = waitingForPlacement(sim.resmgr.tasks);
  const usage = stats.usageAfterWarmup(sim.cluster.usage, sim.queue.now);
  // Time after the warm-up: without any, nothing was measured, and the figures over it are null.
  const measured = sim.queue.now > warmup * 1000;
  for (const p of sim.resmgr.tree.all()) {
    if (p.isRoot) continue;
    const v = poolValues(p, poolTotals(p, placing));
    const mine = scenario.workloads.filter((w) => w.respool === p.path || w.respool.startsWith(`${p.path}/`));
    let preempted = 0, slackPreempted = 0;
    for (const w of mine) {
      preempted += stats.preemptedByWorkload.get(w.name) ?? 0;
      slackPreempted += stats.slackPreemptedByWorkload.get(w.name) ?? 0;
    }
    const summary: PoolSummary = { ...v, preempted, slackPreempted };
    const ps = stats.pools[p.path];
    if (ps) {
      summary.avgAllocationCpu = meanFrom(s.t, ps.allocationCpu, warmup);
      summary.avgEntitlementCpu = meanFrom(s.t, ps.entitlementCpu, warmup);
      summary.avgDemandCpu = meanFrom(s.t, ps.demandCpu, warmup);
      const held = heldValues(heldUnder(p, usage, sim));
      summary.avgHeldCpu = measured ? held.heldCpu : null;
      summary.avgSlackHeldCpu = measured ? held.slackHeldCpu : null;
      summary.avgSlackAllocationCpu = meanFrom(s.t, ps.slackAllocationCpu, warmup);
      summary.avgSlackEntitlementCpu = meanFrom(s.t, ps.slackEntitlementCpu, warmup);
    }
    if (mine.length) {
      summary.queueDelaySeconds = delaysOf(mine.map((w) => w.name));
      summary.admissionDelaySeconds = admissionsOf(mine.map((w) => w.name));
    }
    pools[p.path] = summary;
  }
  // Counted as the runs end killed, as `tasks.killed` counts them; drains as the job manager drained, not as
  // the resource manager asked (the SLA may hold some back).
  const { running, waiting, slack, maintenance } = stats.preemptions;
  const simulatedSeconds = sim.queue.now / 1000;
  const measuredSeconds = Math.max(0, simulatedSeconds - warmup);
  const ratio = (k: number) => {
    const r = usage.ratio[k];
    return measured && r !== null ? round4(r) : null;
  };
  return {
    scenario: scenario.name,
    description: scenario.description,
    seed,
    hosts: sim.cluster.hostCount,
    simulatedSeconds,
    warmupSeconds: warmup,
    wallSeconds: round4(machine.wallSeconds),
    peakRssBytes: machine.peakRssBytes,
    endedEarly: sim.endedEarly,
    tasks: {
      ...stats.tasks,
      // A job submitted just before the end may have no answer yet: its instances are unplaced too.
      unplaced: stats.unplaced((id) => !rejectedIds.has(id)),
      rejected: rejected.reduce((n, r) => n + stats.instancesOf(r.jobId), 0),
    },
    jobs: {
      submitted: sim.submissions.length,
      accepted: accepted.size,
      rejected: rejected.length,
      unanswered: sim.submissions.length - accepted.size - rejected.length,
      stuck: sim.stuck.length,
      byState,
    },
    launchesPerSec: measured ? round4(stats.launchedAfterWarmup / measuredSeconds) : null,
    queueDelaySeconds: delaysOf(scenario.workloads.map((w) => w.name)),
    admissionDelaySeconds: admissionsOf(scenario.workloads.map((w) => w.name)),
    rescheduleDelaySeconds: {
      ...reschedulesOf(scenario.workloads.map((w) => w.name)),
      afterKill: withWaiting([stats.rescheduleDelaysByEndMs.killed], [rerunWaitingMs.killed]),
      afterLoss: withWaiting([stats.rescheduleDelaysByEndMs.lost], [rerunWaitingMs.lost]),
    },
    utilization: {
      cpu: ratio(CPU),
      memory: ratio(MEM),
      disk: ratio(DISK),
      gpu: ratio(GPU),
      revocableCpu: ratio(REVOCABLE_CPU),
    },
    fairness: meanFrom(s.t, s.fairness, warmup),
    fairnessHeld: meanFrom(s.t, s.fairnessHeld, warmup),
    pools,
    workloads,
    launchesByHostClass: launchesByHostClass(scenario, sim),
    preemptions: {
      total: running + waiting + slack + maintenance,
      running,
      waiting,
      slack,
      maintenance,
      beingKilled: beingKilled(sim),
    },
    placementFailures: {
      ...countsByReason(stats.placementFailures),
      handedBack: countsByReason(stats.placementHandedBack),
    },
    events: sim.events,
    rejectedJobs: rejected.slice(0, 20).map((r) => ({ jobId: r.jobId, error: r.error ?? "" })),
    stuckJobs: sim.stuck.slice(0, 20),
    series: s,
    poolSeries: stats.pools,
  };
}

/** Counts by reason, most first, and their total. */
function countsByReason(counts: Map<string, number>): { total: number; byReason: Record<string, number> } {
  let total = 0;
  for (const n of counts.values()) total += n;
  return { total, byReason: Object.fromEntries([...counts].sort((a, b) => b[1] - a[1])) };
}

function launchesByHostClass(scenario: Scenario, sim: Simulation): Report["launchesByHostClass"] {
  const seen = sim.stats.launchesByHostClass();
  const classes = [...new Set([...scenario.hostClasses.map((c) => c.name), ...sim.stats.hostClasses])];
  const out: Report["launchesByHostClass"] = {};
  for (const w of scenario.workloads) {
    const counts = seen.get(w.name);
    out[w.name] = Object.fromEntries(classes.map((c) => [c, counts?.get(c) ?? 0]));
  }
  return out;
}

/**
 * Percentiles over delays that ended and the waits so far of those still waiting, which count as delays of
 * at least that much. Copied into one typed array: `flatMap` over millions of delays took half a second at
 * the end of a run.
 */
function withWaiting(done: ArrayLike<number>[], waiting: ArrayLike<number>[]): QueueDelays {
  const lists = [...done, ...waiting];
  const all = new Float64Array(lists.reduce((n, l) => n + l.length, 0));
  let at = 0;
  for (const l of lists) all.set(l, at), at += l.length;
  return { ...percentiles(all), waiting: waiting.reduce((n, l) => n + l.length, 0) };
}

/**
 * Whether an instance whose run was killed or lost is still meant to run again: its job has not ended and
 * was not stopped, and the instance was neither stopped nor removed. A batch instance that ended for good
 * (its retries used up) is not; a service's ended run is restarted, after a back-off when it failed.
 */
function stillToRun(sim: Simulation): (jobId: string, instance: number) => boolean {
  return (jobId, instance) => {
    // A job no longer in the job manager's memory ended (it forgets finished jobs when asked to).
    const job = sim.jobmgr.jobs.get(jobId);
    if (!job || isTerminalJobState(job.runtime.state) || isStopGoal(job.runtime.goalState)) return false;
    const task = job.tasks.get(instance);
    if (!task || isStopGoal(task.goalState)) return false;
    return !isTerminalTaskState(task.state) || task.goalState !== "SUCCEEDED";
  };
}

const isStopGoal = (goal: string) => goal === "KILLED" || goal === "DELETED";

/** What a pool's tasks and its children's held on average (`usage`), by the meter's pool quantities. */
function heldUnder(node: RespoolNode, usage: UsageAverages, sim: Simulation): number[] {
  const held = [...(usage.pools[sim.cluster.usage.poolOf(node.path)] ?? [0, 0, 0, 0])];
  for (const c of node.children) {
    const sub = heldUnder(c, usage, sim);
    for (let k = 0; k < held.length; k++) held[k] += sub[k];
  }
  return held;
}

/**
 * Runs a preemption or a drain is killing as the run ends, their kill status not gone out: revocable tasks
 * the agents are killing for slack, and runs the job manager is evicting (PREEMPTING) that are still on their
 * hosts (one whose status has gone out counts already, though the job manager has yet to see it).
 */
function beingKilled(sim: Simulation): Report["preemptions"]["beingKilled"] {
  const slack = new Set(sim.cluster.slackKillsInFlight());
  const out = { total: slack.size, running: 0, slack: slack.size, maintenance: 0 };
  for (const job of sim.jobmgr.jobs.values()) {
    for (const task of job.tasks.values()) {
      const kind = preemptionOf(task);
      if (!kind) continue;
      const id = mesosTaskId(task.jobId, task.instanceId, task.runId);
      // Killed for slack first: its status will say so.
      if (slack.has(id) || !sim.cluster.hasTask(id)) continue;
      out[kind]++;
      out.total++;
    }
  }
  return out;
}

/** The report without the fields that measure the machine, for determinism checks. */
export function withoutMachineFields(r: Report): Omit<Report, typeof MACHINE_FIELDS[number]> {
  const { wallSeconds: _w, peakRssBytes: _p, ...rest } = r;
  return rest;
}
