import assert from "node:assert/strict";
import type { HostInventory } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { DEFAULT_UPDATE_CONFIG } from "./workflow.ts";

const host = (
  hostname: string,
  state: HostInventory["hosts"][number]["state"] = "HOST_STATE_UP",
  attributes = {},
) => ({
  hostname,
  attributes,
  state,
});

function inventory(rig: JobmgrRig, full: boolean, hosts: HostInventory["hosts"]) {
  rig.jm.receive({ kind: "host-inventory", full, hosts });
  rig.tick();
}

const pinned = (rig: JobmgrRig) =>
  [...rig.job().tasks.values()].filter((t) => t.goalState !== "DELETED").map((t) => t.requiredHost).sort();

Deno.test("a daemon job runs one instance on every matching host that is up", () => {
  const rig = new JobmgrRig();
  rig.create({
    type: "DAEMON",
    instanceCount: 0,
    task: {
      constraint: {
        type: "LABEL_CONSTRAINT",
        labelConstraint: {
          kind: "HOST",
          condition: "EQUAL",
          label: { key: "pool", value: "edge" },
          requirement: 1,
        },
      },
    },
  });
  assert.equal(rig.job().runtime.state, "PENDING", "no hosts known yet: not finished");
  inventory(rig, true, [
    host("a", "HOST_STATE_UP", { pool: "edge" }),
    host("b", "HOST_STATE_UP", { pool: "core" }),
    host("c", "HOST_STATE_DRAINING", { pool: "edge" }),
    host("d", "HOST_STATE_UP", { pool: "edge" }),
  ]);
  assert.deepEqual(pinned(rig), ["a", "d"]);
  const gangs = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(gangs.map((g) => g.tasks[0].requiredHost).sort(), ["a", "d"]);
  assert.equal(rig.job().config.instanceCount, 2);
});

Deno.test("a daemon job follows hosts: a new host gets an instance, a lost or drained one loses its", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "DAEMON", instanceCount: 0 });
  inventory(rig, true, [host("a"), host("b")]);
  assert.deepEqual(pinned(rig), ["a", "b"]);
  inventory(rig, false, [host("c")]);
  assert.deepEqual(pinned(rig), ["a", "b", "c"]);
  // b goes into maintenance: its instance is stopped and removed for good.
  const onB = [...rig.job().tasks.values()].find((t) => t.requiredHost === "b")!;
  rig.launch([onB.instanceId], "b");
  rig.status(rig.taskId(onB.instanceId), "TASK_RUNNING", { hostname: "b" });
  inventory(rig, false, [host("b", "HOST_STATE_DRAINING")]);
  assert.deepEqual(pinned(rig), ["a", "c"]);
  const kill = rig.transport.takeOne("kill-tasks", "hostmgr");
  assert.equal(kill.tasks[0].taskId, rig.taskId(onB.instanceId));
  rig.status(kill.tasks[0].taskId, "TASK_KILLED", { hostname: "b" });
  assert.equal(rig.job().tasks.has(onB.instanceId), false, "deleted once stopped");
  inventory(rig, false, [host("a", "LOST")]);
  assert.deepEqual(pinned(rig), ["c"]);
  assert.equal(rig.job().config.instanceCount, 1);
});

Deno.test("a stateful task gets a volume on its first host; later runs must go back there", async () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 64 } } });
  const launch = rig.launch([0], "h7");
  const volumeId = rig.task(0).volumeId!;
  assert.match(volumeId, new RegExp(`^${JOB_ID}-0-volume-[0-9a-f-]{36}$`), "its job, instance and a UUID");
  assert.deepEqual(launch.tasks[0].volume, { volumeId, containerPath: "data", sizeMb: 64 });
  assert.equal(launch.tasks[0].resources.diskMb, 64, "the volume's size is reserved as disk");
  assert.equal(rig.task(0).requiredHost, "h7");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h7" });
  rig.status(rig.taskId(0), "TASK_FAILED", { hostname: "h7" });
  rig.tick(1_000);
  const retry = rig.transport.take("enqueue-gangs", "resmgr").at(-1)!.gangs[0].tasks[0];
  assert.equal(retry.requiredHost, "h7");
  rig.call("peloton.api.v0.volume.svc.VolumeService", "ListVolumes", { jobId: { value: JOB_ID } });
  await rig.reads();
  const vols =
    (rig.replies()[0].body as { volumes: Record<string, { hostname: string; sizeMB: number }> }).volumes;
  assert.deepEqual(Object.values(vols).map((v) => [v.hostname, v.sizeMB]), [["h7", 64]]);
});

Deno.test("a batch job may have a volume, as Peloton's test_stateful_job.yaml: retries go back to its host", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({
    instanceCount: 1,
    task: { volume: { containerPath: "testvolumepath", sizeMB: 20 }, restartPolicy: { maxFailures: 2 } },
  });
  const launch = rig.launch([0], "h3");
  assert.equal(launch.tasks[0].volume?.volumeId, rig.task(0).volumeId);
  assert.match(rig.task(0).volumeId!, new RegExp(`^${JOB_ID}-0-volume-`));
  assert.equal(rig.task(0).requiredHost, "h3");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h3" });
  rig.status(rig.taskId(0), "TASK_FAILED", { hostname: "h3" });
  rig.tick(1_000);
  const retry = rig.transport.take("enqueue-gangs", "resmgr").at(-1)!.gangs[0].tasks[0];
  assert.deepEqual([retry.requiredHost, retry.taskType], ["h3", "BATCH"]);
  rig.launch([0], "h3");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h3" });
  rig.status(rig.taskId(0), "TASK_FINISHED", { hostname: "h3" });
  rig.store.settle();
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
});

Deno.test("a volume in use cannot be deleted; once its task stopped, deleting it unpins the task", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1, task: { volume: { containerPath: "data", sizeMB: 8 } } });
  rig.launch([0], "h1");
  rig.status(rig.taskId(0), "TASK_RUNNING");
  const VOL = "peloton.api.v0.volume.svc.VolumeService";
  const volumeId = rig.task(0).volumeId!;
  rig.call(VOL, "DeleteVolume", { id: { value: volumeId } });
  await rig.reads();
  assert.equal(rig.replies()[0].error?.code, "failed-precondition");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.call(VOL, "DeleteVolume", { id: { value: volumeId } });
  await rig.reads();
  assert.deepEqual(rig.replies()[0].body, {});
  assert.equal(rig.task(0).requiredHost, undefined);
  assert.equal(rig.store.volumes.size, 0);
});

Deno.test("elastic jobs: JobManager.Update grows and shrinks a batch job; added instances go through admission", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  const config = { ...rig.job().config, instanceCount: 4 };
  rig.api("job", "Update", { id: { value: JOB_ID }, config: { ...config, respoolID: { value: "pool-a" } } });
  assert.match(JSON.stringify(rig.replies()[0].body), /now has 4 instances/);
  const added = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) =>
    m.gangs.map((g) => g.tasks[0].instanceId)
  );
  assert.deepEqual(added, [2, 3]);
  rig.api("job", "Update", { id: { value: JOB_ID }, config: { ...config, instanceCount: 1 } });
  const shrunk = rig.replies()[0].body as { message: string; instancesRemoved: number[] };
  assert.equal(
    shrunk.message,
    `job ${JOB_ID} now has 1 instance; stopping instances 1-3, past the new count`,
  );
  assert.deepEqual(shrunk.instancesRemoved, [1, 2, 3]);
  assert.deepEqual(
    [...rig.job().tasks.keys()],
    [0],
    "pending instances beyond the count are dropped and deleted",
  );
  assert.deepEqual(rig.transport.take("drop-tasks", "resmgr").flatMap((m) => m.taskIds).length, 3);
  assert.equal(rig.job().configVersion, 3);
});

Deno.test("an instance removed by a shrink and added back by a growth starts a new run: no Mesos task id twice", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0, 1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  const config = { ...rig.job().config, respoolID: { value: "pool-a" } };
  rig.api("job", "Update", { id: { value: JOB_ID }, config: { ...config, instanceCount: 1 } });
  rig.replies();
  const [kill] = rig.transport.take("kill-tasks", "hostmgr").flatMap((m) => m.tasks);
  assert.equal(kill.taskId, `${JOB_ID}-1-1`);
  rig.status(kill.taskId, "TASK_KILLED");
  assert.equal(rig.job().tasks.has(1), false, "instance 1 is removed");

  // The job manager restarts in between: what it knows of removed runs is in the store.
  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.tick();
  rig.transport.drain();
  jm.receive({
    kind: "api",
    reqId: 50,
    replyTo: "api/1",
    procedure: "peloton.api.job.JobManager::Update",
    body: { id: { value: JOB_ID }, config: { ...config, instanceCount: 2, changeLog: { version: 2 } } },
  });
  rig.tick();
  rig.store.settle();
  assert.equal(rig.replies()[0].error, undefined);
  const gangs = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(
    gangs.flatMap((g) => g.tasks.map((t) => t.taskId)),
    [`${JOB_ID}-1-2`],
    "run 2, not 1 again",
  );
});

Deno.test("a batch job shrunk during its rolling restart: the restart still ends, the removed instances need none", () => {
  const rig = new JobmgrRig();
  const ALL = [0, 1, 2, 3];
  rig.create({ instanceCount: ALL.length });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  const killed = () => {
    for (const k of rig.transport.take("kill-tasks", "hostmgr").flatMap((m) => m.tasks)) {
      rig.status(k.taskId, "TASK_KILLED");
    }
  };
  // The API refuses to restart a batch job (service_only_test.ts); the workflow is made directly, as one a
  // store written before that holds would be recovered.
  const { updateId } = rig.jm.workflows.create(rig.job(), {
    type: "RESTART",
    config: { ...DEFAULT_UPDATE_CONFIG, batchSize: 1 },
  });
  rig.jm.flush();
  rig.tick();
  killed();
  // Instance 0 is being restarted; 1 to 3, still to restart, go.
  const config = { ...rig.job().config, instanceCount: 1, respoolID: { value: "pool-a" } };
  rig.api("job", "Update", { id: { value: JOB_ID }, config });
  assert.deepEqual((rig.replies()[0].body as { instancesRemoved: number[] }).instancesRemoved, [1, 2, 3]);
  killed();
  assert.deepEqual([...rig.job().tasks.keys()], [0]);
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.status(rig.taskId(0), "TASK_FINISHED");
  rig.tick(60_000);
  rig.store.settle();
  assert.equal(rig.store.updates.get(updateId)?.state, "SUCCEEDED", "the restart ended");
  assert.equal(rig.jm.updates.size, 0);
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.updateId], ["SUCCEEDED", undefined]);
});

Deno.test("JobManager.Update refuses changes other than the instance count, and stale versions", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  const config = rig.job().config;
  rig.api("job", "Update", {
    id: { value: JOB_ID },
    config: { ...config, name: "renamed", instanceCount: 3 },
  });
  const [r1] = rig.replies();
  assert.equal(r1.error?.code, "invalid-argument");
  assert.match(r1.error!.message, /config\.name: a job update may change only instanceCount/);
  rig.api("job", "Update", {
    id: { value: JOB_ID },
    config: { ...config, instanceCount: 3, changeLog: { version: 9 } },
  });
  const [r2] = rig.replies();
  assert.deepEqual(r2.error, {
    code: "invalid-argument",
    message: "invalid job configuration version: got 9, the job is at 1",
  });
  assert.equal(rig.job().tasks.size, 2);
  assert.equal(rig.job().configVersion, 1);
});

Deno.test("JobManager.Update resizes batch jobs only, as Peloton's: a service or daemon is refused, unchanged", () => {
  for (const type of ["SERVICE", "DAEMON"] as const) {
    const rig = new JobmgrRig();
    rig.create({ type, instanceCount: type === "DAEMON" ? 0 : 2 });
    const before = JSON.stringify([rig.job().config, [...rig.job().tasks.values()]]);
    const config = { ...rig.job().config, instanceCount: 4, respoolID: { value: "pool-a" } };
    rig.api("job", "Update", { id: { value: JOB_ID }, config });
    const [r] = rig.replies();
    assert.deepEqual(r.error, {
      code: "invalid-argument",
      message: `type: job ${JOB_ID} is ${type}, expected BATCH: JobManager.Update resizes batch jobs only; ` +
        "a service changes through a rolling update (UpdateService.CreateUpdate, JobService.ReplaceJob), " +
        "a daemon's instances follow its hosts",
    }, type);
    assert.equal(JSON.stringify([rig.job().config, [...rig.job().tasks.values()]]), before, type);
    assert.equal(rig.job().configVersion, 1);
  }
});

Deno.test("task Get of a daemon instance whose host left says it was removed; ids past the last never existed", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "DAEMON", instanceCount: 0 });
  inventory(rig, true, [host("a"), host("b"), host("c")]);
  const on = (h: string) => [...rig.job().tasks.values()].find((t) => t.requiredHost === h)!.instanceId;
  const [a, b, c] = [on("a"), on("b"), on("c")];
  assert.deepEqual([a, b, c], [0, 1, 2]);
  rig.launch([a], "a");
  rig.status(rig.taskId(a), "TASK_RUNNING", { hostname: "a" });
  inventory(rig, false, [host("a", "LOST")]);
  rig.status(rig.transport.takeOne("kill-tasks", "hostmgr").tasks[0].taskId, "TASK_KILLED", {
    hostname: "a",
  });
  rig.store.settle();
  assert.equal(rig.job().tasks.has(a), false);
  assert.equal(rig.job().config.instanceCount, 2, "instance 2 is there with an instance count of 2");

  const get = async (instanceId: number) => {
    rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId });
    await rig.reads();
    if (rig.job().tasks.get(instanceId)?.state === "PENDING") rig.answerWaits();
    const [reply] = rig.replies();
    assert.equal(reply.error, undefined, JSON.stringify(reply.error));
    return reply.body as { results?: unknown[]; outOfRange?: { instanceCount: number; message: string } };
  };
  assert.equal((await get(c)).results?.length, 1);
  assert.deepEqual((await get(a)).outOfRange, {
    jobId: { value: JOB_ID },
    instanceCount: 2,
    message:
      `instance 0 of job ${JOB_ID} was removed when its host a left the daemon job's hosts (down, in maintenance, or no longer matching its constraint); ` +
      `its last run, ${JOB_ID}-0-1, ended KILLED`,
  });
  assert.equal(
    (await get(3)).outOfRange?.message,
    `instance 3 is out of range: job ${JOB_ID} has 2 instances: 1-2`,
  );
});
