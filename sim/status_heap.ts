/** Task statuses the simulated cluster has yet to send, ordered by (time, sequence), in typed columns. */
import { popNumber, pushNumber } from "./number_heap.ts";
import { grownColumn as grow } from "../core/model/columns.ts";

/** Fields a status carries beyond its task and state (health results, kills, unknown tasks). */
export interface StatusExtra {
  reason?: string;
  message?: string;
  exitCode?: number;
  healthy?: boolean;
  /** For tasks the cluster does not know (no task slot): the id to report on. */
  taskId?: string;
}

/** Statuses in push order, as a list threaded through the `next` column. */
class Bucket {
  head = NONE;
  tail = NONE;
}

const NONE = -1;

/**
 * Pending statuses in two tiers of first-in first-out lists. Statuses due before `#horizon` sit in one
 * list per exact time, the times in a small min-heap; later ones wait in one list per second and move
 * to their times' lists when their second comes. Pushes come in sequence order, so each list is in
 * sequence order and the earliest time's first status is always the next by (time, sequence): a push or
 * pop is O(1) apart from the heap of distinct times, which status batching keeps to a handful.
 *
 * A status is a row of typed columns (time, task slot, state code, generation) rather than an object:
 * rows are reused, so a million pending task ends cost the collector nothing. A status tied to a task
 * slot applies only while the slot's generation is unchanged. `popDue` leaves the status it took in
 * `task`, `state`, `generation` and `extra`.
 */
export class StatusHeap {
  #time = new Float64Array(1024);
  #task = new Int32Array(1024);
  #state = new Uint8Array(1024);
  #gen = new Int32Array(1024);
  /** The next row of the same list. */
  #next = new Int32Array(1024);
  /** Mostly null: reasons and messages of health results, kills and failures. */
  #extra: (StatusExtra | null)[] = [];
  /** Rows never used yet start at `#rows`; freed ones wait in `#free`. */
  #rows = 0;
  #free = new Int32Array(1024);
  #freeCount = 0;
  /** Every status in `#byTime` is due before this time; every one in `#bySecond` at or after it. */
  #horizon = 0;
  readonly #byTime = new Map<number, Bucket>();
  /** Times of `#byTime`, as a min-heap. */
  readonly #times: number[] = [];
  readonly #bySecond = new Map<number, Bucket>();
  /** Seconds of `#bySecond`, as a min-heap. */
  readonly #seconds: number[] = [];
  /** The list a push went to last, as pushes come in runs of one time (NaN: none). */
  #lastTime = NaN;
  #lastList = new Bucket();
  readonly #spare: Bucket[] = [];
  #size = 0;

  /** The status `popDue` took last. */
  task = NONE;
  state = 0;
  generation = 0;
  extra: StatusExtra | null = null;

  get size(): number {
    return this.#size;
  }

  /** Time of the earliest status, or Infinity. */
  peekTime(): number {
    if (!this.#times.length && !this.#loadNext()) return Infinity;
    return this.#times[0];
  }

  /** Queues a status; `task` is a slot number or -1 (then `extra.taskId` names the task). */
  push(time: number, task: number, state: number, generation: number, extra: StatusExtra | null): void {
    const row = this.#row();
    this.#time[row] = time;
    this.#task[row] = task;
    this.#state[row] = state;
    this.#gen[row] = generation;
    this.#extra[row] = extra;
    this.#size++;
    if (time < this.#horizon) this.#append(this.#listAt(time), row);
    else {
      const second = Math.floor(time / 1000);
      let list = this.#bySecond.get(second);
      if (!list) {
        this.#bySecond.set(second, list = this.#newList());
        pushNumber(this.#seconds, second);
      }
      this.#append(list, row);
    }
  }

  /** Takes the earliest status if it is due by `time` (into `task`, `state`, ...); false if none is. */
  popDue(time: number): boolean {
    if (!this.#times.length && !this.#loadNext()) return false;
    const at = this.#times[0];
    if (at > time) return false;
    const list = at === this.#lastTime ? this.#lastList : this.#byTime.get(at)!;
    const row = list.head;
    list.head = this.#next[row];
    if (list.head === NONE) {
      this.#byTime.delete(at);
      popNumber(this.#times);
      this.#spare.push(list);
      if (at === this.#lastTime) this.#lastTime = NaN;
    }
    this.#size--;
    this.task = this.#task[row];
    this.state = this.#state[row];
    this.generation = this.#gen[row];
    this.extra = this.#extra[row];
    this.#extra[row] = null;
    if (this.#freeCount === this.#free.length) this.#free = grow(this.#free);
    this.#free[this.#freeCount++] = row;
    return true;
  }

  /** Calls `f` with each status not taken yet, in no particular order. */
  forEach(f: (task: number, state: number, generation: number, extra: StatusExtra | null) => void): void {
    for (const lists of [this.#byTime, this.#bySecond]) {
      for (const list of lists.values()) {
        for (let row = list.head; row !== NONE; row = this.#next[row]) {
          f(this.#task[row], this.#state[row], this.#gen[row], this.#extra[row]);
        }
      }
    }
  }

  /** The list of statuses due at `time` (before the horizon), made if there is none. */
  #listAt(time: number): Bucket {
    if (time === this.#lastTime) return this.#lastList;
    let list = this.#byTime.get(time);
    if (!list) {
      this.#byTime.set(time, list = this.#newList());
      pushNumber(this.#times, time);
    }
    this.#lastTime = time;
    this.#lastList = list;
    return list;
  }

  /** Moves the earliest second's statuses to their times' lists (none are left); false when there is none. */
  #loadNext(): boolean {
    if (!this.#seconds.length) return false;
    const second = popNumber(this.#seconds);
    const list = this.#bySecond.get(second)!;
    this.#bySecond.delete(second);
    this.#horizon = (second + 1) * 1000;
    // In sequence order, and every later push comes after: each time's list stays in sequence order.
    for (let row = list.head; row !== NONE;) {
      const next = this.#next[row];
      this.#append(this.#listAt(this.#time[row]), row);
      row = next;
    }
    this.#spare.push(list);
    return true;
  }

  #append(list: Bucket, row: number): void {
    this.#next[row] = NONE;
    if (list.head === NONE) list.head = row;
    else this.#next[list.tail] = row;
    list.tail = row;
  }

  #newList(): Bucket {
    const list = this.#spare.pop() ?? new Bucket();
    list.head = list.tail = NONE;
    return list;
  }

  #row(): number {
    if (this.#freeCount) return this.#free[--this.#freeCount];
    if (this.#rows === this.#time.length) {
      this.#time = grow(this.#time);
      this.#task = grow(this.#task);
      this.#state = grow(this.#state);
      this.#gen = grow(this.#gen);
      this.#next = grow(this.#next);
    }
    return this.#rows++;
  }
}
