/**
 * Health checks on virtual time. A simulated check's result follows from its text alone, so it is the
 * same at every check and a task's whole health timeline is known when it starts running:
 *
 * - COMMAND: parsed like task commands (`outcomeFromCommand`). `sleep N` makes the check take N seconds;
 *   `exit K` (K ≠ 0), or `false` in command position, fails it; anything else (`exit 0`, `true`,
 *   `test -f ready`, `curl ...`) passes, since nothing in the simulator can make it fail.
 * - HTTP: answers at once; it passes unless its path contains `fail` (e.g. `/fail`, `/healthz?fail=1`),
 *   which stands for a server answering 503. The port is not checked: simulated tasks serve every port.
 * - A check that would take at least `timeoutSecs` fails when the timeout ends it.
 *
 * The rule is `core/ports/health_check.ts`'s: the first result is reported, and as results never change
 * no other report follows; a failing check kills the task at its `maxConsecutiveFailures`-th failure.
 */
import type { HealthCheckSpec } from "../core/ports/host_backend.ts";
import { healthKillMessage, healthTimingsMs } from "../core/ports/health_check.ts";
import { outcomeFromCommand } from "./cluster.ts";

export interface SimCheckResult {
  passed: boolean;
  /** From the check's start to its result. */
  durationMs: number;
  /** Why a failing check failed. */
  why: string;
}

/** One health-check result at a virtual time, to report as TASK_RUNNING with `healthy`. */
export interface HealthReport {
  atMs: number;
  healthy: boolean;
  message: string;
}

export interface HealthPlan {
  reports: HealthReport[];
  /** When failing checks kill the task (the kill starts then; the task exits after the kill delay). */
  kill?: { atMs: number; message: string };
}

/** The result every check of this spec has. */
export function simulateCheck(check: HealthCheckSpec): SimCheckResult {
  const { timeoutMs } = healthTimingsMs(check);
  let result: SimCheckResult;
  if (check.type === "HTTP") {
    const path = check.http?.path || "/";
    result = path.includes("fail")
      ? { passed: false, durationMs: 0, why: `GET ${path} answered 503` }
      : { passed: true, durationMs: 0, why: "" };
  } else {
    const text = check.command ?? "";
    const { durationMs, exitCode } = outcomeFromCommand({
      command: { shell: true, value: text, arguments: [] },
    });
    const code = /\bexit\s+\d+/.test(text) ? exitCode : FALSE_COMMAND.test(text) ? 1 : 0;
    result = { passed: code === 0, durationMs, why: `exited with status ${code}` };
  }
  if (result.durationMs >= timeoutMs) {
    return { passed: false, durationMs: timeoutMs, why: `timed out after ${timeoutMs / 1000}s` };
  }
  return result;
}

/**
 * The reports and the kill of a task that starts running at `runningAtMs`. Like Mesos, the first check
 * starts `initialIntervalSecs` after that and each next one `intervalSecs` after the previous result.
 */
export function planHealth(check: HealthCheckSpec, runningAtMs: number): HealthPlan {
  const { initialMs, intervalMs } = healthTimingsMs(check);
  const result = simulateCheck(check);
  const firstAtMs = runningAtMs + initialMs + result.durationMs;
  if (result.passed) return { reports: [{ atMs: firstAtMs, healthy: true, message: "Health check passed" }] };
  const failures = check.maxConsecutiveFailures;
  return {
    reports: [{ atMs: firstAtMs, healthy: false, message: `Health check failed: ${result.why}` }],
    kill: {
      atMs: firstAtMs + (failures - 1) * (intervalMs + result.durationMs),
      message: healthKillMessage(failures),
    },
  };
}

/** `false` as a command of its own: at the start or after `;`, `&&`, `||`, `|`, `!` or a newline. */
const FALSE_COMMAND = /(?:^|[;&|!\n])\s*false\b/;
