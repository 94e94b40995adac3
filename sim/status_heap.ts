/** Task statuses the simulated cluster has yet to send, in a min-heap ordered by (time, sequence). */
import type { MesosTaskState } from "../core/model/states.ts";

/** Fields a status carries beyond its task and state (health results, kills, unknown tasks). */
export interface StatusExtra {
  reason?: string;
  message?: string;
  exitCode?: number;
  healthy?: boolean;
  /** For tasks the cluster does not know (no task object): the id to report on. */
  taskId?: string;
}

/**
 * One status due at `time`. A status tied to a task run applies only while the run's generation is
 * unchanged (a kill or a lost host bumps it). One small object per status: with a million tasks
 * running, each holds one of these for its end.
 */
export class PendingStatus<T> {
  constructor(
    public time: number,
    public seq: number,
    public task: T | null,
    public state: MesosTaskState,
    public generation: number,
    public extra: StatusExtra | null,
  ) {}
}

/**
 * Statuses due before `#horizon` are in the heap; later ones wait in per-second buckets and join the
 * heap when their second comes. The heap stays small (a few seconds of statuses) even with a million
 * task ends pending, which keeps its sift-downs in cache.
 */
export class StatusHeap<T> {
  #heap: PendingStatus<T>[] = [];
  #seq = 0;
  /** Every status in the heap is due before this time; every bucketed one at or after it. */
  #horizon = 0;
  readonly #buckets = new Map<number, PendingStatus<T>[]>();
  /** Bucket seconds, as a min-heap. */
  readonly #seconds: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Time of the earliest status, or Infinity. */
  peekTime(): number {
    if (!this.#heap.length && !this.#loadNext()) return Infinity;
    return this.#heap[0].time;
  }

  push(
    time: number,
    task: T | null,
    state: MesosTaskState,
    generation: number,
    extra: StatusExtra | null,
  ): void {
    const p = new PendingStatus(time, this.#seq++, task, state, generation, extra);
    this.#size++;
    if (time < this.#horizon) return this.#heapPush(p);
    const second = Math.floor(time / 1000);
    const bucket = this.#buckets.get(second);
    if (bucket) bucket.push(p);
    else {
      this.#buckets.set(second, [p]);
      pushNumber(this.#seconds, second);
    }
  }

  /** Removes and returns the earliest status if it is due by `time`. */
  popDue(time: number): PendingStatus<T> | undefined {
    if (!this.#heap.length && !this.#loadNext()) return undefined;
    const heap = this.#heap;
    if (heap[0].time > time) return undefined;
    this.#size--;
    const top = heap[0];
    const last = heap.pop()!;
    const n = heap.length;
    if (n) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && before(heap[r], heap[l]) ? r : l;
        if (before(last, heap[c])) break;
        heap[i] = heap[c];
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }

  /** Moves the earliest bucket into the (empty) heap; false when there is none. */
  #loadNext(): boolean {
    if (!this.#seconds.length) return false;
    const second = popNumber(this.#seconds);
    const bucket = this.#buckets.get(second)!;
    this.#buckets.delete(second);
    this.#horizon = (second + 1) * 1000;
    for (const p of bucket) this.#heapPush(p);
    return true;
  }

  #heapPush(p: PendingStatus<T>): void {
    const heap = this.#heap;
    heap.push(p);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (before(heap[parent], p)) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = p;
  }
}

function pushNumber(heap: number[], x: number): void {
  heap.push(x);
  let i = heap.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (heap[p] <= x) break;
    heap[i] = heap[p];
    i = p;
  }
  heap[i] = x;
}

function popNumber(heap: number[]): number {
  const top = heap[0];
  const last = heap.pop()!;
  const n = heap.length;
  if (n) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const c = l + 1 < n && heap[l + 1] < heap[l] ? l + 1 : l;
      if (last <= heap[c]) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = last;
  }
  return top;
}

function before<T>(a: PendingStatus<T>, b: PendingStatus<T>): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
