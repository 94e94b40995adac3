/**
 * Failovers of separately started daemons: a store outage longer than the lease TTL ridden out (leaders and
 * job managers step down and take their roles up again from the store), a daemon started while its store is
 * down waiting for it, reads of a job answered by its owner, a new host manager leader that knows no hosts
 * yet, and calls to a leader that died.
 */
import assert from "node:assert/strict";
import { shardOf } from "./cluster/registry.ts";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { STALE_READ_HEADER } from "./daemons/process.ts";
import { batchJobYaml, DaemonCluster, health, testDatabaseUrl, twoJobManagers } from "./testing_cluster.ts";
import { cli, createDefaultPool, ROOT, startPeloton, waitFor } from "./testing.ts";
import type { UpProcess } from "./testing.ts";

/**
 * A TCP proxy in front of the database that can be taken down as a server is: `cut` closes the listener (new
 * connections are refused) and every connection open; `restore` listens on the same port again.
 */
class OutageProxy {
  #listener?: Deno.TcpListener;
  readonly #conns = new Set<Deno.Conn>();
  /** Connections still let through before the proxy goes down by itself. */
  #budget = Infinity;
  port = 0;

  constructor(readonly target: { host: string; port: number }) {
    this.#listen(0);
  }

  /** Lets `n` more connections through, then stops listening (those stay open until their clients end). */
  downAfter(n: number): void {
    this.#budget = n;
    if (n <= 0) this.#closeListener();
  }

  cut(): void {
    this.#closeListener();
    for (const c of this.#conns) closeQuietly(c);
    this.#conns.clear();
  }

  restore(): void {
    this.#budget = Infinity;
    if (!this.#listener) this.#listen(this.port);
  }

  close(): void {
    this.cut();
  }

  #listen(port: number): void {
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    this.#listener = listener;
    this.port = listener.addr.port;
    void this.#accept(listener);
  }

  #closeListener(): void {
    const l = this.#listener;
    this.#listener = undefined;
    if (l) closeQuietly(l);
  }

  async #accept(listener: Deno.TcpListener): Promise<void> {
    try {
      for await (const client of listener) {
        if (this.#listener !== listener) {
          closeQuietly(client);
          continue;
        }
        if (--this.#budget <= 0) this.#closeListener();
        void this.#join(client);
      }
    } catch {
      // The listener was closed.
    }
  }

  async #join(client: Deno.Conn): Promise<void> {
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: this.target.host, port: this.target.port });
    } catch {
      return closeQuietly(client);
    }
    this.#conns.add(client).add(server);
    const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
      try {
        await from.readable.pipeTo(to.writable);
      } catch {
        // Closed by the other side or cut.
      }
      closeQuietly(from);
      closeQuietly(to);
      this.#conns.delete(from);
      this.#conns.delete(to);
    };
    await Promise.all([pipe(client, server), pipe(server, client)]);
  }
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // Already closed.
  }
}

/** The store's URL through the proxy, failing fast while the proxy is down. */
function viaProxy(store: string, proxy: OutageProxy): string {
  const via = new URL(store);
  via.hostname = "127.0.0.1";
  via.port = String(proxy.port);
  via.search = "?connectTimeout=1000";
  return via.href;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

/** A call of the API over HTTP: its status, yarpc error code, body text and headers. */
async function api(url: string, procedure: string, body: unknown) {
  const res = await fetch(`${url}/api/v1`, {
    method: "POST",
    headers: { "content-type": "application/json", "rpc-procedure": procedure },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    code: res.headers.get("rpc-error-code"),
    text: await res.text(),
    headers: res.headers,
  };
}

/** Whether a daemon process has exited. */
async function exited(p: UpProcess): Promise<boolean> {
  const done = await Promise.race([
    p.child.status.then(() => true),
    new Promise((r) => setTimeout(r, 0, false)),
  ]);
  return done as boolean;
}

const JOB = "peloton.api.job.JobManager";

Deno.test({
  name:
    "a daemon started while its store is down waits for it, saying so on /health, and starts once it is up",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-failover-start-" });
    const store = testDatabaseUrl("failover_start");
    const proxy = new OutageProxy(parseMysqlUrl(store));
    // Down from the start: the CLI checks --store's shape only, and the daemon waits for the store.
    proxy.downAfter(0);
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}/prod/cli/main.ts`,
        "resmgr",
        "--port",
        String(port),
        "--data-dir",
        dir,
        "--store",
        viaProxy(store, proxy),
        "--lease-ttl-ms",
        "1000",
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let out = "";
    const read = async (s: ReadableStream<Uint8Array>) => {
      for await (const t of s.pipeThrough(new TextDecoderStream())) out += t;
    };
    const pumps = Promise.all([read(child.stdout), read(child.stderr)]);
    let code: number | undefined;
    void child.status.then((s) => code = s.code);
    try {
      const attempts = () =>
        out.split("\n").filter((l) => l.includes('"msg":"waiting for the store"')).length;
      await waitFor("two attempts to reach the store", () => {
        if (code !== undefined) throw new Error(`the daemon exited ${code}:\n${out}`);
        return Promise.resolve(attempts() >= 2 || undefined);
      });
      const waiting = await fetch(`${url}/health`);
      assert.equal(waiting.status, 503);
      const body = await waiting.json();
      assert.equal(body.status, "starting");
      assert.match(body.reason, /waiting for its store .* which cannot be reached/);
      const call = await api(url, "peloton.api.respool.ResourceManager::LookupResourcePoolID", {
        path: { value: "/" },
      });
      assert.equal(call.code, "unavailable", call.text);
      assert.match(call.text, /the resmgr daemon is starting \(waiting for its store/);

      proxy.restore();
      await waitFor(
        "the daemon to serve",
        () => Promise.resolve(/serving at/.test(out) || undefined),
        30_000,
      );
      await waitFor("it to lead", async () => (await health(url)).leader === true || undefined);
      assert.match(out, /"msg":"store reached"/);
      child.kill("SIGINT");
      assert.equal((await child.status).code, 0, out);
    } catch (err) {
      console.error(out);
      throw err;
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await child.status;
      await pumps;
      proxy.close();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a store outage longer than the lease TTL is ridden out: every daemon steps down, leads again from " +
    "the store, tasks run on and none runs twice, and the job accepted before it finishes",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-failover-outage-" });
    const store = testDatabaseUrl("failover_outage");
    const proxy = new OutageProxy(parseMysqlUrl(store));
    const ttl = 1000;
    const cluster = new DaemonCluster(viaProxy(store, proxy), `${dir}/peloton`, ttl, {
      hostmgr: ["--agents", "2"],
    });
    const ran = `${dir}/ran.log`;
    const procs = () => [...cluster.daemons.values()].map((d) => d.proc);
    try {
      for (const name of ["resmgr", "hostmgr", "placement", "jobmgr"]) await cluster.start(name);
      const jm = cluster.url("jobmgr");
      await waitFor("the job manager to hold every shard", async () => {
        return ((await health(jm)).shards as number[]).length === 16 || undefined;
      });
      await createDefaultPool(jm);
      const create = async (name: string, count: number, command: string) => {
        const file = `${dir}/${name}.yaml`;
        await Deno.writeTextFile(file, batchJobYaml(name, count, command));
        const r = await cli(jm, "job", "create", "/DefaultResPool", file);
        assert.equal(r.code, 0, r.err);
        return /^Job (\S+) created$/.exec(r.out)![1];
      };
      const stats = async (id: string) => {
        const r = await cli(jm, "job", "status", id, "-j");
        return r.code === 0 ? JSON.parse(r.out) : undefined;
      };
      // Tasks that run through the outage, and tasks that end during it.
      const long = await create("long", 2, `echo long $PELOTON_INSTANCE_ID >> ${ran}; sleep 600`);
      const short = await create("short", 2, `echo short $PELOTON_INSTANCE_ID >> ${ran}; sleep 3`);
      for (const id of [long, short]) {
        await waitFor(
          `job ${id}'s tasks to run`,
          async () => (await stats(id))?.taskStats?.RUNNING === 2 || undefined,
        );
      }

      proxy.cut();
      // Each daemon holding a lease or shards loses it, steps down, and lives on.
      for (
        const [name, line] of [
          ["resmgr", "lost the resmgr lease; stepping down"],
          ["hostmgr", "lost the hostmgr lease; stepping down"],
          ["jobmgr", "lost a shard lease; stepping down"],
        ]
      ) {
        await waitFor(
          `${name} to step down`,
          () => Promise.resolve(cluster.output(name).includes(line) || undefined),
        );
      }
      // Calls are answered meanwhile: unavailable, a client may try again.
      const during = await cli(jm, "job", "status", long);
      assert.equal(during.code, 1);
      assert.match(during.err, /unavailable/);
      for (const p of procs()) assert.ok(!(await exited(p)), p.output());

      proxy.restore();
      await waitFor(
        "the resource manager to lead again",
        async () => (await health(cluster.url("resmgr"))).leader || undefined,
      );
      await waitFor(
        "the host manager to lead again",
        async () => (await health(cluster.url("hostmgr"))).leader || undefined,
      );
      await waitFor("the job manager to hold its shards again", async () => {
        return ((await health(jm)).shards as number[]).length === 16 || undefined;
      });
      // The job accepted before the outage finishes; the long one's tasks ran on through it.
      await waitFor(
        "the short job to succeed",
        async () => (await stats(short))?.state === "SUCCEEDED" || undefined,
        60_000,
      );
      await waitFor(
        "the long job's tasks to be running",
        async () => (await stats(long))?.taskStats?.RUNNING === 2 || undefined,
        30_000,
      );
      // A job created after the outage runs.
      const after = await create("after", 2, `echo after $PELOTON_INSTANCE_ID >> ${ran}`);
      await waitFor(
        "the job after the outage to succeed",
        async () => (await stats(after))?.state === "SUCCEEDED" || undefined,
        30_000,
      );

      // No task ran twice: each instance once, on its first run.
      const lines = (await Deno.readTextFile(ran)).trim().split("\n").sort();
      assert.deepEqual(lines, ["after 0", "after 1", "long 0", "long 1", "short 0", "short 1"]);
      for (const id of [long, short, after]) {
        const list = JSON.parse((await cli(jm, "task", "list", id, "-j")).out).result.value;
        for (const t of Object.values(list) as { runtime: { mesosTaskId: { value: string } } }[]) {
          assert.match(
            t.runtime.mesosTaskId.value,
            /-1$/,
            `${t.runtime.mesosTaskId.value} needed another run`,
          );
        }
      }
      const stop = await cli(jm, "job", "stop", long);
      assert.equal(stop.code, 0, stop.err);
      await waitFor(
        "the long job to be killed",
        async () => (await stats(long))?.state === "KILLED" || undefined,
        30_000,
      );
      for (const p of procs()) assert.ok(!(await exited(p)), p.output());
    } catch (err) {
      console.error(cluster.tail(40));
      throw err;
    } finally {
      await cluster.stopAll().catch((e) => console.error(e));
      proxy.close();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a job's status read through a job manager that does not own it is its owner's; with the owner " +
    "gone, it is read from the store and the reply says so",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-failover-reads-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000, {
      hostmgr: ["--agents", "2"],
    });
    try {
      const { j1, j2, jobOfJ1: job } = await twoJobManagers(cluster, 30_000);
      await createDefaultPool(j1);
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, batchJobYaml("reads", 2, "sleep 600"));
      const created = await cli(j1, "job", "create", "/DefaultResPool", file, "-i", job);
      assert.equal(created.code, 0, created.err);
      const status = async (url: string) => JSON.parse((await cli(url, "job", "status", job, "-j")).out);
      await waitFor(
        "both tasks to run",
        async () => (await status(j1)).taskStats?.RUNNING === 2 || undefined,
      );
      // One instance stops: the job stays RUNNING, so its stored runtime keeps the counts of before.
      const stop = await api(j1, "peloton.api.task.TaskManager::Stop", {
        jobId: { value: job },
        ranges: [{ from: 0, to: 1 }],
      });
      assert.equal(stop.status, 200, stop.text);
      const owners = await waitFor("the stopped instance to be KILLED", async () => {
        const s = await status(j1);
        return s.taskStats?.KILLED === 1 ? s : undefined;
      });
      const other = await status(j2);
      assert.deepEqual(other.taskStats, owners.taskStats, "the same counts from either job manager");
      assert.equal(other.state, owners.state);
      const fresh = await api(j2, `${JOB}::Get`, { id: { value: job } });
      assert.equal(fresh.headers.get(STALE_READ_HEADER), null);

      // The owner dies: until its shard has another owner, the other answers from the store, saying so.
      await cluster.kill("jobmgr-1");
      const stale = await api(j2, `${JOB}::Get`, { id: { value: job } });
      assert.equal(stale.status, 200, stale.text);
      const took = ((await health(j2)).shards as number[]).includes(shardOf(job));
      if (!took) {
        assert.match(
          stale.headers.get(STALE_READ_HEADER) ?? "",
          /cannot be reached: answered from the store by jobmgr@\w+; task counts may lag|no job manager drives/,
        );
      }
    } catch (err) {
      console.error(cluster.tail(20));
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "a new host manager leader answers unavailable until its hosts registered, never an empty host list; " +
    "one with no agents answers in the end",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-failover-hosts-" });
    const masterPort = freePort();
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 1000, {
      hostmgr: ["--backend", "mesos", "--mesos-master", `http://127.0.0.1:${masterPort}`],
    });
    let master: UpProcess | undefined, bare: UpProcess | undefined;
    const QUERY = "peloton.api.v0.host.svc.HostService::QueryHosts";
    try {
      // The leader's Mesos master is not up yet: it knows no host.
      await cluster.start("hostmgr");
      const hm = cluster.url("hostmgr");
      await waitFor("the host manager to lead", async () => (await health(hm)).leader || undefined);
      // Unavailable, never an empty list. With a 1 s lease a loaded machine may make it step down and
      // campaign again meanwhile, which it says: asked again until it leads and says it is taking over.
      await waitFor("the leader to say its hosts are registering", async () => {
        const r = await api(hm, QUERY, {});
        assert.equal(r.code, "unavailable", `${r.status} ${r.text}`);
        if (/stepped down .* is campaigning again/.test(r.text)) return undefined;
        assert.match(r.text, /the host manager is taking over; its hosts are registering/);
        return true;
      });
      master = await startPeloton(
        ["minicluster", "--port", String(masterPort), "--agents", "2", "--data-dir", `${dir}/master`],
        /Mesos master emulator at (http:\/\/\S+) /,
      );
      const hosts = await waitFor("the hosts", async () => {
        const r = await api(hm, QUERY, {});
        if (r.status !== 200) {
          assert.match(r.text, /its hosts are registering/);
          return undefined;
        }
        return JSON.parse(r.text).hostInfos as unknown[];
      }, 60_000);
      assert.equal(hosts.length, 2);

      // A Mesos master without agents: the leader answers once it has waited for hosts a while.
      bare = await startPeloton(
        ["minicluster", "--port", "0", "--agents", "0", "--data-dir", `${dir}/bare`],
        /Mesos master emulator at (http:\/\/\S+) /,
      );
      const empty = new DaemonCluster(`sqlite:${dir}/empty.sqlite`, `${dir}/empty`, 1000, {
        hostmgr: ["--backend", "mesos", "--mesos-master", bare.url],
      });
      try {
        await empty.start("hostmgr");
        const none = await waitFor("an answer", async () => {
          const r = await api(empty.url("hostmgr"), QUERY, {});
          return r.status === 200 ? JSON.parse(r.text).hostInfos as unknown[] : undefined;
        }, 30_000);
        assert.deepEqual(none, []);
      } finally {
        await empty.stopAll();
      }
    } catch (err) {
      console.error(cluster.tail(20));
      throw err;
    } finally {
      await cluster.stopAll();
      await master?.stop();
      await bare?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a call to a leader that died, while its lease lasts, is answered that the leader is failing over",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-failover-leader-" });
    // A lease that outlives the call's wait for a new leader.
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 20_000);
    try {
      await cluster.start("resmgr-1");
      await waitFor(
        "resmgr-1 to lead",
        async () => (await health(cluster.url("resmgr-1"))).leader || undefined,
      );
      await cluster.start("resmgr-2");
      await cluster.kill("resmgr-1");
      const r = await api(
        cluster.url("resmgr-2"),
        "peloton.api.respool.ResourceManager::LookupResourcePoolID",
        {
          path: { value: "/" },
        },
      );
      assert.equal(r.code, "unavailable", r.text);
      assert.doesNotMatch(r.text, /cannot reach http/);
      assert.match(
        r.text,
        /^the resmgr leader is failing over: its lease is held by \w+ at http:\/\/\S+, which does not answer/,
      );
    } catch (err) {
      console.error(cluster.tail(20));
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
