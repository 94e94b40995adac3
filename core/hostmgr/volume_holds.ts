/** Idle persistent volumes' reservations, held from other work on their host and given to the volume's own task. */
import { addInto, type Resources, zero } from "../model/resources.ts";
import type { BackendEvent, LaunchSpec, VolumeReservation } from "../ports/host_backend.ts";

/**
 * Whether the volume is one of the instances' (`<jobId>-<instanceId>`): the job manager names each volume
 * `<jobId>-<instanceId>-volume-<uuid>`, so its owner is known from the id alone, also after a restart.
 */
export function ownedBy(volumeId: string, owners: readonly string[]): boolean {
  const at = volumeId.lastIndexOf("-volume-");
  return at > 0 && owners.includes(volumeId.slice(0, at));
}

/** What a host holds for its idle volumes: the reservations no running task of the host mounts. */
export function idleHold(
  reservations: ReadonlyMap<string, Resources>,
  inUse: ReadonlySet<string>,
  skip?: (volumeId: string) => boolean,
): Resources {
  const out = zero();
  for (const [volumeId, r] of reservations) if (!inUse.has(volumeId) && !skip?.(volumeId)) addInto(out, r);
  return out;
}

/**
 * The part of `wanted` that can be held out of `free` (free before any hold): never more than is free, as
 * tasks that took reserved pieces (before the reservation was known) hold them already.
 */
export function heldOf(wanted: Resources, free: Resources): Resources {
  const clamp = (w: number, f: number) => Math.max(0, Math.min(w, f));
  return {
    cpuMilli: clamp(wanted.cpuMilli, free.cpuMilli),
    memMb: clamp(wanted.memMb, free.memMb),
    diskMb: clamp(wanted.diskMb, free.diskMb),
    gpuMilli: clamp(wanted.gpuMilli, free.gpuMilli),
  };
}

/**
 * What a launch mounting its volume reserves on a backend with no reservations of its own (the minicluster,
 * the simulator), as a Mesos launch RESERVEs with its volume: the task's cpus (unless revocable), mem and
 * gpus, and the volume's size as disk (its scratch disk is not reserved).
 */
export function launchReservation(spec: Pick<LaunchSpec, "resources" | "volume" | "revocable">): Resources {
  const r = spec.resources;
  return {
    cpuMilli: spec.revocable ? 0 : r.cpuMilli,
    memMb: r.memMb,
    diskMb: spec.volume?.sizeMb ?? 0,
    gpuMilli: r.gpuMilli,
  };
}

/** A host's `volume-reservations` event: its volumes' reservations, by volume id, in a fixed order. */
export function reservationsEvent(
  hostname: string,
  reservations: ReadonlyMap<string, Resources>,
): BackendEvent & { kind: "volume-reservations" } {
  const volumes: VolumeReservation[] = [...reservations]
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    .map(([volumeId, r]) => ({ volumeId, resources: { ...r } }));
  return { kind: "volume-reservations", hostname, volumes };
}

/**
 * What a backend last reported of each host's volumes' reservations: `next` gives the host's
 * `volume-reservations` event when they changed since (none for a host never reported that has none), so
 * only changes go out. `forget` a host the host manager may know nothing of (a new agent): told again.
 */
export class ReservationReports {
  readonly #sent = new Map<string, string>();

  next(
    hostname: string,
    reservations: ReadonlyMap<string, Resources> | undefined,
  ): (BackendEvent & { kind: "volume-reservations" }) | undefined {
    const sent = this.#sent.get(hostname);
    if (sent === undefined && !reservations?.size) return undefined;
    const event = reservationsEvent(hostname, reservations ?? new Map());
    const key = JSON.stringify(event.volumes);
    if (key === sent) return undefined;
    this.#sent.set(hostname, key);
    return event;
  }

  forget(hostname: string): void {
    this.#sent.delete(hostname);
  }
}
