/**
 * The scheduler killed right after it stored work for an ended batch job: a restart the client was told of,
 * a failed task's retry. Recovery loads the job and does the work; a job with nothing left is not loaded.
 */
import assert from "node:assert/strict";
import { MESOS_TO_TASK_STATE, type MesosTaskState } from "../model/states.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

const ALL = [0, 1, 2];

/** A 3-instance batch job whose runs all ended `end`; everything stored and the engine idle. */
function endedBatch(end: MesosTaskState, task = {}): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "BATCH", instanceCount: ALL.length, task });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  for (const i of ALL) rig.status(rig.taskId(i), end);
  rig.tick(60_000);
  rig.store.settle();
  rig.transport.take("enqueue-gangs");
  rig.replies();
  return rig;
}

/** The job manager dies with what is stored; a new one recovers and runs what is due. Instances started. */
async function crashAndRecover(rig: JobmgrRig): Promise<{ loaded: boolean; started: number[] }> {
  rig.jm.stop();
  rig.transport.take("enqueue-gangs");
  const jm = await rig.restartJobManager();
  rig.tick(60_000);
  const started = rig.transport.take("enqueue-gangs").flatMap((m) => m.gangs.flatMap((g) => g.tasks));
  return {
    loaded: jm.jobs.has(JOB_ID),
    started: started.map((t) => Number(t.taskId.split("-").at(-2))).sort((a, b) => a - b),
  };
}

for (const end of ["TASK_FINISHED", "TASK_FAILED"] as const) {
  Deno.test(`a batch job ended ${end}, restarted, then the scheduler killed: recovery runs it again`, async () => {
    const rig = endedBatch(end);
    assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, end === "TASK_FINISHED" ? "SUCCEEDED" : "FAILED");
    rig.jm.receive({
      kind: "api",
      reqId: 100,
      replyTo: "api/1",
      procedure: "peloton.api.task.TaskManager::Restart",
      body: { jobId: { value: JOB_ID } },
    });
    // Answered once stored; the engine has not moved a task yet.
    rig.store.settle();
    assert.equal(rig.transport.take("api-reply", "api/1").at(-1)?.error, undefined);
    assert.deepEqual(await crashAndRecover(rig), { loaded: true, started: ALL });
  });
}

Deno.test("a batch task failed with retries left, stored before its retry, then the scheduler killed: it is retried", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "BATCH", instanceCount: ALL.length, task: { restartPolicy: { maxFailures: 3 } } });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  // Every run fails; the statuses are stored before the engine acts on them.
  rig.jm.receive({
    kind: "task-statuses",
    statuses: ALL.map((i) => ({
      taskId: rig.taskId(i),
      state: "TASK_FAILED" as const,
      pelotonState: MESOS_TO_TASK_STATE.TASK_FAILED,
      hostname: "h1",
      agentId: "agent-h1",
      timeMs: rig.ports.clock.now(),
    })),
  });
  rig.store.settle();
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "FAILED", "stored as ended");
  assert.deepEqual(await crashAndRecover(rig), { loaded: true, started: ALL });
});

Deno.test("an ended batch job with nothing left to do is not loaded again: killed runs past their retries", async () => {
  const rig = endedBatch("TASK_KILLED");
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED");
  assert.deepEqual(await crashAndRecover(rig), { loaded: false, started: [] });
});
