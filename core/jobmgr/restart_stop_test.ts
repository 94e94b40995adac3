import assert from "node:assert/strict";
import type { MappedTaskStatus } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import type { JobManager } from "./jobmgr.ts";

const COUNT = 10;
const ALL = [...Array(COUNT).keys()];

/** A running 10-instance service, stopped through TaskManager::Stop; `engineRan` lets the stop actions run. */
function stoppedService(engineRan: boolean): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: COUNT });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.jm.receive({
    kind: "api",
    reqId: 99,
    replyTo: "api/1",
    procedure: "peloton.api.task.TaskManager::Stop",
    body: { jobId: { value: JOB_ID } },
  });
  if (engineRan) {
    rig.tick();
    assert.equal(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks).length, COUNT);
  }
  rig.store.settle();
  return rig;
}

/**
 * `peloton up` killed -9 and started again: a new job manager recovers the active jobs from the store, and
 * the backend's reconciliation reports the tasks the crashed process left as lost.
 */
async function crashAndRecover(rig: JobmgrRig): Promise<JobManager> {
  rig.jm.stop();
  rig.transport.take("kill-tasks");
  rig.transport.take("enqueue-gangs");
  const jm = await rig.restartJobManager();
  const statuses: MappedTaskStatus[] = ALL.map((i) => ({
    taskId: `${JOB_ID}-${i}-1`,
    state: "TASK_LOST",
    pelotonState: "LOST",
    hostname: "h1",
    agentId: "agent-h1",
    timeMs: rig.ports.clock.now(),
    reason: "REASON_RECONCILIATION",
    message: "Reconciliation: Task is unknown",
  }));
  jm.receive({ kind: "task-statuses", statuses });
  rig.tick(60_000);
  return jm;
}

for (const engineRan of [true, false]) {
  const when = engineRan ? "while its tasks were being killed" : "before its stop actions ran";
  Deno.test(`a service stopped, then the scheduler killed ${when}: its lost tasks end KILLED, so does the job`, async () => {
    const rig = stoppedService(engineRan);
    const stored = [...rig.store.tasks.values()].filter((t) => t.jobId === JOB_ID);
    assert.deepEqual(new Set(stored.map((t) => t.goalState)), new Set(["KILLED"]), "the stop is stored");

    const jm = await crashAndRecover(rig);
    const job = jm.jobs.get(JOB_ID)!;
    const tasks = [...job.tasks.values()];
    assert.deepEqual(tasks.map((t) => t.state), ALL.map(() => "KILLED"));
    assert.deepEqual(tasks.map((t) => t.runId), ALL.map(() => 1), "no new run of a stopped task");
    assert.match(tasks[0].message ?? "", /^Stopped task LOST event: Reconciliation: Task is unknown$/);
    assert.deepEqual([job.runtime.state, job.runtime.goalState], ["KILLED", "KILLED"]);
    assert.deepEqual(job.runtime.taskStats.LOST ?? 0, 0);
    assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "nothing is started again");
    rig.store.settle();
    assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED", "stored KILLED");
  });
}

Deno.test("a running task reported lost by reconciliation still runs again: only a stopped one ends KILLED", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: COUNT });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.store.settle();
  const jm = await crashAndRecover(rig);
  const job = jm.jobs.get(JOB_ID)!;
  assert.deepEqual([...job.tasks.values()].map((t) => t.runId), ALL.map(() => 2));
  assert.equal(job.runtime.goalState, "RUNNING");
});

for (const ranges of [undefined, [{ from: 0, to: 3 }]]) {
  const which = ranges ? "some of its instances" : "the whole job";
  Deno.test(`a stopped service whose start of ${which} was stored, then the scheduler killed: recovery starts them`, async () => {
    const rig = stoppedService(true);
    for (const i of ALL) rig.status(rig.taskId(i), "TASK_KILLED");
    rig.store.settle();
    assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED");
    rig.jm.receive({
      kind: "api",
      reqId: 100,
      replyTo: "api/1",
      procedure: "peloton.api.task.TaskManager::Start",
      body: { jobId: { value: JOB_ID }, ranges },
    });
    // Answered once stored; the process dies before the goal-state engine moved a task.
    rig.store.settle();
    assert.equal(rig.transport.take("api-reply", "api/1").at(-1)?.error, undefined);
    assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED", "stored as ended");
    rig.jm.stop();
    rig.transport.take("enqueue-gangs");
    const jm = await rig.restartJobManager();
    rig.tick(60_000);
    const started = rig.transport.take("enqueue-gangs").flatMap((m) => m.gangs.flatMap((g) => g.tasks));
    const expected = ranges ? [0, 1, 2] : ALL;
    assert.deepEqual(started.map((t) => Number(t.taskId.split("-").at(-2))).sort((a, b) => a - b), expected);
    assert.ok(jm.jobs.has(JOB_ID), "the job is loaded");
  });
}
