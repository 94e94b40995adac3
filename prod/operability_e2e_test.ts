/**
 * Operating the separate daemons: /health and Prometheus /metrics on each, JSON log lines, Peloton's basic
 * auth over real HTTP (401, 403, credentials from the environment), a host manager follower that forwards,
 * leaders that step down when their lease passes on (SIGSTOP past the TTL) or die (SIGKILL), and a job
 * manager that finishes its in-flight writes on SIGTERM.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { runCli } from "./cli/main.ts";
import { batchJobYaml, DaemonCluster } from "./testing_cluster.ts";
import { ROOT, waitFor } from "./testing.ts";

const AUTH = `${ROOT}/prod/auth/testdata/security_example.yaml`;
const ROOT_ENV: Record<string, string> = { PELOTON_USERNAME: "peloton", PELOTON_PASSWORD: "password1" };
const basic = (user: string, password: string) => `Basic ${btoa(`${user}:${password}`)}`;

/** The CLI in this process, credentials from the environment only (no -u/-p). */
async function cliEnv(url: string, env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [], err: string[] = [];
  const code = await runCli([...argv, "-m", url], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: (name) => env[name],
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

async function health(url: string): Promise<Record<string, unknown>> {
  // A daemon blocked for good must fail the test, not hang it.
  const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200);
  return await res.json();
}

async function metrics(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return await res.text();
}

/** A sample's value, or undefined when the series is missing. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}

/** Whether a write transaction on the SQLite file can start within 2 s (no process holds its write lock). */
function writeLockFree(path: string): boolean {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA busy_timeout = 2000");
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return true;
  } catch {
    return false;
  } finally {
    db.close();
  }
}

/**
 * Freezes a daemon (SIGSTOP) at a moment it holds no SQLite write lock. Stopped inside a write (a lease
 * renewal's transaction, a commit's fsync), it would keep the file locked for every other process, which is
 * SQLite's nature rather than the lease protocol under test: it is let go at once and frozen again.
 */
async function freezeOutsideWrite(child: Deno.ChildProcess, sqlitePath: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    child.kill("SIGSTOP");
    // The signal is sent at once but acted on when the process next runs: check once it has stopped.
    while ((await Deno.readTextFile(`/proc/${child.pid}/stat`)).split(") ")[1]?.[0] !== "T") {
      await new Promise((r) => setTimeout(r, 5));
    }
    if (writeLockFree(sqlitePath)) return;
    child.kill("SIGCONT");
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("could not freeze the daemon outside a write transaction in 20 attempts");
}

function api(url: string, procedure: string, body: unknown, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = { "rpc-procedure": procedure, "content-type": "application/json" };
  if (authorization) headers.authorization = authorization;
  return fetch(`${url}/api/v1`, { method: "POST", headers, body: JSON.stringify(body) });
}

async function jobState(url: string, jobId: string): Promise<Record<string, unknown> | undefined> {
  const r = await cliEnv(url, ROOT_ENV, "job", "status", jobId, "-j");
  return r.code === 0 ? JSON.parse(r.out) : undefined;
}

async function createJob(url: string, file: string): Promise<string> {
  const r = await cliEnv(url, ROOT_ENV, "job", "create", "/DefaultResPool", file);
  assert.equal(r.code, 0, r.err);
  return /^Job (\S+) created$/.exec(r.out)![1];
}

function waitSucceeded(url: () => string, jobId: string): Promise<true> {
  return waitFor(`job ${jobId} to succeed`, async () => {
    const s = await jobState(url(), jobId).catch(() => undefined);
    return s?.state === "SUCCEEDED" || undefined;
  }, 30_000);
}

Deno.test({
  name: "operability: health, metrics and JSON logs on each daemon; auth over HTTP; failovers; SIGTERM",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-ops-" });
    const auth = ["--auth-config", AUTH];
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000, {
      jobmgr: auth,
      resmgr: auth,
      hostmgr: [...auth, "--agents", "2"],
      placement: auth,
    });
    const proc = (name: string) => cluster.daemons.get(name)!.proc;
    const short = `${dir}/short.yaml`;
    await Deno.writeTextFile(short, batchJobYaml("short", 6, "echo $PELOTON_INSTANCE_ID"));
    try {
      await cluster.start("resmgr-1");
      await cluster.start("hostmgr-1");
      await Promise.all(["resmgr-2", "hostmgr-2", "placement", "jobmgr"].map((n) => cluster.start(n)));
      const jm = () => cluster.url("jobmgr");
      await waitFor("the job manager to hold its shards", async () => {
        const h = await health(jm());
        return (h.shards as number[]).length === 16 || undefined;
      });

      // Auth over real HTTP: no credentials, a wrong password, and a role without the procedure.
      const create = "peloton.api.job.JobManager::Create";
      const anon = await api(jm(), create, {});
      assert.equal(anon.status, 401);
      // In YARPC's error format: the code in its header, the message as the body.
      assert.equal(anon.headers.get("rpc-error-code"), "unauthenticated");
      assert.match(await anon.text(), /without credentials/);
      const wrong = await api(jm(), create, {}, basic("peloton", "nope"));
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();
      const admin = await api(jm(), create, {}, basic("admin", "password2"));
      assert.equal(admin.status, 403);
      await admin.body?.cancel();
      // A procedure no daemon serves is checked first too: 401 without credentials, 501 only for who may call it.
      const unserved = "peloton.api.v0.job.svc.JobService::CreateJob";
      for (
        const [authorization, status] of [[undefined, 401], [basic("peloton", "password1"), 501]] as const
      ) {
        const r = await api(jm(), unserved, {}, authorization);
        assert.equal(r.status, status, `${authorization ?? "no credentials"}: ${await r.text()}`);
      }
      // The CLI takes credentials from the environment; without any it says how to give them.
      const refused = await cliEnv(jm(), {}, "job", "create", "/DefaultResPool", `${dir}/short.yaml`);
      assert.equal(refused.code, 1);
      assert.match(refused.err, /PELOTON_USERNAME\/PELOTON_PASSWORD/);
      const pool = await cliEnv(
        jm(),
        ROOT_ENV,
        "respool",
        "create",
        "/DefaultResPool",
        `${ROOT}/scenarios/jobs/default_respool.yaml`,
      );
      assert.equal(pool.code, 0, pool.err);

      // The host manager follower forwards to the leader (admin may call HostService; the header goes along).
      const [h1, h2] = [await health(cluster.url("hostmgr-1")), await health(cluster.url("hostmgr-2"))];
      assert.deepEqual([h1.leader, h2.leader], [true, false]);
      const hosts = await api(
        cluster.url("hostmgr-2"),
        "peloton.api.v0.host.svc.HostService::QueryHosts",
        {},
        basic("admin", "password2"),
      );
      assert.equal(hosts.status, 200);
      assert.equal((await hosts.json()).hostInfos.length, 2);

      await waitSucceeded(jm, await createJob(jm(), short));

      // Every daemon answers /health and /metrics with its own series.
      for (const name of ["resmgr-1", "resmgr-2", "hostmgr-1", "hostmgr-2", "placement", "jobmgr"]) {
        const role = name.split("-")[0];
        const h = await health(cluster.url(name));
        assert.equal(h.status, "ok");
        assert.equal(h.role, role);
        const text = await metrics(cluster.url(name));
        assert.ok(sample(text, "peloton_http_inflight_requests", { daemon: role }) !== undefined, name);
        assert.ok(sample(text, "peloton_transport_queued_messages", { daemon: role }) !== undefined, name);
      }
      const rm = await metrics(cluster.url("resmgr-1"));
      assert.ok(
        sample(rm, "peloton_resmgr_entitlement_cpus", { pool: "/DefaultResPool" })! > 0,
        "entitlement",
      );
      assert.ok(sample(rm, "peloton_resmgr_queued_tasks", { pool: "/DefaultResPool" }) !== undefined);
      // What platform teams chart: queue delays (each of the six ran once), demand, fairness, throughput.
      const delays = "peloton_resmgr_queue_delay_seconds_count";
      assert.equal(sample(rm, delays, { pool: "/DefaultResPool" }), 6, "a queue delay per task run");
      assert.equal(
        sample(rm, "peloton_resmgr_demand_cpus", { pool: "/DefaultResPool" }),
        0,
        "nothing queued",
      );
      assert.equal(sample(rm, "peloton_resmgr_fairness"), 1, "one pool holding nothing it is not due");
      assert.equal(sample(rm, "peloton_leader"), 1);
      assert.equal(sample(await metrics(cluster.url("resmgr-2")), "peloton_leader"), 0);
      const pl = await metrics(cluster.url("placement"));
      assert.ok(sample(pl, "placement_tasks_placed_total")! >= 6, "placements counted");
      assert.ok(sample(pl, "placement_rounds_total")! >= 1);
      const hm = await metrics(cluster.url("hostmgr-1"));
      assert.equal(sample(hm, "peloton_hostmgr_hosts", { state: "HOST_STATE_UP" }), 2);
      assert.equal(sample(hm, "peloton_hostmgr_allocated_cpus"), 0, "every task ended");
      assert.ok(sample(hm, "peloton_internal_post_seconds_count")! > 0, "internal RPC latency");
      const jt = await metrics(jm());
      assert.ok(sample(jt, "peloton_jobmgr_task_queue_depth") !== undefined);
      const transitions = "peloton_jobmgr_task_transitions_total";
      assert.equal(sample(jt, transitions, { state: "SUCCEEDED" }), 6, "tasks ended, counted by state");
      assert.equal(sample(jt, transitions, { state: "FAILED" }), undefined, "none failed");
      assert.ok(sample(jt, "peloton_api_request_seconds_count", { procedure: create, code: "ok" })! >= 1);
      assert.ok(sample(jt, "peloton_api_request_seconds_bucket", { le: "0.1" }) !== undefined, "a histogram");

      // A leader frozen past its lease's TTL steps down when it wakes; the follower leads meanwhile.
      await freezeOutsideWrite(proc("resmgr-1").child, `${dir}/peloton.sqlite`);
      await waitFor(
        "resmgr-2 to lead",
        async () => (await health(cluster.url("resmgr-2"))).leader || undefined,
      );
      proc("resmgr-1").child.kill("SIGCONT");
      // The old leader steps down and stands by as a follower, rather than exiting.
      await waitFor(
        "resmgr-1 to step down",
        () =>
          Promise.resolve(
            /lost the resmgr lease; stepping down/.test(proc("resmgr-1").output()) || undefined,
          ),
      );
      await waitFor("resmgr-1 to stand by", async () => {
        const [old, now] = [await health(cluster.url("resmgr-1")), await health(cluster.url("resmgr-2"))];
        return old.status === "ok" && !old.leader && now.leader ? true : undefined;
      });
      // A host manager leader that dies: the follower takes over the cluster.
      await cluster.kill("hostmgr-1");
      await waitFor(
        "hostmgr-2 to lead",
        async () => (await health(cluster.url("hostmgr-2"))).leader || undefined,
      );
      await waitSucceeded(jm, await createJob(jm(), short));

      // SIGTERM while creates are in flight: each create answered OK is stored whole, and the exit is clean.
      const big = {
        config: {
          name: "big",
          type: "BATCH",
          owningTeam: "team6",
          instanceCount: 300,
          respoolID: { value: "" },
          defaultConfig: {
            resource: { cpuLimit: 0.1, memLimitMb: 4, diskLimitMb: 1 },
            command: { value: "true" },
          },
        },
      };
      const pools = await api(
        jm(),
        "peloton.api.respool.ResourceManager::LookupResourcePoolID",
        { path: { value: "/DefaultResPool" } },
        basic("peloton", "password1"),
      );
      big.config.respoolID.value = (await pools.json()).id.value;
      const answers = Array.from(
        { length: 6 },
        () =>
          api(jm(), create, big, basic("peloton", "password1")).then(
            async (r) => r.status === 200 ? (await r.json()).jobId?.value as string : undefined,
            () => undefined,
          ),
      );
      await Promise.race(answers);
      proc("jobmgr").child.kill("SIGTERM");
      const stopped = await proc("jobmgr").child.status;
      assert.equal(stopped.code, 0, "graceful exit");
      assert.match(proc("jobmgr").output(), /"msg":"daemon stopped"/);
      const created = (await Promise.all(answers)).filter((id): id is string => id !== undefined);
      assert.ok(created.length >= 1, "a create was answered before the stop");
      await cluster.start("jobmgr");
      for (const id of created) {
        const list = await cliEnv(jm(), ROOT_ENV, "task", "list", id, "-j");
        assert.equal(list.code, 0, list.err);
        assert.equal(
          Object.keys(JSON.parse(list.out).result.value).length,
          300,
          `job ${id} has all its tasks`,
        );
      }

      // Logs: besides the one line saying where it serves, every line a daemon printed is a JSON object.
      for (const [name, d] of cluster.daemons) {
        const lines = d.proc.output().trim().split("\n");
        for (const line of lines) {
          if (/^peloton \w+: (serving at|.*; exiting)/.test(line)) continue;
          const entry = JSON.parse(line);
          for (const k of ["ts", "level", "msg", "daemon"]) assert.ok(k in entry, `${name}: ${k} in ${line}`);
        }
        assert.ok(lines.some((l) => l.includes('"msg":"daemon started"')), `${name} logged its start`);
      }
    } catch (err) {
      console.error(cluster.tail(15));
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
