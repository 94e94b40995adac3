/**
 * What hosts hold, integrated over time exactly: the cluster's utilization per resource and what each pool's
 * tasks hold, so a task shorter than the sample interval counts for the time it held its resources.
 *
 * Each quantity keeps a level (what is held now) and an area (the level's integral over time): at every
 * change the area grows by level × (now − last change) and the level moves by the change. An average over
 * any interval is then the difference of two areas over the interval's length, whatever happened between.
 * The capacity of the hosts up is integrated the same way, so utilization over an interval is what tasks
 * held over what the hosts had, both integrated over it (resource-seconds over resource-seconds), as the
 * pools' averages add up to. The simulated cluster reports every change (a task's launch and end, a host's
 * arrival and loss): a few additions per task.
 */
import type { Resources } from "../core/model/resources.ts";

/** Cluster quantities by index: what tasks hold of each resource, and of cpu the part revocable tasks hold. */
export const CPU = 0, MEM = 1, DISK = 2, GPU = 3, REVOCABLE_CPU = 4;
/** Pool quantities by index: regular tasks' cpu and memory, revocable tasks' cpu and memory. */
export const HELD_CPU = 0, HELD_MEM = 1, SLACK_HELD_CPU = 2, SLACK_HELD_MEM = 3;

/** The areas of a meter at one time (cumulative since the run began), to take averages between two. */
export interface UsageAreas {
  /** ∫ held dt per cluster quantity (`CPU` … `REVOCABLE_CPU`), in milli-cores, MB and milli-GPUs · ms. */
  held: Float64Array;
  /** ∫ capacity dt of the hosts up, per resource (`CPU` … `GPU`), in the same units. */
  capacity: Float64Array;
  /** ∫ held dt per pool (by pool index) and pool quantity, in the cluster's units · ms. */
  pools: Float64Array[];
  atMs: number;
}

/** What a pool's tasks hold on hosts now, and the integral of it. */
class PoolLevel {
  readonly level = new Float64Array(4);
  readonly area = new Float64Array(4);
  lastMs = 0;

  advance(nowMs: number): void {
    const dt = nowMs - this.lastMs;
    if (dt <= 0) return;
    const l = this.level, a = this.area;
    a[0] += l[0] * dt, a[1] += l[1] * dt, a[2] += l[2] * dt, a[3] += l[3] * dt;
    this.lastMs = nowMs;
  }
}

export class UsageMeter {
  /** Held now, in milli-cores, MB and milli-GPUs, by cluster quantity (`CPU` … `REVOCABLE_CPU`). */
  readonly held = new Float64Array(5);
  /** The hosts up now: what utilization holds against (cpu, memory, disk, gpu). */
  readonly capacity = new Float64Array(4);
  readonly #heldArea = new Float64Array(5);
  readonly #capacityArea = new Float64Array(4);
  #lastMs = 0;
  readonly #pools: PoolLevel[] = [];
  readonly #poolIndex = new Map<string, number>();

  /** The index of a pool (by path) whose tasks are metered apart, made on first use. */
  pool(path: string): number {
    let i = this.#poolIndex.get(path);
    if (i === undefined) {
      i = this.#pools.push(new PoolLevel()) - 1;
      this.#poolIndex.set(path, i);
    }
    return i;
  }

  /** The index of a pool by path, or -1 when no task of it was ever metered. */
  poolOf(path: string): number {
    return this.#poolIndex.get(path) ?? -1;
  }

  /** A task takes (`sign` 1) or gives back (-1) its resources on a host that is up; `pool` -1 for none. */
  hold(nowMs: number, r: Resources, revocable: boolean, pool: number, sign: 1 | -1): void {
    this.#advance(nowMs);
    const h = this.held;
    const cpu = sign * r.cpuMilli, mem = sign * r.memMb;
    h[CPU] += cpu, h[MEM] += mem, h[DISK] += sign * r.diskMb, h[GPU] += sign * r.gpuMilli;
    if (revocable) h[REVOCABLE_CPU] += cpu;
    if (pool < 0) return;
    const p = this.#pools[pool];
    p.advance(nowMs);
    if (revocable) p.level[SLACK_HELD_CPU] += cpu, p.level[SLACK_HELD_MEM] += mem;
    else p.level[HELD_CPU] += cpu, p.level[HELD_MEM] += mem;
  }

  /** A host comes up (`sign` 1) or goes away (-1): the cluster's capacity changes. */
  hostCapacity(nowMs: number, r: Resources, sign: 1 | -1): void {
    this.#advance(nowMs);
    const c = this.capacity;
    c[CPU] += sign * r.cpuMilli, c[MEM] += sign * r.memMb, c[DISK] += sign * r.diskMb;
    c[GPU] += sign * r.gpuMilli;
  }

  /** The areas up to `nowMs` (not before the last change). */
  areas(nowMs: number): UsageAreas {
    this.#advance(nowMs);
    const pools = this.#pools.map((p) => {
      p.advance(nowMs);
      return Float64Array.from(p.area);
    });
    return {
      held: Float64Array.from(this.#heldArea),
      capacity: Float64Array.from(this.#capacityArea),
      pools,
      atMs: nowMs,
    };
  }

  #advance(nowMs: number): void {
    const dt = nowMs - this.#lastMs;
    if (dt <= 0) return;
    const h = this.held, a = this.#heldArea, c = this.capacity, ca = this.#capacityArea;
    a[0] += h[0] * dt, a[1] += h[1] * dt, a[2] += h[2] * dt, a[3] += h[3] * dt, a[4] += h[4] * dt;
    ca[0] += c[0] * dt, ca[1] += c[1] * dt, ca[2] += c[2] * dt, ca[3] += c[3] * dt;
    this.#lastMs = nowMs;
  }
}

/** Averages of a meter's quantities between two of its readings. */
export interface UsageAverages {
  /**
   * Utilization per cluster quantity: what tasks held over what the hosts up had, each integrated over the
   * interval (resource-seconds held over resource-seconds available), revocable cpu over the cpu. When the
   * capacity changes in the interval this is not the mean of the moment's ratios: an hour at half of 100
   * cores and an hour at all of 300 is 350 of 400 core-hours, 0.875, not 0.75. Null where nothing of it
   * was up in the interval (no host up, or no GPU in the cluster): a fraction of nothing, not an idle 0.
   */
  ratio: (number | null)[];
  /** Revocable cpu held, milli-cores. */
  revocableCpu: number;
  /** Per pool index: held per pool quantity, in the cluster's units. */
  pools: number[][];
}

/**
 * The averages between two readings (`from` earlier), or, for an empty interval, 0 (a ratio: null, as for
 * an interval without capacity).
 * A pool the earlier reading did not have yet held nothing before it.
 */
export function averagesBetween(from: UsageAreas, to: UsageAreas): UsageAverages {
  const dt = to.atMs - from.atMs;
  const avg = (a: number, b: number) => (dt > 0 ? (b - a) / dt : 0);
  const held = (k: number) => to.held[k] - from.held[k];
  const ratio = (k: number, of: number) => {
    const available = to.capacity[of] - from.capacity[of];
    return dt > 0 && available > 0 ? held(k) / available : null;
  };
  return {
    ratio: [ratio(CPU, CPU), ratio(MEM, MEM), ratio(DISK, DISK), ratio(GPU, GPU), ratio(REVOCABLE_CPU, CPU)],
    revocableCpu: dt > 0 ? held(REVOCABLE_CPU) / dt : 0,
    pools: to.pools.map((p, i) => Array.from(p, (x, k) => avg(from.pools[i]?.[k] ?? 0, x))),
  };
}

/** A reading of a meter nothing happened on yet, at `atMs`. */
export function emptyAreas(atMs = 0): UsageAreas {
  return { held: new Float64Array(5), capacity: new Float64Array(4), pools: [], atMs };
}
