/** The task goal-state actions (Peloton's `pkg/jobmgr/goalstate/task_*.go`), one function per action. */
import type { Action } from "../goalstate/engine.ts";
import type { PersistentVolumeConfig } from "../model/config_types.ts";
import type { TaskRecord } from "../model/records.ts";
import { isTerminalTaskState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import { activeCount, type JobEntry, taskConfigOf } from "./job_entry.ts";
import type { JobManager } from "./jobmgr.ts";
import { PRE_LAUNCH_RANK } from "./jobmgr.ts";
import type { TaskAction } from "./task_rules.ts";
import type { Counter } from "../ports/metrics.ts";

export class TaskActions {
  /** Made at start, so that /metrics shows it at 0 before the first resend. */
  readonly #killResends: Counter;

  constructor(private readonly jm: JobManager) {
    this.#killResends = jm.deps.metrics.counter("peloton_jobmgr_kill_resends_total");
  }

  table(): Record<TaskAction, Action<TaskRecord>> {
    const act = (fn: (job: JobEntry, task: TaskRecord) => void): Action<TaskRecord> => (task, done) => {
      const job = this.jm.jobs.get(task.jobId);
      // A task deleted or replaced since it was queued has nothing left to do.
      if (job && job.tasks.get(task.instanceId) === task) fn(job, task);
      done();
    };
    return {
      start: act((j, t) => this.#start(j, t)),
      stop: act((j, t) => this.#stop(j, t)),
      initialize: act((j, t) => this.jm.newRun(j, t)),
      launch_timeout: act((j, t) => this.#launchTimeout(j, t)),
      run_deadline: act((j, t) => this.#runDeadline(j, t)),
      fail_retry: act((j, t) => this.#failRetry(j, t)),
      terminated_retry: act((j, t) => this.#terminatedRetry(j, t)),
      preempt_retry: act((j, t) => this.#preemptRetry(j, t)),
      kill_resend: act((j, t) => this.#killResend(j, t)),
      delete: act((j, t) => this.jm.deleteTask(j, t)),
    };
  }

  /** Enqueues the task to the resource manager, within `maximumRunningInstances` (else it waits). */
  #start(job: JobEntry, task: TaskRecord): void {
    const max = job.config.sla.maximumRunningInstances;
    if (max > 0 && activeCount(job) >= max) return;
    this.jm.enqueueTask(job, task);
  }

  /**
   * Not launched yet: dropped at the resource manager and KILLED with Peloton's `stopInitializedTask`
   * message and no reason. Launched: killed with its grace period.
   */
  #stop(job: JobEntry, task: TaskRecord): void {
    const now = this.jm.now();
    if (task.state in PRE_LAUNCH_RANK) {
      if (task.state !== "INITIALIZED") this.jm.dropTask(task);
      this.jm.transition(job, task, "KILLED", now, { message: "Non-running task killed" });
      // Deleted instances and new runs go on from KILLED in the next evaluation.
      this.jm.taskEngine.enqueue(task);
      return;
    }
    this.jm.killTask(job, task);
    this.jm.transition(job, task, "KILLING", now, {
      message: "Killing the task",
      reason: task.terminationReason,
    });
  }

  /** LAUNCHED/STARTING for too long: the launch is presumed lost; kill it and run again. */
  #launchTimeout(job: JobEntry, task: TaskRecord): void {
    const deadline = (task.stateSinceMs ?? 0) + this.jm.config.launchTimeoutMs;
    if (this.jm.now() < deadline) return this.jm.taskEngine.enqueue(task, deadline);
    this.jm.killTask(job, task);
    task.desiredRunId = task.runId + 1;
    task.terminationReason = "SYSTEM_FAILURE";
    this.jm.transition(job, task, "KILLING", this.jm.now(), { message: "Launch timed out" });
  }

  /** `sla.maxRunningTime`: a run past its deadline is killed and not retried (Peloton's deadline tracker). */
  #runDeadline(job: JobEntry, task: TaskRecord): void {
    const max = job.config.sla.maxRunningTime;
    if (!max || task.startTimeMs === undefined) return;
    const deadline = task.startTimeMs + max * 1000;
    if (this.jm.now() < deadline) return this.jm.taskEngine.enqueue(task, deadline);
    task.goalState = "KILLED";
    task.terminationReason = "DEADLINE_TIMEOUT_EXCEEDED";
    this.jm.killTask(job, task);
    this.jm.transition(job, task, "KILLING", this.jm.now(), { reason: "Deadline exceeded" });
  }

  /**
   * Batch: another run while failures are fewer than `restartPolicy.maxFailures`; system failures (lost
   * hosts, launch errors) get at least `maxSystemFailureAttempts` runs whatever the policy says.
   */
  #failRetry(job: JobEntry, task: TaskRecord): void {
    if (retriesLeft(job, task, this.jm.config.maxSystemFailureAttempts)) this.jm.newRun(job, task);
  }

  /**
   * Services: every ended run is restarted; after failures the restart waits initial × 2^(failures−1),
   * capped, with Peloton's message "Task throttled due to failure".
   */
  #terminatedRetry(job: JobEntry, task: TaskRecord): void {
    if (task.failureCount > 0) {
      const { initialTaskBackoffMs: initial, maxTaskBackoffMs: cap } = this.jm.config;
      const backoff = Math.min(initial * 2 ** (task.failureCount - 1), cap);
      const at = (task.completionTimeMs ?? this.jm.now()) + backoff;
      if (this.jm.now() < at) {
        if (task.message !== THROTTLED) {
          task.message = THROTTLED;
          this.jm.putTask(task);
        }
        return this.jm.taskEngine.enqueue(task, at);
      }
    }
    this.jm.newRun(job, task);
  }

  /**
   * Still being killed `killResendMs` past the kill's grace period: the kill or the backend's answer was
   * lost (a host manager that failed over, a dropped message, an agent that never answered). Peloton
   * shut the executor down after a timeout; here the kill goes again with no grace left, and again every
   * `killResendMs` until the task ends. Held back while kills are locked down.
   */
  #killResend(job: JobEntry, task: TaskRecord): void {
    if (this.jm.now() >= this.jm.killLateAt(job, task) && !this.jm.locks.has("Kill")) {
      this.jm.killTask(job, task, 0);
      this.#killResends.inc();
    }
    this.jm.taskEngine.enqueue(task, this.jm.killDeadline(job, task));
  }

  /** Preemption is not the task's failure: back to its default goal and run again. */
  #preemptRetry(job: JobEntry, task: TaskRecord): void {
    task.goalState = job.config.type === "BATCH" ? "SUCCEEDED" : "RUNNING";
    this.jm.newRun(job, task);
  }

  /**
   * First placement of a stateful task: its volume is created on that host, and later runs pinned there.
   * True when this run makes the volume.
   */
  volumePlaced(job: JobEntry, task: TaskRecord, v: PersistentVolumeConfig, hostname: string): boolean {
    if (task.volumeId) return false;
    // One id per volume made, never made again (Peloton gives each a UUID): a volume made after one was
    // deleted is a new one even if the delete's destroy never reached the host, and so is one of a job
    // created again under a deleted one's id, so a later run can never mount the old data. The job and
    // instance lead it so that a volume's directory on its host says whose it was.
    task.volumeId = `${job.jobId}-${task.instanceId}-volume-${randomUuid(this.jm.deps.prng)}`;
    task.requiredHost = hostname;
    this.jm.write({
      kind: "volume.put",
      volume: {
        volumeId: task.volumeId,
        jobId: job.jobId,
        instanceId: task.instanceId,
        hostname,
        containerPath: v.containerPath,
        sizeMb: v.sizeMB,
        state: "CREATED",
        createdMs: this.jm.now(),
      },
    });
    return true;
  }
}

const THROTTLED = "Task throttled due to failure";

/**
 * Whether the task's restart is being throttled after failures (Peloton's `util.IsTaskThrottled`): its run
 * ended, it is to run again, and `#terminatedRetry` holds the next run back.
 */
export function isThrottled(t: TaskRecord): boolean {
  return isTerminalTaskState(t.state) && t.goalState === "RUNNING" && t.message === THROTTLED;
}

/**
 * Whether a batch task's failed (killed, lost) run is run again: while its failures are fewer than its
 * restart policy's `maxFailures`, or than `maxSystemFailureAttempts` for a system failure. So `maxFailures`
 * counts runs, the first one too: 2 gives two, and 0 or 1 one (Peloton's `TaskFailRetry` stops once the
 * failure count reaches it).
 */
export function retriesLeft(job: JobEntry, task: TaskRecord, maxSystemFailureAttempts: number): boolean {
  const max = taskConfigOf(job, task).restartPolicy?.maxFailures ?? 0;
  const system = task.terminationReason === "SYSTEM_FAILURE";
  return task.failureCount < max || (system && task.failureCount < maxSystemFailureAttempts);
}
