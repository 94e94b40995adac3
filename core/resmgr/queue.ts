/** Priority-FIFO queue (Peloton's multi-level list): highest priority first, FIFO within a level. */

/** An array-backed FIFO with O(1) push and shift and O(n) removal of arbitrary items. */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    this.#items.push(item);
    this.#size++;
  }

  /** Puts an item back at the front (an admission that failed keeps its place). */
  unshift(item: T): void {
    if (this.#head > 0) this.#items[--this.#head] = item;
    else this.#items.unshift(item);
    this.#size++;
  }

  peek(): T | undefined {
    this.#skipHoles();
    return this.#size ? this.#items[this.#head] : undefined;
  }

  shift(): T | undefined {
    this.#skipHoles();
    if (!this.#size) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    this.#size--;
    this.#compact();
    return item;
  }

  /** Removes the first item matching `pred`; returns it. */
  remove(pred: (item: T) => boolean): T | undefined {
    for (let i = this.#head; i < this.#items.length; i++) {
      const item = this.#items[i];
      if (item !== undefined && pred(item)) {
        this.#items[i] = undefined;
        this.#size--;
        this.#compact();
        return item;
      }
    }
    return undefined;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.#head; i < this.#items.length; i++) {
      const item = this.#items[i];
      if (item !== undefined) yield item;
    }
  }

  #skipHoles(): void {
    while (this.#head < this.#items.length && this.#items[this.#head] === undefined) this.#head++;
  }

  #compact(): void {
    if (this.#size === 0) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }
}

export class PriorityFifo<T> {
  /** Levels sorted by descending priority. */
  readonly #levels: { priority: number; items: Fifo<T> }[] = [];
  #size = 0;

  constructor(private readonly priorityOf: (item: T) => number) {}

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    this.#level(this.priorityOf(item)).push(item);
    this.#size++;
  }

  /** Re-inserts at the front of its level. */
  unshift(item: T): void {
    this.#level(this.priorityOf(item)).unshift(item);
    this.#size++;
  }

  peek(): T | undefined {
    for (const level of this.#levels) {
      const item = level.items.peek();
      if (item !== undefined) return item;
    }
    return undefined;
  }

  shift(): T | undefined {
    for (const level of this.#levels) {
      const item = level.items.shift();
      if (item !== undefined) {
        this.#size--;
        return item;
      }
    }
    return undefined;
  }

  remove(pred: (item: T) => boolean): T | undefined {
    for (const level of this.#levels) {
      const item = level.items.remove(pred);
      if (item !== undefined) {
        this.#size--;
        return item;
      }
    }
    return undefined;
  }

  /** Items in dequeue order. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const level of this.#levels) yield* level.items;
  }

  #level(priority: number): Fifo<T> {
    let lo = 0, hi = this.#levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#levels[mid].priority > priority) lo = mid + 1;
      else hi = mid;
    }
    if (lo < this.#levels.length && this.#levels[lo].priority === priority) return this.#levels[lo].items;
    const items = new Fifo<T>();
    this.#levels.splice(lo, 0, { priority, items });
    return items;
  }
}
