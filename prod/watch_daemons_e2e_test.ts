/**
 * The WatchService with separate daemons: a pod watch of a job is served by the job's owner whichever process
 * it is asked of (its stream passed on through the one asked), and a Cancel, asked of any process, reaches
 * the job manager its watch id names.
 */
import assert from "node:assert/strict";
import { shardOf } from "./cluster/registry.ts";
import { DaemonCluster } from "./testing_cluster.ts";
import { cli, type CliProcess, createDefaultPool, ROOT, spawnCli, waitFor } from "./testing.ts";

const SPEC =
  `${ROOT}/core/model/testdata/peloton/tests/integration/test_configs/test_stateless_job_spec.yaml`;

/** The first line of `peloton watch`: the watch's id. */
const WATCH_ID = /^Watch (\S+)$/;

async function health(url: string): Promise<{ instance: string; shards: number[] }> {
  return await (await fetch(`${url}/health`)).json();
}

Deno.test({
  name:
    "separate daemons: a pod watch is served by the job's owner; Cancel reaches the watch from any process",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-watch-daemons-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000, {
      hostmgr: ["--agents", "2"],
    });
    const children: CliProcess[] = [];
    try {
      await cluster.start("resmgr");
      await cluster.start("hostmgr");
      await Promise.all(["placement", "jobmgr-1"].map((n) => cluster.start(n)));
      await cluster.start("jobmgr-2");
      const [j1, j2, rm] = [cluster.url("jobmgr-1"), cluster.url("jobmgr-2"), cluster.url("resmgr")];
      const [h1, h2] = await waitFor("both job managers to hold shards", async () => {
        const [a, b] = [await health(j1), await health(j2)];
        return a.shards.length === 8 && b.shards.length === 8 ? [a, b] : undefined;
      }, 30_000);
      await createDefaultPool(rm);

      // A job of jobmgr-1's, watched through jobmgr-2: the watch lives with jobmgr-1.
      let job = crypto.randomUUID();
      while (!h1.shards.includes(shardOf(job))) job = crypto.randomUUID();
      const pods = spawnCli(j2, "watch", "pod", job);
      children.push(pods);
      const podWatch = await pods.waitLine(WATCH_ID);
      assert.match(podWatch, new RegExp(`^pod-\\d+@jobmgr@${h1.instance}$`));
      // Every stateless job, asked of jobmgr-2: its own jobs only, and the watch is its.
      const jobs = spawnCli(j2, "watch", "job");
      children.push(jobs);
      const jobWatch = await jobs.waitLine(WATCH_ID);
      assert.match(jobWatch, new RegExp(`^job-\\d+@jobmgr@${h2.instance}$`));

      const created = await cli(j2, "job", "stateless", "create", "/DefaultResPool", SPEC, "0", "-i", job);
      assert.equal(created.code, 0, created.err);
      await waitFor("the three pods RUNNING through the forwarded stream", () =>
        Promise.resolve(
          [0, 1, 2].every((i) =>
            pods.lines().some((l) => l.includes(`  ${job}-${i}  POD_STATE_RUNNING  `))
          ) ||
            undefined,
        ), 30_000);
      assert.deepEqual(jobs.lines(), [`Watch ${jobWatch}`], "jobmgr-2 drives none of jobmgr-1's jobs");

      // Cancels asked of the other job manager, and of a process with none: each reaches its watch.
      const cancelPods = await cli(j2, "watch", "cancel", podWatch);
      assert.equal(cancelPods.code, 0, cancelPods.err);
      assert.equal(await pods.exit(), 0, pods.err());
      assert.equal(pods.lines().at(-1), `watch cancelled: ${podWatch}`);
      const cancelJobs = await cli(rm, "watch", "cancel", jobWatch);
      assert.equal(cancelJobs.code, 0, cancelJobs.err);
      assert.equal(await jobs.exit(), 0, jobs.err());
      // A watch of a job manager that is not running is not found, wherever asked.
      const gone = await cli(j1, "watch", "cancel", "pod-1@jobmgr@00000000");
      assert.equal(gone.code, 1);
      assert.match(gone.err, /not-found: watch pod-1@jobmgr@00000000 not found: its job manager/);

      // A process that stops cuts the streams it passes on, rather than wait for them to end.
      const passed = spawnCli(j2, "watch", "pod", job);
      children.push(passed);
      const passedWatch = await passed.waitLine(WATCH_ID);
      const stopped = performance.now();
      await cluster.daemons.get("jobmgr-2")!.proc.stop();
      assert.ok(performance.now() - stopped < 8_000, "jobmgr-2 stopped without waiting for the stream");
      assert.equal(await passed.exit(), 1);
      assert.match(passed.err(), /unavailable: the stream (broke|ended without its last line)/);
      // The client is gone from jobmgr-1's view too: the watch was cancelled there.
      await waitFor("jobmgr-1 to cancel the watch whose stream was cut", async () => {
        const r = await cli(j1, "watch", "cancel", passedWatch);
        return r.code === 1 && /not-found/.test(r.err) ? true : undefined;
      }, 10_000);
      assert.equal((await cli(j1, "job", "stop", job)).code, 0);
    } catch (err) {
      console.error(cluster.tail());
      throw err;
    } finally {
      for (const c of children) await c.stop();
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
