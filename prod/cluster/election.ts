/** Leader election through a store lease: acquire, renew at a third of the TTL, and step down on loss. */
import type { ClusterStore, Lease } from "./cluster_store.ts";

export interface LeaseKeeperOptions {
  cluster: ClusterStore;
  name: string;
  holder: string;
  url: string;
  ttlMs: number;
  /**
   * Called once the lease is taken (a new term: its token is the fence); the lease is renewed meanwhile.
   * If it fails, the lease is given up as lost (`onLost`).
   */
  onAcquired(lease: Lease): void | Promise<void>;
  /**
   * Called when the lease is lost or cannot be renewed in time. A leader that cannot prove it still leads
   * must stop acting: the daemons step down (their role's state thrown away, its last writes stored or
   * fenced off) and campaign again with a new keeper.
   */
  onLost(reason: string): void;
  /**
   * The token of this holder's last term: a lease it still holds with that token (it campaigns again before
   * the lease ran out) is given up and taken anew, so that the new term has a token of its own, which tells
   * the other daemons that the leader's memory is new.
   */
  after?: number;
}

/** Keeps one lease: tries until it gets it, then renews it; a hot standby until then. */
export class LeaseKeeper {
  #lease?: Lease;
  /**
   * Until when the lease is surely ours: the start of the last successful renewal plus the TTL. On the
   * monotonic clock: a wall clock set back (NTP, an operator) would otherwise let a leader whose store is
   * out of reach go on leading after its lease has passed to another.
   */
  #validUntilMs = 0;
  #timer?: ReturnType<typeof setTimeout>;
  #watchdog?: ReturnType<typeof setInterval>;
  #stopped = false;

  constructor(readonly o: LeaseKeeperOptions) {}

  get lease(): Lease | undefined {
    return this.#lease;
  }

  get held(): boolean {
    return this.#lease !== undefined && performance.now() < this.#validUntilMs;
  }

  start(): void {
    void this.#tick();
    // A renewal stuck on an unreachable store must not let this process lead past the lease's end.
    this.#watchdog = setInterval(() => {
      if (this.#lease && performance.now() >= this.#validUntilMs) {
        this.#lose(`lease ${this.o.name} was not renewed in time`);
      }
    }, Math.max(20, Math.min(200, this.o.ttlMs / 10)));
  }

  /** Stops renewing; with `release`, gives the lease up so a follower takes over at once. */
  async stop(release: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#watchdog);
    const l = this.#lease;
    this.#lease = undefined;
    if (release && l) await this.o.cluster.release(l.name, l.holder, l.token).catch(() => {});
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    const started = performance.now();
    try {
      if (this.#lease && started >= this.#validUntilMs) {
        return this.#lose("the lease expired before it was renewed");
      }
      const l = await this.o.cluster.acquire(this.o.name, this.o.holder, this.o.url, this.o.ttlMs);
      if (this.#stopped) return;
      const mine = l.holder === this.o.holder;
      if (this.#lease) {
        if (!mine || l.token !== this.#lease.token) {
          return this.#lose(`lease ${this.o.name} passed to ${l.holder || "no one"} (token ${l.token})`);
        }
        this.#validUntilMs = started + this.o.ttlMs;
      } else if (mine && this.o.after !== undefined && l.token <= this.o.after) {
        await this.o.cluster.release(l.name, l.holder, l.token);
      } else if (mine) {
        this.#lease = l;
        this.#validUntilMs = started + this.o.ttlMs;
        // Taking the lead up (loading pools, starting a backend) runs beside the renewals: on a loaded
        // machine it can take longer than the lease lives. A leader that cannot take the lead up exits.
        Promise.resolve().then(() => this.o.onAcquired(l)).catch((err) =>
          this.#lose(`cannot lead after taking lease ${this.o.name}: ${(err as Error).message}`)
        );
      }
    } catch (err) {
      if (this.#lease && performance.now() >= this.#validUntilMs) {
        return this.#lose(`cannot renew lease ${this.o.name}: ${(err as Error).message}`);
      }
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#tick(), Math.max(50, this.o.ttlMs / 3));
  }

  #lose(reason: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#watchdog);
    this.#lease = undefined;
    this.o.onLost(reason);
  }
}
