import assert from "node:assert/strict";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";

/** Launches instances and reports them RUNNING. */
function run(rig: JobmgrRig, instances: number[]): void {
  rig.launch(instances);
  for (const i of instances) rig.status(rig.taskId(i), "TASK_RUNNING");
}

/** Every job state the job manager stored. */
function storedJobStates(rig: JobmgrRig): string[] {
  return rig.store.batches.flat().flatMap((w) => w.kind === "job.put" ? [w.job.runtime.state] : []);
}

Deno.test("tasks LOST by reconciliation after restarts run again at once, uncounted, and the job never FAILs", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  run(rig, [0, 1]);
  assert.equal(rig.job().runtime.state, "RUNNING");
  for (let restart = 1; restart <= 3; restart++) {
    for (const i of [0, 1]) {
      rig.status(rig.taskId(i), "TASK_LOST", { reason: "REASON_RECONCILIATION" });
    }
    rig.tick();
    for (const i of [0, 1]) {
      const t = rig.task(i);
      assert.equal(t.failureCount, 0, `restart ${restart}: instance ${i} failure count`);
      assert.equal(t.runId, restart + 1, `restart ${restart}: instance ${i} runs again without waiting`);
      assert.equal(t.state, "PENDING");
      assert.notEqual(t.message, "Task throttled due to failure");
      assert.equal(t.history?.at(-1)?.reason, "REASON_RECONCILIATION");
    }
    assert.notEqual(rig.job().runtime.state, "FAILED");
    assert.equal(rig.job().runtime.completionTimeMs, undefined);
    run(rig, [0, 1]);
    assert.equal(rig.job().runtime.state, "RUNNING");
  }
  assert.ok(!storedJobStates(rig).includes("FAILED"), `stored states: ${storedJobStates(rig)}`);
  assert.equal(rig.store.jobs.get(rig.job().jobId)!.runtime.completionTimeMs, undefined);
});

Deno.test("a failure that reconciliation reports again still counts and is throttled", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1 });
  run(rig, [0]);
  rig.status(rig.taskId(0), "TASK_FAILED", { reason: "REASON_RECONCILIATION" });
  rig.tick();
  assert.equal(rig.task(0).failureCount, 1);
  assert.equal(rig.task(0).state, "FAILED");
  assert.equal(rig.task(0).message, "Task throttled due to failure");
});

Deno.test("a job that leaves a terminal state loses its completion time", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({ type: "SERVICE", instanceCount: 1 });
  run(rig, [0]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  assert.equal(rig.job().runtime.state, "FAILED");
  assert.notEqual(rig.job().runtime.completionTimeMs, undefined);
  rig.tick(1_000);
  assert.equal(rig.task(0).runId, 2, "run again after the backoff");
  run(rig, [0]);
  assert.equal(rig.job().runtime.state, "RUNNING");
  assert.equal(rig.job().runtime.completionTimeMs, undefined);
  assert.equal(rig.store.jobs.get(rig.job().jobId)!.runtime.completionTimeMs, undefined);
});
