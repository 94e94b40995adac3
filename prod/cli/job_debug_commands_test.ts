/**
 * `peloton job refresh|cache|active-list` (the v0 JobManager's debug calls) against `peloton up`, and against
 * two job managers as separate daemons sharing the jobs by shard.
 */
import assert from "node:assert/strict";
import { shardOf } from "../cluster/registry.ts";
import { batchJobYaml, DaemonCluster } from "../testing_cluster.ts";
import { cli, createDefaultPool, spawnCli, waitFor, waitForJobState, withUp } from "../testing.ts";

const UNKNOWN = "00000000-1111-4222-8333-444444444444";

const SERVICE_YAML = `
name: debug-web
type: SERVICE
instanceCount: 2
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  killGracePeriodSeconds: 1
  command: { shell: true, value: 'while true; do sleep 1; done' }
`;

async function create(url: string, file: string, ...flags: string[]): Promise<string> {
  const r = await cli(url, "job", "create", "/DefaultResPool", file, ...flags);
  assert.equal(r.code, 0, r.err);
  return /^Job (\S+) created$/.exec(r.out)![1];
}

async function activeIds(url: string): Promise<string[]> {
  const r = await cli(url, "job", "active-list", "-j");
  assert.equal(r.code, 0, r.err);
  return ((JSON.parse(r.out).ids ?? []) as { value: string }[]).map((i) => i.value);
}

Deno.test({
  name:
    "job cache shows a running service as held in memory, refresh re-runs it, active-list leaves out ended jobs",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-job-debug-", async (up, dir) => {
      await Deno.writeTextFile(`${dir}/web.yaml`, SERVICE_YAML);
      await Deno.writeTextFile(`${dir}/short.yaml`, batchJobYaml("debug-short", 1, "echo done"));
      const web = await create(up.url, `${dir}/web.yaml`);
      const short = await create(up.url, `${dir}/short.yaml`);
      await waitForJobState(up.url, web, ["RUNNING"]);
      await waitForJobState(up.url, short, ["SUCCEEDED"]);

      assert.deepEqual(await activeIds(up.url), [web], "the batch job has ended");
      // As a real process: its table on stdout, exit 0.
      const list = spawnCli(up.url, "job", "active-list");
      assert.equal(await list.exit(), 0, list.err());
      assert.deepEqual(list.lines(), [`${" ".repeat(web.length - 2)}ID|`, `${web}|`]);

      const cache = await cli(up.url, "job", "cache", web);
      assert.equal(cache.code, 0, cache.err);
      const held = JSON.parse(cache.out);
      assert.deepEqual(
        [held.config.type, held.config.instanceCount, held.config.respoolID?.value !== undefined],
        ["SERVICE", 2, true],
      );
      assert.deepEqual([held.runtime.state, held.runtime.goalState], ["RUNNING", "RUNNING"]);
      assert.equal(held.runtime.taskStats.RUNNING, 2);

      const refresh = await cli(up.url, "job", "refresh", web);
      assert.deepEqual([refresh.code, refresh.out], [0, `Job ${web}: refresh requested`], refresh.err);
      // A refresh of a job that is as it should be changes nothing: its tasks run on, in their first run.
      const tasks = JSON.parse((await cli(up.url, "task", "list", web, "-j")).out).result.value as Record<
        string,
        { runtime: { state: string; mesosTaskId: { value: string } } }
      >;
      assert.deepEqual(
        Object.values(tasks).map((t) => [t.runtime.state, t.runtime.mesosTaskId.value.endsWith("-1")]),
        [["RUNNING", true], ["RUNNING", true]],
      );
      assert.equal(JSON.parse((await cli(up.url, "job", "cache", web)).out).runtime.state, "RUNNING");

      // Bad input: the id named, or the argument missing.
      const bad = await cli(up.url, "job", "cache", "web");
      assert.equal(bad.code, 1);
      assert.equal(
        bad.err,
        "peloton job cache: peloton.api.job.JobManager::GetCache: invalid-argument: " +
          'id: got {"value":"web"}, expected a job id',
      );
      const badRefresh = await cli(up.url, "job", "refresh", "web");
      assert.equal(badRefresh.code, 1);
      assert.match(badRefresh.err, /invalid-argument: id: got \{"value":"web"\}, expected a job id$/);
      const unknown = await cli(up.url, "job", "refresh", UNKNOWN);
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, new RegExp(`not-found: job ${UNKNOWN} not found$`));
      const notHeld = await cli(up.url, "job", "cache", UNKNOWN);
      assert.match(notHeld.err, new RegExp(`not-found: job ${UNKNOWN} not found in cache$`));
      const missing = await cli(up.url, "job", "cache");
      assert.equal(missing.code, 2);
      assert.match(missing.err, /^peloton job cache: missing JOB/);
      assert.equal((await cli(up.url, "job", "active-list", web)).code, 2, "active-list takes no JOB");

      assert.equal((await cli(up.url, "job", "stop", web)).code, 0);
      await waitForJobState(up.url, web, ["KILLED"]);
      const none = await cli(up.url, "job", "active-list");
      assert.deepEqual([none.code, none.out], [0, "No active jobs"]);
    }, ["--agents", "2"]);
  },
});

Deno.test({
  name:
    "two job managers: active-list from either lists both one's jobs; cache and refresh reach the job's owner",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-job-debug-daemons-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000);
    try {
      // No placement engine: the jobs stay PENDING, active, for as long as the test looks.
      await cluster.start("resmgr");
      await cluster.start("jobmgr-1");
      await cluster.start("jobmgr-2");
      const [j1, j2] = [cluster.url("jobmgr-1"), cluster.url("jobmgr-2")];
      const shardsOf = async (url: string) =>
        ((await (await fetch(`${url}/health`)).json()).shards ?? []) as number[];
      await waitFor("both job managers to hold shards", async () => {
        const [a, b] = [await shardsOf(j1), await shardsOf(j2)];
        return a.length === 8 && b.length === 8 || undefined;
      });
      await createDefaultPool(j1);
      await Deno.writeTextFile(`${dir}/job.yaml`, batchJobYaml("debug-pending", 1, "echo hi"));
      // A job in a shard of each job manager's (the CLI names the id).
      const [s1, s2] = [await shardsOf(j1), await shardsOf(j2)];
      const idIn = (shards: number[]) => {
        for (;;) {
          const id = crypto.randomUUID();
          if (shards.includes(shardOf(id))) return id;
        }
      };
      const first = await create(j1, `${dir}/job.yaml`, "-i", idIn(s1));
      const second = await create(j2, `${dir}/job.yaml`, "-i", idIn(s2));

      // Its own memory holds only its job; the private service's cache query shows it.
      const cached = async (url: string) =>
        (JSON.parse((await cli(url, "jobmgr", "query-job-cache", "-j")).out).result ?? [])
          .map((j: { jobId: { value: string } }) => j.jobId.value);
      assert.deepEqual(await cached(j1), [first]);
      assert.deepEqual(await cached(j2), [second]);
      // The store is shared: either lists both (the order, oldest first, is the unit tests').
      assert.deepEqual((await activeIds(j1)).sort(), [first, second].sort());
      assert.deepEqual((await activeIds(j2)).sort(), [first, second].sort());

      // A call naming a job goes to its owner, whichever job manager is asked.
      for (const [url, id] of [[j1, second], [j2, first]]) {
        const cache = await cli(url, "job", "cache", id);
        assert.equal(cache.code, 0, cache.err);
        assert.equal(JSON.parse(cache.out).runtime.state, "PENDING");
        const refresh = await cli(url, "job", "refresh", id);
        assert.equal(refresh.code, 0, refresh.err);
      }
      assert.deepEqual(await cached(j1), [first], "a refresh forwarded to the owner loads nothing here");
    } catch (err) {
      console.error(cluster.tail());
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
