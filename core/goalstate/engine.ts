/**
 * The goal-state engine (Peloton's `pkg/common/goalstate`): entities with a state and a goal, actions
 * looked up from (state, goal) in a table, run when their deadline passes, retried with backoff.
 */
import type { Clock, TimerId } from "../ports/clock.ts";
import { DeadlineQueue } from "./deadline_queue.ts";

/**
 * An action works on one entity and reports completion once (synchronously or later, e.g. after a
 * store write). An error makes the engine retry the entity with backoff.
 */
export type Action<E> = (entity: E, done: (err?: Error) => void) => void;

/**
 * Rows of a goal-state table: `table[goal][state]` names the actions to run, in order. A missing row
 * means nothing to do. Adding a behaviour is adding a row.
 */
export type ActionTable<G extends string, S extends string, A extends string> = Partial<
  Record<G, Partial<Record<S, readonly A[]>>>
>;

export interface EngineConfig {
  /** Entities evaluated at once (Peloton: 1000 task workers, 50 job workers, 100 update workers). */
  workers: number;
  /** Each failure adds this much to the entity's retry delay (Peloton: 10 s)... */
  failureRetryDelayMs: number;
  /** ...up to this cap (Peloton: 60 min). */
  maxRetryDelayMs: number;
}

export interface EngineHooks<E, A extends string, K = string> {
  /** The entity's identity in the queue: a string, or the entity itself (no key to build on each call). */
  keyOf(entity: E): K;
  /** The actions for an entity now, from its (state, goal) row; empty when it is where it should be. */
  actionsFor(entity: E): readonly A[];
  /** The implementation of each named action. */
  actions: Record<A, Action<E>>;
  /** Called when an action fails (logging, metrics); the engine retries on its own. */
  onError?(entity: E, action: A, err: Error): void;
  /** Called after each batch of evaluations (the job manager sends what its actions queued). */
  afterDispatch?(): void;
}

export class GoalStateEngine<E, A extends string, K = string> {
  readonly #queue = new DeadlineQueue<E, K>();
  readonly #delays = new Map<K, number>();
  readonly #running = new Set<K>();
  /** Entities enqueued again while running: evaluated once more when the current run ends. */
  readonly #again = new Map<K, number>();
  #timer: TimerId | undefined;
  #timerAt = Infinity;
  #stopped = false;
  /** Locked down (AdminService): entities queue up, nothing runs until resumed. */
  #paused = false;
  #dispatching = false;
  /** Evaluations run and actions failed, for metrics and tests. */
  evaluations = 0;
  failures = 0;

  constructor(
    private readonly clock: Clock,
    private readonly config: EngineConfig,
    private readonly hooks: EngineHooks<E, A, K>,
  ) {}

  /** Schedules an evaluation of `entity` at `deadlineMs` (or earlier if already scheduled earlier). */
  enqueue(entity: E, deadlineMs = this.clock.now()): void {
    if (this.#stopped) return;
    const key = this.hooks.keyOf(entity);
    if (this.#running.size && this.#running.has(key)) {
      const prev = this.#again.get(key);
      this.#again.set(key, prev === undefined ? deadlineMs : Math.min(prev, deadlineMs));
      return;
    }
    this.#queue.enqueue(key, entity, deadlineMs);
    this.#arm();
  }

  /** Forgets an entity: it is not evaluated again unless enqueued anew. */
  delete(id: K): void {
    this.#queue.delete(id);
    this.#delays.delete(id);
    this.#again.delete(id);
  }

  isScheduled(id: K): boolean {
    return this.#queue.has(id) || this.#running.has(id);
  }

  get size(): number {
    return this.#queue.size + this.#running.size;
  }

  /** Runs nothing more until `resume`; what is running finishes, what is enqueued waits. */
  pause(): void {
    this.#paused = true;
    if (this.#timer !== undefined) this.clock.cancelTimer(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  resume(): void {
    this.#paused = false;
    this.#arm();
  }

  get paused(): boolean {
    return this.#paused;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.clock.cancelTimer(this.#timer);
    this.#timer = undefined;
  }

  /** Runs every entity whose deadline has passed, up to the worker limit. */
  #dispatch(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.clock.now();
    this.#dispatching = true;
    while (this.#running.size < this.config.workers) {
      const due = this.#queue.popDue(now);
      if (!due) break;
      this.#run(due.item, due.id);
    }
    this.#dispatching = false;
    this.hooks.afterDispatch?.();
    this.#arm();
  }

  #run(entity: E, key: K): void {
    this.evaluations++;
    this.#running.add(key);
    const names = this.hooks.actionsFor(entity);
    let i = 0;
    const next = (err?: Error): void => {
      if (err) return this.#finish(entity, key, names[i - 1], err);
      if (i === names.length) return this.#finish(entity, key);
      const name = names[i++];
      let called = false;
      try {
        this.hooks.actions[name](entity, (e) => {
          if (called) return;
          called = true;
          next(e);
        });
      } catch (e) {
        if (!called) {
          called = true;
          next(e instanceof Error ? e : new Error(String(e)));
        }
      }
    };
    next();
  }

  #finish(entity: E, key: K, failed?: A, err?: Error): void {
    this.#running.delete(key);
    const now = this.clock.now();
    // Most evaluations end with nothing to retry or repeat: skip the lookups then.
    const again = this.#again.size ? this.#again.get(key) : undefined;
    if (again !== undefined) this.#again.delete(key);
    if (err) {
      this.failures++;
      this.hooks.onError?.(entity, failed!, err);
      const delay = Math.min(
        (this.#delays.get(key) ?? 0) + this.config.failureRetryDelayMs,
        this.config.maxRetryDelayMs,
      );
      this.#delays.set(key, delay);
      this.#queue.enqueue(key, entity, Math.min(now + delay, again ?? Infinity));
    } else {
      if (this.#delays.size) this.#delays.delete(key);
      if (again !== undefined) this.#queue.enqueue(key, entity, again);
    }
    this.#arm();
  }

  /** Keeps one timer for the earliest deadline; free workers pick up work as soon as it is due. */
  #arm(): void {
    if (this.#stopped || this.#paused || this.#dispatching) return;
    const at = this.#running.size < this.config.workers ? this.#queue.nextDeadline() : Infinity;
    if (at === Infinity || at >= this.#timerAt) return;
    if (this.#timer !== undefined) this.clock.cancelTimer(this.#timer);
    this.#timerAt = at;
    this.#timer = this.clock.setTimer(Math.max(0, at - this.clock.now()), () => this.#dispatch());
  }
}
