/** The resource manager daemon: pool queues, admission, preemption, ready queue and placement hand-off. */
import type { ClusterCapacity, Gang, Message, RmTask, TaskUpdate } from "../messages.ts";
import type { RespoolRecord } from "../model/records.ts";
import { badUnits, fits, zero } from "../model/resources.ts";
import { isTerminalTaskState, TASK_STATES, type TaskState } from "../model/states.ts";
import type { Clock } from "../ports/clock.ts";
import type { Counter, Histogram, Metrics } from "../ports/metrics.ts";
import type { Prng } from "../ports/prng.ts";
import type { Store } from "../ports/store.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";
import { dequeueGangs } from "./admission.ts";
import { allocateTask, releaseTask } from "./allocation.ts";
import { recalculateEntitlement } from "./entitlement_cycle.ts";
import { type HandoffConfig, type HeldByEngines, PlacementHandoff } from "./handoff.ts";
import { chooseVictims, DEFAULT_PREEMPTION_CONFIG, poolsDue, type PreemptionConfig } from "./preemptor.ts";
import { Fifo } from "./queue.ts";
import { RespoolApi } from "./respool_api.ts";
import { DEFAULT_POOL_CLAIM_MS, PoolClaims } from "./pool_claims.ts";
import { inspectTasks, RESMGR_SERVICE } from "./task_inspect.ts";
import { type RespoolNode, RespoolTree } from "./respool_tree.ts";
import { QueuedGang } from "./queued_gang.ts";
import {
  NONE,
  PENDING,
  PLACED,
  PLACING,
  PREEMPTING,
  READY,
  RUNNING,
  stateName,
  TaskTable,
} from "./task_table.ts";

export interface ResmgrConfig extends HandoffConfig {
  /** How often queued gangs are admitted (Peloton's `task_scheduling_period`). */
  schedulingPeriodMs: number;
  entitlementPeriodMs: number;
  /** Gangs admitted per pool per scheduling pass (`dequeueGangLimit`). */
  dequeueGangLimit: number;
  preemption: PreemptionConfig;
  /**
   * How long a job manager's pool lookup for a create keeps the pool from deletion when neither the job's
   * tasks nor a release come (`pool_claims.ts`); default `DEFAULT_POOL_CLAIM_MS`.
   */
  poolClaimMs?: number;
}

export const DEFAULT_RESMGR_CONFIG: ResmgrConfig = {
  schedulingPeriodMs: 100,
  entitlementPeriodMs: 60_000,
  dequeueGangLimit: 1000,
  placementRetryBackoffMs: 1_000,
  placingTimeoutMs: 600_000,
  launchingTimeoutMs: 60_000,
  launchingResends: 3,
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
const QUEUE_DELAY = "peloton_resmgr_queue_delay_seconds";
/** Seconds, from a placement round's time to the hours a task may wait for its pool's entitlement. */
const QUEUE_DELAY_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export class ResourceManager implements Receiver {
  readonly tree = new RespoolTree();
  readonly tasks = new TaskTable();
  /** Leaf pools claimed by jobs being created: busy for DeleteResourcePool until the jobs' tasks come. */
  readonly claims: PoolClaims;
  capacity: ClusterCapacity = { physical: zero(), slack: zero() };
  /** Tasks preempted so far: running ones handed to the job manager to kill, waiting ones sent back. */
  readonly preempted = { running: 0, waiting: 0 };
  /** Tasks moved off hosts going into maintenance. */
  drained = 0;

  readonly #handoff: PlacementHandoff;
  /** Victims waiting to exit, by deadline: each task is in it once, for as long as it is PREEMPTING. */
  readonly #preempting = new Fifo<{ deadlineMs: number; row: number; generation: number }>();
  readonly #admitted: QueuedGang[] = [];
  readonly #api: RespoolApi;
  readonly #preemptedCounter: Counter;
  /** `peloton_resmgr_queue_delay_seconds` by leaf pool, looked up once per pool. */
  readonly #queueDelays = new Map<RespoolNode, { path: string; histogram: Histogram }>();
  #entitlementGeneration = -1;
  #timers: number[] = [];
  /** A capacity request is out, asked at `#capacityAskedAtMs`. */
  #capacityOut = false;
  #capacityAskedAtMs = -1;
  /** A preemption period's check waits for the capacity asked for at its moment (`#preemptTick`). */
  #preemptDue = false;
  /**
   * Tasks that ended while unknown here (a new leader hears the end of a task before the job manager's
   * `track-tasks` for it arrives): a late track must not allocate them again. Oldest forgotten first.
   */
  readonly #endedUnknown = new Set<string>();

  constructor(private readonly deps: ResmgrDeps, readonly config: ResmgrConfig = DEFAULT_RESMGR_CONFIG) {
    this.tree.preemptionEnabled = config.preemption.enabled;
    this.claims = new PoolClaims(config.poolClaimMs ?? DEFAULT_POOL_CLAIM_MS);
    this.#api = new RespoolApi(this, deps);
    this.#handoff = new PlacementHandoff(deps, config, this.tasks);
    this.#preemptedCounter = deps.metrics.counter("resmgr_preempted_tasks");
  }

  /**
   * The histogram of a pool's queue delays: from a task's enqueue to its first RUNNING, as the simulator's
   * `queueDelaySeconds` measures from submit to running (a task run again is enqueued again).
   */
  #queueDelay(pool: RespoolNode): Histogram {
    let h = this.#queueDelays.get(pool);
    // A pool moved or renamed since is labelled by its path now.
    if (h?.path !== pool.path) {
      const labels = { pool: pool.path };
      h = {
        path: pool.path,
        histogram: this.deps.metrics.histogram(QUEUE_DELAY, labels, QUEUE_DELAY_BUCKETS),
      };
      this.#queueDelays.set(pool, h);
    }
    return h.histogram;
  }

  /** Rebuilds the pool tree from the store's records (before `start`). */
  recover(pools: RespoolRecord[]): void {
    this.tree.load(pools);
  }

  start(): void {
    this.#requestCapacity();
    this.#every(this.config.schedulingPeriodMs, () => this.schedule());
    this.#every(this.config.entitlementPeriodMs, () => this.#requestCapacity());
    if (this.config.preemption.enabled) {
      this.#every(this.config.preemption.periodMs, () => this.#preemptTick());
    }
  }

  /**
   * A preemption period. When the entitlement period falls at the same moment, its capacity request is out:
   * the check waits for the answer and runs on the entitlement of this moment, not the period before's, over
   * any transport (in process, the answer comes before the next timer; over HTTP, or in the simulator with
   * its modelled latency, after it). A check whose answer never came (the host manager away) is made at the
   * next period, on what the pools have.
   */
  #preemptTick(): void {
    if (this.#preemptDue) this.preempt();
    this.#preemptDue = this.#capacityOut && this.#capacityAskedAtMs === this.deps.clock.now();
    if (!this.#preemptDue) this.preempt();
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
        if (msg.pending) this.#handoff.stillPlacing(msg.pending);
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
      case "name-pool-claim":
        return this.claims.name(msg.key, msg.jobId, this.deps.clock.now());
      case "release-pool-claim":
        return this.claims.release(msg.key);
      case "drain-tasks":
        return this.#drain(msg.taskIds);
      case "drains-held":
        return this.#drainsHeld(msg.taskIds);
      case "track-tasks":
        return this.#track(msg.tasks, msg.owner);
      case "cluster-capacity":
        // Replies to our periodic request and pushes from the host manager when hosts change.
        if (msg.roomFreed || !fits(msg.capacity.physical, this.capacity.physical)) this.#handoff.roomFreed();
        this.capacity = msg.capacity;
        this.#capacityOut = false;
        this.recalculate();
        if (this.#preemptDue) {
          this.#preemptDue = false;
          this.preempt();
        }
        return;
      case "api":
        if (msg.procedure.startsWith(`${RESMGR_SERVICE}::`)) {
          const res = inspectTasks(this, msg);
          return this.deps.transport.send(msg.replyTo, { kind: "api-reply", reqId: msg.reqId, ...res });
        }
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
        for (const row of gang.rows) {
          pool.active.add(this.tasks, row);
          this.#handoff.setState(row, READY, now);
        }
        this.#handoff.ready(gang);
      }
      admitted.length = 0;
    }
    this.#handoff.wakeDequeuers();
  }

  /**
   * A LAUNCHING task whose placement was handed to the job manager for the last time with no status back
   * since (`launchingResends`): the host it was placed on and the times it was handed over; else undefined.
   */
  launchAbandoned(row: number): { hostname: string; sent: number } | undefined {
    return this.#handoff.launchAbandoned(row);
  }

  recalculate(): void {
    this.#entitlementGeneration = this.tree.generation;
    recalculateEntitlement(this.tree, this.capacity);
  }

  /**
   * One preemption period: pools over their entitlement for long enough give back what they hold above
   * it. Running victims go to the job manager to be killed; waiting ones go back to their queue. A gang's
   * members are victims together (`ranker.ts`): those launched or placed are killed with the running ones
   * (a placed one once its placement is handed over), and those waiting go back to the queue as one gang.
   */
  preempt(): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    const { sustainedOverAllocationCount } = this.config.preemption;
    for (const pool of poolsDue(this.tree.leaves(), sustainedOverAllocationCount)) {
      /** Waiting victims by their pool and gang (a task alone by its row), queued again together. */
      const waiting = new Map<RespoolNode, Map<unknown, number[]>>();
      for (const row of chooseVictims(pool, t)) {
        const own = t.pool[row]!, state = t.state[row];
        own.preempted++;
        this.#preemptedCounter.inc();
        if (state === READY || state === PLACING) {
          this.preempted.waiting++;
          if (state === PLACING) t.staleAttempt[row] = t.attempts[row];
          releaseTask(own.allocation, t.resources[row]!, t.flags[row]);
          own.active.delete(t, row);
          let byGang = waiting.get(own);
          if (!byGang) waiting.set(own, byGang = new Map());
          const key = t.gangOf(row) ?? row;
          const rows = byGang.get(key);
          if (rows) rows.push(row);
          else byGang.set(key, [row]);
          this.#handoff.setState(row, PENDING, now, REVOKE);
        } else {
          this.preempted.running++;
          // Not reported as a change: the job manager moves the task to PREEMPTING itself when it kills it.
          t.state[row] = PREEMPTING;
          this.#expectExit(row, now);
          this.#handoff.preempt({ taskId: t.taskId[row], reason: REVOKE }, t.owner(row), state === PLACED);
        }
      }
      for (const [own, byGang] of waiting) {
        for (const rows of byGang.values()) own.enqueue(new QueuedGang(t, rows));
      }
    }
    this.#handoff.flush();
  }

  // -------------------------------------------------------------------------------------------

  #enqueue(gangs: Gang[], owner: Address | undefined): void {
    const now = this.deps.clock.now();
    let held: HeldByEngines | undefined;
    for (const gang of gangs) {
      if (!gang.tasks.length) continue;
      // The job's tasks keep its pool busy from now on (or are refused): its create's claim is done.
      if (this.claims.size) this.claims.releaseJob(gang.tasks[0].jobId);
      const pool = this.tree.get(gang.tasks[0].respoolId);
      if (!pool || !pool.isLeaf || pool.isRoot) {
        const id = gang.tasks[0].respoolId;
        // A job keeps the id of a pool deleted since: say it is gone, not that it has children.
        const reason = pool
          ? `resource pool ${id} is not a leaf pool`
          : `resource pool ${id} does not exist (deleted?)`;
        for (const t of gang.tasks) this.#handoff.change(t.taskId, "KILLED", now, reason, owner);
        continue;
      }
      // Defence in depth: the config's schema bounds amounts, but a task from elsewhere (an older job
      // manager, a hand-made message) whose resources are not whole units would make the pool's demand NaN
      // and stop its admission. The whole gang is refused, as gangs are all or nothing.
      const bad = gang.tasks.find((t) => badUnits(t.resources) !== undefined);
      if (bad) {
        const key = badUnits(bad.resources)!;
        const reason = `task ${bad.taskId}: resources.${key}: got ${bad.resources[key]}, expected a whole ` +
          `number of units from 0 to ${Number.MAX_SAFE_INTEGER}`;
        for (const t of gang.tasks) this.#handoff.change(t.taskId, "KILLED", now, reason, owner);
        continue;
      }
      const rows: number[] = [];
      for (const task of gang.tasks) {
        // Sent again (a job manager recovering): the new copy replaces the old; twice in a gang is once.
        const old = this.tasks.rowOf(task.taskId);
        if (old !== NONE) {
          if (rows.includes(old)) continue;
          held = this.#noteHeld(old, held);
          this.#forget(old);
        }
        const row = this.tasks.add(task, pool, PENDING, owner);
        this.tasks.enqueuedMs[row] = now;
        rows.push(row);
      }
      pool.enqueue(new QueuedGang(this.tasks, rows));
    }
    if (held) this.#handoff.takeBack(held);
  }

  #expectExit(row: number, now: number): void {
    const deadlineMs = now + this.config.preemption.preemptingTimeoutMs;
    this.#preempting.push({ deadlineMs, row, generation: this.tasks.generation[row] });
  }

  /**
   * Peloton's `preempting_timeout`: a victim still alive is RUNNING again and may be chosen again. Nothing
   * but this moves a live task out of PREEMPTING, so the task's one item here is its current one.
   */
  #expirePreempting(now: number): void {
    while (this.#preempting.size && this.#preempting.peek()!.deadlineMs <= now) {
      const { row, generation } = this.#preempting.shift()!;
      if (this.tasks.holds(row, generation) && this.tasks.state[row] === PREEMPTING) {
        this.tasks.state[row] = RUNNING;
      }
    }
  }

  #taskUpdates(updates: TaskUpdate[]): void {
    const t = this.tasks;
    let ended = false;
    for (const u of updates) {
      const row = t.rowOf(u.taskId);
      if (row === NONE) {
        if (isTerminalTaskState(u.state)) this.#rememberEnded(u.taskId);
        continue;
      }
      if (isTerminalTaskState(u.state)) {
        this.#forget(row);
        ended = true;
        continue;
      }
      // A victim stays PREEMPTING while its kill is under way (Mesos' KILLING reads as RUNNING).
      if (t.state[row] === PREEMPTING) continue;
      const state = TASK_STATES[u.state];
      t.state[row] = state;
      if (state === RUNNING && Number.isNaN(t.startedMs[row])) {
        t.startedMs[row] = u.timeMs;
        const enqueued = t.enqueuedMs[row];
        if (!Number.isNaN(enqueued)) {
          this.#queueDelay(t.pool[row]!).observe(Math.max(0, u.timeMs - enqueued) / 1000);
        }
      }
    }
    // Ended tasks left room on their hosts: placement retries what it holds back.
    if (ended) this.#handoff.roomFreed();
  }

  #track(tasks: { task: RmTask; state: TaskState }[], owner: Address | undefined): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    for (const { task, state } of tasks) {
      const pool = this.tree.get(task.respoolId);
      const known = t.rowOf(task.taskId);
      // Another job manager took the task's job over: what the task's changes are for goes to it now.
      if (known !== NONE && owner !== undefined) t.setOwner(known, owner);
      // A task whose resources are not whole units is not accounted (see `#enqueue`).
      if (!pool || known !== NONE || this.#endedUnknown.has(task.taskId)) continue;
      if (badUnits(task.resources) !== undefined) continue;
      const code = TASK_STATES[state];
      const row = t.add(task, pool, code, owner);
      if (code === RUNNING || code === PREEMPTING) t.startedMs[row] = now;
      // Only a task that may go back to a queue needs what placement needs.
      if (code !== PENDING && code !== READY && code !== PLACING) t.task[row] = null;
      // A victim from before the restart gets the same chance to exit before it can be chosen again.
      if (code === PREEMPTING) this.#expectExit(row, now);
      allocateTask(pool.allocation, t.resources[row]!, t.flags[row]);
      pool.active.add(t, row);
    }
  }

  #rememberEnded(taskId: string): void {
    this.#endedUnknown.add(taskId);
    if (this.#endedUnknown.size > 100_000) {
      this.#endedUnknown.delete(this.#endedUnknown.values().next().value!);
    }
  }

  #drop(taskIds: string[]): void {
    let held: HeldByEngines | undefined;
    for (const id of taskIds) {
      const row = this.tasks.rowOf(id);
      if (row === NONE) continue;
      held = this.#noteHeld(row, held);
      this.#forget(row);
    }
    if (held) this.#handoff.takeBack(held);
  }

  /**
   * Notes a task about to be forgotten that a placement engine may hold (PLACING, or an attempt left out
   * when it was preempted back), so the engine can be told to stop placing it: a gang's other members
   * would otherwise wait for it until the engine's deadline.
   */
  #noteHeld(row: number, held: HeldByEngines | undefined): HeldByEngines | undefined {
    const t = this.tasks;
    const placing = t.state[row] === PLACING;
    if (!placing && t.staleAttempt[row] === NONE) return held;
    held ??= new Map();
    held.set(row, {
      taskId: t.taskId[row],
      generation: t.generation[row],
      attempt: placing ? t.attempts[row] : NONE,
      staleAttempt: t.staleAttempt[row],
    });
    return held;
  }

  /**
   * Tasks on a host going into maintenance are preempted with Peloton's HOST_MAINTENANCE reason: the job
   * manager kills them and runs them again elsewhere. Counted apart from entitlement preemptions.
   */
  #drain(taskIds: string[]): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    for (const id of taskIds) {
      const row = t.rowOf(id);
      if (row === NONE || t.state[row] === PREEMPTING || isTerminalTaskState(stateName(t.state[row]))) {
        continue;
      }
      this.drained++;
      t.state[row] = PREEMPTING;
      this.#expectExit(row, now);
      this.#handoff.preempt({ taskId: id, reason: "PREEMPTION_REASON_HOST_MAINTENANCE" }, t.owner(row));
    }
    this.#handoff.flush();
  }

  /** The job manager keeps these drained tasks running for now (their jobs' SLA): asked again later. */
  #drainsHeld(taskIds: string[]): void {
    const t = this.tasks;
    for (const id of taskIds) {
      const row = t.rowOf(id);
      if (row !== NONE && t.state[row] === PREEMPTING) t.state[row] = RUNNING;
    }
  }

  /** Drops a task: out of its queue if still queued, its allocation released if admitted. */
  #forget(row: number): void {
    const t = this.tasks;
    const pool = t.pool[row]!, gang = t.gang[row];
    if (pool.active.delete(t, row)) releaseTask(pool.allocation, t.resources[row]!, t.flags[row]);
    else if (t.state[row] === PENDING && gang) pool.dropQueuedTask(gang, row);
    t.remove(row);
  }

  #requestCapacity(): void {
    this.#capacityOut = true;
    this.#capacityAskedAtMs = this.deps.clock.now();
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
