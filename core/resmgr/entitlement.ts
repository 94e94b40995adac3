/** Peloton's entitlement calculator (pkg/resmgr/entitlement) as a pure function over a plain pool tree. */

import { RESOURCE_EPSILON as EPSILON, type ResourceKind, type Scalar, subtractKind } from "./scalar.ts";

export type ReservationType = "ELASTIC" | "STATIC";

/** v0 `respool.ResourceConfig` for one kind. */
export interface PoolResourceConfig {
  reservation: number;
  limit: number;
  share: number;
  type: ReservationType;
}

export interface EntitlementPool {
  /** A path such as "/a/b" or an id; only used to name pools in anomalies. */
  id: string;
  children: EntitlementPool[];
  /** Configured kinds; a missing kind is read the way Peloton's validator stores it (see DEFAULT_RESOURCE_CONFIG). */
  resources: Partial<Record<ResourceKind, PoolResourceConfig>>;
  /** Peloton's `slackLimit.maxPercent`, a percentage of the reservation; defaults to 20. */
  slackLimitPercent?: number;
  /** Leaf inputs; for non-leaf pools they are overwritten with the sums of their leaves, as Peloton does. */
  demand: Scalar;
  slackDemand: Scalar;
  allocation: { nonSlack: Scalar; slack: Scalar };
  entitlement?: Scalar;
  nonSlackEntitlement?: Scalar;
  slackEntitlement?: Scalar;
}

/** Peloton's `_defaultSlackLimit` (pkg/resmgr/respool/respool.go). */
export const DEFAULT_SLACK_LIMIT_PERCENT = 20;

/**
 * What Peloton's respool validator appends for a kind a config leaves out (`_defaultReservation`,
 * `_defaultLimit`, `_defaultShare`). Go's calculator dereferences a nil config for an unset kind, so
 * every pool it ever sees has all four.
 */
export const DEFAULT_RESOURCE_CONFIG: Readonly<PoolResourceConfig> = {
  reservation: 0,
  limit: 0,
  share: 1,
  type: "ELASTIC",
};

/**
 * Something Peloton itself would not survive. "share-loop-stalled": a share pass changed nothing (a child
 * with unmet demand has share 0, or its share is too small to move the float), so Go's
 * `for remaining > ε && demandExist` loop would spin forever; we stop it and carry on with phase 3.
 */
export interface EntitlementAnomaly {
  kind: "share-loop-stalled";
  parentId: string;
  resource: ResourceKind;
  revocable: boolean;
  remaining: number;
}

// Kind indexes into the flat arrays below, in `scalar.Resources` order.
const CPU = 0, MEMORY = 1, DISK = 2, GPU = 3;
const KINDS: readonly ResourceKind[] = ["cpu", "memory", "disk", "gpu"];
/** The order Peloton's phases 2 and 3 walk the kinds in. Kinds never mix, so this is for fidelity only. */
const SHARE_ORDER = [CPU, GPU, MEMORY, DISK] as const;

/**
 * The tree in breadth-first order, so every parent's children are one contiguous index range, and every
 * per-pool vector in one Float64Array with four slots per pool. One recalculation allocates a few arrays
 * instead of tens of thousands of scalars.
 */
interface Flat {
  pools: EntitlementPool[];
  firstChild: Int32Array;
  childCount: Int32Array;
  reservation: Float64Array;
  limit: Float64Array;
  share: Float64Array;
  isStatic: Uint8Array;
  slackLimit: Float64Array;
  demand: Float64Array;
  slackDemand: Float64Array;
  nonSlackAlloc: Float64Array;
  slackAlloc: Float64Array;
  entitlement: Float64Array;
  nonSlackEntitlement: Float64Array;
  slackEntitlement: Float64Array;
  /** Per-child scratch for the parent being distributed: assignment and demand not yet met. */
  assign: Float64Array;
  unmet: Float64Array;
}

/**
 * One Peloton entitlement cycle (`Calculator.calculateEntitlement`) on the tree under `root`, the cluster.
 * Writes `entitlement`, `nonSlackEntitlement` and `slackEntitlement` on every pool, the summed inputs on
 * non-leaf pools, and reservation = limit = capacity on the root's resources (`updateClusterCapacity`).
 * Children are taken in array order (Peloton's order is that of a Go map, i.e. none).
 * Returns the places where Go would not have terminated.
 */
export function calculateEntitlement(
  root: EntitlementPool,
  capacity: Scalar,
  slackCapacity: Scalar,
): EntitlementAnomaly[] {
  const t = flatten(root);
  setRootFromCapacity(t, capacity, slackCapacity);
  sumLeafInputs(t);
  const anomalies: EntitlementAnomaly[] = [];
  // Go recurses depth-first, but a parent only reads its own entitlement and its children's inputs, so
  // breadth-first order (parents before children) computes the same numbers.
  for (let p = 0; p < t.pools.length; p++) {
    if (t.childCount[p] > 0) setEntitlementForChildren(t, p, anomalies);
  }
  for (let p = 0; p < t.pools.length; p++) {
    if (t.childCount[p] > 0) setSlackAndNonSlackEntitlementForChildren(t, p, anomalies);
  }
  writeBack(t);
  return anomalies;
}

function flatten(root: EntitlementPool): Flat {
  const pools = [root];
  const seen = new Set<EntitlementPool>(pools);
  const first: number[] = [];
  for (let i = 0; i < pools.length; i++) {
    first.push(pools.length);
    for (const child of pools[i].children) {
      if (seen.has(child)) {
        throw new Error(`Cannot calculate entitlement: pool ${child.id} appears twice in the tree`);
      }
      seen.add(child);
      pools.push(child);
    }
  }
  const n = pools.length;
  const vec = () => new Float64Array(n * 4);
  const t: Flat = {
    pools,
    firstChild: Int32Array.from(first),
    childCount: Int32Array.from(pools, (p) => p.children.length),
    reservation: vec(),
    limit: vec(),
    share: vec(),
    isStatic: new Uint8Array(n * 4),
    slackLimit: vec(),
    demand: vec(),
    slackDemand: vec(),
    nonSlackAlloc: vec(),
    slackAlloc: vec(),
    entitlement: vec(),
    nonSlackEntitlement: vec(),
    slackEntitlement: vec(),
    assign: vec(),
    unmet: vec(),
  };
  for (let i = 0; i < n; i++) loadPool(t, i);
  return t;
}

function loadPool(t: Flat, i: number): void {
  const pool = t.pools[i];
  // `initSlackLimit`: the percentage is divided first, then multiplied, and the float result depends on it.
  const multiplier = (pool.slackLimitPercent ?? DEFAULT_SLACK_LIMIT_PERCENT) / 100;
  const r = pool.resources, o = i * 4;
  // Spelled out per kind: property reads by a variable name are what made this the slowest step.
  loadConfig(t, o + CPU, r.cpu ?? DEFAULT_RESOURCE_CONFIG);
  loadConfig(t, o + MEMORY, r.memory ?? DEFAULT_RESOURCE_CONFIG);
  loadConfig(t, o + DISK, r.disk ?? DEFAULT_RESOURCE_CONFIG);
  loadConfig(t, o + GPU, r.gpu ?? DEFAULT_RESOURCE_CONFIG);
  // Revocable tasks run on revocable cpus, so the slack limit never covers regular cpu.
  t.slackLimit[o + CPU] = 0;
  t.slackLimit[o + MEMORY] = t.reservation[o + MEMORY] * multiplier;
  t.slackLimit[o + DISK] = t.reservation[o + DISK] * multiplier;
  t.slackLimit[o + GPU] = t.reservation[o + GPU] * multiplier;
  if (pool.children.length > 0) return;
  loadScalar(t.demand, o, pool.demand);
  loadScalar(t.slackDemand, o, pool.slackDemand);
  loadScalar(t.nonSlackAlloc, o, pool.allocation.nonSlack);
  loadScalar(t.slackAlloc, o, pool.allocation.slack);
}

function loadConfig(t: Flat, o: number, cfg: PoolResourceConfig): void {
  t.reservation[o] = cfg.reservation;
  t.limit[o] = cfg.limit;
  t.share[o] = cfg.share;
  t.isStatic[o] = cfg.type === "STATIC" ? 1 : 0;
}

function loadScalar(v: Float64Array, o: number, s: Scalar): void {
  v[o + CPU] = s.cpu;
  v[o + MEMORY] = s.memory;
  v[o + DISK] = s.disk;
  v[o + GPU] = s.gpu;
}

/** `updateClusterCapacity`. Peloton never sets the root's non-slack entitlement, so it stays zero. */
function setRootFromCapacity(t: Flat, capacity: Scalar, slackCapacity: Scalar): void {
  const root = t.pools[0];
  const configured = KINDS.filter((kind) => root.resources[kind] !== undefined);
  // A root without resources gets all four kinds with share 0; otherwise only configured kinds change.
  for (const kind of configured.length > 0 ? configured : KINDS) {
    const old = root.resources[kind] ?? { share: 0, type: "ELASTIC" as const };
    root.resources[kind] = { ...old, reservation: capacity[kind], limit: capacity[kind] };
  }
  for (let k = 0; k < 4; k++) t.entitlement[k] = capacity[KINDS[k]];
  // Only cpu is revocable: Peloton ignores any other slack capacity.
  t.slackEntitlement[CPU] = slackCapacity.cpu;
}

/** `CalculateDemand`, `CalculateSlackDemand`, `CalculateTotalAllocatedResources`: 0 + c1 + c2 … in child order. */
function sumLeafInputs(t: Flat): void {
  const sums = [t.demand, t.slackDemand, t.nonSlackAlloc, t.slackAlloc];
  for (let p = t.pools.length - 1; p >= 0; p--) {
    const first = t.firstChild[p], end = first + t.childCount[p];
    if (first === end) continue;
    for (const v of sums) {
      for (let k = 0; k < 4; k++) {
        let sum = 0;
        for (let c = first; c < end; c++) sum += v[c * 4 + k];
        v[p * 4 + k] = sum;
      }
    }
  }
}

/** non_revocable.go: reservation, then demand by share, then the unclaimed rest by share up to limit. */
function setEntitlementForChildren(t: Flat, p: number, anomalies: EntitlementAnomaly[]): void {
  const first = t.firstChild[p], end = first + t.childCount[p];
  const free = t.entitlement.slice(p * 4, p * 4 + 4);
  const totalShare = [0, 0, 0, 0];
  // Phase 1 (`calculateAssignmentsFromReservation`). Nothing checks that the parent can afford the
  // reservations: the clamped subtraction just stops at 0, and the children keep what they were given.
  for (let c = first; c < end; c++) {
    for (let k = 0; k < 4; k++) {
      const o = c * 4 + k;
      // `calculateDemandForRespool`: (non-slack allocation + demand) + min(slack limit, slack needs), capped.
      let d = t.nonSlackAlloc[o] + t.demand[o] +
        Math.min(t.slackLimit[o], t.slackAlloc[o] + t.slackDemand[o]);
      d = Math.min(d, t.limit[o]);
      const reservation = t.reservation[o];
      t.assign[o] = t.isStatic[o] ? reservation : Math.min(d, reservation);
      if (d > reservation) {
        totalShare[k] += t.share[o];
        t.unmet[o] = d - reservation;
      } else {
        t.unmet[o] = 0;
      }
    }
    for (let k = 0; k < 4; k++) free[k] = subtractKind(free[k], t.assign[c * 4 + k]);
  }
  // Phase 2 (`distributeRemainingResources`).
  for (const k of SHARE_ORDER) {
    free[k] = distributeByShare(t, p, k, free[k], totalShare[k], false, anomalies);
  }
  // Phase 3 (`distributeUnclaimedResources`): capped at limit, and what the cap cuts off is not passed on.
  for (const k of SHARE_ORDER) {
    if (free[k] > EPSILON) distributeUnclaimed(t, p, k, free[k], true);
  }
  t.entitlement.set(t.assign.subarray(first * 4, end * 4), first * 4);
}

/**
 * The phase-2 loop both files share: each pass hands every child with unmet demand its share of what was
 * free when the pass began, capped by that demand and by what is still free. `totalShare` is never
 * recomputed as children are satisfied, so later passes hand out less than is free and it takes several
 * passes (Peloton's arithmetic, kept as is). Returns what is still free.
 */
function distributeByShare(
  t: Flat,
  p: number,
  k: number,
  free: number,
  totalShare: number,
  revocable: boolean,
  anomalies: EntitlementAnomaly[],
): number {
  const first = t.firstChild[p], end = first + t.childCount[p];
  // Ours: only pools of share 0 want more. Peloton's loop divides by a total share of 0 here, and NaN hands
  // one of them everything free; a share of 0 is a claim on none of it.
  if (totalShare <= 0) return free;
  let remaining = free;
  while (remaining > EPSILON && unmetExists(t, first, end, k)) {
    const atPassStart = free;
    let changed = false;
    for (let c = first; c < end; c++) {
      if (remaining < EPSILON) break;
      const o = c * 4 + k;
      const unmet = t.unmet[o];
      if (unmet < EPSILON) continue;
      let value = t.share[o] * atPassStart;
      value = value / totalShare;
      let unmetAfter: number;
      if (value > unmet) {
        value = unmet;
        unmetAfter = 0;
      } else {
        unmetAfter = unmet - value;
      }
      let remainingAfter: number;
      if (remaining > value) {
        remainingAfter = remaining - value;
      } else {
        value = remaining;
        remainingAfter = 0;
      }
      if (unmetAfter !== unmet || remainingAfter !== remaining) changed = true;
      t.unmet[o] = unmetAfter;
      remaining = remainingAfter;
      t.assign[o] = value + t.assign[o];
    }
    free = remaining;
    if (!changed) {
      anomalies.push({
        kind: "share-loop-stalled",
        parentId: t.pools[p].id,
        resource: KINDS[k],
        revocable,
        remaining,
      });
      break;
    }
  }
  return free;
}

/** Peloton's `demandExist`. */
function unmetExists(t: Flat, first: number, end: number, k: number): boolean {
  for (let c = first; c < end; c++) if (t.unmet[c * 4 + k] > EPSILON) return true;
  return false;
}

/** Phase 3 of both files: every child, with demand or not, gets share/Σshare of what is left. */
function distributeUnclaimed(t: Flat, p: number, k: number, free: number, capAtLimit: boolean): void {
  const first = t.firstChild[p], end = first + t.childCount[p];
  let totalChildShare = 0;
  for (let c = first; c < end; c++) totalChildShare += t.share[c * 4 + k];
  for (let c = first; c < end; c++) {
    const o = c * 4 + k;
    const share = t.share[o];
    let value = t.assign[o];
    // Go divides before multiplying here (unlike phase 2); the order changes the last bit.
    if (share > 0) value += share / totalChildShare * free;
    t.assign[o] = capAtLimit && value > t.limit[o] ? t.limit[o] : value;
  }
}

/**
 * revocable.go: regular mem/disk/gpu left after non-revocable needs go to revocable tasks up to the slack
 * limit, the rest is the non-slack entitlement; revocable cpus are then shared out by demand and share.
 */
function setSlackAndNonSlackEntitlementForChildren(
  t: Flat,
  p: number,
  anomalies: EntitlementAnomaly[],
): void {
  const first = t.firstChild[p], end = first + t.childCount[p];
  const free = t.slackEntitlement.slice(p * 4, p * 4 + 4);
  const assignment = [0, 0, 0, 0];
  let totalShareCpu = 0;
  // Phase 1 (`calculateSlackAssignmentFromSlackLimit`).
  for (let c = first; c < end; c++) {
    const base = c * 4;
    for (let k = 0; k < 4; k++) t.unmet[base + k] = 0;
    t.unmet[base + CPU] = t.slackDemand[base + CPU];
    totalShareCpu += t.share[base + CPU];
    for (let k = 0; k < 4; k++) {
      const o = base + k;
      const slackNeed = Math.min(t.slackLimit[o], t.slackAlloc[o] + t.slackDemand[o]);
      const leftForSlack = subtractKind(t.entitlement[o], t.nonSlackAlloc[o] + t.demand[o]);
      assignment[k] = Math.min(leftForSlack, slackNeed);
    }
    const nothingForSlack = assignment[CPU] === 0 && assignment[MEMORY] === 0 && assignment[DISK] === 0 &&
      assignment[GPU] === 0;
    for (let k = 0; k < 4; k++) {
      const o = base + k;
      t.nonSlackEntitlement[o] = nothingForSlack
        ? t.entitlement[o]
        : subtractKind(t.entitlement[o], assignment[k]);
    }
    // Revocable cpus start from what revocable tasks already hold, after the non-slack split above.
    assignment[CPU] = t.slackAlloc[base + CPU];
    for (let k = 0; k < 4; k++) {
      t.assign[base + k] = assignment[k];
      free[k] = subtractKind(free[k], assignment[k]);
    }
  }
  // Phase 2 (`distrubuteSlackResourcesToSatisfyDemand`), cpu only; here every child's share counts.
  free[CPU] = distributeByShare(t, p, CPU, free[CPU], totalShareCpu, true, anomalies);
  // Phase 3 (`distributeUnclaimedSlackResources`), cpu only and without a limit.
  if (free[CPU] > EPSILON) distributeUnclaimed(t, p, CPU, free[CPU], false);
  t.slackEntitlement.set(t.assign.subarray(first * 4, end * 4), first * 4);
}

function writeBack(t: Flat): void {
  const at = (v: Float64Array, i: number): Scalar => ({
    cpu: v[i * 4 + CPU],
    memory: v[i * 4 + MEMORY],
    disk: v[i * 4 + DISK],
    gpu: v[i * 4 + GPU],
  });
  for (let i = 0; i < t.pools.length; i++) {
    const pool = t.pools[i];
    pool.entitlement = at(t.entitlement, i);
    pool.nonSlackEntitlement = at(t.nonSlackEntitlement, i);
    pool.slackEntitlement = at(t.slackEntitlement, i);
    if (t.childCount[i] > 0) {
      pool.demand = at(t.demand, i);
      pool.slackDemand = at(t.slackDemand, i);
      pool.allocation = { nonSlack: at(t.nonSlackAlloc, i), slack: at(t.slackAlloc, i) };
    }
  }
}
