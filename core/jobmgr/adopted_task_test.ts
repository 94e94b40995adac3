/** Statuses a restart or a framework's removal leaves behind: when an adopted task started, a removed framework. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;

Deno.test("a RUNNING task's start time goes back to when its agent says it started, not a reconciliation's", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  const started = rig.ports.clock.now();
  rig.ports.clock.advance(10_000);
  // Reconciliation confirms it first (as after a restart mid-launch): it counts from now for a while.
  rig.status(id(0), "TASK_RUNNING", { reason: "REASON_RECONCILIATION" });
  assert.equal(rig.task(0).startTimeMs, started + 10_000);
  // A later echo of the reconciliation changes nothing; the agent's own RUNNING, sent again, sets it right.
  rig.status(id(0), "TASK_RUNNING", { reason: "REASON_RECONCILIATION", timeMs: started });
  assert.equal(rig.task(0).startTimeMs, started + 10_000);
  rig.status(id(0), "TASK_RUNNING", { timeMs: started });
  assert.equal(rig.task(0).startTimeMs, started);
  rig.status(id(0), "TASK_RUNNING", { timeMs: started + 20_000 });
  assert.equal(rig.task(0).startTimeMs, started, "never later");
});

Deno.test("a task gone with its removed framework runs again at once, not counted as its failure", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, task: { restartPolicy: { maxFailures: 0 } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  rig.status(id(0), "TASK_GONE", { reason: "REASON_FRAMEWORK_REMOVED" });
  const t = rig.task(0);
  assert.equal(t.runId, 2);
  assert.equal(t.failureCount, 0);
  assert.notEqual(t.state, "FAILED");
});
