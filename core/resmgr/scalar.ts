/** Peloton's `scalar.Resources` (pkg/resmgr/scalar/resources.go): float cpu/memory/disk/gpu with its epsilon rules. */

/**
 * Peloton's `util.ResourceEpsilon`: Mesos keeps resources in fixed point (MESOS-4687), so Peloton treats
 * anything below this as nothing. Entitlement numbers only match Peloton's if this exact value is used.
 */
export const RESOURCE_EPSILON = 0.0009;

export type ResourceKind = "cpu" | "memory" | "disk" | "gpu";

/** Struct order of `scalar.Resources`; Peloton's share phases use a different order (see entitlement.ts). */
export const RESOURCE_KINDS: readonly ResourceKind[] = ["cpu", "memory", "disk", "gpu"];

/** Cores, MB, MB and GPUs, as floats like Peloton's (not the integer host accounting of core/model). */
export interface Scalar {
  cpu: number;
  memory: number;
  disk: number;
  gpu: number;
}

/** A scalar with missing kinds at 0, like a Go struct literal. */
export function scalar(values: Partial<Scalar> = {}): Scalar {
  return { cpu: values.cpu ?? 0, memory: values.memory ?? 0, disk: values.disk ?? 0, gpu: values.gpu ?? 0 };
}

export function zeroScalar(): Scalar {
  return { cpu: 0, memory: 0, disk: 0, gpu: 0 };
}

/** `Resources.Clone`. */
export function cloneScalar(r: Scalar): Scalar {
  return { cpu: r.cpu, memory: r.memory, disk: r.disk, gpu: r.gpu };
}

/** `Resources.Copy`: overwrites `dst` in place. */
export function copyScalar(dst: Scalar, src: Scalar): Scalar {
  dst.cpu = src.cpu;
  dst.memory = src.memory;
  dst.disk = src.disk;
  dst.gpu = src.gpu;
  return dst;
}

/** `Resources.Get`. */
export function getKind(r: Scalar, kind: ResourceKind): number {
  return r[kind];
}

/** `Resources.Set`. */
export function setKind(r: Scalar, kind: ResourceKind, value: number): void {
  r[kind] = value;
}

/** `Resources.Add`: plain float addition, no epsilon. */
export function add(a: Scalar, b: Scalar): Scalar {
  return { cpu: a.cpu + b.cpu, memory: a.memory + b.memory, disk: a.disk + b.disk, gpu: a.gpu + b.gpu };
}

/** `dst = dst + src` in place, for accumulators on hot paths. */
export function addInto(dst: Scalar, src: Scalar): Scalar {
  dst.cpu += src.cpu;
  dst.memory += src.memory;
  dst.disk += src.disk;
  dst.gpu += src.gpu;
  return dst;
}

/**
 * One kind of `Resources.Subtract`: 0 when `from < value` (no negative resources), and a result below the
 * epsilon is also 0, so leftovers smaller than Mesos can represent vanish.
 */
export function subtractKind(from: number, value: number): number {
  if (from < value) return 0;
  const result = from - value;
  return result < RESOURCE_EPSILON ? 0 : result;
}

/** `Resources.Subtract`: a new scalar, each kind clamped by `subtractKind`. */
export function subtract(a: Scalar, b: Scalar): Scalar {
  return {
    cpu: subtractKind(a.cpu, b.cpu),
    memory: subtractKind(a.memory, b.memory),
    disk: subtractKind(a.disk, b.disk),
    gpu: subtractKind(a.gpu, b.gpu),
  };
}

/** `dst = dst.Subtract(value)` in place. */
export function subtractInto(dst: Scalar, value: Scalar): Scalar {
  dst.cpu = subtractKind(dst.cpu, value.cpu);
  dst.memory = subtractKind(dst.memory, value.memory);
  dst.disk = subtractKind(dst.disk, value.disk);
  dst.gpu = subtractKind(dst.gpu, value.gpu);
  return dst;
}

/** `scalar.Min`: Go's math.Min and JS Math.min agree on NaN and -0, so this is exact. */
export function min(a: Scalar, b: Scalar): Scalar {
  return {
    cpu: Math.min(a.cpu, b.cpu),
    memory: Math.min(a.memory, b.memory),
    disk: Math.min(a.disk, b.disk),
    gpu: Math.min(a.gpu, b.gpu),
  };
}

/** One kind of `Resources.LessThanOrEqual`: within the epsilon counts as equal. */
export function lessThanOrEqualKind(a: number, b: number): boolean {
  const v = a - b;
  if (Math.abs(v) < RESOURCE_EPSILON) return true;
  return v < 0;
}

/** `Resources.LessThanOrEqual`, the check admission control uses against entitlements. */
export function lessThanOrEqual(a: Scalar, b: Scalar): boolean {
  return lessThanOrEqualKind(a.cpu, b.cpu) && lessThanOrEqualKind(a.memory, b.memory) &&
    lessThanOrEqualKind(a.disk, b.disk) && lessThanOrEqualKind(a.gpu, b.gpu);
}

/** `Resources.Equal`: exact float equality, no epsilon (Peloton's own choice). */
export function equal(a: Scalar, b: Scalar): boolean {
  return a.cpu === b.cpu && a.memory === b.memory && a.disk === b.disk && a.gpu === b.gpu;
}

/** `r.Equal(scalar.ZeroResource)`. */
export function isZero(r: Scalar): boolean {
  return r.cpu === 0 && r.memory === 0 && r.disk === 0 && r.gpu === 0;
}
