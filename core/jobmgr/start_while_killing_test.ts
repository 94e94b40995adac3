/**
 * TaskManager.Start of tasks still being killed (a stop whose processes take their grace period to end): as
 * Peloton's Start regenerates each task's run, the kill's end starts the new run, rather than count as the
 * task's failure and leave it stopped.
 */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";

/** The Mesos task ids the host manager was asked to kill since last asked. */
const kills = (rig: JobmgrRig) =>
  rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));

/** The Mesos task ids the resource manager was asked to place since last asked. */
const enqueued = (rig: JobmgrRig) =>
  rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs).flatMap((g) => g.tasks)
    .map((t) => t.taskId);

/** A batch job of two instances, both RUNNING on h1. */
function runningBatch(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2, task: { killGracePeriodSeconds: 6 } });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  return rig;
}

const states = (rig: JobmgrRig) =>
  [...rig.job().tasks.values()].map((t) => `${t.runId}:${t.state}/${t.goalState}`);

Deno.test("a batch job stopped and started while its tasks are still being killed runs them again once killed", () => {
  const rig = runningBatch();
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  const killing = kills(rig);
  assert.deepEqual(states(rig), ["1:KILLING/KILLED", "1:KILLING/KILLED"]);
  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  const [started] = rig.replies();
  assert.deepEqual((started.body as { startedInstanceIds: number[] }).startedInstanceIds, [0, 1]);
  // The processes end 6 s later, at the end of their grace period.
  rig.tick(6_000);
  for (const id of killing) rig.status(id, "TASK_KILLED");
  rig.tick();
  assert.deepEqual(enqueued(rig), [`${JOB_ID}-0-2`, `${JOB_ID}-1-2`], "new runs, placed again");
  assert.deepEqual(states(rig), ["2:PENDING/SUCCEEDED", "2:PENDING/SUCCEEDED"]);
  assert.deepEqual([...rig.job().tasks.values()].map((t) => t.failureCount), [0, 0], "no failure counted");
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.store.settle();
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.goalState], ["RUNNING", "SUCCEEDED"]);
});

Deno.test("one instance stopped and started while being killed runs again once killed; a service's is not throttled", () => {
  for (const service of [false, true]) {
    const rig = service
      ? runningService(2, { job: { task: { killGracePeriodSeconds: 6 } } })
      : runningBatch();
    rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
    rig.replies();
    const [killing] = kills(rig);
    rig.api("task", "Start", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
    rig.replies();
    rig.status(killing, "TASK_KILLED");
    rig.tick();
    assert.deepEqual(enqueued(rig), [`${JOB_ID}-0-2`], `service: ${service}`);
    assert.equal(rig.task(0).message, undefined, "not held back as throttled");
  }
});

Deno.test("a job started while being stopped is no longer KILLING: it is RUNNING once its tasks run again", () => {
  const rig = runningBatch();
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  const [first, second] = kills(rig);
  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  // Instance 0 ends at once and runs again; instance 1 takes its grace period.
  rig.status(first, "TASK_KILLED");
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.store.settle();
  assert.equal(rig.job().runtime.state, "RUNNING");
  rig.tick(6_000);
  rig.status(second, "TASK_KILLED");
  rig.launch([1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  rig.store.settle();
  // Before, the job stayed KILLING, its tasks running, its goal SUCCEEDED.
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.goalState], ["RUNNING", "SUCCEEDED"]);
});

Deno.test("starting some instances of a stopped job brings its goal back: a refresh does not stop them again", () => {
  for (const service of [false, true]) {
    const rig = service ? runningService(2) : runningBatch();
    rig.api("task", "Stop", { jobId: { value: JOB_ID } });
    rig.replies();
    for (const id of kills(rig)) rig.status(id, "TASK_KILLED");
    rig.api("task", "Start", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
    rig.replies();
    assert.equal(rig.job().runtime.goalState, service ? "RUNNING" : "SUCCEEDED", `service: ${service}`);
    rig.launch([0]);
    rig.status(rig.taskId(0), "TASK_RUNNING");
    // Before, the job's goal stayed KILLED, and its next evaluation stopped instance 0 again.
    rig.api("job", "Refresh", { id: { value: JOB_ID } });
    rig.replies();
    rig.tick();
    assert.deepEqual(kills(rig), [], `service: ${service}`);
    assert.deepEqual([rig.task(0).state, rig.task(1).state], ["RUNNING", "KILLED"]);
  }
});
