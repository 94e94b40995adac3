/** Health checks in the simulated cluster, on virtual time: exact report and kill times. */
import assert from "node:assert/strict";
import type { BackendEvent, HealthCheckSpec, LaunchSpec, TaskStatus } from "../core/ports/host_backend.ts";
import { HEALTH_CHECK_REASON } from "../core/ports/health_check.ts";
import { seededPrng } from "../core/ports/prng.ts";
import { SimCluster } from "./cluster.ts";
import { EventQueue } from "./event_queue.ts";
import { planHealth, simulateCheck } from "./health.ts";
import { simLaunchSpec } from "./testing.ts";

// Startup 1 s, kill delay 100 ms: a task runs at 1000 and exits 100 ms after a kill starts.
const OPTIONS = { startupMs: 1000, killDelayMs: 100 };

function makeCheck(overrides: Partial<HealthCheckSpec> = {}): HealthCheckSpec {
  return {
    type: "COMMAND",
    command: "exit 0",
    initialIntervalSecs: 15,
    intervalSecs: 10,
    timeoutSecs: 20,
    maxConsecutiveFailures: 3,
    ...overrides,
  };
}

function makeSpec(command: string, healthCheck?: HealthCheckSpec, id = "job-0-1"): LaunchSpec {
  return simLaunchSpec(id, command, { healthCheck });
}

/** Runs tasks on a fresh simulated cluster until `untilMs`; returns every status and the batches. */
function simulate(specs: LaunchSpec[], untilMs: number, during?: (sim: SimHarness) => void) {
  const queue = new EventQueue();
  const cluster = new SimCluster(queue, seededPrng(7), OPTIONS);
  const batches: BackendEvent[][] = [];
  cluster.start((batch) => batches.push(batch));
  cluster.launch(specs);
  during?.({ queue, cluster });
  queue.runUntil(untilMs);
  const statuses = batches.flat().flatMap((e) => e.kind === "task-status" ? [e.status] : []);
  return { statuses, batches, cluster };
}

interface SimHarness {
  queue: EventQueue;
  cluster: SimCluster;
}

/** The statuses in a compact form: time, state, healthy and reason. */
function timeline(statuses: TaskStatus[]): string[] {
  return statuses.map((s) =>
    [String(s.timeMs), s.state, s.healthy === undefined ? "" : `healthy=${s.healthy}`, s.reason ?? ""]
      .filter(Boolean).join(" ")
  );
}

Deno.test("a passing command check reports healthy once, at its first result, and never again", () => {
  const { statuses } = simulate([makeSpec("sleep 100", makeCheck())], 200_000);
  assert.deepEqual(timeline(statuses), [
    "0 TASK_STAGING",
    "1000 TASK_RUNNING",
    `16000 TASK_RUNNING healthy=true ${HEALTH_CHECK_REASON}`,
    "101000 TASK_FINISHED",
  ]);
  assert.equal(statuses[2].message, "Health check passed");
});

Deno.test("a failing command check reports unhealthy at once and kills at the Nth failure", () => {
  const { statuses } = simulate([makeSpec("sleep 100", makeCheck({ command: "exit 3" }))], 200_000);
  // Failures at 16 s, 26 s, 36 s; the kill starts at the third and the task exits 100 ms later.
  assert.deepEqual(timeline(statuses), [
    "0 TASK_STAGING",
    "1000 TASK_RUNNING",
    `16000 TASK_RUNNING healthy=false ${HEALTH_CHECK_REASON}`,
    `36100 TASK_KILLED healthy=false ${HEALTH_CHECK_REASON}`,
  ]);
  assert.equal(statuses[2].message, "Health check failed: exited with status 3");
  assert.equal(statuses[3].message, "Task killed after 3 consecutive failed health checks");
});

Deno.test("maxConsecutiveFailures 1: the unhealthy report and the kill come from the same check", () => {
  const check = makeCheck({ command: "false", initialIntervalSecs: 0, maxConsecutiveFailures: 1 });
  const { statuses } = simulate([makeSpec("sleep 100", check)], 200_000);
  assert.deepEqual(timeline(statuses), [
    "0 TASK_STAGING",
    "1000 TASK_RUNNING",
    `1000 TASK_RUNNING healthy=false ${HEALTH_CHECK_REASON}`,
    `1100 TASK_KILLED healthy=false ${HEALTH_CHECK_REASON}`,
  ]);
});

Deno.test("a check's own sleep delays its result; one that reaches the timeout fails then", () => {
  const slow = makeCheck({ command: "sleep 2; exit 0", timeoutSecs: 5 });
  assert.deepEqual(planHealth(slow, 1000), {
    reports: [{ atMs: 18_000, healthy: true, message: "Health check passed" }],
  });
  const hung = makeCheck({ command: "sleep 30", timeoutSecs: 5, maxConsecutiveFailures: 2 });
  // First check 16 s → times out at 21 s; the next starts 10 s later and times out at 36 s.
  assert.deepEqual(planHealth(hung, 1000), {
    reports: [{ atMs: 21_000, healthy: false, message: "Health check failed: timed out after 5s" }],
    kill: { atMs: 36_000, message: "Task killed after 2 consecutive failed health checks" },
  });
  // A zero timeout means no limit, as in Mesos.
  assert.equal(simulateCheck(makeCheck({ command: "sleep 30", timeoutSecs: 0 })).passed, true);
});

Deno.test("command checks: exit 0 and true pass, exit N and false fail, anything else passes", () => {
  const passes = (command: string) => simulateCheck(makeCheck({ command })).passed;
  assert.equal(passes("exit 0"), true);
  assert.equal(passes("true"), true);
  assert.equal(passes("test -f /tmp/ready"), true);
  assert.equal(passes("curl -f http://localhost:8080/health"), true);
  assert.equal(passes("exit 1"), false);
  assert.equal(passes("cat status.txt; exit 2"), false);
  assert.equal(passes("false"), false);
  assert.equal(passes("test -f ready && false"), false);
  assert.equal(passes("grep -q false status.txt"), true);
});

Deno.test("HTTP checks pass unless the path contains fail", () => {
  const http = (path: string) =>
    makeCheck({ type: "HTTP", command: undefined, http: { port: 8080, path, scheme: "http" } });
  assert.equal(simulateCheck(http("/health")).passed, true);
  assert.equal(simulateCheck(http("")).passed, true);
  assert.deepEqual(simulateCheck(http("/fail")), {
    passed: false,
    durationMs: 0,
    why: "GET /fail answered 503",
  });
  const { statuses } = simulate([makeSpec("sleep 100", http("/healthz?fail=1"))], 200_000);
  assert.deepEqual(timeline(statuses).slice(2), [
    `16000 TASK_RUNNING healthy=false ${HEALTH_CHECK_REASON}`,
    `36100 TASK_KILLED healthy=false ${HEALTH_CHECK_REASON}`,
  ]);
});

Deno.test("checks stop when the task ends: no report after it finished, no kill after it was killed", () => {
  const failing = makeCheck({ command: "exit 1" });
  // Ends at 21 s, between the first failure (16 s) and the kill (36 s).
  const short = makeSpec("sleep 20", failing, "short-0-1");
  // Ends at 11 s, before the first check.
  const shorter = makeSpec("sleep 10", failing, "shorter-0-1");
  // Killed by the framework at 20 s, before the health kill.
  const killed = makeSpec("sleep 100", failing, "killed-0-1");
  const { statuses } = simulate([short, shorter, killed], 200_000, ({ queue, cluster }) => {
    queue.schedule(
      20_000,
      () => cluster.kill([{ taskId: killed.taskId, agentId: "agent-0", gracePeriodMs: 0 }]),
    );
  });
  const of = (id: string) => timeline(statuses.filter((s) => s.taskId === id));
  assert.deepEqual(of(short.taskId), [
    "0 TASK_STAGING",
    "1000 TASK_RUNNING",
    `16000 TASK_RUNNING healthy=false ${HEALTH_CHECK_REASON}`,
    "21000 TASK_FINISHED",
  ]);
  assert.deepEqual(of(shorter.taskId), ["0 TASK_STAGING", "1000 TASK_RUNNING", "11000 TASK_FINISHED"]);
  const ofKilled = statuses.filter((s) => s.taskId === killed.taskId);
  assert.deepEqual(timeline(ofKilled.slice(0, 3)), [
    "0 TASK_STAGING",
    "1000 TASK_RUNNING",
    `16000 TASK_RUNNING healthy=false ${HEALTH_CHECK_REASON}`,
  ]);
  assert.equal(ofKilled.length, 4);
  assert.deepEqual([ofKilled[3].timeMs, ofKilled[3].state, ofKilled[3].healthy], [
    20_100,
    "TASK_KILLED",
    undefined,
  ]);
  assert.notEqual(ofKilled[3].reason, HEALTH_CHECK_REASON);
});

Deno.test("health results are batched with other statuses due at the same instant", () => {
  const check = makeCheck({ initialIntervalSecs: 0 });
  const { batches } = simulate(
    [makeSpec("sleep 5", check, "a-0-1"), makeSpec("sleep 5", check, "b-0-1")],
    10_000,
  );
  const at1000 = batches.filter((b) => b.some((e) => e.kind === "task-status" && e.status.timeMs === 1000));
  assert.equal(at1000.length, 1);
  assert.deepEqual(
    at1000[0].map((e) => e.kind === "task-status" ? `${e.status.taskId} ${e.status.healthy ?? "-"}` : e.kind),
    ["a-0-1 -", "a-0-1 true", "b-0-1 -", "b-0-1 true"],
  );
});

Deno.test("reconciliation repeats the latest health", () => {
  const spec = makeSpec("sleep 100", makeCheck());
  const { statuses } = simulate([spec], 50_000, ({ queue, cluster }) => {
    queue.schedule(20_000, () => cluster.reconcile([spec.taskId]));
  });
  const reconciled = statuses.find((s) => s.reason === "REASON_RECONCILIATION")!;
  assert.equal(reconciled.state, "TASK_RUNNING");
  assert.equal(reconciled.healthy, true);
});

Deno.test("an invalid health check is rejected with TASK_ERROR naming the field", () => {
  const { statuses } = simulate([makeSpec("sleep 1", makeCheck({ intervalSecs: 0 }))], 10_000);
  assert.deepEqual(timeline(statuses), ["0 TASK_ERROR REASON_TASK_INVALID"]);
  assert.equal(
    statuses[0].message,
    "Task uses an invalid health check: healthCheck.intervalSecs is 0, expected a positive number of seconds",
  );
});

Deno.test("the same launches give the same statuses", () => {
  const specs = [
    makeSpec("sleep 40", makeCheck({ command: "exit 1" }), "a-0-1"),
    makeSpec("sleep 40", makeCheck({ command: "sleep 1" }), "b-0-1"),
    makeSpec("exit 2", makeCheck(), "c-0-1"),
  ];
  const run = () => JSON.stringify(simulate(specs, 100_000).batches);
  assert.equal(run(), run());
});
