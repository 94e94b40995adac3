/** Synthetic hosts for the simulator: the HostBackend port with task lifetimes, usage and slack on virtual time. */
import type { Resources } from "../core/model/resources.ts";
import type {
  BackendEvent,
  HealthCheckSpec,
  HostBackend,
  HostInfo,
  LaunchSpec,
  TaskStatus,
  VolumeRef,
} from "../core/ports/host_backend.ts";
import { launchReservation, ReservationReports } from "../core/hostmgr/volume_holds.ts";
import { HEALTH_CHECK_REASON, healthCheckProblem } from "../core/ports/health_check.ts";
import type { Prng } from "../core/ports/prng.ts";
import type { EventQueue } from "./event_queue.ts";
import { planHealth } from "./health.ts";
import { commandEnv, readCommand } from "./shell_reading.ts";
import { SLACK_PREEMPTED_REASON } from "../core/jobmgr/jobmgr.ts";
import { type StatusExtra, StatusHeap } from "./status_heap.ts";
import { UsageMeter } from "./usage_meter.ts";
import { grownColumn as grow } from "../core/model/columns.ts";
import {
  ANY_HOST,
  ERROR,
  FAILED,
  FINISHED,
  HEALTH_UNKNOWN,
  isTerminalCode,
  KILLED,
  LOST,
  NO_TASK,
  RUNNING,
  STAGING,
  STATE_NAMES,
  taskIdHash,
  TaskSlots,
  type UsageGroup,
} from "./task_slots.ts";

export type { UsageGroup };

/** How long a task runs, how it ends, and how much of its cpu it uses meanwhile. */
export interface TaskOutcome {
  durationMs: number;
  exitCode: number;
  /** Fraction of its cpu limit the task uses (default 1); what it leaves unused is the host's slack. */
  cpuUsage?: number;
  usageGroup?: UsageGroup;
}

/**
 * Decides a task's outcome as it launches; its run starts at `runsAtMs` (after the startup time), and its
 * `durationMs` counts from then. The workload generator registers one per job it submits.
 */
export type OutcomeModel = (spec: LaunchSpec, prng: Prng, runsAtMs: number) => TaskOutcome;

/**
 * A status the simulated cluster sends: also the row of the task's host (-1 for a task it does not know),
 * so the simulator's statistics find the host's class without looking its name up. The host manager
 * forwards statuses in place, so the row reaches them.
 */
export interface SimTaskStatus extends TaskStatus {
  hostRow: number;
}

/** Whether a host's capacity counts as the cluster's: its agent is up and its machine not down for maintenance. */
const counts = (h: SimHost) => h.up && !h.maintenanceDown;

/** The class of hosts a launch named but the cluster never registered (unit tests make them up). */
export const UNREGISTERED_CLASS = "(unregistered)";

/** A simulated agent; its tasks and cpu accounting are in the cluster's columns, by `index`. */
export class SimHost {
  /** Its agent is registered: not failed, lost with its rack, or removed. */
  up = true;
  /**
   * Its machine is down for maintenance (the host manager has it DOWN: drained): its agent may be up, but
   * it counts in no capacity, as a failed host does not (`setMaintenanceDown`).
   */
  maintenanceDown = false;
  /** Removed from the cluster for good (`removeHosts`): it is no longer the cluster's. */
  removed = false;
  /** Slack (milli-cores) last reported to the host manager. */
  reportedSlackCpu = 0;
  /**
   * What the host's persistent volumes reserve, by volume id: from the launch that makes one until its
   * destroy, through its agent's failures (the volume is on the machine's disk).
   */
  volumes?: Map<string, Resources>;
  constructor(public info: HostInfo, readonly index: number) {}
}

export interface SimClusterOptions {
  /** Time from launch to RUNNING (image pull, executor start). */
  startupMs: number;
  /** Time from a kill request to the task's exit. */
  killDelayMs: number;
  /**
   * Statuses leave the cluster at multiples of this (0: at their exact time), as Peloton's job manager
   * took them from the host manager's event stream in batches; fewer, larger batches at scale.
   */
  statusBatchMs?: number;
}

export const DEFAULT_SIM_CLUSTER_OPTIONS: SimClusterOptions = { startupMs: 1000, killDelayMs: 100 };

/** Mesos's reason when the QoS controller kills a revocable task whose slack went away. */
export { SLACK_PREEMPTED_REASON };

/** A task's run time and exit code from its command (`readCommand`), in its environment (`commandEnv`). */
export function outcomeFromCommand(
  spec: Pick<LaunchSpec, "command"> & Partial<Pick<LaunchSpec, "env" | "container">>,
): TaskOutcome {
  const { durationMs, exitCode } = readCommand(spec.command, commandEnv(spec.env, spec.container));
  return { durationMs, exitCode };
}

const FINISHED_EXTRA: StatusExtra = Object.freeze({ message: "Command exited with status 0", exitCode: 0 });
const KILLED_EXTRA: StatusExtra = Object.freeze({
  reason: "REASON_TASK_KILLED_DURING_LAUNCH",
  message: "Task killed",
});
const SLACK_KILLED_EXTRA: StatusExtra = Object.freeze({
  reason: SLACK_PREEMPTED_REASON,
  message: "Revocable task killed: the host's slack shrank below what revocable tasks use",
});
const failedExtras = new Map<number, StatusExtra>();
function failed(exitCode: number): StatusExtra {
  let e = failedExtras.get(exitCode);
  if (!e) {
    e = Object.freeze({
      reason: "REASON_COMMAND_EXECUTOR_FAILED",
      message: `Command exited with status ${exitCode}`,
      exitCode,
    });
    failedExtras.set(exitCode, e);
  }
  return e;
}

/** `TaskSlots.accounted` of a task also counted in the usage meter. */
const METERED = 2;

export class SimCluster implements HostBackend {
  readonly hosts: HostInfo[] = [];
  /** Every host the cluster knows, by index (tasks name their host by it). */
  readonly #hostList: SimHost[] = [];
  readonly #hostByName = new Map<string, SimHost>();
  readonly #byAgent = new Map<string, SimHost>();
  /** The last `volume-reservations` reported of each host: only changes go out. */
  readonly #volumeReports = new ReservationReports();
  /** By host index: what statuses name the host by (a status need not reach into the host's objects). */
  readonly #hostnames: string[] = [];
  readonly #agentIds: string[] = [];
  /** By host index: the index in `hostClasses` of the class the host was added with. */
  #hostClass = new Int32Array(1024);
  /** Host class names, by class index, in the order the cluster first saw them. */
  readonly hostClasses: string[] = [];
  readonly #classIndex = new Map<string, number>();
  /** By host index: cpu limits and modelled use of the non-revocable tasks, cpu revocable tasks hold. */
  #allocCpu = new Float64Array(1024);
  #usedCpu = new Float64Array(1024);
  #revocableCpu = new Float64Array(1024);
  readonly #tasks = new TaskSlots();
  #taskCount = 0;
  readonly #models = new Map<string, OutcomeModel>();
  #sink?: (events: BackendEvent[]) => void;
  readonly #pending = new StatusHeap();
  /** Time of the flush event scheduled for the earliest pending status (Infinity: none). */
  #armedAt = Infinity;
  readonly #flushFn = () => this.#flush();
  /** Hosts whose slack may have changed since the last estimate. */
  readonly #slackChanged = new Set<SimHost>();
  /** Revocable tasks killed because their host's slack shrank (counted as the agent kills them). */
  slackKills = 0;
  /** What tasks hold on the hosts that are up, and the hosts' capacity, integrated over time. */
  readonly usage = new UsageMeter();
  /** The meter's pool index of each job whose tasks are metered by pool (`setPool`). */
  readonly #jobPools = new Map<string, number>();

  constructor(
    private readonly queue: EventQueue,
    private readonly prng: Prng,
    readonly options: SimClusterOptions = DEFAULT_SIM_CLUSTER_OPTIONS,
  ) {}

  /** Registers hosts of one class (a scenario's host class, or one an event adds). */
  addHosts(hosts: HostInfo[], hostClass: string): void {
    const c = this.#classOf(hostClass);
    const now = this.queue.now;
    const again: SimHost[] = [];
    for (const h of hosts) {
      this.hosts.push(h);
      const known = this.#hostByName.get(h.hostname);
      if (known) {
        // Registered again: its capacity is the new one.
        if (counts(known)) this.usage.hostCapacity(now, known.info.resources, -1);
        this.#setInfo(known, h, c);
        known.up = true;
        if (counts(known)) this.usage.hostCapacity(now, h.resources, 1);
        again.push(known);
      } else {
        this.#newHost(h, c);
        this.usage.hostCapacity(now, h.resources, 1);
      }
    }
    this.#send(hosts.map((host) => ({ kind: "host-up", host })));
    this.#reportVolumes(again);
  }

  #classOf(name: string): number {
    let c = this.#classIndex.get(name);
    if (c === undefined) this.#classIndex.set(name, c = this.hostClasses.push(name) - 1);
    return c;
  }

  /** The class index (into `hostClasses`) of the host at a row: what a `SimTaskStatus` names. */
  hostClassOf(hostRow: number): number {
    return this.#hostClass[hostRow];
  }

  #newHost(info: HostInfo, hostClass: number): SimHost {
    const host = new SimHost(info, this.#hostList.length);
    this.#hostList.push(host);
    this.#hostByName.set(info.hostname, host);
    this.#byAgent.set(info.agentId, host);
    if (host.index === this.#allocCpu.length) {
      this.#allocCpu = grow(this.#allocCpu);
      this.#usedCpu = grow(this.#usedCpu);
      this.#revocableCpu = grow(this.#revocableCpu);
      this.#hostClass = grow(this.#hostClass);
    }
    this.#setInfo(host, info, hostClass);
    return host;
  }

  #setInfo(host: SimHost, info: HostInfo, hostClass: number): void {
    host.info = info;
    this.#hostnames[host.index] = info.hostname;
    this.#agentIds[host.index] = info.agentId;
    this.#hostClass[host.index] = hostClass;
  }

  /** Allocated but unused cpu of the host's non-revocable tasks: what revocable tasks may run on. */
  #slackCpu(h: number): number {
    return Math.max(0, this.#allocCpu[h] - this.#usedCpu[h]);
  }

  host(hostname: string): SimHost | undefined {
    return this.#hostByName.get(hostname);
  }

  /**
   * Meters what the job's tasks hold on hosts under the pool at `path` (`usage`); tasks of other jobs count
   * in the cluster's utilization only.
   */
  setPool(jobId: string, path: string): void {
    this.#jobPools.set(jobId, this.usage.pool(path));
  }

  /** Registers how tasks of a job behave; jobs without a model follow their command. */
  setModel(jobId: string, model: OutcomeModel): void {
    this.#models.set(jobId, model);
  }

  get runningTasks(): number {
    return this.#taskCount;
  }

  /** The Mesos task ids of a host's live tasks, in launch order (not for hot paths). */
  taskIdsOn(hostname: string): string[] {
    const h = this.#hostByName.get(hostname);
    return h ? this.#tasksOn(h).map((t) => this.#tasks.taskId[t]) : [];
  }

  /** Slots of a host's live tasks in launch order (not for hot paths). */
  #tasksOn(h: SimHost): number[] {
    const out: number[] = [];
    for (let t = this.#tasks.first(h.index); t !== NO_TASK; t = this.#tasks.next[t]) out.push(t);
    return out;
  }

  /** The slot of a live task on the agent's host (on any host when the agent is unknown), or NO_TASK. */
  #findTask(taskId: string, agentId?: string): number {
    const h = agentId === undefined ? undefined : this.#byAgent.get(agentId);
    return this.#tasks.find(taskId, h ? h.index : ANY_HOST);
  }

  /** The host a launch names; an unregistered one (unit tests launch on made-up hosts) is made up too. */
  #hostFor(spec: LaunchSpec): SimHost {
    let h = this.#hostByName.get(spec.hostname);
    if (!h) {
      h = this.#newHost({
        hostname: spec.hostname,
        agentId: spec.agentId,
        resources: { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 },
        attributes: {},
        portRanges: [],
      }, this.#classOf(UNREGISTERED_CLASS));
      h.up = false;
    }
    return h;
  }

  /**
   * Resources of live tasks per host, for the invariant checker; the cpu of revocable tasks apart, since it
   * comes from the host's slack (oversubscription), not from its unallocated cpu.
   */
  usageByHost(): Map<string, Resources & { revocableCpuMilli: number }> {
    const out = new Map<string, Resources & { revocableCpuMilli: number }>();
    for (const h of this.#hostList) {
      for (const slot of this.#tasksOn(h)) {
        const t = this.#tasks.resources[slot]!;
        const r = out.get(h.info.hostname) ??
          { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0, revocableCpuMilli: 0 };
        if (this.#tasks.revocable[slot]) r.revocableCpuMilli += t.cpuMilli;
        else r.cpuMilli += t.cpuMilli;
        r.memMb += t.memMb;
        r.diskMb += t.diskMb;
        r.gpuMilli += t.gpuMilli;
        out.set(h.info.hostname, r);
      }
    }
    return out;
  }

  start(sink: (events: BackendEvent[]) => void): void {
    this.#sink = sink;
    const hosts = this.hosts.filter((h) => this.#hostByName.get(h.hostname)?.up);
    const events: BackendEvent[] = hosts.map((host) => ({ kind: "host-up", host }));
    for (const h of new Set(hosts.map((info) => this.#hostByName.get(info.hostname)!))) {
      const report = this.#volumesReport(h);
      if (report) events.push(report);
    }
    this.queue.schedule(this.queue.now, () => sink(events));
  }

  launch(specs: LaunchSpec[]): void {
    const now = this.queue.now;
    const tasks = this.#tasks;
    // A launch is mostly one host's tasks of one job: look each up once.
    let host: SimHost | undefined, hostname: string | undefined;
    let model: OutcomeModel | undefined, jobId: string | undefined, pool = -1;
    for (const spec of specs) {
      if (!host || spec.hostname !== hostname) {
        host = this.#hostFor(spec);
        hostname = spec.hostname;
      }
      const idHash = taskIdHash(spec.taskId);
      if (tasks.find(spec.taskId, host.index, idHash) !== NO_TASK) {
        this.#push(now, NO_TASK, ERROR, 0, {
          reason: "REASON_TASK_INVALID",
          message: "duplicate task id",
          taskId: spec.taskId,
        });
        continue;
      }
      const healthProblem = spec.healthCheck && healthCheckProblem(spec.healthCheck);
      if (healthProblem) {
        const message = `Task uses an invalid health check: ${healthProblem}`;
        this.#push(now, NO_TASK, ERROR, 0, {
          reason: "REASON_TASK_INVALID",
          message,
          taskId: spec.taskId,
        });
        continue;
      }
      if (spec.jobId !== jobId) {
        model = this.#models.get(spec.jobId);
        pool = this.#jobPools.get(spec.jobId) ?? -1;
        jobId = spec.jobId;
      }
      const runAt = now + this.options.startupMs;
      const outcome = model ? model(spec, this.prng, runAt) : outcomeFromCommand(spec);
      const slot = tasks.add(
        spec.taskId,
        idHash,
        host.index,
        spec.resources,
        spec.revocable === true,
        outcome.cpuUsage ?? 1,
        outcome.usageGroup,
        pool,
      );
      const gen = tasks.generation[slot];
      this.#taskCount++;
      this.#account(host, slot);
      if (spec.volume) this.#reserve(host, spec);
      this.#push(now, slot, STAGING, gen, null);
      this.#push(runAt, slot, RUNNING, gen, null);
      // A task without an end (a service) runs until it is killed or its host goes away.
      const endAt = runAt + outcome.durationMs;
      if (Number.isFinite(endAt)) {
        if (outcome.exitCode === 0) this.#push(endAt, slot, FINISHED, gen, FINISHED_EXTRA);
        else this.#push(endAt, slot, FAILED, gen, failed(outcome.exitCode));
      }
      if (spec.healthCheck) this.#checkHealth(slot, gen, spec.healthCheck, runAt);
    }
  }

  /**
   * Health results go out batched like other statuses; the kill verdict acts at its time unless the run
   * ended or was killed before (see sim/health.ts for how a check's result is modelled).
   */
  #checkHealth(slot: number, gen: number, check: HealthCheckSpec, runningAtMs: number): void {
    const plan = planHealth(check, runningAtMs);
    for (const r of plan.reports) {
      // A check that never ends (`sleep infinity` with no timeout) never reports, nor kills.
      if (!Number.isFinite(r.atMs)) continue;
      this.#push(r.atMs, slot, RUNNING, gen, {
        reason: HEALTH_CHECK_REASON,
        message: r.message,
        healthy: r.healthy,
      });
    }
    const kill = plan.kill;
    if (!kill || !Number.isFinite(kill.atMs)) return;
    this.queue.schedule(kill.atMs, () => {
      // Statuses due at this instant (the run starting, the check's report) come before the verdict.
      if (this.#pending.peekTime() <= this.queue.now) this.#flush();
      // A kill or the run's end (which frees its slot) moved the generation on.
      const tasks = this.#tasks;
      if (tasks.generation[slot] !== gen) return;
      const killed = ++tasks.generation[slot];
      this.#push(kill.atMs + this.options.killDelayMs, slot, KILLED, killed, {
        reason: HEALTH_CHECK_REASON,
        message: kill.message,
        healthy: false,
      });
    });
  }

  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void {
    const at = this.queue.now + this.options.killDelayMs;
    for (const k of tasks) {
      const slot = this.#findTask(k.taskId, k.agentId);
      if (slot === NO_TASK) {
        this.#push(this.queue.now, NO_TASK, LOST, 0, {
          reason: "REASON_RECONCILIATION",
          message: "Task unknown",
          taskId: k.taskId,
        });
        continue;
      }
      this.#push(at, slot, KILLED, ++this.#tasks.generation[slot], KILLED_EXTRA);
    }
  }

  reconcile(taskIds?: string[]): void {
    const now = this.queue.now;
    const tasks = this.#tasks;
    let slots: number[];
    if (taskIds) slots = taskIds.map((id) => this.#findTask(id));
    else {
      // Each live task by its id; were an id on two hosts, both answers would be the first one's.
      const all = this.#hostList.flatMap((h) => this.#tasksOn(h));
      slots = all.map((t) => tasks.find(tasks.taskId[t], ANY_HOST));
    }
    for (let i = 0; i < slots.length; i++) {
      const t = slots[i];
      if (t !== NO_TASK) {
        const extra: StatusExtra = { reason: "REASON_RECONCILIATION" };
        if (tasks.healthy[t] !== HEALTH_UNKNOWN) extra.healthy = tasks.healthy[t] === 1;
        this.#push(now, t, tasks.state[t], tasks.generation[t], extra);
      } else {
        this.#push(now, NO_TASK, LOST, 0, {
          reason: "REASON_RECONCILIATION",
          message: "Task unknown",
          taskId: taskIds![i],
        });
      }
    }
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Destroys deleted volumes: their reservations go (the host manager names a host by its name, or by its
   * agent when it knows no name), told to the host manager while the host's agent is up, else at its return.
   */
  destroyVolumes(volumes: VolumeRef[]): void {
    const changed = new Set<SimHost>();
    for (const v of volumes) {
      const h = this.#hostByName.get(v.hostname) ?? this.#byAgent.get(v.agentId);
      if (h?.volumes?.delete(v.volumeId)) changed.add(h);
    }
    this.#reportVolumes(changed);
  }

  /**
   * A launch on its volume: the volume's reservation is the run's (`launchReservation`, as the minicluster
   * reserves it), reported before any status of the run.
   */
  #reserve(h: SimHost, spec: LaunchSpec): void {
    const r = launchReservation(spec), was = h.volumes?.get(spec.volume!.volumeId);
    if (
      was && r.cpuMilli === was.cpuMilli && r.memMb === was.memMb && r.diskMb === was.diskMb &&
      r.gpuMilli === was.gpuMilli
    ) return;
    (h.volumes ??= new Map()).set(spec.volume!.volumeId, r);
    this.#reportVolumes([h]);
  }

  /** `volume-reservations` of the hosts whose agent is up, for those that changed since their last report. */
  #reportVolumes(hosts: Iterable<SimHost>): void {
    // Before `start`, which reports them with the hosts.
    if (!this.#sink) return;
    const events: BackendEvent[] = [];
    for (const h of hosts) {
      const report = h.up ? this.#volumesReport(h) : undefined;
      if (report) events.push(report);
    }
    this.#send(events);
  }

  /** The host's `volume-reservations` when they changed since its last report (none: nothing to say). */
  #volumesReport(h: SimHost): BackendEvent | undefined {
    return this.#volumeReports.next(h.info.hostname, h.volumes);
  }

  /** Agents go away (a failure, a lost rack, a removed host class): their tasks die with them. */
  hostsDown(hostnames: string[], reason: string): void {
    const events: BackendEvent[] = [];
    for (const name of hostnames) {
      const h = this.#hostByName.get(name);
      if (!h || !h.up) continue;
      for (const slot of this.#tasksOn(h)) {
        this.#release(slot);
        this.#tasks.remove(slot);
        this.#taskCount--;
      }
      if (counts(h)) this.usage.hostCapacity(this.queue.now, h.info.resources, -1);
      h.up = false;
      events.push({ kind: "host-lost", hostname: name, agentId: h.info.agentId, reason });
    }
    this.#send(events);
  }

  /** Agents that were down register again, empty. */
  hostsUp(hostnames: string[]): void {
    const hosts: HostInfo[] = [], upAgain: SimHost[] = [];
    for (const name of hostnames) {
      const h = this.#hostByName.get(name);
      if (!h || h.up) continue;
      h.up = true;
      if (counts(h)) this.usage.hostCapacity(this.queue.now, h.info.resources, 1);
      hosts.push(h.info);
      upAgain.push(h);
    }
    this.#send(hosts.map((host) => ({ kind: "host-up", host })));
    // After their host-up: volumes destroyed while their agent was away are told now.
    this.#reportVolumes(upAgain);
  }

  /** Machines leave the cluster for good: their agents go away as in `hostsDown`, and they are no longer its. */
  removeHosts(hostnames: string[], reason: string): void {
    for (const name of hostnames) {
      const h = this.#hostByName.get(name);
      if (h) h.removed = true;
    }
    this.hostsDown(hostnames, reason);
  }

  /** Hosts that are the cluster's: every one registered (whatever its state now) but those removed for good. */
  get hostCount(): number {
    let n = 0;
    for (const h of this.#hostList) if (!h.removed) n++;
    return n;
  }

  /**
   * The host manager has a host DOWN for maintenance (`down`: drained, its machine down) or no longer
   * (completed, or draining again): a host down counts in no capacity, as utilization is over the hosts up.
   * A host still DRAINING runs tasks and counts. Safe to call again.
   */
  setMaintenanceDown(hostname: string, down: boolean): void {
    const h = this.#hostByName.get(hostname);
    if (!h || h.maintenanceDown === down) return;
    const counted = counts(h);
    h.maintenanceDown = down;
    if (counted !== counts(h)) this.usage.hostCapacity(this.queue.now, h.info.resources, down ? -1 : 1);
  }

  /** Tasks of a usage group change how much cpu they use (a traffic spike or a quiet night). */
  setUsageLevel(group: UsageGroup, level: number): void {
    group.level = level;
    const tasks = this.#tasks;
    for (const h of this.#hostList) {
      for (let t = tasks.first(h.index); t !== NO_TASK; t = tasks.next[t]) {
        if (tasks.usageGroup[t] !== group || !tasks.accounted[t] || tasks.revocable[t]) continue;
        this.#usedCpu[h.index] -= tasks.usedCpu[t];
        tasks.usedCpu[t] = this.#modelledCpu(t);
        this.#usedCpu[h.index] += tasks.usedCpu[t];
        this.#slackChanged.add(h);
      }
    }
  }

  /**
   * The agents' resource estimators and QoS controllers, run every estimate period: a host whose slack
   * shrank below what its revocable tasks hold kills the newest of them first, then every changed
   * host reports its slack (Mesos's revocable offers).
   */
  estimateSlack(): void {
    const events: BackendEvent[] = [];
    const at = this.queue.now + this.options.killDelayMs;
    const tasks = this.#tasks;
    for (const h of this.#slackChanged) {
      if (!h.up) continue;
      const slack = this.#slackCpu(h.index);
      if (this.#revocableCpu[h.index] > slack) {
        const revocable = this.#tasksOn(h).filter((t) => tasks.revocable[t] && tasks.accounted[t]);
        for (let i = revocable.length - 1; i >= 0 && this.#revocableCpu[h.index] > slack; i--) {
          const t = revocable[i];
          this.#release(t);
          this.slackKills++;
          this.#push(at, t, KILLED, ++tasks.generation[t], SLACK_KILLED_EXTRA);
        }
      }
      if (slack !== h.reportedSlackCpu) {
        h.reportedSlackCpu = slack;
        events.push({
          kind: "host-slack",
          hostname: h.info.hostname,
          slack: { cpuMilli: slack, memMb: 0, diskMb: 0, gpuMilli: 0 },
        });
      }
    }
    this.#slackChanged.clear();
    this.#send(events);
  }

  /** Whether a run is on its host still: its last status (its end, for one that ended) has not gone out. */
  hasTask(taskId: string): boolean {
    return this.#findTask(taskId) !== NO_TASK;
  }

  /**
   * The task ids of revocable tasks the agents are killing for slack whose kill status has not gone out yet
   * (it goes `killDelayMs` after the kill): the statistics count them once it has.
   */
  slackKillsInFlight(): string[] {
    const ids: string[] = [], tasks = this.#tasks;
    this.#pending.forEach((t, _state, generation, extra) => {
      // A later kill, or the run's end, moved the generation on: this status will not go out.
      if (extra === SLACK_KILLED_EXTRA && generation === tasks.generation[t]) ids.push(tasks.taskId[t]);
    });
    return ids;
  }

  #account(h: SimHost, t: number): void {
    const tasks = this.#tasks;
    const r = tasks.resources[t]!, cpu = r.cpuMilli;
    // METERED: on a host that is up, so in the utilization (a made-up host of a unit test is not).
    tasks.accounted[t] = h.up ? METERED : 1;
    if (h.up) this.usage.hold(this.queue.now, r, tasks.revocable[t] === 1, tasks.pool[t], 1);
    if (tasks.revocable[t]) this.#revocableCpu[h.index] += cpu;
    else {
      const used = tasks.usedCpu[t] = this.#modelledCpu(t);
      this.#allocCpu[h.index] += cpu;
      this.#usedCpu[h.index] += used;
      if (used !== cpu) this.#slackChanged.add(h);
    }
  }

  /** Takes a task out of its host's accounting; safe to call twice. */
  #release(t: number): void {
    const tasks = this.#tasks;
    if (!tasks.accounted[t]) return;
    const r = tasks.resources[t]!, cpu = r.cpuMilli;
    if (tasks.accounted[t] === METERED) {
      this.usage.hold(this.queue.now, r, tasks.revocable[t] === 1, tasks.pool[t], -1);
    }
    tasks.accounted[t] = 0;
    const h = tasks.host[t];
    if (tasks.revocable[t]) this.#revocableCpu[h] -= cpu;
    else {
      this.#allocCpu[h] -= cpu;
      this.#usedCpu[h] -= tasks.usedCpu[t];
      if (tasks.usedCpu[t] !== cpu) this.#slackChanged.add(this.#hostList[h]);
    }
  }

  /** The cpu a task uses now: its fraction of its limit, times its group's level, at most the limit. */
  #modelledCpu(t: number): number {
    const tasks = this.#tasks;
    const group = tasks.usageGroup[t];
    const level = group ? group.level : 1;
    const cpu = tasks.resources[t]!.cpuMilli;
    return Math.min(cpu, Math.round(cpu * tasks.usageFraction[t] * level));
  }

  #send(events: BackendEvent[]): void {
    const sink = this.#sink;
    if (sink && events.length) this.queue.schedule(this.queue.now, () => sink(events));
  }

  /** Queues a status; a status tied to a task slot only applies while the slot's generation is unchanged. */
  #push(time: number, slot: number, state: number, generation: number, extra: StatusExtra | null) {
    const batch = this.options.statusBatchMs ?? 0;
    const at = batch > 0 ? Math.ceil(time / batch) * batch : time;
    this.#pending.push(at, slot, state, generation, extra);
    if (at < this.#armedAt) {
      this.#armedAt = at;
      this.queue.schedule(at, this.#flushFn);
    }
  }

  /** Sends every status due now as one batch. */
  #flush(): void {
    const now = this.queue.now;
    if (this.#armedAt <= now) this.#armedAt = Infinity;
    const events: BackendEvent[] = [];
    const pending = this.#pending, tasks = this.#tasks;
    while (pending.popDue(now)) {
      const t = pending.task, x = pending.extra, state = pending.state;
      // A kill, a lost host or the run's end moved the slot's generation on: the status is stale.
      if (t !== NO_TASK && pending.generation !== tasks.generation[t]) continue;
      const h = t !== NO_TASK ? tasks.host[t] : -1;
      // Every field present (and the host manager's `pelotonState`), so all statuses share one shape.
      const status: SimTaskStatus = {
        taskId: h >= 0 ? tasks.taskId[t] : x!.taskId!,
        state: STATE_NAMES[state],
        hostname: h >= 0 ? this.#hostnames[h] : "",
        agentId: h >= 0 ? this.#agentIds[h] : "",
        hostRow: h,
        timeMs: now,
        reason: x?.reason,
        message: x?.message,
        exitCode: x?.exitCode,
        healthy: x?.healthy,
        pelotonState: undefined,
      } as SimTaskStatus;
      if (h >= 0) {
        tasks.state[t] = state;
        if (x?.healthy !== undefined) tasks.healthy[t] = x.healthy ? 1 : 0;
        if (isTerminalCode(state)) {
          this.#release(t);
          tasks.remove(t);
          this.#taskCount--;
        }
      }
      events.push({ kind: "task-status", status });
    }
    const next = pending.peekTime();
    if (next < this.#armedAt) {
      this.#armedAt = next;
      this.queue.schedule(next, this.#flushFn);
    }
    if (events.length) this.#sink?.(events);
  }
}
