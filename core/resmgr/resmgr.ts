/** The resource manager daemon: pool queues, admission, preemption, ready queue and placement hand-off. */
import type { ClusterCapacity, Gang, Message, RmTask, TaskUpdate } from "../messages.ts";
import type { RespoolRecord } from "../model/records.ts";
import { zero } from "../model/resources.ts";
import { isTerminalTaskState, type TaskState } from "../model/states.ts";
import type { Clock } from "../ports/clock.ts";
import type { Counter, Metrics } from "../ports/metrics.ts";
import type { Prng } from "../ports/prng.ts";
import type { Store } from "../ports/store.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";
import { dequeueGangs } from "./admission.ts";
import { allocateTask, releaseTask } from "./allocation.ts";
import { recalculateEntitlement } from "./entitlement_cycle.ts";
import { type HandoffConfig, PlacementHandoff } from "./handoff.ts";
import { chooseVictims, DEFAULT_PREEMPTION_CONFIG, poolsDue, type PreemptionConfig } from "./preemptor.ts";
import { Fifo } from "./queue.ts";
import { RespoolApi } from "./respool_api.ts";
import { RespoolTree } from "./respool_tree.ts";
import { type QueuedGang, queuedGang, type RmTaskEntry } from "./rm_task.ts";

export interface ResmgrConfig extends HandoffConfig {
  /** How often queued gangs are admitted (Peloton's `task_scheduling_period`). */
  schedulingPeriodMs: number;
  entitlementPeriodMs: number;
  /** Gangs admitted per pool per scheduling pass (`dequeueGangLimit`). */
  dequeueGangLimit: number;
  preemption: PreemptionConfig;
}

export const DEFAULT_RESMGR_CONFIG: ResmgrConfig = {
  schedulingPeriodMs: 100,
  entitlementPeriodMs: 60_000,
  dequeueGangLimit: 1000,
  placementRetryBackoffMs: 1_000,
  placingTimeoutMs: 600_000,
  preemption: DEFAULT_PREEMPTION_CONFIG,
};

export interface ResmgrDeps {
  clock: Clock;
  transport: Transport;
  store: Store;
  prng: Prng;
  metrics: Metrics;
  /** Address of this daemon and of the host manager it asks for capacity. */
  self: Address;
  hostmgr: Address;
}

const REVOKE = "PREEMPTION_REASON_REVOKE_RESOURCES";

export class ResourceManager implements Receiver {
  readonly tree = new RespoolTree();
  readonly tasks = new Map<string, RmTaskEntry>();
  capacity: ClusterCapacity = { physical: zero(), slack: zero() };
  /** Tasks preempted so far: running ones handed to the job manager to kill, waiting ones sent back. */
  readonly preempted = { running: 0, waiting: 0 };
  /** Tasks moved off hosts going into maintenance. */
  drained = 0;

  readonly #handoff: PlacementHandoff;
  readonly #preempting = new Fifo<{ deadlineMs: number; entry: RmTaskEntry; sinceMs: number }>();
  readonly #admitted: QueuedGang[] = [];
  readonly #api: RespoolApi;
  readonly #preemptedCounter: Counter;
  #entitlementGeneration = -1;
  #timers: number[] = [];
  /**
   * Tasks that ended while unknown here (a new leader hears the end of a task before the job manager's
   * `track-tasks` for it arrives): a late track must not allocate them again. Oldest forgotten first.
   */
  readonly #endedUnknown = new Set<string>();

  constructor(private readonly deps: ResmgrDeps, readonly config: ResmgrConfig = DEFAULT_RESMGR_CONFIG) {
    this.#api = new RespoolApi(this, deps);
    this.#handoff = new PlacementHandoff(deps, config, this.tasks);
    this.#preemptedCounter = deps.metrics.counter("resmgr_preempted_tasks");
  }

  /** Rebuilds the pool tree from the store's records (before `start`). */
  recover(pools: RespoolRecord[]): void {
    this.tree.load(pools);
  }

  start(): void {
    this.#requestCapacity();
    this.#every(this.config.schedulingPeriodMs, () => this.schedule());
    this.#every(this.config.entitlementPeriodMs, () => this.#requestCapacity());
    if (this.config.preemption.enabled) this.#every(this.config.preemption.periodMs, () => this.preempt());
  }

  stop(): void {
    for (const t of this.#timers) this.deps.clock.cancelTimer(t);
    this.#timers = [];
  }

  receive(msg: Message): void {
    switch (msg.kind) {
      case "enqueue-gangs":
        return this.#enqueue(msg.gangs, msg.owner);
      case "dequeue-gangs":
        return this.#handoff.dequeue(msg.reqId, msg.replyTo, msg.limit, msg.timeoutMs);
      case "set-placements":
        return this.#handoff.setPlacements(msg.placements, msg.failed);
      case "get-placements":
        return this.#handoff.getPlacements(msg.reqId, msg.replyTo, msg.limit, msg.timeoutMs);
      case "task-updates":
        this.#taskUpdates(msg.updates);
        if (msg.ackToken !== undefined) {
          this.deps.transport.send(this.deps.hostmgr, { kind: "statuses-processed", ackToken: msg.ackToken });
        }
        return;
      case "drop-tasks":
        return this.#drop(msg.taskIds);
      case "drain-tasks":
        return this.#drain(msg.taskIds);
      case "track-tasks":
        return this.#track(msg.tasks, msg.owner);
      case "cluster-capacity":
        // Replies to our periodic request and pushes from the host manager when hosts change.
        this.capacity = msg.capacity;
        this.recalculate();
        return;
      case "api":
        return this.#api.handle(msg);
      case "peer-changed":
        return this.#peerGone(msg.role, msg.gone);
    }
  }

  /** A placement engine or job manager process is gone for good (production's separate daemons). */
  #peerGone(role: string, gone: Address | undefined): void {
    if (gone === undefined) return;
    if (role === "placement") {
      this.#handoff.engineGone(gone, this.deps.clock.now());
      this.#handoff.wakeDequeuers();
    } else if (role === "jobmgr") {
      const leaseIds = this.#handoff.ownerGone(gone);
      if (leaseIds.length) this.deps.transport.send(this.deps.hostmgr, { kind: "release-hosts", leaseIds });
    }
  }

  /** Recalculates entitlement when the tree changed; then admits queued gangs pool by pool. */
  schedule(): void {
    const now = this.deps.clock.now();
    if (this.tree.generation !== this.#entitlementGeneration) this.recalculate();
    this.#handoff.expire(now);
    this.#expirePreempting(now);
    const admitted = this.#admitted;
    admitted.length = 0;
    const { dequeueGangLimit: limit, preemption } = this.config;
    for (const pool of this.tree.leaves()) {
      if (!dequeueGangs(pool, limit, preemption.enabled, admitted)) continue;
      for (const gang of admitted) {
        for (const t of gang.tasks) {
          const e = this.tasks.get(t.taskId)!;
          e.gang = gang;
          pool.active.add(e);
          this.#handoff.setState(e, "READY", now);
        }
        this.#handoff.ready(gang);
      }
      admitted.length = 0;
    }
    this.#handoff.wakeDequeuers();
  }

  recalculate(): void {
    this.#entitlementGeneration = this.tree.generation;
    recalculateEntitlement(this.tree, this.capacity);
  }

  /**
   * One preemption period: pools over their entitlement for long enough give back what they hold above
   * it. Running victims go to the job manager to be killed; waiting ones go back to their queue.
   */
  preempt(): void {
    const now = this.deps.clock.now();
    const { sustainedOverAllocationCount } = this.config.preemption;
    for (const pool of poolsDue(this.tree.leaves(), sustainedOverAllocationCount)) {
      for (const e of chooseVictims(pool)) {
        pool.preempted++;
        this.#preemptedCounter.inc();
        if (e.state === "RUNNING") {
          this.preempted.running++;
          // Not reported as a change: the job manager moves the task to PREEMPTING itself when it kills it.
          e.state = "PREEMPTING";
          e.sinceMs = now;
          this.#expectExit(e, now);
          this.#handoff.preempt({ taskId: e.task.taskId, reason: REVOKE }, e.owner);
        } else {
          this.preempted.waiting++;
          if (e.state === "PLACING") e.staleAttempt = e.placementAttempts;
          releaseTask(pool.allocation, e.task);
          pool.active.delete(e);
          const gang = queuedGang({ tasks: [e.task] }, now);
          e.gang = gang;
          pool.enqueue(gang);
          this.#handoff.setState(e, "PENDING", now, REVOKE);
        }
      }
    }
    this.#handoff.flush();
  }

  // -------------------------------------------------------------------------------------------

  #enqueue(gangs: Gang[], owner: Address | undefined): void {
    const now = this.deps.clock.now();
    for (const gang of gangs) {
      if (!gang.tasks.length) continue;
      const pool = this.tree.get(gang.tasks[0].respoolId);
      if (!pool || !pool.isLeaf || pool.isRoot) {
        const reason = `resource pool ${gang.tasks[0].respoolId} is not a leaf pool`;
        for (const t of gang.tasks) this.#handoff.change(t.taskId, "KILLED", now, reason, owner);
        continue;
      }
      for (const t of gang.tasks) {
        const old = this.tasks.get(t.taskId);
        if (old) this.#forget(old);
      }
      const q = queuedGang(gang, now);
      for (const t of q.tasks) {
        const e: RmTaskEntry = {
          task: t,
          state: "PENDING",
          pool,
          sinceMs: now,
          placementAttempts: 0,
          gang: q,
        };
        if (owner !== undefined) e.owner = owner;
        this.tasks.set(t.taskId, e);
      }
      pool.enqueue(q);
    }
  }

  #expectExit(e: RmTaskEntry, now: number): void {
    this.#preempting.push({
      deadlineMs: now + this.config.preemption.preemptingTimeoutMs,
      entry: e,
      sinceMs: now,
    });
  }

  /** Peloton's `preempting_timeout`: a victim still alive is RUNNING again and may be chosen again. */
  #expirePreempting(now: number): void {
    while (this.#preempting.size && this.#preempting.peek()!.deadlineMs <= now) {
      const { entry: e, sinceMs } = this.#preempting.shift()!;
      if (this.tasks.get(e.task.taskId) !== e || e.state !== "PREEMPTING" || e.sinceMs !== sinceMs) continue;
      e.state = "RUNNING";
      e.sinceMs = now;
    }
  }

  #taskUpdates(updates: TaskUpdate[]): void {
    for (const u of updates) {
      const e = this.tasks.get(u.taskId);
      if (!e) {
        if (isTerminalTaskState(u.state)) this.#rememberEnded(u.taskId);
        continue;
      }
      if (isTerminalTaskState(u.state)) {
        this.#forget(e);
        continue;
      }
      // A victim stays PREEMPTING while its kill is under way (Mesos' KILLING reads as RUNNING).
      if (e.state === "PREEMPTING") continue;
      if (e.state !== u.state) {
        e.state = u.state;
        e.sinceMs = u.timeMs;
      }
      if (u.state === "RUNNING" && e.startedMs === undefined) e.startedMs = u.timeMs;
    }
  }

  #track(tasks: { task: RmTask; state: TaskState }[], owner: Address | undefined): void {
    const now = this.deps.clock.now();
    for (const { task, state } of tasks) {
      const pool = this.tree.get(task.respoolId);
      const known = this.tasks.get(task.taskId);
      // Another job manager took the task's job over: what the task's changes are for goes to it now.
      if (known && owner !== undefined) known.owner = owner;
      if (!pool || known || this.#endedUnknown.has(task.taskId)) continue;
      const e: RmTaskEntry = { task, state, pool, sinceMs: now, placementAttempts: 0 };
      if (owner !== undefined) e.owner = owner;
      if (state === "RUNNING" || state === "PREEMPTING") e.startedMs = now;
      // A victim from before the restart gets the same chance to exit before it can be chosen again.
      if (state === "PREEMPTING") this.#expectExit(e, now);
      this.tasks.set(task.taskId, e);
      allocateTask(pool.allocation, task);
      pool.active.add(e);
    }
  }

  #rememberEnded(taskId: string): void {
    this.#endedUnknown.add(taskId);
    if (this.#endedUnknown.size > 100_000) {
      this.#endedUnknown.delete(this.#endedUnknown.values().next().value!);
    }
  }

  #drop(taskIds: string[]): void {
    for (const id of taskIds) {
      const e = this.tasks.get(id);
      if (e) this.#forget(e);
    }
  }

  /**
   * Tasks on a host going into maintenance are preempted with Peloton's HOST_MAINTENANCE reason: the job
   * manager kills them and runs them again elsewhere. Counted apart from entitlement preemptions.
   */
  #drain(taskIds: string[]): void {
    const now = this.deps.clock.now();
    for (const id of taskIds) {
      const e = this.tasks.get(id);
      if (!e || e.state === "PREEMPTING" || isTerminalTaskState(e.state)) continue;
      this.drained++;
      e.state = "PREEMPTING";
      e.sinceMs = now;
      this.#expectExit(e, now);
      this.#handoff.preempt({ taskId: id, reason: "PREEMPTION_REASON_HOST_MAINTENANCE" }, e.owner);
    }
    this.#handoff.flush();
  }

  /** Drops a task: out of its queue if still queued, its allocation released if admitted. */
  #forget(e: RmTaskEntry): void {
    this.tasks.delete(e.task.taskId);
    const pool = e.pool;
    if (pool.active.delete(e)) releaseTask(pool.allocation, e.task);
    else if (e.state === "PENDING" && e.gang) pool.dropQueuedTask(e.gang, e);
  }

  #requestCapacity(): void {
    this.deps.transport.send(this.deps.hostmgr, {
      kind: "get-cluster-capacity",
      reqId: 0,
      replyTo: this.deps.self,
    });
  }

  #every(periodMs: number, fn: () => void): void {
    const tick = () => {
      fn();
      this.#timers[idx] = this.deps.clock.setTimer(periodMs, tick);
    };
    const idx = this.#timers.length;
    this.#timers.push(this.deps.clock.setTimer(periodMs, tick));
  }
}
