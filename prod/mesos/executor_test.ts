/**
 * A custom executor on Mesos, as Peloton's `task_builder.go` sends it (the command and container under a
 * CUSTOM ExecutorInfo, its data also in TaskInfo.data), and health checks carrying the task's environment;
 * the emulator takes such tasks, records their executor and refuses what Mesos refuses.
 */
import assert from "node:assert/strict";
import { spec } from "../../core/hostmgr/testing.ts";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { conformance, operator, RawFramework } from "./_conformance.ts";
import { eventually, makeSpec, withBackend } from "./_testing.ts";
import { executorProblem, specBag, toSecretVolume, toTaskInfo } from "./mesos_convert.ts";
import type { Event, TaskInfo } from "./protocol.ts";
import { bagToMesos } from "./resources.ts";
import { loadReferenceSchema } from "./shape_check.ts";

const DATA = btoa('{"task": {"name": "hello", "processes": [{"cmdline": "echo hello"}]}}');
const timing = { initialIntervalSecs: 1, intervalSecs: 2, timeoutSecs: 3, maxConsecutiveFailures: 4 };

function launchCall(tasks: TaskInfo[]): Record<string, unknown> {
  return {
    framework_id: { value: "f" },
    type: "ACCEPT",
    accept: { offer_ids: [{ value: "o" }], operations: [{ type: "LAUNCH", launch: { task_infos: tasks } }] },
  };
}

Deno.test("a CUSTOM executor goes to Mesos as Peloton sends it: its id, the command and container under it, its data in the task", async () => {
  const executor = {
    type: "CUSTOM" as const,
    data: DATA,
    // Given, but Peloton always names the executor after the task and gives it no resources of its own.
    executorId: { value: "mine" },
    resources: [{ name: "cpus", type: "SCALAR", scalar: { value: 1 } }],
    labels: { labels: [{ key: "tier", value: "preferred" }] },
    shutdownGracePeriod: { nanoseconds: 5e9 },
  };
  const before = structuredClone(executor);
  const container = {
    type: "MESOS" as const,
    mesos: { image: { type: 2, docker: { name: "library/debian" } } },
  };
  const launch = spec("job-4-0-1", "h", 1, {
    jobId: "job-4",
    command: { shell: true, value: "./thermos_executor.pex --nosetuid", arguments: [] },
    env: { GREETING: "hi" },
    ports: { http: 31005 },
    container,
    executor,
    healthCheck: { type: "COMMAND", command: "true", ...timing },
    labels: [{ key: "peloton.job_id", value: "job-4" }],
  });
  const resources = bagToMesos(specBag(launch), { allocationRole: "peloton" });
  const task = toTaskInfo(launch, resources);
  assert.equal(task.command, undefined, "no CommandInfo of its own");
  assert.equal(task.container, undefined, "nor ContainerInfo");
  assert.equal(task.data, DATA, "thermos reads its data from the TaskInfo");
  assert.deepEqual(task.resources, resources);
  const env = task.executor!.command!.environment!.variables;
  assert.deepEqual(task.executor, {
    type: "CUSTOM",
    executor_id: { value: "thermos-job-4-0-1" },
    name: "AuroraExecutor",
    data: DATA,
    labels: { labels: [{ key: "tier", value: "preferred" }] },
    shutdown_grace_period: { nanoseconds: 5e9 },
    command: { shell: true, value: "./thermos_executor.pex --nosetuid", environment: { variables: env } },
    container: { type: "MESOS", mesos: { image: { type: "DOCKER", docker: { name: "library/debian" } } } },
  });
  assert.deepEqual(Object.fromEntries(env.map((v) => [v.name, v.value])), {
    GREETING: "hi",
    PORT_HTTP: "31005",
    http: "31005",
    PELOTON_JOB_ID: "job-4",
    PELOTON_INSTANCE_ID: "0",
    PELOTON_TASK_ID: "job-4-0",
  });
  // Peloton copies the environment of the task's CommandInfo, which a custom executor's task has not.
  assert.deepEqual(task.health_check?.command, { shell: true, value: "true" });
  assert.deepEqual(executor, before, "the task's config is not changed");

  // A name of its own is kept; without a container of the task's, the executor's own stays; secrets go
  // into the container that goes under the executor.
  const named = toTaskInfo(spec("job-4-1-1", "h", 1, {
    executor: { type: "CUSTOM", name: "MyExecutor", container: { type: "DOCKER", docker: { image: "x" } } },
  }));
  assert.equal(named.executor?.name, "MyExecutor");
  assert.deepEqual(named.executor?.container, { type: "DOCKER", docker: { image: "x" } });
  assert.equal(named.data, undefined);
  const secret = { path: "/etc/key", data: btoa("k") };
  const withSecret = toTaskInfo(
    spec("job-4-2-1", "h", 1, { executor: { type: "CUSTOM" }, secrets: [secret] }),
  );
  assert.deepEqual(withSecret.executor?.container, { type: "MESOS", volumes: [toSecretVolume(secret)] });

  const schema = await loadReferenceSchema();
  assert.deepEqual(schema.check("Call", launchCall([task, named, withSecret])), []);
});

Deno.test("a command health check carries the task's environment unless it unshares it", () => {
  const env = { GREETING: "hi" };
  const shared = toTaskInfo(spec("j-0-1", "h", 1, {
    env,
    healthCheck: { type: "COMMAND", command: 'test "$GREETING" = hi', ...timing },
  }));
  assert.deepEqual(shared.health_check?.command, {
    shell: true,
    value: 'test "$GREETING" = hi',
    environment: shared.command!.environment,
  });
  assert.ok(shared.command!.environment!.variables.some((v) => v.name === "PELOTON_TASK_ID"));
  const unshared = toTaskInfo(spec("j-0-1", "h", 1, {
    env,
    healthCheck: { type: "COMMAND", command: "true", unshareEnvironments: true, ...timing },
  }));
  assert.deepEqual(unshared.health_check?.command, { shell: true, value: "true" });
  const http = toTaskInfo(spec("j-0-1", "h", 1, {
    env,
    healthCheck: { type: "HTTP", http: { port: 8080, path: "/", scheme: "http" }, ...timing },
  }));
  assert.equal(http.health_check?.command, undefined);
});

Deno.test("executor data that is not base64 is refused by name, the data never quoted", () => {
  assert.equal(executorProblem(undefined), undefined);
  assert.equal(executorProblem({ type: "CUSTOM", data: DATA }), undefined);
  assert.equal(
    executorProblem({ type: "CUSTOM", data: "thermos config!" }),
    "executor.data is not valid base64",
  );
});

Deno.test("MesosBackend on the emulator: a custom executor's task runs under Peloton's executor id, is listed with it, its exit is a FAILURE", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const host = hosts[0];
    const task: LaunchSpec = makeSpec(host, 'echo "$MESOS_EXECUTOR_ID $GREETING" && exit 3', {
      env: { GREETING: "hi" },
      executor: { type: "CUSTOM", data: DATA },
    });
    const bad = makeSpec(host, "true", { executor: { type: "CUSTOM", data: "not base64!" } });
    backend.launch([task, bad]);

    const refused = await rec.waitState(bad.taskId, "TASK_ERROR");
    assert.equal(refused.reason, "REASON_TASK_INVALID");
    assert.equal(refused.message, "Task has an invalid executor: executor.data is not valid base64");
    const failed = await rec.waitState(task.taskId, "TASK_FAILED");
    assert.equal(failed.exitCode, 3);
    const executorId = `thermos-${task.taskId}`;
    assert.equal(await backend.logs(task.taskId, "stdout"), `${executorId} hi\n`);

    const updates = m.events.flatMap((e) =>
      e.type === "UPDATE" && e.update.status.task_id.value === task.taskId ? [e.update.status] : []
    );
    assert.ok(updates.length >= 3);
    for (const u of updates) assert.deepEqual(u.executor_id, { value: executorId });
    // The executor exited: FAILURE with its id and its wait status (exit status 3).
    const failure = await eventually(
      "FAILURE",
      () =>
        m.events.find((e): e is Extract<Event, { type: "FAILURE" }> =>
          e.type === "FAILURE" && e.failure.executor_id?.value === executorId
        ),
    );
    assert.deepEqual(failure.failure, {
      agent_id: { value: host.agentId },
      executor_id: { value: executorId },
      status: 3 << 8,
    });
    assert.ok(!rec.events.some((e) => e.kind === "host-lost"), "an executor's FAILURE is no host loss");

    const listing = JSON.parse((await operator(m.url, { type: "GET_TASKS" })).body).get_tasks;
    const listed = [...listing.tasks, ...listing.completed_tasks]
      .find((t: { task_id: { value: string } }) => t.task_id.value === task.taskId);
    assert.deepEqual(listed.executor_id, { value: executorId });
  }));

/** One task of 0.1 cpus on `offer` with the given executor (and TaskInfo fields). */
function executorTask(
  offer: { agent_id: { value: string } },
  taskId: string,
  executor: Record<string, unknown> | undefined,
  extra: Record<string, unknown> = {},
) {
  return {
    name: taskId,
    task_id: { value: taskId },
    agent_id: offer.agent_id,
    resources: [{ name: "cpus", type: "SCALAR", scalar: { value: 0.1 }, role: "*" }],
    ...(executor ? { executor } : {}),
    ...extra,
  };
}

function accept(offer: { id: { value: string } }, task_infos: unknown[], refuseSeconds = 5) {
  return {
    type: "ACCEPT",
    accept: {
      offer_ids: [offer.id],
      operations: [{ type: "LAUNCH", launch: { task_infos } }],
      filters: { refuse_seconds: refuseSeconds },
    },
  };
}

conformance(
  "ACCEPT: a custom executor's task runs under its executor id; SHUTDOWN of that id ends it with a FAILURE",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    const executor = {
      type: "CUSTOM",
      executor_id: { value: "thermos-t1" },
      command: { shell: true, value: 'echo "$MESOS_EXECUTOR_ID"; sleep 30' },
      data: DATA,
    };
    // What the task leaves of the offer comes back at once, for the second launch below.
    const r = await fw.call(accept(offer, [executorTask(offer, "t1", executor, { data: DATA })], 0));
    assert.equal(r.status, 202, r.body);
    const running = await fw.ackUntil("t1", "TASK_RUNNING");
    assert.deepEqual(running.executor_id, { value: "thermos-t1" });
    const path = `/frameworks/${fw.frameworkId}/executors/thermos-t1/runs/latest/stdout`;
    await eventually("the executor's stdout", async () => {
      const text = await (await fetch(`${t.url}/files/download?path=${encodeURIComponent(path)}`)).text();
      return text === "thermos-t1\n" || undefined;
    });

    const listing = JSON.parse((await operator(t.url, { type: "GET_TASKS" })).body).get_tasks;
    assert.deepEqual(listing.tasks[0].executor_id, { value: "thermos-t1" });

    // The master filled in the framework id: the same ExecutorInfo again names the running executor.
    const next = await eventually(
      "a new offer of the agent",
      async () => (await fw.offers()).find((o) => o.agent_id.value === offer.agent_id.value),
    );
    const again = await fw.call(accept(next, [executorTask(offer, "t2", executor)]));
    assert.equal(again.status, 202);
    const second = await fw.update("t2");
    assert.equal(second.state, "TASK_ERROR");
    assert.equal(
      second.message,
      "Task t2 is invalid: executor thermos-t1 already runs a task: one task per custom executor in this emulator",
    );

    const shutdown = { executor_id: { value: "thermos-t1" }, agent_id: offer.agent_id };
    assert.equal((await fw.call({ type: "SHUTDOWN", shutdown })).status, 202);
    const killed = await fw.ackUntil("t1", "TASK_KILLED");
    assert.deepEqual(killed.executor_id, { value: "thermos-t1" });
    // Its wait status: killed by SIGTERM or, without a grace period, SIGKILL right after.
    const { failure } = await fw.sub.nextOf("FAILURE");
    assert.deepEqual({ ...failure, status: undefined }, {
      agent_id: offer.agent_id,
      executor_id: { value: "thermos-t1" },
      status: undefined,
    });
    assert.ok(failure.status === 15 || failure.status === 9, `status ${failure.status}`);
  },
  { emulatorOnly: true },
);

conformance(
  "ACCEPT: a custom executor is checked as the master checks it; bad bytes or no executor id fail the call's JSON",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    const command = { shell: true, value: "sleep 1" };
    const ok = { type: "CUSTOM", executor_id: { value: "e" }, command };

    const noId = await fw.call(accept(offer, [executorTask(offer, "t0", { command })]), true);
    assert.equal(noId.status, 400);
    assert.equal(
      noId.body,
      "Not initialized: accept.operations[0].launch.task_infos[0].executor.executor_id",
    );
    for (
      const [task, field] of [
        [executorTask(offer, "t0", { ...ok, data: "no base64!" }), "executor.data"],
        [executorTask(offer, "t0", ok, { data: "no base64!" }), "data"],
      ] as const
    ) {
      const r = await fw.call(accept(offer, [task]), true);
      assert.equal(r.status, 400);
      assert.equal(
        r.body,
        `Failed to convert JSON into Call protobuf: 'accept.operations[0].launch.task_infos[0].${field}' is not valid base64`,
      );
    }

    const cases: [Record<string, unknown> | undefined, Record<string, unknown>, string][] = [
      [
        ok,
        { command },
        "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present",
      ],
      [{ ...ok, command: undefined }, {}, "'ExecutorInfo.command' must be set for 'CUSTOM' executor"],
      [{ ...ok, type: "DEFAULT" }, {}, "'ExecutorInfo.command' must not be set for 'DEFAULT' executor"],
      [{ ...ok, type: undefined, command: undefined }, {}, "'ExecutorInfo.command' must be set"],
      [{ ...ok, executor_id: { value: "" } }, {}, "ID must be non-empty"],
      [{ ...ok, executor_id: { value: "a/b" } }, {}, "'a/b' contains invalid characters"],
      [
        { ...ok, framework_id: { value: "other" } },
        {},
        `ExecutorInfo has an invalid FrameworkID (Actual: other vs Expected: ${fw.frameworkId})`,
      ],
      [
        { ...ok, container: { type: "DOCKER" } },
        {},
        "Executor's `ContainerInfo` is invalid: DockerInfo 'docker' is not set for DOCKER typed ContainerInfo",
      ],
      [
        { ...ok, resources: [{ name: "cpus", type: "SCALAR", scalar: { value: 1000 }, role: "*" }] },
        {},
        "Total resources",
      ],
    ];
    const tasks = cases.map(([executor, extra], i) => executorTask(offer, `t${i}`, executor, extra));
    assert.equal((await fw.call(accept(offer, tasks), true)).status, 202);
    for (const [i, [, , problem]] of cases.entries()) {
      const update = await fw.update(`t${i}`);
      assert.equal(update.state, "TASK_ERROR");
      assert.equal(update.reason, "REASON_TASK_INVALID");
      assert.ok(update.message?.startsWith(`Task t${i} is invalid: ${problem}`), update.message);
    }
  },
  { emulatorOnly: true },
);
