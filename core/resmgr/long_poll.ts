/** Parked long-poll requests: answered when there is something to hand out, or empty at their timeout. */
import type { Clock } from "../ports/clock.ts";
import type { Address } from "../ports/transport.ts";

export interface Waiter {
  reqId: number;
  replyTo: Address;
  limit: number;
  timer: number;
}

export class LongPolls {
  readonly #waiters: Waiter[] = [];

  constructor(private readonly clock: Clock, private readonly reply: (w: Waiter) => void) {}

  /** Answers at once when `ready` or the caller would not wait; otherwise parks until woken or timed out. */
  request(reqId: number, replyTo: Address, limit: number, timeoutMs: number, ready: boolean): void {
    const w: Waiter = { reqId, replyTo, limit, timer: 0 };
    if (ready || timeoutMs <= 0) return this.reply(w);
    w.timer = this.clock.setTimer(timeoutMs, () => {
      const i = this.#waiters.indexOf(w);
      if (i >= 0) this.#waiters.splice(i, 1);
      this.reply(w);
    });
    this.#waiters.push(w);
  }

  /**
   * Answers parked requests, oldest first, that `ready(w)` says have something to hand out (what a
   * waiter may take can depend on who it is: each job manager takes its own placements).
   */
  wake(ready: (w: Waiter) => boolean): void {
    for (let i = 0; i < this.#waiters.length;) {
      const w = this.#waiters[i];
      if (!ready(w)) {
        i++;
        continue;
      }
      this.#waiters.splice(i, 1);
      this.clock.cancelTimer(w.timer);
      this.reply(w);
    }
  }
}
