/** Host reservation for large tasks (Peloton's host reserver): a host's freed resources wait for one task. */
import type { HostFilter, HostLease } from "../messages.ts";
import { describe } from "../model/resources.ts";
import type { Address } from "../ports/transport.ts";
import { FilterSearch } from "./acquire.ts";
import { CELLS } from "./free_index.ts";
import type { HostEntry } from "./host_table.ts";
import type { HostRegistry } from "./registry.ts";

export interface Reservation {
  taskId: string;
  /** The engine's name for this reservation: updates carry it, and a cancel ends only the one it names. */
  id: string;
  replyTo: Address;
  host: HostEntry;
  filter: HostFilter;
}

/** Hosts looked at when choosing one to reserve (Peloton samples ten at random). */
const CANDIDATES = 64;

/**
 * Ids of ended reservations kept (cancelled or completed), so that a reserve request arriving after its own
 * end (its cancel overtook it, or it was delivered twice) is refused. A stale request trails the end by a
 * message or two, so the last thousand are plenty.
 */
const ENDED_KEPT = 1024;

export class Reservations {
  readonly #byTask = new Map<string, Reservation>();
  /** Recently ended reservation ids (insertion order, the oldest dropped past `ENDED_KEPT`). */
  readonly #ended = new Set<string>();

  constructor(private readonly reg: HostRegistry) {}

  get size(): number {
    return this.#byTask.size;
  }

  of(taskId: string): Reservation | undefined {
    return this.#byTask.get(taskId);
  }

  /**
   * Reserves the host that is closest to fitting among ready hosts whose total could hold the task
   * (most free first), or says why none could. Deterministic: ties go to the lower host index. The same
   * request again gets the same host; one with a new id replaces the task's older reservation, which its
   * engine has given up (its cancel may still be on the way). A request whose reservation ended already
   * (its cancel overtook it, or it completed and the request came again) is refused: it must not replace a
   * newer reservation of the task, nor hold a host for a task its engine placed.
   */
  reserve(
    taskId: string,
    id: string,
    replyTo: Address,
    filter: HostFilter,
  ): { host: HostEntry } | { reason: string } {
    const existing = this.#byTask.get(taskId);
    if (existing?.id === id) return { host: existing.host };
    if (this.#ended.has(id)) {
      return { reason: `reservation ${id} has ended already (cancelled or completed)` };
    }
    if (existing) this.cancel(taskId, existing.id);
    const reg = this.reg, t = reg.table, r = filter.minResources;
    const probe = new FilterSearch(reg, filter, 0);
    let best: HostEntry | undefined, bestDeficit = Infinity, looked = 0;
    for (const pool of probe.pools()) {
      for (let j = CELLS - 1; j >= 0 && looked < CANDIDATES; j--) {
        const cell = reg.order[j];
        for (let i = reg.index.first(pool, cell); i >= 0 && looked < CANDIDATES; i = reg.index.next(i)) {
          const h = reg.hosts[i];
          const total = h.info.resources;
          if (total.cpuMilli < r.cpuMilli || total.memMb < r.memMb || total.diskMb < r.diskMb) continue;
          if (total.gpuMilli < r.gpuMilli || probe.constraintMismatch(h)) continue;
          looked++;
          const deficit = Math.max(0, r.cpuMilli - t.freeCpu[i]) / reg.normCpu +
            Math.max(0, r.memMb - t.freeMem[i]) / reg.normMem +
            Math.max(0, r.gpuMilli - t.freeGpu[i]) / reg.normGpu;
          if (deficit < bestDeficit || (deficit === bestDeficit && i < best!.index)) {
            best = h;
            bestDeficit = deficit;
          }
        }
      }
    }
    if (!best) return { reason: `no ready host could ever hold ${describe(r)}` };
    best.reservedFor = taskId;
    reg.reindex(best);
    this.#byTask.set(taskId, { taskId, id, replyTo, host: best, filter });
    return { host: best };
  }

  /**
   * Ends a reservation and returns the host to the index; safe to call twice, and a no-op for a
   * reservation of the task that another has replaced. The id is remembered even when nothing had it yet:
   * its request may still be on the way.
   */
  cancel(taskId: string, id: string): Reservation | undefined {
    this.#end(id);
    const res = this.#byTask.get(taskId);
    if (!res || res.id !== id) return undefined;
    this.#byTask.delete(taskId);
    if (res.host.reservedFor === taskId) res.host.reservedFor = undefined;
    this.reg.reindex(res.host);
    return res;
  }

  /** Ends every reservation made for `replyTo` (an engine that is gone); returns them. */
  cancelFor(replyTo: Address): Reservation[] {
    const gone = [...this.#byTask.values()].filter((r) => r.replyTo === replyTo);
    for (const r of gone) this.cancel(r.taskId, r.id);
    return gone;
  }

  /**
   * When a reserved host has room for its task, leases it to the reservation's owner. Returns the
   * lease to send, or undefined while the host is still short.
   */
  complete(h: HostEntry, now: number): { res: Reservation; lease: HostLease } | undefined {
    const taskId = h.reservedFor;
    if (taskId === undefined || h.leaseId !== undefined) return undefined;
    const res = this.#byTask.get(taskId);
    if (!res) return undefined;
    const search = new FilterSearch(
      this.reg,
      { ...res.filter, hints: undefined, requiredHost: undefined },
      now,
    );
    if (search.mismatch(h)) return undefined;
    this.#byTask.delete(taskId);
    this.#end(res.id);
    h.reservedFor = undefined;
    // Straight from reserved to leased: nobody else can take the host in between.
    return { res, lease: this.reg.lease(h, now) };
  }

  /** Remembers an ended reservation's id, so that its request coming late (or again) is refused. */
  #end(id: string): void {
    this.#ended.delete(id);
    this.#ended.add(id);
    if (this.#ended.size > ENDED_KEPT) this.#ended.delete(this.#ended.values().next().value!);
  }
}
