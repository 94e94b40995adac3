/** What every daemon process shares: store, leases, registry, HTTP transport, API front, health and metrics. */
import { passOn } from "./pass_on.ts";
import { settlesWithin } from "../settle.ts";
import { DEFAULT_TTL_MS, givesDeadline, readApiCall } from "./api_request.ts";
import type { ApiErrorCode, ApiReply, Message } from "../../core/messages.ts";
import { type Route, routeProcedure } from "../../core/api/procedures.ts";
import type { Address } from "../../core/ports/transport.ts";
import { PendingCalls } from "../../core/rpc.ts";
import {
  authorizeCall,
  type BasicAuth,
  basicHeader,
  credentialsOf,
  endpointProcedure,
} from "../auth/basic_auth.ts";
import { ClusterStore } from "../cluster/cluster_store.ts";
import { Registry } from "../cluster/registry.ts";
import type { Fence } from "../store/fence.ts";
import { SystemClock } from "../clock.ts";
import { HttpTransport, MESSAGES_PATH, parseEnvelope, type Router } from "../http_transport.ts";
import type { Logger } from "../log.ts";
import { PromMetrics } from "../metrics.ts";
import { type KyselyStore, openStore } from "../store/kysely_store.ts";
import { claimStore, type StoreClaim } from "../store/store_claim.ts";
import { redact } from "../store/mysql_dialect.ts";
import { isTransient } from "../store/transient.ts";
import { API_STATUS, rpcError } from "./http_errors.ts";
import { type HttpListener, listen } from "./listen.ts";
import { serveUi } from "../ui/page.ts";
import { type DataDirOwnership, shareDataDir } from "../minicluster/data_dir_owner.ts";
import { CANCEL_PROCEDURE, NDJSON, WATCH_PROCEDURE, WatchStreams } from "../watch_stream.ts";
import { apiReply, replyShaper } from "../proto_extensions.ts";
import { watchHolder } from "./api_jobs.ts";

export type DaemonRole = "jobmgr" | "resmgr" | "hostmgr" | "placement";

export interface DaemonOptions {
  role: DaemonRole;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Store URL (`sqlite:PATH` or `mysql://...`), shared by every daemon of the cluster. */
  store: string;
  dataDir: string;
  /** Leader, shard and membership leases live this long without renewal. */
  leaseTtlMs: number;
  auth?: BasicAuth;
  log: Logger;
}

/**
 * Where an API call goes: handled here (`stale`: answered from what the store holds rather than by the
 * job's owner, which the reply's `Peloton-Stale-Read` header says), sent on to another process, or refused.
 * A call sent on to a process that cannot be reached is answered `unavailable` with `unreachable` (what that
 * process is and that it does not answer), or goes to `fallback` instead (a read the store can answer).
 */
export type ApiTarget =
  | LocalTarget
  | ForwardTarget
  | RefusedTarget;

/**
 * A call sent on to the process at `forward`. `relay`: that process may send it on once more (any job
 * manager, which passes a call to its job's owner), so it is waited for through two hops.
 */
type ForwardTarget = {
  forward: string;
  unreachable?: string;
  fallback?: LocalTarget | RefusedTarget;
  relay?: boolean;
};

type LocalTarget = { local: Address; body?: unknown; stale?: string };
type RefusedTarget = { error: ApiErrorCode; message: string };

export interface DaemonHooks {
  health(): Record<string, unknown>;
  /**
   * Why this process cannot do its work until it is restarted (the Mesos master stopped its scheduler for
   * good), or undefined: /health then answers 503 "unhealthy" with the reason, so a supervisor restarts it.
   */
  unhealthy?(): string | undefined;
  /** Job manager calls, in a job manager process; elsewhere they go to a job manager. */
  jobmgrTarget?(route: Route, body: Record<string, unknown>): Promise<ApiTarget>;
  /**
   * Why the role this process serves cannot answer API calls yet (a host manager whose hosts are still
   * registering), or undefined once it can.
   */
  unready?(role: string): string | undefined;
  /**
   * Why this process holds the role's lease but does not serve it (taking the lead up, or stepped down and
   * not yet out of the registry's view), for the answer to a call that finds it so.
   */
  notServing?(role: string): string | undefined;
  /** Extra HTTP routes (the host manager's sandbox files). */
  routes?(req: Request, url: URL): Promise<Response | undefined>;
}

const HOP_HEADER = "x-peloton-hop";
/**
 * The call's deadline as the wall-clock time (ms since the epoch) of the process that sent it on: a process
 * that was frozen with the request queued sees on resuming that it expired, which `Context-TTL-Ms`, measured
 * from when the request is read, cannot tell. It assumes the processes' clocks agree (one machine, or NTP).
 */
const DEADLINE_HEADER = "x-peloton-deadline-ms";
/** Set on a reply answered from the store rather than by the job's owner, saying why. */
export const STALE_READ_HEADER = "peloton-stale-read";
/** A daemon waiting for its store at start tries again after this long at first, doubling up to the cap. */
const STORE_RETRY_FIRST_MS = 200;
const STORE_RETRY_MAX_MS = 5_000;

export class DaemonProcess {
  readonly instance = crypto.randomUUID().slice(0, 8);
  readonly clock = new SystemClock();
  readonly metrics: PromMetrics;
  readonly startedMs = Date.now();
  store!: KyselyStore;
  /** This process's share of the store: daemons started on their own share it, never with a `peloton up`. */
  claim?: StoreClaim;
  cluster!: ClusterStore;
  registry!: Registry;
  transport!: HttpTransport;
  url = "";
  /** Leases this process's writes depend on (set by the daemon once it holds them). */
  fences: () => Fence[] = () => [];
  hooks: DaemonHooks = { health: () => ({}) };
  readonly #calls = new PendingCalls<ApiReply>();
  #watches?: WatchStreams;
  /** Answers forwarded from other processes still being passed on (a watch stream lasts): each one's cut. */
  readonly #forwarded = new Set<() => void>();
  #server?: HttpListener;
  #dataDir?: DataDirOwnership;
  #heartbeat?: ReturnType<typeof setInterval>;
  /**
   * The heartbeat has failed since `sinceMs` (a `performance.now()` time), its last error `error`: the
   * store fails this process's own writes, which its leases need too, so /health says it is unhealthy.
   */
  #beatFailing?: { sinceMs: number; error: string };
  /** A graceful stop has begun: API calls are refused, so that clients go to another process. */
  #stopping = false;
  /** The stop has cut the streams passed on: one answered later would not be cut. */
  #streamsCut = false;
  /** What a stop under way is doing (waiting for), for a stop that takes too long to say where it is. */
  stopStep: string | undefined;
  #closing?: Promise<void>;
  #inflight = 0;
  #ready = false;
  /** Why the daemon has not started yet (its store cannot be reached), for /health and API calls meanwhile. */
  #waitingFor = "starting";
  /** The address each API call in `#calls` went to, so calls a daemon that stepped down will not answer fail. */
  readonly #callTargets = new Map<number, Address>();
  readonly #apiSeconds;
  readonly #writeLost = Promise.withResolvers<string>();

  constructor(readonly o: DaemonOptions) {
    this.metrics = new PromMetrics({ daemon: o.role, instance: this.instance });
    this.#apiSeconds = (procedure: string, code: string) =>
      this.metrics.histogram("peloton_api_request_seconds", { procedure, code });
  }

  get log(): Logger {
    return this.o.log;
  }

  /** This process's own address for API replies. */
  get apiAddress(): Address {
    return `api@${this.instance}`;
  }

  /**
   * Joins the daemons sharing the data dir, binds the port, opens the store and the cluster tables, serves
   * HTTP, and joins the cluster.
   */
  async open(router?: Router): Promise<void> {
    // First (`DataDirInUseError` while `peloton up` holds the dir): its store is not one a cluster of
    // daemons may share, as nothing there leases or fences its writes.
    const dataDir = shareDataDir(this.o.dataDir, `${this.o.role}.${this.instance}`, `peloton ${this.o.role}`);
    let server: HttpListener;
    try {
      // Bound next (`ListenError` when it cannot be), so that a taken port has opened nothing.
      server = listen(
        this.o.host,
        this.o.port,
        (req) => this.#ready ? this.#handle(req) : Promise.resolve(this.#starting(req)),
        this.log,
      );
    } catch (e) {
      dataDir.release();
      throw e;
    }
    this.#dataDir = dataDir;
    this.#server = server;
    try {
      await this.#open(server.addr.port, router);
    } catch (e) {
      await this.claim?.release();
      await server.shutdown();
      dataDir.release();
      throw e;
    }
  }

  /**
   * Resolves, with why, when the process must exit at once (exit 1, a supervisor restarts it): its claim on
   * the store is gone for good, or a write it cannot take back failed (`lostWrite`).
   */
  get lost(): Promise<string> {
    return Promise.race([this.claim?.lost ?? new Promise<string>(() => {}), this.#writeLost.promise]);
  }

  /** A store write failed that this process cannot take back: its memory is ahead of the store. */
  lostWrite(err: Error): void {
    this.log.error("store write failed; exiting", { error: `${err.name}: ${err.message}` });
    this.#writeLost.resolve(`a store write failed: ${err.name}: ${err.message}`);
  }

  /** What a daemon still starting answers: /health says why (503), an API call is unavailable. */
  #starting(req: Request): Response {
    const url = new URL(req.url);
    if (url.pathname === "/health") {
      return Response.json({
        status: "starting",
        role: this.o.role,
        instance: this.instance,
        reason: this.#waitingFor,
      }, { status: 503 });
    }
    if (url.pathname === "/api/v1") {
      return rpcError(
        "unavailable",
        `the ${this.o.role} daemon is starting (${this.#waitingFor}); try again`,
        { req, notHandled: true },
      );
    }
    return new Response(`starting: ${this.#waitingFor}\n`, { status: 503 });
  }

  async #open(port: number, router?: Router): Promise<void> {
    const host = this.o.host === "0.0.0.0" ? "127.0.0.1" : this.o.host;
    this.url = `http://${host}:${port}`;
    await this.#openStore();
    this.registry = new Registry(this.cluster, Math.min(500, this.o.leaseTtlMs / 4));
    const internal = this.o.auth?.internal;
    const posts = this.metrics;
    this.transport = new HttpTransport({
      instance: this.instance,
      url: this.url,
      resolver: this.registry,
      router,
      headers: internal ? { authorization: basicHeader(internal) } : {},
      onPost: (to, seconds, ok) =>
        posts.histogram("peloton_internal_post_seconds", {
          to: to.split("/")[0].split("@")[0],
          ok: String(ok),
        })
          .observe(seconds),
      log: (line, fields) => this.log.warn(line, fields),
    });
    this.transport.register(this.apiAddress, {
      receive: (m: Message) => void (m.kind === "api-reply" && this.#calls.resolve(m)),
    });
    this.#watches = new WatchStreams({ transport: this.transport, base: this.apiAddress });
    this.#ready = true;
    await this.#beat();
    await this.registry.start();
    this.#heartbeat = setInterval(() => void this.#beat(), Math.max(100, this.o.leaseTtlMs / 3));
    this.metrics.collect(() => {
      let queued = 0;
      for (const n of this.transport.queued().values()) queued += n;
      this.metrics.gauge("peloton_transport_queued_messages").set(queued);
      this.metrics.gauge("peloton_transport_dropped_messages").set(this.transport.dropped);
      this.metrics.gauge("peloton_http_inflight_requests").set(this.#inflight);
    });
    this.log("daemon started", { url: this.url, store: redact(this.o.store) });
  }

  /**
   * Claims the store (`StoreInUseError` while a `peloton up` holds it) before anything reads or writes it,
   * then opens it and the cluster tables. A store that cannot be reached is waited for, each attempt logged,
   * with a backoff growing to `STORE_RETRY_MAX_MS`: a daemon started during a database outage (or by a
   * supervisor restarting it through one) comes up when the database does. Any other error ends the start.
   */
  async #openStore(): Promise<void> {
    const store = redact(this.o.store);
    for (let attempt = 1, delayMs = STORE_RETRY_FIRST_MS;; attempt++) {
      try {
        this.claim ??= await claimStore(this.o.store, "shared", `peloton ${this.o.role} at ${this.url}`);
        this.store ??= await openStore(this.o.store, {
          fences: () => this.fences(),
          claim: this.claim,
          onLostWrite: (err) => this.lostWrite(err),
        });
        this.cluster ??= await ClusterStore.open(this.o.store);
        if (attempt > 1) this.log("store reached", { store, attempts: attempt });
        this.#waitingFor = "starting";
        return;
      } catch (e) {
        if (!unreachable(e)) throw e;
        const error = describeError(e);
        this.#waitingFor = `waiting for its store ${store}, which cannot be reached: ${error}`;
        this.log.warn("waiting for the store", { store, attempt, error, retryInMs: delayMs });
        await new Promise((r) => setTimeout(r, delayMs));
        delayMs = Math.min(STORE_RETRY_MAX_MS, delayMs * 2);
      }
    }
  }

  /**
   * Graceful stop: new API calls are refused (unavailable), while messages from other daemons still come
   * in; requests in flight finish (10 s at most); the daemon's `stop` runs; queued writes and messages go
   * out (from here a database out of reach is waited for 10 s, a statement under way for its timeout; a write
   * lost then makes `lost` resolve); calls its daemon will no longer answer are answered unavailable; leases
   * and membership are given up so that others take over at once. Connections still open 5 s into the HTTP server's shutdown
   * (a client that stopped reading) are left behind.
   */
  close(stopDaemon: () => Promise<void>): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopping = true;
      clearInterval(this.#heartbeat);
      this.stopStep = "waiting for the calls in flight";
      const deadline = performance.now() + 10_000;
      while (this.#inflight > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      // The calls in flight have had their time; what the stop itself writes gets the store's grace.
      this.store.stopping();
      this.stopStep = `stopping the ${this.o.role}`;
      await stopDaemon();
      this.stopStep = "flushing the store";
      await this.store.flush();
      // Replies that waited for those writes go out on the next turn; calls still waiting after that will
      // not be answered by the daemon just stopped, and their callers learn so now.
      await new Promise((r) => setTimeout(r, 0));
      this.#calls.failAll((reqId) => ({
        kind: "api-reply",
        reqId,
        error: { code: "unavailable", message: "the daemon stopped before it answered" },
      }));
      this.stopStep = "sending the messages queued";
      await this.transport.drain(2_000);
      this.registry.stop();
      this.stopStep = "leaving the cluster";
      await this.cluster.leave(this.instance).catch(() => {});
      // Streams still open would hold the shutdown: a job manager ended its own watches as it stopped, and
      // streams passed on from another process are cut (their client sees the stream end without a last line).
      this.#watches?.endAll("unavailable", "the daemon is stopping; watch again");
      this.#streamsCut = true;
      for (const cut of this.#forwarded) cut();
      this.stopStep = "shutting the HTTP server down";
      if (this.#server && !(await settlesWithin(this.#server.shutdown(), SHUTDOWN_GRACE_MS))) {
        this.log.warn("HTTP connections still open; stopping without them", { afterMs: SHUTDOWN_GRACE_MS });
      }
      this.transport.close();
      this.clock.cancelAll();
      this.stopStep = "closing the store";
      await this.store.close();
      await this.cluster.close();
      this.#dataDir?.release();
      this.stopStep = "releasing the claim on the store";
      await this.claim?.release();
      this.stopStep = undefined;
      this.log("daemon stopped");
    })();
    return this.#closing;
  }

  /** Sends an API request to a daemon in this process and waits for its reply. */
  call(to: Address, procedure: string, body: unknown, ttlMs: number): Promise<ApiReply> {
    return new Promise<ApiReply>((resolve) => {
      let reqId = 0;
      const timer = setTimeout(() => {
        this.#calls.cancel(reqId);
        this.#callTargets.delete(reqId);
        resolve({
          kind: "api-reply",
          reqId: 0,
          // yarpc's answer to a call past its deadline; not `unavailable`, which clients retry.
          error: { code: "deadline-exceeded", message: `${procedure} timed out after ${ttlMs} ms` },
        });
      }, ttlMs);
      reqId = this.#calls.register((r) => {
        clearTimeout(timer);
        this.#callTargets.delete(reqId);
        resolve(r);
      });
      this.#callTargets.set(reqId, to);
      this.transport.send(to, { kind: "api", reqId, replyTo: this.apiAddress, procedure, body });
    });
  }

  /**
   * Answers `unavailable` every API call still waiting on the daemon at `to`: it stepped down, and its
   * writes are all stored or refused by now, so no answer will come from it.
   */
  failCalls(to: Address, message: string): void {
    for (const [reqId, target] of [...this.#callTargets]) {
      if (target !== to) continue;
      this.#calls.resolve({ kind: "api-reply", reqId, error: { code: "unavailable", message } });
    }
  }

  /** The URL of a live process of `role` (the leader for elected roles). */
  urlOf(role: DaemonRole): string | undefined {
    if (role === "resmgr" || role === "hostmgr") return this.registry.holder(role)?.url;
    const members = this.registry.membersOf(role);
    return members.length ? members[Math.floor(Math.random() * members.length)].url : undefined;
  }

  /**
   * Sends an HTTP request on to another process unchanged (one hop at most). A process that cannot be
   * reached is answered `unavailable`, with `unreachable` as the message if given.
   */
  async forward(req: Request, url: string, body?: string, unreachable?: string): Promise<Response> {
    const sent = await this.#forwardOnce(req, { forward: url }, body, {
      deadlineMs: performance.now() + DEFAULT_TTL_MS,
      stream: true,
    });
    if (sent instanceof Response) return sent;
    return rpcError("unavailable", unreachable ?? `cannot reach ${url}: ${sent.message}`, { req });
  }

  /**
   * How long a forwarded call is waited for at most, whatever its deadline: a little over a lease's TTL, by
   * when a process that froze with it (SIGSTOP, a stalled VM) has lost its leases to another.
   */
  get forwardBoundMs(): number {
    return Math.max(1_000, this.o.leaseTtlMs * 1.5);
  }

  /**
   * The forwarded call's answer, or the error that kept it from reaching `to` or from being answered in time.
   * It is waited for until `deadlineMs` (a `performance.now()` time) less a margin to answer the caller with,
   * and no longer than `forwardBoundMs` (twice that for a relay). The receiver is given that time as its
   * deadline (`Context-TTL-Ms` shrunk to it, and `DEADLINE_HEADER`), so a call given up on here is not carried
   * out there later; a stream (`stream`) gets the whole of the caller's deadline, the bound applying to its
   * first response only, and no deadline if the caller gave none.
   */
  async #forwardOnce(
    req: Request,
    to: ForwardTarget,
    body: string | undefined,
    o: { deadlineMs: number; stream?: boolean },
  ): Promise<Response | ForwardFailure> {
    if (Number(req.headers.get(HOP_HEADER) ?? 0) >= 2) {
      return rpcError("unavailable", "the call was forwarded twice without reaching its daemon", {
        req,
        notHandled: true,
      });
    }
    const remainingMs = o.deadlineMs - performance.now();
    const boundMs = Math.floor(
      Math.min(this.forwardBoundMs * (to.relay ? 2 : 1), remainingMs - Math.min(1_000, remainingMs / 4)),
    );
    if (boundMs < 1) {
      return { message: "the call's deadline passed before it could be sent on", unsent: true };
    }
    const target = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.set(HOP_HEADER, String(Number(req.headers.get(HOP_HEADER) ?? 0) + 1));
    headers.delete("host");
    headers.delete("content-length");
    headers.delete(DEADLINE_HEADER);
    if (!o.stream || givesDeadline(req)) {
      const ttlMs = o.stream ? Math.floor(remainingMs) : boundMs;
      headers.set("context-ttl-ms", String(ttlMs));
      headers.set(DEADLINE_HEADER, String(Date.now() + ttlMs));
    }
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, boundMs);
    try {
      const res = await fetch(to.forward + target.pathname + target.search, {
        method: req.method,
        headers,
        body: req.method === "GET" || req.method === "HEAD" ? undefined : body ?? await req.text(),
        signal: abort.signal,
      });
      clearTimeout(timer);
      const streamed = res.body && res.headers.get("content-type") === NDJSON;
      if (streamed && this.#streamsCut) {
        // A stream answered after the stop cut those passed on would not be cut: it is ended here. An
        // answer that is not a stream goes back as it is (the call has been carried out).
        abort.abort();
        await res.body?.cancel().catch(() => {});
        return stoppingError(req);
      }
      return new Response(streamed ? passOn(res.body!, abort, this.#forwarded) : res.body, {
        status: res.status,
        headers: res.headers,
      });
    } catch (e) {
      clearTimeout(timer);
      if (timedOut) return { message: `no answer within ${boundMs} ms`, unsent: false, timedOutMs: boundMs };
      return { message: (e as Error).message, unsent: connectFailed(e) };
    }
  }

  /**
   * Renews this process's membership. A failure is logged, at error level once the heartbeat has failed for
   * longer than a lease (the store fails this process's leases too by then), and makes /health unhealthy
   * until a heartbeat is stored again.
   */
  async #beat(): Promise<void> {
    const startedMs = performance.now();
    try {
      await this.cluster.heartbeat(
        { instanceId: this.instance, role: this.o.role, url: this.url, startedMs: this.startedMs },
        this.o.leaseTtlMs,
      );
      // A beat that began before the failure being told of says nothing of it.
      if (this.#beatFailing && startedMs >= this.#beatFailing.sinceMs) {
        const failedForMs = Math.round(performance.now() - this.#beatFailing.sinceMs);
        this.#beatFailing = undefined;
        this.log("heartbeat stored again", { failedForMs });
      }
    } catch (e) {
      const error = describeError(e);
      const failing = this.#beatFailing ??= { sinceMs: startedMs, error };
      failing.error = error;
      const failingForMs = Math.round(performance.now() - failing.sinceMs);
      const fields = { error, store: redact(this.o.store), failingForMs };
      if (failingForMs > this.o.leaseTtlMs) {
        this.log.error(
          "heartbeat failed for longer than a lease: the store fails this process's writes",
          fields,
        );
      } else {
        this.log.warn("heartbeat failed", fields);
      }
    }
  }

  /** Why /health says the store fails this process, or undefined while its heartbeats are stored. */
  #heartbeatProblem(): string | undefined {
    const failing = this.#beatFailing;
    if (!failing) return undefined;
    const forS = ((performance.now() - failing.sinceMs) / 1000).toFixed(1);
    return `store ${redact(this.o.store)} fails: this process's heartbeat has failed for ${forS} s ` +
      `(its leases cannot be renewed either): ${failing.error}`;
  }

  async #handle(req: Request): Promise<Response> {
    // The call's deadline counts from here, before its body is read or its target looked up.
    const receivedMs = performance.now();
    this.#inflight++;
    try {
      const url = new URL(req.url);
      if (url.pathname === MESSAGES_PATH && req.method === "POST") return await this.#internal(req);
      if (req.method === "GET" && url.pathname === "/health") {
        // A stopping daemon is not ready for calls: a load balancer or probe takes it out at once.
        // The store out of reach: writes wait for it, calls needing it answer unavailable meanwhile.
        // Its own heartbeat failing: the store refuses this process's writes (a dropped table, a full disk).
        const unhealthy = this.hooks.unhealthy?.() ?? this.store?.unreachable() ?? this.#heartbeatProblem();
        return Response.json({
          status: this.#stopping ? "stopping" : unhealthy ? "unhealthy" : "ok",
          role: this.o.role,
          instance: this.instance,
          url: this.url,
          ...this.hooks.health(),
          ...(unhealthy ? { problem: unhealthy } : {}),
        }, { status: this.#stopping || unhealthy ? 503 : 200 });
      }
      if (req.method === "GET" && url.pathname === "/metrics") {
        return new Response(this.metrics.render(), {
          headers: { "content-type": "text/plain; version=0.0.4" },
        });
      }
      if (url.pathname === "/api/v1") return await this.#api(req, receivedMs);
      // Any daemon serves the web UI: its calls go to /api/v1 here, which reaches the right daemon.
      const ui = serveUi(req, url);
      if (ui) return ui;
      // Sandbox files and agents are checked as the procedures they stand for, here and where forwarded.
      const endpoint = endpointProcedure(url.pathname);
      const refused = endpoint && authorizeCall(this.o.auth, req.headers, endpoint, endpoint);
      if (refused) return refused;
      const extra = await this.hooks.routes?.(req, url);
      if (extra) return extra;
      // Sandbox files and agents live with the host manager's backend.
      if (url.pathname.startsWith("/sandbox/") || url.pathname === "/admin/agents") {
        const leader = this.registry.holder("hostmgr");
        if (!leader || leader.url === this.url) {
          return rpcError("unavailable", "no host manager leads now", { req });
        }
        return await this.forward(req, leader.url, undefined, failingOver("hostmgr", leader));
      }
      return new Response("not found\n", { status: 404 });
    } finally {
      this.#inflight--;
    }
  }

  /** Messages from the other daemons: with auth on, only under the internal user's credentials. */
  async #internal(req: Request): Promise<Response> {
    if (this.o.auth && !this.o.auth.isInternal(credentialsOf(req.headers))) {
      return new Response("internal calls need the internal user's credentials\n", { status: 401 });
    }
    let raw: unknown;
    try {
      raw = await req.json();
    } catch (e) {
      return new Response(`body is not JSON: ${(e as Error).message}\n`, { status: 400 });
    }
    const env = parseEnvelope(raw);
    if (typeof env === "string") return new Response(`${env}\n`, { status: 400 });
    const status = this.transport.deliver(env);
    return new Response(null, { status });
  }

  async #api(req: Request, receivedMs: number): Promise<Response> {
    if (req.method !== "POST") return new Response("POST only\n", { status: 405 });
    const sent = req.headers.get("rpc-procedure") ?? "";
    const route = sent ? routeProcedure(sent) : undefined;
    // Authentication first, whatever the call: a caller without credentials learns nothing of what is served.
    const denied = authorizeCall(this.o.auth, req.headers, sent, route?.procedure);
    if (denied) return denied;
    if (!sent) {
      return rpcError("invalid-argument", "missing Rpc-Procedure header", { req, beforeHandler: true });
    }
    if (!route) return rpcError("unimplemented", `unknown procedure ${sent}`, { req, beforeHandler: true });
    if (this.#stopping) return stoppingError(req);
    const read = await readApiCall(req);
    if (read instanceof Response) return read;
    const { text, body } = read;
    const deadlineMs = deadlineOf(req, receivedMs, read.ttlMs);
    const remainingMs = () => deadlineMs - performance.now();
    const expired = (where: string) =>
      rpcError(
        "deadline-exceeded",
        `${route.procedure}: the call's deadline passed ${where}; nothing was done`,
        {
          req,
          notHandled: true,
        },
      );
    if (remainingMs() <= 0) return expired("before it was received");
    const started = performance.now();
    let target = await this.#target(route, body);
    // During a change of leader or shard owner, wait a little for the new one rather than fail at once:
    // while no one serves the call, and while the one the store names does not take the connection (it died
    // or stopped, and its lease has not run out yet), which is safe to try again as nothing was sent.
    let waitUntil = performance.now() + Math.min(5_000, this.o.leaseTtlMs * 2);
    const wait = async () => {
      if (performance.now() >= Math.min(waitUntil, deadlineMs - 100) || this.#stopping) return false;
      await new Promise((r) => setTimeout(r, 100));
      await this.registry.refresh().catch(() => {});
      target = await this.#target(route, body);
      return true;
    };
    const stream = route.procedure === WATCH_PROCEDURE;
    for (;;) {
      if ("error" in target && target.error === "unavailable" && (await wait())) continue;
      if (!("forward" in target)) break;
      const res = await this.#forwardOnce(req, target, text, { deadlineMs, stream });
      if (res instanceof Response) return res;
      if (res.timedOutMs !== undefined) {
        // Taken and not answered: the process froze or is overloaded. Its lease may have gone to another
        // by now, which the store says.
        this.log.warn("a call sent on was not answered in time; looking its target up again", {
          procedure: route.procedure,
          to: target.forward,
          afterMs: res.timedOutMs,
        });
        // The frozen owner does not carry the call out past the bound it was given, so the call may go to
        // whoever holds the lease next: it is waited for (the lease runs out) while the deadline allows.
        let again: ApiTarget = target;
        for (;;) {
          await this.registry.refresh().catch(() => {});
          again = await this.#target(route, body);
          const moved = "local" in again || ("forward" in again && again.forward !== target.forward);
          if (moved || this.#stopping || remainingMs() <= 1_000) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        if ("local" in again || ("forward" in again && again.forward !== target.forward)) {
          target = again;
          waitUntil = performance.now() + Math.min(5_000, this.o.leaseTtlMs * 2);
          continue;
        }
      }
      if (target.fallback) {
        this.log.warn("the owner of a read cannot be reached; answering from the store", {
          procedure: route.procedure,
          owner: target.forward,
          error: res.message,
        });
        target = target.fallback;
        break;
      }
      if (res.unsent && (await wait())) continue;
      if (remainingMs() <= 0) return expired(`while ${target.forward} did not answer`);
      const why = res.timedOutMs !== undefined
        ? `${
          target.unreachable ?? `${target.forward} does not answer`
        } (it took the call and gave no answer ` +
          `within ${res.timedOutMs} ms: it may be frozen or overloaded; it will not carry the call out past ` +
          `that deadline)`
        : target.unreachable ?? `cannot reach ${target.forward}: ${res.message}`;
      // Not sent at all (the connection refused): nothing was done; one taken and not answered is unknown.
      return rpcError("unavailable", why, { req, notHandled: res.unsent });
    }
    // Refused while routed: no handler ran.
    if ("error" in target) return rpcError(target.error, target.message, { req, notHandled: true });
    const stale = target.stale ? { [STALE_READ_HEADER]: target.stale } : undefined;
    // Checked last thing before the handler: a call that waited past its deadline (in a process that was
    // frozen, or for its target) is not carried out, as its caller was told or is about to be told it failed.
    if (remainingMs() <= 0) return expired("before its handler started");
    const ttl = Math.max(1, Math.floor(remainingMs()));
    if (stream && this.#watches) {
      // Timed to the first response; the stream runs on after, to the caller's deadline if it gave one.
      const deadline = givesDeadline(req);
      const shape = replyShaper(route, req.headers);
      const opened = await this.#watches.open(target.local, target.body ?? body, ttl, deadline, shape);
      this.#apiSeconds(route.procedure, opened.code).observe((performance.now() - started) / 1000);
      return opened.response;
    }
    const reply = await this.call(target.local, route.procedure, target.body ?? body, ttl);
    this.#apiSeconds(route.procedure, reply.error?.code ?? "ok").observe(
      (performance.now() - started) / 1000,
    );
    if (reply.error) return rpcError(reply.error.code, reply.error.message, { req, headers: stale });
    return apiReply(route, req, reply.body, stale);
  }

  async #target(route: Route, body: Record<string, unknown>): Promise<ApiTarget> {
    if (route.daemon === "jobmgr") {
      if (this.hooks.jobmgrTarget) return await this.hooks.jobmgrTarget(route, body);
      // Straight to the job manager holding the watch (any other would send it on there).
      const holder = route.procedure === CANCEL_PROCEDURE ? watchHolder(body) : undefined;
      const url = (holder && this.registry.resolve(holder)) || this.urlOf("jobmgr");
      return url
        ? { forward: url, relay: true }
        : { error: "unavailable", message: "no job manager is running" };
    }
    if (this.transport.serves(route.daemon)) {
      const unready = this.hooks.unready?.(route.daemon);
      return unready ? { error: "unavailable", message: unready } : { local: route.daemon };
    }
    const leader = this.registry.holder(route.daemon);
    if (leader && leader.url !== this.url) {
      return { forward: leader.url, unreachable: failingOver(route.daemon, leader) };
    }
    const mine = leader ? this.hooks.notServing?.(route.daemon) : undefined;
    return { error: "unavailable", message: mine ?? `no ${route.daemon} leads now; try again` };
  }
}

/**
 * Why a forwarded call did not reach its process or was not answered; `unsent` when no connection was made
 * (nothing was sent), `timedOutMs` when it was sent and not answered within that long.
 */
interface ForwardFailure {
  message: string;
  unsent: boolean;
  timedOutMs?: number;
}

/**
 * When a call must be answered by, as a `performance.now()` time: its TTL from when this process received it,
 * or the caller's `DEADLINE_HEADER` if that comes first (a request read only after this process resumed from
 * a freeze; the header's clock is assumed to agree with this one).
 */
function deadlineOf(req: Request, receivedMs: number, ttlMs: number): number {
  const byTtl = receivedMs + ttlMs;
  const stamped = Number(req.headers.get(DEADLINE_HEADER) ?? NaN);
  if (!Number.isFinite(stamped)) return byTtl;
  return Math.min(byTtl, performance.now() + (stamped - Date.now()));
}

/** Whether a fetch failed to connect at all (refused, unreachable), so that the request was never sent. */
function connectFailed(e: unknown): boolean {
  for (let err: unknown = e; err; err = (err as { cause?: unknown }).cause) {
    const text = `${(err as Error).message ?? ""} ${(err as { code?: string }).code ?? ""}`;
    if (/\(Connect\)|tcp connect error|Connection refused|ECONNREFUSED|EHOSTUNREACH/i.test(text)) return true;
  }
  return false;
}

/** The answer to a call whose leader does not take it: the lease names a process that died or stopped. */
function failingOver(role: string, lease: { holder: string; url: string }): string {
  return `the ${role} leader is failing over: its lease is held by ${lease.holder} at ${lease.url}, which ` +
    `does not answer (it stopped or died; a new leader takes over once the lease runs out); try again`;
}

/** Whether a start failed because the store (or the network to it) is down, which is worth waiting out. */
function unreachable(e: unknown): boolean {
  for (let err: unknown = e; err; err = (err as { cause?: unknown }).cause) if (isTransient(err)) return true;
  return false;
}

function describeError(e: unknown): string {
  const err = e as { message?: string; code?: string };
  return err?.message || err?.code || String(e);
}

export { API_STATUS };

/** How long a stop waits for the HTTP server's connections to finish. */
const SHUTDOWN_GRACE_MS = 5_000;

function stoppingError(req: Request): Response {
  return rpcError("unavailable", "the daemon is stopping; call another process or again shortly", {
    req,
    notHandled: true,
  });
}
