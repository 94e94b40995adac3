/**
 * The config versions a workflow leaves a job's instances at, as Peloton's: a restart (and a v0 start or
 * stop) runs the job's current config under a new version, and the instances a workflow does not take move
 * to its version without a restart (`handleUnchangedInstancesInUpdate`); and how a workflow started paused
 * reports and resumes.
 */
import assert from "node:assert/strict";
import {
  createServiceUpdate,
  JOB_ID,
  type JobmgrRig,
  relaunchKilled,
  runningService,
  shellCommand,
} from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms. */
const SETTLE_MS = 10_000;

const cmd = shellCommand;
const createUpdate = createServiceUpdate;

/** Each instance's `[configVersion, desired config version]`, by instance id. */
function versions(rig: JobmgrRig): [number, number][] {
  return [...rig.job().tasks.values()].sort((a, b) => a.instanceId - b.instanceId)
    .map((t) => [t.configVersion, t.desiredConfigVersion ?? t.configVersion]);
}

/** The command of the config version instance `i` runs. */
function commandOf(rig: JobmgrRig, i: number): string | undefined {
  return rig.job().versions.get(rig.task(i).configVersion)?.config.defaultConfig.command?.value;
}

/** Lets every instance killed be placed again and run. */
const relaunchAll = (rig: JobmgrRig) => relaunchKilled(rig, 3, SETTLE_MS);

/** Six instances on v1, an update to v2 one at a time aborted once instance 0 is on v2. */
function abortedUpdate(): JobmgrRig {
  const rig = runningService(6, { job: { task: { command: cmd("echo v1") } } });
  const id = createUpdate(rig, "echo v2", 6, { batchSize: 1 });
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(SETTLE_MS);
  rig.call(UPDATE, "AbortUpdate", { updateId: { value: id } });
  rig.replies();
  assert.equal(rig.jm.updates.get(id), undefined, "the update was aborted");
  return rig;
}

Deno.test("RestartJob restarts every pod on the job's current spec, at a new config version", () => {
  const rig = abortedUpdate();
  assert.equal(rig.job().configVersion, 2);
  rig.call(STATELESS_SERVICE, "RestartJob", {
    jobId: { value: JOB_ID },
    version: { value: entityVersion(rig.job()) },
    restartSpec: { batchSize: 0 },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  assert.equal(rig.job().configVersion, 3, "a copy of version 2, as Peloton's RestartJob makes");
  const u = rig.jm.updates.get(rig.job().runtime.updateId!)!;
  assert.deepEqual([u.jobConfigVersion, u.prevJobConfigVersion], [3, 2]);
  relaunchAll(rig);
  assert.equal(rig.jm.updates.get(u.updateId), undefined, "the restart ended");
  assert.deepEqual(versions(rig), Array(6).fill([3, 3]));
  for (let i = 0; i < 6; i++) assert.equal(commandOf(rig, i), "echo v2", `instance ${i} runs the job's spec`);
});

Deno.test("v0 Restart of some instances restarts them on the current spec; of the others, those on it move to its version", () => {
  const rig = abortedUpdate();
  rig.api("job", "Restart", { id: { value: JOB_ID }, ranges: [{ from: 1, to: 3 }] });
  const [reply] = rig.replies();
  assert.equal((reply.body as { resourceVersion: number }).resourceVersion, 3);
  relaunchAll(rig);
  // Pod 0 runs the current spec (the aborted update took it): it moves. Pods 3 to 5 still run version 1's
  // spec, and keep saying so (Peloton would move them too, to a version whose spec they do not run).
  assert.deepEqual(versions(rig), [[3, 3], [3, 3], [3, 3], [1, 1], [1, 1], [1, 1]]);
  assert.equal(commandOf(rig, 1), "echo v2");
  assert.equal(commandOf(rig, 2), "echo v2");
});

Deno.test("instances an update leaves unchanged move to its config version without a restart", async () => {
  const rig = runningService(6, { job: { task: { command: cmd("echo v1") } } });
  const runs = [...rig.job().tasks.values()].map((t) => t.runId);
  createUpdate(rig, "echo v1", 8, { batchSize: 0 });
  rig.tick();
  assert.deepEqual(versions(rig).slice(0, 6), Array(6).fill([2, 2]), "moved when the update starts");
  assert.deepEqual([...rig.job().tasks.values()].slice(0, 6).map((t) => t.runId), runs, "not restarted");
  assert.equal(rig.transport.take("kill-tasks", "hostmgr").length, 0);
  rig.store.settle();
  const stored = (await rig.store.getTasks(JOB_ID)).filter((t) => t.instanceId < 6);
  assert.deepEqual(
    stored.map((t) => [t.configVersion, t.desiredConfigVersion]),
    Array(6).fill([2, undefined]),
  );
  relaunchAll(rig);
  assert.deepEqual(versions(rig), Array(8).fill([2, 2]));

  // A failing update rolled back after its first batch: the instances it never took move to the rollback's.
  createUpdate(rig, "exit 1", 8, {
    batchSize: 2,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  rig.tick();
  rig.rollBatch("TASK_FAILED");
  rig.tick();
  assert.equal(rig.job().configVersion, 4, "rolling back to a copy of version 2");
  assert.deepEqual(versions(rig).slice(2), Array(6).fill([4, 4]));
  relaunchAll(rig);
  assert.deepEqual(versions(rig), Array(8).fill([4, 4]));
});

Deno.test("a workflow started paused was INITIALIZED before, and resumed it starts rolling forward", async () => {
  const rig = runningService(2, { job: { task: { command: cmd("echo v1") } } });
  const id = createUpdate(rig, "echo v2", 2, { batchSize: 1, startPaused: true });
  rig.tick();
  const u = rig.jm.updates.get(id)!;
  assert.deepEqual([u.state, u.prevState], ["PAUSED", "INITIALIZED"]);
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [got] = rig.replies();
  const status = (got.body as { workflowInfo: { status: { state: string; prevState: string } } }).workflowInfo
    .status;
  assert.deepEqual([status.state, status.prevState], ["WORKFLOW_STATE_PAUSED", "WORKFLOW_STATE_INITIALIZED"]);
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  rig.replies();
  rig.tick();
  assert.equal(u.state, "ROLLING_FORWARD");
  assert.deepEqual(rig.rollBatch(), [0]);
});
