import assert from "node:assert/strict";
import { jobConfigJson } from "./api_json.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";

/** A service job of `n` instances, all RUNNING on host h1. */
function runningService(n: number, task = {}) {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({ type: "SERVICE", instanceCount: n, task });
  const all = [...Array(n).keys()];
  rig.launch(all);
  for (const i of all) rig.status(rig.taskId(i), "TASK_RUNNING");
  return rig;
}

function createUpdate(
  rig: JobmgrRig,
  config: ReturnType<typeof makeJobConfig>,
  updateConfig: object,
  version = 1,
) {
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(config), changeLog: { version } },
    updateConfig,
  });
  const [reply] = rig.replies();
  return reply;
}

/** Finishes the current batch: each stopped instance is KILLED, restarted and RUNNING again. */
function roll(rig: JobmgrRig, outcome: "TASK_RUNNING" | "TASK_FAILED" = "TASK_RUNNING"): number[] {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  const batch = kills.map((id) => Number(id.split("-").at(-2)));
  for (const id of kills) rig.status(id, "TASK_KILLED");
  rig.launch(batch);
  for (const i of batch) rig.status(rig.taskId(i), outcome);
  return batch;
}

Deno.test("a rolling update moves 10 instances to the new config in batches of 3", async () => {
  const rig = runningService(10);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 10, task: { command: cmd("echo v2") } });
  const reply = createUpdate(rig, next, { batchSize: 3 });
  const updateId = (reply.body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  const batches: number[][] = [];
  for (let i = 0; i < 4; i++) {
    batches.push(roll(rig));
    rig.tick();
  }
  assert.deepEqual(batches, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
  for (let i = 0; i < 10; i++) assert.equal(rig.task(i).configVersion, 2);
  rig.call(UPDATE, "GetUpdate", { updateId: { value: updateId } });
  await rig.reads();
  const info =
    (rig.replies()[0].body as { updateInfo: { status: { state: string; numTasksDone: number } } }).updateInfo;
  assert.deepEqual([info.status.state, info.status.numTasksDone], ["SUCCEEDED", 10]);
  assert.equal(rig.job().runtime.updateId, undefined);
});

Deno.test("an update that fails rolls back when asked to: failed instances go back to the old config", () => {
  const rig = runningService(10);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 10, task: { command: cmd("exit 1") } });
  createUpdate(rig, next, {
    batchSize: 3,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  rig.tick();
  assert.deepEqual(roll(rig, "TASK_FAILED"), [0, 1, 2]);
  rig.tick();
  const u = [...rig.jm.updates.values()][0];
  assert.equal(u.state, "ROLLING_BACKWARD");
  assert.equal(rig.job().configVersion, 3, "the rollback is a new version with the old config");
  // The failed runs start again at once under the old config, as third runs.
  for (const i of [0, 1, 2]) {
    assert.deepEqual([rig.task(i).state, rig.task(i).configVersion, rig.task(i).runId], ["PENDING", 3, 3]);
  }
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick();
  assert.equal(u.state, "ROLLED_BACK");
  for (let i = 0; i < 10; i++) {
    assert.equal(
      rig.job().versions.get(rig.task(i).configVersion)!.config.defaultConfig.command!.value,
      "echo hello",
    );
  }
  for (let i = 3; i < 10; i++) assert.equal(rig.task(i).runId, 1, `instance ${i} was never touched`);
});

Deno.test("an update against a stale configuration version is refused and changes nothing", () => {
  const rig = runningService(2);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 2, task: { command: cmd("echo v2") } });
  const reply = createUpdate(rig, next, { batchSize: 1 }, 7);
  assert.equal(reply.error?.code, "aborted");
  assert.match(
    reply.error!.message,
    /changeLog\.version: got 7, expected the current configuration version 1/,
  );
  assert.equal(rig.job().configVersion, 1);
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("pause stops taking new batches, resume continues, abort stops starting new ones", async () => {
  const rig = runningService(4);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 4, task: { command: cmd("echo v2") } });
  const id =
    (createUpdate(rig, next, { batchSize: 1 }).body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  rig.call(UPDATE, "PauseUpdate", { updateId: { value: id } });
  rig.replies();
  assert.deepEqual(roll(rig), [0]);
  rig.tick();
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "paused: no next batch");
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.deepEqual(roll(rig), [1]);
  // Instance 2 is on its way (its batch started when 1 finished); abort stops there.
  rig.call(UPDATE, "AbortUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.deepEqual(roll(rig), [2], "an instance already given the new config still gets it");
  rig.tick();
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "no batch after the abort");
  assert.deepEqual([0, 1, 2, 3].map((i) => rig.task(i).configVersion), [2, 2, 2, 1]);
  rig.call(UPDATE, "GetUpdate", { updateId: { value: id } });
  await rig.reads();
  assert.equal(
    (rig.replies()[0].body as { updateInfo: { status: { state: string } } }).updateInfo.status.state,
    "ABORTED",
  );
});

Deno.test("an update that adds and removes instances starts the new ones and deletes the extra ones", () => {
  const rig = runningService(3);
  createUpdate(rig, makeJobConfig({ type: "SERVICE", instanceCount: 5 }), { batchSize: 0 });
  rig.tick();
  assert.deepEqual([...rig.job().tasks.keys()], [0, 1, 2, 3, 4]);
  rig.launch([3, 4]);
  rig.status(rig.taskId(3), "TASK_RUNNING");
  rig.status(rig.taskId(4), "TASK_RUNNING");
  rig.tick();
  assert.equal(rig.jm.updates.size, 0, "the update finished");
  createUpdate(rig, makeJobConfig({ type: "SERVICE", instanceCount: 2 }), { batchSize: 0 }, 2);
  rig.tick();
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.deepEqual(kills.map((id) => Number(id.split("-").at(-2))), [2, 3, 4]);
  for (const id of kills) rig.status(id, "TASK_KILLED");
  rig.tick();
  assert.deepEqual([...rig.job().tasks.keys()], [0, 1]);
  assert.equal(rig.store.task(JOB_ID, 4), undefined, "deleted from the store too");
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("a rolling restart gives each instance a new run, batch by batch", () => {
  const rig = runningService(3);
  rig.api("job", "Restart", { id: { value: JOB_ID }, batchSize: 2 });
  rig.replies();
  rig.tick();
  assert.deepEqual(roll(rig), [0, 1]);
  rig.tick();
  assert.deepEqual(roll(rig), [2]);
  rig.tick();
  assert.deepEqual([0, 1, 2].map((i) => rig.task(i).runId), [2, 2, 2]);
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("startPaused creates the update PAUSED; in-place updates ask for the same host", () => {
  const rig = runningService(1);
  const id =
    (createUpdate(rig, makeJobConfig({ type: "SERVICE", instanceCount: 1, task: { command: cmd("v2") } }), {
      startPaused: true,
      inPlace: true,
    }).body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  assert.equal(rig.jm.updates.get(id)!.state, "PAUSED");
  assert.deepEqual(rig.transport.take("kill-tasks"), []);
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  const [kill] = rig.transport.take("kill-tasks", "hostmgr");
  rig.status(kill.tasks[0].taskId, "TASK_KILLED");
  const gang = rig.transport.take("enqueue-gangs", "resmgr").at(-1)!.gangs[0];
  assert.equal(gang.tasks[0].desiredHost, "h1");
});

function cmd(value: string) {
  return { shell: true, value, arguments: [], environment: { variables: [] }, uris: [] };
}
