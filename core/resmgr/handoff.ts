/** The resource manager's outbound side: ready gangs to placement, placements and changes to the job manager. */
import type {
  Gang,
  HostPlacement,
  PlacementFailure,
  PlacementPending,
  Preemption,
  RmStateChange,
  RmTask,
} from "../messages.ts";
import type { TaskState } from "../model/states.ts";
import type { Clock } from "../ports/clock.ts";
import type { Address, Transport } from "../ports/transport.ts";
import { LongPolls, type Waiter } from "./long_poll.ts";
import { Fifo } from "./queue.ts";
import { QueuedGang } from "./queued_gang.ts";
import { LAUNCHING, NONE, PLACED, PLACING, READY, stateName, type TaskTable } from "./task_table.ts";

export interface HandoffConfig {
  /** Delay before a task whose placement failed is offered to placement again. */
  placementRetryBackoffMs: number;
  /** PLACING tasks whose engine never answered go back to READY after this. */
  placingTimeoutMs: number;
  /**
   * A placement handed to a job manager whose tasks are still LAUNCHING after this (no status came from
   * the host manager) is handed over again, up to `launchingResends` times: the reply carrying it may have
   * been lost (Peloton's `launching_timeout`). A job manager that launched the tasks skips them.
   */
  launchingTimeoutMs: number;
  launchingResends: number;
}

/**
 * What waits for one job manager: placements, state changes and preemptions of the tasks it drives. With
 * one job manager (the simulator, `peloton up`) tasks have no owner and everything waits in one outbox.
 */
interface Outbox {
  placed: Fifo<HostPlacement>;
  changes: RmStateChange[];
  preemptions: Preemption[];
}

function newOutbox(): Outbox {
  return { placed: new Fifo(), changes: [], preemptions: [] };
}

function hasNews(o: Outbox | undefined): boolean {
  return o !== undefined && (o.placed.size > 0 || o.changes.length > 0 || o.preemptions.length > 0);
}

/** A placement handed to a job manager, kept until its tasks leave LAUNCHING or it was sent enough times. */
interface Launching {
  deadlineMs: number;
  placement: HostPlacement;
  rows: number[];
  generations: number[];
  /** Times handed over so far. */
  sent: number;
  /** The job manager it was last handed to. */
  to: Address;
}

/** One dequeue to placement: the tasks and the attempt each was on, so a timeout hits only that attempt. */
interface PlacingBatch {
  deadlineMs: number;
  /** Task rows, with their generations then: a row freed since holds another task or none. */
  rows: number[];
  generations: number[];
  attempts: number[];
  /** The engine that dequeued them. */
  engine: Address;
}

/**
 * Tasks being forgotten that a placement engine may still hold, by row, as they were: the attempt out with
 * an engine (NONE when not PLACING) and the attempt left out when the task was preempted back (or NONE).
 */
export type HeldByEngines = Map<
  number,
  { taskId: string; generation: number; attempt: number; staleAttempt: number }
>;

export class PlacementHandoff {
  readonly #ready = new Fifo<QueuedGang>();
  /** Gangs whose placement failed, waiting out their backoff before going back to `#ready`. */
  readonly #retry = new Fifo<QueuedGang>();
  readonly #placing = new Fifo<PlacingBatch>();
  readonly #launching = new Fifo<Launching>();
  /** Placements handed over again, with how many times they were sent before (gone with the placement). */
  readonly #resent = new WeakMap<HostPlacement, number>();
  /**
   * Tasks still LAUNCHING when their placement was handed over for the last time, by row: nothing here
   * moves them on, only a status from the host manager or an end from the job manager. A row freed or
   * moved on since no longer matches, and is pruned when more are added.
   */
  readonly #abandoned = new Map<number, { generation: number; hostname: string; sent: number }>();
  /**
   * Preemptions of PLACED tasks (a preempted gang's), by task id: each goes out with the task's placement,
   * in the same reply, since the job manager launches a reply's placements before it preempts and skips
   * the preemption of a task it has not launched.
   */
  readonly #withPlacement = new Map<string, Preemption>();
  /** Tasks without an owner. */
  readonly #shared = newOutbox();
  /** Per owning job manager, created on first use. */
  readonly #owned = new Map<Address, Outbox>();
  readonly #dequeues: LongPolls;
  readonly #placementPolls: LongPolls;
  /** Grows when room may have appeared; sent with every dequeue so engines retry what lacked room. */
  #roomEpoch = 0;
  readonly #hasReady = () => this.#ready.size > 0;
  readonly #hasNews = (w: Waiter) => hasNews(this.#shared) || hasNews(this.#owned.get(w.replyTo));

  constructor(
    private readonly deps: { clock: Clock; transport: Transport },
    private readonly config: HandoffConfig,
    private readonly tasks: TaskTable,
  ) {
    this.#dequeues = new LongPolls(deps.clock, (w) => this.#replyGangs(w));
    this.#placementPolls = new LongPolls(deps.clock, (w) => this.#replyPlacements(w));
  }

  /** A placement engine's `dequeue-gangs`. */
  dequeue(reqId: number, replyTo: Address, limit: number, timeoutMs: number): void {
    this.#dequeues.request(reqId, replyTo, limit, timeoutMs, this.#hasReady());
  }

  /** The job manager's `get-placements`. */
  getPlacements(reqId: number, replyTo: Address, limit: number, timeoutMs: number): void {
    const ready = hasNews(this.#shared) || hasNews(this.#owned.get(replyTo));
    this.#placementPolls.request(reqId, replyTo, limit, timeoutMs, ready);
  }

  /** Moves a task to `state` (a code of `TASK_STATES`) and reports the change to the job manager. */
  setState(row: number, state: number, now: number, reason?: string): void {
    const t = this.tasks;
    t.state[row] = state;
    this.change(t.taskId[row], stateName(state), now, reason, t.owner(row));
  }

  change(taskId: string, state: TaskState, timeMs: number, reason?: string, owner?: Address): void {
    this.#outbox(owner).changes.push(reason ? { taskId, state, timeMs, reason } : { taskId, state, timeMs });
  }

  /** An admitted gang, READY for placement. */
  ready(gang: QueuedGang): void {
    this.#ready.push(gang);
  }

  /**
   * A running task the job manager is to kill and, for a batch task, run again. `placed`: the task is
   * PLACED, its placement not yet handed over: the preemption goes with it.
   */
  preempt(p: Preemption, owner?: Address, placed = false): void {
    if (placed) this.#withPlacement.set(p.taskId, p);
    else this.#outbox(owner).preemptions.push(p);
  }

  /** Before admission in each scheduling pass: placing timeouts, and retries whose backoff is over. */
  expire(now: number): void {
    this.#expirePlacing(now);
    this.#expireLaunching(now);
    while (this.#retry.size && this.#retry.peek()!.notBeforeMs <= now) this.#ready.push(this.#retry.shift()!);
  }

  /** After admission: parked dequeues get the READY gangs. */
  wakeDequeuers(): void {
    this.#dequeues.wake(this.#hasReady);
  }

  /** Answers a parked `get-placements` now, e.g. with preemptions that should not wait for a placement. */
  flush(): void {
    this.#placementPolls.wake(this.#hasNews);
  }

  setPlacements(placements: HostPlacement[], failed: PlacementFailure[]): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    for (const p of placements) {
      let kept: HostPlacement["tasks"] | undefined;
      let owner: Address | undefined, mixed = false;
      for (let i = 0; i < p.tasks.length; i++) {
        const row = t.rowOf(p.tasks[i].taskId);
        // Killed tasks still travel with their placement: the job manager skips them and the host
        // manager gets the lease back with the launch. A task whose attempt this is not is taken out.
        const current = row === NONE || answers(t, row);
        if (!current && !kept) kept = p.tasks.slice(0, i);
        else if (current && kept) kept.push(p.tasks[i]);
        if (!current || row === NONE) continue;
        this.setState(row, PLACED, now);
        // Never queued again: a failed launch comes back as a new run with a new task id.
        t.task[row] = null;
        const o = t.owner(row);
        if (o !== undefined) {
          if (owner === undefined) owner = o;
          else if (o !== owner) mixed = true;
        }
      }
      const out = kept ? { ...p, tasks: kept } : p;
      if (mixed) this.#split(out);
      else this.#outbox(owner).placed.push(out);
    }
    const retry: number[] = [];
    for (const f of failed) {
      const row = t.rowOf(f.taskId);
      if (row === NONE || !answers(t, row)) continue;
      t.setLastFailure(row, f.reason);
      retry.push(row);
    }
    this.#retryLater(retry, now);
    // State changes alone ride along with the next placements; they do not end a long poll early.
    if (placements.length) this.#placementPolls.wake(this.#hasNews);
  }

  /**
   * Tasks an engine still holds and keeps trying, with why their latest round failed: kept as the task's
   * last failure and shown to the job manager at once, so `task list` says why a task is still PLACING.
   */
  stillPlacing(pending: PlacementPending[]): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    for (const { reason, taskIds } of pending) {
      for (const id of taskIds) {
        const row = t.rowOf(id);
        // Only the current attempt speaks for the task (a stale one is dropped by its final answer).
        if (row === NONE || t.state[row] !== PLACING || t.staleAttempt[row] !== NONE) continue;
        t.setLastFailure(row, reason);
        this.change(id, "PLACING", now, reason, t.owner(row));
      }
    }
  }

  /** Room may have appeared: tasks ended, or the cluster can hold more than before (a host joined or came back). */
  roomFreed(): void {
    this.#roomEpoch++;
  }

  /** A lease whose tasks several job managers drive: one part each, all launching with the same lease. */
  #split(p: HostPlacement): void {
    const parts = new Map<Address | undefined, HostPlacement["tasks"]>();
    let first: Address | undefined;
    for (const t of p.tasks) {
      const row = this.tasks.rowOf(t.taskId);
      const owner = row === NONE ? undefined : this.tasks.owner(row);
      first ??= owner;
      // Tasks that were killed meanwhile have no owner left: they travel with the first part.
      const key = owner ?? first;
      const list = parts.get(key);
      if (list) list.push(t);
      else parts.set(key, [t]);
    }
    for (const [owner, tasks] of parts) this.#outbox(owner).placed.push({ ...p, tasks, parts: parts.size });
  }

  #outbox(owner: Address | undefined): Outbox {
    if (owner === undefined) return this.#shared;
    let o = this.#owned.get(owner);
    if (!o) this.#owned.set(owner, o = newOutbox());
    return o;
  }

  #replyGangs(w: Waiter): void {
    const now = this.deps.clock.now();
    const t = this.tasks;
    const gangs: Gang[] = [];
    const rows: number[] = [], generations: number[] = [], attempts: number[] = [];
    let n = 0;
    while (this.#ready.size && n < w.limit) {
      const gang = this.#ready.shift()!;
      const live: RmTask[] = [];
      for (const row of gang.rows) {
        // A task dropped, preempted or retried since this gang was made is not this gang's any more
        // (nor is a task that took the row of a dropped one: its gang is another).
        if (t.gang[row] !== gang || t.state[row] !== READY) continue;
        const attempt = ++t.attempts[row];
        this.setState(row, PLACING, now);
        // Out of its queue for good: a retry or preemption makes a new gang.
        t.gang[row] = null;
        rows.push(row);
        generations.push(t.generation[row]);
        attempts.push(attempt);
        live.push(t.task[row]!);
      }
      if (!live.length) continue;
      gangs.push({ tasks: live });
      n += live.length;
    }
    if (rows.length) {
      this.#placing.push({
        deadlineMs: now + this.config.placingTimeoutMs,
        rows,
        generations,
        attempts,
        engine: w.replyTo,
      });
    }
    const roomEpoch = this.#roomEpoch;
    this.deps.transport.send(
      w.replyTo,
      roomEpoch
        ? { kind: "gangs", reqId: w.reqId, gangs, roomEpoch }
        : { kind: "gangs", reqId: w.reqId, gangs },
    );
  }

  /** Puts PLACING tasks back to READY behind a backoff, keeping gangs together. */
  #retryLater(rows: number[], now: number): void {
    if (!rows.length) return;
    const t = this.tasks;
    const byGang = new Map<string, number[]>();
    for (const row of rows) {
      const task = t.task[row]!;
      const key = task.minInstances > 1 ? `${task.jobId}/gang` : task.taskId;
      const list = byGang.get(key);
      if (list) list.push(row);
      else byGang.set(key, [row]);
    }
    for (const list of byGang.values()) {
      const g = new QueuedGang(t, list);
      g.notBeforeMs = now + this.config.placementRetryBackoffMs;
      for (const row of list) this.setState(row, READY, now, t.lastFailure(row));
      this.#retry.push(g);
    }
  }

  /**
   * Tasks dropped while placement engines held them: each engine holding one is told (`tasks-dropped`), so
   * it stops placing them at once and hands a gang's other members back. Rare (a task stopped while being
   * placed), so the dequeues still within their placing timeout are searched rather than each dequeued task
   * remembering its engine.
   */
  takeBack(held: HeldByEngines): void {
    const byEngine = new Map<Address, string[]>();
    for (const b of this.#placing) {
      for (let i = 0; i < b.rows.length; i++) {
        const h = held.get(b.rows[i]);
        if (!h || h.generation !== b.generations[i]) continue;
        if (b.attempts[i] !== h.attempt && b.attempts[i] !== h.staleAttempt) continue;
        const ids = byEngine.get(b.engine);
        if (ids) ids.push(h.taskId);
        else byEngine.set(b.engine, [h.taskId]);
      }
    }
    for (const [engine, taskIds] of byEngine) {
      this.deps.transport.send(engine, { kind: "tasks-dropped", taskIds });
    }
  }

  /** A placement engine is gone: what it held goes back to READY now rather than at its placing timeout. */
  engineGone(engine: Address, now: number): void {
    const retry: number[] = [];
    const mine = (b: PlacingBatch) => b.engine === engine;
    for (let b = this.#placing.remove(mine); b; b = this.#placing.remove(mine)) this.#unanswered(b, retry);
    this.#retryLater(retry, now);
  }

  /**
   * A job manager is gone. Its undelivered placements are dropped and their leases returned (its tasks
   * come back with whichever job manager takes its jobs over). Those handed to it whose tasks are still
   * LAUNCHING are handed over again now, with the same lease, rather than at their launching timeout with
   * the hosts leased all the while: to the job manager that took a task over, else to whichever asks first
   * (the job's new owner launches them; another skips them, which returns the lease). One whose tasks all
   * moved on (sent again by the new owner, or ended) returns its lease. Returns the lease ids to release.
   */
  ownerGone(owner: Address): string[] {
    const leases: string[] = [];
    const box = this.#owned.get(owner);
    if (box) {
      this.#owned.delete(owner);
      while (box.placed.size) {
        const p = box.placed.shift()!;
        leases.push(p.leaseId);
        for (const task of p.tasks) this.#withPlacement.delete(task.taskId);
      }
    }
    // Rare: the whole list is walked once, keeping the others in order.
    let again = false;
    for (let n = this.#launching.size; n > 0; n--) {
      const l = this.#launching.shift()!;
      if (l.to !== owner) this.#launching.push(l);
      else if (this.#handOver(l, owner)) again = true;
      else leases.push(l.placement.leaseId);
    }
    if (again) this.#placementPolls.wake(this.#hasNews);
    return leases;
  }

  /**
   * Placements whose tasks are still LAUNCHING at their deadline go to their job manager again, with only
   * those tasks (and the same lease: if it has expired, the launch fails with a LOST status and the job
   * manager runs the task again, as after any failed launch).
   */
  #expireLaunching(now: number): void {
    let again = false;
    while (this.#launching.size && this.#launching.peek()!.deadlineMs <= now) {
      const l = this.#launching.shift()!;
      if (l.sent > this.config.launchingResends) {
        this.#abandon(l.rows, l.generations, l.placement.hostname, l.sent);
      } else if (this.#handOver(l)) again = true;
    }
    if (again) this.#placementPolls.wake(this.#hasNews);
  }

  /**
   * Queues a placement again with those of its tasks still LAUNCHING, for their job manager; false if none
   * is. Tasks whose job manager is `gone` lose it, so the placement waits for any job manager.
   */
  #handOver({ placement, rows, generations, sent }: Launching, gone?: Address): boolean {
    const t = this.tasks;
    const stuck = new Set<string>();
    let owner: Address | undefined;
    for (let i = 0; i < rows.length; i++) {
      if (!t.holds(rows[i], generations[i]) || t.state[rows[i]] !== LAUNCHING) continue;
      if (gone !== undefined && t.owner(rows[i]) === gone) t.clearOwner(rows[i]);
      if (!stuck.size) owner = t.owner(rows[i]);
      stuck.add(t.taskId[rows[i]]);
    }
    if (!stuck.size) return false;
    const p = { ...placement, tasks: placement.tasks.filter((task) => stuck.has(task.taskId)) };
    this.#resent.set(p, sent);
    this.#outbox(owner).placed.push(p);
    return true;
  }

  #abandon(rows: number[], generations: number[], hostname: string, sent: number): void {
    const t = this.tasks;
    if (!rows.some((row, i) => t.holds(row, generations[i]) && t.state[row] === LAUNCHING)) return;
    for (const [row, a] of this.#abandoned) {
      if (!t.holds(row, a.generation) || t.state[row] !== LAUNCHING) this.#abandoned.delete(row);
    }
    for (let i = 0; i < rows.length; i++) {
      if (!t.holds(rows[i], generations[i]) || t.state[rows[i]] !== LAUNCHING) continue;
      this.#abandoned.set(rows[i], { generation: generations[i], hostname, sent });
    }
  }

  /**
   * Whether the task in `row` is still LAUNCHING after its placement was handed over for the last time,
   * with the host it was placed on and how many times it was handed over; undefined if not.
   */
  launchAbandoned(row: number): { hostname: string; sent: number } | undefined {
    const a = this.#abandoned.get(row);
    if (!a || !this.tasks.holds(row, a.generation) || this.tasks.state[row] !== LAUNCHING) return undefined;
    return { hostname: a.hostname, sent: a.sent };
  }

  #expirePlacing(now: number): void {
    const retry: number[] = [];
    while (this.#placing.size && this.#placing.peek()!.deadlineMs <= now) {
      this.#unanswered(this.#placing.shift()!, retry);
    }
    this.#retryLater(retry, now);
  }

  /** A dequeue whose engine will not answer: tasks still on that attempt are to be retried. */
  #unanswered({ rows, generations, attempts }: PlacingBatch, retry: number[]): void {
    const t = this.tasks;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i], attempt = attempts[i];
      if (!t.holds(row, generations[i])) continue;
      // The engine never answered that attempt: stop waiting for its answer.
      if (t.staleAttempt[row] === attempt) t.staleAttempt[row] = NONE;
      else if (t.state[row] === PLACING && t.attempts[row] === attempt) retry.push(row);
    }
  }

  #replyPlacements(w: Waiter): void {
    const t = this.tasks;
    const placements: HostPlacement[] = [];
    const own = this.#owned.get(w.replyTo);
    const now = this.deps.clock.now();
    let n = 0;
    const withPlacements: Preemption[] = [];
    for (const box of own ? [own, this.#shared] : [this.#shared]) {
      while (box.placed.size && n < w.limit) {
        const p = box.placed.shift()!;
        const rows: number[] = [], generations: number[] = [];
        for (const task of p.tasks) {
          if (this.#withPlacement.size) {
            const preemption = this.#withPlacement.get(task.taskId);
            if (preemption) {
              this.#withPlacement.delete(task.taskId);
              withPlacements.push(preemption);
            }
          }
          const row = t.rowOf(task.taskId);
          // The job manager records LAUNCHING itself when it launches; no change to report.
          if (row === NONE || (t.state[row] !== PLACED && t.state[row] !== LAUNCHING)) continue;
          t.state[row] = LAUNCHING;
          rows.push(row);
          generations.push(t.generation[row]);
        }
        if (rows.length && this.config.launchingResends > 0) {
          const sent = (this.#resent.get(p) ?? 0) + 1;
          this.#resent.delete(p);
          this.#launching.push({
            deadlineMs: now + this.config.launchingTimeoutMs,
            placement: p,
            rows,
            generations,
            sent,
            to: w.replyTo,
          });
        }
        placements.push(p);
        n += p.tasks.length;
      }
    }
    let changes = this.#shared.changes;
    this.#shared.changes = [];
    let preemptions = this.#shared.preemptions;
    this.#shared.preemptions = [];
    if (own) {
      changes = changes.length ? changes.concat(own.changes) : own.changes;
      preemptions = preemptions.length ? preemptions.concat(own.preemptions) : own.preemptions;
      own.changes = [];
      own.preemptions = [];
    }
    if (withPlacements.length) preemptions = preemptions.concat(withPlacements);
    this.deps.transport.send(
      w.replyTo,
      preemptions.length
        ? { kind: "placements", reqId: w.reqId, placements, changes, preemptions }
        : { kind: "placements", reqId: w.reqId, placements, changes },
    );
  }
}

/** Whether a placement answer for a task is for its current attempt; the answer to a stale one is used up. */
function answers(t: TaskTable, row: number): boolean {
  if (t.staleAttempt[row] !== NONE) {
    t.staleAttempt[row] = NONE;
    return false;
  }
  return t.state[row] === PLACING;
}
