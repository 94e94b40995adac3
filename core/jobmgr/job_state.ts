/** Job state derived from task counts, by Peloton's rules (`job_runtime_updater.go`, `jobStateDeterminer`). */
import {
  isTerminalJobState,
  type JobState,
  type JobType,
  type TaskState,
  type TaskStats,
} from "../model/states.ts";

export interface JobStateInput {
  type: JobType;
  instanceCount: number;
  current: JobState;
  goal: JobState;
  stats: TaskStats;
  /** State of the controller task (instance 0) when the job has one. */
  controllerState?: TaskState;
}

const n = (stats: TaskStats, s: TaskState) => stats[s] ?? 0;

export function deriveJobState(input: JobStateInput): JobState {
  const { stats, instanceCount } = input;
  let total = 0;
  for (const v of Object.values(stats)) total += v ?? 0;
  const succeeded = n(stats, "SUCCEEDED");
  const failed = n(stats, "FAILED");
  const lost = n(stats, "LOST");
  const killed = n(stats, "KILLED");

  let state: JobState;
  if (instanceCount === 0 && total === 0) {
    // A daemon job before its hosts are known, or a service scaled to zero, is not finished.
    if (input.goal === "KILLED") return "KILLED";
    if (input.type === "BATCH") return "SUCCEEDED";
    // A daemon left with no host to run on waits for one, as at its create, whatever its instances ended
    // as: a terminal state would stop it from following its hosts when they come back.
    if (input.type === "DAEMON") return "PENDING";
    return input.current === "INITIALIZED" ? "PENDING" : input.current;
  }
  if (total > instanceCount && (input.type === "BATCH" || !isTerminalJobState(input.goal))) {
    // Instances are being removed: not settled yet.
    state = "PENDING";
  } else if (total < instanceCount) {
    // Partially created.
    state = input.type === "BATCH"
      ? "INITIALIZED"
      : partialService(input, succeeded, failed, killed, lost, total);
  } else if (succeeded >= instanceCount) {
    state = "SUCCEEDED";
  } else if (succeeded + failed + lost >= instanceCount) {
    state = "FAILED";
  } else if (killed > 0 && succeeded + failed + killed + lost >= instanceCount) {
    state = "KILLED";
  } else if (input.current === "KILLING") {
    state = "KILLING";
  } else if (n(stats, "RUNNING") > 0) {
    state = "RUNNING";
  } else {
    state = "PENDING";
  }

  if (isTerminalJobState(state) && input.controllerState) return controllerOutcome(input.controllerState);
  return state;
}

/** A partially created service job: terminal if every created task ended, else pending. */
function partialService(
  input: JobStateInput,
  succeeded: number,
  failed: number,
  killed: number,
  lost: number,
  total: number,
): JobState {
  if (total > 0 && killed > 0 && succeeded + failed + killed + lost >= total) return "KILLED";
  if (total > 0 && failed + lost >= total) return "FAILED";
  return input.current === "KILLING" ? "KILLING" : "PENDING";
}

/** Once a job with a controller task is terminal, the controller's outcome is the job's. */
function controllerOutcome(s: TaskState): JobState {
  if (s === "SUCCEEDED") return "SUCCEEDED";
  if (s === "FAILED" || s === "LOST") return "FAILED";
  return "KILLED";
}

/** Peloton's default goal states (`pkg/jobmgr/util/goalstate/job.go`, `task/util.go`). */
export function defaultJobGoal(type: JobType): JobState {
  return type === "BATCH" ? "SUCCEEDED" : "RUNNING";
}

export function defaultTaskGoal(type: JobType): TaskState {
  return type === "BATCH" ? "SUCCEEDED" : "RUNNING";
}
