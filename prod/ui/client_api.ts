/**
 * Browser code of the web UI, part 2: calls to Peloton's API (`POST /api/v1`, `Rpc-Procedure`), the same
 * procedures and bodies the CLI sends, with the operator's basic-auth credentials when they gave some.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import { replyError } from "../daemons/http_errors.ts";

/** An API call that failed: the procedure, Peloton's error code and the server's message. */
export class UiApiError extends Error {
  override readonly name = "UiApiError";
  constructor(
    readonly procedure: string,
    readonly code: string,
    readonly detail: string,
    /** HTTP status; 0 when the server could not be reached. */
    readonly status: number,
  ) {
    super(`${procedure}: ${code}: ${detail}`);
  }
}

/** Peloton's v0 in-body errors (`{error: {notFound: {message}}}`), as the CLI reads them (`notFound` as `not-found`). */
export function inBodyError(body: Record<string, unknown>): { kind: string; message: string } | undefined {
  // Some responses (TaskManager's List, Get, Restart) carry `notFound` as a field of their own.
  const err = body.notFound ? { notFound: body.notFound } : body.error;
  if (!err || typeof err !== "object") return undefined;
  const [kind, detail] = Object.entries(err as Record<string, { message?: string }>)[0] ?? [];
  if (!kind) return undefined;
  return {
    kind: kind === "notFound" ? "not-found" : kind,
    message: detail?.message ?? JSON.stringify(detail),
  };
}

/** The page's API client. Credentials live in sessionStorage: they last for the tab, not beyond. */
export class UiApi {
  static readonly STORAGE_KEY = "peloton-ui-authorization";
  static readonly TTL_MS = 10_000;

  authorization(): string | undefined {
    try {
      return sessionStorage.getItem(UiApi.STORAGE_KEY) ?? undefined;
    } catch {
      return undefined;
    }
  }

  signIn(username: string, password: string): void {
    const bytes = new TextEncoder().encode(`${username}:${password}`);
    const header = `Basic ${btoa(String.fromCharCode(...bytes))}`;
    sessionStorage.setItem(UiApi.STORAGE_KEY, header);
  }

  signOut(): void {
    sessionStorage.removeItem(UiApi.STORAGE_KEY);
  }

  /** Calls `procedure`; resolves to the reply body, or rejects with a UiApiError saying what failed. */
  async call<T = Record<string, unknown>>(procedure: string, body: unknown = {}): Promise<T> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "rpc-procedure": procedure,
      "rpc-caller": "peloton-ui",
      "rpc-encoding": "json",
      // The page reads fields Peloton's protos do not define (prod/proto_extensions.ts); spelled out here, as
      // this code runs in the browser without its imports.
      "peloton-extensions": "true",
      "context-ttl-ms": String(UiApi.TTL_MS),
    };
    const auth = this.authorization();
    if (auth) headers.authorization = auth;
    let res: Response;
    try {
      // Relative to the page (/ui/), so the UI also works behind a proxy that adds a path prefix.
      res = await fetch(new URL("../api/v1", location.href), {
        method: "POST",
        headers,
        // The credentials go in the header above. "omit" keeps the browser from holding the request
        // open behind its own login prompt on a 401: the page shows its sign-in form instead.
        credentials: "omit",
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(UiApi.TTL_MS + 2000),
      });
    } catch (e) {
      throw new UiApiError(procedure, "unavailable", `cannot reach the server: ${(e as Error).message}`, 0);
    }
    const text = await res.text();
    if (!res.ok) {
      // yarpc's form: the code in Rpc-Error-Code, the message as the body.
      const { code, message } = replyError(res.status, res.headers, text);
      throw new UiApiError(procedure, code, message, res.status);
    }
    let json: Record<string, unknown>;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new UiApiError(procedure, "internal", `HTTP ${res.status}: ${text.slice(0, 200)}`, res.status);
    }
    const inBody = inBodyError(json);
    if (inBody) throw new UiApiError(procedure, inBody.kind, inBody.message, res.status);
    return json as T;
  }

  /**
   * The end of a run's stdout or stderr, at most `maxBytes` of it, from the server's sandbox endpoint (where
   * BrowseSandbox points, as the CLI's `task logs` reads it) with the operator's credentials; rejects with a
   * UiApiError ("sandbox"). Only the end is asked for (`tailBytes`), and kept as it streams should a server
   * send more, so a file of any size costs the page `maxBytes`. A character the cut split is dropped whole;
   * other bytes that are not UTF-8 show as U+FFFD. `sizeBytes` is the file's size, `offsetBytes` where the
   * text starts in it (above 0: the file was cut).
   */
  async sandboxTail(
    taskId: string,
    file: string,
    agentId: string | undefined,
    maxBytes: number,
  ): Promise<{ text: string; sizeBytes: number; offsetBytes: number }> {
    const auth = this.authorization();
    const url = new URL(sandboxPath(taskId, file, agentId), location.href);
    url.searchParams.set("tailBytes", String(maxBytes));
    let res: Response;
    try {
      res = await fetch(url, {
        headers: auth ? { authorization: auth } : {},
        credentials: "omit",
        signal: AbortSignal.timeout(UiApi.TTL_MS + 2000),
      });
    } catch (e) {
      throw new UiApiError("sandbox", "unavailable", `cannot reach the server: ${(e as Error).message}`, 0);
    }
    if (!res.ok) {
      const code = res.status === 404
        ? "not-found"
        : res.status === 401
        ? "unauthenticated"
        : `HTTP ${res.status}`;
      throw new UiApiError("sandbox", code, (await res.text()).trim(), res.status);
    }
    const chunks: Uint8Array[] = [];
    let keptBytes = 0, readBytes = 0;
    const reader = res.body!.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      chunks.push(next.value);
      keptBytes += next.value.length;
      readBytes += next.value.length;
      while (chunks.length > 1 && keptBytes - chunks[0].length >= maxBytes) {
        keptBytes -= chunks.shift()!.length;
      }
    }
    const all = new Uint8Array(keptBytes);
    chunks.reduce((at, c) => (all.set(c, at), at + c.length), 0);
    let bytes = all.subarray(Math.max(0, keptBytes - maxBytes));
    let offsetBytes = Number(res.headers.get("x-file-offset-bytes") ?? 0) + readBytes - bytes.length;
    const sizeBytes = offsetBytes + bytes.length;
    // Continuation bytes first: the cut fell inside a character (at most 3 of them).
    for (let i = 0; offsetBytes > 0 && i < 3 && bytes.length && (bytes[0] & 0xc0) === 0x80; i++) {
      bytes = bytes.subarray(1);
      offsetBytes++;
    }
    return { text: new TextDecoder().decode(bytes), sizeBytes, offsetBytes };
  }
}

/** A run's sandbox file on the server, relative to the page (/ui/): `../sandbox/<taskId>/<file>?agentId=`. */
export function sandboxPath(taskId: string, file: string, agentId?: string): string {
  const query = agentId ? `?agentId=${encodeURIComponent(agentId)}` : "";
  return `../sandbox/${encodeURIComponent(taskId)}/${encodeURIComponent(file)}${query}`;
}

/** The text to show for any error a call or render threw. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Whether an error means "sign in" (no or wrong credentials). */
export function needsSignIn(e: unknown): boolean {
  return e instanceof UiApiError && e.status === 401;
}

/** Whether an error means the server could not be reached at all (no HTTP answer). */
export function unreachable(e: unknown): boolean {
  return e instanceof UiApiError && e.status === 0;
}

export const API_CODE = [
  replyError,
  UiApiError,
  inBodyError,
  UiApi,
  sandboxPath,
  errorText,
  needsSignIn,
  unreachable,
];
