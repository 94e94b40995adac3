/**
 * Fairness as the simulator's reports and the production metrics measure it: Jain's index over (leaf pool,
 * resource kind) pairs of what each pool holds against what it is due now.
 */
import type { ClusterCapacity } from "../messages.ts";
import { entitlementNow } from "./entitlement_cycle.ts";
import type { RespoolTree } from "./respool_tree.ts";

/**
 * A leaf pool's cpu, in cores, and GPUs, as fairness weighs them. Revocable cpu runs on slack and has an
 * entitlement of its own (Peloton's slack entitlement, what revocable work is admitted against), so it is
 * weighed against that one: a pool running revocable work on all the slack there is holds its due, whatever
 * its regular entitlement. GPUs alike, in the `*Gpu` fields (all 0 when left out: a pool that wants none).
 */
export interface PoolShare {
  /** Allocated to regular (non-revocable) tasks; with no `slack*` fields, all it holds. */
  allocCpu: number;
  /** What regular tasks want: allocated plus queued demand. */
  wantCpu: number;
  /** Its fair share: the entitlement Peloton's calculator gives it for the demand of the moment. */
  fairShareCpu: number;
  /** The same for revocable tasks, against the slack entitlement; 0 when left out. */
  slackAllocCpu?: number;
  slackWantCpu?: number;
  slackFairShareCpu?: number;
  /**
   * Of `allocCpu` and `slackAllocCpu`, what hosts hold (tasks launched or running, not waiting for
   * placement): what `jain(shares, "held")` weighs. The allocation when left out.
   */
  heldCpu?: number;
  slackHeldCpu?: number;
  allocGpu?: number;
  wantGpu?: number;
  fairShareGpu?: number;
  slackAllocGpu?: number;
  slackWantGpu?: number;
  slackFairShareGpu?: number;
  heldGpu?: number;
  slackHeldGpu?: number;
}

/**
 * Jain's fairness index (sum x)² / (n · sum x²) over (leaf pool, resource kind) pairs, cpu and gpu, of x =
 * allocation / min(want, fair share), for each pool and kind it wants and has a fair share of: 1 when every
 * pool holds the same fraction of what it should hold of each kind (all of what it wants, up to its fair
 * share), 1/n when one holds everything. A pool that wants no GPUs has no gpu pair, so where no pool wants
 * any the index is the cpu one alone. Regular and revocable work each have their own fair share: a pair's
 * due is the sum of min(want, fair share) of the two, and its allocation the sum of both. A pair that wants
 * and holds none counts with x = 0, so a starved pool lowers the index (to 0.5 beside one pool that holds
 * its share); a pool holding twice its fair share of GPUs counts x = 2 for them. A pair whose fair share is
 * 0 (entitled to nothing while others' reservations take the cluster, or wanting only revocable cpu while
 * there is no slack) is left out: holding nothing is its due. 1 when no pair counts or none holds any. With
 * `on` "held", x weighs what hosts hold (`heldCpu`, `slackHeldCpu`, `heldGpu`, `slackHeldGpu`) rather than
 * the allocation; what a pool wants and is due stay the same (its admitted tasks still want them).
 */
export function jain(pools: Iterable<PoolShare>, on: "allocation" | "held" = "allocation"): number {
  let sum = 0, squares = 0, n = 0;
  for (const p of pools) {
    const due = Math.min(p.wantCpu, p.fairShareCpu) +
      Math.min(p.slackWantCpu ?? 0, p.slackFairShareCpu ?? 0);
    if (due > 0) {
      const held = on === "held"
        ? (p.heldCpu ?? p.allocCpu) + (p.slackHeldCpu ?? p.slackAllocCpu ?? 0)
        : p.allocCpu + (p.slackAllocCpu ?? 0);
      const x = held / due;
      sum += x, squares += x * x, n++;
    }
    const dueGpu = Math.min(p.wantGpu ?? 0, p.fairShareGpu ?? 0) +
      Math.min(p.slackWantGpu ?? 0, p.slackFairShareGpu ?? 0);
    if (dueGpu > 0) {
      const alloc = p.allocGpu ?? 0, slackAlloc = p.slackAllocGpu ?? 0;
      const held = on === "held" ? (p.heldGpu ?? alloc) + (p.slackHeldGpu ?? slackAlloc) : alloc + slackAlloc;
      const x = held / dueGpu;
      sum += x, squares += x * x, n++;
    }
  }
  // Every pool holding nothing is equal treatment (a cluster too small or still starting), not unfairness.
  return n === 0 || squares === 0 ? 1 : Math.round((sum * sum) / (n * squares) * 10000) / 10000;
}

/**
 * Each leaf pool's share for `jain`, by its allocation. The fair share is computed now rather than read from
 * the pools: the resource manager's entitlement is from its last cycle, and a pool whose demand came since
 * still has the 0 it got when it wanted nothing, which would hide that it is starved.
 */
export function poolShares(tree: RespoolTree, capacity: ClusterCapacity): PoolShare[] {
  const fair = entitlementNow(tree, capacity);
  const out: PoolShare[] = [];
  for (const p of tree.leaves()) {
    const { nonSlack, slack } = p.allocation;
    const allocCpu = nonSlack.cpuMilli / 1000, slackAllocCpu = slack.cpuMilli / 1000;
    const allocGpu = nonSlack.gpuMilli / 1000, slackAllocGpu = slack.gpuMilli / 1000;
    // Work the pool can never admit (a gang over its limit, revocable work over its slack limit) is no want
    // it could be fair to: as for its entitlement, only what it may admit counts (`admission_bounds.ts`).
    const demand = p.admissibleDemand(), slackDemand = p.admissibleSlackDemand();
    const share = fair.get(p);
    out.push({
      allocCpu,
      wantCpu: allocCpu + demand.cpuMilli / 1000,
      fairShareCpu: share?.nonSlack.cpu ?? 0,
      slackAllocCpu,
      slackWantCpu: slackAllocCpu + slackDemand.cpuMilli / 1000,
      slackFairShareCpu: share?.slack.cpu ?? 0,
      allocGpu,
      wantGpu: allocGpu + demand.gpuMilli / 1000,
      fairShareGpu: share?.nonSlack.gpu ?? 0,
      slackAllocGpu,
      slackWantGpu: slackAllocGpu + slackDemand.gpuMilli / 1000,
      slackFairShareGpu: share?.slack.gpu ?? 0,
    });
  }
  return out;
}
