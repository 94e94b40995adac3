/** `task stop` of instances that ended: one with nothing left to run is left alone; one due to run again is stopped. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;
const range = { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] };

Deno.test("task stop of a succeeded batch task changes nothing, so a later task start does not run it again", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0, 1]);
  rig.status(id(0), "TASK_RUNNING");
  rig.status(id(0), "TASK_FINISHED");
  assert.equal(rig.task(0).state, "SUCCEEDED");
  rig.api("task", "Stop", range);
  const [stop] = rig.replies();
  assert.deepEqual((stop.body as { stoppedInstanceIds: number[] }).stoppedInstanceIds, []);
  assert.equal(rig.task(0).goalState, "SUCCEEDED", "its goal is left as it was");
  rig.api("task", "Start", range);
  const [start] = rig.replies();
  assert.deepEqual((start.body as { startedInstanceIds: number[] }).startedInstanceIds, []);
  assert.deepEqual([rig.task(0).state, rig.task(0).runId], ["SUCCEEDED", 1], "not run again");
});

Deno.test("task stop of a failed service instance waiting to restart stops it, and says so", () => {
  // A long restart backoff keeps the failed instance FAILED, due to run again.
  const rig = runningService(1, { config: { initialTaskBackoffMs: 60_000 } });
  rig.status(id(0), "TASK_FAILED");
  assert.deepEqual([rig.task(0).state, rig.task(0).goalState], ["FAILED", "RUNNING"]);
  rig.api("task", "Stop", range);
  const [stop] = rig.replies();
  assert.deepEqual((stop.body as { stoppedInstanceIds: number[] }).stoppedInstanceIds, [0]);
  assert.equal(rig.task(0).goalState, "KILLED");
  rig.tick(120_000);
  assert.deepEqual([rig.task(0).state, rig.task(0).runId], ["FAILED", 1], "not restarted");
});
