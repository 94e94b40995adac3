/**
 * The daemons as separate processes on one SQLite store: two job managers sharing the jobs by shard, two
 * resource managers (a leader and a follower), two placement engines, a host manager with local agents,
 * and Peloton's basic auth in front of it all.
 */
import assert from "node:assert/strict";
import { shardOf } from "./cluster/registry.ts";
import { batchJobYaml, DaemonCluster } from "./testing_cluster.ts";
import { cli, createDefaultPool, ROOT, waitFor } from "./testing.ts";

const AUTH = `${ROOT}/prod/auth/testdata/security_example.yaml`;
const ROOT_USER = ["--username", "peloton", "--password", "password1"];

async function health(url: string): Promise<Record<string, unknown>> {
  return await (await fetch(`${url}/health`)).json();
}

async function jobState(url: string, jobId: string): Promise<string | undefined> {
  const r = await cli(url, "job", "status", jobId, "-j", ...ROOT_USER);
  return r.code === 0 ? JSON.parse(r.out).state : undefined;
}

Deno.test({
  name: "separate daemons: job managers share the jobs, a follower forwards, a new leader takes over",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-daemons-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000, {
      jobmgr: ["--auth-config", AUTH],
      resmgr: ["--auth-config", AUTH],
      hostmgr: ["--auth-config", AUTH, "--agents", "2"],
      placement: ["--auth-config", AUTH],
    });
    try {
      await cluster.start("resmgr-1");
      await cluster.start("hostmgr");
      await Promise.all(["resmgr-2", "placement-1", "placement-2", "jobmgr-1"].map((n) => cluster.start(n)));
      await cluster.start("jobmgr-2");
      const [j1, j2] = [cluster.url("jobmgr-1"), cluster.url("jobmgr-2")];

      // The second job manager gets its half: the first hands shards over without anyone failing.
      const shards = await waitFor("both job managers to hold shards", async () => {
        const [a, b] = [await health(j1), await health(j2)];
        const [sa, sb] = [a.shards as number[], b.shards as number[]];
        return sa.length === 8 && sb.length === 8 ? [sa, sb] : undefined;
      }, 30_000);
      assert.deepEqual(shards[0].filter((k) => shards[1].includes(k)), [], "no shard held twice");

      // Auth: no credentials, or a role without the v0 job API, are refused before any daemon acts.
      const job = `${dir}/short.yaml`, long = `${dir}/long.yaml`;
      await Deno.writeTextFile(job, batchJobYaml("short", 4, "echo $PELOTON_INSTANCE_ID"));
      await Deno.writeTextFile(long, batchJobYaml("long", 2, "sleep 60"));
      const anon = await cli(j1, "job", "create", "/DefaultResPool", job);
      assert.equal(anon.code, 1);
      assert.match(anon.err, /unauthenticated: calls without credentials may not call/);
      const admin = await cli(
        j1,
        "job",
        "create",
        "/DefaultResPool",
        job,
        "--username",
        "admin",
        "--password",
        "password2",
      );
      assert.match(admin.err, /permission-denied/);

      // A call to the follower resource manager is forwarded to the leader.
      const followers = await Promise.all(
        ["resmgr-1", "resmgr-2"].map(async (n) => [n, await health(cluster.url(n))]),
      );
      const follower = followers.find(([, h]) => !(h as { leader: boolean }).leader)![0] as string;
      const leader = follower === "resmgr-1" ? "resmgr-2" : "resmgr-1";
      await createDefaultPool(cluster.url(follower), ...ROOT_USER);

      // Jobs created through either job manager (the CLI names each one's id) are driven by the job manager
      // holding their id's shard: writes reach the owner.
      const created: [string, string][] = [];
      for (const [url, file] of [[j1, job], [j2, job], [j1, long], [j2, job]]) {
        const r = await cli(url, "job", "create", "/DefaultResPool", file, ...ROOT_USER);
        assert.equal(r.code, 0, r.err);
        created.push([url, /^Job (\S+) created$/.exec(r.out)![1]]);
      }
      for (const [i, url] of [j1, j2].entries()) {
        const owned = created.filter(([, id]) => shards[i].includes(shardOf(id))).length;
        assert.equal((await health(url)).jobs, owned, `${url} drives the jobs of its shards`);
      }
      const longJob = created[2][1];
      await waitFor(
        "the long job to run",
        async () => (await jobState(j2, longJob)) === "RUNNING" || undefined,
      );
      const stop = await cli(j2, "job", "stop", longJob, ...ROOT_USER); // owned by jobmgr-1: forwarded
      assert.equal(stop.code, 0, stop.err);
      for (const [, id] of created) {
        const want = id === longJob ? "KILLED" : "SUCCEEDED";
        await waitFor(
          `job ${id} to be ${want}`,
          async () => (await jobState(j1, id)) === want || undefined,
          30_000,
        );
      }

      // Two placement engines never double-booked a host: every task ran once, its first run succeeding.
      for (const [, id] of created.filter(([, id]) => id !== longJob)) {
        const list = JSON.parse((await cli(j1, "task", "list", id, "-j", ...ROOT_USER)).out).result.value;
        for (const t of Object.values(list) as { runtime: { mesosTaskId: { value: string } } }[]) {
          assert.match(
            t.runtime.mesosTaskId.value,
            /-1$/,
            `${t.runtime.mesosTaskId.value} needed another run`,
          );
        }
      }

      // Sandbox files, forwarded to the host manager leader, are BrowseSandbox's: credentials go along.
      const [, shortJob] = created.find(([, id]) => id !== longJob)!;
      const logs = await cli(j2, "task", "logs", shortJob, "2", ...ROOT_USER);
      assert.equal(logs.code, 0, logs.err);
      assert.equal(logs.out, "2");
      const sandbox = await fetch(`${j2}/sandbox/${shortJob}-2-1/stdout`);
      assert.equal(sandbox.status, 401, await sandbox.text());

      // The resource manager leader dies; the follower takes over and the job managers send it their tasks.
      await cluster.kill(leader);
      await waitFor(
        "the follower to lead",
        async () => (await health(cluster.url(follower))).leader || undefined,
      );
      const after = await cli(j2, "job", "create", "/DefaultResPool", job, ...ROOT_USER);
      assert.equal(after.code, 0, after.err);
      const id = /^Job (\S+) created$/.exec(after.out)![1];
      await waitFor(
        "the job after the failover",
        async () => (await jobState(j1, id)) === "SUCCEEDED" || undefined,
        30_000,
      );

      const metrics = await (await fetch(`${cluster.url(follower)}/metrics`)).text();
      assert.match(
        metrics,
        /^peloton_resmgr_entitlement_cpus\{daemon="resmgr",instance="\w+",pool="\/DefaultResPool"\} \d/m,
      );
      assert.match(metrics, /^peloton_leader\{daemon="resmgr",instance="\w+"\} 1$/m);
      assert.match(await (await fetch(`${j1}/metrics`)).text(), /^peloton_api_request_seconds_count\{/m);
      // Each daemon serves the web UI; its API calls reach the right daemon through /api/v1.
      const ui = await fetch(`${cluster.url(follower)}/ui/`);
      assert.equal(ui.headers.get("content-type"), "text/html; charset=utf-8");
      assert.match(await ui.text(), /<title>/);
    } catch (err) {
      console.error(cluster.tail(15));
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
