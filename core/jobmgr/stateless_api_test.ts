import assert from "node:assert/strict";
import type { UpdateRecord } from "../model/records.ts";
import { rfc3339 } from "../model/time_format.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { jobConfigJson } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";

/** A service job of `n` instances, all RUNNING on host h1. */
function runningService(n: number): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: n });
  const all = [...Array(n).keys()];
  rig.launch(all);
  for (const i of all) rig.status(rig.taskId(i), "TASK_RUNNING");
  return rig;
}

function stateless(rig: JobmgrRig, method: string, body: object = {}) {
  rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, ...body });
  return rig.replies();
}

/** The GetJob reply (answered from the store when no workflow is in progress). */
async function getJob(rig: JobmgrRig) {
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as {
    jobInfo: { status: { version: { value: string }; workflowStatus?: Record<string, unknown> } };
    workflowInfo?: Record<string, unknown>;
  };
}

/** Kills the instances the job manager asked to kill; returns their instance ids. */
function killAsked(rig: JobmgrRig): number[] {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  for (const id of kills) rig.status(id, "TASK_KILLED");
  return kills.map((id) => Number(id.split("-").at(-2)));
}

async function storedUpdate(rig: JobmgrRig, id: string): Promise<UpdateRecord> {
  return (await rig.store.getUpdate(id))!;
}

Deno.test("StopJob during a rolling restart aborts the restart; the stopped job stays stopped", async () => {
  const rig = runningService(3);
  const [restart] = stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  const workflowId = (restart.body as { workflowId: { value: string } }).workflowId.value;
  rig.tick();
  assert.deepEqual(killAsked(rig), [0], "the first batch is being restarted");
  rig.transport.take("enqueue-gangs");
  const [stop] = stateless(rig, "StopJob");
  assert.equal(stop.error, undefined);
  assert.equal((await storedUpdate(rig, workflowId)).state, "ABORTED");
  assert.equal(rig.jm.updates.size, 0, "no workflow left in progress");
  assert.equal(rig.job().runtime.updateId, undefined);
  assert.deepEqual(killAsked(rig).sort(), [1, 2]);
  rig.tick(60_000);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "nothing is started again");
  assert.equal(rig.job().runtime.state, "KILLED");
  const got = await getJob(rig);
  assert.equal(got.jobInfo.status.workflowStatus?.state, "WORKFLOW_STATE_ABORTED");
});

Deno.test("stopping a whole job through the v0 API aborts its update; stopping some instances does not", async () => {
  const rig = runningService(4);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 4, task: { command: cmd("echo v2") } });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 1 },
  });
  const updateId = (rig.replies()[0].body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 3, to: 4 }] });
  rig.replies();
  assert.equal(rig.jm.updates.get(updateId)?.state, "ROLLING_FORWARD", "a partial stop leaves it rolling");
  rig.api("job", "Stop", { id: { value: JOB_ID } });
  rig.replies();
  assert.equal((await storedUpdate(rig, updateId)).state, "ABORTED");
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("pause, resume and abort of a job without a workflow are errors naming the job, and change nothing", async () => {
  const rig = runningService(2);
  const before = (await getJob(rig)).jobInfo.status.version.value;
  const writes = rig.store.unsettled;
  for (const method of ["PauseJobWorkflow", "ResumeJobWorkflow", "AbortJobWorkflow"]) {
    const [reply] = stateless(rig, method, { version: { value: before } });
    assert.deepEqual(reply.error, { code: "not-found", message: `job ${JOB_ID} has no active workflow` });
  }
  assert.equal(rig.store.unsettled, writes, "nothing written");
  assert.equal((await getJob(rig)).jobInfo.status.version.value, before);
  assert.deepEqual(await rig.store.listUpdates(JOB_ID), []);
});

Deno.test("pause and resume act on a workflow in progress, each moving the entity version", async () => {
  const rig = runningService(2);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  const u = [...rig.jm.updates.values()][0];
  const v1 = (await getJob(rig)).jobInfo.status.version.value;
  const [paused] = stateless(rig, "PauseJobWorkflow", { version: { value: v1 } });
  assert.equal(paused.error, undefined);
  assert.equal(u.state, "PAUSED");
  const v2 = (paused.body as { version: { value: string } }).version.value;
  assert.notEqual(v2, v1, "pausing moves the version, as Peloton's does");
  assert.equal((await getJob(rig)).jobInfo.status.version.value, v2);
  // A client still holding the version from before the pause is refused.
  const [stale] = stateless(rig, "ResumeJobWorkflow", { version: { value: v1 } });
  assert.equal(stale.error?.code, "aborted");
  assert.equal(u.state, "PAUSED");
  assert.equal(stateless(rig, "ResumeJobWorkflow", { version: { value: v2 } })[0].error, undefined);
  assert.equal(u.state, "ROLLING_FORWARD");
});

Deno.test("GetJob shows the workflow in Peloton's shapes: workflowInfo, and status.workflowStatus", async () => {
  const rig = runningService(3);
  assert.equal((await getJob(rig)).workflowInfo, undefined, "no workflow yet");
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 2, ranges: [{ from: 0, to: 3 }] } });
  const u = [...rig.jm.updates.values()][0];
  const during = await getJob(rig);
  const status = during.jobInfo.status;
  const [dsv, wv] = status.version.value.split("-").slice(1);
  const expected = {
    type: "WORKFLOW_TYPE_RESTART",
    state: "WORKFLOW_STATE_ROLLING_FORWARD",
    numInstancesCompleted: 0,
    numInstancesRemaining: 3,
    numInstancesFailed: 0,
    instancesCurrent: [0, 1],
    version: { value: `1-${dsv}-${wv}` },
    prevVersion: { value: `1-${dsv}-${wv}` },
    creationTime: rfc3339(u.creationTimeMs),
  };
  assert.deepEqual(pick(status.workflowStatus!, Object.keys(expected)), expected);
  assert.deepEqual(during.workflowInfo!.status, status.workflowStatus);
  assert.deepEqual(during.workflowInfo!.restartSpec, {
    batchSize: 2,
    ranges: [{ from: 0, to: 2 }],
    inPlace: false,
  });

  // Once it ends, Peloton still shows the job's last workflow and how it ended.
  for (let batch = 0; batch < 2; batch++) {
    const restarted = killAsked(rig);
    rig.launch(restarted);
    for (const i of restarted) rig.status(rig.taskId(i), "TASK_RUNNING");
    rig.tick(10_000); // the default minRunningSeconds: no health check, so 10 s RUNNING counts as done
  }
  assert.equal(rig.jm.updates.size, 0);
  const after = await getJob(rig);
  assert.equal(after.jobInfo.status.workflowStatus?.state, "WORKFLOW_STATE_SUCCEEDED");
  assert.equal(after.jobInfo.status.workflowStatus?.numInstancesCompleted, 3);
  assert.equal(
    after.workflowInfo?.status && (after.workflowInfo.status as { state: string }).state,
    "WORKFLOW_STATE_SUCCEEDED",
  );
});

Deno.test("GetJob of an update lists its spec and the instances it adds and changes as ranges", async () => {
  const rig = runningService(2);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 5, task: { command: cmd("echo v2") } });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 1, maxInstanceAttempts: 3, maxFailureInstances: 2, rollbackOnFailure: true },
    opaqueData: { data: "deploy-42" },
  });
  rig.replies();
  const info = (await getJob(rig)).workflowInfo!;
  assert.deepEqual(info.updateSpec, {
    batchSize: 1,
    rollbackOnFailure: true,
    maxInstanceRetries: 3,
    maxTolerableInstanceFailures: 2,
    startPaused: false,
    inPlace: false,
  });
  assert.deepEqual(info.instancesAdded, [{ from: 2, to: 4 }]);
  assert.deepEqual(info.instancesUpdated, [{ from: 0, to: 1 }]);
  assert.deepEqual(info.instancesRemoved, []);
  assert.deepEqual(info.opaqueData, { data: "deploy-42" });
  const status = info.status as { type: string; version: { value: string }; prevVersion: { value: string } };
  assert.equal(status.type, "WORKFLOW_TYPE_UPDATE");
  assert.match(status.version.value, /^2-/);
  assert.match(status.prevVersion.value, /^1-/);
});

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}

function cmd(value: string) {
  return { shell: true, value, arguments: [], environment: { variables: [] }, uris: [] };
}
