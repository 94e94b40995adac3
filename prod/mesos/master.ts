/** A local master that speaks the documented Mesos v1 HTTP API, with agents that run real processes. */
import { type DataDirOwnership, takeOverDataDir } from "../minicluster/data_dir_owner.ts";
import type { MesosCredentials } from "./credentials.ts";
import { MasterCore } from "./master_core.ts";
import { type HttpState, SchedulerEndpoint, text } from "./master_http.ts";
import { OperatorEndpoint } from "./master_operator.ts";
import { type Event, OPERATOR_PATH, SCHEDULER_PATH } from "./protocol.ts";
import {
  addBags,
  type Bag,
  emptyBag,
  kindOf,
  parseResourceText,
  recordToAttributes,
  REVOCABLE,
  toMillis,
} from "./resources.ts";

/** One agent; unset fields take the defaults (Peloton's dev-cluster attributes, a port range per agent). */
export interface AgentSpec {
  hostname?: string;
  ip?: string;
  cpus?: number;
  memMb?: number;
  diskMb?: number;
  gpus?: number;
  /** Revocable (oversubscribed) cpus, offered to frameworks with REVOCABLE_RESOURCES. */
  revocableCpus?: number;
  ports?: [number, number][];
  /**
   * The agent's `--resources`, as Mesos reads them: a role in parentheses reserves a resource statically
   * for it, e.g. Peloton's minicluster agents'
   * `cpus(peloton):0.5;cpus(*):3.5;mem(peloton):1024;mem(*):1024;disk(*):20000;ports(peloton):[31000-32000]`.
   * Of cpus, mem, disk, gpus and ports, those it does not name come from the fields above.
   */
  resources?: string;
  attributes?: Record<string, string>;
}

export interface MesosMasterOptions {
  /**
   * Agent work directories: `<dataDir>/agents/<agentId>/tasks/<taskId>/{stdout,stderr}`. The master holds
   * it until stopped (`start` throws `DataDirInUseError` while another live process holds it) and, taking
   * it over, ends the task processes a master that crashed left running, before its agents come up.
   */
  dataDir: string;
  /** What holds the data dir, as its owner file names it (default `mesos master emulator`). */
  dataDirOwner?: string;
  hostname?: string;
  /** 0 picks a free port. */
  port?: number;
  agents?: number | AgentSpec[];
  /** Mesos: 15 s. Tests use tens of milliseconds. */
  heartbeatIntervalMs?: number;
  /** Mesos: 1 s. */
  allocationIntervalMs?: number;
  offerTimeoutMs?: number;
  /** Status update retries start here and double (Mesos: 10 s up to 10 min). */
  statusUpdateRetryMinMs?: number;
  statusUpdateRetryMaxMs?: number;
  defaultKillGraceMs?: number;
  /** Completed tasks kept per framework for GET_TASKS (Mesos: `--max_completed_tasks_per_framework`, 1000). */
  maxCompletedTasks?: number;
  /** Start task processes from a worker thread (`peloton minicluster`); tests keep them in process. */
  spawnInWorker?: boolean;
  /** Scheduler calls need HTTP basic authentication with one of these (Mesos's `--credentials`). */
  credentials?: MesosCredentials[];
  /**
   * The operator API's and the agents' `/files`' own (Mesos's `--http_credentials`); unset, `credentials`
   * are those too.
   */
  operatorCredentials?: MesosCredentials[];
  /** Every call body received on the scheduler endpoint, and every event written to a stream. */
  onCall?: (call: unknown) => void;
  onEvent?: (event: Event, streamId: string) => void;
  log?: (line: string) => void;
}

export interface RestartOptions {
  /** False: frameworks and the task table are lost; agents re-register and report their tasks. */
  keepState: boolean;
  /** 503 "Master has not finished recovery" for this long. */
  recoveryMs?: number;
  reregisterDelayMs?: number;
}

function agentConfig(spec: AgentSpec, i: number) {
  const given = spec.resources === undefined ? emptyBag() : parseResourceText(spec.resources);
  const named = new Set(
    [...Object.keys(given.scalars), ...Object.keys(given.ranges)].map((k) => kindOf(given, k).name),
  );
  const defaults: Bag = {
    scalars: {
      ...(named.has("cpus") ? {} : { cpus: toMillis(spec.cpus ?? 4) }),
      ...(named.has("mem") ? {} : { mem: toMillis(spec.memMb ?? 8192) }),
      ...(named.has("disk") ? {} : { disk: toMillis(spec.diskMb ?? 20480) }),
      ...(spec.gpus && !named.has("gpus") ? { gpus: toMillis(spec.gpus) } : {}),
      ...(spec.revocableCpus ? { ["cpus" + REVOCABLE]: toMillis(spec.revocableCpus) } : {}),
    },
    // Agents share this machine, so their port ranges must not overlap.
    ranges: named.has("ports") ? {} : { ports: spec.ports ?? [[31000 + i * 1000, 31999 + i * 1000]] },
  };
  const resources = addBags(given, defaults);
  const attributes = recordToAttributes({
    datacenter: "tdc1",
    rack: `tdc1-t000${(i % 2) + 1}`,
    zone: "tpl1-tdc1",
    host_pool: "shared",
    ...spec.attributes,
  });
  return { hostname: spec.hostname ?? `agent-${i}`, ip: spec.ip ?? "127.0.0.1", resources, attributes };
}

export class MesosMaster {
  readonly url: string;
  readonly port: number;
  readonly core: MasterCore;
  readonly http: HttpState;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #scheduler: SchedulerEndpoint;
  readonly #operator: OperatorEndpoint;
  readonly #options: MesosMasterOptions;
  readonly #owner: DataDirOwnership;
  #agentCount: number;
  #stopping?: Promise<void>;

  private constructor(
    options: MesosMasterOptions,
    server: Deno.HttpServer<Deno.NetAddr>,
    bind: (h: (r: Request) => Promise<Response>) => void,
    owner: DataDirOwnership,
  ) {
    this.#options = options;
    this.#owner = owner;
    this.#server = server;
    this.port = server.addr.port;
    const hostname = options.hostname ?? "127.0.0.1";
    this.url = `http://${hostname}:${this.port}`;
    const specs = typeof options.agents === "number" || options.agents === undefined
      ? Array.from({ length: (options.agents as number | undefined) ?? 3 }, () => ({}))
      : options.agents;
    this.#agentCount = specs.length;
    this.http = {
      recoveringUntilMs: 0,
      credentials: options.credentials,
      operatorCredentials: options.operatorCredentials,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 15_000,
      faults: { heartbeats: true },
      operatorFaults: new Map(),
      onCall: options.onCall,
      onEvent: options.onEvent,
    };
    this.core = new MasterCore({
      dataDir: options.dataDir,
      hostname,
      port: this.port,
      agents: specs.map(agentConfig),
      heartbeatIntervalMs: this.http.heartbeatIntervalMs,
      allocationIntervalMs: options.allocationIntervalMs ?? 1000,
      offerTimeoutMs: options.offerTimeoutMs,
      statusRetryMinMs: options.statusUpdateRetryMinMs ?? 10_000,
      statusRetryMaxMs: options.statusUpdateRetryMaxMs ?? 600_000,
      defaultKillGraceMs: options.defaultKillGraceMs ?? 3000,
      maxCompletedTasks: options.maxCompletedTasks ?? 1000,
      spawnInWorker: options.spawnInWorker,
      log: options.log,
    });
    this.#scheduler = new SchedulerEndpoint(this.core, this.http);
    this.#operator = new OperatorEndpoint(this.core, this.http, options.dataDir);
    bind((req) => this.#route(req));
  }

  /**
   * Takes the data dir (ending the task processes a crashed master left running), listens, then registers
   * the agents under the ids they had on this dir: the crashed run's tasks reconcile as gone from agents a
   * scheduler knows, and it launches each once more there.
   */
  static async start(options: MesosMasterOptions): Promise<MesosMaster> {
    const owner = takeOverDataDir(options.dataDir, options.dataDirOwner ?? "mesos master emulator");
    let handler: (req: Request) => Promise<Response> = () => Promise.resolve(text(503, "starting"));
    let server: Deno.HttpServer<Deno.NetAddr> | undefined;
    try {
      server = Deno.serve(
        { hostname: options.hostname ?? "127.0.0.1", port: options.port ?? 0, onListen() {} },
        (req) => handler(req),
      );
      return new MesosMaster(options, server, (h) => (handler = h), owner);
    } catch (e) {
      await server?.shutdown();
      owner.release();
      throw e;
    }
  }

  async #route(req: Request): Promise<Response> {
    const url = new URL(req.url);
    try {
      if (url.pathname === SCHEDULER_PATH) return await this.#scheduler.handle(req);
      if (url.pathname === OPERATOR_PATH) return await this.#operator.handle(req);
      if (url.pathname === "/files/download" && req.method === "GET") {
        return await this.#operator.files(req, url);
      }
      if (url.pathname === "/health") return text(200, "");
      if (url.pathname.startsWith("/__emu/")) return this.#control(req, url);
      return (await this.#operator.legacy(req, url.pathname)) ?? text(404, `No endpoint ${url.pathname}`);
    } catch (e) {
      this.#options.log?.(`emulator: ${req.method} ${url.pathname} failed: ${(e as Error).stack}`);
      return text(500, (e as Error).message);
    }
  }

  /** Test-control endpoints for the CLI-run emulator; production code never calls them. */
  #control(req: Request, url: URL): Response {
    if (req.method !== "POST") return text(405, "", { allow: "POST" });
    const lose = /^\/__emu\/agents\/([^/]+)\/lose$/.exec(url.pathname);
    if (lose) {
      return this.loseAgent(decodeURIComponent(lose[1])) ? text(200, "") : text(404, "no such active agent");
    }
    if (url.pathname === "/__emu/streams/drop") return this.dropStreams(), text(200, "");
    if (url.pathname === "/__emu/restart") {
      this.restart({ keepState: url.searchParams.get("keep_state") === "true" });
      return text(200, "");
    }
    return text(404, `No control endpoint ${url.pathname}`);
  }

  /** Ids of the agents that are registered now. */
  agentIds(): string[] {
    return this.core.agents().filter((a) => a.state === "active").map((a) => a.agent.id);
  }

  addAgent(spec: AgentSpec = {}): string {
    return this.core.addAgent(agentConfig(spec, this.#agentCount++));
  }

  // ---- fault hooks ----

  /**
   * Ends every subscription stream from the master's side; frameworks become disconnected. After
   * `partition`, the schedulers do not see the end: their connections stay half-open, their calls 403.
   */
  dropStreams(): void {
    this.#scheduler.dropStreams();
  }

  /** Current streams stay open but silent (no events, no heartbeats, no end), like a network partition. */
  partition(): void {
    this.#scheduler.partition();
  }

  setHeartbeats(on: boolean): void {
    this.http.faults.heartbeats = on;
  }

  /** Cuts outgoing stream bytes at random positions drawn from `prng`; undefined turns it off. */
  rechunk(prng: (() => number) | undefined): void {
    this.http.faults.rechunk = prng;
  }

  /** The next ACCEPT finds its first offer rescinded (RESCIND sent) just before it is processed. */
  rescindDuringNextAccept(): void {
    this.core.allocator.rescindOnNextAccept = true;
  }

  /**
   * The next `times` operator calls of `type` (e.g. START_MAINTENANCE) are answered 503 without effect;
   * `Infinity` until told otherwise, 0 ends the fault.
   */
  failOperatorCalls(type: string, times = 1): void {
    this.http.operatorFaults.set(type, { left: times, failed: 0 });
  }

  /** How many operator calls of `type` the current `failOperatorCalls` setting has failed so far. */
  failedOperatorCalls(type: string): number {
    return this.http.operatorFaults.get(type)?.failed ?? 0;
  }

  /**
   * The agent becomes unreachable: tasks are UNREACHABLE/LOST, FAILURE is sent. Its processes die, unless
   * `partition` is set: then they keep running and `healAgent` brings the agent back with them.
   */
  loseAgent(agentId: string, options: { partition?: boolean } = {}): boolean {
    return this.core.loseAgent(agentId, options.partition ?? false);
  }

  healAgent(agentId: string): boolean {
    return this.core.healAgent(agentId);
  }

  /** Undefined: lead; null: no leader (503); `host:port`: redirect there (307). */
  setLeader(leader: string | null | undefined): void {
    this.http.leader = leader;
  }

  restart(options: RestartOptions): void {
    this.#scheduler.closeAll();
    this.http.recoveringUntilMs = Date.now() + (options.recoveryMs ?? 0);
    this.core.restart(options.keepState, options.reregisterDelayMs ?? 0);
  }

  /** Closes every stream, stops every task process and the HTTP server, then gives the data dir up. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#scheduler.closeAll();
      await this.core.stop();
      await this.#server.shutdown();
      this.#owner.release();
    })();
    return this.#stopping;
  }
}
