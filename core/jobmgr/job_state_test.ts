import assert from "node:assert/strict";
import { deriveJobState, type JobStateInput } from "./job_state.ts";

const base: JobStateInput = {
  type: "BATCH",
  instanceCount: 3,
  current: "PENDING",
  goal: "SUCCEEDED",
  stats: {},
};
const derive = (over: Partial<JobStateInput>) => deriveJobState({ ...base, ...over });

Deno.test("all tasks succeeded → SUCCEEDED", () => {
  assert.equal(derive({ stats: { SUCCEEDED: 3 } }), "SUCCEEDED");
});

Deno.test("terminal mix with a failure → FAILED; with a kill → KILLED", () => {
  assert.equal(derive({ stats: { SUCCEEDED: 2, FAILED: 1 } }), "FAILED");
  assert.equal(derive({ stats: { SUCCEEDED: 2, LOST: 1 } }), "FAILED");
  assert.equal(derive({ stats: { SUCCEEDED: 2, KILLED: 1 } }), "KILLED");
  // FAILED wins over KILLED when failures alone cover the job (rule order).
  assert.equal(derive({ instanceCount: 2, stats: { FAILED: 2 } }), "FAILED");
});

Deno.test("running tasks → RUNNING, else PENDING, KILLING sticks until terminal", () => {
  assert.equal(derive({ stats: { RUNNING: 1, PENDING: 2 } }), "RUNNING");
  assert.equal(derive({ stats: { PENDING: 1, LAUNCHED: 2 } }), "PENDING");
  assert.equal(derive({ current: "KILLING", stats: { RUNNING: 1, KILLED: 2 } }), "KILLING");
  assert.equal(derive({ current: "KILLING", stats: { SUCCEEDED: 1, KILLED: 2 } }), "KILLED");
});

Deno.test("partially created batch job → INITIALIZED; extra tasks → PENDING", () => {
  assert.equal(derive({ stats: { PENDING: 2 } }), "INITIALIZED");
  assert.equal(derive({ stats: { SUCCEEDED: 4 } }), "PENDING");
});

Deno.test("the controller task decides a terminal job's outcome", () => {
  assert.equal(derive({ stats: { SUCCEEDED: 1, FAILED: 2 }, controllerState: "SUCCEEDED" }), "SUCCEEDED");
  assert.equal(derive({ stats: { SUCCEEDED: 2, FAILED: 1 }, controllerState: "FAILED" }), "FAILED");
  assert.equal(derive({ stats: { SUCCEEDED: 2, KILLED: 1 }, controllerState: "KILLED" }), "KILLED");
  // Not terminal yet: the controller does not short-circuit.
  assert.equal(derive({ stats: { SUCCEEDED: 1, RUNNING: 2 }, controllerState: "SUCCEEDED" }), "RUNNING");
});

Deno.test("service jobs: partially created with all created tasks killed → KILLED", () => {
  const svc = { type: "SERVICE" as const, goal: "RUNNING" as const };
  assert.equal(derive({ ...svc, stats: { KILLED: 2 } }), "KILLED");
  assert.equal(derive({ ...svc, stats: { RUNNING: 2 } }), "PENDING");
  assert.equal(derive({ ...svc, stats: { RUNNING: 3 } }), "RUNNING");
});

Deno.test("a daemon or service job with no instances is not finished; a stopped one is KILLED", () => {
  assert.equal(
    derive({ type: "DAEMON", instanceCount: 0, current: "INITIALIZED", goal: "RUNNING", stats: {} }),
    "PENDING",
  );
  assert.equal(
    derive({ type: "SERVICE", instanceCount: 0, current: "RUNNING", goal: "RUNNING", stats: {} }),
    "RUNNING",
  );
  assert.equal(
    derive({ type: "DAEMON", instanceCount: 0, current: "RUNNING", goal: "KILLED", stats: {} }),
    "KILLED",
  );
});
