/**
 * A leader-elected role of a daemon process (the resource manager, the host manager): the lease is
 * campaigned for, each lease won is a term (`Term`) the role is taken up in, and a lease lost ends the term,
 * drops the role's memory once its writes are stored or fenced off, and campaigns again.
 */
import type { Lease } from "../cluster/cluster_store.ts";
import { LeaseKeeper } from "../cluster/election.ts";
import type { DaemonProcess } from "./process.ts";
import { Term } from "./term.ts";

export interface LeaderRoleHooks {
  /**
   * Takes the role up for a term won with `lease` (the term may end before it is done: check `t.ended`
   * after each wait); calls `leading()` once it serves.
   */
  lead(t: Term, lease: Lease, leading: () => void): Promise<void>;
  /** Drops what the role held in memory, stopping what runs for it, after its term ended. */
  drop(): Promise<void> | void;
  /** What a call still waiting for the role is answered once it stepped down (`unavailable`). */
  steppedDownAnswer: string;
}

export class LeaderRole {
  /** The term being served, if any. */
  term?: Term;
  /** Why the role last stepped down, until a new term serves. */
  steppedDown?: string;
  /** The last step-down, kept once it is over, with when it began. */
  #lastStepDown?: { reason: string; atMs: number };
  /** The step-down is over: the role's memory is dropped and the process campaigns again. */
  #campaigningAgain = false;
  /** Set once the process stops: nothing campaigns again. */
  stopping = false;
  keeper!: LeaseKeeper;
  #terms = 0;
  /** The token of the last lease won: a lease won again gets a later one, so other daemons see a new leader. */
  #lastToken?: number;

  constructor(
    readonly p: DaemonProcess,
    readonly role: string,
    readonly ttlMs: number,
    readonly hooks: LeaderRoleHooks,
  ) {}

  campaign(): void {
    this.keeper = new LeaseKeeper({
      cluster: this.p.cluster,
      name: this.role,
      holder: this.p.instance,
      url: this.p.url,
      ttlMs: this.ttlMs,
      after: this.#lastToken,
      onAcquired: async (lease) => {
        const t = this.term = new Term(this.p, this.role, this.#terms++);
        this.#lastToken = lease.token;
        this.p.fences = () => [{ name: lease.name, holder: lease.holder, token: lease.token }];
        await this.hooks.lead(t, lease, () => this.steppedDown = undefined);
      },
      onLost: (why) => void this.#stepDown(why),
    });
    this.keeper.start();
  }

  /** Stops acting as the leader, waits until its writes are stored or refused, then campaigns again. */
  async #stepDown(why: string): Promise<void> {
    // A stop under way ends the term itself.
    if (this.stopping) return;
    this.p.log.error(`lost the ${this.role} lease; stepping down`, { reason: why });
    this.steppedDown = why;
    this.#lastStepDown = { reason: why, atMs: Date.now() };
    this.#campaigningAgain = false;
    this.term?.end();
    this.term = undefined;
    await this.hooks.drop();
    // The fence stays the lost lease's until the next term sets its own: what is still being written is
    // applied only if no one took the lease meanwhile.
    await this.p.store.flush();
    this.p.failCalls(this.role, this.hooks.steppedDownAnswer);
    if (this.stopping) return;
    this.p.log(`campaigning for the ${this.role} lease again`, { after: this.#lastToken });
    this.#campaigningAgain = true;
    this.campaign();
  }

  /**
   * What /health says of the role: whether this process leads, which process does if another (as the store
   * names it), and its step-down: `steppedDown` while it lasts, `lastSteppedDown` (with when) once this
   * process is a healthy standby again (the step-down done, another process leading, the store reachable)
   * or leads again.
   */
  health(): Record<string, unknown> {
    const lease = this.p.registry.holder(this.role);
    const other = lease && lease.holder !== this.p.instance ? lease : undefined;
    const last = this.#lastStepDown;
    const over = !this.steppedDown ||
      (this.#campaigningAgain && other !== undefined && !this.p.store.unreachable());
    return {
      leader: this.keeper.held,
      ...(other ? { leaderInstance: other.holder, leaderUrl: other.url } : {}),
      ...(last && !over ? { steppedDown: last.reason } : {}),
      ...(last && over
        ? { lastSteppedDown: { reason: last.reason, at: new Date(last.atMs).toISOString() } }
        : {}),
    };
  }
}
