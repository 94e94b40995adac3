/**
 * The task goal-state table (Peloton's `pkg/jobmgr/goalstate/task.go`): what to do with a task in a
 * given state for a given goal. Adding a behaviour is adding a row.
 */
import type { ActionTable } from "../goalstate/engine.ts";
import type { TaskRecord } from "../model/records.ts";
import { isTerminalTaskState, type TaskState } from "../model/states.ts";

export type TaskAction =
  | "start"
  | "stop"
  | "initialize"
  | "launch_timeout"
  | "run_deadline"
  | "fail_retry"
  | "terminated_retry"
  | "preempt_retry"
  | "kill_resend"
  | "delete";

const PRE_LAUNCH: TaskState[] = ["PENDING", "READY", "PLACING", "PLACED"];
const KILL_RESEND: readonly TaskAction[] = ["kill_resend"];
const LAUNCHED: TaskState[] = ["LAUNCHING", "LAUNCHED", "STARTING", "RUNNING"];

function rows(
  states: TaskState[],
  actions: readonly TaskAction[],
): Partial<Record<TaskState, readonly TaskAction[]>> {
  return Object.fromEntries(states.map((s) => [s, actions]));
}

/** `TASK_TABLE[goal][state]`; a missing row means wait (an update will come). */
export const TASK_TABLE: ActionTable<TaskState, TaskState, TaskAction> = {
  // Services and daemons: keep running; every ended run is restarted, throttled after failures.
  RUNNING: {
    INITIALIZED: ["start"],
    LAUNCHED: ["launch_timeout"],
    STARTING: ["launch_timeout"],
    SUCCEEDED: ["terminated_retry"],
    FAILED: ["terminated_retry"],
    KILLED: ["terminated_retry"],
    LOST: ["terminated_retry"],
  },
  // Batch: run to completion; failures are retried up to the restart policy.
  SUCCEEDED: {
    INITIALIZED: ["start"],
    LAUNCHED: ["launch_timeout"],
    STARTING: ["launch_timeout"],
    RUNNING: ["run_deadline"],
    FAILED: ["fail_retry"],
    KILLED: ["fail_retry"],
    LOST: ["fail_retry"],
  },
  KILLED: { INITIALIZED: ["stop"], ...rows(PRE_LAUNCH, ["stop"]), ...rows(LAUNCHED, ["stop"]) },
  // Evicted by the resource manager: stopped, then run again (`killOnPreempt` sets KILLED instead).
  PREEMPTING: {
    INITIALIZED: ["stop"],
    ...rows(PRE_LAUNCH, ["stop"]),
    ...rows(LAUNCHED, ["stop"]),
    SUCCEEDED: ["preempt_retry"],
    FAILED: ["preempt_retry"],
    KILLED: ["preempt_retry"],
    LOST: ["preempt_retry"],
  },
  // Removed instances (a job shrank, a daemon's host left): stopped, then their record deleted.
  DELETED: {
    INITIALIZED: ["delete"],
    ...rows(PRE_LAUNCH, ["stop"]),
    ...rows(LAUNCHED, ["stop"]),
    SUCCEEDED: ["delete"],
    FAILED: ["delete"],
    KILLED: ["delete"],
    LOST: ["delete"],
  },
};

/**
 * What the message of an instance a rolling create or update has not started begins with. Peloton creates
 * such an instance only when its workflow reaches it; here it is there, INITIALIZED, and waits: for its
 * workflow, or, once that ended before reaching it (aborted, failed, rolled back), for a start or another
 * update. The message is the mark, stored with the task, so a refresh or a recovery leaves it waiting too.
 */
export const NOT_STARTED = "not started: ";

/** Whether the task is an instance a rolling create or update holds back (see `NOT_STARTED`). */
export function awaitsWorkflow(task: TaskRecord): boolean {
  return task.state === "INITIALIZED" && task.message !== undefined && task.message.startsWith(NOT_STARTED);
}

const NOTHING: readonly TaskAction[] = [];

/**
 * The actions for a task now. First Peloton's version check: a task whose config version or run
 * differs from the desired one is stopped if it runs, and started anew once it ended.
 */
export function taskActions(task: TaskRecord): readonly TaskAction[] {
  // Being killed, whatever the goal: the next step is the kill's end, or the kill sent again if it is late.
  if (task.state === "KILLING" || task.state === "PREEMPTING") return KILL_RESEND;
  const goal = task.goalState;
  const terminalGoal = goal === "KILLED" || goal === "DELETED" || goal === "PREEMPTING";
  const configChanged = task.desiredConfigVersion !== undefined &&
    task.desiredConfigVersion !== task.configVersion;
  const runChanged = task.desiredRunId !== undefined && task.desiredRunId !== task.runId;
  if (!terminalGoal && (configChanged || runChanged)) {
    if (isTerminalTaskState(task.state) || task.state === "INITIALIZED") return ["initialize"];
    return ["stop"];
  }
  if (task.state === "INITIALIZED" && !terminalGoal && awaitsWorkflow(task)) return NOTHING;
  return TASK_TABLE[goal]?.[task.state] ?? [];
}
