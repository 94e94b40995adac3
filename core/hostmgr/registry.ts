/** The host manager's hosts: the table, the free-resource index over hosts ready for work, attribute postings, leases. */
import type { HostLease } from "../messages.ts";
import { add, type Resources } from "../model/resources.ts";
import type { HostInfo } from "../ports/host_backend.ts";
import { cellOrder, FreeIndex } from "./free_index.ts";
import { type HostEntry, HostTable, POOL_EXCLUSIVE, POOL_GPU, POOL_NORMAL, POOLS } from "./host_table.ts";
import { freePortRanges } from "./ports.ts";

/** Why a host is not in the index; READY hosts are. Counted so rejections need no scan. */
export const READY = 0;
export const LEASED = 1;
export const RESERVED = 2;
export const MAINTENANCE = 3;
export const LOST = 4;
const CATEGORIES = 5;
const NO_SLACK = Object.freeze({ cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 });

export class HostRegistry {
  readonly table = new HostTable();
  readonly index = new FreeIndex(POOLS);
  readonly byName = new Map<string, HostEntry>();
  /** attribute key → value → hosts with it (all hosts, any state). */
  readonly postings = new Map<string, Map<string, number[]>>();
  #category = new Uint8Array(64);
  readonly #catCount = new Int32Array(CATEGORIES);
  /** Leases in expiry order (every lease has the same timeout), as parallel arrays. */
  #leaseHosts: HostEntry[] = [];
  #leaseIds: string[] = [];
  #leaseHead = 0;
  #leaseSeq = 0;
  normCpu = 1;
  normMem = 1;
  normGpu = 1;
  /** Cells in best-fit order for the current norms. */
  order: Int32Array = cellOrder(1, 1);

  constructor(readonly scarceGpu: boolean, readonly leaseTimeoutMs: number) {}

  get hosts(): readonly HostEntry[] {
    return this.table.entries;
  }

  /** Hosts in a category (READY, LEASED, ...). */
  count(category: number): number {
    return this.#catCount[category];
  }

  category(h: HostEntry): number {
    return this.#category[h.index];
  }

  /** The index pool a host belongs to: exclusive hosts, GPU hosts kept for GPU work, the rest. */
  poolOf(h: HostEntry): number {
    if (h.isExclusive) return POOL_EXCLUSIVE;
    if (this.scarceGpu && h.isGpu) return POOL_GPU;
    return POOL_NORMAL;
  }

  add(info: HostInfo): HostEntry {
    const h = this.table.add(info);
    if (h.index >= this.#category.length) {
      const c = new Uint8Array(this.#category.length * 2);
      c.set(this.#category);
      this.#category = c;
    }
    this.#category[h.index] = LOST; // counted as a change to READY below
    this.#catCount[LOST]++;
    this.byName.set(info.hostname, h);
    this.#post(h);
    this.#widenNorms(info);
    return h;
  }

  /** Replaces a known host's info (re-registration): postings and norms follow. */
  update(h: HostEntry, info: HostInfo): void {
    this.#unpost(h);
    h.info = info;
    this.#post(h);
    this.#widenNorms(info);
    this.table.recount(h);
  }

  /**
   * Puts a host in its category and, when ready, in the index cell of its free resources. A host in
   * maintenance is that, its agent gone or not: a DOWN host's agent has left with its machine.
   */
  reindex(h: HostEntry): void {
    let cat = READY;
    if (h.state !== "HOST_STATE_UP") cat = MAINTENANCE;
    else if (h.lost) cat = LOST;
    else if (h.leaseId !== undefined) cat = LEASED;
    else if (h.reservedFor !== undefined) cat = RESERVED;
    const old = this.#category[h.index];
    if (old !== cat) {
      this.#catCount[old]--;
      this.#catCount[cat]++;
      this.#category[h.index] = cat;
    }
    if (cat === READY) {
      const t = this.table;
      this.index.set(h.index, this.poolOf(h), t.freeCpu[h.index], t.freeMem[h.index]);
    } else this.index.remove(h.index);
  }

  /**
   * Leases a host (out of the index until launch, release or expiry). `own`: what the host holds for the
   * filter's tasks' own volumes, free to them (`HostTable.ownHold`).
   */
  lease(h: HostEntry, now: number, labelCounts?: Record<string, number>, own?: Resources): HostLease {
    h.leaseId = `${h.info.hostname}#${++this.#leaseSeq}`;
    h.leaseExpiresMs = now + this.leaseTimeoutMs;
    this.#leaseHosts.push(h);
    this.#leaseIds.push(h.leaseId);
    this.reindex(h);
    const i = h.index;
    const t = this.table;
    // One literal with every field, so all leases share one shape.
    return {
      leaseId: h.leaseId,
      hostname: h.info.hostname,
      agentId: h.info.agentId,
      free: own ? add(t.free(i), own) : t.free(i),
      total: h.info.resources,
      freeSlack: t.slackCpu[i] || t.slackMem[i] ? t.freeSlack(i) : NO_SLACK,
      attributes: h.info.attributes,
      // Hosts and their info are not changed in place (a re-registration replaces the info): share it.
      freePorts: h.usedPorts.size ? freePortRanges(h.info.portRanges, h.usedPorts) : h.info.portRanges,
      labelCounts,
      keptForGpu: this.poolOf(h) === POOL_GPU,
    };
  }

  /** Ends a lease if it is still the host's current one; safe to call twice. */
  release(leaseId: string): void {
    const h = this.byName.get(leaseId.slice(0, leaseId.lastIndexOf("#")));
    if (!h || h.leaseId !== leaseId) return;
    h.leaseId = undefined;
    this.reindex(h);
  }

  /** Returns hosts whose lease timed out to the index. */
  sweep(now: number): void {
    const hosts = this.#leaseHosts, ids = this.#leaseIds;
    while (this.#leaseHead < hosts.length) {
      const h = hosts[this.#leaseHead], leaseId = ids[this.#leaseHead];
      if (h.leaseId === leaseId && h.leaseExpiresMs > now) break;
      this.#leaseHead++;
      if (h.leaseId === leaseId) {
        h.leaseId = undefined;
        this.reindex(h);
      }
    }
    if (this.#leaseHead > 1024 && this.#leaseHead * 2 > hosts.length) {
      this.#leaseHosts = hosts.slice(this.#leaseHead);
      this.#leaseIds = ids.slice(this.#leaseHead);
      this.#leaseHead = 0;
    }
  }

  /** Hosts carrying an attribute value (`hostname` is always an attribute). */
  posting(key: string, value: string): readonly number[] {
    if (key === "hostname") {
      const h = this.byName.get(value);
      return h ? [h.index] : [];
    }
    return this.postings.get(key)?.get(value) ?? [];
  }

  #post(h: HostEntry): void {
    for (const [k, v] of Object.entries(h.info.attributes)) {
      let byValue = this.postings.get(k);
      if (!byValue) this.postings.set(k, byValue = new Map());
      const list = byValue.get(v);
      if (list) list.push(h.index);
      else byValue.set(v, [h.index]);
    }
  }

  #unpost(h: HostEntry): void {
    for (const [k, v] of Object.entries(h.info.attributes)) {
      const list = this.postings.get(k)?.get(v);
      const at = list?.indexOf(h.index) ?? -1;
      if (at >= 0) list!.splice(at, 1);
    }
  }

  /** Best fit weighs cpu and memory by the largest host, so the cell order follows the cluster's shape. */
  #widenNorms(info: HostInfo): void {
    const r = info.resources;
    if (r.cpuMilli <= this.normCpu && r.memMb <= this.normMem && r.gpuMilli <= this.normGpu) return;
    this.normCpu = Math.max(this.normCpu, r.cpuMilli);
    this.normMem = Math.max(this.normMem, r.memMb);
    this.normGpu = Math.max(this.normGpu, r.gpuMilli);
    this.order = cellOrder(this.normCpu, this.normMem);
  }
}
