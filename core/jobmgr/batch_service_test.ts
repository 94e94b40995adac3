import assert from "node:assert/strict";
import { DEFAULT_SLA } from "../testing/fixtures.ts";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";

/** Launches and runs instances so they are RUNNING. */
function run(rig: JobmgrRig, instances: number[]) {
  rig.launch(instances);
  for (const i of instances) rig.status(rig.taskId(i), "TASK_RUNNING");
}

Deno.test("maximumRunningInstances: only that many instances run at once; the next starts when one ends", () => {
  const rig = new JobmgrRig();
  const { gangs } = rig.create({
    instanceCount: 4,
    sla: { ...DEFAULT_SLA, maximumRunningInstances: 2 },
  });
  assert.deepEqual(gangs.map((g) => g.tasks[0].instanceId), [0, 1]);
  assert.deepEqual([2, 3].map((i) => rig.task(i).state), ["INITIALIZED", "INITIALIZED"]);
  run(rig, [0, 1]);
  rig.status(rig.taskId(0), "TASK_FINISHED");
  rig.tick();
  const next = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(next.map((g) => g.tasks[0].instanceId), [2]);
  assert.equal(rig.task(3).state, "INITIALIZED");
});

Deno.test("sla.maxRunningTime: a run past its deadline is killed with DEADLINE_TIMEOUT_EXCEEDED and not retried", () => {
  const rig = new JobmgrRig();
  rig.create({
    instanceCount: 1,
    sla: { ...DEFAULT_SLA, maxRunningTime: 60 },
    task: { restartPolicy: { maxFailures: 3 } },
  });
  run(rig, [0]);
  rig.tick(59_000);
  assert.equal(rig.task(0).state, "RUNNING");
  rig.tick(1_000);
  assert.equal(rig.task(0).state, "KILLING");
  assert.equal(rig.task(0).goalState, "KILLED");
  assert.equal(rig.task(0).terminationReason, "DEADLINE_TIMEOUT_EXCEEDED");
  assert.equal(rig.transport.takeOne("kill-tasks", "hostmgr").tasks[0].taskId, rig.taskId(0));
  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.equal(rig.task(0).state, "KILLED");
  assert.equal(rig.task(0).runId, 1, "not retried");
  assert.equal(rig.job().runtime.state, "KILLED");
});

Deno.test("a launch that never makes progress is killed and run again after the launch timeout", () => {
  const rig = new JobmgrRig({ launchTimeoutMs: 5_000 });
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_STAGING");
  rig.tick(4_000);
  assert.equal(rig.task(0).state, "LAUNCHED");
  rig.tick(1_000);
  assert.equal(rig.task(0).state, "KILLING");
  const first = rig.taskId(0);
  assert.equal(rig.transport.takeOne("kill-tasks", "hostmgr").tasks[0].taskId, first);
  rig.status(first, "TASK_KILLED");
  assert.equal(rig.task(0).runId, 2);
  assert.equal(rig.task(0).state, "PENDING");
});

Deno.test("services keep running: a run killed from outside restarts after the initial backoff, later failures back off exponentially", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000, maxTaskBackoffMs: 4_000 });
  rig.create({ type: "SERVICE", instanceCount: 1 });
  assert.equal(rig.task(0).goalState, "RUNNING");
  run(rig, [0]);
  // Killed from outside: a failure, so the restart waits initial × 2^0 = 1 s.
  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.equal(rig.task(0).failureCount, 1);
  assert.equal(rig.task(0).message, "Task throttled due to failure");
  assert.equal(rig.task(0).runId, 1);
  rig.tick(999);
  assert.equal(rig.task(0).runId, 1);
  rig.tick(1);
  assert.deepEqual([rig.task(0).runId, rig.task(0).state], [2, "PENDING"]);
  run(rig, [0]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.tick(1_999);
  assert.equal(rig.task(0).runId, 2, "second failure waits 2 s");
  rig.tick(1);
  assert.equal(rig.task(0).runId, 3);
  assert.equal(rig.job().runtime.state, "PENDING");
});

Deno.test("services: a run that stayed up long clears the failure count, so the next restart is not throttled", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000, failureResetMs: 60_000 });
  rig.create({ type: "SERVICE", instanceCount: 1 });
  run(rig, [0]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.tick(1_000);
  run(rig, [0]);
  rig.tick(120_000);
  rig.status(rig.taskId(0), "TASK_FAILED");
  assert.equal(rig.task(0).failureCount, 1);
  rig.tick(999);
  assert.equal(rig.task(0).runId, 2);
  rig.tick(1);
  assert.equal(rig.task(0).runId, 3);
});

Deno.test("health: a health result is recorded on the running task; an unhealthy kill counts as a failure", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({
    type: "SERVICE",
    instanceCount: 1,
    task: {
      healthCheck: {
        enabled: true,
        type: "COMMAND",
        commandCheck: { command: "true" },
        initialIntervalSecs: 1,
        intervalSecs: 1,
        maxConsecutiveFailures: 2,
        timeoutSecs: 1,
      },
    },
  });
  rig.launch([0]);
  assert.equal(rig.transport.peek("launch-tasks").length, 0);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  assert.equal(rig.task(0).healthy, "HEALTH_UNKNOWN");
  rig.status(rig.taskId(0), "TASK_RUNNING", { healthy: true });
  assert.equal(rig.task(0).healthy, "HEALTHY");
  rig.status(rig.taskId(0), "TASK_RUNNING", { healthy: false });
  assert.equal(rig.task(0).healthy, "UNHEALTHY");
  rig.status(rig.taskId(0), "TASK_KILLED", {
    healthy: false,
    reason: "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED",
  });
  assert.equal(rig.task(0).failureCount, 1);
  rig.tick(1_000);
  assert.equal(rig.task(0).runId, 2);
});

Deno.test("the launch spec carries the health check, the revocable flag and the kill grace", () => {
  const rig = new JobmgrRig();
  rig.create({
    type: "SERVICE",
    instanceCount: 1,
    sla: { ...DEFAULT_SLA, preemptible: true, revocable: true },
    task: {
      killGracePeriodSeconds: 7,
      ports: [{ name: "http", value: 0, envName: "PORT" }],
      healthCheck: {
        enabled: true,
        type: "HTTP",
        httpCheck: { scheme: "http", port: 0, path: "/health" },
        initialIntervalSecs: 2,
        intervalSecs: 3,
        maxConsecutiveFailures: 4,
        timeoutSecs: 5,
      },
    },
  });
  const launch = rig.placeWithPorts(0, { http: 31005 });
  const spec = launch.tasks[0];
  assert.equal(spec.killGracePeriodMs, 7_000);
  assert.equal(spec.revocable, true);
  assert.deepEqual(spec.env, { PORT: "31005" });
  assert.deepEqual(spec.healthCheck, {
    type: "HTTP",
    http: { port: 31005, path: "/health", scheme: "http" },
    initialIntervalSecs: 2,
    intervalSecs: 3,
    timeoutSecs: 5,
    maxConsecutiveFailures: 4,
  });
});
