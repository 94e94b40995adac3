import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import type { JobManager } from "./jobmgr.ts";

const ALL = [0, 1, 2];

/** A running 3-instance service whose tasks have a 20 s kill grace period. */
const service = () => runningService(ALL.length, { job: { task: { killGracePeriodSeconds: 20 } } });

/** The process dies with its kills in flight; a new job manager recovers from the store. */
async function crashAndRecover(rig: JobmgrRig): Promise<JobManager> {
  rig.store.settle();
  rig.transport.drain();
  return await rig.restartJobManager();
}

Deno.test("a task KILLING when the scheduler restarted is killed again, with the rest of its grace period", async () => {
  const rig = service();
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  assert.equal(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks).length, ALL.length);
  assert.deepEqual(ALL.map((i) => rig.task(i).state), ["KILLING", "KILLING", "KILLING"]);
  rig.tick(5_000);

  const jm = await crashAndRecover(rig);
  const sent = rig.transport.drain().filter((s) => s.to === "hostmgr").map((s) => s.msg);
  assert.deepEqual(sent.map((m) => m.kind), ["reconcile-tasks", "kill-tasks"], "registered, then killed");
  const kills = sent[1].kind === "kill-tasks" ? sent[1].tasks : [];
  assert.deepEqual(
    kills.map((k) => [k.taskId, k.gracePeriodMs, k.hostname]),
    ALL.map((i) => [`${JOB_ID}-${i}-1`, 15_000, "h1"]),
  );

  // Reconciliation finds them still running: they stay KILLING until the kill lands.
  for (const i of ALL) {
    rig.report(jm, `${JOB_ID}-${i}-1`, "TASK_RUNNING");
    rig.tick();
  }
  const job = jm.jobs.get(JOB_ID)!;
  assert.deepEqual([...job.tasks.values()].map((t) => t.state), ["KILLING", "KILLING", "KILLING"]);
  for (const i of ALL) {
    rig.report(jm, `${JOB_ID}-${i}-1`, "TASK_KILLED");
    rig.tick();
  }
  assert.deepEqual([...job.tasks.values()].map((t) => t.state), ["KILLED", "KILLED", "KILLED"]);
  assert.equal(job.runtime.state, "KILLED");
});

Deno.test("a task PREEMPTING when the scheduler restarted is killed again, at once past its grace period, then runs again", async () => {
  const rig = service();
  rig.placements([], [], [{ taskId: rig.taskId(1), reason: "PREEMPTION_REASON_REVOKE_RESOURCES" }]);
  assert.equal(rig.task(1).state, "PREEMPTING");
  rig.tick(60_000);

  const jm = await crashAndRecover(rig);
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks);
  assert.deepEqual(kills.map((k) => [k.taskId, k.gracePeriodMs]), [[`${JOB_ID}-1-1`, 0]]);

  rig.report(jm, `${JOB_ID}-1-1`, "TASK_KILLED");
  rig.tick();
  const task = jm.jobs.get(JOB_ID)!.tasks.get(1)!;
  assert.deepEqual([task.runId, task.state, task.goalState], [2, "PENDING", "RUNNING"]);
});
