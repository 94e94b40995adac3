/** Synthetic hosts for the simulator: the HostBackend port with task lifetimes, usage and slack on virtual time. */
import type { Resources } from "../core/model/resources.ts";
import type {
  BackendEvent,
  HealthCheckSpec,
  HostBackend,
  HostInfo,
  LaunchSpec,
  TaskStatus,
} from "../core/ports/host_backend.ts";
import { HEALTH_CHECK_REASON, healthCheckProblem } from "../core/ports/health_check.ts";
import type { Prng } from "../core/ports/prng.ts";
import type { MesosTaskState } from "../core/model/states.ts";
import type { EventQueue } from "./event_queue.ts";
import { planHealth } from "./health.ts";
import { SLACK_PREEMPTED_REASON } from "../core/jobmgr/jobmgr.ts";
import { type StatusExtra, StatusHeap } from "./status_heap.ts";

/** A level every task of a group multiplies its cpu use by (a workload's traffic); events change it. */
export interface UsageGroup {
  level: number;
}

/** How long a task runs, how it ends, and how much of its cpu it uses meanwhile. */
export interface TaskOutcome {
  durationMs: number;
  exitCode: number;
  /** Fraction of its cpu limit the task uses (default 1); what it leaves unused is the host's slack. */
  cpuUsage?: number;
  usageGroup?: UsageGroup;
}

/** Decides a task's outcome; the workload generator registers one per job it submits. */
export type OutcomeModel = (spec: LaunchSpec, prng: Prng) => TaskOutcome;

/** A simulated agent and the cpu accounting its slack comes from (milli-cores). */
export class SimHost {
  up = true;
  /** Tasks on the host until they end, by id (per host rather than one map of a million: less churn). */
  readonly tasks = new Map<string, SimTask>();
  /** Cpu limits and modelled use of the non-revocable tasks, and the cpu revocable tasks hold. */
  allocCpu = 0;
  usedCpu = 0;
  revocableCpu = 0;
  /** Slack last reported to the host manager. */
  reportedSlackCpu = 0;
  constructor(public info: HostInfo) {}

  /** Allocated but unused cpu of the non-revocable tasks: what revocable tasks may run on. */
  get slackCpu(): number {
    return Math.max(0, this.allocCpu - this.usedCpu);
  }
}

/** One task run on a host (the launch spec itself is not kept: a million of them would not fit). */
export class SimTask {
  state: MesosTaskState = "TASK_STAGING";
  /** Bumped on kill so the pending statuses of the killed run are ignored. */
  generation = 0;
  /** Latest health-check result, repeated by reconciliation as Mesos's master does. */
  healthy: boolean | undefined = undefined;
  /** Counted in its host's cpu accounting (until it ends, is killed or its host is lost). */
  accounted = false;
  usedCpu = 0;
  constructor(
    readonly taskId: string,
    readonly host: SimHost,
    readonly resources: Resources,
    readonly revocable: boolean,
    readonly usageFraction: number,
    readonly usageGroup: UsageGroup | undefined,
  ) {}
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

/**
 * Parses the small shell subset a job's command can use in the simulator: `sleep N` adds N
 * seconds, `exit K` sets the exit code. This lets Peloton's own job files run unchanged.
 */
export function outcomeFromCommand(spec: Pick<LaunchSpec, "command">): TaskOutcome {
  const text = [spec.command.value ?? "", ...spec.command.arguments].join(" ");
  let durationMs = 0, exitCode = 0;
  for (const m of text.matchAll(/\bsleep\s+(\d+(?:\.\d+)?)/g)) durationMs += Number(m[1]) * 1000;
  const exit = /\bexit\s+(\d+)/.exec(text);
  if (exit) exitCode = Number(exit[1]);
  return { durationMs, exitCode };
}

const FINISHED: StatusExtra = Object.freeze({ message: "Command exited with status 0", exitCode: 0 });
const KILLED: StatusExtra = Object.freeze({
  reason: "REASON_TASK_KILLED_DURING_LAUNCH",
  message: "Task killed",
});
const SLACK_KILLED: StatusExtra = Object.freeze({
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

export class SimCluster implements HostBackend {
  readonly hosts: HostInfo[] = [];
  readonly #hostByName = new Map<string, SimHost>();
  readonly #byAgent = new Map<string, SimHost>();
  #taskCount = 0;
  readonly #models = new Map<string, OutcomeModel>();
  #sink?: (events: BackendEvent[]) => void;
  readonly #pending = new StatusHeap<SimTask>();
  /** Time of the flush event scheduled for the earliest pending status (Infinity: none). */
  #armedAt = Infinity;
  readonly #flushFn = () => this.#flush();
  /** Hosts whose slack may have changed since the last estimate. */
  readonly #slackChanged = new Set<SimHost>();
  /** Revocable tasks killed because their host's slack shrank. */
  slackKills = 0;

  constructor(
    private readonly queue: EventQueue,
    private readonly prng: Prng,
    readonly options: SimClusterOptions = DEFAULT_SIM_CLUSTER_OPTIONS,
  ) {}

  addHosts(hosts: HostInfo[]): void {
    for (const h of hosts) {
      this.hosts.push(h);
      const known = this.#hostByName.get(h.hostname);
      if (known) {
        known.info = h;
        known.up = true;
      } else {
        const host = new SimHost(h);
        this.#hostByName.set(h.hostname, host);
        this.#byAgent.set(h.agentId, host);
      }
    }
    this.#send(hosts.map((host) => ({ kind: "host-up", host })));
  }

  host(hostname: string): SimHost | undefined {
    return this.#hostByName.get(hostname);
  }

  /** Registers how tasks of a job behave; jobs without a model follow their command. */
  setModel(jobId: string, model: OutcomeModel): void {
    this.#models.set(jobId, model);
  }

  get runningTasks(): number {
    return this.#taskCount;
  }

  /** Every live task (tests and the invariant checker; not for hot paths). */
  *#allTasks(): IterableIterator<SimTask> {
    for (const h of this.#hostByName.values()) yield* h.tasks.values();
  }

  #findTask(taskId: string, agentId?: string): SimTask | undefined {
    const h = agentId === undefined ? undefined : this.#byAgent.get(agentId);
    if (h) return h.tasks.get(taskId);
    for (const t of this.#allTasks()) if (t.taskId === taskId) return t;
    return undefined;
  }

  /** The host a launch names; an unregistered one (unit tests launch on made-up hosts) is made up too. */
  #hostFor(spec: LaunchSpec): SimHost {
    let h = this.#hostByName.get(spec.hostname);
    if (!h) {
      h = new SimHost({
        hostname: spec.hostname,
        agentId: spec.agentId,
        resources: { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 },
        attributes: {},
        portRanges: [],
      });
      h.up = false;
      this.#hostByName.set(spec.hostname, h);
      this.#byAgent.set(spec.agentId, h);
    }
    return h;
  }

  /** Resources of live tasks per host, for the invariant checker. */
  usageByHost(): Map<string, Resources> {
    const out = new Map<string, Resources>();
    for (const t of this.#allTasks()) {
      const r = out.get(t.host.info.hostname) ?? { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 };
      r.cpuMilli += t.resources.cpuMilli;
      r.memMb += t.resources.memMb;
      r.diskMb += t.resources.diskMb;
      r.gpuMilli += t.resources.gpuMilli;
      out.set(t.host.info.hostname, r);
    }
    return out;
  }

  start(sink: (events: BackendEvent[]) => void): void {
    this.#sink = sink;
    const hosts = this.hosts.filter((h) => this.#hostByName.get(h.hostname)?.up);
    this.queue.schedule(this.queue.now, () => sink(hosts.map((host) => ({ kind: "host-up", host }))));
  }

  launch(specs: LaunchSpec[]): void {
    const now = this.queue.now;
    for (const spec of specs) {
      const host = this.#hostFor(spec);
      if (host.tasks.has(spec.taskId)) {
        this.#push(now, null, "TASK_ERROR", 0, {
          reason: "REASON_TASK_INVALID",
          message: "duplicate task id",
          taskId: spec.taskId,
        });
        continue;
      }
      const healthProblem = spec.healthCheck && healthCheckProblem(spec.healthCheck);
      if (healthProblem) {
        const message = `Task uses an invalid health check: ${healthProblem}`;
        this.#push(now, null, "TASK_ERROR", 0, {
          reason: "REASON_TASK_INVALID",
          message,
          taskId: spec.taskId,
        });
        continue;
      }
      const model = this.#models.get(spec.jobId);
      const outcome = model ? model(spec, this.prng) : outcomeFromCommand(spec);
      const task = new SimTask(
        spec.taskId,
        host,
        spec.resources,
        spec.revocable === true,
        outcome.cpuUsage ?? 1,
        outcome.usageGroup,
      );
      host.tasks.set(spec.taskId, task);
      this.#taskCount++;
      this.#account(host, task);
      this.#push(now, task, "TASK_STAGING", 0, null);
      const runAt = now + this.options.startupMs;
      this.#push(runAt, task, "TASK_RUNNING", 0, null);
      // A task without an end (a service) runs until it is killed or its host goes away.
      const endAt = runAt + outcome.durationMs;
      if (Number.isFinite(endAt)) {
        if (outcome.exitCode === 0) this.#push(endAt, task, "TASK_FINISHED", 0, FINISHED);
        else this.#push(endAt, task, "TASK_FAILED", 0, failed(outcome.exitCode));
      }
      if (spec.healthCheck) this.#checkHealth(task, spec.healthCheck, runAt);
    }
  }

  /**
   * Health results go out batched like other statuses; the kill verdict acts at its time unless the run
   * ended or was killed before (see sim/health.ts for how a check's result is modelled).
   */
  #checkHealth(task: SimTask, check: HealthCheckSpec, runningAtMs: number): void {
    const plan = planHealth(check, runningAtMs);
    for (const r of plan.reports) {
      this.#push(r.atMs, task, "TASK_RUNNING", 0, {
        reason: HEALTH_CHECK_REASON,
        message: r.message,
        healthy: r.healthy,
      });
    }
    const kill = plan.kill;
    if (!kill) return;
    this.queue.schedule(kill.atMs, () => {
      // Statuses due at this instant (the run starting, the check's report) come before the verdict.
      if (this.#pending.peekTime() <= this.queue.now) this.#flush();
      if (task.generation !== 0 || isTerminal(task.state)) return;
      task.generation++;
      this.#push(kill.atMs + this.options.killDelayMs, task, "TASK_KILLED", task.generation, {
        reason: HEALTH_CHECK_REASON,
        message: kill.message,
        healthy: false,
      });
    });
  }

  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void {
    const at = this.queue.now + this.options.killDelayMs;
    for (const k of tasks) {
      const task = this.#findTask(k.taskId, k.agentId);
      if (!task) {
        this.#push(this.queue.now, null, "TASK_LOST", 0, {
          reason: "REASON_RECONCILIATION",
          message: "Task unknown",
          taskId: k.taskId,
        });
        continue;
      }
      task.generation++;
      this.#push(at, task, "TASK_KILLED", task.generation, KILLED);
    }
  }

  reconcile(taskIds?: string[]): void {
    const now = this.queue.now;
    const all = taskIds ? undefined : [...this.#allTasks()];
    for (const id of taskIds ?? all!.map((t) => t.taskId)) {
      const t = taskIds ? this.#findTask(id) : all!.find((x) => x.taskId === id);
      if (t) {
        const extra: StatusExtra = { reason: "REASON_RECONCILIATION" };
        if (t.healthy !== undefined) extra.healthy = t.healthy;
        this.#push(now, t, t.state, t.generation, extra);
      } else {
        this.#push(now, null, "TASK_LOST", 0, {
          reason: "REASON_RECONCILIATION",
          message: "Task unknown",
          taskId: id,
        });
      }
    }
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  /** Agents go away (a failure, a lost rack, a removed host class): their tasks die with them. */
  hostsDown(hostnames: string[], reason: string): void {
    const events: BackendEvent[] = [];
    for (const name of hostnames) {
      const h = this.#hostByName.get(name);
      if (!h || !h.up) continue;
      h.up = false;
      for (const t of h.tasks.values()) {
        t.generation++;
        t.state = "TASK_LOST";
        this.#release(t);
        this.#taskCount--;
      }
      h.tasks.clear();
      events.push({ kind: "host-lost", hostname: name, agentId: h.info.agentId, reason });
    }
    this.#send(events);
  }

  /** Agents that were down register again, empty. */
  hostsUp(hostnames: string[]): void {
    const hosts: HostInfo[] = [];
    for (const name of hostnames) {
      const h = this.#hostByName.get(name);
      if (!h || h.up) continue;
      h.up = true;
      hosts.push(h.info);
    }
    this.#send(hosts.map((host) => ({ kind: "host-up", host })));
  }

  /** Tasks of a usage group change how much cpu they use (a traffic spike or a quiet night). */
  setUsageLevel(group: UsageGroup, level: number): void {
    group.level = level;
    for (const t of this.#allTasks()) {
      if (t.usageGroup !== group || !t.accounted || t.revocable || !t.host) continue;
      t.host.usedCpu -= t.usedCpu;
      t.usedCpu = usedCpu(t);
      t.host.usedCpu += t.usedCpu;
      this.#slackChanged.add(t.host);
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
    for (const h of this.#slackChanged) {
      if (!h.up) continue;
      const slack = h.slackCpu;
      if (h.revocableCpu > slack) {
        const revocable = [...h.tasks.values()].filter((t) => t.revocable && t.accounted);
        for (let i = revocable.length - 1; i >= 0 && h.revocableCpu > slack; i--) {
          const t = revocable[i];
          this.#release(t);
          t.generation++;
          this.slackKills++;
          this.#push(at, t, "TASK_KILLED", t.generation, SLACK_KILLED);
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

  #account(h: SimHost, t: SimTask): void {
    t.accounted = true;
    if (t.revocable) h.revocableCpu += t.resources.cpuMilli;
    else {
      t.usedCpu = usedCpu(t);
      h.allocCpu += t.resources.cpuMilli;
      h.usedCpu += t.usedCpu;
      if (t.usedCpu !== t.resources.cpuMilli) this.#slackChanged.add(h);
    }
  }

  /** Takes a task out of its host's accounting; safe to call twice. */
  #release(t: SimTask): void {
    if (!t.accounted) return;
    t.accounted = false;
    const h = t.host!;
    if (t.revocable) h.revocableCpu -= t.resources.cpuMilli;
    else {
      h.allocCpu -= t.resources.cpuMilli;
      h.usedCpu -= t.usedCpu;
      if (t.usedCpu !== t.resources.cpuMilli) this.#slackChanged.add(h);
    }
  }

  #send(events: BackendEvent[]): void {
    const sink = this.#sink;
    if (sink && events.length) this.queue.schedule(this.queue.now, () => sink(events));
  }

  /** Queues a status; a status tied to a task run only applies if that run was not superseded. */
  #push(
    time: number,
    task: SimTask | null,
    state: MesosTaskState,
    generation: number,
    extra: StatusExtra | null,
  ) {
    const batch = this.options.statusBatchMs ?? 0;
    const at = batch > 0 ? Math.ceil(time / batch) * batch : time;
    this.#pending.push(at, task, state, generation, extra);
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
    for (let p = this.#pending.popDue(now); p; p = this.#pending.popDue(now)) {
      const t = p.task, x = p.extra;
      if (t && (p.generation !== t.generation || isTerminal(t.state))) continue;
      // Every field present (and the host manager's `pelotonState`), so all statuses share one shape.
      const status: TaskStatus = {
        taskId: t ? t.taskId : x!.taskId!,
        state: p.state,
        hostname: t ? t.host.info.hostname : "",
        agentId: t ? t.host.info.agentId : "",
        timeMs: now,
        reason: x?.reason,
        message: x?.message,
        exitCode: x?.exitCode,
        healthy: x?.healthy,
        pelotonState: undefined,
      } as TaskStatus;
      if (t) {
        t.state = p.state;
        if (x?.healthy !== undefined) t.healthy = x.healthy;
        if (isTerminal(p.state)) {
          this.#release(t);
          t.host!.tasks.delete(t.taskId);
          this.#taskCount--;
        }
      }
      events.push({ kind: "task-status", status });
    }
    const next = this.#pending.peekTime();
    if (next < this.#armedAt) {
      this.#armedAt = next;
      this.queue.schedule(next, this.#flushFn);
    }
    if (events.length) this.#sink?.(events);
  }
}

function usedCpu(t: SimTask): number {
  const level = t.usageGroup ? t.usageGroup.level : 1;
  return Math.min(t.resources.cpuMilli, Math.round(t.resources.cpuMilli * t.usageFraction * level));
}

function isTerminal(s: MesosTaskState): boolean {
  return s === "TASK_FINISHED" || s === "TASK_FAILED" || s === "TASK_KILLED" || s === "TASK_LOST" ||
    s === "TASK_ERROR";
}
