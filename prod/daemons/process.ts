/** What every daemon process shares: store, leases, registry, HTTP transport, API front, health and metrics. */
import { passOn } from "./pass_on.ts";
import { settlesWithin } from "../settle.ts";
import { readApiCall } from "./api_request.ts";
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
import { type Envelope, HttpTransport, MESSAGES_PATH, type Router } from "../http_transport.ts";
import type { Logger } from "../log.ts";
import { PromMetrics } from "../metrics.ts";
import { type KyselyStore, openStore } from "../store/kysely_store.ts";
import { claimStore, type StoreClaim } from "../store/store_claim.ts";
import { API_STATUS, RPC_STATUS_SUCCESS, rpcError } from "./http_errors.ts";
import { listen } from "./listen.ts";
import { serveUi } from "../ui/page.ts";
import { type DataDirOwnership, shareDataDir } from "../minicluster/data_dir_owner.ts";
import { CANCEL_PROCEDURE, NDJSON, WATCH_PROCEDURE, WatchStreams } from "../watch_stream.ts";
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

/** Where an API call goes: handled here, sent on to another process, or refused. */
export type ApiTarget =
  | { local: Address; body?: unknown }
  | { forward: string }
  | { error: ApiErrorCode; message: string };

export interface DaemonHooks {
  health(): Record<string, unknown>;
  /** Job manager calls, in a job manager process; elsewhere they go to a job manager. */
  jobmgrTarget?(route: Route, body: Record<string, unknown>): Promise<ApiTarget>;
  /** Extra HTTP routes (the host manager's sandbox files). */
  routes?(req: Request, url: URL): Promise<Response | undefined>;
}

const HOP_HEADER = "x-peloton-hop";

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
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #dataDir?: DataDirOwnership;
  #heartbeat?: ReturnType<typeof setInterval>;
  /** A graceful stop has begun: API calls are refused, so that clients go to another process. */
  #stopping = false;
  /** The stop has cut the streams passed on: one answered later would not be cut. */
  #streamsCut = false;
  /** What a stop under way is doing (waiting for), for a stop that takes too long to say where it is. */
  stopStep: string | undefined;
  #closing?: Promise<void>;
  #inflight = 0;
  #ready = false;
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
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      // Bound next (`ListenError` when it cannot be), so that a taken port has opened nothing.
      server = listen(
        this.o.host,
        this.o.port,
        (req) =>
          this.#ready ? this.#handle(req) : Promise.resolve(new Response("starting\n", { status: 503 })),
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

  async #open(port: number, router?: Router): Promise<void> {
    const host = this.o.host === "0.0.0.0" ? "127.0.0.1" : this.o.host;
    this.url = `http://${host}:${port}`;
    await this.#claimStore();
    this.store = await openStore(this.o.store, {
      fences: () => this.fences(),
      claim: this.claim,
      onLostWrite: (err) => this.lostWrite(err),
    });
    this.cluster = await ClusterStore.open(this.o.store);
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
    this.log("daemon started", { url: this.url, store: redactStore(this.o.store) });
  }

  /** Claims the store (`StoreInUseError` while a `peloton up` holds it) before anything reads or writes it. */
  async #claimStore(): Promise<void> {
    this.claim = await claimStore(this.o.store, "shared", `peloton ${this.o.role} at ${this.url}`);
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
      const timer = setTimeout(() => {
        resolve({
          kind: "api-reply",
          reqId: 0,
          // yarpc's answer to a call past its deadline; not `unavailable`, which clients retry.
          error: { code: "deadline-exceeded", message: `${procedure} timed out after ${ttlMs} ms` },
        });
      }, ttlMs);
      const reqId = this.#calls.register((r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.transport.send(to, { kind: "api", reqId, replyTo: this.apiAddress, procedure, body });
    });
  }

  /** The URL of a live process of `role` (the leader for elected roles). */
  urlOf(role: DaemonRole): string | undefined {
    if (role === "resmgr" || role === "hostmgr") return this.registry.holder(role)?.url;
    const members = this.registry.membersOf(role);
    return members.length ? members[Math.floor(Math.random() * members.length)].url : undefined;
  }

  /** Sends an HTTP request on to another process unchanged (one hop at most). */
  async forward(req: Request, url: string, body?: string): Promise<Response> {
    if (Number(req.headers.get(HOP_HEADER) ?? 0) >= 2) {
      return rpcError("unavailable", "the call was forwarded twice without reaching its daemon", { req });
    }
    const target = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.set(HOP_HEADER, String(Number(req.headers.get(HOP_HEADER) ?? 0) + 1));
    headers.delete("host");
    headers.delete("content-length");
    const abort = new AbortController();
    try {
      const res = await fetch(url + target.pathname + target.search, {
        method: req.method,
        headers,
        body: req.method === "GET" || req.method === "HEAD" ? undefined : body ?? await req.text(),
        signal: abort.signal,
      });
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
      return rpcError("unavailable", `cannot reach ${url}: ${(e as Error).message}`, { req });
    }
  }

  async #beat(): Promise<void> {
    try {
      await this.cluster.heartbeat(
        { instanceId: this.instance, role: this.o.role, url: this.url, startedMs: this.startedMs },
        this.o.leaseTtlMs,
      );
    } catch (e) {
      this.log.warn("heartbeat failed", { error: (e as Error).message });
    }
  }

  async #handle(req: Request): Promise<Response> {
    this.#inflight++;
    try {
      const url = new URL(req.url);
      if (url.pathname === MESSAGES_PATH && req.method === "POST") return await this.#internal(req);
      if (req.method === "GET" && url.pathname === "/health") {
        // A stopping daemon is not ready for calls: a load balancer or probe takes it out at once.
        return Response.json({
          status: this.#stopping ? "stopping" : "ok",
          role: this.o.role,
          instance: this.instance,
          url: this.url,
          ...this.hooks.health(),
        }, { status: this.#stopping ? 503 : 200 });
      }
      if (req.method === "GET" && url.pathname === "/metrics") {
        return new Response(this.metrics.render(), {
          headers: { "content-type": "text/plain; version=0.0.4" },
        });
      }
      if (url.pathname === "/api/v1") return await this.#api(req);
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
        const leader = this.registry.holder("hostmgr")?.url;
        if (!leader || leader === this.url) {
          return rpcError("unavailable", "no host manager leads now", { req });
        }
        return await this.forward(req, leader);
      }
      return new Response("not found\n", { status: 404 });
    } finally {
      this.#inflight--;
    }
  }

  async #internal(req: Request): Promise<Response> {
    if (this.o.auth && !this.o.auth.isInternal(credentialsOf(req.headers))) {
      return new Response("internal calls need the internal user's credentials\n", { status: 401 });
    }
    let env: Envelope;
    try {
      env = await req.json();
    } catch (e) {
      return new Response(`body is not JSON: ${(e as Error).message}\n`, { status: 400 });
    }
    const status = this.transport.deliver(env);
    return new Response(null, { status });
  }

  async #api(req: Request): Promise<Response> {
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
    const { text, body, ttlMs: ttl } = read;
    const started = performance.now();
    let target = await this.#target(route, body);
    // During a change of leader or shard owner, wait a little for the new one rather than fail at once.
    const waitUntil = performance.now() + Math.min(5_000, this.o.leaseTtlMs * 2);
    while (
      "error" in target && target.error === "unavailable" && performance.now() < waitUntil && !this.#stopping
    ) {
      await new Promise((r) => setTimeout(r, 100));
      await this.registry.refresh().catch(() => {});
      target = await this.#target(route, body);
    }
    if ("forward" in target) return await this.forward(req, target.forward, text);
    if ("error" in target) return rpcError(target.error, target.message, { req });
    if (route.procedure === WATCH_PROCEDURE && this.#watches) {
      // Timed to the first response: the stream runs on after.
      const opened = await this.#watches.open(target.local, target.body ?? body, ttl);
      this.#apiSeconds(route.procedure, opened.code).observe((performance.now() - started) / 1000);
      return opened.response;
    }
    const reply = await this.call(target.local, route.procedure, target.body ?? body, ttl);
    this.#apiSeconds(route.procedure, reply.error?.code ?? "ok").observe(
      (performance.now() - started) / 1000,
    );
    if (reply.error) return rpcError(reply.error.code, reply.error.message, { req });
    return Response.json(reply.body ?? {}, { headers: { "rpc-status": RPC_STATUS_SUCCESS } });
  }

  async #target(route: Route, body: Record<string, unknown>): Promise<ApiTarget> {
    if (route.daemon === "jobmgr") {
      if (this.hooks.jobmgrTarget) return await this.hooks.jobmgrTarget(route, body);
      // Straight to the job manager holding the watch (any other would send it on there).
      const holder = route.procedure === CANCEL_PROCEDURE ? watchHolder(body) : undefined;
      const url = (holder && this.registry.resolve(holder)) || this.urlOf("jobmgr");
      return url ? { forward: url } : { error: "unavailable", message: "no job manager is running" };
    }
    if (this.transport.serves(route.daemon)) return { local: route.daemon };
    const leader = this.registry.holder(route.daemon)?.url;
    if (leader && leader !== this.url) return { forward: leader };
    return { error: "unavailable", message: `no ${route.daemon} leads now; try again` };
  }
}

function redactStore(url: string): string {
  return url.replace(/^(mysql:\/\/[^:@/]*):[^@/]*@/, "$1:***@");
}

export { API_STATUS };

/** How long a stop waits for the HTTP server's connections to finish. */
const SHUTDOWN_GRACE_MS = 5_000;

function stoppingError(req: Request): Response {
  return rpcError("unavailable", "the daemon is stopping; call another process or again shortly", { req });
}
