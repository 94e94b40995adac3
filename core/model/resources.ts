/** Resource vectors in integer units, so host accounting never drifts over millions of operations. */

/**
 * A resource vector: cpu in milli-cores, memory and disk in MiB, gpu in milli-GPUs.
 * Peloton's API units (cores, MB, GPUs) are converted at the edge by `fromLimits`.
 */
export interface Resources {
  cpuMilli: number;
  memMb: number;
  diskMb: number;
  gpuMilli: number;
}

export const RESOURCE_KEYS = ["cpuMilli", "memMb", "diskMb", "gpuMilli"] as const;
export type ResourceKey = typeof RESOURCE_KEYS[number];

export function zero(): Resources {
  return { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 };
}

export function resources(cpuMilli: number, memMb: number, diskMb = 0, gpuMilli = 0): Resources {
  return { cpuMilli, memMb, diskMb, gpuMilli };
}

export function copy(r: Resources): Resources {
  return { cpuMilli: r.cpuMilli, memMb: r.memMb, diskMb: r.diskMb, gpuMilli: r.gpuMilli };
}

export function add(a: Resources, b: Resources): Resources {
  return {
    cpuMilli: a.cpuMilli + b.cpuMilli,
    memMb: a.memMb + b.memMb,
    diskMb: a.diskMb + b.diskMb,
    gpuMilli: a.gpuMilli + b.gpuMilli,
  };
}

/** a - b, each dimension clamped at zero. */
export function subtract(a: Resources, b: Resources): Resources {
  return {
    cpuMilli: Math.max(0, a.cpuMilli - b.cpuMilli),
    memMb: Math.max(0, a.memMb - b.memMb),
    diskMb: Math.max(0, a.diskMb - b.diskMb),
    gpuMilli: Math.max(0, a.gpuMilli - b.gpuMilli),
  };
}

/** Adds b into a in place (hot paths avoid allocating). */
export function addInto(a: Resources, b: Resources): void {
  a.cpuMilli += b.cpuMilli;
  a.memMb += b.memMb;
  a.diskMb += b.diskMb;
  a.gpuMilli += b.gpuMilli;
}

/** Subtracts b from a in place, without clamping: callers check `fits` first. */
export function subtractInto(a: Resources, b: Resources): void {
  a.cpuMilli -= b.cpuMilli;
  a.memMb -= b.memMb;
  a.diskMb -= b.diskMb;
  a.gpuMilli -= b.gpuMilli;
}

export function scale(r: Resources, n: number): Resources {
  return {
    cpuMilli: r.cpuMilli * n,
    memMb: r.memMb * n,
    diskMb: r.diskMb * n,
    gpuMilli: r.gpuMilli * n,
  };
}

/** True when `need` fits inside `free` in every dimension. */
export function fits(need: Resources, free: Resources): boolean {
  return need.cpuMilli <= free.cpuMilli && need.memMb <= free.memMb &&
    need.diskMb <= free.diskMb && need.gpuMilli <= free.gpuMilli;
}

export function isZero(r: Resources): boolean {
  return r.cpuMilli === 0 && r.memMb === 0 && r.diskMb === 0 && r.gpuMilli === 0;
}

export function equals(a: Resources, b: Resources): boolean {
  return a.cpuMilli === b.cpuMilli && a.memMb === b.memMb && a.diskMb === b.diskMb &&
    a.gpuMilli === b.gpuMilli;
}

/** Dimension-wise maximum. */
export function max(a: Resources, b: Resources): Resources {
  return {
    cpuMilli: Math.max(a.cpuMilli, b.cpuMilli),
    memMb: Math.max(a.memMb, b.memMb),
    diskMb: Math.max(a.diskMb, b.diskMb),
    gpuMilli: Math.max(a.gpuMilli, b.gpuMilli),
  };
}

/** Peloton's `ResourceConfig` limits in API units (cores, MB, GPUs). */
export interface ResourceLimits {
  cpuLimit?: number;
  memLimitMb?: number;
  diskLimitMb?: number;
  gpuLimit?: number;
}

/** Converts API units to integer units, rounding fractions up so a task never gets less than it asked. */
export function fromLimits(l: ResourceLimits): Resources {
  return {
    cpuMilli: ceilUnits((l.cpuLimit ?? 0) * 1000),
    memMb: ceilUnits(l.memLimitMb ?? 0),
    diskMb: ceilUnits(l.diskLimitMb ?? 0),
    gpuMilli: ceilUnits((l.gpuLimit ?? 0) * 1000),
  };
}

/**
 * The first dimension of `r` that is not a safe whole number of 0 or more (Infinity, NaN, negative,
 * fractional, past 2^53), or undefined: such an amount would poison every sum it joins (Infinity -
 * Infinity is NaN), so the daemons refuse a task carrying one rather than account for it.
 */
export function badUnits(r: Resources): ResourceKey | undefined {
  for (const k of RESOURCE_KEYS) if (!(Number.isSafeInteger(r[k]) && r[k] >= 0)) return k;
  return undefined;
}

/** Converts back to API units. */
export function toLimits(r: Resources): Required<ResourceLimits> {
  return {
    cpuLimit: r.cpuMilli / 1000,
    memLimitMb: r.memMb,
    diskLimitMb: r.diskMb,
    gpuLimit: r.gpuMilli / 1000,
  };
}

// 0.1 * 1000 is 100.00000000000001 in floating point; do not round that up to 101. `+ 0` turns the
// -0 that Math.ceil(-1e-9) gives for a zero limit into 0.
function ceilUnits(x: number): number {
  return Math.ceil(x - 1e-9) + 0;
}

/** "cpu 1.5, mem 2048 MB, disk 10 MB, gpu 1" for messages. */
export function describe(r: Resources): string {
  const parts = [`cpu ${r.cpuMilli / 1000}`, `mem ${r.memMb} MB`, `disk ${r.diskMb} MB`];
  if (r.gpuMilli) parts.push(`gpu ${r.gpuMilli / 1000}`);
  return parts.join(", ");
}
