/**
 * A daemon's graceful stop: calls in flight finish, new ones go elsewhere, nothing holds the stop for good;
 * and how a daemon answers a call the store cannot serve.
 */
import assert from "node:assert/strict";
import { PendingCalls } from "../../core/rpc.ts";
import { jsonLogger } from "../log.ts";
import { startResmgr } from "./resmgr_daemon.ts";
import { startJobmgr } from "./jobmgr_daemon.ts";
import { StoreUnavailableError } from "../../core/ports/store.ts";
import { DaemonProcess } from "./process.ts";
import { replyError } from "./http_errors.ts";
import { settlesWithin } from "../settle.ts";
import { waitFor } from "../testing.ts";
import { DatabaseSync } from "node:sqlite";
import type { JobmgrConfig } from "../../core/jobmgr/jobmgr.ts";
import type { Message } from "../../core/messages.ts";
import { ClusterStore } from "../cluster/cluster_store.ts";
import { openStore } from "../store/kysely_store.ts";
import { JOB_SHARDS, shardLease } from "../cluster/registry.ts";

const LOOKUP = "peloton.api.respool.ResourceManager::LookupResourcePoolID";
const BODY = JSON.stringify({ path: { value: "/" } });

/** A daemon in this process, on a SQLite store in a fresh directory; its log lines kept. */
async function inTempDir(role: "resmgr" | "jobmgr", jobmgr?: Partial<JobmgrConfig>) {
  const dir = await Deno.makeTempDir({ prefix: "peloton-stop-" });
  const logs: string[] = [];
  const d = await (role === "resmgr" ? startResmgr : startJobmgr)({
    host: "127.0.0.1",
    port: 0,
    store: `sqlite:${dir}/peloton.sqlite`,
    dataDir: dir,
    leaseTtlMs: 2_000,
    log: jsonLogger({ daemon: role }, (l) => logs.push(l)),
    ...(jobmgr ? { jobmgr } : {}),
  });
  return { dir, logs, d };
}

/**
 * A job manager process that was never opened: its stop goes only as far as the daemon's own stop, which
 * the tests that use it never end.
 */
function unopenedJobmgr(): DaemonProcess {
  const p = new DaemonProcess({
    role: "jobmgr",
    host: "127.0.0.1",
    port: 0,
    store: "sqlite::memory:",
    dataDir: "/nonexistent",
    leaseTtlMs: 2_000,
    log: jsonLogger({ daemon: "jobmgr" }, () => {}),
  });
  (p as unknown as { store: { stopping(): void } }).store = { stopping() {} };
  return p;
}

Deno.test({
  name:
    "a stopping daemon says so on /health, refuses new API calls as unavailable, and answers the one in flight",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, d } = await inTempDir("resmgr");
    const url = d.process.url;
    let stopped: Promise<void> | undefined;
    let conn: Deno.TcpConn | undefined;
    try {
      await waitFor("the resource manager to lead", async () => {
        const h = await (await fetch(`${url}/health`)).json();
        return h.leader ? true : undefined;
      });
      // A call whose body is still on its way: in flight when the stop begins, so the stop waits for it.
      conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
      const head = `POST /api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Rpc-Procedure: ${LOOKUP}\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n`;
      await conn.write(new TextEncoder().encode(head + BODY.slice(0, 5)));
      await waitFor("the call to be in flight", async () => {
        const m = await (await fetch(`${url}/metrics`)).text();
        // The metrics scrape is in flight too.
        return /^peloton_http_inflight_requests\{[^}]*\} 2$/m.test(m) ? true : undefined;
      });
      // The store's grace for a lost database counts from the end of this wait, not from the signal: the
      // calls in flight may take their time without eating into what the stop's own writes get.
      const store = d.process.store;
      let graceFrom: string | undefined;
      const stopping = store.stopping.bind(store);
      store.stopping = () => {
        graceFrom ??= d.process.stopStep;
        stopping();
      };
      stopped = d.stop();

      // Health says so, for a probe or load balancer to take the process out.
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 503);
      assert.equal((await health.json()).status, "stopping");

      const refused = await fetch(`${url}/api/v1`, {
        method: "POST",
        headers: { "content-type": "application/json", "rpc-procedure": LOOKUP },
        body: BODY,
      });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get("rpc-error-code"), "unavailable");
      assert.match(await refused.text(), /^the daemon is stopping/);

      assert.equal(graceFrom, undefined, "the store's grace began while a call was still in flight");
      await conn.write(new TextEncoder().encode(BODY.slice(5)));
      const answer = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
      assert.match(answer, /^HTTP\/1\.1 200 /, answer);
      assert.match(answer, /"id":\{"value":"root"\}/, answer);
      await stopped;
      assert.equal(graceFrom, "waiting for the calls in flight", "the grace began once that wait was over");
    } finally {
      try {
        conn?.close();
      } catch {
        // Closed by the server.
      }
      await (stopped ?? d.stop());
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a call whose write the stop stores gets its answer before the calls left are failed unavailable",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, d } = await inTempDir("resmgr");
    let other: DatabaseSync | undefined;
    try {
      await waitFor("the resource manager to lead", async () => {
        const h = await (await fetch(`${d.process.url}/health`)).json();
        return h.leader ? true : undefined;
      });
      // Another connection holds the store's write lock: the pool's write waits for it. The call comes over
      // the transport (as from another daemon), so no HTTP request holds the stop at its first step.
      other = new DatabaseSync(`${dir}/peloton.sqlite`);
      other.exec("BEGIN IMMEDIATE");
      const reply = d.process.call("resmgr", "CreateResourcePool", {
        config: { name: "late", resources: [{ kind: "cpu", reservation: 1, limit: 1, share: 1 }] },
      }, 30_000);
      await new Promise((r) => setTimeout(r, 200));
      const stopped = d.stop();
      // The daemon's stop flushes the store before it gives its lease up, and waits there for the lock.
      await waitFor(
        "the stop to wait for the store",
        () => Promise.resolve(d.process.stopStep === "stopping the resmgr" ? true : undefined),
      );
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(d.process.stopStep, "stopping the resmgr");
      // The lock goes: the flush stores the pool, and its reply goes out before the calls still waiting are
      // failed. Failed first, the caller would hear "unavailable" for a pool that exists.
      other.exec("COMMIT");
      const got = await reply;
      assert.equal(got.error, undefined, JSON.stringify(got.error));
      assert.match(JSON.stringify(got.body), /"value":"[0-9a-f-]{36}"/);
      await stopped;
    } finally {
      if (other?.isTransaction) other.exec("ROLLBACK");
      other?.close();
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("PendingCalls.failAll answers every call still waiting, once", () => {
  const calls = new PendingCalls<{ reqId: number; error?: string }>();
  const got: string[] = [];
  const a = calls.register((r) => got.push(`${r.reqId}:${r.error}`));
  const b = calls.register((r) => got.push(`${r.reqId}:${r.error}`));
  calls.failAll((reqId) => ({ reqId, error: "stopping" }));
  assert.deepEqual(got, [`${a}:stopping`, `${b}:stopping`]);
  assert.equal(calls.resolve({ reqId: a }), false, "a late reply is not routed");
  assert.equal(calls.size, 0);
});

Deno.test({
  name:
    "a call passed on to another process and answered during the stop goes back to its client as answered",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    let carried = 0;
    const owner = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
      carried++;
      await new Promise((r) => setTimeout(r, 200));
      return Response.json({ jobId: { value: "job-1" } }, { headers: { "rpc-status": "success" } });
    });
    const p = unopenedJobmgr();
    try {
      const call = new Request("http://127.0.0.1/api/v1", {
        method: "POST",
        headers: { "rpc-procedure": "peloton.api.v1alpha.job.stateless.svc.JobService::CreateJob" },
        body: "{}",
      });
      const answer = p.forward(call, `http://127.0.0.1:${owner.addr.port}`, "{}");
      await new Promise((r) => setTimeout(r, 50));
      void p.close(() => new Promise(() => {}));
      const res = await answer;
      // The job was created: a client told "unavailable" would create it again.
      assert.equal(carried, 1);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { jobId: { value: "job-1" } });
    } finally {
      await owner.shutdown();
    }
  },
});

Deno.test({
  name: "a stop leaves behind a response that never ends (a client that stopped reading), after a grace",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, logs, d } = await inTempDir("resmgr");
    // A response that sends a first chunk and then nothing, and is never ended: as a large sandbox file to a
    // client that stopped reading, it would hold the HTTP server's shutdown for good.
    d.process.hooks.routes = (_req, url) =>
      Promise.resolve(
        url.pathname === "/endless"
          ? new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("first\n")) }))
          : undefined,
      );
    const res = await fetch(`${d.process.url}/endless`);
    const reader = res.body!.getReader();
    try {
      assert.equal(new TextDecoder().decode((await reader.read()).value), "first\n");
      assert.equal(await settlesWithin(d.stop(), 20_000), true, "the stop still waited 20 s later");
      assert.ok(logs.some((l) => JSON.parse(l).msg === "HTTP connections still open; stopping without them"));
    } finally {
      await reader.cancel().catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a stop under way says which step it is at, for a stop that takes too long to name it", async () => {
  const p = unopenedJobmgr();
  assert.equal(p.stopStep, undefined);
  const daemonStop = Promise.withResolvers<void>();
  void p.close(() => daemonStop.promise);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(p.stopStep, "stopping the jobmgr");
});

Deno.test({
  name: "a job manager that cannot read the store to route a call answers it unavailable, not with a 500",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, d } = await inTempDir("jobmgr");
    try {
      // An update named by its id alone is routed to its job's owner by reading the update from the store.
      d.process.store.getUpdate = () =>
        Promise.reject(new StoreUnavailableError("the store cannot be reached: connect ECONNREFUSED"));
      const res = await fetch(`${d.process.url}/api/v1`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "rpc-procedure": "peloton.api.v0.update.svc.UpdateService::GetUpdate",
        },
        body: JSON.stringify({ updateId: { value: "00000000-0000-4000-8000-000000000001" } }),
      });
      assert.equal(res.status, 503);
      assert.deepEqual(replyError(res.status, res.headers, await res.text()), {
        code: "unavailable",
        message: "finding the job the call is for: the store cannot be reached: connect ECONNREFUSED",
      });
    } finally {
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a stopping job manager asks for no more placements from the stop's first step, calls in flight or not",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // No resource manager answers: the job manager asks again every 100 ms.
    const { dir, d } = await inTempDir("jobmgr", { placementPollRetryMs: 100 });
    const asked: number[] = [];
    const transport = d.process.transport;
    const send = transport.send.bind(transport);
    transport.send = (to: string, msg: Message) => {
      if (msg.kind === "get-placements") asked.push(performance.now());
      send(to, msg);
    };
    // A call in flight holds the stop at its first step ("waiting for the calls in flight", up to 10 s).
    const release = Promise.withResolvers<void>();
    d.process.hooks.routes = async (_req, url) => {
      if (url.pathname !== "/hold") return undefined;
      await release.promise;
      return new Response("held\n");
    };
    try {
      await waitFor(
        "the job manager to ask for placements",
        () => Promise.resolve(asked.length || undefined),
      );
      const held = fetch(`${d.process.url}/hold`).then((r) => r.text());
      await new Promise((r) => setTimeout(r, 50));
      const stopAt = performance.now();
      const stopped = d.stop();
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(d.process.stopStep, "waiting for the calls in flight");
      assert.deepEqual(asked.filter((t) => t > stopAt), [], "placements asked for during the stop");
      release.resolve();
      assert.equal(await held, "held\n");
      await stopped;
    } finally {
      release.resolve();
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a stopping job manager takes no more shards, however long its stop waits",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-stop-shards-" });
    const store = `sqlite:${dir}/peloton.sqlite`;
    // Another job manager's shards, all but two, whose leases run out while this one stops.
    await (await openStore(store)).close();
    const other = await ClusterStore.open(store);
    const theirs = Array.from({ length: JOB_SHARDS - 2 }, (_, i) => i + 2);
    for (const k of theirs) await other.acquire(shardLease(k), "gone", "http://127.0.0.1:1", 1_500);
    const d = await startJobmgr({
      host: "127.0.0.1",
      port: 0,
      store,
      dataDir: dir,
      leaseTtlMs: 900,
      log: jsonLogger({ daemon: "jobmgr" }, () => {}),
    });
    // A call in flight holds the stop at its first step ("waiting for the calls in flight", up to 10 s).
    const release = Promise.withResolvers<void>();
    d.process.hooks.routes = async (_req, url) => {
      if (url.pathname !== "/hold") return undefined;
      await release.promise;
      return new Response("held\n");
    };
    const mine = async () =>
      (await other.leases("jobmgr-shard-")).filter((l) =>
        l.holder === d.process.instance && l.expiresMs > Date.now()
      )
        .map((l) => l.name).sort();
    try {
      await waitFor(
        "the job manager to take the two free shards",
        async () => (await mine()).length === 2 || undefined,
      );
      const held = fetch(`${d.process.url}/hold`).then((r) => r.text());
      await new Promise((r) => setTimeout(r, 50));
      const stopped = d.stop();
      // The other leases run out meanwhile, and the job manager's tick (every 300 ms) finds them free.
      const deadline = performance.now() + 2_500;
      while (performance.now() < deadline) {
        assert.equal(d.process.stopStep, "waiting for the calls in flight");
        assert.deepEqual(await mine(), [shardLease(0), shardLease(1)], "shards taken during the stop");
        const h = await (await fetch(`${d.process.url}/health`)).json();
        assert.equal(h.status, "stopping");
        assert.ok(h.shards.every((k: number) => k < 2), `health during the stop: ${JSON.stringify(h)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      release.resolve();
      assert.equal(await held, "held\n");
      await stopped;
      assert.deepEqual(await mine(), [], "the shards are handed back at the stop's end");
    } finally {
      release.resolve();
      await d.stop();
      await other.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
