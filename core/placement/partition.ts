/** Places work items on one partition of a round's hosts: filter stages, best-fit or spread scoring, gangs all or nothing. */
import {
  cellCpuLevel,
  cellLow,
  cellMemLevel,
  cellOrder,
  CELLS,
  CPU_LADDER,
  FreeIndex,
  level,
  MEM_LADDER,
} from "../hostmgr/free_index.ts";
import { MISMATCH, run } from "./program.ts";
import {
  F_EXCLUSIVE,
  F_KEPT_GPU,
  PACK,
  R_CONSTRAINT,
  R_CPU,
  R_DISK,
  R_EXCLUSIVE,
  R_GPU,
  R_GPU_KEPT,
  R_MEM,
  R_PORTS,
  R_REQUIRED,
  R_SLACK,
  REASONS,
  type RoundGroup,
  type RoundHosts,
  SPREAD_JOB,
  type WorkItem,
} from "./round.ts";
import { DomainSpread, type HostJudge } from "./spread.ts";

const POOL_NORMAL = 0, POOL_GPU = 1, POOL_EXCLUSIVE = 2;

/** What a placer returns for a list of items, flat so it crosses a worker boundary as a few buffers. */
export interface ItemResults {
  /** Round host id per task of each item, items in order. */
  hosts: Int32Array;
  /** Dynamic ports per task, items in order. */
  ports: Int32Array;
  /** REASONS counts per item (zeros when the item was placed whole). */
  failures: Int32Array;
  /** 1 for each item that left tasks unplaced. */
  failed: Uint8Array;
}

/** Picks the host for a group's next task instead of the index search (the full-scan yardstick uses it). */
export type Chooser = (placer: PartitionPlacer, group: number, g: RoundGroup, remaining: number) => number;

/** One undo record per task placed inside an atomic item. */
interface Undo {
  row: number;
  group: number;
  portNext: number;
  portFree: number;
}

export class PartitionPlacer implements HostJudge {
  readonly #index: FreeIndex;
  readonly #order: Int32Array;
  readonly #dead: Int32Array;
  #stamp = 0;
  readonly #statics = new Map<number, Set<number>>();
  #rowOf?: Map<number, number>;
  readonly #spread = new Map<number, Set<number>>();
  readonly #domains: DomainSpread;
  readonly #gpuInNormal: boolean;
  readonly #nC: number;
  readonly #nM: number;
  readonly #nG: number;
  #undo: Undo[] | null = null;

  constructor(
    readonly h: RoundHosts,
    readonly groups: RoundGroup[],
    norms: [number, number, number],
    readonly scoreLimit: number,
    private readonly chooser?: Chooser,
  ) {
    [this.#nC, this.#nM, this.#nG] = norms.map((n) => Math.max(1, n));
    this.#order = cellOrder(this.#nC, this.#nM);
    // Sized to the round's hosts: a saturated cluster's rounds lease a host or two, many times a second.
    this.#index = new FreeIndex(3, Math.max(1, h.count));
    this.#dead = new Int32Array(h.count);
    let gpuInNormal = false;
    for (let r = 0; r < h.count; r++) {
      this.#reindex(r);
      if (!(h.flags[r] & (F_KEPT_GPU | F_EXCLUSIVE)) && h.gpu[r] > 0) gpuInNormal = true;
    }
    this.#gpuInNormal = gpuInNormal;
    for (let k = 0; k < h.portStatic.length; k += 2) {
      this.#staticsOf(h.portStatic[k]).add(h.portStatic[k + 1]);
    }
    this.#domains = new DomainSpread(h);
  }

  /** Changes with every fill: marks of hosts (and domains) without room are valid for one fill. */
  get stamp(): number {
    return this.#stamp;
  }

  /** Places items in order; each item's tasks are a prefix of its slots (the rest unplaced). */
  placeItems(items: WorkItem[]): ItemResults {
    let total = 0, totalPorts = 0;
    for (const it of items) {
      for (const p of it.parts) {
        total += p.count;
        totalPorts += p.count * this.groups[p.group].dynamicPorts;
      }
    }
    const out: ItemResults = {
      hosts: new Int32Array(total).fill(-1),
      ports: new Int32Array(totalPorts),
      failures: new Int32Array(items.length * REASONS),
      failed: new Uint8Array(items.length),
    };
    let slot = 0, port = 0;
    items.forEach((it, i) => {
      const slot0 = slot;
      if (it.atomic) this.#undo = [];
      let ok = true, failedGroup = -1;
      for (const p of it.parts) {
        if (ok || !it.atomic) {
          const placed = this.#fill(p.group, p.count, out, slot, port);
          if (placed < p.count) {
            ok = false;
            failedGroup = p.group;
            if (!it.atomic) this.#diagnose(p.group, out.failures, i * REASONS);
          }
        }
        slot += p.count;
        port += p.count * this.groups[p.group].dynamicPorts;
      }
      if (it.atomic) {
        if (!ok) {
          this.#rollback(out.hosts, slot0, slot);
          // Counted on the hosts as the gang found them: a host its own earlier tasks filled had room
          // for one of them, and the reason must not say no host had.
          this.#diagnose(failedGroup, out.failures, i * REASONS);
        }
        this.#undo = null;
      }
      if (!ok) out.failed[i] = 1;
    });
    return out;
  }

  /** The partition's hosts with this round's placements applied (static ports written back). */
  state(): RoundHosts {
    const pairs: number[] = [];
    for (const [row, ports] of this.#statics) for (const p of ports) pairs.push(row, p);
    this.h.portStatic = Int32Array.from(pairs);
    return this.h;
  }

  /** Why a host does not take one more task of the group, or -1 when it does. */
  feasible(r: number, g: RoundGroup): number {
    const h = this.h;
    if (g.requireHost !== -1 && h.ids[r] !== g.requireHost) return R_REQUIRED;
    const f = h.flags[r];
    if (f & F_EXCLUSIVE) {
      if (!g.exclusiveOk) return R_EXCLUSIVE;
    } else if (f & F_KEPT_GPU && g.gpu <= 0 && g.requireHost === -1) return R_GPU_KEPT; // pinned: see acquire.ts
    if (g.revocable) {
      if (h.slack[r] < g.cpu) return R_SLACK;
    } else if (h.cpu[r] < g.cpu) return R_CPU;
    if (h.mem[r] < g.mem) return R_MEM;
    if (h.disk[r] < g.disk) return R_DISK;
    if (h.gpu[r] < g.gpu) return R_GPU;
    if (!this.#portsFit(r, g)) return R_PORTS;
    if (g.constraint && run(g.constraint, h, r) === MISMATCH) return R_CONSTRAINT;
    return -1;
  }

  /** Places up to `count` tasks of a group; returns how many were placed (slots from `slot` on). */
  #fill(gi: number, count: number, out: ItemResults, slot: number, port: number): number {
    const g = this.groups[gi];
    this.#stamp++;
    let placed = 0;
    const dyn = g.dynamicPorts;
    while (placed < count) {
      const r = this.chooser ? this.chooser(this, gi, g, count - placed) : this.#choose(gi, g);
      if (r < 0) break;
      // Best fit fills the chosen host (it stays the tightest fit); spreading takes one task per decision.
      const fill = this.chooser !== undefined || (g.strategy === PACK && g.domain < 0);
      do {
        this.#placeOne(r, gi, g, out, slot + placed, port + placed * dyn);
        placed++;
      } while (fill && placed < count && this.feasible(r, g) < 0);
      this.#reindex(r);
    }
    return placed;
  }

  /** The host for the group's next task: required, then preferred, then by strategy. */
  #choose(gi: number, g: RoundGroup): number {
    if (g.requireHost !== -1) {
      const r = g.requireHost >= 0 ? this.#row(g.requireHost) : -1;
      return r >= 0 && this.feasible(r, g) < 0 ? r : -1;
    }
    if (g.preferHost >= 0) {
      const r = this.#row(g.preferHost);
      if (r >= 0 && this.feasible(r, g) < 0) return r;
    }
    if (g.domain >= 0) return this.#domains.choose(gi, g, this);
    if (g.strategy === SPREAD_JOB) {
      const used = this.#spread.get(gi);
      const r = this.#search(g, used);
      return r >= 0 || !used ? r : this.#search(g, undefined, true);
    }
    return this.#search(g);
  }

  /**
   * Bounded best-fit search over the free index: cells that can fit, in order of their lower bound;
   * up to `scoreLimit` feasible hosts are scored and the best kept. Best fit stops early once no
   * later cell can beat the best found.
   */
  #search(g: RoundGroup, avoid?: Set<number>, fresh = false): number {
    const h = this.h, index = this.#index, order = this.#order, dead = this.#dead;
    if (fresh) this.#stamp++;
    const stamp = this.#stamp;
    const desc = g.strategy !== PACK;
    const lc = g.revocable ? 0 : level(CPU_LADDER, g.cpu), lm = level(MEM_LADDER, g.mem);
    const shift = g.cpu / this.#nC + g.mem / this.#nM;
    let best = -1, bestScore = Infinity, found = 0;
    for (const pool of this.#pools(g)) {
      for (let j = 0; j < CELLS; j++) {
        const cell = order[desc ? CELLS - 1 - j : j];
        if (cellCpuLevel(cell) < lc || cellMemLevel(cell) < lm || index.count(pool, cell) === 0) continue;
        if (!desc && found > 0) {
          const [cpuLo, memLo] = cellLow(cell);
          if (cpuLo / this.#nC + memLo / this.#nM - shift >= bestScore) break;
        }
        for (let r = index.first(pool, cell); r >= 0; r = index.next(r)) {
          if (dead[r] === stamp || avoid?.has(r)) continue;
          const why = this.feasible(r, g);
          if (why >= 0) {
            // Hosts only lose room during a fill, except to TASK labels that count up.
            if (why !== R_CONSTRAINT || !g.growing) dead[r] = stamp;
            continue;
          }
          const s = this.score(r, g);
          if (s < bestScore || (s === bestScore && h.ids[r] < h.ids[best])) {
            best = r;
            bestScore = s;
          }
          if (++found >= this.scoreLimit) return best;
        }
      }
    }
    return best;
  }

  /** Leftover after one more task (smaller is a tighter fit); negated for most-free strategies. */
  score(r: number, g: RoundGroup): number {
    const h = this.h;
    const cpu = g.revocable ? h.slack[r] : h.cpu[r];
    let left = (cpu - g.cpu) / this.#nC + (h.mem[r] - g.mem) / this.#nM;
    if (g.gpu > 0) left += 2 * (h.gpu[r] - g.gpu) / this.#nG;
    return g.strategy === PACK ? left : -left;
  }

  #pools(g: RoundGroup): number[] {
    const pools = g.gpu > 0 ? (this.#gpuInNormal ? [POOL_GPU, POOL_NORMAL] : [POOL_GPU]) : [POOL_NORMAL];
    if (g.exclusiveOk) pools.unshift(POOL_EXCLUSIVE);
    return pools;
  }

  #placeOne(r: number, gi: number, g: RoundGroup, out: ItemResults, slot: number, port: number): void {
    const h = this.h;
    this.#undo?.push({ row: r, group: gi, portNext: h.portNext[r], portFree: h.portFree[r] });
    if (g.revocable) h.slack[r] -= g.cpu;
    else h.cpu[r] -= g.cpu;
    h.mem[r] -= g.mem;
    h.disk[r] -= g.disk;
    h.gpu[r] -= g.gpu;
    if (g.staticPorts.length) {
      const set = this.#staticsOf(r);
      for (const p of g.staticPorts) set.add(p);
      h.portFree[r] -= g.staticPorts.length;
    }
    for (let d = 0; d < g.dynamicPorts; d++) out.ports[port + d] = this.#nextPort(r);
    for (const col of g.addLabels) h.labels[col][r]++;
    if (g.strategy === SPREAD_JOB) {
      let used = this.#spread.get(gi);
      if (!used) this.#spread.set(gi, used = new Set());
      used.add(r);
    }
    if (g.domain >= 0) this.#domains.count(gi, g, r, 1);
    out.hosts[slot] = h.ids[r];
  }

  /** Gives back everything an atomic item placed, newest first. */
  #rollback(hosts: Int32Array, from: number, to: number): void {
    const h = this.h, undo = this.#undo!;
    for (let k = undo.length - 1; k >= 0; k--) {
      const { row: r, group: gi, portNext, portFree } = undo[k];
      const g = this.groups[gi];
      if (g.revocable) h.slack[r] += g.cpu;
      else h.cpu[r] += g.cpu;
      h.mem[r] += g.mem;
      h.disk[r] += g.disk;
      h.gpu[r] += g.gpu;
      const set = this.#statics.get(r);
      for (const p of g.staticPorts) set?.delete(p);
      h.portNext[r] = portNext;
      h.portFree[r] = portFree;
      for (const col of g.addLabels) h.labels[col][r]--;
      this.#spread.get(gi)?.delete(r);
      if (g.domain >= 0) this.#domains.count(gi, g, r, -1);
      this.#reindex(r);
    }
    hosts.fill(-1, from, to);
  }

  /** Counts, over every host of the partition, the first stage that rejects one more task of the group. */
  #diagnose(gi: number, failures: Int32Array, at: number): void {
    const g = this.groups[gi];
    for (let k = 0; k < REASONS; k++) failures[at + k] = 0;
    for (let r = 0; r < this.h.count; r++) {
      const why = this.feasible(r, g);
      if (why >= 0) failures[at + why]++;
    }
  }

  #portsFit(r: number, g: RoundGroup): boolean {
    const h = this.h;
    if (g.dynamicPorts + g.staticPorts.length === 0) return true;
    if (h.portFree[r] < g.dynamicPorts + g.staticPorts.length) return false;
    for (const p of g.staticPorts) {
      if (p < h.portNext[r] || this.#statics.get(r)?.has(p) || !this.#inRanges(r, p)) return false;
    }
    return true;
  }

  #inRanges(r: number, p: number): boolean {
    const h = this.h;
    for (let k = h.portStart[r]; k < h.portStart[r + 1]; k++) {
      if (p >= h.portRanges[2 * k] && p <= h.portRanges[2 * k + 1]) return true;
    }
    return false;
  }

  /** The lowest free port at or above the dynamic cursor (static ports taken this round are skipped). */
  #nextPort(r: number): number {
    const h = this.h, statics = this.#statics.get(r);
    for (let k = h.portStart[r]; k < h.portStart[r + 1]; k++) {
      const hi = h.portRanges[2 * k + 1];
      for (let p = Math.max(h.portRanges[2 * k], h.portNext[r]); p <= hi; p++) {
        if (statics?.has(p)) continue;
        h.portNext[r] = p + 1;
        h.portFree[r]--;
        return p;
      }
    }
    throw new Error(`Cannot pick a port on host row ${r}: the free count said one was left`);
  }

  #staticsOf(r: number): Set<number> {
    let s = this.#statics.get(r);
    if (!s) this.#statics.set(r, s = new Set());
    return s;
  }

  #row(id: number): number {
    if (!this.#rowOf) {
      this.#rowOf = new Map();
      for (let r = 0; r < this.h.count; r++) this.#rowOf.set(this.h.ids[r], r);
    }
    return this.#rowOf.get(id) ?? -1;
  }

  #reindex(r: number): void {
    const h = this.h, f = h.flags[r];
    const pool = f & F_EXCLUSIVE ? POOL_EXCLUSIVE : f & F_KEPT_GPU ? POOL_GPU : POOL_NORMAL;
    this.#index.set(r, pool, Math.max(0, h.cpu[r]), Math.max(0, h.mem[r]));
  }
}
