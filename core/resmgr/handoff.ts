/** The resource manager's outbound side: ready gangs to placement, placements and changes to the job manager. */
import type {
  Gang,
  HostPlacement,
  PlacementFailure,
  Preemption,
  RmStateChange,
  RmTask,
} from "../messages.ts";
import type { TaskState } from "../model/states.ts";
import type { Clock } from "../ports/clock.ts";
import type { Address, Transport } from "../ports/transport.ts";
import { LongPolls, type Waiter } from "./long_poll.ts";
import { Fifo } from "./queue.ts";
import { type QueuedGang, queuedGang, type RmTaskEntry } from "./rm_task.ts";

export interface HandoffConfig {
  /** Delay before a task whose placement failed is offered to placement again. */
  placementRetryBackoffMs: number;
  /** PLACING tasks whose engine never answered go back to READY after this. */
  placingTimeoutMs: number;
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

/** One dequeue to placement: the tasks and the attempt each was on, so a timeout hits only that attempt. */
interface PlacingBatch {
  deadlineMs: number;
  entries: RmTaskEntry[];
  attempts: number[];
  /** The engine that dequeued them. */
  engine: Address;
}

export class PlacementHandoff {
  readonly #ready = new Fifo<QueuedGang>();
  /** Gangs whose placement failed, waiting out their backoff before going back to `#ready`. */
  readonly #retry = new Fifo<QueuedGang>();
  readonly #placing = new Fifo<PlacingBatch>();
  /** Tasks without an owner. */
  readonly #shared = newOutbox();
  /** Per owning job manager, created on first use. */
  readonly #owned = new Map<Address, Outbox>();
  readonly #dequeues: LongPolls;
  readonly #placementPolls: LongPolls;
  readonly #hasReady = () => this.#ready.size > 0;
  readonly #hasNews = (w: Waiter) => hasNews(this.#shared) || hasNews(this.#owned.get(w.replyTo));

  constructor(
    private readonly deps: { clock: Clock; transport: Transport },
    private readonly config: HandoffConfig,
    private readonly tasks: ReadonlyMap<string, RmTaskEntry>,
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

  /** Moves a task to `state` and reports the change to the job manager. */
  setState(e: RmTaskEntry, state: TaskState, now: number, reason?: string): void {
    e.state = state;
    e.sinceMs = now;
    this.change(e.task.taskId, state, now, reason, e.owner);
  }

  change(taskId: string, state: TaskState, timeMs: number, reason?: string, owner?: Address): void {
    this.#outbox(owner).changes.push(reason ? { taskId, state, timeMs, reason } : { taskId, state, timeMs });
  }

  /** An admitted gang, READY for placement. */
  ready(gang: QueuedGang): void {
    this.#ready.push(gang);
  }

  /** A running task the job manager is to kill and, for a batch task, run again. */
  preempt(p: Preemption, owner?: Address): void {
    this.#outbox(owner).preemptions.push(p);
  }

  /** Before admission in each scheduling pass: placing timeouts, and retries whose backoff is over. */
  expire(now: number): void {
    this.#expirePlacing(now);
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
    for (const p of placements) {
      let kept: HostPlacement["tasks"] | undefined;
      let owner: Address | undefined, mixed = false;
      for (let i = 0; i < p.tasks.length; i++) {
        const e = this.tasks.get(p.tasks[i].taskId);
        // Killed tasks still travel with their placement: the job manager skips them and the host
        // manager gets the lease back with the launch. A task whose attempt this is not is taken out.
        const current = e === undefined || answers(e);
        if (current && e) this.setState(e, "PLACED", now);
        if (!current && !kept) kept = p.tasks.slice(0, i);
        else if (current && kept) kept.push(p.tasks[i]);
        if (current && e?.owner !== undefined) {
          if (owner === undefined) owner = e.owner;
          else if (e.owner !== owner) mixed = true;
        }
      }
      const out = kept ? { ...p, tasks: kept } : p;
      if (mixed) this.#split(out);
      else this.#outbox(owner).placed.push(out);
    }
    const retry: RmTaskEntry[] = [];
    for (const f of failed) {
      const e = this.tasks.get(f.taskId);
      if (!e || !answers(e)) continue;
      e.lastFailure = f.reason;
      retry.push(e);
    }
    this.#retryLater(retry, now);
    // State changes alone ride along with the next placements; they do not end a long poll early.
    if (placements.length) this.#placementPolls.wake(this.#hasNews);
  }

  /** A lease whose tasks several job managers drive: one part each, all launching with the same lease. */
  #split(p: HostPlacement): void {
    const parts = new Map<Address | undefined, HostPlacement["tasks"]>();
    let first: Address | undefined;
    for (const t of p.tasks) {
      const owner = this.tasks.get(t.taskId)?.owner;
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
    const gangs: Gang[] = [];
    const entries: RmTaskEntry[] = [];
    const attempts: number[] = [];
    let n = 0;
    while (this.#ready.size && n < w.limit) {
      const gang = this.#ready.shift()!;
      const live: RmTask[] = [];
      for (const t of gang.tasks) {
        const e = this.tasks.get(t.taskId);
        // A task dropped, preempted or retried since this gang was made is not this gang's any more.
        if (!e || e.state !== "READY" || e.gang !== gang) continue;
        e.placementAttempts++;
        this.setState(e, "PLACING", now);
        // Out of its queue for good: a retry or preemption makes a new gang. Dropping the old one
        // frees its task list and resource sum for the task's whole run (a million running tasks).
        e.gang = undefined;
        entries.push(e);
        attempts.push(e.placementAttempts);
        live.push(t);
      }
      if (!live.length) continue;
      gangs.push({ tasks: live });
      n += live.length;
    }
    if (entries.length) {
      this.#placing.push({
        deadlineMs: now + this.config.placingTimeoutMs,
        entries,
        attempts,
        engine: w.replyTo,
      });
    }
    this.deps.transport.send(w.replyTo, { kind: "gangs", reqId: w.reqId, gangs });
  }

  /** Puts PLACING tasks back to READY behind a backoff, keeping gangs together. */
  #retryLater(entries: RmTaskEntry[], now: number): void {
    if (!entries.length) return;
    const byGang = new Map<string, RmTaskEntry[]>();
    for (const e of entries) {
      const key = e.task.minInstances > 1 ? `${e.task.jobId}/gang` : e.task.taskId;
      const list = byGang.get(key);
      if (list) list.push(e);
      else byGang.set(key, [e]);
    }
    for (const list of byGang.values()) {
      const g = queuedGang({ tasks: list.map((e) => e.task) }, now);
      g.notBeforeMs = now + this.config.placementRetryBackoffMs;
      for (const e of list) {
        e.gang = g;
        this.setState(e, "READY", now, e.lastFailure);
      }
      this.#retry.push(g);
    }
  }

  /** A placement engine is gone: what it held goes back to READY now rather than at its placing timeout. */
  engineGone(engine: Address, now: number): void {
    const retry: RmTaskEntry[] = [];
    const mine = (b: PlacingBatch) => b.engine === engine;
    for (let b = this.#placing.remove(mine); b; b = this.#placing.remove(mine)) this.#unanswered(b, retry);
    this.#retryLater(retry, now);
  }

  /**
   * A job manager is gone: its undelivered placements are dropped and their leases returned (its tasks
   * come back with whichever job manager takes its jobs over). Returns the lease ids.
   */
  ownerGone(owner: Address): string[] {
    const box = this.#owned.get(owner);
    if (!box) return [];
    this.#owned.delete(owner);
    const leases: string[] = [];
    while (box.placed.size) leases.push(box.placed.shift()!.leaseId);
    return leases;
  }

  #expirePlacing(now: number): void {
    const retry: RmTaskEntry[] = [];
    while (this.#placing.size && this.#placing.peek()!.deadlineMs <= now) {
      this.#unanswered(this.#placing.shift()!, retry);
    }
    this.#retryLater(retry, now);
  }

  /** A dequeue whose engine will not answer: tasks still on that attempt are to be retried. */
  #unanswered({ entries, attempts }: PlacingBatch, retry: RmTaskEntry[]): void {
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i], attempt = attempts[i];
      if (this.tasks.get(e.task.taskId) !== e) continue;
      // The engine never answered that attempt: stop waiting for its answer.
      if (e.staleAttempt === attempt) e.staleAttempt = undefined;
      else if (e.state === "PLACING" && e.placementAttempts === attempt) retry.push(e);
    }
  }

  #replyPlacements(w: Waiter): void {
    const now = this.deps.clock.now();
    const placements: HostPlacement[] = [];
    const own = this.#owned.get(w.replyTo);
    let n = 0;
    for (const box of own ? [own, this.#shared] : [this.#shared]) {
      while (box.placed.size && n < w.limit) {
        const p = box.placed.shift()!;
        for (const t of p.tasks) {
          const e = this.tasks.get(t.taskId);
          // The job manager records LAUNCHING itself when it launches; no change to report.
          if (e && e.state === "PLACED") {
            e.state = "LAUNCHING";
            e.sinceMs = now;
          }
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
    this.deps.transport.send(
      w.replyTo,
      preemptions.length
        ? { kind: "placements", reqId: w.reqId, placements, changes, preemptions }
        : { kind: "placements", reqId: w.reqId, placements, changes },
    );
  }
}

/** Whether a placement answer for `e` is for its current attempt; the answer to a stale one is used up. */
function answers(e: RmTaskEntry): boolean {
  if (e.staleAttempt !== undefined) {
    e.staleAttempt = undefined;
    return false;
  }
  return e.state === "PLACING";
}
