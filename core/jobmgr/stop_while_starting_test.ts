/**
 * A stop (or restart) that comes while a task is still starting, with its RUNNING status already on the
 * way: the status must not drop the evaluation the stop queued, or the task runs on with its goal unmet.
 */
import assert from "node:assert/strict";
import type { MesosTaskState } from "../model/states.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

/** Delivers an API call without letting the goal-state engines run (the rig's `api` lets them). */
function receiveOnly(rig: JobmgrRig, procedure: string, body: unknown): void {
  rig.jm.receive({ kind: "api", reqId: 1, replyTo: "api/1", procedure, body });
}

const STARTING: MesosTaskState[] = ["TASK_STAGING", "TASK_STARTING"];

for (const before of STARTING) {
  Deno.test(`a task stopped while ${before}, its RUNNING status handled before the stop action: still killed, the job ends KILLED`, () => {
    const rig = new JobmgrRig();
    rig.create({ instanceCount: 2, task: { killGracePeriodSeconds: 30 } });
    rig.launch([0, 1]);
    for (const i of [0, 1]) rig.status(rig.taskId(i), before);
    rig.status(rig.taskId(0), "TASK_RUNNING");

    receiveOnly(rig, "peloton.api.task.TaskManager::Stop", { jobId: { value: JOB_ID } });
    // Instance 1's RUNNING was sent before the stop came, and is handled before the stop's evaluation runs.
    rig.status(rig.taskId(1), "TASK_RUNNING");

    const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
    assert.deepEqual(kills.sort(), [rig.taskId(0), rig.taskId(1)].sort(), "both instances are killed");
    assert.deepEqual([rig.task(0).state, rig.task(1).state], ["KILLING", "KILLING"]);
    for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_KILLED");
    assert.equal(rig.job().runtime.state, "KILLED");
  });
}

Deno.test("a service restarted while its task is starting, RUNNING handled before the restart acts: the task still runs again", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_STARTING");
  receiveOnly(rig, "peloton.api.job.JobManager::Restart", { id: { value: JOB_ID } });
  rig.status(rig.taskId(0), "TASK_RUNNING");

  const first = rig.taskId(0);
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId)), [
    first,
  ]);
  rig.status(first, "TASK_KILLED");
  assert.deepEqual([rig.task(0).runId, rig.task(0).state], [2, "PENDING"], "a new run is enqueued");
});

Deno.test("a task that starts RUNNING with nothing left to do keeps no evaluation queued (its launch timeout ends)", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_STARTING");
  assert.ok(rig.jm.taskEngine.isScheduled(rig.task(0)), "the launch timeout is queued");
  rig.status(rig.taskId(0), "TASK_RUNNING");
  assert.ok(!rig.jm.taskEngine.isScheduled(rig.task(0)), "no launch timeout queued for a running task");
  assert.deepEqual(rig.transport.take("kill-tasks"), []);
});
