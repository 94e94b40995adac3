/** HTTP client for Peloton's YARPC-style JSON API, as the CLI and tests use it. */
import { basicHeader } from "../auth/basic_auth.ts";
import { NOT_HANDLED_HEADER, replyError } from "../daemons/http_errors.ts";
import { FILE_OFFSET_HEADER } from "../minicluster/sandbox_http.ts";
// The CLI reads fields Peloton's protos do not define (entity versions, workflow ids, host resources, ...).
import { EXTENSIONS_HEADER } from "../proto_extensions.ts";

export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly procedure: string,
    readonly code: string,
    readonly detail: string,
    /** The server said no handler got the call (`Peloton-Not-Handled`): nothing was done, whatever the code. */
    readonly notHandled = false,
  ) {
    super(`${procedure}: ${code}: ${detail}`);
  }
}

export interface ClientOptions {
  /** Base URL of the job manager (or the all-in-one server). */
  url: string;
  timeoutMs?: number;
  /** Basic-auth credentials, when the server runs with `--auth-config`. */
  credentials?: { username: string; password: string };
}

/**
 * In-body errors of Peloton's v0 responses (`{error: {notFound: {message}}}`) become ApiErrors too; Peloton's
 * `notFound` reads as the RPC code `not-found`, so an unknown job says the same whichever way it is answered.
 */
function bodyError(procedure: string, body: Record<string, unknown>): ApiError | undefined {
  // Some responses (TaskManager's List, Get, Restart) carry `notFound` as a field of their own.
  const err = (body.notFound ? { notFound: body.notFound } : body.error) as
    | Record<string, { message?: string }>
    | undefined;
  if (!err || typeof err !== "object") return undefined;
  const [kind, detail] = Object.entries(err)[0] ?? [];
  if (!kind) return undefined;
  return new ApiError(
    procedure,
    kind === "notFound" ? "not-found" : kind,
    detail?.message ?? JSON.stringify(detail),
  );
}

export class PelotonClient {
  constructor(readonly options: ClientOptions) {}

  get baseUrl(): string {
    return this.options.url.replace(/\/+$/, "");
  }

  /** Calls `procedure` (e.g. `peloton.api.job.JobManager::Create`); throws ApiError on any error. */
  async call<T = Record<string, unknown>>(procedure: string, body: unknown = {}): Promise<T> {
    const timeout = this.options.timeoutMs ?? 20_000;
    // Given up on at the timeout itself, which the server is sent as the call's deadline (Context-TTL-Ms).
    const signal = AbortSignal.timeout(timeout);
    const res = await this.#post(procedure, body, timeout, signal);
    let json;
    try {
      json = await this.#json(procedure, res);
    } catch (e) {
      // The deadline passed while the answer's body was still coming: as one that never came.
      if (!signal.aborted || e instanceof ApiError) throw e;
      throw new ApiError(
        procedure,
        "deadline-exceeded",
        `no whole answer from ${this.baseUrl} within ${timeout} ms`,
      );
    }
    const inBody = bodyError(procedure, json);
    if (inBody) throw inBody;
    return json as T;
  }

  /**
   * Calls a server-streaming procedure (WatchService::Watch) and yields each response, a JSON line, as it
   * comes. The stream's last line, `{"error": {code, message}}`, is thrown as an ApiError (`cancelled` when
   * the watch was cancelled); a stream cut without one is `unavailable`. `signal` stops listening, which
   * ends the stream quietly (the server cancels the watch). The timeout covers the first answer only: no
   * `Context-TTL-Ms` is sent, which the server would take as the whole stream's deadline.
   */
  async *stream<T = Record<string, unknown>>(
    procedure: string,
    body: unknown = {},
    signal?: AbortSignal,
  ): AsyncGenerator<T> {
    const timeout = this.options.timeoutMs ?? 20_000;
    const firstAnswer = new AbortController();
    const timer = setTimeout(() => firstAnswer.abort(new Error(`no answer within ${timeout} ms`)), timeout);
    const aborted = signal ? AbortSignal.any([signal, firstAnswer.signal]) : firstAnswer.signal;
    let res: Response;
    try {
      // Not `#post`, which sends Context-TTL-Ms: a watch runs until it is cancelled, not to a deadline.
      res = await fetch(`${this.baseUrl}/api/v1`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "rpc-procedure": procedure,
          "rpc-caller": "peloton-cli",
          "rpc-encoding": "json",
          [EXTENSIONS_HEADER]: "true",
          ...this.#auth(),
        },
        body: JSON.stringify(body),
        signal: aborted,
      });
    } catch (e) {
      if (signal?.aborted) return;
      if (firstAnswer.signal.aborted) {
        throw new ApiError(
          procedure,
          "deadline-exceeded",
          `no answer from ${this.baseUrl} within ${timeout} ms`,
        );
      }
      throw new ApiError(procedure, "unavailable", `cannot reach ${this.baseUrl}: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok || !res.headers.get("content-type")?.includes("ndjson")) {
      // Refused before it streamed: a plain RPC error (or an answer of one piece, yielded whole).
      const json = await this.#json(procedure, res);
      const inBody = bodyError(procedure, json);
      if (inBody) throw inBody;
      yield json as T;
      return;
    }
    const lines = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    try {
      for (;;) {
        let chunk;
        try {
          chunk = await lines.read();
        } catch (e) {
          if (signal?.aborted) return;
          throw new ApiError(procedure, "unavailable", `the stream broke: ${(e as Error).message}`);
        }
        if (chunk.done) break;
        rest += chunk.value;
        let nl;
        while ((nl = rest.indexOf("\n")) >= 0) {
          const text = rest.slice(0, nl).trim();
          rest = rest.slice(nl + 1);
          if (!text) continue;
          const json = parseLine(procedure, text);
          const err = json.error as { code?: unknown; message?: unknown } | undefined;
          if (err && typeof err === "object") {
            throw new ApiError(procedure, String(err.code ?? "unknown"), String(err.message ?? ""));
          }
          yield json as T;
        }
      }
    } finally {
      // Stopped early (by the caller or an error line): the connection goes, and the server cancels the watch.
      await lines.cancel().catch(() => {});
    }
    if (signal?.aborted) return;
    throw new ApiError(procedure, "unavailable", "the stream ended without its last line");
  }

  async #post(procedure: string, body: unknown, timeoutMs: number, signal: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.baseUrl}/api/v1`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "rpc-procedure": procedure,
          "rpc-caller": "peloton-cli",
          "rpc-encoding": "json",
          [EXTENSIONS_HEADER]: "true",
          "context-ttl-ms": String(timeoutMs),
          ...this.#auth(),
        },
        body: JSON.stringify(body),
        signal,
      });
    } catch (e) {
      // Our own deadline passed (or the caller stopped listening): not `unavailable`, which says "retry".
      if (signal.aborted) {
        throw new ApiError(
          procedure,
          "deadline-exceeded",
          `no answer from ${this.baseUrl} within ${timeoutMs} ms`,
        );
      }
      throw new ApiError(procedure, "unavailable", `cannot reach ${this.baseUrl}: ${(e as Error).message}`);
    }
  }

  /** A whole JSON answer; an error reply is thrown as the ApiError its code and message say (yarpc's form). */
  async #json(procedure: string, res: Response): Promise<Record<string, unknown>> {
    const text = await res.text();
    if (!res.ok) {
      const { code, message } = replyError(res.status, res.headers, text);
      const hint = res.status === 401
        ? " (give credentials with --basic-auth-config FILE (username: and password:), $BASIC_AUTH_CONFIG, " +
          "PELOTON_USERNAME/PELOTON_PASSWORD or --username/--password, which ps shows to other users)"
        : "";
      throw new ApiError(procedure, code, message + hint, res.headers.get(NOT_HANDLED_HEADER) === "true");
    }
    try {
      return text ? JSON.parse(text) : {};
    } catch {
      throw new ApiError(procedure, "internal", `HTTP ${res.status}: ${text.slice(0, 200)}`);
    }
  }

  #auth(): Record<string, string> {
    const c = this.options.credentials;
    // As UTF-8 (RFC 7617): btoa alone takes Latin-1 only, and throws on "密码".
    return c ? { authorization: basicHeader(c) } : {};
  }

  /**
   * A task's stdout or stderr as the server streams it: its raw bytes, however large, never held whole
   * here; `agentId` says where the run was. Throws an ApiError ("sandbox") when the server refuses.
   */
  async sandboxStream(taskId: string, file: string, agentId?: string): Promise<ReadableStream<Uint8Array>> {
    const res = await this.#sandbox(taskId, file, agentId);
    return res.body ?? new Response("").body!;
  }

  /**
   * The last `maxBytes` of a task's stdout or stderr, for output that must be text: asked of the server as
   * a tail read, and kept bounded here as it streams in case the server sends more (one that predates
   * `tailBytes`, or Mesos's agents). `sizeBytes` is the file's size, `offsetBytes` where `bytes` start in it.
   */
  async sandboxTail(
    taskId: string,
    file: string,
    agentId: string | undefined,
    maxBytes: number,
  ): Promise<{ bytes: Uint8Array; sizeBytes: number; offsetBytes: number }> {
    const res = await this.#sandbox(taskId, file, agentId, maxBytes);
    const chunks: Uint8Array[] = [];
    let keptBytes = 0, readBytes = 0;
    for await (const chunk of res.body ?? []) {
      chunks.push(chunk);
      keptBytes += chunk.length;
      readBytes += chunk.length;
      while (chunks.length > 1 && keptBytes - chunks[0].length >= maxBytes) {
        keptBytes -= chunks.shift()!.length;
      }
    }
    const all = new Uint8Array(keptBytes);
    chunks.reduce((at, c) => (all.set(c, at), at + c.length), 0);
    const bytes = all.subarray(Math.max(0, keptBytes - maxBytes));
    const served = Number(res.headers.get(FILE_OFFSET_HEADER) ?? 0);
    const offsetBytes = served + readBytes - bytes.length;
    return { bytes, sizeBytes: offsetBytes + bytes.length, offsetBytes };
  }

  async #sandbox(taskId: string, file: string, agentId?: string, tailBytes?: number): Promise<Response> {
    const query = new URLSearchParams();
    if (agentId) query.set("agentId", agentId);
    if (tailBytes !== undefined) query.set("tailBytes", String(tailBytes));
    const q = query.size ? `?${query}` : "";
    const res = await fetch(
      `${this.baseUrl}/sandbox/${encodeURIComponent(taskId)}/${encodeURIComponent(file)}${q}`,
      { headers: this.#auth() },
    );
    if (!res.ok) throw new ApiError("sandbox", String(res.status), (await res.text()).trim());
    return res;
  }
}

function parseLine(procedure: string, text: string): Record<string, unknown> {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(procedure, "internal", `a streamed line is not JSON: ${text.slice(0, 200)}`);
  }
}
