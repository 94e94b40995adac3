/**
 * A run that ended FAILED or LOST without a Mesos reason records the reason Peloton reads from such a
 * status: the enum's 0, REASON_COMMAND_EXECUTOR_FAILED (a command's non-zero exit sends none).
 */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;

Deno.test("FAILED and LOST without a reason record REASON_COMMAND_EXECUTOR_FAILED; a reason given stands", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 5 });
  rig.launch([0, 1, 2, 3, 4]);
  for (const i of [0, 1, 2, 3, 4]) rig.status(id(i), "TASK_RUNNING");
  rig.status(id(0), "TASK_FAILED");
  rig.status(id(1), "TASK_FAILED", { reason: "REASON_CONTAINER_LIMITATION_MEMORY" });
  rig.status(id(2), "TASK_LOST");
  rig.status(id(3), "TASK_KILLED");
  rig.status(id(4), "TASK_FINISHED");
  assert.deepEqual([rig.task(0).state, rig.task(0).reason], ["FAILED", "REASON_COMMAND_EXECUTOR_FAILED"]);
  assert.deepEqual([rig.task(1).state, rig.task(1).reason], ["FAILED", "REASON_CONTAINER_LIMITATION_MEMORY"]);
  // A LOST run is a system failure, run again; the lost run, in the task's history, keeps its reason.
  assert.deepEqual(
    rig.task(2).history!.map((h) => [h.state, h.reason]),
    [["LOST", "REASON_COMMAND_EXECUTOR_FAILED"]],
  );
  // Peloton records no Mesos reason for the other states.
  assert.deepEqual([rig.task(3).state, rig.task(3).reason], ["KILLED", undefined]);
  assert.deepEqual([rig.task(4).state, rig.task(4).reason], ["SUCCEEDED", undefined]);
  rig.store.settle();
  assert.equal(rig.store.task(JOB_ID, 0)!.reason, "REASON_COMMAND_EXECUTOR_FAILED", "stored so");
});
