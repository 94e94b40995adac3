/** Mesos resource arithmetic: scalars in fixed-point thousandths (as Mesos does), port-style ranges. */
import type { Resources } from "../../core/model/resources.ts";
import type { Attribute, Range, Resource } from "./protocol.ts";

/**
 * Scalars by name in thousandths (0.5 cpus = 500), ranges by name as sorted, merged [begin, end] pairs.
 * Revocable resources are kept under their own name (`cpus@revocable`), so arithmetic never mixes the two.
 */
export interface Bag {
  scalars: Record<string, number>;
  ranges: Record<string, [number, number][]>;
}

/** Suffix of a revocable resource's name inside a bag. */
export const REVOCABLE = "@revocable";

export function emptyBag(): Bag {
  return { scalars: {}, ranges: {} };
}

/** Mesos keeps three decimal digits of a scalar (`Value::Scalar` fixed point). */
export function toMillis(value: number): number {
  return Math.round(value * 1000);
}

/** Sorts and merges overlapping or adjacent ranges. */
export function mergeRanges(ranges: [number, number][]): [number, number][] {
  const sorted = ranges.filter(([b, e]) => b <= e).map(([b, e]) => [b, e] as [number, number])
    .sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push(r);
  }
  return out;
}

/** a − b for ranges; undefined when b is not inside a. */
export function subtractRanges(a: [number, number][], b: [number, number][]): [number, number][] | undefined {
  let out = mergeRanges(a);
  for (const [lo, hi] of mergeRanges(b)) {
    const i = out.findIndex(([b0, e0]) => b0 <= lo && hi <= e0);
    if (i < 0) return undefined;
    const [b0, e0] = out[i];
    const pieces: [number, number][] = [];
    if (b0 < lo) pieces.push([b0, lo - 1]);
    if (hi < e0) pieces.push([hi + 1, e0]);
    out = [...out.slice(0, i), ...pieces, ...out.slice(i + 1)];
  }
  return out;
}

export function portsToRanges(ports: number[]): [number, number][] {
  return mergeRanges(ports.map((p) => [p, p]));
}

export function addBags(a: Bag, b: Bag): Bag {
  const out = cloneBag(a);
  for (const [k, v] of Object.entries(b.scalars)) out.scalars[k] = (out.scalars[k] ?? 0) + v;
  for (const [k, v] of Object.entries(b.ranges)) {
    out.ranges[k] = mergeRanges([...(out.ranges[k] ?? []), ...v]);
  }
  return out;
}

/** a − b, or undefined when b does not fit inside a (the ACCEPT "more resources than offered" rule). */
export function subtractBags(a: Bag, b: Bag): Bag | undefined {
  const out = cloneBag(a);
  for (const [k, v] of Object.entries(b.scalars)) {
    if (v === 0) continue;
    const left = (out.scalars[k] ?? 0) - v;
    if (left < 0) return undefined;
    out.scalars[k] = left;
  }
  for (const [k, v] of Object.entries(b.ranges)) {
    if (v.length === 0) continue;
    const left = subtractRanges(out.ranges[k] ?? [], v);
    if (!left) return undefined;
    out.ranges[k] = left;
  }
  return out;
}

export function containsBag(a: Bag, b: Bag): boolean {
  return subtractBags(a, b) !== undefined;
}

export function cloneBag(b: Bag): Bag {
  const ranges: Bag["ranges"] = {};
  for (const [k, v] of Object.entries(b.ranges)) ranges[k] = v.map(([x, y]) => [x, y]);
  return { scalars: { ...b.scalars }, ranges };
}

export function isEmptyBag(b: Bag): boolean {
  return Object.values(b.scalars).every((v) => v === 0) &&
    Object.values(b.ranges).every((r) => r.length === 0);
}

/** Reads Mesos resources (SET resources are ignored: nothing here uses them). */
export function bagFromMesos(resources: Resource[]): Bag {
  const bag = emptyBag();
  for (const r of resources) {
    const name = r.revocable ? r.name + REVOCABLE : r.name;
    if (r.type === "SCALAR" && r.scalar) {
      bag.scalars[name] = (bag.scalars[name] ?? 0) + toMillis(Number(r.scalar.value));
    } else if (r.type === "RANGES" && r.ranges) {
      const add = r.ranges.range.map((x: Range) => [Number(x.begin), Number(x.end)] as [number, number]);
      bag.ranges[name] = mergeRanges([...(bag.ranges[name] ?? []), ...add]);
    }
  }
  return bag;
}

export interface MesosResourceFormat {
  /** The deprecated `role` field: `*` for unreserved resources. */
  role?: string;
  /** Set for MULTI_ROLE frameworks: the role the resources are allocated to. */
  allocationRole?: string;
}

/** Writes a bag as Mesos resources in a fixed order (cpus, mem, disk, gpus, then the rest). */
export function bagToMesos(bag: Bag, format: MesosResourceFormat = { role: "*" }): Resource[] {
  const order = (name: string) => {
    const i = ["cpus", "mem", "disk", "gpus", "ports"].indexOf(name);
    return i < 0 ? 99 : i;
  };
  const decorate = (r: Resource): Resource => {
    if (format.role !== undefined) r.role = format.role;
    if (format.allocationRole !== undefined) r.allocation_info = { role: format.allocationRole };
    if (r.name.endsWith(REVOCABLE)) {
      r.name = r.name.slice(0, -REVOCABLE.length);
      r.revocable = {};
    }
    return r;
  };
  const out: Resource[] = [];
  const scalarNames = Object.keys(bag.scalars).filter((k) => bag.scalars[k] > 0);
  for (const name of scalarNames.sort((a, b) => order(a) - order(b) || a.localeCompare(b))) {
    out.push(decorate({ name, type: "SCALAR", scalar: { value: bag.scalars[name] / 1000 } }));
  }
  const rangeNames = Object.keys(bag.ranges).filter((k) => bag.ranges[k].length > 0);
  for (const name of rangeNames.sort((a, b) => order(a) - order(b) || a.localeCompare(b))) {
    const range = bag.ranges[name].map(([begin, end]) => ({ begin, end }));
    out.push(decorate({ name, type: "RANGES", ranges: { range } }));
  }
  return out;
}

/** The core's integer resources (milli-cores, MiB, milli-GPUs) from a bag. */
export function bagToCore(bag: Bag): Resources {
  return {
    cpuMilli: bag.scalars.cpus ?? 0,
    memMb: Math.floor((bag.scalars.mem ?? 0) / 1000),
    diskMb: Math.floor((bag.scalars.disk ?? 0) / 1000),
    gpuMilli: bag.scalars.gpus ?? 0,
  };
}

/** The revocable (slack) part of a bag in the core's units. */
export function slackToCore(bag: Bag): Resources {
  return {
    cpuMilli: bag.scalars["cpus" + REVOCABLE] ?? 0,
    memMb: Math.floor((bag.scalars["mem" + REVOCABLE] ?? 0) / 1000),
    diskMb: Math.floor((bag.scalars["disk" + REVOCABLE] ?? 0) / 1000),
    gpuMilli: bag.scalars["gpus" + REVOCABLE] ?? 0,
  };
}

/**
 * A task's bag from the core's resources and its chosen ports; zero dimensions are left out. A
 * revocable task runs on revocable cpus with regular memory and disk, as Peloton asked for it.
 */
export function bagFromCore(r: Resources, ports: number[] = [], revocable = false): Bag {
  const bag = emptyBag();
  if (r.cpuMilli > 0) bag.scalars[revocable ? "cpus" + REVOCABLE : "cpus"] = r.cpuMilli;
  if (r.memMb > 0) bag.scalars.mem = r.memMb * 1000;
  if (r.diskMb > 0) bag.scalars.disk = r.diskMb * 1000;
  if (r.gpuMilli > 0) bag.scalars.gpus = r.gpuMilli;
  if (ports.length > 0) bag.ranges.ports = portsToRanges(ports);
  return bag;
}

/** Attribute values as Peloton's host manager flattened them: TEXT as is, SCALAR as a number string. */
export function attributesToRecord(attributes: Attribute[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of attributes) {
    if (a.type === "TEXT" && a.text) out[a.name] = a.text.value;
    else if (a.type === "SCALAR" && a.scalar) out[a.name] = String(a.scalar.value);
    else if (a.type === "RANGES" && a.ranges) {
      out[a.name] = `[${a.ranges.range.map((r) => `${r.begin}-${r.end}`).join(",")}]`;
    } else if (a.type === "SET" && a.set) out[a.name] = `{${a.set.item.join(",")}}`;
  }
  return out;
}

/** TEXT attributes, or SCALAR ones for values that are plain numbers. */
export function recordToAttributes(attributes: Record<string, string>): Attribute[] {
  return Object.entries(attributes).map(([name, value]) =>
    /^-?\d+(\.\d+)?$/.test(value)
      ? { name, type: "SCALAR" as const, scalar: { value: Number(value) } }
      : { name, type: "TEXT" as const, text: { value } }
  );
}
