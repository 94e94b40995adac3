/** The simulator's event queue, ordered by (time, sequence), so ties run first-in first-out. */
import type { Message } from "../core/messages.ts";
import type { Receiver } from "../core/ports/transport.ts";
import { popNumber, pushNumber } from "./number_heap.ts";

/** One scheduled event: a message delivery or a timer callback. All fields present keeps V8 shapes stable. */
export class SimEvent {
  cancelled = false;
  /** The next event due at the same time. */
  next: SimEvent | null = null;
  constructor(
    public time: number,
    public seq: number,
    public target: Receiver | null,
    public msg: Message | null,
    public fn: (() => void) | null,
  ) {}
}

/** Events due at one time, in the order they were scheduled. */
class TimeList {
  head: SimEvent | null = null;
  tail: SimEvent | null = null;
}

/**
 * One first-in first-out list per time, and the times in a min-heap. Events come in sequence order, so
 * each list is in sequence order and the earliest time's first event is always the next by (time,
 * sequence). Most events are message deliveries one latency ahead or callbacks at the current time:
 * a handful of distinct times, so scheduling and running an event is O(1).
 */
export class EventQueue {
  readonly #byTime = new Map<number, TimeList>();
  /** Times of `#byTime`, as a min-heap. */
  readonly #times: number[] = [];
  /** The list an event went to last (NaN: none), as events come in runs of one time. */
  #lastTime = NaN;
  #lastList = new TimeList();
  readonly #spare: TimeList[] = [];
  #size = 0;
  #seq = 0;
  now = 0;
  /** Events run so far, for progress and events/s. */
  processed = 0;
  /** Message deliveries run so far (the transport compares it with messages sent). */
  delivered = 0;

  get size(): number {
    return this.#size;
  }

  /** Time of the next event, or Infinity. */
  peekTime(): number {
    return this.#times.length ? this.#times[0] : Infinity;
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
    const times = this.#times;
    while (times.length && times[0] <= until) {
      const ev = this.#pop();
      // A skipped event still gets the check: the next one may be a result the caller must wait for.
      if (ev.cancelled) {
        if (stop && stop()) return true;
        continue;
      }
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
    return this.#size > 0;
  }

  #push(ev: SimEvent): SimEvent {
    const time = ev.time;
    if (time < this.now) throw new Error(`event scheduled in the past: ${time} < ${this.now}`);
    let list = this.#lastList;
    if (time !== this.#lastTime) {
      const found = this.#byTime.get(time);
      if (found) list = found;
      else {
        list = this.#spare.pop() ?? new TimeList();
        this.#byTime.set(time, list);
        pushNumber(this.#times, time);
      }
      this.#lastTime = time;
      this.#lastList = list;
    }
    if (list.tail) list.tail.next = ev;
    else list.head = ev;
    list.tail = ev;
    this.#size++;
    return ev;
  }

  /** Takes the first event of the earliest time (there is one). */
  #pop(): SimEvent {
    const time = this.#times[0];
    const list = time === this.#lastTime ? this.#lastList : this.#byTime.get(time)!;
    const ev = list.head!;
    list.head = ev.next;
    ev.next = null;
    if (!list.head) {
      list.tail = null;
      this.#byTime.delete(time);
      popNumber(this.#times);
      this.#spare.push(list);
      if (time === this.#lastTime) this.#lastTime = NaN;
    }
    this.#size--;
    return ev;
  }
}
