/** Per task type placement policy: rounds, deadlines, backoff and strategy (Peloton's `config/placement/*.yaml`). */
import type { Resources } from "../model/resources.ts";
import type { TaskType } from "../model/states.ts";

export interface TaskTypePolicy {
  /**
   * Rounds a task with a host keeps looking for a better one (Peloton's `max_rounds`). As in
   * Peloton's code (`Rounds >= MaxRounds`), 0 means a found host is taken at once.
   */
  maxRounds: number;
  /** Time from dequeue after which a task with no host goes back to the resource manager (`max_durations`). */
  maxDurationMs: number;
  /** How long a task waits for its desired host before taking another (`max_desired_host_placement_duration`). */
  desiredHostDurationMs: number;
  /** Wait before retrying a task no host could take; doubles per failed round up to the maximum. */
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** Best fit (Peloton's batch strategy packs) or most free first (Mimir's ordering for services). */
  order: "least-free" | "most-free";
  /** Spread a job's tasks over this host attribute (failure domain), when the hosts carry it. */
  spreadAttribute?: string;
}

/**
 * Peloton's values: `max_rounds {batch 1, stateless 2, stateful 2, daemon 0}`, `max_durations {batch 500s,
 * stateless 60s, stateful 60s, daemon 500s}`, desired host 100 s (120 s in the stateless and stateful
 * configs). Peloton retried a group with no offers every second; we back off from one second.
 */
export const PELOTON_POLICIES: Record<TaskType, TaskTypePolicy> = {
  BATCH: {
    maxRounds: 1,
    maxDurationMs: 500_000,
    desiredHostDurationMs: 100_000,
    retryBackoffMs: 1_000,
    retryBackoffMaxMs: 16_000,
    order: "least-free",
  },
  STATELESS: {
    maxRounds: 2,
    maxDurationMs: 60_000,
    desiredHostDurationMs: 120_000,
    retryBackoffMs: 1_000,
    retryBackoffMaxMs: 8_000,
    order: "most-free",
    spreadAttribute: "rack",
  },
  STATEFUL: {
    maxRounds: 2,
    maxDurationMs: 60_000,
    desiredHostDurationMs: 120_000,
    retryBackoffMs: 1_000,
    retryBackoffMaxMs: 8_000,
    order: "most-free",
    spreadAttribute: "rack",
  },
  DAEMON: {
    maxRounds: 0,
    maxDurationMs: 500_000,
    desiredHostDurationMs: 100_000,
    retryBackoffMs: 1_000,
    retryBackoffMaxMs: 16_000,
    order: "least-free",
  },
};

/** Host reservation for large tasks that keep failing (Peloton's `enable_host_reservation`). */
export interface ReservationPolicy {
  /** Failed rounds (with room missing, not constraints) before a host is reserved for the task. */
  afterFailedRounds: number;
  /**
   * Only a large task gets a host reserved: one that needs more than this share of the largest host's
   * cpu, memory or gpu (see `isLarge`).
   */
  largeShare: number;
  /** Reservations an engine holds at once, so a saturated cluster is not reserved away. */
  maxActive: number;
  /** Give up waiting for a reserved host after this long. */
  timeoutMs: number;
}

export const DEFAULT_RESERVATION: ReservationPolicy = {
  afterFailedRounds: 3,
  largeShare: 0.5,
  maxActive: 16,
  timeoutMs: 300_000,
};

/**
 * Whether a task is large enough to have a host reserved for it. A task that needs more than `share` of
 * the largest host (0.5: more than half) in cpu, memory or gpu fits beside no other task of its size, so
 * it gets room only once a host has drained most of the way, and the small tasks placed in every round
 * take each slice a host frees before it adds up: without a reservation it can starve. A smaller task
 * fits in the slices that churn frees; reserving a whole host for it would idle the host and make the
 * task wait for that one host rather than take the first one with room. Hosts unknown: not large.
 */
export function isLarge(need: Resources, largestHost: Resources | undefined, share: number): boolean {
  if (!largestHost) return false;
  return need.cpuMilli > share * largestHost.cpuMilli || need.memMb > share * largestHost.memMb ||
    (need.gpuMilli > 0 && need.gpuMilli > share * largestHost.gpuMilli);
}

export function backoffMs(p: TaskTypePolicy, failedRounds: number): number {
  return Math.min(p.retryBackoffMaxMs, p.retryBackoffMs * 2 ** Math.max(0, Math.min(20, failedRounds - 1)));
}
