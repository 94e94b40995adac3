/**
 * The job archiver against real processes: `peloton up` (SQLite) and separate job managers on one store
 * export batch jobs that ended longer ago than `--archive-after` and delete them; running jobs stay.
 */
import assert from "node:assert/strict";
import type { ArchivedJob } from "../core/ports/archive.ts";
import { readArchive } from "./archive_file.ts";
import { batchJobYaml, DaemonCluster } from "./testing_cluster.ts";
import {
  cli,
  createDefaultPool,
  runPeloton,
  startUp,
  type UpProcess,
  waitFor,
  waitForJobState,
} from "./testing.ts";

const ARCHIVE = ["--archive-after", "2s", "--archive-every", "1s"];

async function createJob(url: string, dir: string, name: string, count: number, command: string) {
  const file = `${dir}/${name}.yaml`;
  await Deno.writeTextFile(file, batchJobYaml(name, count, command));
  const r = await cli(url, "job", "create", "/DefaultResPool", file);
  assert.equal(r.code, 0, r.err);
  return /^Job (\S+) created$/.exec(r.out)![1];
}

/** Every job in the archive dir's files. */
async function archived(dir: string): Promise<ArchivedJob[]> {
  const out: ArchivedJob[] = [];
  try {
    for await (const f of Deno.readDir(dir)) {
      if (f.name.endsWith(".ndjson")) out.push(...await readArchive(`${dir}/${f.name}`));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out;
}

function waitArchived(url: string, archiveDir: string, jobId: string): Promise<ArchivedJob> {
  return waitFor(`job ${jobId} to be archived`, async () => {
    const gone = await cli(url, "job", "get", jobId);
    if (gone.code === 0) return undefined;
    assert.match(gone.err, /not found/);
    return (await archived(archiveDir)).find((a) => a.job.jobId === jobId);
  });
}

Deno.test({
  name:
    "peloton up --archive-after: a finished batch job is exported with its tasks, then deleted; a running one stays",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-archiver-" });
    let up: UpProcess | undefined;
    try {
      const bad = await runPeloton(["up", "--data-dir", `${dir}/bad`, "--archive-after", "2 weeks"]);
      assert.equal(bad.code, 2, bad.err);
      assert.match(
        bad.err,
        /--archive-after: got "2 weeks", expected a duration such as 30d, 12h, 90s or 500ms/,
      );

      up = await startUp(`${dir}/peloton`, ["--agents", "2", ...ARCHIVE]);
      await createDefaultPool(up.url);
      const done = await createJob(up.url, dir, "done", 2, "true");
      const running = await createJob(up.url, dir, "running", 1, "sleep 600");
      assert.equal(await waitForJobState(up.url, done, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");

      const record = await waitArchived(up.url, `${dir}/peloton/archive`, done);
      assert.equal(record.job.config.name, "done");
      assert.equal(record.job.runtime.state, "SUCCEEDED");
      assert.deepEqual(record.tasks.map((t) => [t.instanceId, t.state]), [[0, "SUCCEEDED"], [
        1,
        "SUCCEEDED",
      ]]);
      assert.ok(record.archivedAtMs - record.job.runtime.completionTimeMs! >= 2_000, "not before its time");
      const listed = await cli(up.url, "task", "list", done);
      assert.notEqual(listed.code, 0, "its tasks went with it");

      const metrics = await (await fetch(`${up.url}/metrics`)).text();
      assert.match(metrics, /^peloton_archiver_jobs_archived_total(\{[^}]*\})? 1$/m);
      assert.equal((await cli(up.url, "job", "get", running)).code, 0, "a running job stays");
      assert.equal((await archived(`${dir}/peloton/archive`)).length, 1, "exported once");
    } catch (err) {
      if (up) console.error(up.output());
      throw err;
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "separate job managers on one store each archive the jobs of the shards they hold, into files of their own",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-archiver-daemons-" });
    // A lease with room for a loaded CI machine: a daemon's own SQLite commit still blocks its event loop
    // while it syncs to disk (node:sqlite is synchronous); waits for another's lock no longer do.
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 8000, {
      hostmgr: ["--agents", "2"],
      jobmgr: ARCHIVE,
    });
    try {
      await cluster.start("resmgr");
      await cluster.start("hostmgr");
      await Promise.all(["placement", "jobmgr-1", "jobmgr-2"].map((n) => cluster.start(n)));
      await createDefaultPool(cluster.url("resmgr"));
      // Both hold shards before jobs are created: the first to start takes them all and hands half back
      // two balancing ticks later, and a job manager holding none refuses a Create ("holds no shard yet").
      for (const name of ["jobmgr-1", "jobmgr-2"]) {
        await waitFor(`${name} to hold shards`, async () => {
          const health = await (await fetch(`${cluster.url(name)}/health`)).json();
          return health.shards?.length > 0 || undefined;
        });
      }
      const url = cluster.url("jobmgr-1");
      const jobs = [];
      for (let i = 0; i < 4; i++) jobs.push(await createJob(url, dir, `done-${i}`, 1, "true"));
      for (const id of jobs) {
        assert.equal(await waitForJobState(url, id, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");
      }
      for (const id of jobs) await waitArchived(url, `${dir}/archive`, id);
      const all = await archived(`${dir}/archive`);
      assert.deepEqual(all.map((a) => a.job.jobId).sort(), [...jobs].sort(), "each job exported once");
      const files = [];
      for await (const f of Deno.readDir(`${dir}/archive`)) files.push(f.name);
      assert.ok(files.every((f) => /^jobs-[0-9a-f]{8}-\d{4}-\d\d-\d\d\.ndjson$/.test(f)), files.join(", "));
    } catch (err) {
      console.error(cluster.tail());
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
