/** The simulator's event queue: a binary heap ordered by (time, sequence), so ties run first-in first-out. */
import type { Message } from "../core/messages.ts";
import type { Receiver } from "../core/ports/transport.ts";

/** One scheduled event: a message delivery or a timer callback. All fields present keeps V8 shapes stable. */
export class SimEvent {
  cancelled = false;
  constructor(
    public time: number,
    public seq: number,
    public target: Receiver | null,
    public msg: Message | null,
    public fn: (() => void) | null,
  ) {}
}

export class EventQueue {
  #heap: SimEvent[] = [];
  #seq = 0;
  now = 0;
  /** Events run so far, for progress and events/s. */
  processed = 0;
  /** Message deliveries run so far (the transport compares it with messages sent). */
  delivered = 0;

  get size(): number {
    return this.#heap.length;
  }

  /** Time of the next event, or Infinity. */
  peekTime(): number {
    return this.#heap.length ? this.#heap[0].time : Infinity;
  }

  /**
   * Virtual time moves in whole milliseconds: times are rounded up, so every timestamp derived from the
   * clock is a small integer (V8 keeps those unboxed, which matters with millions of task records).
   */
  deliver(time: number, target: Receiver, msg: Message): SimEvent {
    return this.#push(new SimEvent(Math.ceil(time), this.#seq++, target, msg, null));
  }

  schedule(time: number, fn: () => void): SimEvent {
    return this.#push(new SimEvent(Math.ceil(time), this.#seq++, null, null, fn));
  }

  /** Runs events up to and including `until`; returns false if it stopped because the queue emptied. */
  runUntil(until: number, stop?: () => boolean): boolean {
    const heap = this.#heap;
    while (heap.length && heap[0].time <= until) {
      const ev = this.#pop();
      if (ev.cancelled) continue;
      this.now = ev.time;
      this.processed++;
      if (ev.fn) ev.fn();
      else {
        this.delivered++;
        ev.target!.receive(ev.msg!);
      }
      if (stop && stop()) return true;
    }
    if (until !== Infinity && this.now < until) this.now = until;
    return heap.length > 0;
  }

  #push(ev: SimEvent): SimEvent {
    if (ev.time < this.now) throw new Error(`event scheduled in the past: ${ev.time} < ${this.now}`);
    const heap = this.#heap;
    heap.push(ev);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (before(heap[p], ev)) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = ev;
    return ev;
  }

  #pop(): SimEvent {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length) {
      let i = 0;
      const n = heap.length;
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
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
