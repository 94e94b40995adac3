/** One placement round as plain data (typed arrays and numbers), so it can cross into workers unchanged. */

/** Filter stages, in the order they run; each rejected host is counted under the first that fails. */
export const R_REQUIRED = 0;
export const R_GPU_KEPT = 1;
export const R_EXCLUSIVE = 2;
export const R_CPU = 3;
export const R_MEM = 4;
export const R_DISK = 5;
export const R_GPU = 6;
export const R_SLACK = 7;
export const R_PORTS = 8;
export const R_CONSTRAINT = 9;
export const REASONS = 10;

/** Host flags. */
export const F_KEPT_GPU = 1;
export const F_EXCLUSIVE = 2;

/** Strategies: best fit and fill (Peloton's batch pack), one task per host, most free first (Mimir's order). */
export const PACK = 0;
export const SPREAD_JOB = 1;
export const MOST_FREE = 2;

/** Candidate hosts as columns. Free resources and port state change as tasks are placed. */
export interface RoundHosts {
  count: number;
  /** Round-wide id of each row (a partition holds a subset of the round's rows). */
  ids: Int32Array;
  cpu: Int32Array;
  mem: Int32Array;
  disk: Int32Array;
  gpu: Int32Array;
  /** Free revocable (slack) cpu. */
  slack: Int32Array;
  flags: Uint8Array;
  /** Free port ranges: pairs `portRanges[2k], portRanges[2k+1]` for k in `portStart[h] .. portStart[h+1]`. */
  portStart: Int32Array;
  portRanges: Int32Array;
  /** The lowest port dynamic ports may still take (they are taken in ascending order). */
  portNext: Int32Array;
  portFree: Int32Array;
  /** Static ports taken this round, as (row, port) pairs. */
  portStatic: Int32Array;
  /** Attribute columns the round's constraints and spreading use: a value id per host, -1 when absent. */
  attrs: Int32Array[];
  /** Task-label columns TASK constraints count: tasks carrying the label on each host. */
  labels: Int32Array[];
}

/** A compiled constraint: evaluated against columns, with Peloton's not-applicable rules. */
export type Program =
  | { op: "attr"; col: number; value: number; cond: number; req: number }
  | { op: "host"; id: number; cond: number; req: number }
  | { op: "label"; col: number; cond: number; req: number }
  | { op: "and" | "or"; subs: Program[] };

export const COND_LESS = 0;
export const COND_EQUAL = 1;
export const COND_GREATER = 2;

/** Tasks with identical needs. */
export interface RoundGroup {
  cpu: number;
  mem: number;
  disk: number;
  gpu: number;
  revocable: boolean;
  staticPorts: number[];
  dynamicPorts: number;
  constraint: Program | null;
  /** The constraint has TASK labels that more placements could satisfy: a failed host may pass later. */
  growing: boolean;
  exclusiveOk: boolean;
  /** Label columns each placed task adds one to. */
  addLabels: number[];
  strategy: number;
  /** Attribute column to spread over (failure domain), or -1. */
  domain: number;
  /** Round id of the host to try first (desired host), or -1. */
  preferHost: number;
  /** Round id of the only allowed host, -1 for any, -2 when the host is not among the candidates. */
  requireHost: number;
}

/** Work placed together: a gang (atomic, all or nothing) or tasks of one group. */
export interface RoundUnit {
  parts: { group: number; count: number }[];
  atomic: boolean;
}

export interface PlacementRound {
  hosts: RoundHosts;
  groups: RoundGroup[];
  units: RoundUnit[];
  /** Score weights: the largest host's cpu, memory and GPUs. */
  norms: [number, number, number];
  /** Feasible hosts scored per decision before the best is taken (kube-scheduler's numFeasibleNodesToFind). */
  scoreLimit: number;
}

/** A round's outcome, by task slot: units in order, their parts in order, tasks in order. */
export interface PlacementResult {
  /** Round host id per slot, or -1. */
  hosts: Int32Array;
  /** Dynamic ports per slot (its group's `dynamicPorts` each, from `portOffsets`). */
  ports: Int32Array;
  /** Per unit: hosts rejected by each stage when (part of) the unit went unplaced, else null. */
  failures: (Int32Array | null)[];
  /** Set when the executor could not run the round (nothing placed): why, the reason its units failed with. */
  error?: string;
}

/** A span of slots handed to one placer: a whole unit or a share of one. */
export interface WorkItem {
  unit: number;
  atomic: boolean;
  parts: { group: number; count: number; slot: number }[];
}

/** First slot of each unit, and the total. */
export function unitSlots(round: PlacementRound): Int32Array {
  const out = new Int32Array(round.units.length + 1);
  round.units.forEach((u, i) => (out[i + 1] = out[i] + u.parts.reduce((n, p) => n + p.count, 0)));
  return out;
}

/** First dynamic-port entry of each slot, and the total. */
export function portOffsets(round: PlacementRound, slots = unitSlots(round)): Int32Array {
  const out = new Int32Array(slots[slots.length - 1] + 1);
  let s = 0;
  for (const u of round.units) {
    for (const p of u.parts) {
      const dyn = round.groups[p.group].dynamicPorts;
      for (let k = 0; k < p.count; k++, s++) out[s + 1] = out[s] + dyn;
    }
  }
  return out;
}

/** Columns of a subset of rows (a partition), port state included. */
export function sliceHosts(h: RoundHosts, rows: Int32Array): RoundHosts {
  // Every round over several partitions slices all of its hosts on the coordinating thread, before any
  // partition can start: plain loops, one per element type (a loop shared by both would be megamorphic),
  // and no object per row.
  const n = rows.length;
  const portStart = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    portStart[i + 1] = portStart[i] + h.portStart[rows[i] + 1] - h.portStart[rows[i]];
  }
  const portRanges = new Int32Array(portStart[n] * 2);
  for (let i = 0, at = 0; i < n; i++) {
    for (let k = h.portStart[rows[i]] * 2, end = h.portStart[rows[i] + 1] * 2; k < end; k++) {
      portRanges[at++] = h.portRanges[k];
    }
  }
  const local = new Int32Array(h.count).fill(-1);
  for (let i = 0; i < n; i++) local[rows[i]] = i;
  const statics: number[] = [];
  for (let k = 0; k < h.portStatic.length; k += 2) {
    const i = local[h.portStatic[k]];
    if (i >= 0) statics.push(i, h.portStatic[k + 1]);
  }
  const pick = (a: Int32Array) => pickRows(a, rows);
  const flags = new Uint8Array(n);
  for (let i = 0; i < n; i++) flags[i] = h.flags[rows[i]];
  return {
    count: n,
    ids: pick(h.ids),
    cpu: pick(h.cpu),
    mem: pick(h.mem),
    disk: pick(h.disk),
    gpu: pick(h.gpu),
    slack: pick(h.slack),
    flags,
    portStart,
    portRanges,
    portNext: pick(h.portNext),
    portFree: pick(h.portFree),
    portStatic: Int32Array.from(statics),
    attrs: h.attrs.map(pick),
    labels: h.labels.map(pick),
  };
}

function pickRows(a: Int32Array, rows: Int32Array): Int32Array {
  const out = new Int32Array(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = a[rows[i]];
  return out;
}

/** Every buffer of a round's hosts, to transfer rather than copy into a worker. */
export function hostBuffers(h: RoundHosts): ArrayBuffer[] {
  const arrays = [
    h.ids,
    h.cpu,
    h.mem,
    h.disk,
    h.gpu,
    h.slack,
    h.flags,
    h.portStart,
    h.portRanges,
    h.portNext,
    h.portFree,
    h.portStatic,
    ...h.attrs,
    ...h.labels,
  ];
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}
