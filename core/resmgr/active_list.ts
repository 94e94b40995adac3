/** A pool's admitted tasks in admission order: what the preemption ranker chooses from. */
import { NONE, type TaskTable } from "./task_table.ts";

/**
 * A doubly linked list threaded through the task table's `prev` and `next` columns, so a million admitted
 * tasks cost no Set table, and adding and removing allocate nothing. Iterates in the order tasks were
 * added, as a Set would (the ranker keeps that order among equal victims). Rows of one pool only.
 */
export class ActiveList {
  #head = NONE;
  #tail = NONE;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  has(t: TaskTable, row: number): boolean {
    return t.prev[row] !== NONE || this.#head === row;
  }

  /** Appends `row` unless it is already in the list. */
  add(t: TaskTable, row: number): void {
    if (this.has(t, row)) return;
    t.prev[row] = this.#tail;
    t.next[row] = NONE;
    if (this.#tail !== NONE) t.next[this.#tail] = row;
    else this.#head = row;
    this.#tail = row;
    this.#size++;
  }

  /** Takes `row` out; false when it was not in the list. */
  delete(t: TaskTable, row: number): boolean {
    if (!this.has(t, row)) return false;
    const prev = t.prev[row], next = t.next[row];
    if (prev !== NONE) t.next[prev] = next;
    else this.#head = next;
    if (next !== NONE) t.prev[next] = prev;
    else this.#tail = prev;
    t.prev[row] = t.next[row] = NONE;
    this.#size--;
    return true;
  }

  /** The rows, first added first; the list must not change while this runs. */
  *rows(t: TaskTable): IterableIterator<number> {
    for (let row = this.#head; row !== NONE; row = t.next[row]) yield row;
  }
}
