/** Reads `task_events` trace files: streamed line by line into the parser, gunzipped, and kept for reuse. */
import { pipeline, Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { createGunzip } from "node:zlib";
import { TaskEventsParser, TraceError, type TraceJob } from "./trace.ts";

/** A task_events row is about 100 characters: a "line" this long means the file is something else. */
export const MAX_LINE_CHARS = 1 << 20;

/**
 * Parses the trace at `path`, gunzipping a `.gz` file, a row at a time: no file is ever held whole, so its
 * size is bounded by memory for the parsed rows (21 bytes each) and jobs, not by the longest string a
 * JavaScript engine makes (about 512 MiB of text). Bad rows throw a TraceError; a file that cannot be
 * read, or a gzip stream that is cut short or corrupt, another Error saying so.
 */
export async function readTaskEvents(path: string): Promise<TraceJob[]> {
  const file = await Deno.open(path);
  return await parseTaskEventStream(file.readable, path, path.endsWith(".gz"));
}

/** Parses task_events from a stream of bytes (gzipped or not), which it reads to its end or first bad row. */
export async function parseTaskEventStream(
  bytes: ReadableStream<Uint8Array>,
  file: string,
  gzipped: boolean,
): Promise<TraceJob[]> {
  const parser = new TaskEventsParser(file);
  const decoder = new TextDecoder();
  let rest = "";
  // Whole lines go to the parser as each chunk comes, and a line cut by the chunk's end waits for the next.
  const take = (text: string) => {
    let from = 0;
    for (let nl = text.indexOf("\n"); nl >= 0; from = nl + 1, nl = text.indexOf("\n", from)) {
      parser.line(text.slice(from, nl));
    }
    rest = text.slice(from);
    if (rest.length > MAX_LINE_CHARS) {
      throw new TraceError(
        `${file} line ${parser.lines + 1}: longer than ${MAX_LINE_CHARS} characters with no line break: ` +
          "not a task_events CSV file",
      );
    }
  };
  for await (const chunk of gzipped ? gunzip(bytes) : bytes) {
    take(rest + decoder.decode(chunk, { stream: true }));
  }
  take(rest + decoder.decode());
  parser.line(rest);
  return parser.finish();
}

/**
 * The gunzipped bytes of a gzip stream, of every member: `cat a.gz b.gz` is one valid file (RFC 1952), which
 * the web's DecompressionStream refuses. A stream cut short says the file looks truncated.
 */
async function* gunzip(bytes: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const inflate = createGunzip();
  // Errors reach the loop below through `inflate`; stopping early ends both streams (the file is closed).
  pipeline(Readable.fromWeb(bytes as NodeReadableStream<Uint8Array>), inflate, () => {});
  try {
    for await (const chunk of inflate) yield chunk as Uint8Array;
  } catch (e) {
    throw gzipError(e);
  } finally {
    inflate.destroy();
  }
}

/** A zlib error in words: a truncated file is the usual cause, from a download or copy cut short. */
function gzipError(e: unknown): Error {
  const code = (e as { code?: unknown }).code;
  if (code === "Z_BUF_ERROR") {
    return new Error(
      "the gzip stream ends early: the file looks truncated (a download or copy cut short?); " +
        "`gzip -t` checks it",
    );
  }
  if (code === "Z_DATA_ERROR") {
    return new Error(`not a valid gzip file (${(e as Error).message}); \`gzip -t\` checks it`);
  }
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * Parsed traces kept by path, so loading the same scenario again (a plan worker's next variant) does not
 * read and parse its traces again: a file with another modification time or size since is read again.
 */
export class TraceCache {
  readonly #entries = new Map<string, { mtimeMs: number; size: number; jobs: TraceJob[] }>();

  readonly #read: (path: string) => Promise<TraceJob[]>;

  constructor(read: (path: string) => Promise<TraceJob[]> = readTaskEvents) {
    this.#read = read;
  }

  /** The trace at `path`, parsed: the copy kept when the file is as it was then. */
  readonly get = async (path: string): Promise<TraceJob[]> => {
    const stat = await Deno.stat(path);
    // No modification time (a file system without one): never taken as unchanged.
    const mtimeMs = stat.mtime?.getTime() ?? NaN;
    const kept = this.#entries.get(path);
    if (kept && kept.mtimeMs === mtimeMs && kept.size === stat.size) return kept.jobs;
    // The old copy goes first: two of a large trace need not fit at once.
    this.#entries.delete(path);
    const jobs = await this.#read(path);
    this.#entries.set(path, { mtimeMs, size: stat.size, jobs });
    return jobs;
  };
}
