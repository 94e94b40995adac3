/** A pool's allocation by type, as Peloton's `scalar.Allocation` keeps it, in integer units. */
import type { RmTask } from "../messages.ts";
import { addInto, isZero, type Resources, zero } from "../model/resources.ts";

/** What decides which types of allocation a task counts towards, one bit each. */
export const REVOCABLE = 1, PREEMPTIBLE = 2, CONTROLLER = 4;

export function taskFlags(t: RmTask): number {
  return (t.revocable ? REVOCABLE : 0) | (t.preemptible ? PREEMPTIBLE : 0) | (t.controller ? CONTROLLER : 0);
}

/** Total = slack + nonSlack; nonPreemptible and controller are parts of the total. */
export interface Allocation {
  total: Resources;
  nonPreemptible: Resources;
  controller: Resources;
  /** Held by revocable tasks. */
  slack: Resources;
  nonSlack: Resources;
}

export function zeroAllocation(): Allocation {
  return { total: zero(), nonPreemptible: zero(), controller: zero(), slack: zero(), nonSlack: zero() };
}

/** Peloton's `GetTaskAllocation` added in: every type a task of these resources and flags counts towards. */
export function allocateTask(a: Allocation, r: Resources, flags: number): void {
  addInto(a.total, r);
  addInto(flags & REVOCABLE ? a.slack : a.nonSlack, r);
  if (!(flags & PREEMPTIBLE)) addInto(a.nonPreemptible, r);
  if (flags & CONTROLLER) addInto(a.controller, r);
}

/** The inverse of `allocateTask`; safe against the same task twice only through the caller's bookkeeping. */
export function releaseTask(a: Allocation, r: Resources, flags: number): void {
  subtractExact(a.total, r);
  subtractExact(flags & REVOCABLE ? a.slack : a.nonSlack, r);
  if (!(flags & PREEMPTIBLE)) subtractExact(a.nonPreemptible, r);
  if (flags & CONTROLLER) subtractExact(a.controller, r);
}

export function isZeroAllocation(a: Allocation): boolean {
  return isZero(a.total);
}

/** Integer subtraction; a negative result means the books are wrong, so it fails loudly. */
function subtractExact(into: Resources, r: Resources): void {
  into.cpuMilli -= r.cpuMilli;
  into.memMb -= r.memMb;
  into.diskMb -= r.diskMb;
  into.gpuMilli -= r.gpuMilli;
  if (into.cpuMilli < 0 || into.memMb < 0 || into.diskMb < 0 || into.gpuMilli < 0) {
    throw new Error(`Cannot release task resources: pool allocation went negative (${JSON.stringify(into)})`);
  }
}
