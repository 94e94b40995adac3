/** The cluster as the store sees it: leaders, shard owners and live daemons, refreshed in the background. */
import type { Address } from "../../core/ports/transport.ts";
import type { Resolver } from "../http_transport.ts";
import type { ClusterStore, Lease, Member } from "./cluster_store.ts";

/** Job shards (leases `jobmgr-shard-<k>`): every job manager must use the same number. */
export const JOB_SHARDS = 16;
export const SHARD_LEASE_PREFIX = "jobmgr-shard-";
/** The roles elected through a lease of the same name. */
export const ELECTED = ["resmgr", "hostmgr"] as const;

export function shardLease(shard: number): string {
  return `${SHARD_LEASE_PREFIX}${shard}`;
}

/** The address a job shard's messages go to, served by whichever job manager owns the shard. */
export function shardAddress(shard: number): Address {
  return `jobmgr/shard/${shard}`;
}

/** FNV-1a of the job id: every process maps a job to the same shard. */
export function shardOf(jobId: string, shards = JOB_SHARDS): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    h ^= jobId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

export interface ClusterView {
  atMs: number;
  leases: Map<string, Lease>;
  members: Member[];
}

const EMPTY: ClusterView = { atMs: 0, leases: new Map(), members: [] };

export class Registry implements Resolver {
  #view: ClusterView = EMPTY;
  #timer?: ReturnType<typeof setTimeout>;
  #refreshing?: Promise<ClusterView>;
  #stopped = false;
  readonly #listeners: ((view: ClusterView, before: ClusterView) => void)[] = [];

  constructor(readonly cluster: ClusterStore, readonly refreshMs = 500) {}

  get view(): ClusterView {
    return this.#view;
  }

  /** Refreshes now and then every `refreshMs` (a store out of reach at first is waited out by the ticks). */
  async start(): Promise<void> {
    await this.refresh().catch(() => {});
    const tick = () => {
      if (this.#stopped) return;
      this.refresh().catch(() => {}).finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(tick, this.refreshMs);
      });
    };
    this.#timer = setTimeout(tick, this.refreshMs);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Called after every refresh with the new and the previous view. */
  onChange(fn: (view: ClusterView, before: ClusterView) => void): void {
    this.#listeners.push(fn);
  }

  refresh(): Promise<ClusterView> {
    this.#refreshing ??= (async () => {
      try {
        const [leases, members] = await Promise.all([this.cluster.leases(), this.cluster.members()]);
        const before = this.#view;
        this.#view = { atMs: this.cluster.now(), leases: new Map(leases.map((l) => [l.name, l])), members };
        for (const fn of this.#listeners) fn(this.#view, before);
        return this.#view;
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** The live holder of a lease. */
  holder(name: string): Lease | undefined {
    const l = this.#view.leases.get(name);
    return l && l.expiresMs > this.cluster.now() ? l : undefined;
  }

  membersOf(role: string): Member[] {
    const now = this.cluster.now();
    return this.#view.members.filter((m) => m.role === role && m.expiresMs > now);
  }

  // Resolver

  resolve(address: Address): string | undefined {
    if (address === "resmgr" || address === "hostmgr") return this.holder(address)?.url;
    if (address.startsWith("jobmgr/shard/")) return this.holder(shardLease(Number(address.slice(13))))?.url;
    const at = address.indexOf("@");
    if (at < 0) return undefined;
    const instance = address.slice(at + 1).split("/")[0];
    return this.#view.members.find((m) => m.instanceId === instance)?.url;
  }

  /** Whether the process an instance address names is a live member (it may still be starting). */
  isLive(address: Address): boolean {
    const at = address.indexOf("@");
    if (at < 0) return false;
    const instance = address.slice(at + 1).split("/")[0];
    const now = this.cluster.now();
    return this.#view.members.some((m) => m.instanceId === instance && m.expiresMs > now);
  }

  isDurable(address: Address): boolean {
    return address === "resmgr" || address === "hostmgr" || address.startsWith("jobmgr/shard/");
  }

  invalidate(): void {
    void this.refresh().catch(() => {});
  }
}
