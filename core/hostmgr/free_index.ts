/** An index of hosts by free cpu and memory (cells on fixed ladders), so a search visits only hosts that can fit. */
import { grownColumn } from "../model/columns.ts";

/** Cell boundaries in milli-cores: finer where tasks are small, geometric above. */
export const CPU_LADDER: Int32Array = Int32Array.of(
  0,
  250,
  500,
  750,
  1000,
  1500,
  2000,
  2500,
  3000,
  4000,
  5000,
  6000,
  8000,
  10000,
  12000,
  16000,
  20000,
  24000,
  32000,
  40000,
  48000,
  64000,
  80000,
  96000,
  128000,
  160000,
  192000,
  256000,
);
/** Cell boundaries in MiB. */
export const MEM_LADDER: Int32Array = Int32Array.of(
  0,
  256,
  512,
  1024,
  1536,
  2048,
  3072,
  4096,
  6144,
  8192,
  12288,
  16384,
  24576,
  32768,
  49152,
  65536,
  98304,
  131072,
  196608,
  262144,
  393216,
  524288,
  786432,
  1048576,
  1572864,
  2097152,
);
const NC = CPU_LADDER.length;
const NM = MEM_LADDER.length;
export const CELLS = NC * NM;

/** The largest ladder index whose boundary is at most `x` (0 for negative values). */
export function level(ladder: Int32Array, x: number): number {
  let lo = 0, hi = ladder.length - 1;
  if (x >= ladder[hi]) return hi;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ladder[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Level lookup tables on the ladders' finest steps, so indexing a host costs two array reads. */
const CPU_STEP = 250, MEM_STEP = 256;
const CPU_LEVELS = Uint8Array.from(
  { length: CPU_LADDER[NC - 1] / CPU_STEP + 1 },
  (_, i) => level(CPU_LADDER, i * CPU_STEP),
);
const MEM_LEVELS = Uint8Array.from(
  { length: MEM_LADDER[NM - 1] / MEM_STEP + 1 },
  (_, i) => level(MEM_LADDER, i * MEM_STEP),
);

export function cellOf(cpuMilli: number, memMb: number): number {
  const c = cpuMilli <= 0 ? 0 : Math.floor(cpuMilli / CPU_STEP);
  const m = memMb <= 0 ? 0 : Math.floor(memMb / MEM_STEP);
  return (c < CPU_LEVELS.length ? CPU_LEVELS[c] : NC - 1) * NM +
    (m < MEM_LEVELS.length ? MEM_LEVELS[m] : NM - 1);
}

const CELL_CPU = Uint8Array.from({ length: NC * NM }, (_, c) => (c / NM) | 0);
const CELL_MEM = Uint8Array.from({ length: NC * NM }, (_, c) => c % NM);

export function cellCpuLevel(cell: number): number {
  return CELL_CPU[cell];
}

export function cellMemLevel(cell: number): number {
  return CELL_MEM[cell];
}

/** Lower bounds of a cell, in units. */
export function cellLow(cell: number): [number, number] {
  return [CPU_LADDER[cellCpuLevel(cell)], MEM_LADDER[cellMemLevel(cell)]];
}

/** Upper bounds (exclusive; the top level is open, reported as twice its boundary). */
export function cellHigh(cell: number): [number, number] {
  const c = cellCpuLevel(cell), m = cellMemLevel(cell);
  return [
    c + 1 < NC ? CPU_LADDER[c + 1] : CPU_LADDER[c] * 2,
    m + 1 < NM ? MEM_LADDER[m + 1] : MEM_LADDER[m] * 2,
  ];
}

/**
 * Cells in ascending order of `cpuLow/normCpu + memLow/normMem`: the best-fit walk (least free
 * first). Read it backwards for most free first.
 */
export function cellOrder(normCpu: number, normMem: number): Int32Array {
  const key = `${normCpu}/${normMem}`;
  let order = ORDERS.get(key);
  if (!order) {
    order = computeOrder(normCpu, normMem);
    if (ORDERS.size > 64) ORDERS.clear();
    ORDERS.set(key, order);
  }
  return order;
}
const ORDERS = new Map<string, Int32Array>();

function computeOrder(normCpu: number, normMem: number): Int32Array {
  const cells = Array.from({ length: CELLS }, (_, i) => i);
  const key = (c: number) => {
    const [cpu, mem] = cellLow(c);
    return cpu / Math.max(1, normCpu) + mem / Math.max(1, normMem);
  };
  const keys = cells.map(key);
  cells.sort((a, b) => keys[a] - keys[b] || a - b);
  return Int32Array.from(cells);
}

/**
 * Hosts (small integers) in cells of several pools, as intrusive doubly linked lists in typed
 * arrays: insert, move and remove are O(1) and allocate nothing.
 */
export class FreeIndex {
  #next: Int32Array;
  #prev: Int32Array;
  /** pool * CELLS + cell of each host, or -1 when not indexed. */
  #slot: Int32Array;
  readonly #head: Int32Array;
  readonly #count: Int32Array;
  readonly #poolSize: Int32Array;

  constructor(readonly pools: number, capacity = 1024) {
    this.#next = new Int32Array(capacity).fill(-1);
    this.#prev = new Int32Array(capacity).fill(-1);
    this.#slot = new Int32Array(capacity).fill(-1);
    this.#head = new Int32Array(pools * CELLS).fill(-1);
    this.#count = new Int32Array(pools * CELLS);
    this.#poolSize = new Int32Array(pools);
  }

  has(h: number): boolean {
    return h < this.#slot.length && this.#slot[h] >= 0;
  }

  /** Puts the host in the cell of its free cpu and memory (moving it if it was elsewhere). */
  set(h: number, pool: number, cpuMilli: number, memMb: number): void {
    if (h >= this.#slot.length) this.#grow(h + 1);
    const slot = pool * CELLS + cellOf(cpuMilli, memMb);
    if (this.#slot[h] === slot) return;
    this.remove(h);
    const head = this.#head[slot];
    this.#next[h] = head;
    this.#prev[h] = -1;
    if (head >= 0) this.#prev[head] = h;
    this.#head[slot] = h;
    this.#slot[h] = slot;
    this.#count[slot]++;
    this.#poolSize[pool]++;
  }

  remove(h: number): void {
    if (h >= this.#slot.length) return;
    const slot = this.#slot[h];
    if (slot < 0) return;
    const n = this.#next[h], p = this.#prev[h];
    if (p >= 0) this.#next[p] = n;
    else this.#head[slot] = n;
    if (n >= 0) this.#prev[n] = p;
    this.#slot[h] = -1;
    this.#count[slot]--;
    this.#poolSize[(slot / CELLS) | 0]--;
  }

  /** First host of a cell, or -1; continue with `next`. */
  first(pool: number, cell: number): number {
    return this.#head[pool * CELLS + cell];
  }

  next(h: number): number {
    return this.#next[h];
  }

  count(pool: number, cell: number): number {
    return this.#count[pool * CELLS + cell];
  }

  size(pool: number): number {
    return this.#poolSize[pool];
  }

  #grow(min: number): void {
    const cap = Math.max(min, this.#slot.length * 2);
    this.#next = grownColumn(this.#next, cap, -1);
    this.#prev = grownColumn(this.#prev, cap, -1);
    this.#slot = grownColumn(this.#slot, cap, -1);
  }
}
