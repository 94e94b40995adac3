/** The shared health-check rule: what is reported, when a task is killed, which specs are rejected. */
import assert from "node:assert/strict";
import type { HealthCheckSpec } from "./host_backend.ts";
import { healthCheckProblem, type HealthState, nextHealth, UNKNOWN_HEALTH } from "./health_check.ts";

const SPEC: HealthCheckSpec = {
  type: "COMMAND",
  command: "exit 0",
  initialIntervalSecs: 15,
  intervalSecs: 10,
  timeoutSecs: 20,
  maxConsecutiveFailures: 3,
};

/** Feeds results through the rule; returns what each one led to. */
function run(results: boolean[]): string[] {
  let state: HealthState = UNKNOWN_HEALTH;
  return results.map((passed) => {
    const step = nextHealth(state, passed, SPEC);
    state = step.state;
    if (step.killAfterFailures !== undefined) return `kill after ${step.killAfterFailures}`;
    return step.report === undefined ? "-" : `report ${step.report}`;
  });
}

Deno.test("the first result and every change are reported; failures in a row up to the limit kill", () => {
  assert.deepEqual(run([true, true, false, false, true, false, false, false]), [
    "report true",
    "-",
    "report false",
    "-",
    "report true",
    "report false",
    "-",
    "kill after 3",
  ]);
  // The unhealthy report and the kill can come from one result; the caller reports before it kills.
  const step = nextHealth(UNKNOWN_HEALTH, false, { ...SPEC, maxConsecutiveFailures: 1 });
  assert.deepEqual(step, {
    state: { healthy: false, consecutiveFailures: 1 },
    report: false,
    killAfterFailures: 1,
  });
});

Deno.test("an invalid check names the field, the value and what was expected", () => {
  assert.equal(healthCheckProblem(SPEC), undefined);
  assert.equal(
    healthCheckProblem({ ...SPEC, command: " " }),
    'healthCheck.command is " ", expected a shell command for a COMMAND check',
  );
  const http = { ...SPEC, type: "HTTP" as const, command: undefined };
  assert.equal(healthCheckProblem({ ...http, http: { port: 8080, path: "", scheme: "" } }), undefined);
  assert.equal(
    healthCheckProblem({ ...http, http: { port: 8080, path: "health", scheme: "http" } }),
    'healthCheck.http.path is "health", expected a path starting with /',
  );
  assert.equal(
    healthCheckProblem({ ...http, http: { port: 0, path: "/", scheme: "http" } }),
    "healthCheck.http.port is 0, expected a port in 1..65535",
  );
  assert.equal(
    healthCheckProblem({ ...SPEC, timeoutSecs: -1 }),
    "healthCheck.timeoutSecs is -1, expected a non-negative number of seconds (0: no limit)",
  );
  assert.equal(healthCheckProblem({ ...SPEC, timeoutSecs: 0 }), undefined);
});
