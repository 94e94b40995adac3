/** The cluster a host manager drives: the built-in minicluster of local agents, or a Mesos master. */
import type { HostBackend } from "../core/ports/host_backend.ts";
import type { AgentOptions } from "./minicluster/agent.ts";
import { Minicluster } from "./minicluster/minicluster.ts";
import { SANDBOX_HEADERS, sandboxPath } from "./minicluster/sandbox_http.ts";
import type { MesosCredentials } from "./mesos/credentials.ts";
import type { FrameworkIdStore } from "./mesos/framework_id_store.ts";
import { MesosBackend } from "./mesos/mesos_backend.ts";
import { readBody } from "./daemons/api_request.ts";
import { rpcError, type RpcErrorCode } from "./daemons/http_errors.ts";

/**
 * A backend that can also show a task's sandbox files (`task logs`); `agentId` says where the run was, for a
 * run the backend no longer remembers (an earlier run of the task).
 */
export type SandboxBackend = HostBackend & {
  logs(taskId: string, file: "stdout" | "stderr", agentId?: string): Promise<string | undefined>;
};

export interface BackendOptions {
  backend?: "minicluster" | "mesos";
  mesosMaster?: string;
  /** HTTP basic credentials for the Mesos master and agents (`--mesos-principal`, `--mesos-secret-file`). */
  mesosCredentials?: MesosCredentials;
  /** Where the minicluster keeps its agents' sandboxes. */
  dataDir: string;
  agents?: number;
  agentOptions?: Partial<AgentOptions>[];
  /** How long an ended run's sandbox is kept (`--sandbox-gc-delay-ms`; Mesos's `gc_delay`, a week by default). */
  sandboxGcDelayMs?: number;
  log?: (line: string) => void;
}

type PortRange = [number, number];

/** Where the ranges picked for agents given none start, and their size: 31000-31999, 32000-32999, ... */
const FIRST_PORT = 31000;
const RANGE_SIZE = 1000;
const MAX_PORT = 65535;

const showRange = ([lo, hi]: PortRange) => (lo === hi ? String(lo) : `${lo}-${hi}`);

/**
 * Why the agents' port ranges cannot be used together, or undefined: agents share localhost, so two whose
 * ranges overlap would hand two tasks one port (the second fails "Address already in use").
 */
export function portRangeOverlap(
  agents: { hostname: string; portRanges: PortRange[] }[],
): string | undefined {
  for (let i = 0; i < agents.length; i++) {
    for (let j = i + 1; j < agents.length; j++) {
      for (const r of agents[i].portRanges) {
        for (const q of agents[j].portRanges) {
          const shared: PortRange = [Math.max(r[0], q[0]), Math.min(r[1], q[1])];
          if (shared[0] > shared[1]) continue;
          const [a, b] = [agents[i], agents[j]];
          return `agents ${a.hostname} and ${b.hostname} both offer ports ${showRange(shared)} ` +
            `(${a.hostname}: ${a.portRanges.map(showRange).join(", ")}, ` +
            `${b.hostname}: ${b.portRanges.map(showRange).join(", ")}); ` +
            "agents share localhost, so their port ranges must not overlap";
        }
      }
    }
  }
  return undefined;
}

/** The first range of RANGE_SIZE ports from FIRST_PORT on that overlaps none of `used`. */
export function freePortRange(used: PortRange[]): PortRange {
  for (let lo = FIRST_PORT; lo + RANGE_SIZE - 1 <= MAX_PORT; lo += RANGE_SIZE) {
    const hi = lo + RANGE_SIZE - 1;
    if (used.every(([a, b]) => b < lo || a > hi)) return [lo, hi];
  }
  throw new Error(
    `Cannot pick a port range for an agent: no ${RANGE_SIZE} ports from ${FIRST_PORT} are free`,
  );
}

/** A port range's problem (`ports: [lo, hi]`, 1 <= lo <= hi <= 65535), or undefined. */
export function portRangeProblem(range: unknown): string | undefined {
  const ok = Array.isArray(range) && range.length === 2 &&
    range.every((p) => Number.isInteger(p) && p >= 1 && p <= MAX_PORT) && range[0] <= range[1];
  return ok
    ? undefined
    : `got ${JSON.stringify(range)}, expected [low, high] ports, 1 <= low <= high <= 65535`;
}

/**
 * Per-agent port ranges: agents share localhost, so their ranges must not overlap. An agent given none gets
 * the first free 1000 ports from 31000 on; given ones that overlap are refused (throws, naming both agents).
 */
export function agentDefaults(n: number, given: Partial<AgentOptions>[] = []): Partial<AgentOptions>[] {
  const used = given.slice(0, n).flatMap((g) => g.portRanges ?? []);
  const out: Partial<AgentOptions>[] = [];
  for (let i = 0; i < n; i++) {
    let portRanges = given[i]?.portRanges;
    if (!portRanges) {
      portRanges = [freePortRange(used)];
      used.push(portRanges[0]);
    }
    out.push({ ...given[i], portRanges });
  }
  const overlap = portRangeOverlap(
    out.map((a, i) => ({ hostname: a.hostname ?? `agent-${i}`, portRanges: a.portRanges! })),
  );
  if (overlap) throw new Error(`Cannot start the minicluster: ${overlap}`);
  return out;
}

export function createBackend(
  o: BackendOptions,
  idStore: FrameworkIdStore,
): { backend: SandboxBackend; minicluster?: Minicluster; mesos?: MesosBackend } {
  if (o.backend === "mesos") {
    if (!o.mesosMaster) throw new Error("Cannot start with the Mesos backend: --mesos-master is missing");
    const mesos = new MesosBackend({
      masterUrl: o.mesosMaster,
      idStore,
      log: o.log,
      ...(o.mesosCredentials ? { credentials: o.mesosCredentials } : {}),
    });
    return { backend: mesos, mesos };
  }
  const minicluster = new Minicluster({
    dataDir: `${o.dataDir}/minicluster`,
    agents: agentDefaults(o.agents ?? 3, o.agentOptions),
    spawnInWorker: true,
    sandboxGcDelayMs: o.sandboxGcDelayMs,
  });
  return { backend: minicluster, minicluster };
}

/** A minicluster agent's name: as a DNS name, with underscores (it names the host in the API and its sandbox). */
const HOSTNAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$/;

/**
 * `POST /admin/agents`: adds a minicluster agent at runtime (operators growing a dev cluster; tests). Its
 * `ports: [low, high]` must overlap no other agent's; without them it gets the first free 1000 ports.
 */
export async function addAgent(minicluster: Minicluster | undefined, req: Request): Promise<Response> {
  // Refusals in yarpc's wire format, as the API's: the code in Rpc-Error-Code, the message as the body.
  const fail = (code: RpcErrorCode, message: string) => rpcError(code, message, { req });
  if (!minicluster) {
    return fail("failed-precondition", "agents can be added only to the built-in minicluster");
  }
  const text = await readBody(req, 1 << 20);
  if (text instanceof Response) return text;
  let parsed: unknown;
  try {
    parsed = text.trim() ? JSON.parse(text) : {};
  } catch (e) {
    return fail("invalid-argument", `request body is not JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    return fail("invalid-argument", "request body: expected a JSON object");
  }
  const body = parsed as Record<string, unknown>;
  const bad = ["cpu", "memoryMb", "diskMb"].find((k) => {
    const v = body[k];
    return v !== undefined && !(typeof v === "number" && v > 0);
  });
  if (bad) return fail("invalid-argument", `${bad}: expected a positive number`);
  const { hostname, attributes } = body;
  if (hostname !== undefined && (typeof hostname !== "string" || !HOSTNAME.test(hostname))) {
    const expected = "a host name of letters, digits, dots, dashes and underscores";
    return fail("invalid-argument", `hostname: got ${JSON.stringify(hostname)}, expected ${expected}`);
  }
  if (hostname !== undefined && minicluster.hosts().some((h) => h.hostname === hostname)) {
    return fail("already-exists", `hostname: an agent named ${hostname} is already registered`);
  }
  if (
    attributes !== undefined &&
    (!attributes || typeof attributes !== "object" || Array.isArray(attributes) ||
      Object.values(attributes).some((v) => typeof v !== "string"))
  ) {
    return fail("invalid-argument", "attributes: expected an object of string values");
  }
  let portRanges: PortRange[];
  if (body.ports !== undefined) {
    const problem = portRangeProblem(body.ports);
    if (problem) return fail("invalid-argument", `ports: ${problem}`);
    portRanges = [body.ports as PortRange];
    // Named as the minicluster would name it, so the message says which agent asked.
    const name = (hostname as string | undefined) ?? `agent-${minicluster.hosts().length}`;
    const overlap = minicluster.hosts().map((h) => portRangeOverlap([{ hostname: name, portRanges }, h]))
      .find((o) => o !== undefined);
    if (overlap) return fail("failed-precondition", `ports: ${overlap}`);
  } else {
    // Not from the host count: an agent given its range (`--agents-file`) may hold the next block.
    try {
      portRanges = [freePortRange(minicluster.hosts().flatMap((h) => h.portRanges))];
    } catch (e) {
      return fail("resource-exhausted", (e as Error).message);
    }
  }
  let host;
  try {
    host = minicluster.addAgent({
      ...(hostname ? { hostname: hostname as string } : {}),
      resources: {
        cpuMilli: Math.round(((body.cpu as number | undefined) ?? 4) * 1000),
        memMb: (body.memoryMb as number | undefined) ?? 8192,
        diskMb: (body.diskMb as number | undefined) ?? 20480,
        gpuMilli: 0,
      },
      attributes: (attributes as Record<string, string> | undefined) ?? {},
      portRanges,
    });
  } catch (e) {
    // The agent's id could not be recorded (a full disk), or the minicluster is stopping: nothing was added.
    const message = (e as Error).message;
    const full = /\(os error (28|122)\)|No space left|quota exceeded/i.test(message);
    return fail(full ? "resource-exhausted" : "internal", `cannot add the agent: ${message}`);
  }
  return Response.json({ hostname: host.hostname, agentId: host.agentId });
}

/** `GET /sandbox/<taskId>/<stdout|stderr>[?agentId=ID]`. */
export async function sandboxFile(backend: SandboxBackend, url: URL): Promise<Response> {
  const path = sandboxPath(url);
  if (path instanceof Response) return path;
  const { taskId, file } = path;
  const text = await backend.logs(taskId, file, url.searchParams.get("agentId") ?? undefined);
  // The same hardening as the minicluster's answers: task output is the task's author's, on the UI's origin.
  return text === undefined
    ? new Response(`no sandbox for task ${taskId}\n`, { status: 404, headers: SANDBOX_HEADERS })
    : new Response(text, { headers: SANDBOX_HEADERS });
}
