/** The emulator's `POST /api/v1/scheduler`: the master's status-code ladder, stream ids, SUBSCRIBE streams. */
import { authorization, type MesosCredentials } from "./credentials.ts";
import type { MasterCore } from "./master_core.ts";
import { EventStream, type StreamFaults } from "./master_stream.ts";
import { validateCall } from "./master_validation.ts";
import { type Call, CONTENT_TYPE_JSON, type Event, SCHEDULER_PATH, STREAM_ID_HEADER } from "./protocol.ts";

/** Master-wide HTTP state that tests and fault hooks change at run time. */
export interface HttpState {
  /** Undefined: this master leads. Null: no leader elected (503). `host:port`: 307 to that leader. */
  leader?: string | null;
  /** Until then every call is answered 503 "Master has not finished recovery". */
  recoveringUntilMs: number;
  /** When set, scheduler calls need HTTP basic authentication with one of these (Mesos's `--credentials`). */
  credentials?: MesosCredentials[];
  /**
   * Those of the operator API and the agents' `/files` (Mesos's `--http_credentials`, with
   * `--authenticate_http_readwrite` and the agents' `--authenticate_http_readonly`); unset, `credentials`.
   */
  operatorCredentials?: MesosCredentials[];
  heartbeatIntervalMs: number;
  faults: StreamFaults;
  /** Fault: operator calls of a type answered 503 this many more times (`failed` counts those answered so). */
  operatorFaults: Map<string, { left: number; failed: number }>;
  onCall?: (call: unknown) => void;
  onEvent?: (event: Event, streamId: string) => void;
}

export function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8", ...headers } });
}

/** The principal of the credentials a request carries, when they are one of `credentials`. */
export function principalOf(req: Request, credentials: MesosCredentials[] | undefined): string | undefined {
  const header = req.headers.get("authorization");
  return credentials?.find((c) => authorization(c).authorization === header)?.principal;
}

/** 401 for a request without one of `credentials`, when they are set; else undefined. */
export function unauthenticated(
  req: Request,
  credentials: MesosCredentials[] | undefined,
): Response | undefined {
  if (!credentials || principalOf(req, credentials) !== undefined) return undefined;
  return text(401, "", { "www-authenticate": 'Basic realm="mesos"' });
}

/**
 * The checks made before any handler: authentication (with the scheduler's credentials unless given others),
 * leadership, recovery (steps 1–2 of the ladder).
 */
export function preamble(
  req: Request,
  state: HttpState,
  path: string,
  credentials = state.credentials,
): Response | undefined {
  const refused = unauthenticated(req, credentials);
  if (refused) return refused;
  if (state.leader === null) return text(503, "No leader elected");
  if (state.leader !== undefined) {
    // Protocol-relative, as the master writes it.
    return new Response(null, { status: 307, headers: { location: `//${state.leader}${path}` } });
  }
  if (Date.now() < state.recoveringUntilMs) return text(503, "Master has not finished recovery");
  return undefined;
}

/** Method, Content-Type (compared exactly) and JSON parsing (step 3). */
export async function readJsonBody(req: Request, what: string): Promise<{ value: unknown } | Response> {
  if (req.method !== "POST") return text(405, "Expecting a 'POST' request", { allow: "POST" });
  const contentType = req.headers.get("content-type");
  if (contentType === null) return text(400, "Expecting 'Content-Type' to be present");
  const body = await req.text();
  if (contentType !== CONTENT_TYPE_JSON) {
    const note = contentType === "application/x-protobuf" ? " (this emulator speaks JSON only)" : "";
    return text(415, `Expecting 'Content-Type' of application/json or application/x-protobuf${note}`);
  }
  try {
    return { value: JSON.parse(body) };
  } catch (e) {
    return text(400, `Failed to convert JSON into ${what} protobuf: ${(e as Error).message}`);
  }
}

/** Lenient Accept parsing: no header accepts anything; `*\/*`, `application/*` and q-values are honoured. */
export function acceptsJson(header: string | null): boolean {
  if (header === null || header.trim() === "") return true;
  return header.split(",").some((part) => {
    const [range, ...params] = part.trim().split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) return false;
    return range === CONTENT_TYPE_JSON || range === "application/*" || range === "*/*";
  });
}

const UNSUPPORTED = new Set(["ACKNOWLEDGE_OPERATION_STATUS", "RECONCILE_OPERATIONS", "UPDATE_FRAMEWORK"]);

export class SchedulerEndpoint {
  readonly #core: MasterCore;
  readonly #state: HttpState;
  readonly streams = new Set<EventStream>();

  constructor(core: MasterCore, state: HttpState) {
    this.#core = core;
    this.#state = state;
  }

  async handle(req: Request): Promise<Response> {
    const early = preamble(req, this.#state, SCHEDULER_PATH);
    if (early) return early;
    const parsed = await readJsonBody(req, "Call");
    if (parsed instanceof Response) return parsed;
    this.#state.onCall?.(parsed.value);
    const problem = validateCall(parsed.value);
    if (problem) return text(400, problem);
    const call = parsed.value as Call;
    if (call.type === "SUBSCRIBE") {
      // The master's `validation::scheduler::call::validate`: the FrameworkInfo names the caller's principal.
      const principal = principalOf(req, this.#state.credentials);
      const named = call.subscribe.framework_info.principal;
      if (principal !== undefined && named !== undefined && named !== principal) {
        return text(
          400,
          `Authenticated principal '${principal}' does not match principal '${named}' set in \`FrameworkInfo\``,
        );
      }
      return this.#subscribe(req, call);
    }
    const fw = this.#core.framework(call.framework_id?.value);
    if (!fw) return text(400, "Framework cannot be found");
    if (!fw.sub) return text(403, "Framework is not subscribed");
    const streamId = req.headers.get(STREAM_ID_HEADER);
    if (streamId === null) {
      return text(400, "All non-subscribe calls should include the 'Mesos-Stream-Id' header");
    }
    if (streamId !== fw.sub.streamId) {
      return text(
        400,
        `The stream ID '${streamId}' included in this request didn't match the stream ID currently associated with framework ID ${fw.id}`,
      );
    }
    // The master's own answer to the enum's UNKNOWN, once the framework and its stream are checked.
    if ((call.type as string) === "UNKNOWN") return text(501, "Received 'UNKNOWN' call");
    if (UNSUPPORTED.has(call.type)) return text(501, `${call.type} is not implemented by this emulator`);
    this.#core.handle(fw, call);
    return new Response(null, { status: 202 });
  }

  #subscribe(req: Request, call: Extract<Call, { type: "SUBSCRIBE" }>): Response {
    if (!acceptsJson(req.headers.get("accept"))) {
      return text(
        406,
        "Expecting 'Accept' to allow application/json (this emulator does not write protobuf)",
      );
    }
    if (req.headers.has(STREAM_ID_HEADER)) {
      return text(400, "Subscribe calls should not include the 'Mesos-Stream-Id' header");
    }
    for (const s of this.streams) if (s.ended) this.streams.delete(s);
    const stream = new EventStream(this.#state.faults, (s) => this.#cancelled(s), this.#state.onEvent);
    this.streams.add(stream);
    const result = this.#core.subscribe(call, stream);
    if ("error" in result) {
      // Refusals found while subscribing come back as 200 with one ERROR event, then the stream ends.
      stream.send({ type: "ERROR", error: { message: result.error } });
      stream.close();
      this.streams.delete(stream);
    } else {
      stream.frameworkId = result.frameworkId;
      stream.startHeartbeats(this.#state.heartbeatIntervalMs);
    }
    return new Response(stream.body, {
      status: 200,
      headers: { "content-type": CONTENT_TYPE_JSON, [STREAM_ID_HEADER]: stream.streamId },
    });
  }

  #cancelled(stream: EventStream): void {
    this.streams.delete(stream);
    if (stream.frameworkId) this.#core.disconnected(stream.frameworkId, stream);
  }

  /**
   * Fault: the master ends every subscription stream (clean EOF; lost on a partitioned one, whose scheduler
   * keeps a half-open connection); frameworks become disconnected.
   */
  dropStreams(): void {
    for (const s of [...this.streams]) {
      s.close();
      if (s.frameworkId) this.#core.disconnected(s.frameworkId, s);
    }
  }

  /** Fault: current streams stay open but carry nothing more, heartbeats and their end included. */
  partition(): void {
    for (const s of this.streams) s.partitioned = true;
  }

  /** The master process stops or restarts: every connection ends, partitioned ones too. */
  closeAll(): void {
    for (const s of this.streams) s.end();
    this.streams.clear();
  }
}
