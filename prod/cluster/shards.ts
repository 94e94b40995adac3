/** Job shard ownership for several job managers: each holds a fair share of shard leases and drives their jobs. */
import type { ClusterStore, Lease } from "./cluster_store.ts";
import type { Fence } from "../store/fence.ts";
import { JOB_SHARDS, type Registry, shardLease } from "./registry.ts";

export interface ShardOwnerOptions {
  cluster: ClusterStore;
  registry: Registry;
  holder: string;
  url: string;
  ttlMs: number;
  shards?: number;
  /** Loads a newly held shard's jobs and starts driving them. */
  adopt(shard: number): Promise<void>;
  /** Stops driving a shard's jobs and waits until their writes are durable (before the lease goes). */
  release(shard: number): Promise<void>;
  onLost(reason: string): void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

interface Held {
  lease: Lease;
  /** Until when the lease is surely ours, on the monotonic clock (`performance.now()`). */
  validUntilMs: number;
  /** Adopted: its jobs are driven here and its messages taken. */
  ready: boolean;
}

/**
 * Every tick (a third of the TTL) renews the shards held, takes free or expired shards up to a fair share
 * (shards ÷ live job managers, rounded up), and hands one shard back when it holds more than its share
 * while another job manager holds less, so a job manager that joins gets work without anyone failing.
 */
/** How long a stop waits for the balancing step under way. */
const STOP_WAIT_MS = 5_000;

export class ShardOwner {
  readonly held = new Map<number, Held>();
  readonly shards: number;
  #timer?: ReturnType<typeof setTimeout>;
  #watchdog?: ReturnType<typeof setInterval>;
  #stopped = false;
  /** Cleared when the process begins to stop: it renews what it holds but takes no more. */
  #taking = true;
  /** The balancing under way, if any. */
  #balancing?: Promise<void>;
  /** Ticks in a row this process held more than its share; hand-overs wait for a stable view. */
  #over = 0;

  constructor(readonly o: ShardOwnerOptions) {
    this.shards = o.shards ?? JOB_SHARDS;
  }

  isReady(shard: number): boolean {
    return this.held.get(shard)?.ready === true;
  }

  readyShards(): number[] {
    return [...this.held].filter(([, h]) => h.ready).map(([k]) => k);
  }

  /** The leases this process's job writes depend on. */
  fences(): Fence[] {
    return [...this.held.values()].map((h) => ({
      name: h.lease.name,
      holder: h.lease.holder,
      token: h.lease.token,
    }));
  }

  start(): void {
    void this.#tick();
    this.#watchdog = setInterval(() => {
      const now = performance.now();
      for (const [k, h] of this.held) {
        if (now >= h.validUntilMs) return this.#lose(`shard ${k}'s lease was not renewed in time`);
      }
    }, Math.max(20, Math.min(200, this.o.ttlMs / 10)));
  }

  /** Takes no more shards (the process is stopping); those held are still renewed, and handed back as before. */
  stopTaking(): void {
    this.#taking = false;
  }

  /**
   * Resolves once no balancing step is under way: after `stop`, nothing this owner began (a take, a
   * hand-back) touches a lease any more, so a new owner in the same process may take the same shards.
   */
  async idle(): Promise<void> {
    while (this.#balancing) await this.#balancing;
  }

  /** Stops; with `release`, hands every shard back (after the caller stopped driving them). */
  async stop(release: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#watchdog);
    // A balancing step under way ends first, for a while: a shard it takes from now on is handed straight
    // back, and a hand-back it began is finished before anything else is released. A step held up by a busy
    // store does not hold the stop up for longer than that (a take it finishes later still hands back).
    if (this.#balancing) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waited = new Promise<void>((resolve) => timer = setTimeout(resolve, STOP_WAIT_MS));
      await Promise.race([this.#balancing, waited]);
      clearTimeout(timer);
    }
    if (release) {
      for (const h of this.held.values()) {
        await this.o.cluster.release(h.lease.name, h.lease.holder, h.lease.token).catch(() => {});
      }
    }
    this.held.clear();
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#renew();
      // Balancing runs beside the next renewals, one at a time: handing a shard back waits for its writes
      // to be stored, which on a loaded store can take longer than the leases live.
      if (!this.#stopped && !this.#balancing) {
        this.#balancing = this.#balance().catch((err) =>
          this.o.log?.("shard balancing failed", { error: (err as Error).message })
        ).finally(() => this.#balancing = undefined);
      }
    } catch (err) {
      this.o.log?.("shard tick failed", { error: (err as Error).message });
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#tick(), Math.max(50, this.o.ttlMs / 3));
  }

  async #renew(): Promise<void> {
    const started = performance.now(), startedWall = Date.now();
    const held = [...this.held];
    const now = await this.o.cluster.renew(held.map(([, h]) => h.lease.name), this.o.holder, this.o.ttlMs);
    if (this.#stopped) return;
    for (const [k, h] of held) {
      if (this.held.get(k) !== h) continue;
      const l = now.get(h.lease.name);
      if (!l || l.holder !== this.o.holder || l.token !== h.lease.token || l.expiresMs <= startedWall) {
        return this.#lose(`shard ${k} passed to ${l?.holder || "no one"} (token ${l?.token})`);
      }
      h.validUntilMs = started + this.o.ttlMs;
    }
  }

  async #balance(): Promise<void> {
    const view = await this.o.registry.refresh();
    const now = this.o.cluster.now();
    const peers = this.o.registry.membersOf("jobmgr").map((m) => m.instanceId);
    const live = Math.max(1, new Set([...peers, this.o.holder]).size);
    const share = Math.ceil(this.shards / live);
    if (this.held.size < share) {
      this.#over = 0;
      if (!this.#taking) return;
      // Start from a different shard per process, so job managers starting together do not collide.
      const first = hashOf(this.o.holder) % this.shards;
      for (let i = 0; i < this.shards && this.held.size < share && !this.#stopped && this.#taking; i++) {
        const k = (first + i) % this.shards;
        const l = view.leases.get(shardLease(k));
        if (this.held.has(k) || (l && l.expiresMs > now)) continue;
        await this.#take(k);
      }
      return;
    }
    // Hand back one shard when another live job manager holds fewer than it should.
    const counts = new Map(peers.map((p) => [p, 0]));
    for (const l of view.leases.values()) {
      if (l.expiresMs > now && counts.has(l.holder)) counts.set(l.holder, counts.get(l.holder)! + 1);
    }
    const starved = [...counts].some(([p, n]) => p !== this.o.holder && n < Math.floor(this.shards / live));
    if (this.held.size > share && starved) {
      // Two ticks in a row, so a view caught mid-change does not move shards back and forth.
      if (++this.#over < 2) return;
      this.#over = 0;
      const extra = [...this.held.keys()].sort((a, b) => b - a).slice(0, this.held.size - share);
      await Promise.all(extra.map((k) => this.#handBack(k)));
    } else this.#over = 0;
  }

  async #take(k: number): Promise<void> {
    const started = performance.now();
    const l = await this.o.cluster.acquire(shardLease(k), this.o.holder, this.o.url, this.o.ttlMs);
    if (l.holder !== this.o.holder) return;
    if (this.#stopped || !this.#taking) {
      // Taken as this process stopped: held by no one who will drive it, so other job managers would wait
      // out its whole TTL for it.
      await this.o.cluster.release(l.name, l.holder, l.token).catch(() => {});
      return;
    }
    const h: Held = { lease: l, validUntilMs: started + this.o.ttlMs, ready: false };
    this.held.set(k, h);
    this.o.log?.("shard taken", { shard: k, token: l.token });
    // Loading runs beside the renewals: a long load must not let the leases lapse.
    this.o.adopt(k).then(
      () => void (h.ready = this.held.get(k) === h),
      (err) => this.#lose(`cannot load shard ${k}: ${(err as Error).message}`),
    );
  }

  async #handBack(k: number): Promise<void> {
    const h = this.held.get(k);
    if (!h) return;
    h.ready = false;
    await this.o.release(k);
    this.held.delete(k);
    await this.o.cluster.release(h.lease.name, h.lease.holder, h.lease.token);
    this.o.log?.("shard handed back", { shard: k });
  }

  #lose(reason: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#watchdog);
    this.o.onLost(reason);
  }
}

function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
