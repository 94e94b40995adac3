/** Task, job and host states with Peloton's names and wire numbers (v0 `task.proto`, `job.proto`). */

export const TASK_STATES = {
  UNKNOWN: 0,
  INITIALIZED: 1,
  PENDING: 2,
  READY: 3,
  PLACING: 4,
  PLACED: 5,
  LAUNCHING: 6,
  STARTING: 7,
  RUNNING: 8,
  SUCCEEDED: 9,
  FAILED: 10,
  LOST: 11,
  PREEMPTING: 12,
  KILLING: 13,
  KILLED: 14,
  LAUNCHED: 15,
  DELETED: 16,
  RESERVED: 17,
} as const;
export type TaskState = keyof typeof TASK_STATES;

const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set<TaskState>([
  "SUCCEEDED",
  "FAILED",
  "KILLED",
  "LOST",
  "DELETED",
]);

/** Peloton's `util.IsPelotonStateTerminal`. */
export function isTerminalTaskState(s: TaskState): boolean {
  return TERMINAL_TASK_STATES.has(s);
}

/** States in which a task holds resources on a host. */
export function isActiveOnHost(s: TaskState): boolean {
  return s === "LAUNCHING" || s === "LAUNCHED" || s === "STARTING" || s === "RUNNING" || s === "KILLING" ||
    s === "PREEMPTING";
}

export const JOB_STATES = {
  UNKNOWN: 0,
  INITIALIZED: 1,
  PENDING: 2,
  RUNNING: 3,
  SUCCEEDED: 4,
  FAILED: 5,
  KILLED: 6,
  KILLING: 7,
  UNINITIALIZED: 8,
  DELETED: 9,
} as const;
export type JobState = keyof typeof JOB_STATES;

export function isTerminalJobState(s: JobState): boolean {
  return s === "SUCCEEDED" || s === "FAILED" || s === "KILLED" || s === "DELETED";
}

/** Peloton's `JobType` (v0 job.proto); DAEMON is accepted here although Peloton rejected it. */
export const JOB_TYPES = { BATCH: 0, SERVICE: 1, DAEMON: 2 } as const;
export type JobType = keyof typeof JOB_TYPES;

/** Placement task types (Peloton's `resmgr.TaskType`): each gets its own ready queue and round config. */
export type TaskType = "BATCH" | "STATELESS" | "STATEFUL" | "DAEMON";

export const HOST_STATES = {
  HOST_STATE_INVALID: 0,
  HOST_STATE_UNKNOWN: 1,
  HOST_STATE_UP: 2,
  HOST_STATE_DRAINING: 3,
  HOST_STATE_DRAINED: 4,
  HOST_STATE_DOWN: 5,
} as const;
export type HostState = keyof typeof HOST_STATES;

/** Task counts per state, as kept in a job's runtime. */
export type TaskStats = Partial<Record<TaskState, number>>;

/**
 * Mesos task states (v1 `TaskState`) as the backends report them, and Peloton's mapping of each
 * (`pkg/common/util/util.go`): STAGING→LAUNCHED, KILLING→RUNNING, FINISHED→SUCCEEDED, ERROR→FAILED.
 */
export const MESOS_TO_TASK_STATE = {
  TASK_STAGING: "LAUNCHED",
  TASK_STARTING: "STARTING",
  TASK_RUNNING: "RUNNING",
  TASK_KILLING: "RUNNING",
  TASK_FINISHED: "SUCCEEDED",
  TASK_FAILED: "FAILED",
  TASK_KILLED: "KILLED",
  TASK_LOST: "LOST",
  TASK_ERROR: "FAILED",
  TASK_DROPPED: "LOST",
  TASK_UNREACHABLE: "LOST",
  TASK_GONE: "LOST",
  TASK_GONE_BY_OPERATOR: "LOST",
  TASK_UNKNOWN: "LOST",
} as const satisfies Record<string, TaskState>;
export type MesosTaskState = keyof typeof MESOS_TO_TASK_STATE;
