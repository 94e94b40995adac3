/** RecordIO framing (`<byte length>\n<bytes>`) of Mesos event streams: a byte-level decoder and an encoder. */

/** A stream that breaks the RecordIO grammar; the stream cannot be resynchronised after it. */
export class RecordIOError extends Error {
  override readonly name = "RecordIOError";
}

const LF = 0x0a;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
// A length line longer than this cannot be a decimal uint64.
const MAX_LENGTH_DIGITS = 20;

/**
 * Incremental decoder: feed it chunks as they arrive, get back the complete records they finish.
 * Chunk boundaries are arbitrary (inside the length line, inside a multi-byte UTF-8 character, several
 * records per chunk), because HTTP intermediaries may re-chunk the stream at will.
 */
export class RecordIODecoder {
  readonly #maxRecordBytes: number;
  #digits = 0;
  #length = 0;
  /** The record being filled; undefined while reading a length line. */
  #record?: Uint8Array;
  #filled = 0;
  #failed?: RecordIOError;

  /** Records longer than `maxRecordBytes` are rejected rather than buffered. */
  constructor(maxRecordBytes = 64 * 1024 * 1024) {
    this.#maxRecordBytes = maxRecordBytes;
  }

  /** Consumes one chunk and returns every record it completed, in order. */
  decode(chunk: Uint8Array): Uint8Array[] {
    if (this.#failed) throw this.#failed;
    const out: Uint8Array[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#record === undefined) {
        i = this.#readLength(chunk, i);
        continue;
      }
      const take = Math.min(this.#record.length - this.#filled, chunk.length - i);
      this.#record.set(chunk.subarray(i, i + take), this.#filled);
      this.#filled += take;
      i += take;
      if (this.#filled === this.#record.length) {
        out.push(this.#record);
        this.#record = undefined;
      }
    }
    return out;
  }

  /** True when the input so far ended exactly at a record boundary. */
  get atBoundary(): boolean {
    return this.#record === undefined && this.#digits === 0;
  }

  /** Call at end of input: a stream that stops inside a record is truncated. */
  finish(): void {
    if (this.#failed) throw this.#failed;
    if (!this.atBoundary) {
      const where = this.#record
        ? `after ${this.#filled} of ${this.#record.length} record bytes`
        : `inside a length line`;
      throw this.#fail(`Cannot decode RecordIO: the stream ended ${where}`);
    }
  }

  #readLength(chunk: Uint8Array, start: number): number {
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i];
      if (b === LF) {
        if (this.#digits === 0) throw this.#fail("Cannot decode RecordIO: empty record length");
        if (this.#length === 0) throw this.#fail("Cannot decode RecordIO: record length is 0");
        this.#record = new Uint8Array(this.#length);
        this.#filled = 0;
        this.#digits = 0;
        this.#length = 0;
        return i + 1;
      }
      if (b < DIGIT_0 || b > DIGIT_9) {
        throw this.#fail(
          `Cannot decode RecordIO: byte 0x${b.toString(16)} in a record length, expected a digit`,
        );
      }
      this.#digits++;
      this.#length = this.#length * 10 + (b - DIGIT_0);
      if (this.#digits > MAX_LENGTH_DIGITS || this.#length > this.#maxRecordBytes) {
        throw this.#fail(
          `Cannot decode RecordIO: record length exceeds the limit of ${this.#maxRecordBytes} bytes`,
        );
      }
    }
    return chunk.length;
  }

  #fail(message: string): RecordIOError {
    this.#failed = new RecordIOError(message);
    return this.#failed;
  }
}

const encoder = new TextEncoder();

/** One record: the byte length of the UTF-8 payload, a newline, the payload (no trailing newline). */
export function encodeRecord(payload: string | Uint8Array): Uint8Array {
  const bytes = typeof payload === "string" ? encoder.encode(payload) : payload;
  if (bytes.length === 0) throw new RecordIOError("Cannot encode RecordIO: a record must not be empty");
  const header = encoder.encode(`${bytes.length}\n`);
  const out = new Uint8Array(header.length + bytes.length);
  out.set(header);
  out.set(bytes, header.length);
  return out;
}

/**
 * Reads a byte stream as RecordIO and yields each record as text. Invalid UTF-8 inside a record is an
 * error rather than silently replaced, since a replaced character would change the JSON. An aborted
 * `signal` ends the reading at once, even when a read waits on a body whose fetch was aborted (Deno does
 * not always error such a body).
 */
export async function* readRecords(
  stream: ReadableStream<Uint8Array>,
  maxRecordBytes?: number,
  signal?: AbortSignal,
): AsyncGenerator<string> {
  const decoder = new RecordIODecoder(maxRecordBytes);
  const text = new TextDecoder("utf-8", { fatal: true });
  const reader = stream.getReader();
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (signal?.aborted) throw new RecordIOError(`Reading stopped: ${signal.reason ?? "aborted"}`);
      if (done) break;
      for (const record of decoder.decode(value)) yield text.decode(record);
    }
    decoder.finish();
  } finally {
    signal?.removeEventListener("abort", onAbort);
    // Cancelling releases the connection when the consumer stops early or decoding failed.
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
