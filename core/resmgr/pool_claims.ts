/**
 * Claims on leaf pools by jobs being created: a job manager's pool lookup for a create records one, and the
 * pool counts as busy (DeleteResourcePool refuses it, naming the job) until the job's tasks are enqueued
 * (they keep it busy from then on), the job manager releases it (the create failed), or it expires.
 */

/** How long a claim holds a pool when nothing ends it (a create whose job manager died, a lost release). */
export const DEFAULT_POOL_CLAIM_MS = 60_000;

export interface PoolClaim {
  poolId: string;
  untilMs: number;
  /** The job being created; unset while the lookup's key stands for a job not named yet. */
  jobId?: string;
}

export class PoolClaims {
  /**
   * By key (the job's id once named), oldest first: every claim lives as long from when it was made or
   * renewed, so the first to expire is always at the front.
   */
  readonly #byKey = new Map<string, PoolClaim>();

  constructor(readonly claimMs: number = DEFAULT_POOL_CLAIM_MS) {}

  get size(): number {
    return this.#byKey.size;
  }

  /** Claims the pool under `key` until `nowMs + claimMs` (a repeated claim renews it). */
  claim(poolId: string, key: string, nowMs: number, jobId?: string): void {
    this.#expire(nowMs);
    this.#byKey.delete(key);
    this.#byKey.set(
      key,
      jobId === undefined ? { poolId, untilMs: nowMs + this.claimMs } : {
        poolId,
        untilMs: nowMs + this.claimMs,
        jobId,
      },
    );
  }

  /** The claim under `key` is the job's (it ends with the job's tasks' enqueue), renewed. */
  name(key: string, jobId: string, nowMs: number): void {
    const c = this.#byKey.get(key);
    if (c) this.claim(c.poolId, key, nowMs, jobId);
  }

  /** The claim under `key` ends (its create failed); safe to call twice. */
  release(key: string): void {
    this.#byKey.delete(key);
  }

  /** The job's claims end: its tasks are enqueued, and keep its pool busy themselves. */
  releaseJob(jobId: string): void {
    for (const [key, c] of this.#byKey) if (c.jobId === jobId) this.#byKey.delete(key);
  }

  /** A live claim on the pool, or undefined. */
  holder(poolId: string, nowMs: number): PoolClaim | undefined {
    this.#expire(nowMs);
    for (const c of this.#byKey.values()) if (c.poolId === poolId) return c;
    return undefined;
  }

  #expire(nowMs: number): void {
    for (const [key, c] of this.#byKey) {
      if (c.untilMs > nowMs) return;
      this.#byKey.delete(key);
    }
  }
}

/** Why a claimed pool is busy, for DeleteResourcePool's refusal. */
export function claimedBy(c: PoolClaim): string {
  return c.jobId === undefined ? "a job is being created in it" : `job ${c.jobId} is being created in it`;
}
