/** A deadline queue (Peloton's `pkg/common/deadline_queue`): items keyed by id, ordered by (deadline, insertion). */

interface Entry<T, K> {
  id: K;
  item: T;
  deadline: number;
  seq: number;
  /** Position in the heap, kept so an item's deadline can move in O(log n). */
  index: number;
}

export class DeadlineQueue<T, K = string> {
  readonly #heap: Entry<T, K>[] = [];
  readonly #byId = new Map<K, Entry<T, K>>();
  #seq = 0;

  get size(): number {
    return this.#heap.length;
  }

  has(id: K): boolean {
    return this.#byId.has(id);
  }

  deadlineOf(id: K): number | undefined {
    return this.#byId.get(id)?.deadline;
  }

  /**
   * Adds an item, or moves an already queued one to the earlier of its two deadlines (Peloton's
   * engine keeps the earliest, so a pending retry never delays a fresh evaluation).
   */
  enqueue(id: K, item: T, deadline: number): void {
    const e = this.#byId.get(id);
    if (e) {
      e.item = item;
      if (deadline < e.deadline) {
        e.deadline = deadline;
        this.#up(e.index);
      }
      return;
    }
    const entry: Entry<T, K> = { id, item, deadline, seq: this.#seq++, index: this.#heap.length };
    this.#heap.push(entry);
    this.#byId.set(id, entry);
    this.#up(entry.index);
  }

  /** The earliest deadline, or Infinity. */
  nextDeadline(): number {
    return this.#heap.length ? this.#heap[0].deadline : Infinity;
  }

  /** Removes and returns the earliest item if its deadline is at or before `now`. */
  popDue(now: number): { id: K; item: T } | undefined {
    const top = this.#heap[0];
    if (!top || top.deadline > now) return undefined;
    this.#removeAt(0);
    return { id: top.id, item: top.item };
  }

  delete(id: K): boolean {
    const e = this.#byId.get(id);
    if (!e) return false;
    this.#removeAt(e.index);
    return true;
  }

  #removeAt(i: number): void {
    const heap = this.#heap;
    const e = heap[i];
    this.#byId.delete(e.id);
    const last = heap.pop()!;
    if (i < heap.length) {
      heap[i] = last;
      last.index = i;
      this.#down(i);
      this.#up(last.index);
    }
  }

  #less(a: Entry<T, K>, b: Entry<T, K>): boolean {
    return a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq);
  }

  #up(i: number): void {
    const heap = this.#heap;
    const e = heap[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(e, heap[p])) break;
      heap[i] = heap[p];
      heap[i].index = i;
      i = p;
    }
    heap[i] = e;
    e.index = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const e = heap[i];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.#less(heap[r], heap[l]) ? r : l;
      if (!this.#less(heap[c], e)) break;
      heap[i] = heap[c];
      heap[i].index = i;
      i = c;
    }
    heap[i] = e;
    e.index = i;
  }
}
