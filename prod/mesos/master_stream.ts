/** One SUBSCRIBE response of the emulator: RecordIO events, heartbeats, and the stream-level fault hooks. */
import type { Subscription } from "./master_types.ts";
import type { Event } from "./protocol.ts";
import { encodeRecord } from "./recordio.ts";

/** Faults that apply to every open stream; tests flip them at any time. */
export interface StreamFaults {
  heartbeats: boolean;
  /** When set, outgoing bytes are cut at random places (this PRNG) and records coalesced. */
  rechunk?: () => number;
}

export class EventStream implements Subscription {
  readonly streamId = crypto.randomUUID();
  readonly body: ReadableStream<Uint8Array>;
  frameworkId?: string;
  /**
   * Events are silently lost while the connection stays open (a network partition); so is the end of the
   * stream, which leaves the scheduler's side open (a half-open connection).
   */
  partitioned = false;
  readonly #faults: StreamFaults;
  readonly #record?: (event: Event, streamId: string) => void;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  #ended = false;
  #heartbeat?: ReturnType<typeof setInterval>;
  #pending: Uint8Array[] = [];
  #flushTimer?: ReturnType<typeof setTimeout>;

  constructor(
    faults: StreamFaults,
    onCancel: (stream: EventStream) => void,
    record?: (event: Event, streamId: string) => void,
  ) {
    this.#faults = faults;
    this.#record = record;
    this.body = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
      },
      // The scheduler closed the connection (or it broke): the master marks the framework disconnected.
      cancel: () => {
        this.#ended = true;
        if (this.#closed) return;
        this.#shut();
        onCancel(this);
      },
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The response is over on both sides (ended, or cancelled by the scheduler). */
  get ended(): boolean {
    return this.#ended;
  }

  send(event: Event): void {
    if (this.#closed || this.partitioned) return;
    this.#record?.(event, this.streamId);
    const bytes = encodeRecord(JSON.stringify(event));
    if (!this.#faults.rechunk) {
      this.#flush();
      this.#controller.enqueue(bytes);
      return;
    }
    this.#pending.push(bytes);
    this.#flushTimer ??= setTimeout(() => this.#flush(), 0);
  }

  /** A HEARTBEAT right away (as the master sends after SUBSCRIBED), then one every interval. */
  startHeartbeats(intervalMs: number): void {
    const beat = () => {
      if (this.#faults.heartbeats) this.send({ type: "HEARTBEAT" });
    };
    beat();
    this.#heartbeat = setInterval(beat, intervalMs);
  }

  /**
   * The master is done with the stream: the scheduler sees it end, unless partitioned, when the end is
   * lost like the events and its side stays open and silent.
   */
  close(): void {
    if (this.#closed) return;
    this.#flush();
    this.#shut();
    if (!this.partitioned) this.end();
  }

  /** Ends the response whatever the faults, as when the master's process goes away (connections reset). */
  end(): void {
    this.close();
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.#controller.close();
    } catch {
      // The client already went away.
    }
  }

  #shut(): void {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#pending = [];
  }

  // Coalesces everything queued since the last flush, then cuts it at random byte positions: inside
  // length lines, inside multi-byte characters, across record boundaries.
  #flush(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#pending.length === 0 || this.#closed) return;
    const total = this.#pending.reduce((n, p) => n + p.length, 0);
    const all = new Uint8Array(total);
    let at = 0;
    for (const p of this.#pending) {
      all.set(p, at);
      at += p.length;
    }
    this.#pending = [];
    const prng = this.#faults.rechunk ?? (() => 0.99);
    for (let i = 0; i < all.length;) {
      const n = 1 + Math.floor(prng() * (prng() < 0.5 ? 4 : 97));
      this.#controller.enqueue(all.slice(i, i + n));
      i += n;
    }
  }
}
