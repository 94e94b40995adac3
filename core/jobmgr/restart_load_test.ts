import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { entityVersion } from "./api_json.ts";

const OTHER_ID = "99999999-2222-4333-8444-555555555555";

/** Lets store reads (several promise hops) answer, then runs what is due. */
async function settle(rig: JobmgrRig): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
  rig.tick();
}

/** Runs a job's instances, then stops it until it is KILLED. */
function runThenStop(rig: JobmgrRig, jobId: string): void {
  rig.create({ type: "SERVICE", instanceCount: 2 }, jobId);
  const tasks = [0, 1].map((i) => ({ taskId: rig.taskId(i, jobId), ports: {} }));
  rig.placements([{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks }]);
  for (const i of [0, 1]) rig.status(rig.taskId(i, jobId), "TASK_RUNNING");
  rig.api("job", "Stop", { id: { value: jobId } });
  for (const i of [0, 1]) rig.status(rig.taskId(i, jobId), "TASK_KILLED");
  assert.equal(rig.job(jobId).runtime.state, "KILLED");
  rig.replies();
}

/** A job manager restarted over the rig's store, recovered the way production recovers it. */
async function restart(rig: JobmgrRig): Promise<JobManager> {
  rig.jm.stop();
  rig.replies();
  return await rig.restartJobManager();
}

/** Sends one API call to the restarted job manager. */
function call(rig: JobmgrRig, jm: JobManager, procedure: string, body: unknown): void {
  jm.receive({ kind: "api", reqId: 7, replyTo: "api/1", procedure, body });
  rig.tick();
}

Deno.test("after a restart, stopped jobs can be started and deleted as before it", async () => {
  const rig = new JobmgrRig();
  runThenStop(rig, JOB_ID);
  runThenStop(rig, OTHER_ID);
  rig.store.settle();
  const jm = await restart(rig);
  assert.equal(jm.jobs.size, 0, "stopped jobs are not recovered");

  call(rig, jm, "peloton.api.task.TaskManager::Start", { jobId: { value: JOB_ID } });
  await settle(rig);
  const [started] = rig.replies();
  assert.deepEqual((started.body as { startedInstanceIds: number[] }).startedInstanceIds, [0, 1]);
  const job = jm.jobs.get(JOB_ID)!;
  assert.equal(job.runtime.goalState, "RUNNING");
  assert.deepEqual([0, 1].map((i) => job.tasks.get(i)!.state), ["PENDING", "PENDING"]);
  assert.deepEqual([0, 1].map((i) => job.tasks.get(i)!.runId), [2, 2], "new runs");
  const gangs = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(gangs.map((g) => g.tasks[0].taskId), [`${JOB_ID}-0-2`, `${JOB_ID}-1-2`]);

  // A stopped job is not in memory: its entity version is the stored one's.
  const version = { value: entityVersion(rig.store.jobs.get(OTHER_ID)!) };
  call(rig, jm, `${STATELESS_SERVICE}::DeleteJob`, { jobId: { value: OTHER_ID }, version });
  await settle(rig);
  rig.store.settle();
  rig.tick();
  assert.deepEqual(rig.replies().map((r) => [r.error, r.body]), [[undefined, {}]]);
  assert.equal(rig.store.jobs.get(OTHER_ID), undefined, "deleted from the store");
  assert.equal(jm.jobs.get(OTHER_ID), undefined);
});

Deno.test("after a restart, a rolling start of a stopped job runs as a workflow; unknown jobs are not found", async () => {
  const rig = new JobmgrRig();
  runThenStop(rig, JOB_ID);
  rig.store.settle();
  const jm = await restart(rig);
  call(rig, jm, "peloton.api.job.JobManager::Start", { id: { value: JOB_ID }, batchSize: 1 });
  await settle(rig);
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  const updateId = (reply.body as { updateID: { value: string } }).updateID.value;
  assert.equal(jm.updates.get(updateId)?.type, "START");

  call(rig, jm, "peloton.api.task.TaskManager::Start", { jobId: { value: OTHER_ID } });
  await settle(rig);
  // Peloton's TaskManager::Start answers an unknown job in the body: `error.notFound`.
  const notFound = { id: { value: OTHER_ID }, message: `job ${OTHER_ID} not found` };
  assert.deepEqual(rig.replies().map((r) => r.body), [{ error: { notFound } }]);
});

Deno.test("after a restart, deleting the volume of a stopped job unpins its task, as before the restart", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.launch([0], "h7");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h7" });
  rig.api("job", "Stop", { id: { value: JOB_ID } });
  rig.status(rig.taskId(0), "TASK_KILLED", { hostname: "h7" });
  rig.replies();
  rig.store.settle();
  assert.equal(rig.store.task(JOB_ID, 0)!.requiredHost, "h7");
  const jm = await restart(rig);
  assert.equal(jm.jobs.size, 0, "the stopped job is not recovered");

  const volumeId = rig.store.task(JOB_ID, 0)!.volumeId!;
  call(rig, jm, "peloton.api.v0.volume.svc.VolumeService::DeleteVolume", { id: { value: volumeId } });
  await settle(rig);
  rig.store.settle();
  assert.deepEqual(rig.replies().map((r) => [r.error, r.body]), [[undefined, {}]]);
  assert.equal(rig.store.volumes.get(volumeId), undefined, "the volume is gone");
  const stored = rig.store.task(JOB_ID, 0)!;
  assert.deepEqual([stored.volumeId, stored.requiredHost], [undefined, undefined], "the task is unpinned");

  call(rig, jm, "peloton.api.task.TaskManager::Start", { jobId: { value: JOB_ID } });
  await settle(rig);
  rig.replies();
  const [gang] = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.equal(gang.tasks[0].requiredHost, undefined, "its next run may go to any host");
});
