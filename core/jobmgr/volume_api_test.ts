/** DeleteVolume: a deleted volume is destroyed on its host once the delete is stored, never while in use. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { VOLUME_SERVICE } from "./volume_api.ts";

const VOLUME_ID = `${JOB_ID}-0-volume-1`;

/** A stateful service of one instance, its volume made on `hostname`, its task RUNNING there. */
function statefulService(hostname = "h4"): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.launch([0], hostname);
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname });
  rig.store.settle();
  rig.replies();
  return rig;
}

function stop(rig: JobmgrRig, hostname = "h4"): void {
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.transport.take("kill-tasks", "hostmgr");
  rig.status(rig.taskId(0), "TASK_KILLED", { hostname });
  rig.store.settle();
}

Deno.test("a deleted volume is destroyed on its host once the delete is stored, and the reply comes then", async () => {
  const rig = statefulService();
  stop(rig);
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: VOLUME_ID } });
  await rig.reads();
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the delete is stored");
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [], "nothing destroyed before then");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => [r.body, r.error]), [[{}, undefined]]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId: VOLUME_ID, hostname: "h4" }] },
  ]);
  assert.equal(rig.store.volumes.size, 0);
});

Deno.test("a volume in use is neither deleted nor destroyed", async () => {
  const rig = statefulService();
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: VOLUME_ID } });
  await rig.reads();
  assert.deepEqual(rig.replies()[0].error, {
    code: "failed-precondition",
    message: `volume ${VOLUME_ID} is in use by task ${JOB_ID}-0 (RUNNING); stop it first`,
  });
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), []);
  assert.equal(rig.store.volumes.size, 1);
  assert.equal(rig.task(0).requiredHost, "h4", "still pinned to its volume's host");
});

Deno.test("a delete that could not be stored destroys nothing", async () => {
  const rig = statefulService();
  stop(rig);
  rig.store.failNextWrite(new Error("disk full"));
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: VOLUME_ID } });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error?.code, "internal");
  assert.match(reply.error!.message, /storing the delete of volume .*disk full/);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), []);
});

Deno.test("a volume that outlived its job is destroyed too", async () => {
  const rig = new JobmgrRig();
  const jobId = "99999999-2222-4333-8444-555555555555";
  const volumeId = `${jobId}-3-volume`;
  rig.store.volumes.set(volumeId, {
    volumeId,
    jobId,
    instanceId: 3,
    hostname: "h2",
    containerPath: "data",
    sizeMb: 8,
    state: "CREATED",
    createdMs: 0,
  });
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: volumeId } });
  await rig.reads();
  await rig.reads();
  assert.deepEqual(rig.replies().map((r) => [r.body, r.error]), [[{}, undefined]]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId, hostname: "h2" }] },
  ]);
});

Deno.test("the volume made after a delete has a new id: a destroy that never reached the host cannot bring old data back", async () => {
  const rig = statefulService();
  stop(rig);
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: VOLUME_ID } });
  await rig.reads();
  rig.store.settle();
  rig.replies();
  // The destroy is lost on its way (a host manager failing over): the old directory stays on h4.
  rig.transport.take("destroy-volumes", "hostmgr");
  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  const launch = rig.launch([0], "h4");
  const made = launch.tasks[0].volume?.volumeId;
  assert.ok(made && made !== VOLUME_ID, `a new volume id, not the deleted ${VOLUME_ID}: got ${made}`);
  rig.store.settle();
  assert.deepEqual([...rig.store.volumes.keys()], [made]);
});

Deno.test("deleting a job destroys its volumes' data once the delete is stored", () => {
  const rig = statefulService();
  stop(rig);
  rig.api("job", "Delete", { id: { value: JOB_ID } });
  assert.deepEqual(
    rig.transport.take("destroy-volumes", "hostmgr"),
    [],
    "nothing destroyed before it is stored",
  );
  rig.store.settle();
  assert.deepEqual(rig.replies().map((r) => r.error), [undefined]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId: VOLUME_ID, hostname: "h4" }] },
  ]);
});
