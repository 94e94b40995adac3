/**
 * One term of a role held in this process (a lease, a set of job shards): the clock, transport and store its
 * core daemon is built on, all cut off when the term ends, so that a daemon that stepped down neither acts
 * nor writes again while a new term, built afresh from the store, takes its place.
 */
import type { Message } from "../../core/messages.ts";
import type { Clock, TimerId } from "../../core/ports/clock.ts";
import { type Store, StoreUnavailableError } from "../../core/ports/store.ts";
import type { Address, Receiver, Transport } from "../../core/ports/transport.ts";
import type { DaemonProcess } from "./process.ts";

/**
 * What still goes out once a term ended: answers to API callers (and their watch streams), which say
 * truthfully what became of a call, whether its writes were stored or refused.
 */
const ANSWERS = new Set<Message["kind"]>(["api-reply", "watch-event", "watch-end"]);

/** Replies, matched to their call by `reqId`. */
const REPLIES = new Set<Message["kind"]>([
  "placements",
  "gangs",
  "hosts-acquired",
  "host-reserved",
  "api-reply",
]);

/**
 * Request ids of one term, as they travel: each term's calls are numbered from its own base, so that a reply
 * to an earlier term's call (a late one, or one sent again to a new leader) never answers a later term's.
 */
const REQ_IDS_PER_TERM = 2 ** 36;

export class Term {
  #ended = false;
  readonly clock: TermClock;
  readonly transport: Transport;
  readonly store: Store;
  /** Added to the request ids of the calls this term's daemon makes from `self`. */
  readonly reqBase: number;

  /**
   * `number` counts this process's terms of the role from 0; `self`, the daemon's own address, whose calls
   * are renumbered (a job manager's: its address outlives its terms).
   */
  constructor(readonly p: DaemonProcess, readonly role: string, readonly number: number, self?: Address) {
    this.reqBase = self === undefined ? 0 : number * REQ_IDS_PER_TERM;
    this.clock = new TermClock(p.clock, () => this.#ended);
    this.transport = {
      send: (to, msg) => {
        if (this.#ended && !ANSWERS.has(msg.kind)) return;
        const m = msg as { reqId?: number; replyTo?: Address };
        if (this.reqBase && self !== undefined && m.replyTo === self && typeof m.reqId === "number") {
          msg = { ...msg, reqId: m.reqId + this.reqBase } as Message;
        }
        p.transport.send(to, msg);
      },
    };
    this.store = termStore(p.store, this);
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Stops the term's timers and cuts its messages (but answers) and writes off; safe to call twice. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.clock.cancelAll();
  }

  /**
   * A write of this term failed that its daemon cannot take back. While the term lasts, the process must
   * exit (its memory is ahead of the store); once it ended, that memory is being thrown away anyway.
   */
  lostWrite(err: Error): void {
    if (!this.#ended) return this.p.lostWrite(err);
    if (err instanceof TermEndedError) return;
    this.p.log.warn("a write of a term that ended was not stored", {
      role: this.role,
      term: this.number,
      error: `${err.name}: ${err.message}`,
    });
  }

  /**
   * A reply addressed to the daemon's own address, as its daemon must see it: renumbered back if it answers a
   * call of this term, else undefined (a placements reply of an earlier term's poll is still carried out, as
   * every placements reply is, with a request id no call has).
   */
  reply(msg: Message): Message | undefined {
    const m = msg as { reqId?: number };
    if (!REPLIES.has(msg.kind) || typeof m.reqId !== "number" || m.reqId === 0) return msg;
    const id = m.reqId - this.reqBase;
    if (id > 0 && id < REQ_IDS_PER_TERM) return { ...msg, reqId: id } as Message;
    return msg.kind === "placements" ? { ...msg, reqId: 0 } : undefined;
  }
}

/** The job manager's instance address across its terms: routes to the term's daemon, keeps the host inventory. */
export class TermFront implements Receiver {
  #current?: { term: Term; daemon: Receiver };
  /** The host manager's inventory as pushed to this address, for the next term's daemon. */
  readonly #hosts = new Map<string, Extract<Message, { kind: "host-inventory" }>["hosts"][number]>();
  #known = false;
  #fixedVolumes = false;

  /** Routes to `daemon` from now on, giving it the host inventory pushed so far. */
  attach(term: Term, daemon: Receiver): void {
    this.#current = { term, daemon };
    if (!this.#known) return;
    const hosts = [...this.#hosts.values()];
    daemon.receive(
      this.#fixedVolumes
        ? { kind: "host-inventory", full: true, hosts, fixedVolumes: true }
        : { kind: "host-inventory", full: true, hosts },
    );
  }

  detach(): void {
    this.#current = undefined;
  }

  receive(msg: Message): void {
    if (msg.kind === "host-inventory") {
      if (msg.full) this.#hosts.clear();
      for (const h of msg.hosts) this.#hosts.set(h.hostname, h);
      if (msg.full) {
        this.#known = true;
        this.#fixedVolumes = msg.fixedVolumes === true;
      }
    }
    const c = this.#current;
    if (!c || c.term.ended) return;
    const routed = c.term.reply(msg);
    if (routed) c.daemon.receive(routed);
  }
}

/** A write a term made after it ended: refused without being tried (the caller is told unavailable). */
class TermEndedError extends StoreUnavailableError {}

/** A clock whose timers all stop at the end of the term. */
class TermClock implements Clock {
  readonly #timers = new Set<TimerId>();

  constructor(readonly inner: Clock & { cancelAll?(): void }, readonly ended: () => boolean) {}

  now(): number {
    return this.inner.now();
  }

  setTimer(delayMs: number, fn: () => void): TimerId {
    const id = this.inner.setTimer(delayMs, () => {
      this.#timers.delete(id);
      if (!this.ended()) fn();
    });
    if (this.ended()) this.inner.cancelTimer(id);
    else this.#timers.add(id);
    return id;
  }

  cancelTimer(id: TimerId): void {
    this.#timers.delete(id);
    this.inner.cancelTimer(id);
  }

  cancelAll(): void {
    for (const id of this.#timers) this.inner.cancelTimer(id);
    this.#timers.clear();
  }
}

/**
 * The store as a term writes it: a write after the term ended is refused without being tried, and a write
 * that fails with no one told of it ends the process only while the term lasts (`Term.lostWrite`).
 */
function termStore(store: Store, term: Term): Store {
  const write = (batch: Parameters<Store["write"]>[0], done?: (err?: Error) => void) => {
    if (term.ended) {
      const err = new TermEndedError(
        `the ${term.role} stepped down (its lease was lost) before it stored this; try again`,
      );
      queueMicrotask(() => done ? done(err) : undefined);
      return;
    }
    store.write(batch, (err) => {
      if (done) done(err);
      else if (err) term.lostWrite(err);
    });
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "write") return write;
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
