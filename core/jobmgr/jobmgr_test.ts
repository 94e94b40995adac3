import assert from "node:assert/strict";
import { MESOS_TO_TASK_STATE } from "../model/states.ts";
import { makeJobConfig } from "../testing/harness.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./job_api.ts";
import { DEFAULT_JOBMGR_CONFIG } from "./jobmgr.ts";

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;

Deno.test("Create checks the pool at resmgr, replies once durable, then enqueues tasks as PENDING", () => {
  const rig = new JobmgrRig();
  const { transport, store } = rig;
  rig.api("job", "Create", {
    id: { value: JOB_ID },
    config: jobConfigJson(makeJobConfig({ instanceCount: 2 })),
  });
  const ask = transport.takeOne("api", "resmgr");
  assert.equal(ask.procedure, "peloton.api.respool.ResourceManager::GetResourcePool");
  assert.deepEqual(ask.body, { id: { value: "pool-a" } });
  assert.equal(rig.jm.jobs.size, 0, "nothing is created before the pool is known");
  rig.jm.receive({ kind: "api-reply", reqId: ask.reqId, body: { poolinfo: { children: [] } } });
  assert.deepEqual(rig.repliesSoFar(), [], "no reply before the job is durable");
  assert.deepEqual(transport.take("enqueue-gangs"), []);
  assert.equal(store.jobs.get(JOB_ID)!.runtime.state, "INITIALIZED");
  assert.equal(rig.task(0).state, "INITIALIZED");
  store.settle();
  rig.tick();
  assert.deepEqual(rig.replies().map((r) => r.body), [{ jobId: { value: JOB_ID }, warnings: undefined }]);
  const [enqueue] = transport.take("enqueue-gangs", "resmgr");
  assert.deepEqual(enqueue.gangs.map((g) => g.tasks.map((t) => t.taskId)), [[id(0)], [id(1)]]);
  assert.deepEqual(enqueue.gangs[0].tasks[0].resources, {
    cpuMilli: 1000,
    memMb: 128,
    diskMb: 0,
    gpuMilli: 0,
  });
  assert.deepEqual([rig.task(0).state, rig.task(1).state], ["PENDING", "PENDING"]);
  assert.equal(store.task(JOB_ID, 0)!.state, "PENDING");
  assert.equal(store.jobs.get(JOB_ID)!.runtime.state, "PENDING");
  assert.deepEqual(rig.job().runtime.taskStats, { INITIALIZED: 0, PENDING: 2 });
});

Deno.test("instances below minimumRunningInstances are enqueued as one gang", () => {
  const rig = new JobmgrRig();
  const sla = { ...makeJobConfig().sla, minimumRunningInstances: 3 };
  const { gangs } = rig.create({ instanceCount: 5, sla });
  assert.deepEqual(gangs.map((g) => g.tasks.length), [3, 1, 1]);
  assert.deepEqual(gangs[0].tasks.map((t) => t.minInstances), [3, 3, 3]);
  assert.equal(gangs[1].tasks[0].minInstances, 1);
});

Deno.test("rm state changes move pre-launch tasks; a placement launches with the lease (LAUNCHING)", () => {
  const rig = new JobmgrRig();
  rig.create({ task: { ports: [{ name: "http", value: 0, envName: "PORT" }] } });
  const changes = ["READY", "PLACING", "PLACED"] as const;
  rig.placements([], changes.map((state, i) => ({ taskId: id(0), state, timeMs: i })));
  assert.equal(rig.task(0).state, "PLACED");
  const placement = {
    leaseId: "h1#4",
    hostname: "h1",
    agentId: "agent-h1",
    tasks: [{ taskId: id(0), ports: { http: 31002 } }],
  };
  rig.placements([placement]);
  // Launched only once stored LAUNCHING: a launch whose write was lost would, after a restart, launch the
  // same run again.
  assert.deepEqual(rig.transport.take("launch-tasks", "hostmgr"), [], "not before the write is stored");
  rig.store.settle();
  const launch = rig.transport.takeOne("launch-tasks", "hostmgr");
  assert.deepEqual([launch.leaseId, launch.hostname], ["h1#4", "h1"]);
  assert.deepEqual(launch.tasks.map((t) => [t.taskId, t.agentId, t.ports, t.env.PORT]), [
    [id(0), "agent-h1", { http: 31002 }, "31002"],
  ]);
  const t = rig.task(0);
  assert.deepEqual([t.state, t.hostname, t.agentId, t.ports], ["LAUNCHING", "h1", "agent-h1", {
    http: 31002,
  }]);
  assert.equal(rig.transport.take("get-placements", "resmgr").length, 1, "the poll continues");
});

Deno.test("a placement poll not answered within placementPollRetryMs is sent again", () => {
  const rig = new JobmgrRig();
  const first = rig.transport.takeOne("get-placements", "resmgr");
  rig.tick(DEFAULT_JOBMGR_CONFIG.placementPollRetryMs - 1);
  assert.deepEqual(rig.transport.take("get-placements"), [], "still waiting");
  rig.tick(1);
  const second = rig.transport.takeOne("get-placements", "resmgr");
  assert.notEqual(second.reqId, first.reqId);
  // Answered now: the poll goes on from the answer, and the retry timer with it.
  rig.jm.receive({ kind: "placements", reqId: second.reqId, placements: [], changes: [] });
  rig.tick();
  assert.equal(rig.transport.take("get-placements", "resmgr").length, 1);
  rig.jm.stop();
  assert.equal(rig.ports.clock.pending, 0, "stop leaves no timer behind");
});

Deno.test("placements in a reply to a poll no one waits for (delivered twice, or late) are still launched", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  const poll = rig.transport.takeOne("get-placements", "resmgr");
  // The first answer to the poll: nothing yet, and the next poll goes out.
  rig.jm.receive({ kind: "placements", reqId: poll.reqId, placements: [], changes: [] });
  rig.tick();
  assert.equal(rig.transport.take("get-placements", "resmgr").length, 1, "the poll continues");
  // A second answer to the same poll (its request was delivered twice) hands over a placement: the
  // resource manager has marked the task LAUNCHING and will not send it again.
  const tasks = [{ taskId: id(1), ports: {} }];
  rig.jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks }],
    changes: [{ taskId: id(0), state: "READY", timeMs: 1 }],
  });
  rig.tick();
  rig.store.settle();
  const launch = rig.transport.takeOne("launch-tasks", "hostmgr");
  assert.deepEqual(launch.tasks.map((t) => t.taskId), [id(1)]);
  assert.deepEqual([rig.task(0).state, rig.task(1).state], ["READY", "LAUNCHING"]);
  assert.equal(rig.transport.take("get-placements", "resmgr").length, 0, "no second poll chain");
  // The same reply once more launches nothing twice.
  rig.jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks }],
    changes: [],
  });
  rig.tick();
  assert.deepEqual(rig.transport.takeOne("launch-tasks", "hostmgr").tasks, []);
});

Deno.test("a KILLED change from resmgr (pool not a leaf) kills the task with REASON_ENQUEUE_FAILED", () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.placements([], [{ taskId: id(0), state: "KILLED", timeMs: 0, reason: "pool is not a leaf pool" }]);
  assert.deepEqual([rig.task(0).state, rig.task(0).reason], ["KILLED", "REASON_ENQUEUE_FAILED"]);
  assert.equal(rig.job().runtime.state, "KILLED");
});

Deno.test("statuses move tasks LAUNCHED → RUNNING → SUCCEEDED and the job state follows", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0, 1]);
  rig.status(id(0), "TASK_STAGING");
  assert.equal(rig.task(0).state, "LAUNCHED");
  rig.ports.clock.set(1_000);
  rig.status(id(0), "TASK_RUNNING");
  assert.equal(rig.task(0).startTimeMs, 1_000);
  assert.equal(rig.job().runtime.state, "RUNNING");
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "RUNNING");
  rig.status(id(0), "TASK_FINISHED");
  assert.equal(rig.job().runtime.state, "PENDING", "no task runs and not all are done");
  rig.status(id(1), "TASK_RUNNING");
  rig.status(id(1), "TASK_FINISHED");
  assert.equal(rig.task(1).state, "SUCCEEDED");
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "SUCCEEDED");
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "no retry of a success");
});

Deno.test("a job whose task ran and ended within one batch of statuses has its start time all the same", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  rig.ports.clock.set(2_500);
  // Both statuses in one batch (the host manager's): the job never shows RUNNING.
  const status = (state: "TASK_RUNNING" | "TASK_FINISHED", timeMs: number) => ({
    taskId: id(0),
    state,
    pelotonState: MESOS_TO_TASK_STATE[state],
    hostname: "h1",
    agentId: "agent-h1",
    timeMs,
  });
  rig.jm.receive({
    kind: "task-statuses",
    statuses: [status("TASK_RUNNING", 2_000), status("TASK_FINISHED", 2_500)],
  });
  rig.tick();
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
  assert.equal(rig.job().runtime.startTimeMs, 2_000, "when its first task started running");
  assert.equal(rig.job().runtime.completionTimeMs, 2_500);
  // A job killed before any task ran has none.
  const never = new JobmgrRig();
  never.create({ instanceCount: 1 });
  never.placements([], [{ taskId: id(0), state: "KILLED", timeMs: 0, reason: "pool is not a leaf pool" }]);
  assert.equal(never.job().runtime.state, "KILLED");
  assert.equal(never.job().runtime.startTimeMs, undefined);
});

Deno.test("a FAILED task is retried under a new run id up to restartPolicy.maxFailures runs, history kept", () => {
  const rig = new JobmgrRig();
  // Peloton's TaskFailRetry stops once the failure count reaches maxFailures: 2 gives two runs in all.
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  rig.status(id(0), "TASK_FAILED");
  const t = rig.task(0);
  assert.deepEqual([t.runId, t.state, t.failureCount, t.hostname], [2, "PENDING", 1, undefined]);
  assert.deepEqual(t.history!.map((h) => [h.runId, h.state, h.hostname]), [[1, "FAILED", "h1"]]);
  const [again] = rig.transport.take("enqueue-gangs", "resmgr");
  assert.deepEqual(again.gangs.map((g) => g.tasks[0].taskId), [id(0, 2)]);
  rig.launch([0]);
  rig.status(id(0, 2), "TASK_FAILED");
  assert.deepEqual([rig.task(0).runId, rig.task(0).state, rig.task(0).failureCount], [2, "FAILED", 2]);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), []);
  assert.equal(rig.job().runtime.state, "FAILED");
});

Deno.test("system failures (INVALID_OFFERS, LOST) get up to 4 attempts without a restart policy", () => {
  const rig = new JobmgrRig();
  rig.create();
  for (let run = 1; run <= 4; run++) {
    assert.equal(rig.task(0).runId, run);
    rig.launch([0]);
    if (run % 2) rig.status(id(0, run), "TASK_LOST", { reason: "REASON_INVALID_OFFERS" });
    else rig.status(id(0, run), "TASK_FAILED", { reason: "REASON_AGENT_REMOVED" });
  }
  assert.deepEqual([rig.task(0).runId, rig.task(0).state], [4, "FAILED"]);
  assert.equal(rig.task(0).history!.length, 3);
  assert.equal(rig.job().runtime.state, "FAILED");
});

Deno.test("a task failure of the task's own making is not retried without a restart policy", () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.launch([0]);
  rig.status(id(0), "TASK_FAILED", { reason: "REASON_COMMAND_EXECUTOR_FAILED" });
  assert.deepEqual([rig.task(0).runId, rig.task(0).state], [1, "FAILED"]);
});

Deno.test("stop drops pre-launch tasks in resmgr and kills launched ones through hostmgr with the grace period", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2, task: { killGracePeriodSeconds: 7 } });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.replies().map((r) => r.body), [{
    stoppedInstanceIds: [0, 1],
    invalidInstanceIds: [],
  }]);
  assert.deepEqual(rig.transport.takeOne("drop-tasks", "resmgr").taskIds, [id(1)]);
  assert.deepEqual(rig.transport.takeOne("kill-tasks", "hostmgr").tasks, [{
    taskId: id(0),
    gracePeriodMs: 7_000,
    hostname: "h1",
  }], "the kill names the task's host, so the host manager need not search for it");
  assert.deepEqual([rig.task(0).state, rig.task(1).state], ["KILLING", "KILLED"]);
  // Peloton's stopInitializedTask: "Non-running task killed", and no reason.
  assert.deepEqual([rig.task(1).message, rig.task(1).reason], ["Non-running task killed", undefined]);
  assert.equal(rig.job().runtime.state, "KILLING");
  const stored = rig.store.jobs.get(JOB_ID)!.runtime;
  assert.deepEqual([stored.state, stored.goalState], ["KILLING", "KILLED"], "KILLING is stored too");
  rig.status(id(0), "TASK_RUNNING");
  assert.equal(rig.task(0).state, "KILLING", "a late RUNNING does not undo KILLING");
  rig.status(id(0), "TASK_KILLED");
  assert.equal(rig.task(0).state, "KILLED");
  assert.equal(rig.job().runtime.state, "KILLED");
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED");
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "a killed task is not restarted");
});

Deno.test("Stop, Start and Restart answer only once their writes are durable, and the store has them then", () => {
  const rig = runningService(2, { settled: true });
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 1, to: 2 }] });
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the stop is durable");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => r.body), [{
    stoppedInstanceIds: [1],
    invalidInstanceIds: [],
  }]);
  assert.equal(
    rig.store.task(JOB_ID, 1)!.goalState,
    "KILLED",
    "an instance's stop is stored, not only its kill",
  );
  rig.status(id(1), "TASK_KILLED");

  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the start is durable");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => r.body), [{
    startedInstanceIds: [1],
    invalidInstanceIds: [],
  }]);

  rig.api("task", "Restart", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the restart is durable");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => r.body), [{
    restartedInstanceIds: [0, 1],
    invalidInstanceIds: [],
  }]);
  assert.equal(rig.store.task(JOB_ID, 0)!.desiredRunId, 2);

  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "no answer before the stop is durable");
  rig.store.settle();
  assert.deepEqual(rig.repliesSoFar().map((r) => r.body), [{
    stoppedInstanceIds: [0, 1],
    invalidInstanceIds: [],
  }]);
  const stored = rig.store.jobs.get(JOB_ID)!.runtime;
  assert.deepEqual([stored.state, stored.goalState], ["KILLING", "KILLED"]);
});

Deno.test("a Stop whose write fails is answered with the error, claims nothing, and is a lost write", () => {
  const lost: Error[] = [];
  const rig = runningService(2, { deps: { onLostWrite: (err) => lost.push(err) }, settled: true });
  const before = rig.store.jobs.get(JOB_ID)!.runtime.goalState;
  rig.store.failNextWrite(new Error("disk full"));
  rig.jm.receive({
    kind: "api",
    reqId: 7,
    replyTo: "api/1",
    procedure: "peloton.api.task.TaskManager::Stop",
    body: { jobId: { value: JOB_ID } },
  });
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.goalState, before, "the stop is not in the store");
  assert.deepEqual(rig.replies(), [{
    kind: "api-reply",
    reqId: 7,
    error: { code: "internal", message: `storing the stop of job ${JOB_ID}: disk full` },
  }]);
  assert.deepEqual(lost.map((e) => e.message), ["disk full"], "the daemon is told its memory is ahead");
});

Deno.test("a preempted task is killed with its grace period and enqueued again under a new run, no failure counted", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, task: { killGracePeriodSeconds: 5 } });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  const first = id(0);
  rig.placements([], [], [{ taskId: first, reason: "PREEMPTION_REASON_REVOKE_RESOURCES" }]);
  assert.deepEqual(rig.transport.takeOne("kill-tasks", "hostmgr").tasks, [{
    taskId: first,
    gracePeriodMs: 5_000,
    hostname: "h1",
  }]);
  assert.equal(rig.task(0).state, "PREEMPTING");
  assert.equal(rig.task(0).reason, "PREEMPTION_REASON_REVOKE_RESOURCES");
  rig.status(first, "TASK_RUNNING");
  assert.equal(rig.task(0).state, "PREEMPTING", "a late RUNNING does not undo PREEMPTING");
  rig.status(first, "TASK_KILLED");
  assert.equal(rig.task(0).runId, 2);
  assert.equal(rig.task(0).state, "PENDING");
  assert.equal(rig.task(0).goalState, "SUCCEEDED");
  assert.equal(rig.task(0).failureCount, 0);
  assert.equal(rig.task(0).history![0].state, "KILLED");
  assert.equal(rig.transport.takeOne("enqueue-gangs", "resmgr").gangs[0].tasks[0].taskId, rig.taskId(0));
  assert.match(rig.taskId(0), /-0-2$/);
});

Deno.test("with killOnPreempt a preempted task stays KILLED", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, task: { preemptionPolicy: { type: "PREEMPTIBLE", killOnPreempt: true } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  rig.placements([], [], [{ taskId: id(0), reason: "PREEMPTION_REASON_REVOKE_RESOURCES" }]);
  rig.transport.takeOne("kill-tasks", "hostmgr");
  rig.status(id(0), "TASK_KILLED");
  assert.equal(rig.task(0).state, "KILLED");
  assert.equal(rig.task(0).runId, 1);
  assert.equal(rig.job().runtime.state, "KILLED");
  assert.deepEqual(rig.transport.take("enqueue-gangs"), []);
});

Deno.test("a placement for a task stopped meanwhile launches nothing and returns the lease", () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  const launch = rig.launch([0]);
  assert.deepEqual([launch.leaseId, launch.tasks], ["h1#1", []]);
});

Deno.test("statuses of an old run are ignored; a live orphan of an old run is killed at once", () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 3 } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_FAILED");
  assert.equal(rig.task(0).runId, 2);
  rig.status(id(0, 1), "TASK_RUNNING");
  assert.equal(rig.task(0).state, "PENDING");
  assert.deepEqual(rig.transport.takeOne("kill-tasks", "hostmgr").tasks, [{
    taskId: id(0, 1),
    gracePeriodMs: 0,
    hostname: "h1",
  }]);
  rig.status(id(0, 1), "TASK_KILLED");
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "a terminal orphan needs no kill");
  rig.status(`${JOB_ID.replace("1111", "9999")}-0-1`, "TASK_RUNNING");
  assert.equal(rig.transport.take("kill-tasks").length, 1, "a task of an unknown job is an orphan too");
});

Deno.test("the controller task (instance 0) decides the job's outcome", () => {
  for (
    const [controller, other, job] of [["TASK_FINISHED", "TASK_FAILED", "SUCCEEDED"], [
      "TASK_FAILED",
      "TASK_FINISHED",
      "FAILED",
    ]] as const
  ) {
    const rig = new JobmgrRig();
    rig.create({ instanceCount: 2, instanceConfig: { 0: { controller: true } } });
    rig.launch([0, 1]);
    rig.status(id(1), other);
    rig.status(id(0), controller);
    assert.equal(rig.job().runtime.state, job, `controller ${controller}, other ${other}`);
  }
});

Deno.test("statuses with an ack token are answered only once their new states are stored", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  rig.jm.receive({
    kind: "task-statuses",
    ackToken: 7,
    statuses: [{
      taskId: id(0),
      state: "TASK_RUNNING",
      pelotonState: "RUNNING",
      hostname: "h1",
      agentId: "agent-h1",
      timeMs: 0,
    }],
  });
  assert.deepEqual(rig.transport.take("statuses-processed"), []);
  rig.store.settle();
  assert.deepEqual(rig.transport.take("statuses-processed", "hostmgr").map((m) => m.ackToken), [7]);
});

Deno.test("find names a task by its Mesos task id: the run, a stale run, and ids it must not match", () => {
  const rig = new JobmgrRig();
  const other = "11111111-2222-4333-8444-666666666666";
  rig.create({ instanceCount: 3 });
  rig.create({ instanceCount: 2 }, other);
  const jm = rig.jm;
  assert.equal(jm.find(id(2))?.task.instanceId, 2);
  // The job found last is tried first; another job's task is still found under its own job.
  assert.equal(jm.find(`${other}-1-1`)?.job.jobId, other);
  assert.equal(jm.find(`${other}-1-1`)?.task.instanceId, 1);
  assert.equal(jm.find(id(1))?.job.jobId, JOB_ID);
  assert.equal(jm.find(id(1, 2)), undefined, "a run not started yet");
  assert.deepEqual(jm.find(id(1, 0), true)?.stale, true);
  for (
    const bad of [
      `${JOB_ID}-5-1`,
      `${JOB_ID}--1`,
      `${JOB_ID}-1-`,
      `${JOB_ID}-x-1`,
      `${JOB_ID}-1-1x`,
      "1-1",
      "x",
    ]
  ) {
    assert.equal(jm.find(bad), undefined, bad);
  }
  // A job dropped and loaded again under its id is found anew, not the entry found before.
  const before = jm.find(id(0))!.job;
  jm.jobs.delete(JOB_ID);
  assert.equal(jm.find(id(0)), undefined);
  jm.jobs.set(JOB_ID, { ...before });
  const again = jm.find(id(0))!.job;
  assert.notEqual(again, before);
  assert.equal(again, jm.jobs.get(JOB_ID));
});

Deno.test("restartPolicy.maxFailures N gives N runs in all, as Peloton counts them; 0 and 1 give one", () => {
  for (const [maxFailures, runs] of [[0, 1], [1, 1], [2, 2], [3, 3]]) {
    const rig = new JobmgrRig();
    rig.create({ task: { restartPolicy: { maxFailures } } });
    for (let run = 1; rig.task(0).state !== "FAILED"; run++) {
      assert.ok(run <= runs, `maxFailures ${maxFailures}: run ${run}`);
      rig.launch([0]);
      rig.status(id(0, run), "TASK_FAILED");
    }
    assert.deepEqual(
      [rig.task(0).runId, rig.task(0).failureCount],
      [runs, runs],
      `maxFailures ${maxFailures}`,
    );
    assert.equal(rig.job().runtime.state, "FAILED");
  }
});
