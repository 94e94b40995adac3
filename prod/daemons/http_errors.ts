/**
 * Error replies in yarpc's HTTP wire format, as yarpc-go's HTTP inbound writes them (transport/http/handler.go)
 * and its outbound reads them (outbound.go), so that a Go or Python yarpc client gets the code and message a
 * Peloton server would give.
 */
import type { ApiErrorCode } from "../../core/messages.ts";

/** yarpc's error codes (`yarpcerrors.Code` as text): the API's own, and those only auth or yarpc raise. */
export type RpcErrorCode =
  | ApiErrorCode
  | "unknown"
  | "permission-denied"
  | "resource-exhausted"
  | "data-loss"
  | "unauthenticated";

/**
 * The HTTP status yarpc gives each code (transport/http/codes.go). Several codes share one (409 is both
 * aborted and already-exists), which is why the code itself travels in `Rpc-Error-Code`.
 */
export const API_STATUS: Record<RpcErrorCode, number> = {
  cancelled: 499,
  unknown: 500,
  "invalid-argument": 400,
  "deadline-exceeded": 504,
  "not-found": 404,
  "already-exists": 409,
  "permission-denied": 403,
  "resource-exhausted": 429,
  "failed-precondition": 400,
  aborted: 409,
  "out-of-range": 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  "data-loss": 500,
  unauthenticated: 401,
};

export interface RpcErrorOptions {
  /**
   * The call's request. A yarpc client that sends `Rpc-Accepts-Both-Response-Error: true` (yarpc-go's
   * outbounds do) gets the message in `Rpc-Error-Message` and an empty body, as yarpc answers it.
   */
  req?: Request;
  /**
   * The error came from reading the request (its procedure, deadline or body) before any handler ran: yarpc
   * then leaves `Rpc-Status` at the `success` it starts every reply with; a handler's error sets `error`.
   */
  beforeHandler?: boolean;
  /**
   * The call reached no handler, here or in a process it was sent on to, so nothing was done: the reply says
   * so in `NOT_HANDLED_HEADER`, which lets a client tell a definite failure from an unknown outcome (a
   * create's `unavailable`). Implied by `beforeHandler`.
   */
  notHandled?: boolean;
  /** An HTTP status other than yarpc's for the code (a body refused unread: 413). */
  status?: number;
  headers?: Record<string, string>;
}

/**
 * `Rpc-Status` of a reply that is not an error (yarpc-go's `ApplicationSuccessStatus`): yarpc knows only
 * `success` and `error`, and a client checking the header would read anything else as neither.
 */
export const RPC_STATUS_SUCCESS = "success";

/**
 * Set (`true`) on an error reply to a call that reached no handler (refused while routed: no job manager
 * running, no leader, a daemon stopping, a deadline passed before its handler started): nothing was done.
 */
export const NOT_HANDLED_HEADER = "Peloton-Not-Handled";

/**
 * An error reply: the code in `Rpc-Error-Code` (yarpc sets no `Rpc-Error-Name` for Peloton's errors, which
 * are plain `yarpcerrors`), its HTTP status, and the message as the text body with a newline after it, or in
 * `Rpc-Error-Message` for a client that accepts both.
 */
export function rpcError(code: RpcErrorCode, message: string, opts: RpcErrorOptions = {}): Response {
  const headers = new Headers(opts.headers);
  headers.set("Rpc-Status", opts.beforeHandler ? RPC_STATUS_SUCCESS : "error");
  headers.set("Rpc-Error-Code", code);
  if (opts.beforeHandler || opts.notHandled) headers.set(NOT_HANDLED_HEADER, "true");
  let body: string | null = null;
  if (opts.req?.headers.get("rpc-accepts-both-response-error") === "true") {
    headers.set("Rpc-Both-Response-Error", "true");
    headers.set("Rpc-Error-Message", headerValue(message));
  } else {
    headers.set("Content-Type", "text/plain; charset=utf8");
    body = `${message}\n`;
  }
  return new Response(body, { status: opts.status ?? API_STATUS[code], headers });
}

/**
 * A message as Go's net/http writes it in a header: line breaks as spaces, and its UTF-8 bytes as they are
 * (a header value is a byte string: each byte goes as one character).
 */
function headerValue(message: string): string {
  const bytes = new TextEncoder().encode(message.replace(/[\r\n\0]/g, " "));
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return text;
}

/**
 * The code and message of an error reply, as yarpc's outbound reads them: the code from `Rpc-Error-Code`,
 * the message from `Rpc-Error-Message` when the server says it answered both, else the body less its last
 * newline. A reply without the header is read as the older `{code, message}` JSON body, or else by its HTTP
 * status as yarpc guesses it.
 *
 * The web UI runs this in the browser too (client_api.ts): it may use only its arguments and browser globals.
 */
export function replyError(
  status: number,
  headers: { get(name: string): string | null },
  text: string,
): { code: string; message: string } {
  const code = headers.get("rpc-error-code");
  if (code) {
    const inHeader = headers.get("rpc-both-response-error") ? headers.get("rpc-error-message") : null;
    if (inHeader === null) return { code, message: text.endsWith("\n") ? text.slice(0, -1) : text };
    const bytes = Uint8Array.from(inHeader, (c) => c.charCodeAt(0) & 0xff);
    return { code, message: new TextDecoder().decode(bytes) };
  }
  try {
    const json = JSON.parse(text);
    if (json && typeof json.code === "string" && typeof json.message === "string") {
      return { code: json.code, message: json.message };
    }
  } catch { /* not the JSON form */ }
  // yarpc's statusCodeToBestCode: the first code of that status, any other 4xx as invalid-argument.
  const byStatus: Record<number, string> = {
    400: "invalid-argument",
    401: "unauthenticated",
    403: "permission-denied",
    404: "not-found",
    409: "aborted",
    429: "resource-exhausted",
    499: "cancelled",
    501: "unimplemented",
    503: "unavailable",
    504: "deadline-exceeded",
  };
  const guessed = byStatus[status] ?? (status >= 400 && status < 500 ? "invalid-argument" : "unknown");
  return { code: guessed, message: text.trim() || `HTTP ${status}` };
}
