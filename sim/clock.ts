/** Virtual time for the simulator: the Clock port over the event queue. */
import type { Clock, TimerId } from "../core/ports/clock.ts";
import type { EventQueue, SimEvent } from "./event_queue.ts";

export class SimClock implements Clock {
  readonly #timers = new Map<number, SimEvent>();
  #next = 1;

  constructor(private readonly queue: EventQueue) {}

  now(): number {
    return this.queue.now;
  }

  setTimer(delayMs: number, fn: () => void): TimerId {
    const id = this.#next++;
    const ev = this.queue.schedule(this.queue.now + Math.max(0, delayMs), () => {
      this.#timers.delete(id);
      fn();
    });
    this.#timers.set(id, ev);
    return id;
  }

  cancelTimer(id: TimerId): void {
    const ev = this.#timers.get(id);
    if (ev) {
      ev.cancelled = true;
      this.#timers.delete(id);
    }
  }
}
