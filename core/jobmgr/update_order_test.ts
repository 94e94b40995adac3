/**
 * The order a rolling workflow takes instances in (Peloton's `getInstancesForUpdateRun` with
 * `sortInstancesByAvailability`): instances down first, then stopped ones, then running ones, so that a
 * batch takes as few running instances down as it can; ties by instance id.
 */
import assert from "node:assert/strict";
import type { JobConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, type JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./api_json.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";

function v2(n: number): JobConfig {
  const command = { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] };
  return makeJobConfig({ type: "SERVICE", instanceCount: n, task: { command } });
}

function createUpdate(rig: JobmgrRig, updateConfig: object): void {
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(v2(rig.job().config.instanceCount)), changeLog: { version: 1 } },
    updateConfig,
  });
  assert.equal(rig.replies()[0].error, undefined);
  rig.tick();
}

/** The instances the host manager was asked to kill since last asked. */
const killed = (rig: JobmgrRig) =>
  rig.transport.take("kill-tasks", "hostmgr").flatMap((k) =>
    k.tasks.map((t) => Number(t.taskId.split("-").at(-2)))
  );

/** The instances the workflow took since the last call, in order, as it took them. */
function taken(rig: JobmgrRig, seen: Set<number>): number[] {
  const [u] = rig.jm.updates.values();
  const out = [...u.instancesDone, ...u.instancesFailed, ...u.instancesCurrent].filter((i) => !seen.has(i));
  for (const i of out) seen.add(i);
  return out;
}

Deno.test("an update takes an instance that went down before the healthy ones still to update", () => {
  const rig = runningService(4, { config: { initialTaskBackoffMs: 60_000 } });
  createUpdate(rig, { batchSize: 1, maxInstanceAttempts: 1, maxFailureInstances: 1, minRunningSeconds: 5 });
  const seen = new Set<number>();
  assert.deepEqual(taken(rig, seen), [0]);
  assert.deepEqual(killed(rig), [0]);
  // Instance 3 crashes while 0 is updated: its restart is held back (throttled), and it is down.
  rig.tick(2_000);
  rig.status(rig.taskId(3), "TASK_FAILED");
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.tick(5_000);
  // Before, 1 and then 2 were taken down while 3 was down, and 3 came last.
  assert.deepEqual(taken(rig, seen), [3], "the instance down goes next");
  assert.deepEqual(killed(rig), [], "it runs no more: nothing to kill, it starts on the new config");
  rig.launch([3]);
  rig.status(rig.taskId(3), "TASK_RUNNING");
  rig.tick(5_000);
  assert.deepEqual(taken(rig, seen), [1]);
});

Deno.test("an update takes stopped instances before running ones, the running ones in id order", () => {
  const rig = runningService(4);
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 2, to: 3 }] });
  rig.replies();
  assert.deepEqual(killed(rig), [2]);
  rig.status(rig.taskId(2), "TASK_KILLED");
  createUpdate(rig, { batchSize: 2 });
  const seen = new Set<number>();
  // A stopped instance is updated at once (it takes the new config when started): the batch moves on.
  assert.deepEqual(taken(rig, seen), [2, 0, 1]);
  assert.deepEqual(killed(rig), [0, 1]);
});
