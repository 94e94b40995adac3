/** Transport between daemon processes over HTTP: batched, ordered per destination, re-resolved on failure. */
import type { Message } from "../core/messages.ts";
import type { Address, Receiver, Transport } from "../core/ports/transport.ts";
import { LocalTransport } from "./transport.ts";

export const MESSAGES_PATH = "/internal/v1/messages";

/** What one POST carries. */
export interface Envelope {
  to: Address;
  /** The sending process, so replies to its addresses can be sent back without a registry lookup. */
  from: { instance: string; url: string };
  messages: Message[];
}

/**
 * A POSTed body as an envelope, or what is wrong with it (naming the field): `to` an address, `from` the
 * sender's instance and URL if given, `messages` a list of messages, each with its `kind`. The messages'
 * own fields are the sending daemon's (an authenticated one, when auth is on), not checked here.
 */
export function parseEnvelope(raw: unknown): Envelope | string {
  if (!isObject(raw)) return `envelope: got ${what(raw)}, expected {to, from, messages}`;
  if (typeof raw.to !== "string" || raw.to === "") return `to: got ${what(raw.to)}, expected an address`;
  if (raw.from !== undefined) {
    const from = raw.from;
    if (!isObject(from) || typeof from.instance !== "string" || typeof from.url !== "string") {
      return `from: got ${what(from)}, expected {instance, url}`;
    }
  }
  if (!Array.isArray(raw.messages)) return `messages: got ${what(raw.messages)}, expected a list of messages`;
  for (const [i, m] of raw.messages.entries()) {
    if (!isObject(m)) return `messages[${i}]: got ${what(m)}, expected a message`;
    if (typeof m.kind !== "string") {
      return `messages[${i}].kind: got ${what(m.kind)}, expected a message kind`;
    }
  }
  return raw as unknown as Envelope;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function what(v: unknown): string {
  if (v === undefined) return "nothing";
  return v === null ? "null" : Array.isArray(v) ? "a list" : typeof v;
}

/**
 * Where addresses live. Durable addresses (a role's leader, a job shard) move between processes and
 * messages to them wait and are retried until someone serves them; instance addresses die with their
 * process.
 */
export interface Resolver {
  resolve(address: Address): string | undefined;
  isDurable(address: Address): boolean;
  /**
   * Whether the process an instance address names is still alive (a member of the cluster): its process may
   * refuse the address while it is starting, which is not gone. Without it, a refusal means gone.
   */
  isLive?(address: Address): boolean;
  /** The address's owner refused or could not be reached: look it up again soon. */
  invalidate?(address: Address): void;
}

/** Splits or redirects messages on their way out, and filters them on their way in (job shard routing). */
export interface Router {
  outgoing(to: Address, msg: Message): [Address, Message][] | undefined;
  incoming(to: Address, msg: Message): Message | undefined;
}

export interface HttpTransportOptions {
  instance: string;
  /** This process's base URL. */
  url: string;
  resolver: Resolver;
  router?: Router;
  /** Headers every internal POST carries (the internal user's credentials). */
  headers?: Record<string, string>;
  /** Messages in one POST at most. */
  maxBatch?: number;
  /** Undeliverable messages older than this are dropped (and counted). */
  maxAgeMs?: number;
  retryMs?: number;
  /** Round trips of internal POSTs, for the RPC latency histogram. */
  onPost?: (to: Address, seconds: number, ok: boolean) => void;
  log?: (line: string, fields?: Record<string, unknown>) => void;
}

interface Outbox {
  address: Address;
  items: { msg: Message; atMs: number }[];
  busy: boolean;
  /** Since when (`performance.now()`) its live process has refused the address: not yet registered there. */
  refusedSinceMs?: number;
}

/**
 * How long messages wait for a live process to take an address it refuses (one starting registers its
 * addresses only once it is up) before they are taken for undeliverable.
 */
const STARTING_GRACE_MS = 5_000;

/** Replies answer requests; a request to a durable address waits here for its reply. */
const REPLY_KINDS = new Set(["gangs", "placements", "hosts-acquired", "host-reserved", "api-reply"]);

export class HttpTransport implements Transport {
  readonly #o: Required<Omit<HttpTransportOptions, "router" | "onPost" | "log">> & HttpTransportOptions;
  readonly #local = new LocalTransport();
  readonly #localAddresses = new Set<Address>();
  readonly #outboxes = new Map<Address, Outbox>();
  /** Addresses of other processes learned from their envelopes. */
  readonly #learned = new Map<string, string>();
  /** Requests to durable addresses without a reply yet, by `replyTo#reqId`, to send again to a new leader. */
  readonly #outstanding = new Map<string, { to: Address; msg: Message }>();
  #closed = false;
  dropped = 0;
  posted = 0;

  constructor(options: HttpTransportOptions) {
    this.#o = { headers: {}, maxBatch: 5000, maxAgeMs: 60_000, retryMs: 100, ...options };
  }

  register(address: Address, receiver: Receiver): void {
    this.#localAddresses.add(address);
    this.#local.register(address, receiver);
  }

  unregister(address: Address): void {
    this.#localAddresses.delete(address);
    this.#local.unregister(address);
  }

  serves(address: Address): boolean {
    return this.#localAddresses.has(address);
  }

  send(to: Address, msg: Message): void {
    if (this.#closed) return void this.dropped++;
    const routed = this.#o.router?.outgoing(to, msg);
    if (routed) {
      for (const [t, m] of routed) this.#send(t, m);
      return;
    }
    this.#send(to, msg);
  }

  /** Handles a POST: 200 when taken, 421 when a durable address is not served here, 410 when gone. */
  deliver(env: Envelope): number {
    if (env.from?.instance && env.from.url) this.#learned.set(env.from.instance, env.from.url);
    if (!this.#localAddresses.has(env.to)) return this.#o.resolver.isDurable(env.to) ? 421 : 410;
    for (const raw of env.messages) {
      const msg = this.#o.router ? this.#o.router.incoming(env.to, raw) : raw;
      if (!msg) continue;
      if (REPLY_KINDS.has(msg.kind)) {
        this.#outstanding.delete(`${env.to}#${(msg as { reqId: number }).reqId}`);
      }
      this.#local.send(env.to, msg);
    }
    return 200;
  }

  /** Sends again every request still waiting for an answer from `address` (it has a new leader). */
  replay(address: Address): void {
    for (const { to, msg } of this.#outstanding.values()) if (to === address) this.#enqueue(to, msg);
  }

  /** Waits (up to `timeoutMs`) for queued messages to go out: graceful shutdown. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline && [...this.#outboxes.values()].some((o) => o.items.length > 0)) {
      await sleep(20);
    }
  }

  close(): void {
    this.#closed = true;
    this.#local.close();
    this.#outboxes.clear();
  }

  /** Queued messages per destination, for metrics. */
  queued(): Map<Address, number> {
    return new Map([...this.#outboxes].map(([a, o]) => [a, o.items.length]));
  }

  #send(to: Address, msg: Message): void {
    if (this.#localAddresses.has(to)) {
      if (REPLY_KINDS.has(msg.kind)) this.#outstanding.delete(`${to}#${(msg as { reqId: number }).reqId}`);
      return this.#local.send(to, msg);
    }
    const m = msg as { reqId?: number; replyTo?: Address };
    if (m.replyTo !== undefined && m.reqId && this.#o.resolver.isDurable(to)) {
      this.#outstanding.set(`${m.replyTo}#${m.reqId}`, { to, msg });
    }
    this.#enqueue(to, msg);
  }

  #enqueue(to: Address, msg: Message): void {
    let box = this.#outboxes.get(to);
    if (!box) this.#outboxes.set(to, box = { address: to, items: [], busy: false });
    box.items.push({ msg, atMs: performance.now() });
    if (!box.busy) {
      box.busy = true;
      // Started on a microtask so that everything a daemon sends in one turn goes in one POST.
      queueMicrotask(() => void this.#pump(box));
    }
  }

  #resolve(address: Address): string | undefined {
    const instance = instanceOf(address);
    return this.#o.resolver.resolve(address) ?? (instance ? this.#learned.get(instance) : undefined);
  }

  async #pump(box: Outbox): Promise<void> {
    try {
      while (box.items.length && !this.#closed) {
        this.#expire(box);
        if (!box.items.length) break;
        const url = this.#resolve(box.address);
        if (!url) {
          if (!this.#o.resolver.isDurable(box.address)) {
            this.#drop(box, box.items.length, "no process serves it");
            break;
          }
          await sleep(this.#o.retryMs);
          continue;
        }
        const batch = box.items.slice(0, this.#o.maxBatch);
        const status = await this.#post(url, box.address, batch.map((i) => i.msg));
        if (status === 200) {
          box.items.splice(0, batch.length);
          box.refusedSinceMs = undefined;
          continue;
        }
        if (status === 410) {
          // Gone only when the cluster says its process is; a live one may be starting, its address not yet
          // registered: wait for it a while.
          const now = performance.now();
          box.refusedSinceMs ??= now;
          if (!this.#o.resolver.isLive?.(box.address)) {
            this.#drop(box, box.items.length, "its process is gone");
            break;
          }
          if (now - box.refusedSinceMs >= STARTING_GRACE_MS) {
            this.#drop(box, box.items.length, `its process did not take it within ${STARTING_GRACE_MS} ms`);
            break;
          }
          await sleep(this.#o.retryMs);
          continue;
        }
        this.#o.resolver.invalidate?.(box.address);
        await sleep(this.#o.retryMs);
      }
    } finally {
      box.busy = false;
      if (box.items.length && !this.#closed) {
        box.busy = true;
        setTimeout(() => void this.#pump(box), this.#o.retryMs);
      } else if (!box.items.length) this.#outboxes.delete(box.address);
    }
  }

  async #post(url: string, to: Address, messages: Message[]): Promise<number> {
    const started = performance.now();
    const env: Envelope = { to, from: { instance: this.#o.instance, url: this.#o.url }, messages };
    try {
      const res = await fetch(url + MESSAGES_PATH, {
        method: "POST",
        headers: { "content-type": "application/json", ...this.#o.headers },
        body: JSON.stringify(env),
        signal: AbortSignal.timeout(10_000),
      });
      await res.body?.cancel();
      this.posted++;
      this.#o.onPost?.(to, (performance.now() - started) / 1000, res.ok);
      return res.status;
    } catch {
      this.#o.onPost?.(to, (performance.now() - started) / 1000, false);
      return 0;
    }
  }

  #expire(box: Outbox): void {
    const cutoff = performance.now() - this.#o.maxAgeMs;
    let n = 0;
    while (n < box.items.length && box.items[n].atMs < cutoff) n++;
    if (n) this.#drop(box, n, `not delivered within ${this.#o.maxAgeMs} ms`);
  }

  #drop(box: Outbox, n: number, why: string): void {
    const gone = box.items.splice(0, n);
    this.dropped += n;
    // Which kinds, so that an operator can tell what was lost.
    const kinds: Record<string, number> = {};
    for (const { msg } of gone) kinds[msg.kind] = (kinds[msg.kind] ?? 0) + 1;
    const list = Object.entries(kinds).map(([k, c]) => (c > 1 ? `${k} ×${c}` : k)).join(", ");
    this.#o.log?.(
      `dropped ${n} message${n === 1 ? "" : "s"} to ${box.address} (${list}): ${why}`,
      { to: box.address, dropped: n, kinds },
    );
  }
}

/** `role@instance` addresses name one process. */
export function instanceOf(address: Address): string | undefined {
  const at = address.indexOf("@");
  return at < 0 ? undefined : address.slice(at + 1).split("/")[0];
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
