import assert from "node:assert/strict";
import { JOB_ID, type JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { jobConfigJson } from "./api_json.ts";
import type { JobManager } from "./jobmgr.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms. */
const SETTLE_MS = 10_000;

function cmd(value: string) {
  return { shell: true, value, arguments: [], environment: { variables: [] }, uris: [] };
}

/** Starts an update of the job to `command` on `n` instances; returns its id. */
function update(rig: JobmgrRig, n: number, command: string, updateConfig: object, version: number): string {
  const next = makeJobConfig({ type: "SERVICE", instanceCount: n, task: { command: cmd(command) } });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version } },
    updateConfig,
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

// ---------------------------------------------------------------------------------------------
// Defect 1: an in-place update's desired host outlives it

Deno.test("an in-place update's desired host is cleared by a later update that is not in place", () => {
  const rig = runningService(1, { settled: true });
  update(rig, 1, "v2", { inPlace: true }, 1);
  rig.rollBatch();
  rig.tick(SETTLE_MS);
  assert.equal(rig.task(0).desiredHost, "h1");
  assert.equal(rig.jm.updates.size, 0);
  rig.transport.take("enqueue-gangs");
  update(rig, 1, "v3", {}, 2);
  const [kill] = rig.transport.take("kill-tasks", "hostmgr");
  rig.status(kill.tasks[0].taskId, "TASK_KILLED");
  const gang = rig.transport.take("enqueue-gangs", "resmgr").at(-1)!.gangs[0];
  assert.equal(gang.tasks[0].desiredHost, undefined, "the new run goes to any host");
  assert.equal(rig.task(0).desiredHost, undefined);
});

Deno.test("a stop clears an in-place update's desired host: a later start places the task anywhere", () => {
  const rig = runningService(1, { settled: true });
  update(rig, 1, "v2", { inPlace: true }, 1);
  rig.rollBatch();
  rig.tick(SETTLE_MS);
  assert.equal(rig.task(0).desiredHost, "h1");
  rig.call("peloton.api.task.TaskManager", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.equal(rig.task(0).desiredHost, undefined);
  rig.store.settle();
  assert.equal(rig.store.tasks.get(`${JOB_ID}/0`)?.desiredHost ?? undefined, undefined, "stored cleared");
  const [kill] = rig.transport.take("kill-tasks", "hostmgr");
  rig.status(kill.tasks[0].taskId, "TASK_KILLED");
  rig.transport.take("enqueue-gangs");
  rig.call("peloton.api.task.TaskManager", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.tick();
  const gang = rig.transport.take("enqueue-gangs", "resmgr").at(-1)!.gangs[0];
  assert.equal(gang.tasks[0].desiredHost, undefined);
});

// ---------------------------------------------------------------------------------------------
// Defect 2: a restart mid-update must not count the crashed process's RUNNING time

/**
 * A 2-instance service updated one at a time: instance 0 is RUNNING the new config for 5 s (half its settle
 * time) when the job manager is killed -9 and a new one recovers. Returns the new one and the update's id.
 */
async function crashMidSettle(): Promise<{ rig: JobmgrRig; jm: JobManager; id: string }> {
  const rig = runningService(2, { settled: true });
  const id = update(rig, 2, "v2", { batchSize: 1 }, 1);
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(SETTLE_MS / 2);
  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.transport.drain();
  return { rig, jm, id };
}

Deno.test("after a restart, an update waits for reconciliation before counting a RUNNING instance", async () => {
  const { rig, jm, id } = await crashMidSettle();
  // Past the settle time the crashed process would have counted, reconciliation not answered yet.
  rig.tick(SETTLE_MS);
  assert.deepEqual(jm.updates.get(id)?.instancesDone, [], "not judged before reconciliation answers");
  // Reconciliation: the task is gone. It runs again, and is not done until that run settles.
  rig.report(jm, `${JOB_ID}-0-2`, "TASK_LOST", { reason: "REASON_RECONCILIATION" });
  assert.deepEqual(jm.updates.get(id)?.instancesDone, []);
  assert.equal(jm.jobs.get(JOB_ID)!.tasks.get(0)!.runId, 3, "instance 0 runs again");
});

Deno.test("after a restart, a RUNNING instance reconciliation confirms settles from the confirmation", async () => {
  const { rig, jm, id } = await crashMidSettle();
  rig.tick(2_000);
  rig.report(jm, `${JOB_ID}-0-2`, "TASK_RUNNING", { reason: "REASON_RECONCILIATION" });
  rig.tick(SETTLE_MS - 1);
  assert.deepEqual(jm.updates.get(id)?.instancesDone, [], "its settle time counts from the confirmation");
  rig.tick(1);
  assert.deepEqual(jm.updates.get(id)?.instancesDone, [0]);
});

// ---------------------------------------------------------------------------------------------
// Defect 4: an update that grows a stopped job

Deno.test("an update that adds instances to a stopped job adds them stopped; a start runs all on the new config", () => {
  const rig = runningService(3, { settled: true });
  rig.call("peloton.api.task.TaskManager", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  for (const k of rig.transport.take("kill-tasks", "hostmgr")) {
    for (const t of k.tasks) rig.status(t.taskId, "TASK_KILLED");
  }
  assert.equal(rig.job().runtime.state, "KILLED");
  rig.transport.take("enqueue-gangs");
  update(rig, 5, "v2", {}, 1);
  rig.tick();
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "nothing starts");
  for (const i of [3, 4]) {
    assert.deepEqual([rig.task(i).state, rig.task(i).goalState], ["KILLED", "KILLED"], `instance ${i}`);
  }
  assert.equal(rig.jm.updates.size, 0, "the update is done");
  assert.equal(rig.job().runtime.goalState, "KILLED");
  assert.equal(rig.job().runtime.state, "KILLED");
  rig.call("peloton.api.task.TaskManager", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.tick();
  const started = rig.transport.take("enqueue-gangs", "resmgr").flatMap((e) =>
    e.gangs.flatMap((g) => g.tasks)
  );
  assert.deepEqual(started.map((t) => t.instanceId).sort(), [0, 1, 2, 3, 4]);
  for (let i = 0; i < 5; i++) assert.equal(rig.task(i).desiredConfigVersion ?? rig.task(i).configVersion, 2);
});

// ---------------------------------------------------------------------------------------------
// Defect 5: a paused update records the instances that finish

Deno.test("a paused update records the instances under way that finish, and takes no new ones", () => {
  const rig = runningService(4, { settled: true });
  const id = update(rig, 4, "v2", { batchSize: 2 }, 1);
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.equal(kills.length, 2);
  rig.call(UPDATE, "PauseUpdate", { updateId: { value: id } });
  rig.replies();
  for (const t of kills) rig.status(t, "TASK_KILLED");
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  const u = rig.jm.updates.get(id)!;
  assert.equal(u.state, "PAUSED");
  assert.deepEqual([u.instancesDone, u.instancesCurrent], [[0, 1], []]);
  assert.equal(rig.store.updates.get(id)?.instancesDone.length, 2, "stored while paused");
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "no new batch while paused");
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.equal(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks).length, 2);
});
