/** Tasks in the simulated cluster run for their command's time: GNU sleep's forms, endless loops, exits. */
import assert from "node:assert/strict";
import type { BackendEvent, LaunchSpec } from "../core/ports/host_backend.ts";
import { seededPrng } from "../core/ports/prng.ts";
import { outcomeFromCommand, SimCluster } from "./cluster.ts";
import { EventQueue } from "./event_queue.ts";
import { simLaunchSpec } from "./testing.ts";

Deno.test("a task's outcome is its command's: minutes, decimals, exponents, endless loops, env", () => {
  const outcome = (value: string, extra: Partial<LaunchSpec> = {}) =>
    outcomeFromCommand({ command: { shell: true, value, arguments: [] }, env: {}, ...extra });
  const cases: [string, number, number][] = [
    ["sleep 1m", 60_000, 0],
    ["sleep 1m 30s", 90_000, 0],
    ["sleep .5", 500, 0],
    ["sleep 1e3", 1_000_000, 0],
    ["sleep infinity", Infinity, 0],
    ["while :; do echo running; sleep 10; done", Infinity, 0],
    ["while true; do sleep 1; done", Infinity, 0],
    ["until false; do sleep 1; done", Infinity, 0],
    ["if false; then exit 1; fi; sleep 5", 5000, 0],
    ["test -f done || exit 1; sleep 2", 2000, 0],
    ["echo failing && exit 3", 0, 3],
  ];
  for (const [value, durationMs, exitCode] of cases) {
    assert.deepEqual(outcome(value), { durationMs, exitCode }, value);
  }
  assert.deepEqual(outcome("sleep $SLEEP_SECONDS", { env: { SLEEP_SECONDS: "7" } }), {
    durationMs: 7000,
    exitCode: 0,
  });
});

const makeSpec = simLaunchSpec;

Deno.test("the simulated cluster ends tasks at their command's time, and never an endless one", () => {
  const queue = new EventQueue();
  const cluster = new SimCluster(queue, seededPrng(7), { startupMs: 1000, killDelayMs: 100 });
  const batches: BackendEvent[][] = [];
  cluster.start((batch) => batches.push(batch));
  cluster.launch([
    makeSpec("a-0-1", "sleep 1m 30s"),
    makeSpec("b-0-1", "while :; do echo running; sleep 10; done"),
    makeSpec("c-0-1", "if false; then exit 1; fi; sleep 5"),
    makeSpec("d-0-1", "sleep $SLEEP_SECONDS; exit 2", { env: { SLEEP_SECONDS: ".5" } }),
    makeSpec("e-0-1", "sleep infinity"),
    // A health check that never ends, with no timeout, never reports.
    makeSpec("f-0-1", "sleep 20", {
      healthCheck: {
        type: "COMMAND",
        command: "sleep infinity",
        initialIntervalSecs: 1,
        intervalSecs: 1,
        timeoutSecs: 0,
        maxConsecutiveFailures: 1,
      },
    }),
  ]);
  queue.runUntil(1_000_000);
  const ends = batches.flat().flatMap((e) =>
    e.kind === "task-status" && e.status.state !== "TASK_STAGING" && e.status.state !== "TASK_RUNNING"
      ? [`${e.status.taskId} ${e.status.timeMs} ${e.status.state} ${e.status.exitCode ?? ""}`.trim()]
      : []
  );
  assert.deepEqual(ends.sort(), [
    "a-0-1 91000 TASK_FINISHED 0",
    "c-0-1 6000 TASK_FINISHED 0",
    "d-0-1 1500 TASK_FAILED 2",
    "f-0-1 21000 TASK_FINISHED 0",
  ]);
  const health = batches.flat().filter((e) => e.kind === "task-status" && e.status.healthy !== undefined);
  assert.deepEqual(health, []);
});
