/** The job goal-state table (Peloton's `pkg/jobmgr/goalstate/job.go`), one table per job type. */
import type { ActionTable } from "../goalstate/engine.ts";
import { JOB_STATES, type JobState, type JobType } from "../model/states.ts";
import type { JobEntry } from "./job_entry.ts";

export type JobAction = "evaluate_sla" | "reconcile_daemon" | "kill_tasks";

const ACTIVE: JobState[] = ["INITIALIZED", "PENDING", "RUNNING"];
const EVERY_STATE = Object.keys(JOB_STATES) as JobState[];
const rows = <A extends JobAction>(states: JobState[], actions: readonly A[]) =>
  Object.fromEntries(states.map((s) => [s, actions])) as Partial<Record<JobState, readonly A[]>>;

/** `JOB_TABLES[type][goal][state]`. Runtime derivation runs on every change, outside the table. */
export const JOB_TABLES: Record<JobType, ActionTable<JobState, JobState, JobAction>> = {
  // Batch: start waiting instances as `maximumRunningInstances` allows.
  BATCH: {
    SUCCEEDED: rows(ACTIVE, ["evaluate_sla"]),
    KILLED: rows([...ACTIVE, "KILLING"], ["kill_tasks"]),
  },
  SERVICE: {
    KILLED: rows([...ACTIVE, "KILLING"], ["kill_tasks"]),
  },
  // Daemons: one instance on every host that matches the job's constraints, whatever the job's state: one
  // whose instances all ended or went with their hosts still follows its hosts as they come back.
  DAEMON: {
    RUNNING: rows(EVERY_STATE, ["reconcile_daemon"]),
    KILLED: rows([...ACTIVE, "KILLING"], ["kill_tasks"]),
  },
};

export function jobActions(job: JobEntry): readonly JobAction[] {
  return JOB_TABLES[job.config.type][job.runtime.goalState]?.[job.runtime.state] ?? [];
}
