/**
 * A volume-pinned instance moved to a config its volume's host has no room for never stays down for good, and
 * no workflow waits on it for ever: whichever workflow moved it (an update, a restart, a start) counts it
 * failed and sends it back to the config of its last placed run; and an instance that learns it cannot fit
 * only once no workflow watches it (the update was aborted while its old run was still being killed) is sent
 * back by the job manager itself, also across a restart of the job manager. A send-back whose config does not
 * fit either waits, rather than flip between the two.
 */
import assert from "node:assert/strict";
import type { HostPlacement, RmStateChange } from "../messages.ts";
import type { PersistentVolumeConfig } from "../model/config_types.ts";
import { mesosTaskId } from "../model/records.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./api_json.ts";
import type { JobManager } from "./jobmgr.ts";
import { UPDATE_SERVICE } from "./update_api.ts";

const SETTLE_MS = 2_000;
const SMALL: PersistentVolumeConfig = { containerPath: "data", sizeMB: 16 };
const BIG: PersistentVolumeConfig = { containerPath: "data", sizeMB: 1500 };

/** One stateful instance running on h1 with its volume (sizeMB 16), with a kill grace period. */
function statefulOnH1(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: SMALL, killGracePeriodSeconds: 8 } });
  rig.launch([0], "h1");
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.store.settle();
  rig.replies();
  assert.equal(rig.task(0).requiredHost, "h1");
  return rig;
}

/** Updates the job to the big volume; the update's id. */
function updateToBig(rig: JobmgrRig): string {
  const next = makeJobConfig({
    type: "SERVICE",
    instanceCount: 1,
    task: { volume: BIG, killGracePeriodSeconds: 8 },
  });
  rig.call(UPDATE_SERVICE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: rig.job().configVersion } },
    updateConfig: { batchSize: 1, minRunningSeconds: SETTLE_MS / 1000 },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

/** The kill of instance 0's run the workflow sent; its task id (the run is KILLING until it ends). */
function killSent(rig: JobmgrRig): string {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.deepEqual(kills, [rig.taskId(0)]);
  return kills[0];
}

/** Aborts workflow `id` through the API, which answers without an error. */
function abort(rig: JobmgrRig, id: string): void {
  rig.call(UPDATE_SERVICE, "AbortUpdate", { updateId: { value: id } });
  assert.equal(rig.replies()[0].error, undefined);
}

/** The resource manager's answer to `jm`'s pending placement poll. */
function placementsTo(rig: JobmgrRig, jm: JobManager, placements: HostPlacement[], changes: RmStateChange[]) {
  const req = rig.transport.take("get-placements", "resmgr").at(-1)!;
  jm.receive({ kind: "placements", reqId: req.reqId, placements, changes, preemptions: [] });
  rig.tick();
}

/** The resource manager says instance 0's run could not be placed on its required host: no room. */
function noRoomOnH1(rig: JobmgrRig, jm: JobManager = rig.jm): void {
  const task = jm.jobs.get(JOB_ID)!.tasks.get(0)!;
  placementsTo(rig, jm, [], [{
    taskId: mesosTaskId(JOB_ID, 0, task.runId),
    state: "PLACING",
    timeMs: rig.ports.clock.now(),
    reason: "required host h1: insufficient memory",
  }]);
}

/** Instance 0 is placed on h1 and runs there; the volume config its launch mounts. */
function runsOnH1(rig: JobmgrRig, jm: JobManager = rig.jm) {
  const task = jm.jobs.get(JOB_ID)!.tasks.get(0)!;
  const taskId = mesosTaskId(JOB_ID, 0, task.runId);
  placementsTo(rig, jm, [{
    leaseId: "h1#1",
    hostname: "h1",
    agentId: "agent-h1",
    tasks: [{ taskId, ports: {} }],
  }], []);
  rig.store.settle();
  const launch = rig.transport.takeOne("launch-tasks", "hostmgr");
  rig.report(jm, mesosTaskId(JOB_ID, 0, task.runId), "TASK_RUNNING");
  rig.tick();
  assert.equal(task.state, "RUNNING");
  return launch.tasks[0].volume;
}

/** A failed update: instance 0 runs its first config (16 MB) again, the job's config is the update's. */
function afterFailedUpdate(rig: JobmgrRig): void {
  const id = updateToBig(rig);
  rig.status(killSent(rig), "TASK_KILLED");
  noRoomOnH1(rig);
  assert.deepEqual(runsOnH1(rig), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the update ended");
  assert.deepEqual(rig.store.updates.get(id)?.instancesFailed, [0]);
  assert.notEqual(rig.task(0).configVersion, rig.job().configVersion, "runs the old config");
}

/** The job's workflow in memory; its id. */
function workflowId(rig: JobmgrRig): string {
  const id = rig.job().runtime.updateId;
  assert.ok(id && rig.jm.updates.has(id), "a workflow runs");
  return id;
}

Deno.test("an update aborted while the old run is being killed: the new run, which cannot fit, goes back to the old config", () => {
  const rig = statefulOnH1();
  const before = rig.task(0).configVersion;
  const id = updateToBig(rig);
  const old = killSent(rig);
  assert.equal(rig.task(0).state, "KILLING");
  abort(rig, id);
  assert.equal(rig.jm.updates.get(id), undefined, "the update ended");

  // The old run ends; the new one, at the update's config, cannot fit on its volume's host.
  rig.status(old, "TASK_KILLED");
  noRoomOnH1(rig);
  assert.deepEqual(runsOnH1(rig), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  assert.equal(rig.task(0).configVersion, before);
});

Deno.test("a send-back whose old config does not fit either waits for room rather than flip between configs", () => {
  const rig = statefulOnH1();
  const before = rig.task(0).configVersion;
  const id = updateToBig(rig);
  const old = killSent(rig);
  rig.call(UPDATE_SERVICE, "AbortUpdate", { updateId: { value: id } });
  rig.replies();
  rig.status(old, "TASK_KILLED");
  noRoomOnH1(rig);
  const task = rig.task(0);
  assert.equal(task.configVersion, before, "sent back");
  const run = task.runId;
  // The host has no room for the old config now either: the instance waits, on it.
  noRoomOnH1(rig);
  rig.tick(60_000);
  assert.equal(task.configVersion, before);
  assert.equal(task.desiredConfigVersion, undefined);
  assert.equal(task.runId, run, "no new run");
  assert.deepEqual(runsOnH1(rig), { volumeId: task.volumeId, containerPath: "data", sizeMb: 16 });
});

for (const when of ["before the old run ends", "once the new run waits to be placed"] as const) {
  Deno.test(`an update aborted while the old run is being killed, a job manager restart ${when}: the new run still goes back`, async () => {
    const rig = statefulOnH1();
    const before = rig.task(0).configVersion;
    const id = updateToBig(rig);
    const old = killSent(rig);
    abort(rig, id);
    if (when === "once the new run waits to be placed") rig.status(old, "TASK_KILLED");
    rig.store.settle();
    rig.transport.drain();

    const jm = await rig.restartJobManager();
    rig.transport.take("reconcile-tasks", "hostmgr");
    rig.transport.take("kill-tasks", "hostmgr");
    if (when === "before the old run ends") {
      rig.report(jm, old, "TASK_RUNNING");
      rig.tick();
      rig.report(jm, old, "TASK_KILLED");
    }
    rig.tick();
    rig.store.settle();
    const task = jm.jobs.get(JOB_ID)!.tasks.get(0)!;
    assert.notEqual(task.configVersion, before, "the new run is at the update's config");
    assert.equal(task.desiredConfigVersion, undefined);
    assert.equal(task.state, "PENDING");
    noRoomOnH1(rig, jm);
    rig.store.settle();
    assert.deepEqual(runsOnH1(rig, jm), { volumeId: task.volumeId, containerPath: "data", sizeMb: 16 });
    assert.equal(task.configVersion, before);
  });
}

Deno.test("after a failed update, a rolling restart to the job's config the host cannot hold counts the instance failed and ends, the instance running", () => {
  const rig = statefulOnH1();
  afterFailedUpdate(rig);
  const old = rig.task(0).configVersion;
  rig.api("job", "Restart", { id: { value: JOB_ID }, restartConfig: { batchSize: 1 } });
  assert.equal(rig.replies()[0].error, undefined);
  const id = workflowId(rig);
  rig.status(killSent(rig), "TASK_KILLED");
  assert.equal(rig.task(0).configVersion, rig.job().configVersion, "restarted on the job's config");
  noRoomOnH1(rig);

  assert.deepEqual(rig.jm.updates.get(id)?.instancesFailed ?? rig.store.updates.get(id)?.instancesFailed, [
    0,
  ]);
  assert.deepEqual(runsOnH1(rig), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  assert.equal(rig.task(0).configVersion, old);
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the restart ended");
  assert.equal(rig.task(0).state, "RUNNING");
});

Deno.test("after a failed update, an aborted rolling restart does not leave the instance down", () => {
  const rig = statefulOnH1();
  afterFailedUpdate(rig);
  const old = rig.task(0).configVersion;
  rig.api("job", "Restart", { id: { value: JOB_ID }, restartConfig: { batchSize: 1 } });
  assert.equal(rig.replies()[0].error, undefined);
  const id = workflowId(rig);
  const killed = killSent(rig);
  abort(rig, id);
  rig.status(killed, "TASK_KILLED");
  noRoomOnH1(rig);
  assert.deepEqual(runsOnH1(rig), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  assert.equal(rig.task(0).configVersion, old);
});

Deno.test("after a failed update, starting the stopped instance on the job's config the host cannot hold: counted failed, runs its old config", () => {
  const rig = statefulOnH1();
  afterFailedUpdate(rig);
  const old = rig.task(0).configVersion;
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.status(killSent(rig), "TASK_KILLED");
  assert.equal(rig.task(0).state, "KILLED");
  rig.api("job", "Start", { id: { value: JOB_ID }, startConfig: { batchSize: 1 } });
  assert.equal(rig.replies()[0].error, undefined);
  const id = workflowId(rig);
  noRoomOnH1(rig);
  assert.deepEqual(runsOnH1(rig), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  assert.equal(rig.task(0).configVersion, old);
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the start ended");
  assert.deepEqual(rig.store.updates.get(id)?.instancesFailed, [0]);
});
