/** The health-check rule every HostBackend follows for `LaunchSpec.healthCheck`, pure so sim and prod share it. */
import type { HealthCheckSpec } from "./host_backend.ts";

/**
 * Reason on the TASK_RUNNING updates that carry a check result (as Mesos's executors set it; Peloton's job
 * manager records `healthy` only from updates with this reason) and on the TASK_KILLED of a task the
 * checks killed.
 */
export const HEALTH_CHECK_REASON = "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED";

/** A task's health as its checker tracks it: unknown until the first result. */
export interface HealthState {
  healthy?: boolean;
  consecutiveFailures: number;
}

export const UNKNOWN_HEALTH: HealthState = { consecutiveFailures: 0 };

/** What one check result means for the task. */
export interface HealthStep {
  state: HealthState;
  /** Set when the result must be reported: the first result and every change of health. */
  report?: boolean;
  /** Set when the task must be killed: this many checks failed in a row. */
  killAfterFailures?: number;
}

/** Applies one check result. Once a step says kill, the caller stops checking. */
export function nextHealth(state: HealthState, passed: boolean, spec: HealthCheckSpec): HealthStep {
  const next: HealthState = {
    healthy: passed,
    consecutiveFailures: passed ? 0 : state.consecutiveFailures + 1,
  };
  const step: HealthStep = { state: next };
  if (state.healthy !== passed) step.report = passed;
  if (!passed && next.consecutiveFailures >= spec.maxConsecutiveFailures) {
    step.killAfterFailures = next.consecutiveFailures;
  }
  return step;
}

export function healthKillMessage(failures: number): string {
  return `Task killed after ${failures} consecutive failed health checks`;
}

/** The spec's timings in milliseconds; a zero timeout means no limit, as in Mesos. */
export function healthTimingsMs(
  spec: HealthCheckSpec,
): { initialMs: number; intervalMs: number; timeoutMs: number } {
  return {
    initialMs: spec.initialIntervalSecs * 1000,
    intervalMs: spec.intervalSecs * 1000,
    timeoutMs: spec.timeoutSecs > 0 ? spec.timeoutSecs * 1000 : Infinity,
  };
}

/**
 * Why a backend cannot run this check (it answers TASK_ERROR, like Mesos's "Task uses invalid health
 * check"), or undefined. Stricter than Mesos on purpose: a zero interval would spin, and zero allowed
 * failures would mean "kill on the first failure" only by accident.
 */
export function healthCheckProblem(spec: HealthCheckSpec): string | undefined {
  const at = (field: string, value: unknown, expected: string) =>
    `healthCheck.${field} is ${JSON.stringify(value)}, expected ${expected}`;
  if (spec.type === "COMMAND") {
    if (typeof spec.command !== "string" || spec.command.trim() === "") {
      return at("command", spec.command, "a shell command for a COMMAND check");
    }
  } else if (spec.type === "HTTP") {
    const http = spec.http;
    if (!http) return at("http", http, "{port, path, scheme} for an HTTP check");
    if (!Number.isInteger(http.port) || http.port < 1 || http.port > 65535) {
      return at("http.port", http.port, "a port in 1..65535");
    }
    if (http.path !== "" && !http.path.startsWith("/")) {
      return at("http.path", http.path, "a path starting with /");
    }
    if (http.scheme !== "" && http.scheme !== "http" && http.scheme !== "https") {
      return at("http.scheme", http.scheme, '"http" or "https"');
    }
  } else {
    return at("type", spec.type, '"COMMAND" or "HTTP"');
  }
  if (!(spec.initialIntervalSecs >= 0) || !Number.isFinite(spec.initialIntervalSecs)) {
    return at("initialIntervalSecs", spec.initialIntervalSecs, "a non-negative number of seconds");
  }
  if (!(spec.intervalSecs > 0) || !Number.isFinite(spec.intervalSecs)) {
    return at("intervalSecs", spec.intervalSecs, "a positive number of seconds");
  }
  if (!(spec.timeoutSecs >= 0) || !Number.isFinite(spec.timeoutSecs)) {
    return at("timeoutSecs", spec.timeoutSecs, "a non-negative number of seconds (0: no limit)");
  }
  if (!Number.isInteger(spec.maxConsecutiveFailures) || spec.maxConsecutiveFailures < 1) {
    return at("maxConsecutiveFailures", spec.maxConsecutiveFailures, "a positive integer");
  }
  return undefined;
}
