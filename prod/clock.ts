/** The system clock and real timers behind the Clock port. */
import type { Clock, TimerId } from "../core/ports/clock.ts";

export class SystemClock implements Clock {
  readonly #timers = new Set<number>();

  now(): number {
    return Date.now();
  }

  setTimer(delayMs: number, fn: () => void): TimerId {
    // Deno's timers are numbers; npm type packages in the graph retype them as Node's Timeout.
    const id: number = setTimeout(() => {
      this.#timers.delete(id);
      fn();
    }, Math.max(0, delayMs)) as unknown as number;
    this.#timers.add(id);
    return id;
  }

  cancelTimer(id: TimerId): void {
    clearTimeout(id);
    this.#timers.delete(id);
  }

  /** Cancels every pending timer (shutdown). */
  cancelAll(): void {
    for (const id of this.#timers) clearTimeout(id);
    this.#timers.clear();
  }
}
