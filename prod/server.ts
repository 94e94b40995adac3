/** Production mode's all-in-one wiring: the four daemons in one process, the store, the backend and HTTP. */
import { givesDeadline, readApiCall } from "./daemons/api_request.ts";
import { routeProcedure } from "../core/api/procedures.ts";
import { DEFAULT_HOSTMGR_CONFIG, HostManager } from "../core/hostmgr/hostmgr.ts";
import { DEFAULT_JOBMGR_CONFIG, JobManager, type JobmgrConfig } from "../core/jobmgr/jobmgr.ts";
import type { ApiReply, MappedTaskStatus, Message } from "../core/messages.ts";
import { DEFAULT_PLACEMENT_CONFIG, type PlacementConfig, PlacementEngine } from "../core/placement/engine.ts";
import { storedLocks } from "../core/jobmgr/lockdown.ts";
import { type ArchiverConfig, DEFAULT_ARCHIVER_CONFIG, JobArchiver } from "../core/jobmgr/archiver.ts";
import { NdjsonArchive } from "./archive_file.ts";
import { InProcessExecutor } from "../core/placement/in_process_executor.ts";
import { PRODUCTION_ROUND_TIMEOUT_MS, WorkerExecutor } from "./placement/worker_executor.ts";
import { seededPrng } from "../core/ports/prng.ts";
import type { Store } from "../core/ports/store.ts";
import { ResourceManager } from "../core/resmgr/resmgr.ts";
import { PendingCalls } from "../core/rpc.ts";
import { authorizeCall, type BasicAuth, endpointProcedure } from "./auth/basic_auth.ts";
import { addAgent, createBackend, type SandboxBackend, sandboxFile } from "./backends.ts";
import { SystemClock } from "./clock.ts";
import { ClusterStore } from "./cluster/cluster_store.ts";
import type { AgentOptions } from "./minicluster/agent.ts";
import type { Minicluster } from "./minicluster/minicluster.ts";
import type { MesosCredentials } from "./mesos/credentials.ts";
import { StoreFrameworkIdStore } from "./mesos/framework_id_store.ts";
import { MesosMaintenance } from "./mesos/maintenance_sync.ts";
import { PromMetrics } from "./metrics.ts";
import { daemonGauges } from "./daemons/gauges.ts";
import { HOSTS_REGISTERING, HostsRegistration } from "./daemons/hostmgr_backend.ts";
import { rpcError } from "./daemons/http_errors.ts";
import { apiReply, replyShaper } from "./proto_extensions.ts";
import { openStore } from "./store/kysely_store.ts";
import { claimStore } from "./store/store_claim.ts";
import { LocalTransport } from "./transport.ts";
import { type HttpListener, listen } from "./daemons/listen.ts";
import { jsonLogger, lineLogger, type Logger } from "./log.ts";
import { MAX_STOP_GRACE_MS } from "./minicluster/minicluster.ts";
import { mergeTaskConfig } from "../core/model/job_config.ts";
import { killGraceMs } from "../core/jobmgr/task_build.ts";
import type { TaskState } from "../core/model/states.ts";
import { ownDataDir } from "./minicluster/data_dir_owner.ts";
import { serveSandboxFile } from "./minicluster/sandbox_http.ts";
import { loadRecovery } from "./recovery.ts";
import { serveUi } from "./ui/page.ts";
import { WATCH_PROCEDURE, WatchStreams } from "./watch_stream.ts";
import { settlesWithin } from "./settle.ts";

/** How long a stop waits for the HTTP server's connections to finish before leaving them behind. */
const SHUTDOWN_GRACE_MS = 5_000;

export type { SandboxBackend };

export const DEFAULT_PORT = 5392;

export interface PelotonOptions {
  /** Deno workers placement rounds run in, over that many host partitions (0 or unset: in process). */
  placementWorkers?: number;
  /** Placement settings over the defaults (`--use-host-pool` sets `hostPools`). */
  placement?: Partial<PlacementConfig>;
  host?: string;
  port?: number;
  dataDir: string;
  /** Store URL: `sqlite:PATH` (default `<dataDir>/peloton.sqlite`) or `mysql://user:pass@host:port/db`. */
  store?: string;
  /** Local agents of the built-in minicluster. */
  agents?: number;
  agentOptions?: Partial<AgentOptions>[];
  /** How long the minicluster keeps an ended run's sandbox (a week by default). */
  sandboxGcDelayMs?: number;
  /**
   * Where the daemons log, as JSON lines naming the daemon (default: warnings and errors on stderr). Each
   * API call is logged at info, so a logger that takes info lines (`up -v`) has one line per call.
   */
  log?: Logger;
  /** Job manager settings to override (e.g. the service restart backoff). */
  jobmgr?: Partial<JobmgrConfig>;
  /** The cluster: the built-in minicluster (default) or a Mesos master. */
  backend?: "minicluster" | "mesos";
  mesosMaster?: string;
  /** The Mesos master's and agents' HTTP basic credentials (`--mesos-principal`, `--mesos-secret-file`). */
  mesosCredentials?: MesosCredentials;
  /** Peloton's basic auth (`--auth-config`): users, roles and the procedures they may call. */
  auth?: BasicAuth;
  /** Job archiver settings over the defaults (`--archive-after`, `--archive-every`, `--archive-max-jobs`). */
  archiver?: Partial<ArchiverConfig>;
  /** Where archived jobs are exported (default `<dataDir>/archive`). */
  archiveDir?: string;
}

export interface PelotonServer {
  url: string;
  port: number;
  store: Store;
  /** The built-in minicluster, when that is the backend. */
  minicluster?: Minicluster;
  backend: SandboxBackend;
  jobmgr: JobManager;
  resmgr: ResourceManager;
  hostmgr: HostManager;
  metrics: PromMetrics;
  /**
   * Resolves, with why, when the process must end at once (exit 1, for a supervisor to restart it and
   * recovery to reload the store): its claim on the store is gone for good, or a store write it cannot
   * take back failed (its memory is then ahead of the store).
   */
  lost: Promise<string>;
  /** Stops gracefully; `say` gets a line when a step waits long (the tasks' kill grace periods). */
  stop(say?: (line: string) => void): Promise<void>;
  /** What a stop under way is doing (waiting for), or undefined. */
  stopStep(): string | undefined;
}

/**
 * Takes the data dir (`DataDirInUseError` while another live process holds it), binds the port (`ListenError`),
 * claims the store (`StoreInUseError` while another `peloton up` or separately started daemons hold it),
 * then starts the store, the cluster and the daemons. A start that fails gives back all it took.
 */
export async function startPeloton(opts: PelotonOptions): Promise<PelotonServer> {
  // Before anything reads or writes the dir: a second server on it would end the first one's tasks (the
  // minicluster's cleanup after a crash) and fight it over the store.
  const owner = ownDataDir(opts.dataDir, "peloton up");
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ?? jsonLogger({ daemon: "all" }, undefined, "warn");
  let serve = (_req: Request) => Promise.resolve(new Response("starting\n", { status: 503 }));
  let httpServer: HttpListener;
  try {
    // Bound before the store and the cluster start, so that a taken port has started nothing.
    httpServer = listen(host, opts.port ?? DEFAULT_PORT, (req) => serve(req), log.with({ daemon: "api" }));
  } catch (e) {
    owner.release();
    throw e;
  }
  const taken: (() => unknown)[] = [() => owner.release(), () => httpServer.shutdown()];
  let started: Started;
  try {
    started = await startDaemons(
      { ...opts, log },
      `peloton up at http://${host}:${httpServer.addr.port}`,
      taken,
    );
  } catch (e) {
    for (const giveBack of taken.reverse()) {
      try {
        await giveBack();
      } catch { /* the start's own error says more */ }
    }
    throw e;
  }
  serve = started.handler;
  const port = httpServer.addr.port;
  let stopping: Promise<void> | undefined;
  let step: string | undefined;
  return {
    ...started.server,
    url: `http://${host}:${port}`,
    port,
    stop(say = () => {}) {
      // Graceful: requests in flight get their answers and every write they made is stored.
      stopping ??= (async () => {
        // First of all, before any step that waits: what is not running yet stays for the next start.
        started.stopLaunching();
        const shutdown = httpServer.shutdown();
        step = "waiting for the calls in flight";
        const deadline = performance.now() + 10_000;
        while (started.inflight() > 0 && performance.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        // Open watch streams would hold the server's shutdown forever; a client that stopped reading holds
        // it until it is left behind.
        started.endStreams();
        step = "shutting the HTTP server down";
        await settlesWithin(shutdown, SHUTDOWN_GRACE_MS);
        try {
          await started.stop(say, (now) => (step = now));
        } finally {
          owner.release();
          step = undefined;
        }
      })();
      return stopping;
    },
    stopStep: () => step,
  };
}

/** What `startDaemons` hands back: the running parts, the HTTP handler and how to stop them. */
interface Started {
  server: Omit<PelotonServer, "url" | "port" | "stop" | "stopStep">;
  handler: (req: Request) => Promise<Response>;
  inflight: () => number;
  /** Ends the open watch streams (their clients are told to watch again). */
  endStreams(): void;
  /** Places, leases and launches nothing more (a stop began); statuses are still taken and stored. */
  stopLaunching(): void;
  /** Stops the daemons, the backend and the store; `step` is told each step, `say` what a long one waits for. */
  stop(say: (line: string) => void, step: (now: string) => void): Promise<void>;
}

/**
 * The store, the backend and the four daemons; pushes onto `taken` how to give back what it started. `by`
 * names this process in the claim on the store.
 */
async function startDaemons(
  opts: PelotonOptions & { log: Logger },
  by: string,
  taken: (() => unknown)[],
): Promise<Started> {
  const storeUrl = opts.store ?? `sqlite:${opts.dataDir}/peloton.sqlite`;
  // Before the store is migrated or read: the daemons here write without leases, so they must be its only
  // writers (a second `up` on it would reconcile, write newer versions and make this one's writes fail).
  const claim = await claimStore(storeUrl, "exclusive", by);
  taken.push(() => claim.release());
  const writeLost = Promise.withResolvers<string>();
  const onLostWrite = (err: Error) => writeLost.resolve(`a store write failed: ${err.name}: ${err.message}`);
  const store = await openStore(storeUrl, { claim, onLostWrite });
  taken.push(() => store.close());
  const cluster = await ClusterStore.open(storeUrl);
  taken.push(() => cluster.close());
  const recovered = await loadRecovery(store);

  const clock = new SystemClock();
  taken.push(() => clock.cancelAll());
  const seed = crypto.getRandomValues(new Uint32Array(1))[0];
  const prng = seededPrng(seed);
  const transport = new LocalTransport();
  taken.push(() => transport.close());
  const metrics = new PromMetrics({ daemon: "all" });
  const hostmgrLog = opts.log.with({ daemon: "hostmgr" });
  const { backend, minicluster, mesos } = createBackend(
    { ...opts, log: lineLogger(hostmgrLog) },
    new StoreFrameworkIdStore(cluster),
  );
  taken.push(() => backend.stop());
  // As a new host manager leader's: host requests and the host API wait for the backend's hosts (the
  // minicluster's agents at once, Mesos's first offers once subscribed; connected without a host for a while,
  // it has none), so a master out of reach is not taken for a cluster without hosts.
  const registration = new HostsRegistration(backend, {
    clock,
    connected: mesos ? () => mesos.client.subscribed : () => true,
    log: hostmgrLog,
  });
  const a = {
    jobmgr: "jobmgr",
    resmgr: "resmgr",
    placement: "placement",
    hostmgr: "hostmgr",
    api: "api/http",
  };
  const hostmgr = new HostManager({
    clock,
    transport,
    backend: registration.backend,
    metrics,
    store,
    self: a.hostmgr,
    jobmgr: a.jobmgr,
    resmgr: a.resmgr,
  }, { ...DEFAULT_HOSTMGR_CONFIG, holdInventory: true, clusterMaintenance: mesos !== undefined });
  const resmgr = new ResourceManager({
    clock,
    transport,
    store,
    prng,
    metrics,
    self: a.resmgr,
    hostmgr: a.hostmgr,
  });
  const workers = opts.placementWorkers
    ? new WorkerExecutor(opts.placementWorkers, { roundTimeoutMs: PRODUCTION_ROUND_TIMEOUT_MS })
    : undefined;
  taken.push(() => workers?.close());
  const placement = new PlacementEngine({
    executor: workers ?? new InProcessExecutor(),
    clock,
    transport,
    metrics,
    self: a.placement,
    resmgr: a.resmgr,
    hostmgr: a.hostmgr,
  }, { ...DEFAULT_PLACEMENT_CONFIG, ...opts.placement });
  const jobmgr = new JobManager({
    clock,
    transport,
    store,
    prng,
    metrics,
    self: a.jobmgr,
    resmgr: a.resmgr,
    hostmgr: a.hostmgr,
    onLostWrite,
  }, { ...DEFAULT_JOBMGR_CONFIG, ...opts.jobmgr });
  // Set when a stop begins: a placement round or a launch still under way gets no host from then on.
  let launching = true;
  transport.register(
    a.hostmgr,
    registration.hold(hostmgr, {
      receive(m: Message) {
        if (!launching && (m.kind === "acquire-hosts" || m.kind === "launch-tasks")) return;
        hostmgr.receive(m);
      },
    }),
  );
  transport.register(a.resmgr, resmgr);
  transport.register(a.placement, placement);
  // Set while the stop ends the minicluster's tasks: the job manager records what they do by themselves.
  let endingTasks = false;
  transport.register(a.jobmgr, {
    receive: (m: Message) => jobmgr.receive(endingTasks && m.kind === "task-statuses" ? asStopped(m) : m),
  });
  const calls = new PendingCalls<ApiReply>();
  transport.register(a.api, { receive: (m: Message) => m.kind === "api-reply" && calls.resolve(m) });
  const watches = new WatchStreams({ transport, base: a.api });
  daemonGauges(metrics, { jobmgr, resmgr, hostmgr, placement });

  resmgr.recover(recovered.pools);
  jobmgr.recover(recovered.jobs, recovered.updates);
  jobmgr.applyLocks(storedLocks(recovered.adminLocks));
  hostmgr.recover(recovered.maintenance);
  hostmgr.recoverHostPools(recovered.hostPools);
  hostmgr.start();
  registration.watch();
  resmgr.start();
  placement.start();
  jobmgr.start();
  const maintenance = mesos && new MesosMaintenance(mesos, hostmgr, (msg, f) => hostmgrLog(msg, f));
  maintenance?.start();
  const archiver = new JobArchiver(jobmgr, { ...DEFAULT_ARCHIVER_CONFIG, ...opts.archiver }, {
    sink: new NdjsonArchive(opts.archiveDir ?? `${opts.dataDir}/archive`),
    log: opts.log.with({ daemon: "jobmgr" }),
  });
  archiver.start();

  const call = (daemon: string, procedure: string, body: unknown, ttlMs: number) =>
    new Promise<ApiReply>((resolve) => {
      const timer = setTimeout(() => {
        // yarpc's answer to a call past its deadline; not `unavailable`, which clients retry.
        resolve({
          kind: "api-reply",
          reqId: 0,
          error: { code: "deadline-exceeded", message: `${procedure} timed out after ${ttlMs} ms` },
        });
      }, ttlMs);
      const reqId = calls.register((r) => {
        clearTimeout(timer);
        resolve(r);
      });
      transport.send(daemon, { kind: "api", reqId, replyTo: a.api, procedure, body });
    });

  const apiLog = opts.log.with({ daemon: "api" });
  let inflight = 0;
  const handler = async (req: Request): Promise<Response> => {
    inflight++;
    try {
      return await handle(req);
    } finally {
      inflight--;
    }
  };
  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (req.method === "GET" && url.pathname === "/health") {
      // The Mesos master stopped the scheduler for good: no host until a restart, which a supervisor does.
      // The store out of reach: writes wait for it, calls answer unavailable meanwhile.
      const problem = mesos?.fatalError() ?? store.unreachable();
      const registering = registration.open ? {} : { hostsRegistering: true };
      if (problem) {
        return Response.json({ status: "unhealthy", role: "all", ...registering, problem }, { status: 503 });
      }
      return Response.json({ status: "ok", role: "all", ...registering });
    }
    if (req.method === "GET" && url.pathname === "/metrics") {
      return new Response(metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4" } });
    }
    const endpoint = endpointProcedure(url.pathname);
    const refused = endpoint && authorizeCall(opts.auth, req.headers, endpoint, endpoint);
    if (refused) return refused;
    if (req.method === "GET" && url.pathname.startsWith("/sandbox/")) {
      // The minicluster's files are streamed as they are on disk (as the host manager daemon serves them).
      return minicluster ? await serveSandboxFile(minicluster, url) : await sandboxFile(backend, url);
    }
    if (req.method === "POST" && url.pathname === "/admin/agents") return await addAgent(minicluster, req);
    const ui = serveUi(req, url);
    if (ui) return ui;
    if (url.pathname !== "/api/v1") return new Response("not found\n", { status: 404 });
    if (req.method !== "POST") return new Response("POST only\n", { status: 405 });
    const procedure = req.headers.get("rpc-procedure") ?? "";
    const route = procedure ? routeProcedure(procedure) : undefined;
    // Authentication first, whatever the call: a caller without credentials learns nothing of what is served.
    const denied = authorizeCall(opts.auth, req.headers, procedure, route?.procedure);
    if (denied) return denied;
    if (!procedure) {
      return rpcError("invalid-argument", "missing Rpc-Procedure header", { req, beforeHandler: true });
    }
    if (!route) {
      return rpcError("unimplemented", `unknown procedure ${procedure}`, { req, beforeHandler: true });
    }
    const read = await readApiCall(req);
    if (read instanceof Response) return read;
    const { body, ttlMs: ttl } = read;
    const started = performance.now();
    const observe = (code: string) => {
      const seconds = (performance.now() - started) / 1000;
      metrics.histogram("peloton_api_request_seconds", { procedure: route.procedure, code }).observe(seconds);
      apiLog("api call", { procedure: route.procedure, code, ms: Number((seconds * 1000).toFixed(1)) });
    };
    if (route.daemon === a.hostmgr && !registration.open) {
      observe("unavailable");
      return rpcError("unavailable", HOSTS_REGISTERING, { req, notHandled: true });
    }
    if (route.procedure === WATCH_PROCEDURE) {
      // Timed to the first response; the stream runs on after, to the caller's deadline if it gave one.
      const shape = replyShaper(route, req.headers);
      const opened = await watches.open(route.daemon, body, ttl, givesDeadline(req), shape);
      observe(opened.code);
      return opened.response;
    }
    const reply = await call(route.daemon, route.procedure, body, ttl);
    observe(reply.error?.code ?? "ok");
    if (reply.error) return rpcError(reply.error.code, reply.error.message, { req });
    return apiReply(route, req, reply.body);
  };

  return {
    server: {
      store,
      minicluster,
      backend,
      jobmgr,
      resmgr,
      hostmgr,
      metrics,
      lost: Promise.race([claim.lost, writeLost.promise]),
    },
    handler,
    inflight: () => inflight,
    endStreams: () => watches.endAll("unavailable", "the server is stopping; watch again"),
    stopLaunching() {
      launching = false;
      placement.stop();
      jobmgr.stopLaunching();
    },
    async stop(say, step) {
      store.stopping();
      watches.endAll("unavailable", "the server is stopping; watch again");
      step("stopping the daemons");
      await maintenance?.stop();
      await archiver.stop();
      // The job manager acts no more, but takes statuses until the backend stopped: tasks that end by
      // themselves meanwhile (the stop's earlier steps take time, its kill a grace period) are recorded.
      jobmgr.stop();
      placement.stop();
      await workers?.close();
      resmgr.stop();
      clock.cancelAll();
      // The tasks the minicluster's agents will end: the job manager's word for them, read as the kill starts.
      const live = minicluster && liveTasks(jobmgr);
      if (live?.count) {
        const tasks = `${live.count} task${live.count === 1 ? "" : "s"}`;
        const [longest, most] = [live.longestGraceMs / 1000, MAX_STOP_GRACE_MS / 1000];
        const waiting = `ending ${tasks}: SIGTERM now, SIGKILL to any still running after its kill grace ` +
          `period (the longest ${longest} s, bounded by ${most} s), so for up to ${
            Math.min(longest, most)
          } s`;
        say(waiting);
        step(waiting);
      } else {
        step("stopping the cluster backend");
      }
      endingTasks = minicluster !== undefined;
      await backend.stop();
      // Its last statuses reach the job manager, which issues their writes, before the store is flushed.
      await delivered(transport);
      clock.cancelAll();
      step("flushing the store");
      await store.flush();
      // Replies that waited for those writes go out on the next turn; the rest will never come.
      await new Promise((r) => setTimeout(r, 0));
      calls.failAll((reqId) => ({
        kind: "api-reply",
        reqId,
        error: { code: "unavailable", message: "the server stopped before it answered" },
      }));
      transport.close();
      step("closing the store");
      await store.close();
      await cluster.close();
      await claim.release();
    },
  };
}

/** Why the minicluster's stop ended a task (`Minicluster.stop`): TASK_LOST with this reason. */
const STOP_ENDING_REASON = "REASON_EXECUTOR_TERMINATED";

/**
 * The statuses of the minicluster's tasks as its stop ends them, as the job manager is to record them. The
 * stop's own ending of a task is left out: the next start finds the task lost and runs it again (README:
 * **Stopping `peloton up`**). But a task whose process exited 0 did its work, whether it ended just before
 * the stop's SIGTERM reached it or went on through it: its success is recorded, not run again.
 */
function asStopped(
  m: Extract<Message, { kind: "task-statuses" }>,
): Extract<Message, { kind: "task-statuses" }> {
  const statuses: MappedTaskStatus[] = [];
  for (const s of m.statuses) {
    if (s.state !== "TASK_LOST" || s.reason !== STOP_ENDING_REASON) statuses.push(s);
    else if (s.exitCode === 0) {
      const { reason: _, ...rest } = s;
      statuses.push({ ...rest, state: "TASK_FINISHED", pelotonState: "SUCCEEDED" });
    }
  }
  return { ...m, statuses };
}

/**
 * Resolves once every message sent on `transport` before the call was delivered: a LocalTransport delivers
 * all its messages in the order they were sent, so a last one of its own comes after them.
 */
function delivered(transport: LocalTransport): Promise<void> {
  const address = "server/delivered";
  const { promise, resolve } = Promise.withResolvers<void>();
  transport.register(address, {
    receive() {
      transport.unregister(address);
      resolve();
    },
  });
  transport.send(address, { kind: "api-reply", reqId: 0 });
  return promise;
}

/** Task states in which a task's process may be running on an agent. */
const ON_AGENT: ReadonlySet<TaskState> = new Set<TaskState>([
  "LAUNCHING",
  "LAUNCHED",
  "STARTING",
  "RUNNING",
  "PREEMPTING",
  "KILLING",
]);

/** How many tasks the job manager knows to be on an agent, and the longest kill grace period among them. */
function liveTasks(jobmgr: JobManager): { count: number; longestGraceMs: number } {
  let count = 0, longestGraceMs = 0;
  for (const entry of jobmgr.jobs.values()) {
    for (const task of entry.tasks.values()) {
      if (!ON_AGENT.has(task.state)) continue;
      count++;
      const tc = entry.versions.get(task.configVersion)?.tasks.get(task.instanceId) ??
        mergeTaskConfig(entry.config, task.instanceId);
      longestGraceMs = Math.max(longestGraceMs, killGraceMs(tc));
    }
  }
  return { count, longestGraceMs };
}
