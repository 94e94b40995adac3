/** Request/reply correlation over the one-way Transport: a map of pending calls keyed by reqId. */

/** Tracks calls a daemon made and routes each reply to its continuation exactly once. */
export class PendingCalls<R extends { reqId: number }> {
  #next = 1;
  readonly #pending = new Map<number, (reply: R) => void>();

  /** Allocates a reqId, remembers the continuation and returns the id for the request. */
  register(onReply: (reply: R) => void): number {
    const reqId = this.#next++;
    this.#pending.set(reqId, onReply);
    return reqId;
  }

  /** Routes a reply; returns false for a reply nobody waits for (late or duplicate). */
  resolve(reply: R): boolean {
    const fn = this.#pending.get(reply.reqId);
    if (!fn) return false;
    this.#pending.delete(reply.reqId);
    fn(reply);
    return true;
  }

  /** Answers every call still waiting with `reply(reqId)`: no reply will come (the caller is stopping). */
  failAll(reply: (reqId: number) => R): void {
    const waiting = [...this.#pending];
    this.#pending.clear();
    for (const [reqId, fn] of waiting) fn(reply(reqId));
  }

  /** Stops waiting for a reply (its caller gave up): a reply that comes after all is not routed. */
  cancel(reqId: number): void {
    this.#pending.delete(reqId);
  }

  get size(): number {
    return this.#pending.size;
  }
}
