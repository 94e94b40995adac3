/** Runs one task's health checks for a minicluster agent: real `/bin/sh -c` processes and HTTP requests. */
import type { HealthCheckSpec } from "../../core/ports/host_backend.ts";
import { sessionCommand, signalGroup } from "./_session.ts";
import {
  healthKillMessage,
  healthTimingsMs,
  nextHealth,
  UNKNOWN_HEALTH,
} from "../../core/ports/health_check.ts";
import { sleep } from "./sleep.ts";

/** Where a COMMAND check runs: the task's sandbox and environment. */
export interface CheckTarget {
  cwd: string;
  env: Record<string, string>;
}

/** What the checker tells its agent. Never called after `stop()`. */
export interface HealthEvents {
  /** The first result or a change of health; `message` says why a check failed. */
  onHealth(healthy: boolean, message: string): void;
  /** Failures in a row reached the limit: the agent kills the task. The checker has stopped. */
  onKill(message: string): void;
}

export interface CheckResult {
  passed: boolean;
  /** Why a check failed, e.g. "exited with status 1", "timed out after 1s". */
  why: string;
}

/**
 * Mesos's health checker for one task: the first check after `initialIntervalSecs`, each next one
 * `intervalSecs` after the previous result, every check bounded by `timeoutSecs`. Checks stop at the
 * kill verdict or at `stop()`, which also ends a check in flight and waits for it.
 */
export class HealthChecker {
  readonly #spec: HealthCheckSpec;
  readonly #target: CheckTarget;
  readonly #events: HealthEvents;
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;

  constructor(spec: HealthCheckSpec, target: CheckTarget, events: HealthEvents) {
    this.#spec = spec;
    this.#target = target;
    this.#events = events;
    this.#done = this.#loop().catch((e) => {
      // A checker bug must not take the agent down; the task just stops being checked.
      console.error(`Health checker stopped: ${e instanceof Error ? e.message : e}`);
    });
  }

  /** Stops checking; safe to call twice. Resolves once no check process or request is left. */
  stop(): Promise<void> {
    this.#abort.abort();
    return this.#done;
  }

  async #loop(): Promise<void> {
    const signal = this.#abort.signal;
    const { initialMs, intervalMs, timeoutMs } = healthTimingsMs(this.#spec);
    let state = UNKNOWN_HEALTH;
    await sleep(initialMs, signal);
    while (!signal.aborted) {
      const result = await runCheck(this.#spec, this.#target, timeoutMs, signal);
      if (signal.aborted) return; // a result after stop() is dropped, as Mesos's executors do
      const step = nextHealth(state, result.passed, this.#spec);
      state = step.state;
      if (step.report !== undefined) {
        this.#events.onHealth(
          step.report,
          step.report ? "Health check passed" : `Health check failed: ${result.why}`,
        );
      }
      if (step.killAfterFailures !== undefined) {
        this.#abort.abort();
        this.#events.onKill(healthKillMessage(step.killAfterFailures));
        return;
      }
      await sleep(intervalMs, signal);
    }
  }
}

/** One check, bounded by `timeoutMs` and ended early by `signal`. */
export function runCheck(
  spec: HealthCheckSpec,
  target: CheckTarget,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CheckResult> {
  return spec.type === "HTTP"
    ? httpCheck(spec.http!, timeoutMs, signal)
    : commandCheck(spec.command!, target, timeoutMs, signal);
}

async function commandCheck(
  command: string,
  target: CheckTarget,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CheckResult> {
  let child: Deno.ChildProcess;
  try {
    // Its own process group, so a timeout also ends what the check started.
    child = sessionCommand("/bin/sh", ["-c", command], {
      cwd: target.cwd,
      env: target.env,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (e) {
    return { passed: false, why: `could not start: ${errorMessage(e)}` };
  }
  let timedOut = false;
  let reaped = false;
  const end = () => signalGroup(child.pid, "SIGKILL", !reaped);
  const timer = Number.isFinite(timeoutMs)
    ? setTimeout(() => {
      timedOut = true;
      end();
    }, timeoutMs)
    : undefined;
  signal.addEventListener("abort", end);
  try {
    const status = await child.status;
    reaped = true;
    if (timedOut) return { passed: false, why: `timed out after ${timeoutMs / 1000}s` };
    if (status.success) return { passed: true, why: "" };
    return {
      passed: false,
      why: status.signal ? `terminated with signal ${status.signal}` : `exited with status ${status.code}`,
    };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", end);
    end(); // background children of the check do not outlive it
  }
}

async function httpCheck(
  http: NonNullable<HealthCheckSpec["http"]>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CheckResult> {
  const url = `${http.scheme || "http"}://127.0.0.1:${http.port}${http.path || "/"}`;
  const local = new AbortController();
  let timedOut = false;
  const timer = Number.isFinite(timeoutMs)
    ? setTimeout(() => {
      timedOut = true;
      local.abort();
    }, timeoutMs)
    : undefined;
  const onAbort = () => local.abort();
  signal.addEventListener("abort", onAbort);
  try {
    // Follows redirects like Mesos's `curl -L`; the answer at the end decides. Unlike its `-k`, an https
    // certificate is verified.
    const res = await fetch(url, { signal: local.signal });
    await res.body?.cancel();
    if (res.status >= 200 && res.status < 400) return { passed: true, why: "" };
    return { passed: false, why: `GET ${url} answered ${res.status}` };
  } catch (e) {
    if (timedOut) return { passed: false, why: `GET ${url} timed out after ${timeoutMs / 1000}s` };
    return { passed: false, why: `GET ${url} failed: ${errorMessage(e)}` };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
