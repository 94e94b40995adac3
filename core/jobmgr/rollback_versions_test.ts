/**
 * The config versions a rolled-back update reports: it went from the version it abandons to the rollback's
 * copy of the one before, as Peloton's RollbackWorkflow stores them (PrevJobConfigVersion: the abandoned one).
 */
import assert from "node:assert/strict";
import {
  createServiceUpdate,
  JOB_ID,
  JobmgrRig,
  relaunchKilled,
  runningService,
} from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms: how long a run without a health check must stay RUNNING. */
const SETTLE_MS = 10_000;
const N = 2;

/** Creates an update from the job's current config version; its id. */
const createUpdate = (rig: JobmgrRig, command: string, updateConfig: object) =>
  createServiceUpdate(rig, command, N, updateConfig);

/** A service at config version 2, the update from 1 to 2 done. */
function atVersion2(): JobmgrRig {
  const rig = runningService(N, { config: { initialTaskBackoffMs: 1_000 } });
  const id = createUpdate(rig, "echo v2", { batchSize: N });
  rig.tick();
  assert.equal(rig.rollBatch().length, N);
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.get(id), undefined, "the update to version 2 ended");
  assert.equal(rig.job().configVersion, 2);
  return rig;
}

/** Lets the rollback in progress bring every instance back up. */
const finishRollback = (rig: JobmgrRig) => relaunchKilled(rig, N, SETTLE_MS);

/** `[configVersion, prevConfigVersion]` of v0 GetUpdate and of v1alpha ListJobWorkflows and GetJob. */
async function reported(rig: JobmgrRig, id: string) {
  rig.call(UPDATE, "GetUpdate", { updateId: { value: id } });
  await rig.reads();
  const [got] = rig.replies();
  assert.equal(got.error, undefined, JSON.stringify(got.error));
  const info = (got.body as { updateInfo: { configVersion: number; prevConfigVersion: number } }).updateInfo;
  rig.call(STATELESS_SERVICE, "ListJobWorkflows", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [listed] = rig.replies();
  assert.equal(listed.error, undefined, JSON.stringify(listed.error));
  const [newest] = (listed.body as { workflowInfos: { status: WorkflowStatus }[] }).workflowInfos;
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [job] = rig.replies();
  assert.equal(job.error, undefined, JSON.stringify(job.error));
  const status = (job.body as { workflowInfo: { status: WorkflowStatus } }).workflowInfo.status;
  const configOf = (v: { value: string }) => Number(v.value.split("-")[0]);
  return {
    v0: [info.configVersion, info.prevConfigVersion],
    list: [configOf(newest.status.version), configOf(newest.status.prevVersion)],
    get: [configOf(status.version), configOf(status.prevVersion)],
  };
}

interface WorkflowStatus {
  version: { value: string };
  prevVersion: { value: string };
}

Deno.test("an update rolled back on failure reports the version it abandoned as the one it came from", async () => {
  const rig = atVersion2();
  const id = createUpdate(rig, "exit 1", {
    batchSize: N,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  rig.tick();
  rig.rollBatch("TASK_FAILED");
  rig.tick();
  const u = rig.jm.updates.get(id)!;
  assert.equal(u.state, "ROLLING_BACKWARD");
  assert.equal(rig.job().configVersion, 4, "the rollback's copy of version 2");
  const during = { v0: [4, 3], list: [4, 3], get: [4, 3] };
  assert.deepEqual(await reported(rig, id), during, "rolling back: from 3 to 4");

  finishRollback(rig);
  assert.equal(rig.store.updates.get(id)?.state, "ROLLED_BACK");
  assert.deepEqual(await reported(rig, id), during, "rolled back, as stored");
  for (let i = 0; i < N; i++) {
    assert.equal(
      rig.job().versions.get(rig.task(i).configVersion)!.config.defaultConfig.command!.value,
      "echo v2",
      `instance ${i} runs version 2's config again`,
    );
  }
});

Deno.test("a manual rollback reports the version it abandoned; a later update and its rollback still work", async () => {
  const rig = atVersion2();
  const id = createUpdate(rig, "echo v3", { batchSize: 1 });
  rig.tick();
  rig.call(UPDATE, "RollbackUpdate", { updateId: { value: id } });
  const [rolled] = rig.replies();
  assert.equal(rolled.error, undefined, JSON.stringify(rolled.error));
  assert.equal(rig.jm.updates.get(id)!.state, "ROLLING_BACKWARD");
  assert.deepEqual(await reported(rig, id), { v0: [4, 3], list: [4, 3], get: [4, 3] });
  // Paused and resumed, it still goes back to version 2's config.
  rig.call(UPDATE, "PauseUpdate", { updateId: { value: id } });
  rig.call(UPDATE, "ResumeUpdate", { updateId: { value: id } });
  assert.deepEqual(rig.replies().map((r) => r.error), [undefined, undefined]);
  finishRollback(rig);
  assert.equal(rig.store.updates.get(id)?.state, "ROLLED_BACK");
  for (let i = 0; i < N; i++) {
    assert.equal(
      rig.job().versions.get(rig.task(i).configVersion)!.config.defaultConfig.command!.value,
      "echo v2",
    );
  }

  // The next update goes from the rollback's version, and its own rollback back to it.
  const next = createUpdate(rig, "echo v5", { batchSize: 1 });
  rig.tick();
  rig.call(UPDATE, "RollbackUpdate", { updateId: { value: next } });
  assert.equal(rig.replies()[0].error, undefined);
  assert.deepEqual(await reported(rig, next), { v0: [6, 5], list: [6, 5], get: [6, 5] });
  finishRollback(rig);
  assert.equal(rig.store.updates.get(next)?.state, "ROLLED_BACK");
  assert.equal(rig.job().versions.get(6)!.config.defaultConfig.command!.value, "echo v2");
  assert.equal(entityVersion(rig.job()).split("-")[0], "6");
});
