/** DeleteVolume: a deleted volume is destroyed on its host once the delete is stored, never while in use. */
import assert from "node:assert/strict";
import type { PersistentVolumeConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { entityVersion, jobConfigJson } from "./api_json.ts";
import { UPDATE_SERVICE } from "./update_api.ts";
import { VOLUME_SERVICE } from "./volume_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

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

Deno.test("GetVolume and DeleteVolume refuse a volume id given as a bare string, as protobuf's JSON does a message", async () => {
  const rig = statefulService();
  const volumeId = volumeOf(rig);
  stop(rig);
  for (const method of ["GetVolume", "DeleteVolume"]) {
    for (
      const [id, message] of [
        [volumeId, `id: got "${volumeId}", expected a volume id as a message, {"value": "${volumeId}"}`],
        [undefined, "id: missing, expected a volume id"],
        [{ value: "" }, "id: missing, expected a volume id"],
      ] as const
    ) {
      rig.call(VOLUME_SERVICE, method, { id });
      await rig.reads();
      rig.store.settle();
      assert.deepEqual(rig.replies().map((r) => r.error), [{ code: "invalid-argument", message }], method);
    }
  }
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [], "nothing destroyed");
  assert.equal(rig.store.volumes.size, 1, "nothing deleted");
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
  assert.deepEqual(rig.transport.take("remove-sandboxes", "hostmgr"), [], "no sandbox removed before then");
  rig.store.settle();
  assert.deepEqual(rig.replies().map((r) => r.error), [undefined]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId, hostname: "h4" }] },
  ]);
  // Its runs' sandboxes go too, at once rather than after the retention period.
  assert.deepEqual(rig.transport.take("remove-sandboxes", "hostmgr"), [
    { kind: "remove-sandboxes", jobIds: [JOB_ID] },
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

/** Updates the stateful service to `instanceCount` instances mounting `volume`, one instance at a time. */
function updateTo(rig: JobmgrRig, instanceCount: number, volume: PersistentVolumeConfig): void {
  const next = makeJobConfig({ type: "SERVICE", instanceCount, task: { volume } });
  rig.call(UPDATE_SERVICE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: rig.job().configVersion } },
    updateConfig: { batchSize: 1 },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
}

/** The job's volumes as ListVolumes answers them: id, instance, host and container path. */
async function listed(rig: JobmgrRig) {
  rig.call(VOLUME_SERVICE, "ListVolumes", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  const volumes = (reply.body as { volumes: Record<string, Record<string, unknown>> }).volumes;
  return Object.entries(volumes).map(([id, v]) => ({
    id,
    instanceId: v.instanceId,
    hostname: v.hostname,
    containerPath: v.containerPath,
    sizeMB: v.sizeMB,
  }));
}

Deno.test("an instance removed by a shrink has its volume released: its record deleted and its data destroyed once stored", async () => {
  const volume = { containerPath: "data", sizeMB: 8 };
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2, task: { volume } });
  rig.launch([0], "h4");
  rig.launch([1], "h5");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h4" });
  rig.status(rig.taskId(1), "TASK_RUNNING", { hostname: "h5" });
  rig.store.settle();
  const [kept, removed] = [rig.task(0).volumeId!, rig.task(1).volumeId!];

  updateTo(rig, 1, volume);
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.deepEqual(kills, [rig.taskId(1)], "only the instance past the new count is stopped");
  rig.status(rig.taskId(1), "TASK_KILLED", { hostname: "h5" });
  assert.equal(rig.job().tasks.has(1), false, "instance 1 is removed");
  assert.deepEqual(
    rig.transport.take("destroy-volumes", "hostmgr"),
    [],
    "nothing destroyed before it is stored",
  );
  rig.store.settle();
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId: removed, hostname: "h5" }] },
  ]);
  assert.deepEqual(
    (await listed(rig)).map((v) => v.id),
    [kept],
    "the removed instance's volume is not listed",
  );

  // Grown again, the instance is a new one: a new volume, wherever it is placed.
  rig.tick(10_000);
  updateTo(rig, 2, volume);
  const [gang] = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.equal(gang.tasks[0].requiredHost, undefined, "not pinned to the released volume's host");
  const made = rig.launch([1], "h6").tasks[0].volume?.volumeId;
  assert.ok(made && made !== removed, `a new volume id, not the released ${removed}: got ${made}`);
  rig.store.settle();
  assert.deepEqual((await listed(rig)).map((v) => [v.id, v.instanceId, v.hostname]), [
    [kept, 0, "h4"],
    [made, 1, "h6"],
  ]);
});

Deno.test("ListVolumes shows the container path and size the instance mounts now, after an update changed them", async () => {
  const rig = statefulService();
  const volumeId = volumeOf(rig);
  updateTo(rig, 1, { containerPath: "data2", sizeMB: 16 });
  rig.transport.take("kill-tasks", "hostmgr");
  rig.status(rig.taskId(0), "TASK_KILLED", { hostname: "h4" });
  const launch = rig.launch([0], "h4");
  assert.deepEqual(
    launch.tasks[0].volume,
    { volumeId, containerPath: "data2", sizeMb: 16 },
    "the same volume",
  );
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h4" });
  rig.store.settle();
  const now = [{ id: volumeId, instanceId: 0, hostname: "h4", containerPath: "data2", sizeMB: 16 }];
  assert.deepEqual(await listed(rig), now);
  rig.call(VOLUME_SERVICE, "GetVolume", { id: { value: volumeId } });
  await rig.reads();
  const got = rig.replies()[0].body as { result: Record<string, unknown> };
  assert.deepEqual([got.result.containerPath, got.result.sizeMB], ["data2", 16]);

  // Stopped and no longer in memory after a restart: the store's copy is listed the same way.
  stop(rig);
  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  assert.equal(jm.jobs.has(JOB_ID), false, "an ended job is not recovered");
  jm.receive({
    kind: "api",
    reqId: 77,
    replyTo: "api/1",
    procedure: `${VOLUME_SERVICE}::ListVolumes`,
    body: { jobId: { value: JOB_ID } },
  });
  await rig.reads();
  await rig.reads();
  const [reply] = rig.replies();
  const volumes = (reply.body as { volumes: Record<string, Record<string, unknown>> }).volumes;
  assert.deepEqual([volumes[volumeId]?.containerPath, volumes[volumeId]?.sizeMB], ["data2", 16]);
});

Deno.test("deleting a job memory no longer holds (it ended before a restart) destroys its volumes' data too", async () => {
  const rig = statefulService();
  const volumeId = volumeOf(rig);
  stop(rig);
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  assert.equal(jm.jobs.has(JOB_ID), false, "an ended job is not recovered");
  jm.receive({
    kind: "api",
    reqId: 78,
    replyTo: "api/1",
    procedure: "peloton.api.job.JobManager::Delete",
    body: { id: { value: JOB_ID } },
  });
  await rig.reads();
  await rig.reads();
  assert.deepEqual(
    rig.transport.take("destroy-volumes", "hostmgr"),
    [],
    "nothing destroyed before it is stored",
  );
  rig.store.settle();
  await rig.reads();
  assert.deepEqual(rig.replies().map((r) => r.error), [undefined]);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [
    { kind: "destroy-volumes", volumes: [{ volumeId, hostname: "h4" }] },
  ]);
  assert.equal(rig.store.volumes.size, 0);
});

Deno.test("with fixedVolumes (Mesos), an update changing a volume's containerPath or sizeMB is refused, naming it", () => {
  const rig = statefulService("h4", new JobmgrRig({ fixedVolumes: true }));
  const volumeId = volumeOf(rig);
  for (
    const [volume, field] of [
      [{ containerPath: "data2", sizeMB: 8 }, "containerPath"],
      [{ containerPath: "data", sizeMB: 16 }, "sizeMB"],
    ] as const
  ) {
    const next = makeJobConfig({ type: "SERVICE", instanceCount: 1, task: { volume } });
    rig.call(UPDATE_SERVICE, "CreateUpdate", {
      jobId: { value: JOB_ID },
      jobConfig: { ...jobConfigJson(next), changeLog: { version: rig.job().configVersion } },
    });
    const [reply] = rig.replies();
    assert.equal(reply.error?.code, "invalid-argument", JSON.stringify(reply));
    assert.match(
      reply.error!.message,
      new RegExp(`^jobConfig\\.defaultConfig\\.volume\\.${field}: cannot change`),
    );
    assert.match(
      reply.error!.message,
      new RegExp(`instance 0 has persistent volume ${volumeId}: Mesos keeps`),
    );
  }
  assert.equal(rig.jm.updates.size, 0, "nothing changed");
  assert.equal(rig.job().configVersion, 1);
  // Another change of a stateful job is still an update.
  updateTo(rig, 2, { containerPath: "data", sizeMB: 8 });
});

Deno.test("a job manager started on its own learns fixed volumes from the host manager's full inventory", () => {
  const rig = statefulService("h4", new JobmgrRig());
  const change = () => {
    const next = makeJobConfig({
      type: "SERVICE",
      instanceCount: 1,
      task: { volume: { containerPath: "data2", sizeMB: 8 } },
    });
    rig.call(UPDATE_SERVICE, "CreateUpdate", {
      jobId: { value: JOB_ID },
      jobConfig: { ...jobConfigJson(next), changeLog: { version: rig.job().configVersion } },
    });
    return rig.replies()[0];
  };
  const inventory = (fixedVolumes?: true) =>
    rig.jm.receive({
      kind: "host-inventory",
      full: true,
      hosts: [{ hostname: "h4", attributes: {}, state: "HOST_STATE_UP" }],
      ...(fixedVolumes ? { fixedVolumes } : {}),
    });
  inventory(true);
  // A partial inventory says nothing of the backend.
  rig.jm.receive({ kind: "host-inventory", full: false, hosts: [] });
  const refused = change();
  assert.equal(refused.error?.code, "invalid-argument", JSON.stringify(refused));
  assert.match(refused.error!.message, /^jobConfig\.defaultConfig\.volume\.containerPath: cannot change/);
  assert.equal(rig.jm.updates.size, 0, "nothing changed");
  // A new host manager leader on a backend that can change volumes (the minicluster) lets it through.
  inventory();
  assert.equal(change().error, undefined);
  assert.equal(rig.jm.updates.size, 1);
});

Deno.test("with fixedVolumes, a PatchJob changing a volume's containerPath is refused; without, it is an update", async () => {
  for (const fixedVolumes of [true, false]) {
    const rig = statefulService("h4", new JobmgrRig({ fixedVolumes }));
    const job = rig.job();
    const version = entityVersion(job);
    rig.call(STATELESS_SERVICE, "PatchJob", {
      jobId: { value: JOB_ID },
      version: { value: version },
      spec: { defaultSpec: { volume: { containerPath: "data2", sizeMB: 8 } } },
    });
    await rig.reads();
    rig.store.settle();
    const [reply] = rig.replies();
    if (fixedVolumes) {
      assert.equal(reply.error?.code, "invalid-argument", JSON.stringify(reply));
      assert.match(
        reply.error!.message,
        /^spec\.defaultConfig\.volume\.containerPath: cannot change "data" to "data2"/,
      );
      assert.equal(rig.jm.updates.size, 0);
    } else {
      assert.equal(reply.error, undefined, JSON.stringify(reply));
      assert.equal(rig.jm.updates.size, 1);
    }
  }
});

Deno.test("a first run dropped before its launch (no offer could make its volume) leaves no volume, no pin, no failure", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.transport.take("enqueue-gangs", "resmgr");
  const placed = rig.launch([0], "h4").tasks[0].volume!.volumeId;
  rig.status(rig.taskId(0), "TASK_DROPPED", { hostname: "h4", reason: "REASON_INVALID_OFFERS" });
  rig.store.settle();
  const task = rig.task(0);
  assert.equal(task.volumeId, undefined, "the volume was never made");
  assert.equal(task.requiredHost, undefined, "not pinned to h4");
  assert.equal(task.failureCount, 0, "not the task's failure");
  assert.equal(rig.store.volumes.has(placed), false, "not recorded CREATED");
  assert.deepEqual(await listed(rig), []);
  assert.deepEqual(rig.transport.take("destroy-volumes", "hostmgr"), [], "nothing to destroy");
  const [gang] = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.ok(gang, "run again at once");
  assert.equal(gang.tasks[0].requiredHost, undefined);
  const made = rig.launch([0], "h5").tasks[0].volume?.volumeId;
  assert.ok(made && made !== placed, "a volume of its own where it is placed now");

  // A later run's launch dropped the same way keeps the volume it has: that one exists.
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h5" });
  rig.store.settle();
  assert.equal(rig.task(0).volumeId, made);
});
