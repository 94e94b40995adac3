/** Minicluster health checks against real processes and a real HTTP server the task starts. */
import assert from "node:assert/strict";
import type { HealthCheckSpec, LaunchSpec } from "../../core/ports/host_backend.ts";
import { HEALTH_CHECK_REASON } from "../../core/ports/health_check.ts";
import { runCheck } from "./health.ts";
import { Minicluster } from "./minicluster.ts";
import { isAlive, Recorder } from "../backend_testing.ts";
import { withMinicluster } from "./testing.ts";

/** Short, fractional timings keep the tests fast; generous failure counts keep them from flaking. */
function makeCheck(overrides: Partial<HealthCheckSpec> = {}): HealthCheckSpec {
  return {
    type: "COMMAND",
    command: "exit 0",
    initialIntervalSecs: 0.1,
    intervalSecs: 0.1,
    timeoutSecs: 2,
    maxConsecutiveFailures: 3,
    ...overrides,
  };
}

function makeSpec(
  command: string,
  healthCheck: HealthCheckSpec,
  overrides: Partial<LaunchSpec> = {},
): LaunchSpec {
  const jobId = crypto.randomUUID();
  return {
    taskId: `${jobId}-0-1`,
    jobId,
    instanceId: 0,
    hostname: "agent-0",
    agentId: "minicluster-S0",
    resources: { cpuMilli: 100, memMb: 32, diskMb: 0, gpuMilli: 0 },
    ports: {},
    command: { shell: true, value: command, arguments: [] },
    env: {},
    killGracePeriodMs: 1000,
    labels: [],
    healthCheck,
    ...overrides,
  };
}

function withCluster(body: (mc: Minicluster, rec: Recorder) => Promise<void>): Promise<void> {
  return withMinicluster("minicluster_health_test_", { agents: 1, stopGracePeriodMs: 200 }, body);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await delay(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function readOr(path: string, fallback: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return fallback;
  }
}

/** A port nothing listens on right now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("a passing command check runs in the task's sandbox with its environment and reports healthy once", async () => {
  await withCluster(async (mc, rec) => {
    const spec = makeSpec("touch ready; exec sleep 30", makeCheck());
    // Counts its runs in the sandbox; passes only with the task's environment and working directory.
    spec.healthCheck!.command = `echo x >> checks; test "$MESOS_TASK_ID" = "${spec.taskId}" && test -f ready`;
    mc.launch([spec]);
    const healthy = await rec.waitHealth(spec.taskId, true);
    assert.equal(healthy.reason, HEALTH_CHECK_REASON);
    assert.equal(healthy.message, "Health check passed");
    const checks = `${mc.sandboxOf(spec.taskId)}/checks`;
    // Several more passing checks change nothing, so nothing more is reported.
    await eventually(async () => (await readOr(checks, "")).length >= 8 ? true : undefined, "4 checks");
    assert.deepEqual(rec.health(spec.taskId), [true]);
    assert.deepEqual(rec.statuses(spec.taskId).map((s) => s.state), [
      "TASK_STAGING",
      "TASK_STARTING",
      "TASK_RUNNING",
      "TASK_RUNNING",
    ]);
  });
});

Deno.test("a command check with unshareEnvironments runs without the task's variables, still in its sandbox", async () => {
  await withCluster(async (mc, rec) => {
    const env = { GREETING: "hi" };
    // Each check passes only with the task's environment (user variables, PELOTON_*, MESOS_TASK_ID).
    const sees = 'test "$GREETING" = hi && test -n "$PELOTON_JOB_ID" && test -n "$MESOS_TASK_ID"';
    const shared = makeSpec("exec sleep 30", makeCheck({ command: sees }), { env });
    const unshared = makeSpec(
      "exec sleep 30",
      makeCheck({ command: sees, unshareEnvironments: true, maxConsecutiveFailures: 100 }),
      { env },
    );
    // Without them it still runs in the sandbox, with the agent's variables (and this daemon's).
    const blind = makeSpec(
      "touch ready; exec sleep 30",
      makeCheck({
        command:
          'test -z "$GREETING$PELOTON_JOB_ID$MESOS_TASK_ID" && test -f "$MESOS_SANDBOX/ready" && test -f ready',
        unshareEnvironments: true,
      }),
      { env },
    );
    mc.launch([shared, unshared, blind]);
    await rec.waitHealth(shared.taskId, true);
    const failed = await rec.waitHealth(unshared.taskId, false);
    assert.equal(failed.message, "Health check failed: exited with status 1");
    await rec.waitHealth(blind.taskId, true);
  });
});

Deno.test("a failing command check reports unhealthy once, then kills the task at the Nth failure", async () => {
  await withCluster(async (mc, rec) => {
    const spec = makeSpec("exec sleep 30", makeCheck({ command: "exit 3", maxConsecutiveFailures: 2 }));
    mc.launch([spec]);
    const unhealthy = await rec.waitHealth(spec.taskId, false);
    assert.equal(unhealthy.reason, HEALTH_CHECK_REASON);
    assert.equal(unhealthy.message, "Health check failed: exited with status 3");
    const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
    assert.equal(killed.healthy, false);
    assert.equal(killed.reason, HEALTH_CHECK_REASON);
    assert.equal(
      killed.message,
      "Task killed after 2 consecutive failed health checks; Command terminated with signal SIGTERM",
    );
    // The second failure comes an interval after the first.
    assert.ok(killed.timeMs - unhealthy.timeMs >= 100, `killed ${killed.timeMs - unhealthy.timeMs} ms after`);
    assert.deepEqual(rec.health(spec.taskId), [false]);
  });
});

Deno.test("a task that ignores SIGTERM is SIGKILLed after its kill grace", async () => {
  await withCluster(async (mc, rec) => {
    // The first check comes 100 ms after the start, long after the trap is set.
    const check = makeCheck({ command: "false", maxConsecutiveFailures: 1 });
    const spec = makeSpec("trap '' TERM; while true; do sleep 0.05; done", check, {
      killGracePeriodMs: 300,
    });
    mc.launch([spec]);
    const unhealthy = await rec.waitHealth(spec.taskId, false);
    const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
    assert.match(killed.message!, /^Task killed after 1 consecutive failed health checks; .*SIGKILL$/);
    assert.ok(killed.timeMs - unhealthy.timeMs >= 300, `killed ${killed.timeMs - unhealthy.timeMs} ms after`);
  });
});

Deno.test("an HTTP check passes against the server the task starts (2xx, 3xx) and fails on 404 or with no server", async () => {
  await withCluster(async (mc, rec) => {
    const port = freePort();
    const check = makeCheck({
      type: "HTTP",
      command: undefined,
      http: { port, path: "/", scheme: "http" },
      initialIntervalSecs: 0.2,
      // The server needs a moment to start: failures before that must not kill the task.
      maxConsecutiveFailures: 50,
    });
    const up = makeSpec('mkdir sub; exec python3 -m http.server "$PORT_HTTP" --bind 127.0.0.1', check, {
      ports: { http: port },
    });
    const noServer = {
      ...check,
      http: { port: freePort(), path: "/", scheme: "http" },
      maxConsecutiveFailures: 2,
    };
    const nobody = makeSpec("exec sleep 30", noServer);
    mc.launch([up, nobody]);

    const healthy = await rec.waitHealth(up.taskId, true);
    assert.equal(healthy.reason, HEALTH_CHECK_REASON);
    // An unhealthy report can only precede the healthy one, while the server was starting.
    assert.deepEqual(rec.health(up.taskId).slice(-1), [true]);
    // Single checks against the same server: a redirect is followed (/sub → /sub/), a 404 is a failure.
    const once = (path: string) =>
      runCheck(
        { ...check, http: { port, path, scheme: "http" } },
        { cwd: "/", env: {} },
        2000,
        new AbortController().signal,
      );
    assert.deepEqual(await once("/sub"), { passed: true, why: "" });
    assert.deepEqual(await once("/nope"), {
      passed: false,
      why: `GET http://127.0.0.1:${port}/nope answered 404`,
    });

    const killed = await rec.waitState(nobody.taskId, "TASK_KILLED");
    assert.equal(killed.healthy, false);
    assert.equal(killed.reason, HEALTH_CHECK_REASON);
    assert.deepEqual(rec.health(nobody.taskId), [false]);
    const unhealthy = rec.statuses(nobody.taskId).find((s) => s.healthy === false)!;
    assert.match(unhealthy.message!, /^Health check failed: GET http:\/\/127\.0\.0\.1:\d+\/ failed: /);
  });
});

Deno.test("a check is ended at its timeout, with whatever it started", async () => {
  await withCluster(async (mc, rec) => {
    const check = makeCheck({
      command: "echo $$ > check.pid; exec sleep 30",
      timeoutSecs: 0.2,
      maxConsecutiveFailures: 1,
    });
    const spec = makeSpec("exec sleep 30", check);
    mc.launch([spec]);
    const unhealthy = await rec.waitHealth(spec.taskId, false);
    assert.equal(unhealthy.message, "Health check failed: timed out after 0.2s");
    await rec.waitState(spec.taskId, "TASK_KILLED");
    const pid = Number(await Deno.readTextFile(`${mc.sandboxOf(spec.taskId)}/check.pid`));
    assert.ok(pid > 0 && !isAlive(pid), `check process ${pid} still runs`);
  });
});

Deno.test("checks stop when the task exits: no check runs and nothing is reported after", async () => {
  await withCluster(async (mc, rec) => {
    const spec = makeSpec(
      "sleep 0.5",
      makeCheck({ command: "echo x >> checks; exit 1", maxConsecutiveFailures: 100 }),
    );
    mc.launch([spec]);
    const finished = await rec.waitState(spec.taskId, "TASK_FINISHED");
    const checks = `${mc.sandboxOf(spec.taskId)}/checks`;
    const ran = await readOr(checks, "");
    assert.ok(ran.length >= 2, "at least one check ran");
    await delay(350);
    assert.equal(await readOr(checks, ""), ran, "no check ran after the task exited");
    const all = rec.statuses(spec.taskId);
    assert.equal(all.at(-1), finished);
    assert.equal(finished.healthy, undefined);
    assert.deepEqual(rec.health(spec.taskId), [false]);
  });
});

Deno.test("stopping the minicluster ends a check in flight and its process", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_health_test_" });
  const mc = new Minicluster({ dataDir, agents: 1, stopGracePeriodMs: 200 });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    // A check without a time limit (timeout 0, as in Mesos) that never finishes on its own.
    const check = makeCheck({ command: "echo $$ > check.pid; exec sleep 30", timeoutSecs: 0 });
    const spec = makeSpec("exec sleep 30", check);
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const pidFile = `${mc.sandboxOf(spec.taskId)}/check.pid`;
    const pid = await eventually(
      async () => Number(await readOr(pidFile, "")) || undefined,
      "the check to start",
    );
    const started = Date.now();
    await mc.stop();
    assert.ok(Date.now() - started < 2000, `stop took ${Date.now() - started} ms`);
    assert.ok(!isAlive(pid), `check process ${pid} still runs`);
    const last = rec.statuses(spec.taskId).at(-1)!;
    assert.equal(last.state, "TASK_LOST");
    assert.deepEqual(rec.health(spec.taskId), []);
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a kill stops the checks: a failing check reports nothing more once the task is being killed", async () => {
  await withCluster(async (mc, rec) => {
    const check = makeCheck({ command: "echo x >> checks; exit 1", maxConsecutiveFailures: 100 });
    // Ignores SIGTERM, so it keeps running through the whole grace period.
    const spec = makeSpec("trap '' TERM; while true; do sleep 0.05; done", check, {
      killGracePeriodMs: 600,
    });
    mc.launch([spec]);
    await rec.waitHealth(spec.taskId, false);
    mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 600 }]);
    await delay(50);
    const checks = `${mc.sandboxOf(spec.taskId)}/checks`;
    const ran = await readOr(checks, "");
    await delay(300);
    assert.equal(await readOr(checks, ""), ran, "no check ran during the kill");
    const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
    assert.equal(killed.healthy, undefined);
    assert.notEqual(killed.reason, HEALTH_CHECK_REASON);
  });
});

Deno.test("an invalid health check is rejected with TASK_ERROR naming the field", async () => {
  await withCluster(async (mc, rec) => {
    const spec = makeSpec("exec sleep 30", makeCheck({ maxConsecutiveFailures: 0 }));
    mc.launch([spec]);
    const error = await rec.waitState(spec.taskId, "TASK_ERROR");
    assert.equal(error.reason, "REASON_TASK_INVALID");
    assert.equal(
      error.message,
      "Task uses an invalid health check: healthCheck.maxConsecutiveFailures is 0, expected a positive integer",
    );
  });
});
