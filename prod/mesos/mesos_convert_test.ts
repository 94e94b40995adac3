/** Conversions between Mesos messages and the HostBackend port's shapes. */
import assert from "node:assert/strict";
import { toCoreStatus } from "./mesos_convert.ts";
import type { TaskStatus } from "./protocol.ts";

const status = (extra: Partial<TaskStatus>): TaskStatus => ({
  task_id: { value: "j-0-1" },
  agent_id: { value: "S0" },
  state: "TASK_RUNNING",
  timestamp: 1_700_000_000.25,
  ...extra,
});

Deno.test("toCoreStatus: a reconciliation answer echoing the latest state is not the task's message", () => {
  for (const state of ["TASK_RUNNING", "TASK_STARTING", "TASK_KILLING", "TASK_FAILED"] as const) {
    const s = toCoreStatus(
      status({
        state,
        source: "SOURCE_MASTER",
        reason: "REASON_RECONCILIATION",
        message: "Reconciliation: Latest task state",
      }),
      "agent-0",
      "",
      1,
    );
    assert.equal(s.message, undefined, state);
    // The reason stays: the job manager tells a restart's loss from the task's own by it.
    assert.equal(s.reason, "REASON_RECONCILIATION");
    // The time the master answered: Mesos's reconciliation carries no other.
    assert.equal(s.timeMs, 1_700_000_000_250);
  }
});

Deno.test("toCoreStatus: a reconciliation answer for a task the master does not know keeps why", () => {
  const s = toCoreStatus(
    status({
      state: "TASK_GONE",
      source: "SOURCE_MASTER",
      reason: "REASON_RECONCILIATION",
      message: "Reconciliation: Task is unknown to the agent",
    }),
    "agent-0",
    "",
    1,
  );
  assert.equal(s.message, "Reconciliation: Task is unknown to the agent");
  assert.equal(s.reason, "REASON_RECONCILIATION");
});

Deno.test("toCoreStatus: an agent's update keeps its message, exit code and time", () => {
  const s = toCoreStatus(
    status({
      state: "TASK_FAILED",
      source: "SOURCE_EXECUTOR",
      reason: "REASON_COMMAND_EXECUTOR_FAILED",
      message: "Command exited with status 3",
      uuid: "AAAAAAAAAAAAAAAAAAAAAA==",
    }),
    "agent-0",
    "",
    1,
  );
  assert.equal(s.message, "Command exited with status 3");
  assert.equal(s.exitCode, 3);
  assert.equal(s.timeMs, 1_700_000_000_250);
  assert.equal(s.uuid, "AAAAAAAAAAAAAAAAAAAAAA==");
});
