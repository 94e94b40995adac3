/**
 * An update that grows a stateful instance past what its volume's host can hold: the instance, pinned to that
 * host, cannot be placed at the new config. It is a failed instance of the update (so `maxFailureInstances`
 * and `rollbackOnFailure` apply) and runs again at once on the config it ran, on its volume, rather than stay
 * down while the update waits for ever. `ListVolumes` never reports a size no run of the volume has had.
 */
import assert from "node:assert/strict";
import type { PersistentVolumeConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./api_json.ts";
import { UPDATE_SERVICE } from "./update_api.ts";
import { VOLUME_SERVICE } from "./volume_api.ts";

const SETTLE_MS = 2_000;
const SMALL: PersistentVolumeConfig = { containerPath: "data", sizeMB: 16 };
const BIG: PersistentVolumeConfig = { containerPath: "data", sizeMB: 1500 };

/** Three stateful instances, all on host h1 with their volumes (sizeMB 16). */
function statefulOnOneHost(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 3, task: { volume: SMALL } });
  rig.launch([0, 1, 2], "h1");
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.store.settle();
  rig.replies();
  for (const i of [0, 1, 2]) assert.equal(rig.task(i).requiredHost, "h1");
  return rig;
}

/** Updates the job to `volume`, one instance at a time; the update's id. */
function updateTo(rig: JobmgrRig, volume: PersistentVolumeConfig, updateConfig: object): string {
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 3, task: { volume } });
  rig.call(UPDATE_SERVICE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: rig.job().configVersion } },
    updateConfig: { batchSize: 1, minRunningSeconds: SETTLE_MS / 1000, ...updateConfig },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

/** The batch's instance killed by the update ends; its id. */
function killedEnds(rig: JobmgrRig): number {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.equal(kills.length, 1, `one kill: ${JSON.stringify(kills)}`);
  rig.status(kills[0], "TASK_KILLED");
  return Number(kills[0].split("-").at(-2));
}

/** The instance is placed on h1 and runs there; the volume config its launch mounts. */
function runsOnH1(rig: JobmgrRig, i: number) {
  const launch = rig.launch([i], "h1");
  rig.status(rig.taskId(i), "TASK_RUNNING");
  return launch.tasks[0].volume;
}

/** The resource manager says the instance's run could not be placed on its required host: no room. */
function noRoomOnH1(rig: JobmgrRig, i: number): void {
  rig.placements([], [{
    taskId: rig.taskId(i),
    state: "PLACING",
    timeMs: rig.ports.clock.now(),
    reason: "required host h1: insufficient disk",
  }]);
}

/** The job's volumes as ListVolumes answers them: instance → size. */
async function sizes(rig: JobmgrRig): Promise<Record<number, unknown>> {
  rig.call(VOLUME_SERVICE, "ListVolumes", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  const volumes = (reply.body as { volumes: Record<string, Record<string, unknown>> }).volumes;
  return Object.fromEntries(Object.values(volumes).map((v) => [v.instanceId as number, v.sizeMB]));
}

Deno.test("an instance its volume's host cannot hold at the new size fails the update, which rolls back: every instance runs", async () => {
  const rig = statefulOnOneHost();
  const id = updateTo(rig, BIG, { maxFailureInstances: 1, rollbackOnFailure: true });

  // Instance 0 grows: its host had room for that.
  assert.equal(killedEnds(rig), 0);
  assert.deepEqual(runsOnH1(rig, 0), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 1500 });
  rig.tick(SETTLE_MS);

  // Instance 1 is taken down, and its host, which now holds instance 0's big volume, has no room for it.
  assert.equal(killedEnds(rig), 1);
  rig.store.settle();
  assert.deepEqual(await sizes(rig), { 0: 1500, 1: 16, 2: 16 }, "no run of instance 1 mounted 1500 MB");
  noRoomOnH1(rig, 1);

  const u = rig.jm.updates.get(id);
  assert.equal(u?.state, "ROLLING_BACKWARD", "the failed instance rolls the update back");
  // Instance 1 runs again on what it ran, on its volume (the rollback's first: it is down); then instance 0
  // is rolled back to 16 MB.
  assert.deepEqual(runsOnH1(rig, 1), { volumeId: rig.task(1).volumeId, containerPath: "data", sizeMb: 16 });
  rig.tick(SETTLE_MS);
  assert.equal(killedEnds(rig), 0);
  assert.deepEqual(runsOnH1(rig, 0), { volumeId: rig.task(0).volumeId, containerPath: "data", sizeMb: 16 });
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the rollback ended");
  const stored = rig.store.updates.get(id);
  assert.equal(stored?.state, "ROLLED_BACK");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "instance 1 was not restarted again");
  for (const i of [0, 1, 2]) assert.equal(rig.task(i).state, "RUNNING", `instance ${i} runs`);
  rig.store.settle();
  assert.deepEqual(await sizes(rig), { 0: 16, 1: 16, 2: 16 });
});

Deno.test("without a failure limit, the instance that cannot fit counts failed, runs its old config, and the update goes on", () => {
  const rig = statefulOnOneHost();
  const id = updateTo(rig, BIG, {});
  assert.equal(killedEnds(rig), 0);
  runsOnH1(rig, 0);
  rig.tick(SETTLE_MS);
  assert.equal(killedEnds(rig), 1);
  noRoomOnH1(rig, 1);

  const u = rig.jm.updates.get(id)!;
  assert.deepEqual(u.instancesFailed, [1]);
  assert.equal(u.state, "ROLLING_FORWARD");
  assert.deepEqual(runsOnH1(rig, 1), { volumeId: rig.task(1).volumeId, containerPath: "data", sizeMb: 16 });
  // Instance 2 is next, and cannot fit either.
  assert.equal(killedEnds(rig), 2);
  noRoomOnH1(rig, 2);
  assert.deepEqual(runsOnH1(rig, 2), { volumeId: rig.task(2).volumeId, containerPath: "data", sizeMb: 16 });
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the update ended");
  const stored = rig.store.updates.get(id)!;
  assert.equal(stored.state, "SUCCEEDED");
  assert.deepEqual(stored.instancesFailed, [1, 2]);
  for (const i of [0, 1, 2]) assert.equal(rig.task(i).state, "RUNNING", `instance ${i} runs`);
});

Deno.test("a pinned instance that is only waiting for its host (in maintenance) is not failed by the update", () => {
  const rig = statefulOnOneHost();
  const id = updateTo(rig, BIG, { maxFailureInstances: 1 });
  assert.equal(killedEnds(rig), 0);
  rig.placements([], [{
    taskId: rig.taskId(0),
    state: "PLACING",
    timeMs: rig.ports.clock.now(),
    reason: "required host h1: host in maintenance (HOST_STATE_DRAINING)",
  }]);
  const u = rig.jm.updates.get(id)!;
  assert.deepEqual(u.instancesFailed, []);
  assert.equal(u.state, "ROLLING_FORWARD");
  assert.equal(rig.task(0).configVersion, u.jobConfigVersion, "still to run the new config");
});

Deno.test("an update aborted before it counted the instance its host has no room for: the instance runs its old config again", () => {
  const rig = statefulOnOneHost();
  const id = updateTo(rig, BIG, {});
  assert.equal(killedEnds(rig), 0);
  runsOnH1(rig, 0);
  rig.tick(SETTLE_MS);
  assert.equal(killedEnds(rig), 1);
  // The reason reached the task, and the abort came before the workflow looked again.
  const task = rig.task(1);
  assert.ok(["PENDING", "READY", "PLACING"].includes(task.state), task.state);
  task.message = "required host h1: insufficient disk";
  rig.call(UPDATE_SERVICE, "AbortUpdate", { updateId: { value: id } });
  assert.equal(rig.replies()[0].error, undefined);
  assert.equal(rig.jm.updates.get(id), undefined, "the update ended");
  assert.deepEqual(runsOnH1(rig, 1), { volumeId: rig.task(1).volumeId, containerPath: "data", sizeMb: 16 });
  assert.equal(rig.task(1).state, "RUNNING");
});
