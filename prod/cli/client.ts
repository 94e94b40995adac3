/** HTTP client for Peloton's YARPC-style JSON API, as the CLI and tests use it. */

export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(readonly procedure: string, readonly code: string, message: string) {
    super(`${procedure}: ${code}: ${message}`);
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
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}/api/v1`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "rpc-procedure": procedure,
          "rpc-caller": "peloton-cli",
          "rpc-encoding": "json",
          "context-ttl-ms": String(timeout),
          ...this.#auth(),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeout + 1000),
      });
    } catch (e) {
      throw new ApiError(procedure, "unavailable", `cannot reach ${this.baseUrl}: ${(e as Error).message}`);
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new ApiError(procedure, "internal", `HTTP ${res.status}: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      const hint = res.status === 401
        ? " (give credentials with --username/--password or PELOTON_USERNAME/PELOTON_PASSWORD)"
        : "";
      throw new ApiError(procedure, String(json.code ?? res.status), String(json.message ?? text) + hint);
    }
    const inBody = bodyError(procedure, json);
    if (inBody) throw inBody;
    return json as T;
  }

  #auth(): Record<string, string> {
    const c = this.options.credentials;
    return c ? { authorization: `Basic ${btoa(`${c.username}:${c.password}`)}` } : {};
  }

  /** Reads a task's stdout or stderr from the server's sandbox endpoint; `agentId` says where the run was. */
  async sandboxFile(taskId: string, file: string, agentId?: string): Promise<string> {
    const query = agentId ? `?agentId=${encodeURIComponent(agentId)}` : "";
    const res = await fetch(
      `${this.baseUrl}/sandbox/${encodeURIComponent(taskId)}/${encodeURIComponent(file)}${query}`,
      { headers: this.#auth() },
    );
    const text = await res.text();
    if (!res.ok) throw new ApiError("sandbox", String(res.status), text.trim());
    return text;
  }
}
