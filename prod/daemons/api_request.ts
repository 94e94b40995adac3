/** What an API call's HTTP request carries besides its procedure: its JSON body and its deadline. */
import { withJsonNames } from "../proto_json.ts";
import { decodeUtf8 } from "../utf8.ts";
import { rpcError } from "./http_errors.ts";

/** An API call as read from its request: the body as sent, parsed, and the deadline. */
export interface ApiCall {
  text: string;
  body: Record<string, unknown>;
  ttlMs: number;
}

/**
 * Reads an API call's request, or gives the error response for a bad one: a deadline out of bounds, a
 * body too large, not JSON or not a JSON object (every request message is one; an array or a number would
 * otherwise read as an empty request). An empty body is the empty request. Proto field names
 * (`host_states`) read as their JSON names, as protobuf's JSON parser reads them.
 */
export async function readApiCall(req: Request): Promise<ApiCall | Response> {
  const ttlMs = ttlOf(req);
  if (ttlMs instanceof Response) return ttlMs;
  const text = await readBody(req);
  if (text instanceof Response) return text;
  if (!text.trim()) return { text, body: {}, ttlMs };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return rpcError("invalid-argument", `request body is not JSON: ${(e as Error).message}`, {
      req,
      beforeHandler: true,
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return rpcError("invalid-argument", "the request body must be a JSON object", {
      req,
      beforeHandler: true,
    });
  }
  return { text, body: withJsonNames(parsed) as Record<string, unknown>, ttlMs };
}

/**
 * The largest request body taken: far above any real call (a job of 100,000 instance configs, a secret of 1
 * MiB), far below what would stall the process reading and parsing it.
 */
export const MAX_BODY_BYTES = 64 * 2 ** 20;

/** A call's deadline when its `Context-TTL-Ms` header gives none (YARPC's header, as Peloton's clients send). */
export const DEFAULT_TTL_MS = 30_000;

/** The longest deadline a call waits for; one asking longer waits this long (a timer's limit is 24.8 days). */
const MAX_TTL_MS = 86_400_000;

/**
 * The request's body as text, or the error response for a body over `limit` bytes (HTTP 413), refused
 * from its Content-Length before it is read, or as soon as that many bytes have come.
 */
export async function readBody(req: Request, limit = MAX_BODY_BYTES): Promise<string | Response> {
  const tooLarge = (what: string) => {
    const message = `the request body is ${what}, more than the limit of ${limit} bytes`;
    // 413 rather than yarpc's 400 for the code: refused unread, as an HTTP server or proxy refuses it.
    return rpcError("invalid-argument", message, { req, beforeHandler: true, status: 413 });
  };
  const declared = Number(req.headers.get("content-length"));
  if (declared > limit) return tooLarge(`${declared} bytes`);
  if (!req.body) return "";
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > limit) return tooLarge(`over ${size} bytes`);
    chunks.push(chunk as Uint8Array<ArrayBuffer>);
  }
  const text = decodeUtf8(new Uint8Array(await new Blob(chunks).arrayBuffer()));
  if (typeof text === "string") return text;
  const message = `the request body is not valid UTF-8 at byte offset ${text.invalidAt}`;
  return rpcError("invalid-argument", message, { req, beforeHandler: true });
}

/**
 * Whether the caller set a deadline (a `Context-TTL-Ms` header not blank): a stream (WatchService::Watch) then
 * ends at it, as a gRPC deadline ends a server stream; without one it runs until it is cancelled.
 */
export function givesDeadline(req: Request): boolean {
  return (req.headers.get("context-ttl-ms") ?? "").trim() !== "";
}

/**
 * The call's deadline from its `Context-TTL-Ms` header (absent: `DEFAULT_TTL_MS`; past a day, a day), or the
 * error response for a value that is not a whole number of milliseconds of at least 1: a deadline already
 * past would answer "timed out" for a call that then goes on and acts.
 */
export function ttlOf(req: Request): number | Response {
  const header = req.headers.get("context-ttl-ms");
  if (header === null || header.trim() === "") return DEFAULT_TTL_MS;
  const ttl = Number(header);
  if (!Number.isInteger(ttl) || ttl < 1) {
    const shown = header.length > 40 ? `${header.slice(0, 40)}...` : header;
    return rpcError(
      "invalid-argument",
      `Context-TTL-Ms: got "${shown}", expected a whole number of milliseconds, at least 1`,
      { req, beforeHandler: true },
    );
  }
  return Math.min(ttl, MAX_TTL_MS);
}
