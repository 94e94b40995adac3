/** The emulator's operator API (`POST /api/v1`), legacy maintenance endpoints, and agent-style `/files`. */
import { isSafeId } from "../minicluster/agent.ts";
import { acceptsJson, type HttpState, preamble, readJsonBody, text, unauthenticated } from "./master_http.ts";
import type { MasterCore } from "./master_core.ts";
import type { AgentRec } from "./master_types.ts";
import type { MachineID, MaintenanceSchedule, OperatorAgent } from "./protocol.ts";
import { OPERATOR_PATH } from "./protocol.ts";
import { withoutRevocable } from "./master_offers.ts";
import { addBags, type Bag, bagToMesos, emptyBag } from "./resources.ts";

const VERSION = "1.11.0";

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function sum(bags: Bag[]): Bag {
  return bags.reduce((a, b) => addBags(a, b), emptyBag());
}

export class OperatorEndpoint {
  readonly #core: MasterCore;
  readonly #state: HttpState;
  readonly #dataDir: string;

  constructor(core: MasterCore, state: HttpState, dataDir: string) {
    this.#core = core;
    this.#state = state;
    this.#dataDir = dataDir;
  }

  /** `POST /api/v1`: synchronous calls answer 200 `{type, <type>: ...}`, maintenance changes 202. */
  async handle(req: Request): Promise<Response> {
    const early = preamble(req, this.#state, OPERATOR_PATH, this.#credentials());
    if (early) return early;
    const parsed = await readJsonBody(req, "Call");
    if (parsed instanceof Response) return parsed;
    const call = parsed.value as Record<string, unknown>;
    const type = typeof call?.type === "string" ? call.type : undefined;
    if (!type) return text(400, "Expecting 'type' to be present");
    if (!acceptsJson(req.headers.get("accept"))) {
      return text(406, "Expecting 'Accept' to allow application/json");
    }
    const fault = this.#state.operatorFaults.get(type);
    if (fault && fault.left > 0) {
      fault.left--;
      fault.failed++;
      return text(503, `${type} failed by fault injection`);
    }
    const m = this.#core.maintenance;
    const reply = (body: unknown) => json({ type, [type.toLowerCase()]: body });
    const change = (problem: string | undefined) =>
      problem ? text(400, problem) : new Response(null, { status: 202 });
    const payload = (call[type.toLowerCase()] ?? {}) as Record<string, unknown>;
    switch (type) {
      case "GET_HEALTH":
        return reply({ healthy: true });
      case "GET_VERSION":
        return reply({ version_info: { version: VERSION } });
      case "GET_AGENTS":
        return reply(this.agents());
      case "GET_FRAMEWORKS":
        return reply({
          frameworks: this.#core.frameworks().map((f) => ({
            framework_info: f.info,
            active: f.sub !== undefined,
            connected: f.sub !== undefined,
            recovered: f.recovered,
          })),
        });
      case "GET_TASKS":
        return reply({ tasks: this.#tasks(), completed_tasks: this.#completed() });
      case "GET_MAINTENANCE_SCHEDULE":
        return reply({ schedule: m.schedule() });
      case "GET_MAINTENANCE_STATUS":
        return reply({ status: m.status() });
      case "UPDATE_MAINTENANCE_SCHEDULE":
        return change(m.updateSchedule((payload.schedule ?? {}) as MaintenanceSchedule));
      case "START_MAINTENANCE":
        return change(m.startMaintenance((payload.machines ?? []) as MachineID[]));
      case "STOP_MAINTENANCE":
        return change(m.stopMaintenance((payload.machines ?? []) as MachineID[]));
      default:
        return text(501, `${type} is not implemented by this emulator`);
    }
  }

  /** The GET_AGENTS answer: registered agents, and those still re-registering after a failover. */
  agents(): { agents: OperatorAgent[]; recovered_agents: OperatorAgent["agent_info"][] } {
    const agents: OperatorAgent[] = [];
    const recovered: OperatorAgent["agent_info"][] = [];
    for (const rec of this.#core.agents()) {
      if (rec.state === "recovering") recovered.push(this.#info(rec));
      if (rec.state !== "active") continue;
      const c = rec.agent.config;
      const used = sum(this.#core.tasksOn(c.id).map((t) => t.bag));
      const offered = sum(this.#core.allocator.offersOn(c.id).map((o) => o.bag));
      agents.push({
        agent_info: this.#info(rec),
        active: true,
        pid: `slave(1)@${c.ip}:${c.port}`,
        version: VERSION,
        registered_time: { nanoseconds: rec.registeredMs * 1e6 },
        // Revocable resources are an estimate offered on top, not part of the agent's total.
        total_resources: bagToMesos(withoutRevocable(rec.agent.total)),
        allocated_resources: bagToMesos(addBags(used, offered)),
        offered_resources: bagToMesos(offered),
      });
    }
    return { agents, recovered_agents: recovered };
  }

  #info(rec: AgentRec): OperatorAgent["agent_info"] {
    const c = rec.agent.config;
    return {
      hostname: c.hostname,
      id: { value: c.id },
      port: c.port,
      resources: bagToMesos(withoutRevocable(c.resources)),
      attributes: c.attributes,
    };
  }

  #completed(): unknown[] {
    return this.#core.frameworks().flatMap((f) =>
      [...f.completed.values()].map((t) => ({
        name: t.info.name,
        task_id: t.info.task_id,
        framework_id: { value: f.id },
        agent_id: { value: t.agentId },
        ...(t.info.executor ? { executor_id: t.info.executor.executor_id } : {}),
        state: t.state,
        resources: t.info.resources,
      }))
    );
  }

  #tasks(): unknown[] {
    return this.#core.frameworks().flatMap((f) =>
      [...f.tasks.values(), ...f.unreachable.values()].map((t) => ({
        name: t.info.name,
        task_id: t.info.task_id,
        framework_id: { value: f.id },
        agent_id: { value: t.agentId },
        ...(t.info.executor ? { executor_id: t.info.executor.executor_id } : {}),
        state: f.unreachable.has(t.info.task_id.value) ? "TASK_UNREACHABLE" : t.state,
        resources: t.info.resources,
      }))
    );
  }

  /** `/master/maintenance/{schedule,status}` and `/master/machine/{down,up}` (also without `/master`). */
  async legacy(req: Request, path: string): Promise<Response | undefined> {
    const p = path.replace(/^\/master/, "");
    const known = ["/maintenance/schedule", "/maintenance/status", "/machine/down", "/machine/up"];
    if (!known.includes(p)) return undefined;
    const early = preamble(req, this.#state, path, this.#credentials());
    if (early) return early;
    const m = this.#core.maintenance;
    if (req.method === "GET" && p === "/maintenance/schedule") return json(m.schedule());
    if (req.method === "GET" && p === "/maintenance/status") return json(m.status());
    if (req.method !== "POST" || p === "/maintenance/status") return text(405, "", { allow: "GET, POST" });
    let body: unknown;
    try {
      body = JSON.parse(await req.text());
    } catch (e) {
      return text(400, `Failed to parse the request body: ${(e as Error).message}`);
    }
    const problem = p === "/maintenance/schedule"
      ? m.updateSchedule(body as MaintenanceSchedule)
      : !Array.isArray(body)
      ? "Expecting a JSON array of machine ids"
      : p === "/machine/down"
      ? m.startMaintenance(body as MachineID[])
      : m.stopMaintenance(body as MachineID[]);
    return problem ? text(400, problem) : text(200, "");
  }

  /**
   * `GET /files/download?path=/frameworks/F/executors/E/runs/latest/stdout`: the virtual path a Mesos
   * agent gives an executor's sandbox (for a command task the executor id is the task id; a custom
   * executor's sandbox is its task's here). With credentials set, a read needs them, as an agent's with
   * `--authenticate_http_readonly`; an agent has no leader or recovery to wait for.
   */
  async files(req: Request, url: URL): Promise<Response> {
    const refused = unauthenticated(req, this.#credentials());
    if (refused) return refused;
    const path = url.searchParams.get("path") ?? "";
    const m = /^\/frameworks\/([^/]+)\/executors\/([^/]+)\/runs\/latest\/(stdout|stderr)$/.exec(path);
    if (!m || !isSafeId(m[2])) return text(404, `No file at ${path}`);
    const [, frameworkId, executorId, file] = m;
    const taskId = this.#core.taskOfExecutor(frameworkId, executorId);
    const dirs = [this.#core.sandboxOf(taskId), ...await this.#sandboxesOnDisk(taskId)];
    for (const dir of dirs) {
      if (!dir) continue;
      try {
        const data = await Deno.readFile(`${dir}/${file}`);
        return new Response(data, { headers: { "content-type": "application/octet-stream" } });
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
    return text(404, `No file at ${path}`);
  }

  /** The operator API's and `/files`' credentials: their own, else the scheduler API's. */
  #credentials() {
    return this.#state.operatorCredentials ?? this.#state.credentials;
  }

  // Sandboxes outlive their tasks and the emulator itself, like an agent's work directory.
  async #sandboxesOnDisk(taskId: string): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const e of Deno.readDir(`${this.#dataDir}/agents`)) {
        if (e.isDirectory) out.push(`${this.#dataDir}/agents/${e.name}/tasks/${taskId}`);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out;
  }
}
