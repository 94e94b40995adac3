/** Minicluster tests against real local processes: statuses, sandboxes, kills, reconciliation, shutdown. */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";
import { isAlive, makeSpec as specFor, Recorder } from "../backend_testing.ts";
import type { SpawnerKind } from "./spawner.ts";
import { withMinicluster } from "./testing.ts";

function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new Error(message);
}

function assertEquals<T>(actual: T, expected: T, what = "value"): void {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

/** The first agent's host, where these tests run their tasks. */
const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };

function makeSpec(command: string | string[], overrides: Partial<LaunchSpec> = {}): LaunchSpec {
  return specFor(AGENT_0, command, overrides);
}

type Body = (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>;

function withCluster(body: Body, options: Partial<MiniclusterOptions> = {}): Promise<void> {
  // Production's spawner (a worker thread) unless a test asks for the in-process one.
  const all = { agents: 2, stopGracePeriodMs: 500, spawnInWorker: true, ...options };
  return withMinicluster("minicluster_test_", all, body);
}

/** Production's worker thread both ways: posix_spawn through libc, and `setsid`, its fallback without it. */
const SPAWNERS: SpawnerKind[] = ["posix_spawn", "setsid"];

/** A test of task processes, once with each production spawner. */
function clusterTest(name: string, body: Body, options: Partial<MiniclusterOptions> = {}): void {
  for (const spawner of SPAWNERS) {
    Deno.test(`${name} (${spawner} spawner)`, () => withCluster(body, { spawner, ...options }));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
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

/** Waits until a task's stdout contains `text`, i.e. the task got past its setup. */
function outputContains(mc: Minicluster, taskId: string, text: string): Promise<string> {
  return eventually(async () => {
    const out = await mc.logs(taskId, "stdout");
    return out?.includes(text) ? out : undefined;
  }, `${taskId} to print ${text}`);
}

function pidsIn(text: string): number[] {
  return text.split(/\s+/).filter(Boolean).map(Number);
}

Deno.test("start announces every agent asynchronously, with the default resources and attributes", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_test_" });
  const mc = new Minicluster({ dataDir, agents: 3 });
  const rec = new Recorder();
  rec.guard = true;
  mc.start(rec.sink);
  rec.guard = false;
  assertEquals(rec.events.length, 0, "events right after start");
  await rec.waitFor((e) => e.kind === "host-up" && e.host.hostname === "agent-2", "agent-2 up");
  const hosts = rec.events.flatMap((e) => e.kind === "host-up" ? [e.host] : []);
  assertEquals(hosts.map((h) => h.hostname), ["agent-0", "agent-1", "agent-2"], "hostnames");
  assertEquals(hosts[1], {
    hostname: "agent-1",
    agentId: "minicluster-S1",
    resources: { cpuMilli: 4000, memMb: 8192, diskMb: 20480, gpuMilli: 0 },
    attributes: { rack: "rack-1", host_pool: "shared" },
    portRanges: [[31000, 32000]],
    ip: "127.0.0.1",
  }, "agent-1");
  assertEquals(rec.batches.length, 1, "host-ups come in one batch");
  await mc.stop();
  await Deno.remove(dataDir, { recursive: true });
});

clusterTest(
  "a shell task finishes and its sandbox holds its output and environment",
  async (mc, rec, dataDir) => {
    const spec = makeSpec(
      'echo "job=$PELOTON_JOB_ID instance=$PELOTON_INSTANCE_ID task=$PELOTON_TASK_ID"; ' +
        'echo "mesos=$MESOS_TASK_ID port=$PORT_HTTP_PORT plain=$http_port extra=$EXTRA"; pwd; ' +
        "echo oops >&2; sleep 0.2",
      { instanceId: 7, ports: { http_port: 31007 }, env: { EXTRA: "yes" } },
    );
    mc.launch([spec]);
    const done = await rec.waitState(spec.taskId, "TASK_FINISHED");
    assertEquals(rec.states(spec.taskId), ["TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]);
    assertEquals(done.exitCode, 0, "exit code");
    assertEquals(done.hostname, "agent-0", "hostname");
    const sandbox = await Deno.realPath(`${dataDir}/agents/minicluster-S0/tasks/${spec.taskId}`);
    assertEquals(
      await mc.logs(spec.taskId, "stdout"),
      `job=${spec.jobId} instance=7 task=${spec.jobId}-7\n` +
        `mesos=${spec.taskId} port=31007 plain=31007 extra=yes\n${sandbox}\n`,
      "stdout",
    );
    assertEquals(await mc.logs(spec.taskId, "stderr"), "oops\n", "stderr");
    assertEquals(await Deno.readTextFile(`${sandbox}/stderr`), "oops\n", "stderr file");
    assertEquals(mc.agentFor(spec.taskId)?.hostname, "agent-0", "agentFor");
  },
);

Deno.test("a port named PATH, HOST or MESOS_SANDBOX is PORT_<NAME> only: the agent's variables stand", () =>
  withCluster(async (mc, rec) => {
    const spec = makeSpec(
      'ls -d . >/dev/null && echo "path=$PORT_PATH host=$HOST sandbox=$PORT_MESOS_SANDBOX ' +
        'own=$([ "$MESOS_SANDBOX" = "$PWD" ] && echo yes)"',
      { ports: { PATH: 31002, HOST: 31003, MESOS_SANDBOX: 31004 } },
    );
    mc.launch([spec]);
    const done = await rec.waitState(spec.taskId, "TASK_FINISHED");
    assertEquals(done.exitCode, 0, `exit code (stderr: ${await mc.logs(spec.taskId, "stderr")})`);
    assertEquals(
      await mc.logs(spec.taskId, "stdout"),
      "path=31002 host=agent-0 sandbox=31004 own=yes\n",
      "stdout",
    );
  }));

Deno.test("stop gives each task its own kill grace period, up to stopGracePeriodMs", () =>
  withCluster(async (mc, rec, dataDir) => {
    // One cleans up in 0.6 s of its 2 s grace; one ignores SIGTERM and has 0.2 s; one ignores it and has 60 s.
    const loop = "echo up; while :; do sleep 0.05; done";
    const specs = [
      makeSpec(`trap 'sleep 0.6; echo cleaned; exit 0' TERM; ${loop}`, { killGracePeriodMs: 2000 }),
      makeSpec(`trap '' TERM; ${loop}`, { instanceId: 1, killGracePeriodMs: 200 }),
      makeSpec(`trap '' TERM; ${loop}`, { instanceId: 2, killGracePeriodMs: 60_000 }),
    ];
    mc.launch(specs);
    for (const s of specs) await outputContains(mc, s.taskId, "up");
    const started = Date.now();
    const stopped = mc.stop();
    const ended = await Promise.all(
      specs.map((s) => rec.waitState(s.taskId, "TASK_LOST").then(() => Date.now())),
    );
    await stopped;
    const stdout = await Deno.readTextFile(
      `${dataDir}/agents/minicluster-S0/tasks/${specs[0].taskId}/stdout`,
    );
    assertEquals(stdout, "up\ncleaned\n", "the first task's stdout");
    const [, short, long] = ended.map((t) => t - started);
    assert(short < 1000, `the task with a 0.2 s grace period was SIGKILLed after ${short} ms`);
    assert(
      long >= 1400 && long < 2500,
      `the task with a 60 s grace period was SIGKILLed after ${long} ms (cap 1.5 s)`,
    );
  }, { stopGracePeriodMs: 1500 }));

clusterTest("an argv task runs without a shell", async (mc, rec) => {
  const spec = makeSpec(["echo", "hello world", "$HOME"], {
    agentId: "minicluster-S1",
    hostname: "agent-1",
  });
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_FINISHED");
  assertEquals(await mc.logs(spec.taskId, "stdout"), "hello world $HOME\n", "stdout");
  assertEquals(mc.agentFor(spec.taskId)?.agentId, "minicluster-S1", "agentFor");
});

clusterTest("a non-zero exit fails the task with its exit code", async (mc, rec) => {
  const spec = makeSpec("sleep 0.1; exit 3");
  mc.launch([spec]);
  const failed = await rec.waitState(spec.taskId, "TASK_FAILED");
  assertEquals(failed.exitCode, 3, "exit code");
  assertEquals(failed.message, "Command exited with status 3", "message");
  assertEquals(rec.states(spec.taskId), ["TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_FAILED"]);
});

clusterTest("a command that cannot be spawned fails with REASON_COMMAND_EXECUTOR_FAILED", async (mc, rec) => {
  const spec = makeSpec(["definitely-not-a-command-4711"]);
  mc.launch([spec]);
  const failed = await rec.waitState(spec.taskId, "TASK_FAILED");
  assertEquals(failed.reason, "REASON_COMMAND_EXECUTOR_FAILED", "reason");
  assertEquals(rec.states(spec.taskId), ["TASK_STAGING", "TASK_STARTING", "TASK_FAILED"]);
});

clusterTest("a task that handles SIGTERM is TASK_KILLED well within its grace period", async (mc, rec) => {
  // `wait`, not a foreground `sleep`: sh runs a trap only once a foreground command ends, and a SIGTERM
  // that reaches the sleep while sh is still forking it is lost, which left sh waiting out the grace period.
  const spec = makeSpec("trap 'echo got-term; exit 3' TERM; echo ready; sleep 30 & wait");
  mc.launch([spec]);
  await outputContains(mc, spec.taskId, "ready");
  const start = Date.now();
  mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 5000 }]);
  const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
  assert(Date.now() - start < 2000, `kill took ${Date.now() - start} ms`);
  assertEquals(killed.exitCode, 3, "exit code");
  assertEquals(await mc.logs(spec.taskId, "stdout"), "ready\ngot-term\n", "stdout");
});

clusterTest("a task that ignores SIGTERM is SIGKILLed after the grace period", async (mc, rec) => {
  const spec = makeSpec("trap '' TERM; echo ready; sleep 30");
  mc.launch([spec]);
  await outputContains(mc, spec.taskId, "ready");
  const start = Date.now();
  mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 300 }]);
  const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
  const tookMs = Date.now() - start;
  assert(tookMs >= 290 && tookMs < 3000, `kill took ${tookMs} ms`);
  assertEquals(killed.message, "Command terminated with signal SIGKILL", "message");
});

clusterTest("killing a shell task kills its children too", async (mc, rec) => {
  const spec = makeSpec("sleep 30 & echo $! > child.pid; echo ready; wait");
  mc.launch([spec]);
  await outputContains(mc, spec.taskId, "ready");
  const [child] = pidsIn(await Deno.readTextFile(`${mc.sandboxOf(spec.taskId)}/child.pid`));
  // The output can come before the spawner's report of the pid reaches the agent.
  const shell = await eventually(() => mc.pid(spec.taskId), "the shell's pid");
  assert(isAlive(child) && isAlive(shell), "task processes run");
  mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 1000 }]);
  await rec.waitState(spec.taskId, "TASK_KILLED");
  assert(!isAlive(shell), `shell ${shell} still alive`);
  await eventually(() => isAlive(child) ? undefined : true, `child ${child} to die`);
});

clusterTest(
  "a kill that arrives while the process is being spawned reaches it once it has a pid",
  async (mc, rec) => {
    const specs = Array.from({ length: 20 }, () => makeSpec("trap 'exit 3' TERM; sleep 30 & wait"));
    mc.launch(specs);
    // Killed as each reports TASK_STARTING: some pids are known by then, some are still being spawned.
    await Promise.all(specs.map(async (spec) => {
      await rec.waitState(spec.taskId, "TASK_STARTING");
      mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 1000 }]);
    }));
    for (const spec of specs) {
      await rec.waitState(spec.taskId, "TASK_KILLED");
      const states = rec.states(spec.taskId);
      assertEquals(states.filter((s) => s === "TASK_KILLED").length, 1, `${spec.taskId} killed once`);
      assertEquals(states.at(-1), "TASK_KILLED", `${spec.taskId} ends killed`);
    }
    await eventually(() => specs.every((s) => mc.pid(s.taskId) === undefined) || undefined, "no live task");
  },
);

Deno.test("the in-process spawner: a task runs, and a kill reaches its whole process group", () =>
  withCluster(async (mc, rec) => {
    const done = makeSpec("echo hi");
    const spec = makeSpec("sleep 30 & echo $! > child.pid; echo ready; wait");
    mc.launch([done, spec]);
    await rec.waitState(done.taskId, "TASK_FINISHED");
    assertEquals(await mc.logs(done.taskId, "stdout"), "hi\n", "stdout");
    await outputContains(mc, spec.taskId, "ready");
    const [child] = pidsIn(await Deno.readTextFile(`${mc.sandboxOf(spec.taskId)}/child.pid`));
    mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 1000 }]);
    await rec.waitState(spec.taskId, "TASK_KILLED");
    await eventually(() => isAlive(child) ? undefined : true, `child ${child} to die`);
  }, { spawnInWorker: false }));

clusterTest("a finished task's background children do not outlive it", async (mc, rec, dataDir) => {
  const spec = makeSpec("sleep 30 & echo $! > child.pid; sleep 0.1");
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_FINISHED");
  const [child] = pidsIn(
    await Deno.readTextFile(`${dataDir}/agents/minicluster-S0/tasks/${spec.taskId}/child.pid`),
  );
  await eventually(() => isAlive(child) ? undefined : true, `child ${child} to die`);
});

clusterTest(
  "a kill that arrives before the process started ends it as killed during launch",
  async (mc, rec) => {
    const spec = makeSpec("echo should-not-run");
    mc.launch([spec]);
    mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 1000 }]);
    const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
    assertEquals(killed.reason, "REASON_TASK_KILLED_DURING_LAUNCH", "reason");
    assertEquals(rec.states(spec.taskId), ["TASK_STAGING", "TASK_KILLED"]);
    assertEquals(await mc.logs(spec.taskId, "stdout"), "", "stdout");
  },
);

clusterTest(
  "a kill that overtakes its task's launch ends the launch as killed: nothing runs after the kill was answered",
  async (mc, rec) => {
    const spec = makeSpec("echo should-not-run; sleep 30");
    // The host manager sends the kill first (the launch waits for the job manager's LAUNCHING write).
    mc.kill([{ taskId: spec.taskId, agentId: "", gracePeriodMs: 1000 }]);
    const lost = await rec.waitState(spec.taskId, "TASK_LOST");
    assertEquals(lost.message, "Reconciliation: Task is unknown", "the kill's answer");
    mc.launch([spec]);
    const killed = await rec.waitState(spec.taskId, "TASK_KILLED");
    assertEquals(killed.reason, "REASON_TASK_KILLED_DURING_LAUNCH", "reason");
    assertEquals([killed.hostname, killed.agentId], [spec.hostname, spec.agentId], "where it was to run");
    await delay(200);
    assertEquals(rec.states(spec.taskId), ["TASK_LOST", "TASK_KILLED"], "statuses");
    assertEquals(mc.pid(spec.taskId), undefined, "no process");
    mc.reconcile([spec.taskId]);
    const echo = await rec.waitStatus(
      (s) => s.taskId === spec.taskId && s.reason === "REASON_RECONCILIATION" && s.state !== "TASK_LOST",
      "reconciliation",
    );
    assertEquals(echo.state, "TASK_KILLED", "reconciled as killed");
  },
);

clusterTest("a kill answered unknown does not hold back the launches of other tasks", async (mc, rec) => {
  const spec = makeSpec("sleep 30");
  mc.kill([{ taskId: "some-other-task", agentId: "", gracePeriodMs: 1000 }]);
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_RUNNING");
});

clusterTest("events are never delivered synchronously from launch, kill or reconcile", async (mc, rec) => {
  await rec.waitFor((e) => e.kind === "host-up", "host-up");
  const spec = makeSpec("sleep 30");
  rec.guard = true;
  mc.launch([spec, makeSpec("true", { agentId: "no-such-agent" })]);
  mc.reconcile(["unknown-task"]);
  rec.guard = false;
  await rec.waitState(spec.taskId, "TASK_RUNNING");
  rec.guard = true;
  mc.kill([{ taskId: spec.taskId, agentId: spec.agentId, gracePeriodMs: 1000 }]);
  mc.kill([{ taskId: "unknown-task", agentId: "", gracePeriodMs: 1000 }]);
  rec.guard = false;
  await rec.waitState(spec.taskId, "TASK_KILLED");
});

clusterTest("reconcile: unknown tasks are lost, known ones report their latest state", async (mc, rec) => {
  const running = makeSpec("sleep 30");
  const finished = makeSpec("true");
  mc.launch([running, finished]);
  await rec.waitState(running.taskId, "TASK_RUNNING");
  await rec.waitState(finished.taskId, "TASK_FINISHED");
  const mark = rec.events.length;
  mc.reconcile(["no-such-task", finished.taskId]);
  const lost = await rec.waitState("no-such-task", "TASK_LOST");
  assertEquals(lost.reason, "REASON_RECONCILIATION", "unknown reason");
  const again = rec.statuses(finished.taskId).at(-1)!;
  assertEquals([again.state, again.reason], ["TASK_FINISHED", "REASON_RECONCILIATION"], "known task");
  mc.reconcile();
  await rec.waitFor(
    (e) =>
      e.kind === "task-status" && e.status.reason === "REASON_RECONCILIATION" &&
      e.status.state === "TASK_RUNNING",
    "implicit reconciliation",
  );
  await delay(20);
  const implicit = rec.events.slice(mark).flatMap((e) =>
    e.kind === "task-status" && e.status.reason === "REASON_RECONCILIATION" ? [e.status.taskId] : []
  );
  assertEquals(implicit, ["no-such-task", finished.taskId, running.taskId], "reconciled tasks");
});

clusterTest("launch rejects unknown agents and duplicate task ids", async (mc, rec) => {
  const spec = makeSpec("sleep 30");
  const stray = makeSpec("true", { agentId: "no-such-agent" });
  mc.launch([spec, stray]);
  await rec.waitState(spec.taskId, "TASK_RUNNING");
  const lost = await rec.waitState(stray.taskId, "TASK_LOST");
  assertEquals(lost.reason, "REASON_AGENT_REMOVED", "reason");
  mc.launch([{ ...spec }]);
  const error = await rec.waitState(spec.taskId, "TASK_ERROR");
  assertEquals(error.reason, "REASON_TASK_INVALID", "reason");
  mc.reconcile([spec.taskId]);
  await rec.waitFor(
    (e) =>
      e.kind === "task-status" && e.status.taskId === spec.taskId &&
      e.status.reason === "REASON_RECONCILIATION",
    "reconciliation",
  );
  assertEquals(
    rec.statuses(spec.taskId).at(-1)?.state,
    "TASK_RUNNING",
    "the duplicate left the task alone",
  );
});

Deno.test("a task with a CUSTOM executor is refused (TASK_ERROR), its command never run", () =>
  withCluster(async (mc, rec, dataDir) => {
    const spec = makeSpec("touch ran", {
      executor: { type: "CUSTOM", name: "AuroraExecutor", data: btoa('{"task": {}}') },
    });
    mc.launch([spec]);
    const error = await rec.waitState(spec.taskId, "TASK_ERROR");
    assertEquals(error.reason, "REASON_TASK_INVALID", "reason");
    assertEquals(
      error.message,
      "Task uses a CUSTOM executor (AuroraExecutor), which the minicluster cannot run: it has only the " +
        "command executor, so the executor's data would go unread. Run the job on Mesos, or remove its " +
        "executor to run the command as a command task",
      "message",
    );
    assertEquals(rec.states(spec.taskId), ["TASK_ERROR"], "states");
    const ran = await Deno.stat(`${mc.sandboxOf(spec.taskId)}/ran`).then(() => true, () => false);
    assert(!ran, `the command ran under ${dataDir}`);
  }));

clusterTest(
  "removeAgent loses its tasks and kills their processes; addAgent announces a new host",
  async (mc, rec) => {
    const spec = makeSpec("sleep 30", { agentId: "minicluster-S1", hostname: "agent-1" });
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const pid = mc.pid(spec.taskId)!;
    assertEquals(await mc.removeAgent("minicluster-S1"), true, "removed");
    assertEquals(await mc.removeAgent("minicluster-S1"), false, "removed twice");
    assert(!isAlive(pid), `task process ${pid} still alive`);
    const lost = await rec.waitState(spec.taskId, "TASK_LOST");
    assertEquals(lost.reason, "REASON_AGENT_REMOVED", "reason");
    const hostLost = await rec.waitFor((e) => e.kind === "host-lost", "host-lost");
    assertEquals(hostLost, {
      kind: "host-lost",
      hostname: "agent-1",
      agentId: "minicluster-S1",
      reason: "REASON_AGENT_REMOVED",
    }, "host-lost");
    assert(
      rec.events.indexOf(hostLost) >
        rec.events.findIndex((e) => e.kind === "task-status" && e.status === lost),
    );
    const host = mc.addAgent({ attributes: { host_pool: "daemon" } });
    assertEquals([host.hostname, host.agentId, host.attributes.host_pool], [
      "agent-2",
      "minicluster-S2",
      "daemon",
    ]);
    await rec.waitFor((e) => e.kind === "host-up" && e.host.agentId === "minicluster-S2", "new host-up");
    assertEquals(mc.hosts().map((h) => h.hostname), ["agent-0", "agent-2"], "hosts");
  },
);

Deno.test("machineDown takes an agent out until machineUp: host-lost, no launches, name kept; then host-up", () =>
  withCluster(async (mc, rec) => {
    const agent1 = { hostname: "agent-1", agentId: "minicluster-S1" };
    const spec = makeSpec("sleep 30", agent1);
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    mc.machineDown("agent-1");
    mc.machineDown("agent-1");
    const lost = await rec.waitState(spec.taskId, "TASK_LOST");
    // Mesos's reason for a machine taken down (the operator removed its agent): not the task's failure.
    assertEquals(lost.reason, "REASON_AGENT_REMOVED_BY_OPERATOR", "reason");
    const hostLost = await rec.waitFor((e) => e.kind === "host-lost", "host-lost");
    assertEquals(hostLost, {
      kind: "host-lost",
      hostname: "agent-1",
      agentId: "minicluster-S1",
      reason: "machine down for maintenance",
    }, "host-lost");
    assertEquals(rec.events.filter((e) => e.kind === "host-lost").length, 1, "taken down once");

    // Down, it runs nothing; its name (and port range) stays taken, as it comes back.
    const refused = makeSpec("true", agent1);
    mc.launch([refused]);
    assertEquals((await rec.waitState(refused.taskId, "TASK_LOST")).reason, "REASON_AGENT_REMOVED", "launch");
    assertEquals(mc.hosts().map((h) => h.hostname), ["agent-0", "agent-1"], "hosts");
    let added: unknown;
    try {
      mc.addAgent({ hostname: "agent-1" });
    } catch (e) {
      added = e;
    }
    assert(added instanceof Error && /exists/.test(added.message), `addAgent agent-1: ${added}`);

    mc.machineUp("agent-1");
    const up = await rec.waitFor((e) => e.kind === "host-up" && e.host.hostname === "agent-1", "host-up");
    assertEquals((up as { host: { agentId: string } }).host.agentId, "minicluster-S1", "agent id");
    const again = makeSpec("true", agent1);
    mc.launch([again]);
    await rec.waitState(again.taskId, "TASK_FINISHED");
    mc.machineUp("agent-1");
    mc.machineUp("agent-0");
    await delay(50);
    assertEquals(rec.events.filter((e) => e.kind === "host-up").length, 3, "host-up: start's two, then one");
  }, { spawner: "in-process" }));

clusterTest("stop leaves no live processes, and logs survive stop and restart", async (mc, rec, dataDir) => {
  const specs = [
    makeSpec("echo $$ > pids; sleep 30 & echo $! >> pids; echo started; wait"),
    makeSpec("trap '' TERM; echo $$ > pids; echo started; sleep 30", {
      agentId: "minicluster-S1",
      hostname: "agent-1",
    }),
  ];
  mc.launch(specs);
  const pids: number[] = [];
  for (const spec of specs) {
    await outputContains(mc, spec.taskId, "started");
    pids.push(...pidsIn(await Deno.readTextFile(`${mc.sandboxOf(spec.taskId)}/pids`)));
  }
  assertEquals(pids.length, 3, "pids");
  assert(pids.every(isAlive), "all processes run before stop");
  await mc.stop();
  assertEquals(pids.filter(isAlive), [], "live processes after stop");
  for (const spec of specs) {
    const last = rec.statuses(spec.taskId).at(-1)!;
    assertEquals(
      [last.state, last.reason],
      ["TASK_LOST", "REASON_EXECUTOR_TERMINATED"],
      "status after stop",
    );
    assertEquals(await mc.logs(spec.taskId, "stdout"), "started\n", "logs after stop");
  }
  let threw = false;
  try {
    mc.launch([makeSpec("true")]);
  } catch {
    threw = true;
  }
  assert(threw, "launch after stop throws");

  const again = new Minicluster({ dataDir, agents: 2 });
  const rec2 = new Recorder();
  again.start(rec2.sink);
  try {
    assertEquals(await again.logs(specs[1].taskId, "stdout"), "started\n", "logs after restart");
    assertEquals(await again.logs("never-ran", "stdout"), undefined, "logs of an unknown task");
    again.reconcile([specs[0].taskId]);
    await rec2.waitState(specs[0].taskId, "TASK_LOST");
  } finally {
    await again.stop();
  }
}, { stopGracePeriodMs: 300 });

Deno.test("a persistent volume outlives its task's runs on the same agent", async () => {
  await withCluster(async (mc, rec) => {
    const volume = { volumeId: "job-0-volume", containerPath: "data/db", sizeMb: 8 };
    const first = makeSpec('echo "run one" >> "$PELOTON_VOLUME_PATH/log" && cat data/db/log', { volume });
    mc.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");
    const second = makeSpec('echo "run two" >> data/db/log && cat "$PELOTON_VOLUME_PATH/log"', {
      volume,
      taskId: `${first.jobId}-0-2`,
      jobId: first.jobId,
    });
    mc.launch([second]);
    await rec.waitState(second.taskId, "TASK_FINISHED");
    assertEquals(await mc.logs(second.taskId, "stdout"), "run one\nrun two\n", "second run's output");
    const escape = makeSpec("true", {
      volume: { ...volume, containerPath: "../outside" },
      taskId: `${first.jobId}-0-3`,
    });
    mc.launch([escape]);
    const failed = await rec.waitState(escape.taskId, "TASK_FAILED");
    assert(/relative path inside the sandbox/.test(failed.message ?? ""), failed.message);
  });
});

Deno.test("a task's URIs are fetched into its sandbox first: executable, extracted, renamed; a failed fetch fails the launch", async () => {
  const files = await Deno.makeTempDir({ prefix: "fetch_test_" });
  await Deno.writeTextFile(`${files}/tool.sh`, "#!/bin/sh\necho tool ran\n");
  await Deno.mkdir(`${files}/bundle`);
  await Deno.writeTextFile(`${files}/bundle/data.txt`, "from the archive\n");
  const tar = await new Deno.Command("tar", {
    args: ["-czf", `${files}/bundle.tar.gz`, "-C", `${files}/bundle`, "data.txt"],
  })
    .output();
  assert(tar.success, "tar made the archive");
  await Deno.writeTextFile(`${files}/plain.txt`, "copied\n");
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const body = await Deno.readFile(`${files}${path}`).catch(() => undefined);
    return body ? new Response(body) : new Response("no such file", { status: 404 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await withCluster(async (mc, rec) => {
      const spec = makeSpec("./tool.sh && cat data.txt copy.txt");
      spec.command = {
        ...spec.command,
        uris: [
          { value: `${base}/tool.sh`, executable: true },
          { value: `${base}/bundle.tar.gz` },
          { value: `file://${files}/plain.txt`, outputFile: "copy.txt" },
        ],
      };
      mc.launch([spec]);
      await rec.waitState(spec.taskId, "TASK_FINISHED");
      assertEquals(await mc.logs(spec.taskId, "stdout"), "tool ran\nfrom the archive\ncopied\n", "stdout");

      const missing = makeSpec("true", { taskId: "missing-0-1" });
      missing.command = { ...missing.command, uris: [{ value: `${base}/nope.sh` }] };
      mc.launch([missing]);
      const failed = await rec.waitState(missing.taskId, "TASK_FAILED");
      assertEquals(failed.reason, "REASON_CONTAINER_LAUNCH_FAILED", "reason");
      assertEquals(
        failed.message,
        `Failed to launch container: Failed to fetch ${base}/nope.sh: HTTP 404 Not Found`,
        "message",
      );
      assertEquals(rec.states(missing.taskId), ["TASK_STAGING", "TASK_FAILED"], "never started");
    }, { spawner: "posix_spawn" });
  } finally {
    await server.shutdown();
    await Deno.remove(files, { recursive: true });
  }
});

Deno.test("a task killed while its URIs are fetched ends TASK_KILLED at once; a missing file fails its launch", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  // Answers nothing until the test ends: a fetch that would wait for ever.
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async () => {
    await released;
    return new Response("late");
  });
  const dir = await Deno.makeTempDir({ prefix: "fetch_test_" });
  try {
    await withCluster(async (mc, rec) => {
      const slow = makeSpec("true", { taskId: "slow-0-1" });
      slow.command = { ...slow.command, uris: [{ value: `http://127.0.0.1:${server.addr.port}/never.sh` }] };
      mc.launch([slow]);
      await rec.waitState(slow.taskId, "TASK_STAGING");
      await delay(100);
      mc.kill([{ taskId: slow.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 0 }]);
      const killed = await rec.waitState(slow.taskId, "TASK_KILLED", 3_000);
      assertEquals(killed.reason, "REASON_TASK_KILLED_DURING_LAUNCH", "reason");

      const missing = makeSpec("true", { taskId: "missing-0-1" });
      missing.command = {
        ...missing.command,
        uris: [{ value: `file://${dir}/nope.txt`, extract: false }],
      };
      mc.launch([missing]);
      const failed = await rec.waitState(missing.taskId, "TASK_FAILED");
      assertEquals(failed.reason, "REASON_CONTAINER_LAUNCH_FAILED", "reason");
      assert(
        failed.message?.startsWith(`Failed to launch container: Failed to fetch file://${dir}/nope.txt: `),
        `message: ${failed.message}`,
      );
    }, { spawner: "posix_spawn" });
  } finally {
    release();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
