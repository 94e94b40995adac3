import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeStatelessSpec } from "../testing/fixtures.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { entityVersion } from "./api_json.ts";
import { StoreUnavailableError } from "../ports/store.ts";

/** The job's entity version, which a JobService write must name. */
const versionOf = (rig: JobmgrRig) => ({ value: entityVersion(rig.job()) });

const SPEC = makeStatelessSpec(4);

/** A job manager started over the rig's store, as production recovers one: active jobs and workflows. */
async function restart(rig: JobmgrRig): Promise<JobManager> {
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.tick();
  return jm;
}

Deno.test("a rolling CreateJob is answered once its START workflow is stored; after a crash the start still rolls", async () => {
  // A lost write ends the process, as in production (here: its engines stop).
  const rig: JobmgrRig = new JobmgrRig({}, { onLostWrite: () => rig.jm.stop() });
  rig.call(STATELESS_SERVICE, "CreateJob", {
    jobId: { value: JOB_ID },
    spec: SPEC,
    createSpec: { batchSize: 2 },
  });
  rig.answerPool();
  // The store fails after the create's first write: the process dies on the next one.
  rig.store.failNextWrite(new Error("the store went away"));
  rig.store.settle();
  rig.tick();
  const [reply] = rig.repliesSoFar();
  assert.equal(reply?.error, undefined, JSON.stringify(reply));
  const stored = [...rig.store.updates.values()].filter((u) => u.jobId === JOB_ID);
  assert.deepEqual(stored.map((u) => [u.type, u.config.batchSize]), [["START", 2]], "the workflow is stored");
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.updateId, stored[0].updateId);

  const jm = await restart(rig);
  assert.equal(jm.updates.get(stored[0].updateId)?.type, "START");
  const gangs = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(gangs.flatMap((g) => g.tasks.map((t) => t.taskId)), [`${JOB_ID}-0-1`, `${JOB_ID}-1-1`]);
  const states = [...jm.jobs.get(JOB_ID)!.tasks.values()].map((t) => t.state);
  assert.deepEqual(states, ["PENDING", "PENDING", "INITIALIZED", "INITIALIZED"], "the rest wait their batch");
});

Deno.test("a rolling CreateJob whose write fails is answered with the error and leaves no workflow behind", () => {
  // A store out of reach is `unavailable` (the client may call again); any other failure is `internal`.
  for (
    const [err, code] of [
      [new Error("disk full"), "internal"],
      [new StoreUnavailableError("the store cannot be reached: connect ECONNREFUSED"), "unavailable"],
    ] as const
  ) {
    const rig = new JobmgrRig();
    rig.call(STATELESS_SERVICE, "CreateJob", {
      jobId: { value: JOB_ID },
      spec: SPEC,
      createSpec: { batchSize: 2 },
    });
    rig.store.failNextWrite(err);
    rig.answerPool();
    const [reply] = rig.replies();
    assert.equal(reply.error?.code, code);
    assert.match(reply.error!.message, new RegExp(`^storing .*: ${err.message}$`));
    assert.equal(rig.jm.jobs.get(JOB_ID), undefined);
    assert.equal(rig.jm.updates.size, 0);
    assert.equal(rig.store.updates.size, 0);
  }
});

/** Makes the store fail the next job delete (the writes around it go through). */
function failNextDelete(rig: JobmgrRig): void {
  const store = rig.store;
  const write = store.write.bind(store);
  store.write = (batch, done) => {
    if (batch.some((w) => w.kind === "job.delete")) {
      store.failNextWrite(new Error("the store went away"));
      store.write = write;
    }
    write(batch, done);
  };
}

Deno.test("job.Delete answers once the delete is stored; if it fails, the job stays, in memory as in the store", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "BATCH", instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_FINISHED");
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
  rig.replies();

  failNextDelete(rig);
  rig.api("job", "Delete", { id: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the delete is durable");
  const [failed] = rig.replies();
  assert.equal(failed.error?.code, "internal");
  assert.match(failed.error?.message ?? "", /^deleting job .*: the store went away$/);
  assert.equal(rig.jm.jobs.get(JOB_ID)?.runtime.state, "SUCCEEDED", "still in memory");
  assert.ok(rig.store.jobs.has(JOB_ID), "still in the store");

  rig.api("job", "Delete", { id: { value: JOB_ID } });
  assert.deepEqual(rig.replies().map((r) => [r.error, r.body]), [[undefined, {}]]);
  assert.equal(rig.jm.jobs.get(JOB_ID), undefined);
  assert.equal(rig.store.jobs.get(JOB_ID), undefined);
});

Deno.test("a DeleteJob with force that fails leaves the job stopped: in memory, its tasks killed", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");

  failNextDelete(rig);
  rig.call(STATELESS_SERVICE, "DeleteJob", {
    jobId: { value: JOB_ID },
    version: versionOf(rig),
    force: true,
  });
  const [failed] = rig.replies();
  assert.equal(failed.error?.code, "internal");
  const job = rig.jm.jobs.get(JOB_ID);
  assert.equal(job?.runtime.goalState, "KILLED", "still in memory, stopped");
  assert.equal(rig.store.jobs.get(JOB_ID)?.runtime.goalState, "KILLED", "stored stopped");
  rig.tick();
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.deepEqual(kills, [`${JOB_ID}-0-1`, `${JOB_ID}-1-1`]);
});

/** A service of `instances`, its instances 0 and 1 running, deleted with force. */
function forceDeletedService(instances: number): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: instances });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.call(STATELESS_SERVICE, "DeleteJob", {
    jobId: { value: JOB_ID },
    version: versionOf(rig),
    force: true,
  });
  rig.tick();
  return rig;
}

Deno.test("a DeleteJob with force of a running service kills its tasks: the job is gone before its stop actions run", () => {
  const rig = forceDeletedService(3);
  assert.deepEqual(rig.replies().map((r) => [r.error, r.body]), [[undefined, {}]]);
  assert.equal(rig.jm.jobs.get(JOB_ID), undefined);
  rig.tick();
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.deepEqual(kills, [`${JOB_ID}-0-1`, `${JOB_ID}-1-1`]);
  const drops = rig.transport.take("drop-tasks", "resmgr").flatMap((d) => d.taskIds);
  assert.deepEqual(drops, [`${JOB_ID}-2-1`], "the instance not launched leaves the resource manager's queue");
});

Deno.test("a job deleted with force is not created again under its id until its killed runs ended", () => {
  const rig = forceDeletedService(2);
  assert.deepEqual(rig.replies().map((r) => r.error), [undefined]);
  const recreate = () => {
    rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, spec: SPEC });
    rig.answerPool();
    rig.tick();
    return rig.replies()[0];
  };
  // Its new runs would be `<job>-0-1` and `<job>-1-1` again: the old runs' ends would be taken for theirs.
  const refused = recreate();
  assert.equal(refused.error?.code, "already-exists");
  assert.match(refused.error?.message ?? "", /is still being deleted: its tasks are being killed/);
  rig.status(`${JOB_ID}-0-1`, "TASK_KILLED");
  assert.equal(recreate().error?.code, "already-exists", "one run still being killed");
  rig.status(`${JOB_ID}-1-1`, "TASK_KILLED");
  const created = recreate();
  assert.equal(created.error, undefined, JSON.stringify(created.error));
  assert.ok(rig.jm.jobs.has(JOB_ID));
});

Deno.test("a call with no writes of its own answers once the writes before it are stored, not at once", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  // The first start's write is out; the second finds instance 1 already to start and writes nothing.
  const start = { jobId: { value: JOB_ID }, ranges: [{ from: 1, to: 2 }] };
  const before = rig.store.batches.length;
  rig.api("task", "Start", start);
  const afterFirst = rig.store.batches.length;
  rig.api("task", "Start", start);
  assert.ok(rig.store.batches.slice(before, afterFirst).flat().length > 0, "the first start writes");
  assert.equal(rig.store.batches.slice(afterFirst).flat().length, 0, "the second writes nothing");
  assert.deepEqual(rig.repliesSoFar(), [], "neither answers before the first start is stored");
  rig.store.settle();
  const replies = rig.repliesSoFar();
  assert.equal(replies.length, 2);
  for (const r of replies) assert.equal(r.error, undefined, JSON.stringify(r));
  const started = replies.map((r) => (r.body as { startedInstanceIds: number[] }).startedInstanceIds);
  assert.deepEqual(started, [[1], []], "the second found it started already");
});
