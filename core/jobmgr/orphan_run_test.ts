/**
 * A run the job manager knows as ended that reports it is running (Peloton's task event handler kills such
 * orphans): a stop's kill overtook the launch, which waited for its LAUNCHING write, so the backend answered
 * "unknown" (LOST, recorded KILLED) and then ran the launch anyway.
 */
import assert from "node:assert/strict";
import type { MesosTaskState } from "../model/states.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

function kills(rig: JobmgrRig): [string, number][] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) =>
    k.tasks.map((t): [string, number] => [t.taskId, t.gracePeriodMs])
  );
}

/**
 * A 2-instance service whose instance 0 is placed, its launch held until its LAUNCHING write is stored, and
 * stopped meanwhile: the stop's kill goes out first and is answered "unknown"; then the launch goes out.
 * Returns the run's Mesos task id.
 */
function killOvertookLaunch(rig: JobmgrRig): string {
  rig.create({ type: "SERVICE", instanceCount: 2, task: { killGracePeriodSeconds: 1 } });
  const taskId = rig.taskId(0);
  rig.placements([{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks: [{ taskId, ports: {} }] }]);
  assert.equal(rig.task(0).state, "LAUNCHING");
  assert.deepEqual(rig.transport.take("launch-tasks", "hostmgr"), [], "held until stored LAUNCHING");
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
  assert.deepEqual(kills(rig).map(([id]) => id), [taskId], "the stop's kill goes out before the launch");
  rig.status(taskId, "TASK_LOST", { reason: "REASON_RECONCILIATION" });
  assert.equal(rig.task(0).state, "KILLED", "a stopped task's loss is its end");
  rig.store.settle();
  rig.replies();
  assert.equal(rig.transport.take("launch-tasks", "hostmgr").length, 1, "and the launch goes out after");
  return taskId;
}

Deno.test("a run recorded ended that reports it starts and runs is killed at once, once per status", () => {
  const rig = new JobmgrRig();
  const taskId = killOvertookLaunch(rig);
  const statuses: MesosTaskState[] = ["TASK_STAGING", "TASK_STARTING", "TASK_RUNNING"];
  for (const state of statuses) {
    rig.status(taskId, state);
    assert.deepEqual(kills(rig), [[taskId, 0]], `killed with no grace on ${state}`);
  }
  assert.equal(rig.task(0).state, "KILLED", "the run stays ended");
  assert.equal(rig.task(0).runId, 1, "no new run for it");
  assert.equal(rig.job().runtime.taskStats.KILLED, 1);
  rig.status(taskId, "TASK_KILLED");
  assert.deepEqual(kills(rig), [], "its end is not killed");
  assert.equal(rig.task(0).state, "KILLED");
});

Deno.test("statuses of runs legitimately ended, reconciliation echoes among them, kill nothing", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.status(rig.taskId(0), "TASK_FINISHED");
  rig.status(rig.taskId(1), "TASK_FAILED");
  assert.deepEqual(kills(rig), []);
  rig.status(rig.taskId(0), "TASK_FINISHED", { reason: "REASON_RECONCILIATION" });
  rig.status(rig.taskId(0), "TASK_LOST", { reason: "REASON_RECONCILIATION" });
  rig.status(rig.taskId(1), "TASK_FAILED", { reason: "REASON_RECONCILIATION" });
  rig.status(rig.taskId(1), "TASK_FAILED");
  assert.deepEqual(kills(rig), [], "an ended run's end, told again, is no orphan");
  assert.equal(rig.task(0).state, "SUCCEEDED");
});

Deno.test("a stopped service started again after its leaked run was killed runs one new run", () => {
  const rig = new JobmgrRig();
  const taskId = killOvertookLaunch(rig);
  rig.status(taskId, "TASK_RUNNING");
  assert.deepEqual(kills(rig), [[taskId, 0]]);
  rig.api("task", "Start", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
  rig.replies();
  assert.equal(rig.task(0).runId, 2, "a new run");
  assert.equal(rig.task(0).state, "PENDING");
  rig.status(taskId, "TASK_KILLED");
  assert.equal(rig.task(0).state, "PENDING", "the old run's end does not touch the new one");
  assert.deepEqual(kills(rig), []);
});
