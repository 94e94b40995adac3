/**
 * `stopBeforeUpdate` (v0 UpdateConfig): every instance the update changes is stopped before any starts on the
 * new config, so the old and the new version never run side by side.
 */
import assert from "node:assert/strict";
import type { JobConfig } from "../model/config_types.ts";
import { jobConfigJson } from "./api_json.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import type { JobManager } from "./jobmgr.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
const SETTLE_MS = 10_000;
const ALL = [0, 1, 2, 3];

const service = () => runningService(ALL.length, { config: { initialTaskBackoffMs: 1_000 } });

function v2(): JobConfig {
  const command = { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] };
  return makeJobConfig({ type: "SERVICE", instanceCount: ALL.length, task: { command } });
}

function createUpdate(rig: JobmgrRig, updateConfig: object): string {
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(v2()), changeLog: { version: 1 } },
    updateConfig,
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

/** The instances the host manager was asked to kill since last asked. */
function killed(rig: JobmgrRig): number[] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId))
    .map((id) => Number(id.split("-").at(-2)));
}

/** The instances sent to the resource manager since last asked. */
function enqueued(rig: JobmgrRig): number[] {
  return rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs)
    .flatMap((g) => g.tasks.map((t) => Number(t.taskId.split("-").at(-2))));
}

async function updateState(rig: JobmgrRig, updateId: string): Promise<string> {
  rig.call(UPDATE, "GetUpdate", { updateId: { value: updateId } });
  await rig.reads();
  return (rig.replies()[0].body as { updateInfo: { status: { state: string } } }).updateInfo.status.state;
}

Deno.test("stopBeforeUpdate: every instance is stopped first; batches start on the new config only once all ended", async () => {
  const rig = service();
  const updateId = createUpdate(rig, { batchSize: 2, stopBeforeUpdate: true });
  assert.deepEqual(killed(rig).sort(), ALL, "all four are stopped at once, whatever the batch size");
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_KILLED");
  rig.tick(SETTLE_MS);
  assert.deepEqual(enqueued(rig), [], "nothing starts while instance 3 of the old config still runs");
  assert.deepEqual(ALL.map((i) => rig.task(i).state), ["KILLED", "KILLED", "KILLED", "KILLING"]);

  rig.status(rig.taskId(3), "TASK_KILLED");
  assert.deepEqual(enqueued(rig), [0, 1], "then the first batch, on the new config");
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(enqueued(rig), [2, 3]);
  rig.launch([2, 3]);
  for (const i of [2, 3]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.equal(await updateState(rig, updateId), "SUCCEEDED");
  for (const i of ALL) {
    const t = rig.task(i);
    assert.deepEqual([t.state, t.goalState, t.configVersion, t.runId], ["RUNNING", "RUNNING", 2, 2], `${i}`);
  }
});

Deno.test("stopBeforeUpdate: aborted while stopping, the stopped instances run again on the config they had", async () => {
  const rig = service();
  const updateId = createUpdate(rig, { batchSize: 2, stopBeforeUpdate: true });
  killed(rig);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_KILLED");
  rig.call(UPDATE, "AbortUpdate", { updateId: { value: updateId } });
  rig.replies();
  rig.tick();
  assert.equal(await updateState(rig, updateId), "ABORTED");
  for (const i of [2, 3]) rig.status(rig.taskId(i), "TASK_KILLED");
  rig.tick(1_000);
  assert.deepEqual(enqueued(rig).sort(), ALL, "every instance runs again");
  for (const i of ALL) {
    assert.deepEqual([rig.task(i).goalState, rig.task(i).configVersion], ["RUNNING", 1], `${i}`);
  }
});

Deno.test("stopBeforeUpdate survives a job manager restart in the middle of its stop", async () => {
  const rig = service();
  const updateId = createUpdate(rig, { batchSize: 4, stopBeforeUpdate: true });
  killed(rig);
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.store.settle();
  rig.transport.drain();
  const jm: JobManager = await rig.restartJobManager();
  rig.tick();
  rig.transport.drain();
  const report = (i: number, state: "TASK_KILLED" | "TASK_RUNNING", run: number) => {
    jm.receive({
      kind: "task-statuses",
      statuses: [{
        taskId: `${JOB_ID}-${i}-${run}`,
        state,
        pelotonState: state === "TASK_KILLED" ? "KILLED" : "RUNNING",
        hostname: "h1",
        agentId: "agent-h1",
        timeMs: rig.ports.clock.now(),
      }],
    });
    rig.tick();
  };
  for (const i of [1, 2]) report(i, "TASK_KILLED", 1);
  assert.deepEqual(enqueued(rig), [], "instance 3 has not stopped yet");
  report(3, "TASK_KILLED", 1);
  assert.deepEqual(enqueued(rig).sort(), ALL, "all start on the new config");
  const job = jm.jobs.get(JOB_ID)!;
  for (const i of ALL) {
    assert.deepEqual([job.tasks.get(i)!.configVersion, job.tasks.get(i)!.goalState], [2, "RUNNING"]);
  }
  assert.equal(jm.updates.get(updateId)?.state, "ROLLING_FORWARD");
});

Deno.test("stopBeforeUpdate with rollbackOnFailure: a failed first batch rolls back, and the instances no batch took run again", () => {
  const rig = service();
  createUpdate(rig, {
    batchSize: 2,
    stopBeforeUpdate: true,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  for (const i of killed(rig)) rig.status(rig.taskId(i), "TASK_KILLED");
  assert.deepEqual(enqueued(rig), [0, 1]);
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_FAILED");
  rig.tick();
  const u = [...rig.jm.updates.values()][0];
  assert.equal(u.state, "ROLLING_BACKWARD");
  assert.deepEqual(
    enqueued(rig).sort(),
    ALL,
    "0 and 1 roll back; 2 and 3, never updated, start as they were",
  );
  assert.deepEqual(ALL.map((i) => rig.task(i).goalState), ["RUNNING", "RUNNING", "RUNNING", "RUNNING"]);
  // 2 and 3 run the config they had, the rollback's version now (Peloton's handleUnchangedInstancesInUpdate).
  assert.deepEqual(ALL.map((i) => rig.task(i).configVersion), [3, 3, 3, 3]);
});
