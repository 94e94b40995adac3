/**
 * The Mesos backend's offer operations for persistent volumes, as Peloton's host manager made them
 * (`hostmgr/factory/operation/operations.go`): RESERVE + CREATE + LAUNCH for a stateful task's first run,
 * LAUNCH on the offered volume for later runs, DESTROY + UNRESERVE for a deleted volume. Pure: offered
 * pieces in, operations and the pieces each task uses out.
 */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import type { Operation } from "./protocol.ts";
import {
  addBags,
  type Bag,
  bagFromCore,
  bagToMesos,
  filterBag,
  kindOf,
  type PieceRank,
  reservedFor,
  type ResourceKind,
  subtractBags,
  takeResources,
} from "./resources.ts";
import {
  isDynamicallyReserved,
  mapKinds,
  persistenceId,
  reservedForVolume,
  reservedKind,
  strippedKind,
  VOLUME_LABEL,
  volumeKind,
} from "./volumes.ts";

/** Who reserves: the framework's role and principal (Peloton's `peloton` and `peloton`). */
export interface Reserver {
  role: string;
  principal: string;
}

/** A launch's plan: the operations to send before its LAUNCH, the offered pieces it uses, what is left. */
export interface VolumePlan {
  operations: Operation[];
  used: Bag;
  left: Bag;
}

/** The volume's size as the core counts it in the task's disk (whole MB). */
function volumeMb(spec: LaunchSpec): number {
  return Math.ceil(spec.volume!.sizeMb);
}

/** The offered persistent volume with this id, reserved for the role, if any. */
export function findVolume(avail: Bag, volumeId: string, role: string): string | undefined {
  return Object.keys(avail.scalars).find((key) => {
    const kind = kindOf(avail, key);
    return persistenceId(kind) === volumeId && reservedFor(kind) === role && avail.scalars[key] > 0;
  });
}

/**
 * Pieces for a volume's task, best first: those reserved for its volume, other reservations of the role that
 * belong to no volume, unreserved ones, and last those reserved for another volume (the core counts them as
 * the host's, so a task may have them while their volume's task is not running).
 */
function rankFor(volumeId: string | undefined): PieceRank {
  return (kind: ResourceKind) => {
    if (reservedFor(kind) === undefined) return 2;
    const owner = reservedForVolume(kind);
    if (owner === undefined) return 1;
    return owner === volumeId ? 0 : 3;
  };
}

/** Takes a task's resources that are not its volume (cpus, mem, scratch disk, gpus, ports). */
export function takeForTask(avail: Bag, spec: LaunchSpec): { used: Bag; left: Bag } | undefined {
  const scratchMb = spec.volume ? Math.max(0, spec.resources.diskMb - volumeMb(spec)) : spec.resources.diskMb;
  const want = bagFromCore(
    { ...spec.resources, diskMb: scratchMb },
    Object.values(spec.ports),
    spec.revocable === true,
  );
  return takeResources(avail, want, rankFor(spec.volume?.volumeId));
}

/**
 * A stateful task's launch. When the offers carry its volume, the task uses it as offered (its container
 * path is the one it was made with: Mesos matches a volume whole) and its other resources from the offers.
 * Otherwise, unless `exists` says the volume is on the agent but not offered (its last run still holds it),
 * RESERVE takes the task's cpus, mem and gpus and the volume's disk from unreserved pieces, labelled with the
 * volume id, CREATE makes the volume of that disk, and the task uses the reserved pieces and the volume.
 * Undefined when the offers cannot do it now.
 */
export function planVolumeLaunch(
  avail: Bag,
  spec: LaunchSpec,
  who: Reserver,
  exists: boolean,
): VolumePlan | undefined {
  const v = spec.volume!;
  const offered = findVolume(avail, v.volumeId, who.role);
  if (offered) {
    const volume: Bag = {
      scalars: { [offered]: avail.scalars[offered] },
      ranges: {},
      kinds: { [offered]: kindOf(avail, offered) },
    };
    const taken = takeForTask(subtractBags(avail, volume)!, spec);
    return taken && { operations: [], used: addBags(taken.used, volume), left: taken.left };
  }
  if (exists) return undefined;
  // RESERVE works on unreserved pieces (refining a reservation needs RESERVATION_REFINEMENT).
  const unreserved = filterBag(avail, (k) => reservedFor(k) === undefined && k.revocable === undefined);
  const r = spec.resources;
  const reserveWant = bagFromCore({
    cpuMilli: spec.revocable ? 0 : r.cpuMilli,
    memMb: r.memMb,
    diskMb: volumeMb(spec),
    gpuMilli: r.gpuMilli,
  });
  const reserveTaken = takeResources(unreserved, reserveWant);
  if (!reserveTaken) return undefined;
  const labels = [{ key: VOLUME_LABEL, value: v.volumeId }];
  const reserved = mapKinds(reserveTaken.used, (k) => reservedKind(k, who.role, who.principal, labels));
  const diskKey = Object.keys(reserved.scalars).find((k) => kindOf(reserved, k).name === "disk")!;
  const volume = mapKinds(
    {
      scalars: { [diskKey]: reserved.scalars[diskKey] },
      ranges: {},
      kinds: { [diskKey]: kindOf(reserved, diskKey) },
    },
    (k) => volumeKind(k, v.volumeId, who.principal, v.containerPath),
  );
  const reservedRest = filterBag(reserved, (k) => k.name !== "disk");
  // What the task needs besides: scratch disk, ports, revocable cpus; from what RESERVE did not take.
  const rest = takeForTask(subtractBags(avail, reserveTaken.used)!, {
    ...spec,
    resources: { ...r, cpuMilli: spec.revocable ? r.cpuMilli : 0, memMb: 0, gpuMilli: 0 },
  });
  if (!rest) return undefined;
  return {
    operations: [
      { type: "RESERVE", reserve: { resources: bagToMesos(reserved) } },
      { type: "CREATE", create: { volumes: bagToMesos(volume) } },
    ],
    used: addBags(addBags(reservedRest, volume), rest.used),
    left: rest.left,
  };
}

/**
 * DESTROY + UNRESERVE for a deleted volume whose pieces an agent's offers carry (Peloton's
 * `getDestroyOperation` and `getUnreserveOperation`, its reservations found by their label): the volume, then
 * every piece reserved with its label, the volume's disk included once DESTROY gave it back. Undefined when
 * the offers do not carry the volume.
 */
export function planDestroy(avail: Bag, volumeId: string, role: string): Operation[] | undefined {
  const key = findVolume(avail, volumeId, role);
  if (!key) return undefined;
  const volume: Bag = {
    scalars: { [key]: avail.scalars[key] },
    ranges: {},
    kinds: { [key]: kindOf(avail, key) },
  };
  const destroyed = mapKinds(volume, strippedKind);
  const unreserve = addBags(labelledFor(subtractBags(avail, volume)!, volumeId, role), destroyed);
  return [
    { type: "DESTROY", destroy: { volumes: bagToMesos(volume) } },
    { type: "UNRESERVE", unreserve: { resources: bagToMesos(unreserve) } },
  ];
}

/** The offered pieces dynamically reserved for `role` with the volume's label, not the volume itself. */
function labelledFor(avail: Bag, volumeId: string, role: string): Bag {
  return filterBag(
    avail,
    (k) =>
      isDynamicallyReserved(k) && reservedFor(k) === role && persistenceId(k) === undefined &&
      reservedForVolume(k) === volumeId,
  );
}

/**
 * UNRESERVE of the offered pieces reserved with a volume's label when there is no volume to destroy (its
 * CREATE was dropped). Undefined when the offers carry none.
 */
export function planUnreserve(avail: Bag, volumeId: string, role: string): Operation[] | undefined {
  const labelled = labelledFor(avail, volumeId, role);
  if (Object.values(labelled.scalars).every((v) => v <= 0)) return undefined;
  return [{ type: "UNRESERVE", unreserve: { resources: bagToMesos(labelled) } }];
}

/** The role's volumes, and volume-labelled reservations, that offered pieces carry: their volume ids. */
export function volumeIdsOffered(avail: Bag, role: string): string[] {
  const ids = new Set<string>();
  for (const [key, v] of Object.entries(avail.scalars)) {
    const kind = kindOf(avail, key);
    if (v <= 0 || reservedFor(kind) !== role) continue;
    const id = persistenceId(kind) ?? (isDynamicallyReserved(kind) ? reservedForVolume(kind) : undefined);
    if (id !== undefined) ids.add(id);
  }
  return [...ids];
}
