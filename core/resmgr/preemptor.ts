/** Peloton's preemptor (`preemption/preemptor.go`): which pools stayed over their entitlement, and victims. */
import type { RespoolNode } from "./respool_node.ts";
import { toScalar } from "./respool_node.ts";
import { tasksToEvict } from "./ranker.ts";
import { REVOCABLE } from "./allocation.ts";
import { PREEMPTING, type TaskTable } from "./task_table.ts";
import { isZero, type Scalar, subtract, subtractInto } from "./scalar.ts";

export interface PreemptionConfig {
  /** Peloton's `preemption.enabled`; also turns on the reservation admitter for non-preemptible work. */
  enabled: boolean;
  /** `task_preemption_period`: how often pools are checked. */
  periodMs: number;
  /** `sustained_over_allocation_count`: consecutive checks over entitlement before a pool is preempted. */
  sustainedOverAllocationCount: number;
  /** `preempting_timeout`: a PREEMPTING task that is still alive goes back to RUNNING to be chosen again. */
  preemptingTimeoutMs: number;
}

/** Peloton's `config/resmgr/base.yaml`. */
export const DEFAULT_PREEMPTION_CONFIG: PreemptionConfig = {
  enabled: true,
  periodMs: 60_000,
  sustainedOverAllocationCount: 5,
  preemptingTimeoutMs: 600_000,
};

/** Allocation above the non-slack and slack entitlements; each kind clamped at zero (Peloton's `Subtract`). */
export function overAllocation(pool: RespoolNode): { nonSlack: Scalar; slack: Scalar } {
  return {
    nonSlack: subtract(toScalar(pool.allocation.nonSlack), pool.nonSlackEntitlement),
    slack: subtract(toScalar(pool.allocation.slack), pool.slackEntitlement),
  };
}

/**
 * `updateResourcePoolsState` then `getEligibleResPools`: counts, per leaf, the consecutive checks that
 * found it over either entitlement (reset to zero when it is not), and returns the leaves whose count
 * reached `sustained`.
 */
export function poolsDue(leaves: Iterable<RespoolNode>, sustained: number): RespoolNode[] {
  const due: RespoolNode[] = [];
  for (const pool of leaves) {
    const over = overAllocation(pool);
    pool.overAllocatedChecks = isZero(over.nonSlack) && isZero(over.slack) ? 0 : pool.overAllocatedChecks + 1;
    if (pool.overAllocatedChecks >= sustained) due.push(pool);
  }
  return due;
}

/**
 * `processResourcePool`: the ranked victims that free what the pool holds above its entitlements, and
 * the pool's count reset. Unlike Peloton, what the pool's PREEMPTING tasks will free when they exit is
 * counted as already freed, so a pool is not preempted twice for the same excess while kills are slow.
 */
export function chooseVictims(pool: RespoolNode, t: TaskTable): number[] {
  const { nonSlack, slack } = overAllocation(pool);
  for (const row of pool.active.rows(t)) {
    if (t.state[row] === PREEMPTING) {
      subtractInto(t.flags[row] & REVOCABLE ? slack : nonSlack, toScalar(t.resources[row]!));
    }
  }
  pool.overAllocatedChecks = 0;
  if (isZero(nonSlack) && isZero(slack)) return [];
  return tasksToEvict(t, pool.active.rows(t), slack, nonSlack);
}
