/** Mesos resource arithmetic: scalars in fixed-point thousandths (as Mesos does), port-style ranges. */
import type { Resources } from "../../core/model/resources.ts";
import type { Attribute, Range, ReservationInfo, Resource } from "./protocol.ts";

/**
 * Scalars by key in thousandths (0.5 cpus = 500), ranges by key as sorted, merged [begin, end] pairs. A key
 * is a resource's name with what Mesos never adds across (`pieceKey`): `cpus` is unreserved, `cpus(peloton)`
 * reserved for the role, `cpus@revocable` revocable, so arithmetic never mixes them, as Mesos does not.
 */
export interface Bag {
  scalars: Record<string, number>;
  ranges: Record<string, [number, number][]>;
  /**
   * The fields but the value (role, reservations, allocation_info, disk, ...) of pieces read from Mesos, by
   * key, so a piece taken from an offer goes back as it was offered. A piece without one is plain and
   * unreserved (made here, or keyed by its name alone).
   */
  kinds?: Record<string, ResourceKind>;
}

/** A resource but its value: what a piece of a bag is besides its amount. */
export type ResourceKind = Omit<Resource, "type" | "scalar" | "ranges" | "set">;

/** Suffix of a revocable resource's key inside a bag. */
export const REVOCABLE = "@revocable";

export function emptyBag(): Bag {
  return { scalars: {}, ranges: {} };
}

/**
 * A resource's reservations in the post-refinement form, whichever form it came in (as the master upgrades
 * it): the deprecated `role` other than `*` is one reservation, dynamic when `reservation` is set.
 */
export function reservationsOf(r: ResourceKind): ReservationInfo[] {
  if (r.reservations?.length) return r.reservations;
  if (r.role === undefined || r.role === "*") return [];
  return [
    r.reservation ? { type: "DYNAMIC", role: r.role, ...r.reservation } : { type: "STATIC", role: r.role },
  ];
}

/** The role a resource is reserved for (the most refined reservation's), or undefined when unreserved. */
export function reservedFor(r: ResourceKind): string | undefined {
  return reservationsOf(r).at(-1)?.role;
}

/** JSON with object keys sorted, so one message gives one key whichever field order it was written in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
}

function describeReservation(v: ReservationInfo): string {
  if (v.type !== "DYNAMIC") return v.role ?? "";
  const labels = v.labels ? `,${canonical(v.labels)}` : "";
  return `${v.role ?? ""},dynamic,${v.principal ?? ""}${labels}`;
}

/**
 * A piece's key in a bag: its name, then its reservations (`cpus(peloton)`, refined ones `a/a-b`), a disk's
 * source or persistent volume, `<shared>`, and `@revocable` last. Two resources Mesos would add together
 * have one key, whichever reservation format they came in.
 */
export function pieceKey(r: ResourceKind): string {
  let key = r.name;
  const reservations = reservationsOf(r);
  if (reservations.length) key += `(${reservations.map(describeReservation).join("/")})`;
  if (r.disk) key += `[${canonical(r.disk)}]`;
  if (r.shared) key += "<shared>";
  return r.revocable ? key + REVOCABLE : key;
}

/** What a piece of a bag is: as read from Mesos, or, made here, plain and unreserved (by its key). */
export function kindOf(bag: Bag, key: string): ResourceKind {
  const kind = bag.kinds?.[key];
  if (kind) return kind;
  return key.endsWith(REVOCABLE) ? { name: key.slice(0, -REVOCABLE.length), revocable: {} } : { name: key };
}

/**
 * Whether a piece counts as the host's plain capacity of its name: not a persistent volume, not a disk with
 * a source (MOUNT, PATH), not shared. A task takes such pieces only by asking for exactly them.
 */
function isPlain(kind: ResourceKind): boolean {
  return kind.disk === undefined && kind.shared === undefined;
}

/** The plain pieces of a name in a bag (reserved or not), revocable ones or the others. */
function keysOf(bag: Bag, name: string, revocable: boolean): string[] {
  return [...Object.keys(bag.scalars), ...Object.keys(bag.ranges)].filter((key) => {
    const kind = kindOf(bag, key);
    return kind.name === name && isPlain(kind) && (kind.revocable !== undefined) === revocable;
  });
}

/** A scalar's plain amount in a bag, reserved and unreserved pieces together, in thousandths. */
export function scalarOf(bag: Bag, name: string, revocable = false): number {
  return keysOf(bag, name, revocable).reduce((sum, key) => sum + (bag.scalars[key] ?? 0), 0);
}

/** A range resource's plain ranges in a bag (`ports`), reserved and unreserved pieces merged. */
export function rangesOf(bag: Bag, name: string): [number, number][] {
  return mergeRanges(keysOf(bag, name, false).flatMap((key) => bag.ranges[key] ?? []));
}

/** The pieces of a bag whose kind `keep` accepts. */
export function filterBag(bag: Bag, keep: (kind: ResourceKind) => boolean): Bag {
  const out = cloneBag(bag);
  for (const k of Object.keys(out.scalars)) if (!keep(kindOf(bag, k))) delete out.scalars[k];
  for (const k of Object.keys(out.ranges)) if (!keep(kindOf(bag, k))) delete out.ranges[k];
  return out;
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
  if (b.kinds) out.kinds = { ...b.kinds, ...out.kinds };
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

/**
 * A bag as Mesos writes resources in messages (`cpus(peloton):0.5; mem:32; ports:[31000-31005]`), each piece
 * by its key, allocation roles aside.
 */
export function describeBag(bag: Bag): string {
  const scalars = Object.entries(bag.scalars).filter(([, v]) => v > 0).map(([k, v]) => `${k}:${v / 1000}`);
  const ranges = Object.entries(bag.ranges).filter(([, v]) => v.length > 0)
    .map(([k, v]) => `${k}:[${v.map(([b, e]) => `${b}-${e}`).join(",")}]`);
  return [...scalars, ...ranges].join("; ");
}

export function containsBag(a: Bag, b: Bag): boolean {
  return subtractBags(a, b) !== undefined;
}

export function cloneBag(b: Bag): Bag {
  const ranges: Bag["ranges"] = {};
  for (const [k, v] of Object.entries(b.ranges)) ranges[k] = v.map(([x, y]) => [x, y]);
  return b.kinds
    ? { scalars: { ...b.scalars }, ranges, kinds: { ...b.kinds } }
    : { scalars: { ...b.scalars }, ranges };
}

export function isEmptyBag(b: Bag): boolean {
  return Object.values(b.scalars).every((v) => v === 0) &&
    Object.values(b.ranges).every((r) => r.length === 0);
}

/**
 * Reads Mesos resources, each piece under its `pieceKey` with its kind (SET resources are ignored: nothing
 * here uses them).
 */
export function bagFromMesos(resources: Resource[]): Bag {
  const bag: Bag = { scalars: {}, ranges: {}, kinds: {} };
  for (const r of resources) {
    const key = pieceKey(r);
    if (r.type === "SCALAR" && r.scalar) {
      bag.scalars[key] = (bag.scalars[key] ?? 0) + toMillis(Number(r.scalar.value));
    } else if (r.type === "RANGES" && r.ranges) {
      const add = r.ranges.range.map((x: Range) => [Number(x.begin), Number(x.end)] as [number, number]);
      bag.ranges[key] = mergeRanges([...(bag.ranges[key] ?? []), ...add]);
    } else continue;
    const { type: _type, scalar: _scalar, ranges: _ranges, set: _set, ...kind } = r;
    bag.kinds![key] ??= structuredClone(kind);
  }
  return bag;
}

/** How the master writes resources for a framework (the emulator's offers). */
export interface MesosResourceFormat {
  /**
   * RESERVATION_REFINEMENT frameworks get reservations as `reservations`; the others the deprecated `role`
   * (`*` when unreserved), with `reservation` for a dynamic one.
   */
  refinement?: boolean;
  /** Set for MULTI_ROLE frameworks: the role the resources are allocated to. */
  allocationRole?: string;
}

/** A piece's fields in the master's format for a framework. */
function formatted(kind: ResourceKind, format: MesosResourceFormat): ResourceKind {
  const out: ResourceKind = { name: kind.name };
  const reservations = reservationsOf(kind);
  if (format.refinement) {
    if (reservations.length) out.reservations = structuredClone(reservations);
  } else {
    const last = reservations.at(-1);
    out.role = last?.role ?? "*";
    if (last?.type === "DYNAMIC") {
      out.reservation = {};
      if (last.principal !== undefined) out.reservation.principal = last.principal;
      if (last.labels !== undefined) out.reservation.labels = structuredClone(last.labels);
    }
  }
  if (format.allocationRole !== undefined) out.allocation_info = { role: format.allocationRole };
  if (kind.disk) out.disk = structuredClone(kind.disk);
  if (kind.shared) out.shared = {};
  if (kind.revocable) out.revocable = {};
  return out;
}

/**
 * Writes a bag as Mesos resources in a fixed order (cpus, mem, disk, gpus, then the rest). With a format,
 * as the master writes them for a framework; without one, each piece as it was read (an offered piece with
 * the offer's own role, reservations and allocation_info), and a piece made here unreserved (`role: "*"`).
 */
export function bagToMesos(bag: Bag, format?: MesosResourceFormat): Resource[] {
  const order = (name: string) => {
    const i = ["cpus", "mem", "disk", "gpus", "ports"].indexOf(name);
    return i < 0 ? 99 : i;
  };
  const fields = (key: string): ResourceKind => {
    const kind = kindOf(bag, key);
    if (format) return formatted(kind, format);
    return bag.kinds?.[key] ? structuredClone(kind) : { ...kind, role: "*" };
  };
  const sorted = (keys: string[]) =>
    keys.sort((a, b) =>
      order(kindOf(bag, a).name) - order(kindOf(bag, b).name) ||
      kindOf(bag, a).name.localeCompare(kindOf(bag, b).name) ||
      a.localeCompare(b)
    );
  const out: Resource[] = [];
  for (const key of sorted(Object.keys(bag.scalars).filter((k) => bag.scalars[k] > 0))) {
    const { name, ...rest } = fields(key);
    out.push({ name, type: "SCALAR", scalar: { value: bag.scalars[key] / 1000 }, ...rest });
  }
  for (const key of sorted(Object.keys(bag.ranges).filter((k) => bag.ranges[k].length > 0))) {
    const range = bag.ranges[key].map(([begin, end]) => ({ begin, end }));
    const { name, ...rest } = fields(key);
    out.push({ name, type: "RANGES", ranges: { range }, ...rest });
  }
  return out;
}

/**
 * Takes what a task asks for (`want`: plain pieces by name, as `bagFromCore` makes them) from offered
 * pieces, as Peloton's `Builder.extractScalarResources` takes it from each role's leftover in turn: a
 * scalar from the pieces reserved for the framework's role first, then from unreserved ones (Peloton's map
 * order left this open; reserved first keeps the unreserved ones, which other roles could use, for later);
 * each port from the piece that holds it. The pieces used keep their offered kinds. Undefined when the
 * offered pieces do not cover the task.
 */
export function takeResources(
  offered: Bag,
  want: Bag,
  rank: PieceRank = defaultRank,
): { used: Bag; left: Bag } | undefined {
  const left = cloneBag(offered);
  const used: Bag = { scalars: {}, ranges: {}, kinds: {} };
  const candidates = (key: string) => {
    const kind = kindOf(want, key);
    const ranked = keysOf(left, kind.name, kind.revocable !== undefined)
      .map((k) => ({ k, r: rank(kindOf(left, k)) }))
      .filter((x): x is { k: string; r: number } => x.r !== undefined);
    return ranked.sort((a, b) => a.r - b.r || a.k.localeCompare(b.k)).map((x) => x.k);
  };
  const note = (key: string) => {
    const kind = left.kinds?.[key];
    if (kind) used.kinds![key] = kind;
  };
  for (const [key, amount] of Object.entries(want.scalars)) {
    let need = amount;
    for (const piece of candidates(key)) {
      if (need <= 0) break;
      const take = Math.min(need, left.scalars[piece] ?? 0);
      if (take <= 0) continue;
      left.scalars[piece] -= take;
      used.scalars[piece] = (used.scalars[piece] ?? 0) + take;
      note(piece);
      need -= take;
    }
    if (need > 0) return undefined;
  }
  for (const [key, ranges] of Object.entries(want.ranges)) {
    let need = mergeRanges(ranges);
    for (const piece of candidates(key)) {
      if (need.length === 0) break;
      const got = intersectRanges(need, left.ranges[piece] ?? []);
      if (got.length === 0) continue;
      left.ranges[piece] = subtractRanges(left.ranges[piece], got)!;
      used.ranges[piece] = mergeRanges([...(used.ranges[piece] ?? []), ...got]);
      note(piece);
      need = subtractRanges(need, got)!;
    }
    if (need.length > 0) return undefined;
  }
  return { used, left };
}

/**
 * The order `takeResources` takes plain pieces in, lowest first; undefined leaves a piece alone. By
 * default reserved pieces before unreserved ones.
 */
export type PieceRank = (kind: ResourceKind) => number | undefined;

function defaultRank(kind: ResourceKind): number {
  return reservedFor(kind) !== undefined ? 0 : 1;
}

function intersectRanges(a: [number, number][], b: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [b0, e0] of a) {
    for (const [b1, e1] of b) {
      if (Math.max(b0, b1) <= Math.min(e0, e1)) out.push([Math.max(b0, b1), Math.min(e0, e1)]);
    }
  }
  return mergeRanges(out);
}

/**
 * An agent's `--resources` text as Mesos reads it, e.g.
 * `cpus(peloton):0.5;cpus(*):3.5;ports(peloton):[31000-32000]`: a role in parentheses reserves the resource
 * statically for it (`*`, or none, leaves it unreserved); a value in brackets is ranges, any other a scalar.
 * Throws on a part it cannot read, naming it.
 */
export function parseResourceText(text: string): Bag {
  const resources: Resource[] = [];
  for (const part of text.split(";").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^([A-Za-z_][\w.-]*)\s*(?:\(\s*([^()\s]+)\s*\))?\s*:\s*(.+)$/.exec(part);
    if (!m) throw new Error(`Cannot read the resource "${part}": expected name(role):value`);
    const [, name, role = "*", value] = m;
    const ranges = /^\[(.*)\]$/.exec(value.trim());
    if (ranges) {
      const range = ranges[1].split(",").map((r) => r.trim()).filter((r) => r !== "").map((r) => {
        const bounds = /^(\d+)\s*-\s*(\d+)$/.exec(r);
        if (!bounds || Number(bounds[1]) > Number(bounds[2])) {
          throw new Error(`Cannot read the resource "${part}": "${r}" is not a range begin-end`);
        }
        return { begin: Number(bounds[1]), end: Number(bounds[2]) };
      });
      resources.push({ name, type: "RANGES", ranges: { range }, role });
    } else {
      const amount = Number(value.trim());
      if (!(amount >= 0) || value.trim() === "") {
        throw new Error(`Cannot read the resource "${part}": "${value.trim()}" is not a non-negative number`);
      }
      resources.push({ name, type: "SCALAR", scalar: { value: amount }, role });
    }
  }
  return bagFromMesos(resources);
}

/**
 * The core's integer resources (milli-cores, MiB, milli-GPUs) from a bag: reserved and unreserved pieces
 * together; disk is scratch disk only (no persistent volumes, MOUNT or PATH disks, shared disk).
 */
export function bagToCore(bag: Bag): Resources {
  return {
    cpuMilli: scalarOf(bag, "cpus"),
    memMb: Math.floor(scalarOf(bag, "mem") / 1000),
    diskMb: Math.floor(scalarOf(bag, "disk") / 1000),
    gpuMilli: scalarOf(bag, "gpus"),
  };
}

/** The revocable (slack) part of a bag in the core's units. */
export function slackToCore(bag: Bag): Resources {
  return {
    cpuMilli: scalarOf(bag, "cpus", true),
    memMb: Math.floor(scalarOf(bag, "mem", true) / 1000),
    diskMb: Math.floor(scalarOf(bag, "disk", true) / 1000),
    gpuMilli: scalarOf(bag, "gpus", true),
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
