import assert from "node:assert/strict";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";
import { JOB_SERVICE, jobConfigJson } from "./job_api.ts";
import { type ArchiveRun, DEFAULT_ARCHIVER_CONFIG, JobArchiver } from "./archiver.ts";
import type { ArchivedJob, ArchiveSink } from "../ports/archive.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import type { Metrics } from "../ports/metrics.ts";

const OLD = "aaaaaaaa-0000-4000-8000-000000000001";
const OLDER = "aaaaaaaa-0000-4000-8000-000000000002";
const RECENT = "aaaaaaaa-0000-4000-8000-000000000003";
const RUNNING = "aaaaaaaa-0000-4000-8000-000000000004";
const SERVICE = "aaaaaaaa-0000-4000-8000-000000000005";

const RETENTION = 10_000;
const CONFIG = { ...DEFAULT_ARCHIVER_CONFIG, retentionMs: RETENTION };

/** Exports into memory; `fail` makes the next write fail, `during` runs while a write is in progress. */
class MemorySink implements ArchiveSink {
  readonly written: ArchivedJob[] = [];
  fail?: Error;
  during?: () => void;

  write(jobs: ArchivedJob[]): Promise<void> {
    this.during?.();
    if (this.fail) return Promise.reject(this.fail);
    this.written.push(...structuredClone(jobs));
    return Promise.resolve();
  }
}

/** Runs a job's instances to `end` through placement, launch and statuses. */
function finish(rig: JobmgrRig, jobId: string, instances: number[], end: "TASK_FINISHED" | "TASK_FAILED") {
  const tasks = instances.map((i) => ({ taskId: rig.taskId(i, jobId), ports: {} }));
  // Polls the job manager sent again while the test's clock ran on: the newest is answered.
  const poll = rig.transport.take("get-placements", "resmgr").at(-1)!;
  const placements = [{ leaseId: `h1#${jobId}`, hostname: "h1", agentId: "agent-h1", tasks }];
  rig.jm.receive({ kind: "placements", reqId: poll.reqId, placements, changes: [], preemptions: [] });
  rig.tick();
  rig.transport.take("launch-tasks");
  for (const i of instances) rig.status(rig.taskId(i, jobId), "TASK_RUNNING");
  for (const i of instances) rig.status(rig.taskId(i, jobId), end);
  rig.store.settle();
  rig.tick();
}

/** Lets a run go through its store reads and deletes, making each write durable as it comes. */
async function settled(rig: JobmgrRig, run: Promise<ArchiveRun>): Promise<ArchiveRun> {
  let result: ArchiveRun | undefined;
  run.then((r) => (result = r));
  for (let i = 0; i < 200 && !result; i++) {
    await rig.reads();
    rig.store.settle();
  }
  assert.ok(result, "the run ended");
  return result;
}

/**
 * OLDER ends at 0 s, OLD at 1 s, RECENT at 15 s; RUNNING still runs; SERVICE (a stateless job) was stopped
 * at 0 s. The clock ends at 20 s, so with a 10 s retention OLDER and OLD are old enough.
 */
function cluster(metrics?: Metrics): JobmgrRig {
  const rig = new JobmgrRig({}, metrics ? { metrics } : {});
  rig.create({ instanceCount: 2 }, OLDER);
  rig.create({ instanceCount: 1 }, OLD);
  rig.create({ instanceCount: 1 }, RECENT);
  rig.create({ instanceCount: 1 }, RUNNING);
  rig.create({ instanceCount: 1, type: "SERVICE" }, SERVICE);
  finish(rig, OLDER, [0, 1], "TASK_FINISHED");
  rig.call(JOB_SERVICE, "Stop", { id: { value: SERVICE } });
  rig.replies();
  for (const k of rig.transport.take("kill-tasks").flatMap((m) => m.tasks)) {
    rig.status(k.taskId, "TASK_KILLED");
  }
  rig.tick(1_000);
  finish(rig, OLD, [0], "TASK_FAILED");
  rig.tick(14_000);
  finish(rig, RECENT, [0], "TASK_FINISHED");
  rig.tick(5_000);
  rig.store.settle();
  return rig;
}

Deno.test("archiver: batch jobs ended longer ago than the retention are exported, then deleted with their tasks", async () => {
  const rig = cluster();
  assert.equal(rig.job(SERVICE).runtime.state, "KILLED");
  assert.equal(rig.store.jobs.get(OLDER)!.runtime.state, "SUCCEEDED");
  assert.equal(rig.store.jobs.get(OLD)!.runtime.state, "FAILED");
  const sink = new MemorySink();
  const run = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());

  assert.deepEqual(run, { archived: [OLDER, OLD], skipped: [] }, "oldest first");
  assert.deepEqual(sink.written.map((a) => a.job.jobId), [OLDER, OLD]);
  assert.deepEqual(sink.written[0].tasks.map((t) => [t.instanceId, t.state]), [[0, "SUCCEEDED"], [
    1,
    "SUCCEEDED",
  ]]);
  assert.equal(sink.written[1].job.runtime.state, "FAILED");
  assert.equal(sink.written[0].archivedAtMs, 20_000);
  for (const id of [OLDER, OLD]) {
    assert.equal(rig.store.jobs.get(id), undefined, `${id} left the store`);
    assert.equal(rig.store.task(id, 0), undefined, `${id}'s tasks left the store`);
    assert.equal(rig.jm.jobs.get(id), undefined, `${id} left the job manager's memory`);
  }
  for (const id of [RECENT, RUNNING, SERVICE]) assert.ok(rig.store.jobs.get(id), `${id} stays`);

  rig.api("job", "Get", { id: { value: OLD } });
  await rig.reads();
  assert.deepEqual(rig.replies()[0].body, {
    error: { notFound: { id: { value: OLD }, message: `job ${OLD} not found` } },
  });

  const again = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(again, { archived: [], skipped: [] }, "nothing twice");
});

Deno.test("archiver: a sink that fails deletes nothing; a Write lockdown stops runs; only jobs this job manager owns go", async () => {
  const rig = cluster();
  const sink = new MemorySink();
  sink.fail = new Error("disk full");
  const failed = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(failed, { archived: [], skipped: [], error: "disk full" });
  assert.ok(rig.store.jobs.get(OLDER) && rig.store.jobs.get(OLD), "both old jobs stay");

  sink.fail = undefined;
  rig.call("peloton.api.v1alpha.admin.svc.AdminService", "Lockdown", { components: ["Write"] });
  rig.replies();
  const locked = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(locked, { archived: [], skipped: [], error: "writes are locked down" });
  assert.equal(sink.written.length, 0);
  rig.call("peloton.api.v1alpha.admin.svc.AdminService", "RemoveLockdown", { components: ["Write"] });
  rig.replies();

  const mine = await settled(
    rig,
    new JobArchiver(rig.jm, CONFIG, { sink, owns: (id) => id !== OLDER }).runOnce(),
  );
  assert.deepEqual(mine, { archived: [OLD], skipped: [] });
  assert.ok(rig.store.jobs.get(OLDER), "another job manager's job is left to it");
});

Deno.test("archiver: a job resized while it was exported is not deleted", async () => {
  const rig = cluster();
  const sink = new MemorySink();
  sink.during = () => {
    sink.during = undefined;
    const config = makeJobConfig({ instanceCount: 2 });
    rig.api("job", "Update", { id: { value: OLD }, config: jobConfigJson(config) });
  };
  const run = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(run, { archived: [OLDER], skipped: [OLD] });
  assert.notEqual(rig.store.jobs.get(OLD)?.runtime.state, "FAILED", "running again");
  assert.equal(rig.job(OLD).config.instanceCount, 2);
});

Deno.test("archiver: runs on its timer, every period, and again soon while a run hit its limit", async () => {
  const rig = cluster();
  const sink = new MemorySink();
  const archiver = new JobArchiver(rig.jm, {
    ...CONFIG,
    maxJobsPerRun: 1,
    initialDelayMs: 1_000,
    backlogDelayMs: 2_000,
    periodMs: 60_000,
  }, { sink });
  archiver.start();
  const ids = () => sink.written.map((a) => a.job.jobId);
  // A run's next timer is set once its promises settle: the clock moves a second at a time between them.
  const wait = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1_000) {
      rig.tick(Math.min(left, 1_000));
      for (let i = 0; i < 20; i++) {
        await rig.reads();
        rig.store.settle();
      }
    }
  };
  await wait(999);
  assert.deepEqual(ids(), [], "not before the initial delay");
  await wait(1);
  assert.deepEqual(ids(), [OLDER], "one job: the run's limit");
  await wait(2_000);
  assert.deepEqual(ids(), [OLDER, OLD], "the backlog's next run");
  // At 25 s RECENT (ended at 15 s) is not yet older than the retention: that run finds no backlog, so
  // the next comes a period later.
  await wait(2_000);
  assert.deepEqual(ids(), [OLDER, OLD]);
  await wait(59_999);
  assert.deepEqual(ids(), [OLDER, OLD]);
  await wait(1);
  assert.deepEqual(ids(), [OLDER, OLD, RECENT]);
  finish(rig, RUNNING, [0], "TASK_FINISHED");
  await archiver.stop();
  await wait(200_000);
  assert.deepEqual(ids(), [OLDER, OLD, RECENT], "stopped");
});

Deno.test("archiver: a retention of 0 never runs", async () => {
  const rig = cluster();
  const sink = new MemorySink();
  const archiver = new JobArchiver(rig.jm, { ...CONFIG, retentionMs: 0 }, { sink });
  archiver.start();
  rig.tick(10 * 86_400_000);
  await rig.reads();
  assert.equal(sink.written.length, 0);
  await archiver.stop();
});

Deno.test("archiver: a large run goes a chunk of 50 jobs at a time; a sink failing midway leaves the rest", async () => {
  const rig = new JobmgrRig();
  const ids = Array.from({ length: 120 }, (_, i) => `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, "0")}`);
  for (const id of ids) {
    rig.create({ instanceCount: 1 }, id);
    finish(rig, id, [0], "TASK_FINISHED");
  }
  rig.tick(RETENTION + 1);
  const sink = new MemorySink();
  const sizes: number[] = [];
  const write = sink.write.bind(sink);
  sink.write = (jobs) => {
    sizes.push(jobs.length);
    if (sizes.length === 2) return Promise.reject(new Error("disk full"));
    return write(jobs);
  };
  const run = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(sizes, [50, 50], "the second chunk's export failed, and the run stopped there");
  assert.equal(run.error, "disk full");
  assert.deepEqual(run.archived, ids.slice(0, 50), "the first chunk was exported and deleted");
  assert.equal(rig.store.jobs.size, 70, "the rest stays");

  sizes.length = 0;
  sink.write = write;
  const rest = await settled(rig, new JobArchiver(rig.jm, CONFIG, { sink }).runOnce());
  assert.deepEqual(rest.archived, ids.slice(50));
  assert.deepEqual(sink.written.map((a) => a.job.jobId), ids, "each exported once, oldest first");
  assert.equal(rig.store.jobs.size, 0);
});

/** Counters by name and labels (`name{k=v}`); gauges and histograms are not kept. */
function countingMetrics(): Metrics & { counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const noop = { set() {}, observe() {} };
  return {
    counts,
    counter: (name, labels = {}) => {
      const key = `${name}{${Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",")}}`;
      return { inc: (by = 1) => void counts.set(key, (counts.get(key) ?? 0) + by) };
    },
    gauge: () => noop,
    histogram: () => noop,
  };
}

Deno.test("archiver: a stop during a run reads and exports nothing more, and deletes nothing", async () => {
  const metrics = countingMetrics();
  const rig = cluster(metrics);
  const sink = new MemorySink();
  const logs: string[] = [];
  const archiver = new JobArchiver(rig.jm, CONFIG, { sink, log: (msg) => logs.push(msg) });
  const running = archiver.runOnce();
  const stopped = archiver.stop();
  const run = await settled(rig, running);
  await stopped;
  assert.deepEqual(run, { archived: [], skipped: [], error: "stopped" });
  assert.deepEqual(sink.written, [], "nothing exported after the stop");
  for (const id of [OLDER, OLD]) assert.ok(rig.store.jobs.get(id), `${id} stays`);
  // Counted and logged as stopped, not as a failed run an operator would be alerted to.
  assert.equal(metrics.counts.get("peloton_archiver_runs_total{result=stopped}"), 1);
  assert.equal(metrics.counts.get("peloton_archiver_runs_total{result=failed}"), undefined);
  assert.deepEqual(logs, ["job archiver run stopped"]);
});
