/** DeleteVolume: a deleted volume is destroyed on its host once the delete is stored, never while in use. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { VOLUME_SERVICE } from "./volume_api.ts";

/** A volume's id: its job and instance, then a UUID of its own. */
const VOLUME_ID = new RegExp(
  `^${JOB_ID}-0-volume-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`,
);

/** A stateful service of one instance, its volume made on `hostname`, its task RUNNING there. */
function statefulService(hostname = "h4", rig = new JobmgrRig()): JobmgrRig {
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.launch([0], hostname);
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname });
  rig.store.settle();
  rig.replies();
  return rig;
}

/** The id of the volume instance 0 of the job mounts. */
function volumeOf(rig: JobmgrRig): string {
  const id = rig.task(0).volumeId!;
  assert.match(id, VOLUME_ID);
  return id;
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
  const volumeId = volumeOf(rig);
  stop(rig);
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: volumeId } });
  await rig.reads();
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the delete is stored");
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [], "nothing destroyed before then");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => [r.body, r.error]), [[{}, undefined]]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId, hostname: "h4" }] },
  ]);
  assert.equal(rig.store.volumes.size, 0);
});

Deno.test("a volume in use is neither deleted nor destroyed", async () => {
  const rig = statefulService();
  const volumeId = volumeOf(rig);
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: volumeId } });
  await rig.reads();
  assert.deepEqual(rig.replies()[0].error, {
    code: "failed-precondition",
    message: `volume ${volumeId} is in use by task ${JOB_ID}-0 (RUNNING); stop it first`,
  });
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), []);
  assert.equal(rig.store.volumes.size, 1);
  assert.equal(rig.task(0).requiredHost, "h4", "still pinned to its volume's host");
});

Deno.test("a delete that could not be stored destroys nothing", async () => {
  const rig = statefulService();
  stop(rig);
  rig.store.failNextWrite(new Error("disk full"));
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: volumeOf(rig) } });
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
  const deleted = volumeOf(rig);
  stop(rig);
  rig.call(VOLUME_SERVICE, "DeleteVolume", { id: { value: deleted } });
  await rig.reads();
  rig.store.settle();
  rig.replies();
  // The destroy is lost on its way (a host manager failing over): the old directory stays on h4.
  rig.transport.take("destroy-volumes", "hostmgr");
  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  const launch = rig.launch([0], "h4");
  const made = launch.tasks[0].volume?.volumeId;
  assert.ok(made && made !== deleted, `a new volume id, not the deleted ${deleted}: got ${made}`);
  rig.store.settle();
  assert.deepEqual([...rig.store.volumes.keys()], [made]);
});

Deno.test("deleting a job destroys its volumes' data once the delete is stored", () => {
  const rig = statefulService();
  const volumeId = volumeOf(rig);
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
    { kind: "destroy-volumes", volumes: [{ volumeId, hostname: "h4" }] },
  ]);
});

Deno.test("a job created again under a deleted job's id gets new volumes: the old one's data, if a destroy never reached its host, is never mounted", () => {
  const rig = statefulService("agent-8");
  const old = rig.task(0).volumeId;
  stop(rig, "agent-8");
  rig.api("job", "Delete", { id: { value: JOB_ID } });
  rig.store.settle();
  rig.replies();
  // The destroy finds no agent on the host (it left): the old directory stays there.
  rig.transport.take("destroy-volumes", "hostmgr");
  statefulService("agent-8", rig);
  const made = rig.task(0).volumeId!;
  assert.equal(rig.task(0).runId, 1, "the same run id as the deleted job's first run");
  assert.notEqual(made, old, "a new volume, not the deleted job's");
  assert.equal(rig.store.volumes.get(made)?.hostname, "agent-8", "stored under its own id");
});
