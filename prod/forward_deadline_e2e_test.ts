/**
 * Calls passed on to a job shard owner that froze (SIGSTOP): bounded by the call's deadline and by the lease
 * TTL, looked up again when they time out, and never carried out once their deadline has passed.
 */
import assert from "node:assert/strict";
import { shardOf } from "./cluster/registry.ts";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { STALE_READ_HEADER } from "./daemons/process.ts";
import { batchJobYaml, DaemonCluster, health, testDatabaseUrl, twoJobManagers } from "./testing_cluster.ts";
import { cli, createDefaultPool, waitFor } from "./testing.ts";

/** An API call with a deadline; the client gives up 5 s after it, as a hung call would. */
async function api(url: string, procedure: string, body: unknown, ttlMs: number) {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/api/v1`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "rpc-procedure": procedure,
        "context-ttl-ms": String(ttlMs),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ttlMs + 5_000),
    });
    const text = await res.text();
    return {
      code: res.headers.get("rpc-error-code"),
      text,
      headers: res.headers,
      ms: performance.now() - started,
    };
  } catch (e) {
    return {
      code: "client-gave-up",
      text: String(e),
      headers: new Headers(),
      ms: performance.now() - started,
    };
  }
}

Deno.test({
  name: "a call passed on to a frozen shard owner is bounded, goes to the new owner once the shard moved, " +
    "and is not carried out when the frozen owner resumes after its deadline",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-forward-deadline-" });
    const store = testDatabaseUrl("forward_deadline");
    const ttl = 6_000;
    const cluster = new DaemonCluster(store, dir, ttl, { hostmgr: ["--agents", "2"] });
    let frozen: Deno.ChildProcess | undefined;
    try {
      const { j1, j2, jobOfJ1: job } = await twoJobManagers(cluster, 60_000);
      await createDefaultPool(j1);
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, batchJobYaml("frozen", 2, "sleep 600"));
      const created = await cli(j1, "job", "create", "/DefaultResPool", file, "-i", job);
      assert.equal(created.code, 0, created.err);
      const tasks = async () => {
        const r = await cli(j2, "task", "list", job, "-j");
        const list = JSON.parse(r.out).result.value as Record<string, { runtime: { state: string } }>;
        return Object.fromEntries(Object.entries(list).map(([k, t]) => [k, t.runtime.state]));
      };
      await waitFor("both tasks to run", async () => {
        const s = await tasks();
        return s["0"] === "RUNNING" && s["1"] === "RUNNING" || undefined;
      }, 60_000);

      frozen = cluster.daemons.get("jobmgr-1")!.proc.child;
      frozen.kill("SIGSTOP");
      // A read with a short deadline: answered from the store before it, saying so.
      const read = await api(j2, "peloton.api.job.JobManager::Get", { id: { value: job } }, 2_000);
      assert.equal(read.code, null, `${read.code} ${read.text}`);
      assert.match(read.headers.get(STALE_READ_HEADER) ?? "", /cannot be reached/);
      assert.ok(read.ms < 2_000, `the read took ${read.ms} ms`);
      // A write with a short deadline: unavailable before it, naming the frozen owner's address.
      const stop0 = await api(j2, "peloton.api.task.TaskManager::Stop", {
        jobId: { value: job },
        ranges: [{ from: 0, to: 1 }],
      }, 2_000);
      assert.equal(stop0.code, "unavailable", stop0.text);
      assert.ok(stop0.text.includes(j1), stop0.text);
      assert.ok(stop0.ms < 2_000, `the write took ${stop0.ms} ms`);
      // A write with a long deadline: carried out by the new owner once the shard moved (which, with the
      // owner's lease to run out and the shard's jobs to load, takes 10-20 s on a loaded machine, and over
      // 35 s was seen while the whole suite ran on 2 cores).
      const stop1 = await api(j2, "peloton.api.task.TaskManager::Stop", {
        jobId: { value: job },
        ranges: [{ from: 1, to: 2 }],
      }, 90_000);
      assert.equal(stop1.code, null, stop1.text);
      assert.ok(stop1.ms < 85_000, `the write took ${stop1.ms} ms`);
      assert.ok(((await health(j2)).shards as number[]).includes(shardOf(job)));

      frozen.kill("SIGCONT");
      frozen = undefined;
      await waitFor("instance 1 to be killed", async () => (await tasks())["1"] === "KILLED" || undefined);
      // The frozen owner resumed with the first stop queued, long past its deadline: it did not carry it out.
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal((await tasks())["0"], "RUNNING");
    } catch (err) {
      console.error(cluster.tail(30));
      throw err;
    } finally {
      frozen?.kill("SIGCONT");
      await cluster.stopAll().catch((e) => console.error(e));
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
