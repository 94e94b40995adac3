/** Clock port: the core's only source of time and timers. */

/** Opaque handle of a pending timer. */
export type TimerId = number;

/**
 * Time and timers, injected so the same code runs on virtual time in the simulator and on the
 * system clock in production.
 */
export interface Clock {
  /** Milliseconds since the mode's epoch (0 at the start of a simulation). */
  now(): number;
  /** Calls `fn` once after `delayMs`; never synchronously, even for a zero delay. */
  setTimer(delayMs: number, fn: () => void): TimerId;
  /** Cancels a pending timer; cancelling twice or after it fired is a no-op. */
  cancelTimer(id: TimerId): void;
}
