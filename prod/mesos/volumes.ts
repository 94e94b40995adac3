/** Dynamic reservations and persistent volumes as Mesos converts resources (RESERVE, UNRESERVE, CREATE, DESTROY). */
import type { Resources } from "../../core/model/resources.ts";
import type { Label } from "./protocol.ts";
import {
  type Bag,
  bagToCore,
  kindOf,
  pieceKey,
  reservationsOf,
  reservedFor,
  type ResourceKind,
  scalarOf,
} from "./resources.ts";

/** The label Peloton-style reservations of a persistent volume carry, so DESTROY's UNRESERVE finds them. */
export const VOLUME_LABEL = "peloton.volume_id";

/** A bag with each piece's kind replaced by `fn`'s (pieces whose new kinds agree are added together). */
export function mapKinds(bag: Bag, fn: (kind: ResourceKind) => ResourceKind): Bag {
  const out: Bag = { scalars: {}, ranges: {}, kinds: {} };
  for (const [key, v] of Object.entries(bag.scalars)) {
    if (v <= 0) continue;
    const kind = fn(kindOf(bag, key));
    const k = pieceKey(kind);
    out.scalars[k] = (out.scalars[k] ?? 0) + v;
    out.kinds![k] ??= kind;
  }
  for (const [key, v] of Object.entries(bag.ranges)) {
    if (v.length === 0) continue;
    const kind = fn(kindOf(bag, key));
    const k = pieceKey(kind);
    out.ranges[k] = [...(out.ranges[k] ?? []), ...v.map(([b, e]) => [b, e] as [number, number])];
    out.kinds![k] ??= kind;
  }
  return out;
}

/** The piece's persistent volume id, if it is one. */
export function persistenceId(kind: ResourceKind): string | undefined {
  return kind.disk?.persistence?.id;
}

/** Reserved by an operator or a framework (not `--resources`): the most refined reservation is DYNAMIC. */
export function isDynamicallyReserved(kind: ResourceKind): boolean {
  return reservationsOf(kind).at(-1)?.type === "DYNAMIC";
}

/** The labels of a piece's most refined reservation, as `key=value` pairs. */
export function reservationLabels(kind: ResourceKind): Label[] {
  return reservationsOf(kind).at(-1)?.labels?.labels ?? [];
}

/** The volume id a piece's reservation was made for (its `peloton.volume_id` label). */
export function reservedForVolume(kind: ResourceKind): string | undefined {
  return reservationLabels(kind).find((l) => l.key === VOLUME_LABEL)?.value;
}

/**
 * A piece dynamically reserved for `role` by `principal`, in the format of the offer it came from: with
 * `reservations` when it was written so (RESERVATION_REFINEMENT), else the deprecated `role` + `reservation`,
 * which is what Peloton's operations factory writes.
 */
export function reservedKind(
  kind: ResourceKind,
  role: string,
  principal: string,
  labels: Label[],
): ResourceKind {
  const { role: _role, reservation: _r, reservations, ...rest } = structuredClone(kind);
  const label = labels.length ? { labels: { labels } } : {};
  if (reservations !== undefined) {
    return { ...rest, reservations: [...reservations, { type: "DYNAMIC", role, principal, ...label }] };
  }
  return { ...rest, role, reservation: { principal, ...label } };
}

/** The piece with its most refined reservation popped (UNRESERVE's and RESERVE's other side). */
export function unreservedKind(kind: ResourceKind): ResourceKind {
  const { role: _role, reservation: _r, reservations: _rs, ...rest } = structuredClone(kind);
  const left = reservationsOf(kind).slice(0, -1);
  if (kind.reservations !== undefined) return left.length ? { ...rest, reservations: left } : rest;
  const last = left.at(-1);
  return { ...rest, role: last?.role ?? "*" };
}

/** The disk a persistent volume is made from: the same piece without its persistence and volume. */
export function strippedKind(kind: ResourceKind): ResourceKind {
  const { disk, shared: _shared, ...rest } = structuredClone(kind);
  if (disk?.source === undefined) return rest;
  return { ...rest, disk: { source: disk.source } };
}

/** A piece of `name` made into a persistent volume: Peloton's CREATE (`getCreateOperation`), mode RW. */
export function volumeKind(
  reserved: ResourceKind,
  volumeId: string,
  principal: string,
  containerPath: string,
): ResourceKind {
  return {
    ...structuredClone(reserved),
    disk: { persistence: { id: volumeId, principal }, volume: { container_path: containerPath, mode: "RW" } },
  };
}

/** Disk of `role`'s own persistent volumes (not shared, not on a MOUNT/PATH source), in thousandths. */
export function volumeDiskOf(bag: Bag, role: string): number {
  let sum = 0;
  for (const [key, v] of Object.entries(bag.scalars)) {
    const kind = kindOf(bag, key);
    if (
      kind.name === "disk" && persistenceId(kind) !== undefined && kind.disk?.source === undefined &&
      kind.shared === undefined && kind.revocable === undefined && reservedFor(kind) === role
    ) sum += v;
  }
  return sum;
}

/**
 * A host's capacity in the core's units: plain pieces, and the disk of the role's persistent volumes. The
 * core counts a volume's size in its task's disk, so a volume is part of the disk it shares out (not free
 * scratch: it is never taken as scratch, and it is counted once, not again beside the scratch it came from).
 */
export function capacityToCore(bag: Bag, role: string): Resources {
  return { ...bagToCore(bag), diskMb: Math.floor((scalarOf(bag, "disk") + volumeDiskOf(bag, role)) / 1000) };
}

/**
 * The role's persistent volumes and the pieces dynamically reserved with each (its label) in a bag, by volume
 * id, in the core's units: a volume's disk and its labelled disk count as disk, as the core counts a volume in
 * its task's disk.
 */
export function volumeReservations(bag: Bag, role: string): Map<string, Resources> {
  const byVolume = new Map<string, Bag>();
  for (const [key, v] of Object.entries(bag.scalars)) {
    const kind = kindOf(bag, key);
    if (v <= 0 || kind.revocable !== undefined || reservedFor(kind) !== role) continue;
    const id = persistenceId(kind) ?? (isDynamicallyReserved(kind) ? reservedForVolume(kind) : undefined);
    if (id === undefined) continue;
    let pieces = byVolume.get(id);
    if (!pieces) byVolume.set(id, pieces = { scalars: {}, ranges: {}, kinds: {} });
    pieces.scalars[key] = v;
    pieces.kinds![key] = kind;
  }
  return new Map([...byVolume].map(([id, pieces]) => [id, capacityToCore(pieces, role)]));
}
