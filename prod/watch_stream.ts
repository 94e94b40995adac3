/**
 * The WatchService's HTTP stream, shared by `peloton up` and the daemons: a Watch call's reply and the job
 * manager's `watch-event`s become lines of JSON (`application/x-ndjson`), one WatchResponse each, the first
 * `{watchId}`; a `watch-end` becomes a last line `{"error": {code, message}}`. A client that goes away, or
 * reads so slowly that `maxQueued` responses wait for it, has its watch cancelled in the job manager.
 */
import { WATCH_SERVICE } from "../core/jobmgr/watch.ts";
import type { ApiErrorCode, ApiReply, Message } from "../core/messages.ts";
import type { Address, Receiver, Transport } from "../core/ports/transport.ts";
import { RPC_STATUS_SUCCESS, rpcError } from "./daemons/http_errors.ts";

export const WATCH_PROCEDURE = `${WATCH_SERVICE}::Watch`;
export const CANCEL_PROCEDURE = `${WATCH_SERVICE}::Cancel`;

/** The stream's content type: a JSON value per line. */
export const NDJSON = "application/x-ndjson";

/** Responses waiting for a client at most; one more aborts its stream (Peloton's watch buffer). */
export const MAX_QUEUED_RESPONSES = 1000;

/** The slice of a transport a stream needs: an address of its own, for the reply and the events. */
export interface StreamTransport extends Transport {
  register(address: Address, receiver: Receiver): void;
  unregister(address: Address): void;
}

export interface WatchStreamsOptions {
  transport: StreamTransport;
  /** This front's address; each stream listens at `<base>/watch/<n>`. */
  base: Address;
  maxQueued?: number;
  /** How long a stream's address outlives its end, for the answer to the Cancel it sent. */
  cancelWaitMs?: number;
}

/** What `open` answers: the HTTP response, and `ok` or the code that refused the watch (for metrics). */
export interface OpenedWatch {
  response: Response;
  code: ApiErrorCode | "ok";
}

type WatchError = { code: ApiErrorCode; message: string };

const encoder = new TextEncoder();

/** Each stream has an address of its own, so its two calls are told apart by fixed ids. */
const WATCH_REQ = 1, CANCEL_REQ = 2;

function line(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value) + "\n");
}

/** The open watch streams of one HTTP front. */
export class WatchStreams {
  readonly #o: Required<WatchStreamsOptions>;
  readonly #streams = new Map<Address, WatchStream>();
  #next = 0;

  constructor(options: WatchStreamsOptions) {
    this.#o = { maxQueued: MAX_QUEUED_RESPONSES, cancelWaitMs: 10_000, ...options };
  }

  /** Streams whose address is still registered (open, or waiting for their Cancel's answer). */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Sends the Watch call to `jobmgr` and answers its stream, or the error that refused it as a plain RPC
   * error. No reply within `ttlMs` is `deadline-exceeded`; a watch that the late reply opens is cancelled.
   * With `deadline` (the caller gave its Context-TTL-Ms), `ttlMs` bounds the whole stream, as a gRPC deadline
   * bounds Peloton's: when it passes, the stream ends with a last line `deadline-exceeded` and its watch is
   * cancelled. Without, the stream runs until it is cancelled or ends. Each response goes through `shape`
   * (`replyShaper`: the extension fields only for a caller that asked for them).
   */
  open(
    jobmgr: Address,
    body: unknown,
    ttlMs: number,
    deadline = false,
    shape: (response: unknown) => unknown = (r) => r,
  ): Promise<OpenedWatch> {
    const address = `${this.#o.base}/watch/${++this.#next}`;
    const stream = new WatchStream(this.#o, jobmgr, address, () => this.#streams.delete(address), shape);
    if (deadline) stream.endAt(ttlMs);
    this.#streams.set(address, stream);
    this.#o.transport.register(address, stream);
    this.#o.transport.send(jobmgr, {
      kind: "api",
      reqId: WATCH_REQ,
      replyTo: address,
      procedure: WATCH_PROCEDURE,
      body,
    });
    return stream.opened(ttlMs);
  }

  /** Ends every stream with `error` and cancels its watch (the front stops): nothing of theirs is left. */
  endAll(code: ApiErrorCode, message: string): void {
    for (const s of [...this.#streams.values()]) s.shutdown({ code, message });
  }
}

/** One Watch call: waiting for its reply, then streaming, then ending (waiting for its Cancel's answer). */
class WatchStream implements Receiver {
  #phase: "calling" | "abandoned" | "open" | "ended" = "calling";
  #watchId = "";
  #controller?: ReadableStreamDefaultController<Uint8Array>;
  #opened = Promise.withResolvers<OpenedWatch>();
  #timer?: ReturnType<typeof setTimeout>;
  /** A Cancel is on its way (its answer will come here). */
  #cancelling = false;
  /** The job manager ended the watch itself: a refused Cancel need not be sent again. */
  #coreEnded = false;
  /** The stream's deadline, when its caller set one (see `endAt`). */
  #deadline?: ReturnType<typeof setTimeout>;

  constructor(
    readonly o: Required<WatchStreamsOptions>,
    readonly jobmgr: Address,
    readonly address: Address,
    readonly forget: () => void,
    readonly shape: (response: unknown) => unknown,
  ) {}

  opened(ttlMs: number): Promise<OpenedWatch> {
    this.#timer = setTimeout(() => {
      if (this.#phase !== "calling") return;
      // A reply may still come: kept until then (or as long again) so that its watch is cancelled.
      this.#phase = "abandoned";
      this.#linger(ttlMs);
      this.#opened.resolve(
        refused({ code: "deadline-exceeded", message: `Watch timed out after ${ttlMs} ms` }),
      );
    }, ttlMs);
    return this.#opened.promise;
  }

  /**
   * Ends the stream `ms` from now, as a gRPC deadline ends a server stream: a last line `deadline-exceeded`,
   * and the watch cancelled in the job manager. A stream not open by then is refused by `opened`'s timer.
   */
  endAt(ms: number): void {
    this.#deadline = setTimeout(() => {
      if (this.#phase !== "open") return;
      this.#end({
        code: "deadline-exceeded",
        message: `deadline exceeded: ${this.#watchId} ran for its ${ms} ms (Context-TTL-Ms)`,
      });
      this.#cancel();
    }, ms);
  }

  receive(m: Message): void {
    if (m.kind === "api-reply") return this.#reply(m);
    if (m.kind === "watch-event" && m.watchId === this.#watchId) return this.#push(m.response);
    if (m.kind === "watch-end" && m.watchId === this.#watchId) {
      this.#coreEnded = true;
      if (this.#phase === "open") this.#end(m.error);
      if (!this.#cancelling) this.#release();
    }
  }

  /** The front stops: a last line if the client still listens, the core told, the address let go now. */
  shutdown(error: WatchError): void {
    if (this.#phase === "calling") this.#opened.resolve(refused(error));
    if (this.#phase === "open") {
      this.#end(error);
      this.#cancel();
    }
    this.#release();
  }

  #reply(m: ApiReply): void {
    if (m.reqId === CANCEL_REQ) {
      this.#cancelling = false;
      // Refused (a Read lockdown covers Cancel too): the watch still sends here, so the address stays and
      // asks again later.
      if (m.error && m.error.code !== "not-found" && !this.#coreEnded) {
        clearTimeout(this.#timer);
        this.#timer = setTimeout(() => this.#cancel(), this.o.cancelWaitMs);
        return;
      }
      return this.#release();
    }
    if (m.reqId !== WATCH_REQ) return;
    const watchId = (m.body as { watchId?: unknown } | undefined)?.watchId;
    if (this.#phase === "abandoned") {
      if (m.error || typeof watchId !== "string") return this.#release();
      this.#watchId = watchId;
      return this.#cancel();
    }
    if (this.#phase !== "calling") return;
    clearTimeout(this.#timer);
    if (m.error || typeof watchId !== "string") {
      this.#release();
      const error = m.error ??
        { code: "internal", message: `Watch answered no watch id: ${JSON.stringify(m.body)}` };
      return this.#opened.resolve(refused(error));
    }
    // Made here, in the turn the reply arrives: events delivered right after it are not missed.
    this.#watchId = watchId;
    this.#phase = "open";
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
        c.enqueue(line(this.shape(m.body)));
      },
      cancel: () => {
        // The client went away.
        if (this.#phase !== "open") return;
        this.#phase = "ended";
        this.#cancel();
      },
    }, new CountQueuingStrategy({ highWaterMark: this.o.maxQueued }));
    this.#opened.resolve({
      code: "ok",
      response: new Response(body, {
        headers: { "content-type": NDJSON, "rpc-status": RPC_STATUS_SUCCESS, "cache-control": "no-store" },
      }),
    });
  }

  #push(response: unknown): void {
    if (this.#phase !== "open") return;
    const c = this.#controller!;
    c.enqueue(line(this.shape(response)));
    if ((c.desiredSize ?? 0) < 0) {
      this.#end({ code: "aborted", message: `event overflow: ${this.#watchId}` });
      this.#cancel();
    }
  }

  /** The last line, then the end of the body. */
  #end(error: WatchError): void {
    this.#phase = "ended";
    clearTimeout(this.#deadline);
    try {
      this.#controller?.enqueue(line({ error }));
      this.#controller?.close();
    } catch { /* the client went away meanwhile */ }
  }

  /** Cancels the watch in the job manager; the address stays until the answer (or `cancelWaitMs`). */
  #cancel(): void {
    this.#cancelling = true;
    this.o.transport.send(this.jobmgr, {
      kind: "api",
      reqId: CANCEL_REQ,
      replyTo: this.address,
      procedure: CANCEL_PROCEDURE,
      body: { watchId: this.#watchId },
    });
    this.#linger(this.o.cancelWaitMs);
  }

  #linger(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#release(), ms);
  }

  #release(): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline);
    if (this.#phase === "calling" || this.#phase === "abandoned") this.#phase = "ended";
    this.o.transport.unregister(this.address);
    this.forget();
  }
}

function refused(error: WatchError): OpenedWatch {
  return { code: error.code, response: rpcError(error.code, error.message) };
}
