import assert from "node:assert/strict";
import { mesosTaskId } from "../model/records.ts";
import { jobConfigJson } from "./api_json.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms: how long a run without a health check must stay RUNNING. */
const SETTLE_MS = 10_000;

/** A service job of `n` instances running `task`, all RUNNING on host h1. */
const service = (n: number, task = {}) =>
  runningService(n, { config: { initialTaskBackoffMs: 1_000 }, job: { task } });

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

Deno.test("a rolling update moves 10 instances to the new config in batches of 3", async () => {
  const rig = service(10);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 10, task: { command: cmd("echo v2") } });
  const reply = createUpdate(rig, next, { batchSize: 3 });
  const updateId = (reply.body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  const batches: number[][] = [];
  for (let i = 0; i < 4; i++) {
    batches.push(rig.rollBatch());
    rig.tick(SETTLE_MS);
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
  const rig = service(10);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 10, task: { command: cmd("exit 1") } });
  createUpdate(rig, next, {
    batchSize: 3,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  rig.tick();
  assert.deepEqual(rig.rollBatch("TASK_FAILED"), [0, 1, 2]);
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
  rig.tick(SETTLE_MS);
  assert.equal(u.state, "ROLLED_BACK");
  for (let i = 0; i < 10; i++) {
    assert.equal(
      rig.job().versions.get(rig.task(i).configVersion)!.config.defaultConfig.command!.value,
      "echo hello",
    );
  }
  for (let i = 3; i < 10; i++) assert.equal(rig.task(i).runId, 1, `instance ${i} was never touched`);
});

Deno.test("an update against a stale configuration version is refused as Peloton refuses it, and changes nothing", () => {
  const rig = service(2);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 2, task: { command: cmd("echo v2") } });
  // Peloton's clients re-read the job and retry on exactly this code and message.
  const reply = createUpdate(rig, next, { batchSize: 1 }, 7);
  assert.deepEqual(reply.error, { code: "invalid-argument", message: "invalid job configuration version" });
  // A changeLog without its version is version 0, as protobuf reads it: stale too.
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: {} },
    updateConfig: { batchSize: 1 },
  });
  assert.deepEqual(rig.replies()[0].error, {
    code: "invalid-argument",
    message: "invalid job configuration version",
  });
  // No changeLog at all is a request to fix, not a race to retry.
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: undefined },
    updateConfig: { batchSize: 1 },
  });
  assert.deepEqual(rig.replies()[0].error, {
    code: "invalid-argument",
    message: "jobConfig.changeLog: missing, expected the current configuration version 1",
  });
  assert.equal(rig.job().configVersion, 1);
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("pause stops taking new batches, resume continues, abort stops starting new ones", async () => {
  const rig = service(4);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 4, task: { command: cmd("echo v2") } });
  const id =
    (createUpdate(rig, next, { batchSize: 1 }).body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  rig.call(UPDATE, "PauseUpdate", { updateId: { value: id } });
  rig.replies();
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "paused: no next batch");
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [1]);
  rig.tick(SETTLE_MS);
  // Instance 2 is on its way (its batch started when 1 finished); abort stops there.
  rig.call(UPDATE, "AbortUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [2], "an instance already given the new config still gets it");
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
  const rig = service(3);
  createUpdate(rig, makeJobConfig({ type: "SERVICE", instanceCount: 5 }), { batchSize: 0 });
  rig.tick();
  assert.deepEqual([...rig.job().tasks.keys()], [0, 1, 2, 3, 4]);
  rig.launch([3, 4]);
  rig.status(rig.taskId(3), "TASK_RUNNING");
  rig.status(rig.taskId(4), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
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
  const rig = service(3);
  rig.api("job", "Restart", { id: { value: JOB_ID }, batchSize: 2 });
  rig.replies();
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0, 1]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch(), [2]);
  rig.tick(SETTLE_MS);
  assert.deepEqual([0, 1, 2].map((i) => rig.task(i).runId), [2, 2, 2]);
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("startPaused creates the update PAUSED; in-place updates ask for the same host", () => {
  const rig = service(1);
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

// ---------------------------------------------------------------------------------------------
// Instances without a health check: attempts, failures and the settle period (`minRunningSeconds`)

/** The instances whose tasks the host manager was asked to kill since the last look. */
function killedInstances(rig: JobmgrRig): number[] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) =>
    k.tasks.map((t) => Number(t.taskId.split("-").at(-2)))
  );
}

/** One run of a crash-at-once command: placed, RUNNING, and FAILED a moment later. */
function crashOnce(rig: JobmgrRig, i: number): void {
  rig.launch([i]);
  rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.status(rig.taskId(i), "TASK_FAILED");
}

async function updateInfo(rig: JobmgrRig, id: string) {
  rig.call(UPDATE, "GetUpdate", { updateId: { value: id } });
  await rig.reads();
  return (rig.replies()[0].body as {
    updateInfo: { status: { state: string; numTasksDone: number; numTasksFailed: number } };
  }).updateInfo.status;
}

const crashing = (n: number) =>
  makeJobConfig({ type: "SERVICE", instanceCount: n, task: { command: cmd("echo bad; exit 3") } });

Deno.test("a crash-at-once update fails on instance 0 after its attempts and rolls back; 1–3 are never touched", () => {
  const rig = service(4);
  const id = (createUpdate(rig, crashing(4), {
    batchSize: 1,
    maxInstanceAttempts: 2,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  }).body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  const u = rig.jm.updates.get(id)!;
  assert.deepEqual(killedInstances(rig), [0]);
  rig.status(mesosTaskId(JOB_ID, 0, 1), "TASK_KILLED");
  crashOnce(rig, 0);
  assert.equal(rig.task(0).failureCount, 1, "the first run at the new config is attempt 1");
  assert.deepEqual([u.state, u.instancesCurrent, u.instancesDone], ["ROLLING_FORWARD", [0], []]);
  rig.tick(1_000); // the restart throttling (initialTaskBackoffMs)
  crashOnce(rig, 0);
  assert.equal(rig.task(0).runId, 4, "runs 2 and 3 crashed; run 4 is the rollback's");
  assert.equal(u.state, "ROLLING_BACKWARD", "attempt 2 used up the attempts: one failed instance");
  assert.deepEqual(killedInstances(rig), [], "no other instance was stopped");
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.equal(u.state, "ROLLED_BACK");
  assert.equal(
    rig.job().versions.get(rig.task(0).configVersion)!.config.defaultConfig.command!.value,
    "echo hello",
  );
  // Never restarted; at the rollback's copy of version 1, which they run (Peloton's
  // handleUnchangedInstancesInUpdate after its RollbackWorkflow).
  for (const i of [1, 2, 3]) {
    assert.deepEqual(
      [rig.task(i).runId, rig.task(i).configVersion],
      [1, 3],
      `instance ${i} was never touched`,
    );
  }
});

Deno.test("without rollbackOnFailure the update FAILS once an instance used up maxInstanceAttempts", async () => {
  const rig = service(4);
  const id = (createUpdate(rig, crashing(4), { batchSize: 2, maxInstanceAttempts: 3, maxFailureInstances: 1 })
    .body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  assert.deepEqual(killedInstances(rig), [0, 1]);
  rig.status(mesosTaskId(JOB_ID, 0, 1), "TASK_KILLED");
  rig.status(mesosTaskId(JOB_ID, 1, 1), "TASK_KILLED");
  // Instance 1 comes up and stays up; instance 0 crashes on every run.
  rig.launch([1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  for (const backoffMs of [0, 1_000, 2_000]) {
    rig.tick(backoffMs);
    assert.equal((await updateInfo(rig, id)).state, "ROLLING_FORWARD");
    crashOnce(rig, 0);
  }
  const status = await updateInfo(rig, id);
  // Instance 1 had run 3 s of its 10 s settle period: not done, but it keeps the new config.
  assert.deepEqual([status.state, status.numTasksFailed, status.numTasksDone], ["FAILED", 1, 0]);
  assert.equal(rig.task(0).failureCount, 3);
  assert.deepEqual([rig.task(1).state, rig.task(1).configVersion], ["RUNNING", 2]);
  assert.deepEqual(killedInstances(rig), [], "instances 2 and 3 were never started");
  for (const i of [2, 3]) assert.deepEqual([rig.task(i).runId, rig.task(i).configVersion], [1, 1]);
});

Deno.test("a run without a health check counts done only after minRunningSeconds RUNNING at the new config", async () => {
  const rig = service(2);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 2, task: { command: cmd("echo v2") } });
  const id = (createUpdate(rig, next, { batchSize: 1, maxInstanceAttempts: 2, maxFailureInstances: 1 })
    .body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(SETTLE_MS - 1);
  assert.deepEqual(killedInstances(rig), [], "instance 0 has not settled yet: no next batch");
  rig.tick(1);
  assert.deepEqual(rig.rollBatch(), [1], "settled: instance 1 starts");
  // A crash within the settle period is a failed attempt, not a success.
  rig.tick(SETTLE_MS / 2);
  rig.status(rig.taskId(1), "TASK_FAILED");
  assert.equal(rig.task(1).failureCount, 1);
  rig.tick(1_000);
  rig.launch([1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  const status = await updateInfo(rig, id);
  assert.deepEqual([status.state, status.numTasksDone, status.numTasksFailed], ["SUCCEEDED", 2, 0]);
});

Deno.test("minRunningSeconds is an update option; with a health check, HEALTHY is done at once", () => {
  const rig = service(2);
  const quick = makeJobConfig({ type: "SERVICE", instanceCount: 2, task: { command: cmd("echo v2") } });
  createUpdate(rig, quick, { batchSize: 1, minRunningSeconds: 2 });
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(1_999);
  assert.deepEqual(killedInstances(rig), []);
  rig.tick(1);
  assert.deepEqual(rig.rollBatch(), [1]);
  rig.tick(2_000);
  assert.equal(rig.jm.updates.size, 0, "the update finished");

  const checked = makeJobConfig({
    type: "SERVICE",
    instanceCount: 2,
    task: {
      command: cmd("echo v3"),
      healthCheck: {
        enabled: true,
        type: "COMMAND",
        commandCheck: { command: "true" },
        initialIntervalSecs: 1,
        intervalSecs: 1,
        timeoutSecs: 1,
        maxConsecutiveFailures: 1,
      } as never,
    },
  });
  createUpdate(rig, checked, { batchSize: 1 }, 2);
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0]);
  assert.deepEqual(killedInstances(rig), [], "HEALTH_UNKNOWN: not done yet");
  rig.status(rig.taskId(0), "TASK_RUNNING", { healthy: true });
  assert.deepEqual(rig.rollBatch(), [1], "HEALTHY: done without waiting for the settle period");
  rig.status(rig.taskId(1), "TASK_RUNNING", { healthy: true });
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("JobManager Restart|Start|Stop take Peloton's restartConfig|startConfig|stopConfig.batchSize; bad ones change nothing", () => {
  const rig = service(3);
  // A stale resourceVersion and a bad batch size are refused, whether or not a batch size is given.
  for (
    const [body, code, message] of [
      // Peloton's answer, which its CLI's retryUntilConcurrencyControlSucceeds retries on.
      [{ resourceVersion: 7 }, "invalid-argument", /^invalid job configuration version$/],
      [
        { resourceVersion: 7, restartConfig: { batchSize: 1 } },
        "invalid-argument",
        /^invalid job configuration version$/,
      ],
      // Not a version at all: the caller's mistake, not a conflict to retry.
      [
        { resourceVersion: "abc" },
        "invalid-argument",
        /^resourceVersion: got "abc", expected a whole number$/,
      ],
      [{ configurationVersion: -1 }, "invalid-argument", /^configurationVersion: got -1, expected a whole/],
      [
        { restartConfig: { batchSize: -1 } },
        "invalid-argument",
        /restartConfig: batchSize: got -1, expected a whole/,
      ],
    ] as const
  ) {
    rig.api("job", "Restart", { id: { value: JOB_ID }, ...body });
    const [reply] = rig.replies();
    assert.equal(reply.error?.code, code, JSON.stringify(reply));
    assert.match(reply.error!.message, message);
  }
  rig.tick();
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "nothing was restarted");
  assert.equal(rig.jm.updates.size, 0);

  rig.api("job", "Restart", { id: { value: JOB_ID }, resourceVersion: 1, restartConfig: { batchSize: 1 } });
  rig.store.settle();
  const [reply] = rig.replies();
  assert.deepEqual(Object.keys(reply.body as object).sort(), ["resourceVersion", "updateID"]);
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0], "one instance at a time");
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch(), [1]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch(), [2]);
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.size, 0, "the rolling restart is over");

  rig.api("job", "Stop", { id: { value: JOB_ID }, stopConfig: { batchSize: 2 } });
  rig.store.settle();
  rig.replies();
  rig.tick();
  const stopping = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  assert.equal(stopping.length, 2, "two at a time");
});

Deno.test("JobManager Restart without a batch size is a workflow too, of every instance at once, as Peloton's", () => {
  const rig = service(3);
  rig.api("job", "Restart", { id: { value: JOB_ID } });
  rig.store.settle();
  const [reply] = rig.replies();
  const body = reply.body as { updateID: { value: string }; resourceVersion: number };
  assert.deepEqual(Object.keys(body).sort(), ["resourceVersion", "updateID"], "Peloton's RestartResponse");
  const u = rig.jm.updates.get(body.updateID.value)!;
  assert.deepEqual([u.type, u.config.batchSize], ["RESTART", 0]);
  rig.tick();
  assert.deepEqual(rig.rollBatch().sort(), [0, 1, 2], "all at once");
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.size, 0, "done");
});

Deno.test("only an update replaces a workflow in progress: a restart over an update, or an update over a restart, is refused", () => {
  const rig = service(3);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 3, task: { command: cmd("echo v2") } });
  const first =
    (createUpdate(rig, next, { batchSize: 1 }).body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  rig.api("job", "Restart", { id: { value: JOB_ID }, restartConfig: { batchSize: 1 } });
  const [refused] = rig.replies();
  assert.equal(refused.error?.code, "invalid-argument");
  assert.equal(
    refused.error?.message,
    `workflow RESTART cannot overwrite workflow UPDATE (${first}, ROLLING_FORWARD) of job ${JOB_ID}: abort it first`,
  );
  assert.equal(rig.jm.updates.get(first)?.state, "ROLLING_FORWARD", "the update goes on");
  // An update over an update is Peloton's overwrite: the first is aborted.
  const newer = makeJobConfig({ type: "SERVICE", instanceCount: 3, task: { command: cmd("echo v3") } });
  assert.equal(createUpdate(rig, newer, { batchSize: 1 }, 2).error, undefined);
  assert.equal(rig.store.updates.get(first)?.state, "ABORTED");
  // A rolling restart in progress is not overwritten by an update either.
  rig.jm.workflows.abortActive(rig.job());
  rig.api("job", "Restart", { id: { value: JOB_ID }, restartConfig: { batchSize: 1 } });
  assert.equal(rig.replies()[0].error, undefined);
  rig.tick();
  // At the version the restart made (a copy of 3, as Peloton's restart makes one).
  const again = createUpdate(rig, next, { batchSize: 1 }, 4);
  assert.equal(again.error?.code, "invalid-argument");
  assert.match(again.error!.message, /^workflow UPDATE cannot overwrite workflow RESTART /);
});
