/**
 * Restart, Start and Stop of JobManager and of the v1alpha JobService are for service jobs, and a v1alpha
 * ReplaceJob cannot make a batch job a service: a batch job is refused.
 */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigToStatelessSpec } from "../model/stateless_spec.ts";
import { entityVersion } from "./api_json.ts";
import { JOB_SERVICE } from "./job_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

/** A batch job of 3 instances, all RUNNING on host h1, with nothing left in the transport. */
function runningBatch(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3 });
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.transport.drain();
  return rig;
}

/** What a refused call must leave as it was: the stored job, tasks and workflows, and the job in memory. */
async function snapshot(rig: JobmgrRig) {
  return structuredClone({
    job: rig.store.jobs.get(JOB_ID),
    tasks: await rig.store.getTasks(JOB_ID),
    updates: await rig.store.listUpdates(JOB_ID),
    runtime: rig.jm.jobs.get(JOB_ID)?.runtime,
    goals: [...(rig.jm.jobs.get(JOB_ID)?.tasks.values() ?? [])].map((t) => [t.goalState, t.desiredRunId]),
  });
}

/** Every form of Restart, Start and Stop for a service job, with the workflow type Peloton's error names. */
function calls(rig: JobmgrRig): [string, string, Record<string, unknown>, string][] {
  const version = { value: rig.jm.jobs.has(JOB_ID) ? entityVersion(rig.job()) : "1-1-1" };
  const id = { value: JOB_ID };
  return [
    [JOB_SERVICE, "Restart", { id }, "RESTART"],
    [JOB_SERVICE, "Restart", { id, batchSize: 1 }, "RESTART"],
    [JOB_SERVICE, "Start", { id }, "START"],
    [JOB_SERVICE, "Start", { id, batchSize: 1 }, "START"],
    [JOB_SERVICE, "Stop", { id }, "STOP"],
    [JOB_SERVICE, "Stop", { id, batchSize: 1 }, "STOP"],
    [STATELESS_SERVICE, "RestartJob", { jobId: id, version, restartSpec: { batchSize: 1 } }, "RESTART"],
    [STATELESS_SERVICE, "StartJob", { jobId: id, version }, "START"],
    [STATELESS_SERVICE, "StopJob", { jobId: id, version }, "STOP"],
  ];
}

Deno.test("Restart|Start|Stop of a batch job (v0 JobManager, v1alpha JobService) is InvalidArgument and changes nothing", async () => {
  const rig = runningBatch();
  const before = await snapshot(rig);
  for (const [service, method, body, type] of calls(rig)) {
    rig.call(service, method, body);
    await rig.reads();
    const replies = rig.replies();
    assert.deepEqual(replies.map((r) => r.error), [{
      code: "invalid-argument",
      message: `${type} supported only for service jobs: job ${JOB_ID} is a BATCH job`,
    }], `${method} ${JSON.stringify(body)}`);
    rig.tick(60_000);
    assert.deepEqual(await snapshot(rig), before, `${method} ${JSON.stringify(body)} changed nothing`);
    assert.equal(rig.jm.updates.size, 0, "no workflow");
    const sent = rig.transport.drain().filter((s) => s.msg.kind !== "get-placements");
    assert.deepEqual(sent, [], "nothing killed, launched or enqueued");
  }
});

Deno.test("a batch job no longer held is refused without being loaded", async () => {
  const rig = runningBatch();
  rig.jm.release([JOB_ID]);
  const before = await snapshot(rig);
  for (const [service, method, body, type] of calls(rig)) {
    rig.call(service, method, body);
    await rig.reads();
    assert.deepEqual(rig.replies().map((r) => r.error?.message), [
      `${type} supported only for service jobs: job ${JOB_ID} is a BATCH job`,
    ]);
    assert.equal(rig.jm.jobs.has(JOB_ID), false, `${method}: not loaded`);
    assert.deepEqual(await snapshot(rig), before);
  }
});

Deno.test("Restart|Start|Stop of a service job still go ahead", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 3 });
  for (const [service, method, body] of calls(rig)) {
    // The version moves with each call; ask each with the job's current one.
    const current = {
      ...body,
      ...("version" in body ? { version: { value: entityVersion(rig.job()) } } : {}),
    };
    rig.call(service, method, current);
    await rig.reads();
    assert.deepEqual(rig.replies().map((r) => r.error), [undefined], `${method} ${JSON.stringify(body)}`);
    rig.transport.drain();
    // A rolling one does not overwrite another in progress (as in Peloton): each is aborted before the next.
    rig.jm.workflows.abortActive(rig.job());
  }
});

Deno.test("ReplaceJob of a batch job is refused (a job's type is immutable) and changes nothing", async () => {
  const rig = runningBatch();
  const before = await snapshot(rig);
  const { respoolId, ...spec } = jobConfigToStatelessSpec(rig.job().config);
  rig.call(STATELESS_SERVICE, "ReplaceJob", {
    jobId: { value: JOB_ID },
    version: { value: entityVersion(rig.job()) },
    spec: { ...spec, respoolId: { value: respoolId } },
  });
  await rig.reads();
  assert.deepEqual(rig.replies().map((r) => r.error), [{
    code: "invalid-argument",
    message: `job type is immutable: job ${JOB_ID} is a BATCH job, and a stateless spec makes a SERVICE job`,
  }]);
  rig.tick(60_000);
  assert.deepEqual(await snapshot(rig), before);
  assert.equal(rig.job().config.type, "BATCH");
  assert.equal(rig.jm.updates.size, 0, "no workflow");
});
