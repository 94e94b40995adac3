/** Records the daemons persist through the Store port: jobs, tasks, task events and resource pools. */
import type { JobConfig, RespoolConfig, UpdateConfig } from "./config_types.ts";
import type { JobState, TaskState, TaskStats } from "./states.ts";

/** A job's runtime (v0 `job.RuntimeInfo`, the fields this scheduler keeps). */
export interface JobRuntime {
  state: JobState;
  goalState: JobState;
  creationTimeMs: number;
  startTimeMs?: number;
  completionTimeMs?: number;
  taskStats: TaskStats;
  /** The job's workflow in progress (update, restart, start, stop), if any. */
  updateId?: string;
  /** Bumped by start/stop requests and by each workflow: v1alpha's entity version is built from them. */
  desiredStateVersion?: number;
  workflowVersion?: number;
  /** Next instance id to give out (daemon jobs and grown jobs never reuse ids). */
  nextInstanceId?: number;
  /**
   * The last run of each instance removed from a batch or service job (it shrank, an update removed it),
   * until the instance is added back: its new task starts after that run, so no Mesos task id is used twice.
   */
  removedRuns?: Record<number, number>;
  /**
   * The job's newest workflows whose instance events are kept, oldest first: a new workflow past
   * `MAX_WORKFLOWS_WITH_EVENTS` deletes the oldest one's events (its record stays).
   */
  workflowsWithEvents?: string[];
  /** Bumped on every write; stores reject a write whose version is not newer than the stored one. */
  version: number;
}

export interface JobRecord {
  jobId: string;
  /** The config as accepted, `respoolId` filled in. */
  config: JobConfig;
  configVersion: number;
  runtime: JobRuntime;
}

/** One run of a task, kept in the task's history (`task get` shows current and previous runs). */
export interface TaskRun {
  runId: number;
  state: TaskState;
  hostname?: string;
  /** The agent the run was on: where its sandbox stays (`task logs JOB INSTANCE TASKID`). */
  agentId?: string;
  startTimeMs?: number;
  completionTimeMs?: number;
  exitCode?: number;
  message?: string;
  reason?: string;
  /** The config version and goal the run had (runs recorded before they were kept have neither). */
  configVersion?: number;
  goalState?: TaskState;
}

/**
 * An earlier run as a task record: the task's own fields with the run's, and none of the current run's
 * (a field the run did not record, or that a store left out, reads as unset rather than as the current
 * run's value).
 */
export function pastRun(task: TaskRecord, run: TaskRun): TaskRecord {
  return {
    ...task,
    hostname: undefined,
    agentId: undefined,
    ports: undefined,
    healthy: undefined,
    startTimeMs: undefined,
    completionTimeMs: undefined,
    exitCode: undefined,
    message: undefined,
    reason: undefined,
    desiredRunId: undefined,
    desiredConfigVersion: undefined,
    terminationReason: undefined,
    ...run,
    configVersion: run.configVersion as number,
    goalState: run.goalState ?? task.goalState,
    history: undefined,
  };
}

/** A task (instance) runtime (v0 `task.RuntimeInfo`). */
export interface TaskRecord {
  jobId: string;
  instanceId: number;
  runId: number;
  state: TaskState;
  goalState: TaskState;
  /**
   * The config version the task should run and the run it should be in: when they differ from the
   * current ones, the task is stopped (if running) and started again as a new run (updates, restarts).
   */
  desiredConfigVersion?: number;
  desiredRunId?: number;
  /** Host the next run should try first (in-place updates), or must use (daemon instances, volumes). */
  desiredHost?: string;
  requiredHost?: string;
  /** The persistent volume of a stateful task, once created on its host. */
  volumeId?: string;
  /** When the task entered its current state. */
  stateSinceMs?: number;
  /** Health of the current run: DISABLED when the task has no health check. */
  healthy?: "HEALTH_UNKNOWN" | "HEALTHY" | "UNHEALTHY" | "DISABLED";
  /** Why the task was last stopped (Peloton's `TerminationStatus.Reason`). */
  terminationReason?: string;
  hostname?: string;
  agentId?: string;
  /** Port name → port number, chosen at placement. */
  ports?: Record<string, number>;
  startTimeMs?: number;
  completionTimeMs?: number;
  exitCode?: number;
  message?: string;
  reason?: string;
  failureCount: number;
  configVersion: number;
  /** Previous runs, oldest first. */
  history?: TaskRun[];
  version: number;
  /**
   * In a stored copy: whether the job manager still has work for the task (a run to start, restart or
   * retry; a run under way). Recovery loads an ended job that has such a task. Absent, stores judge it from
   * the record (`storedHasWork`).
   */
  hasWork?: boolean;
}

/**
 * A state change of one task run (Peloton's pod events), with the task's goal, versions, agent and health
 * as they were at that moment. Events stored before those were kept (store migration 0013) lack them.
 */
export interface TaskEventRecord {
  jobId: string;
  instanceId: number;
  runId: number;
  state: TaskState;
  timeMs: number;
  hostname?: string;
  message?: string;
  reason?: string;
  goalState?: TaskState;
  configVersion?: number;
  desiredConfigVersion?: number;
  agentId?: string;
  healthy?: TaskRecord["healthy"];
  /** The run before this one; absent for a first run. */
  prevRunId?: number;
  /** The run the task should be in: later than `runId` once a restart or an update asked for a new one. */
  desiredRunId?: number;
}

/**
 * The event of a task's state, message and reason as they now are. One object of one shape for every
 * event (fields the task lacks are undefined, which stores leave out): cheap when events number millions.
 */
export function taskEventOf(task: TaskRecord, timeMs: number): TaskEventRecord {
  const { jobId, instanceId, runId } = task;
  return {
    jobId,
    instanceId,
    runId,
    state: task.state,
    timeMs,
    hostname: task.hostname,
    message: task.message,
    reason: task.reason,
    goalState: task.goalState,
    configVersion: task.configVersion,
    desiredConfigVersion: task.desiredConfigVersion ?? task.configVersion,
    agentId: task.agentId,
    healthy: task.healthy,
    prevRunId: runId > 1 ? runId - 1 : undefined,
    desiredRunId: task.desiredRunId ?? runId,
  };
}

export interface RespoolRecord {
  id: string;
  path: string;
  parentId: string;
  config: RespoolConfig;
}

/** Peloton's Mesos task id: `<jobId>-<instanceId>-<runId>`. */
export function mesosTaskId(jobId: string, instanceId: number, runId: number): string {
  // Joined rather than concatenated: join makes one flat string, while `+` or a template makes a tree
  // that V8 must flatten before it can hash it, and every daemon keys maps by this id (half the cost of
  // the first lookup of a million new ids).
  return [jobId, instanceId, runId].join("-");
}

/** Splits a Mesos task id back into its parts; job ids are UUIDs and contain dashes. */
export function parseMesosTaskId(
  id: string,
): { jobId: string; instanceId: number; runId: number } | undefined {
  // Scanned by hand rather than with a regular expression: every task status goes through here.
  const runAt = id.lastIndexOf("-");
  const runId = digitsValue(id, runAt + 1, id.length);
  if (runAt < 2 || runId < 0) return undefined;
  const instanceAt = id.lastIndexOf("-", runAt - 1);
  const instanceId = digitsValue(id, instanceAt + 1, runAt);
  if (instanceAt < 1 || instanceId < 0) return undefined;
  return { jobId: id.slice(0, instanceAt), instanceId, runId };
}

/** The value of the decimal digits `s[from, to)`, or -1 when the range is empty or holds a non-digit. */
function digitsValue(s: string, from: number, to: number): number {
  if (from >= to) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/** Peloton's update states (v0 `update.State`). */
export type UpdateState =
  | "INITIALIZED"
  | "ROLLING_FORWARD"
  | "PAUSED"
  | "SUCCEEDED"
  | "ABORTED"
  | "FAILED"
  | "ROLLING_BACKWARD"
  | "ROLLED_BACK";

export function isTerminalUpdateState(s: UpdateState): boolean {
  return s === "SUCCEEDED" || s === "ABORTED" || s === "FAILED" || s === "ROLLED_BACK";
}

/** Workflow kinds (v1alpha `WorkflowType`, plus START and STOP which Peloton models internally). */
export type WorkflowType = "UPDATE" | "RESTART" | "START" | "STOP";

/**
 * One step of a workflow on one instance (Peloton's `pod_workflow_events`): the instance was taken (the
 * workflow's state then, ROLLING_FORWARD or ROLLING_BACKWARD), finished (SUCCEEDED), gave up (FAILED), or
 * was in flight when the workflow was paused, resumed, aborted or failed; INITIALIZED (PAUSED if it starts
 * paused) for each of its instances when the workflow is created.
 */
export interface WorkflowEventRecord {
  jobId: string;
  /** The workflow's update id. */
  workflowId: string;
  instanceId: number;
  type: WorkflowType;
  state: UpdateState;
  timeMs: number;
}

/** A job update or other workflow (Peloton's `UpdateModel`), with its progress per instance. */
export interface UpdateRecord {
  updateId: string;
  jobId: string;
  type: WorkflowType;
  config: UpdateConfig;
  state: UpdateState;
  /** The state before a pause, to resume into. */
  prevState?: UpdateState;
  /**
   * Job config version the workflow moves to, and the one it came from; once rolled back, the one it
   * abandoned and the copy of the old config it goes back to (as Peloton's RollbackWorkflow stores them).
   */
  jobConfigVersion: number;
  prevJobConfigVersion: number;
  instancesAdded: number[];
  instancesUpdated: number[];
  instancesRemoved: number[];
  instancesDone: number[];
  instancesFailed: number[];
  /** Instances being processed now (at most the batch size). */
  instancesCurrent: number[];
  /** RESTART: the run id each restarted instance must reach. */
  targetRuns?: Record<string, number>;
  /**
   * A START that is the job's rolling create (v1alpha CreateSpec): Peloton's RollingCreate, an update there,
   * so an update may take over from it as from an update.
   */
  create?: boolean;
  /**
   * UPDATE with `stopBeforeUpdate`: the instances it stopped before starting any on the new config (each
   * starts again when its batch comes, or when the workflow ends before), and whether all have stopped.
   */
  stopFirst?: { instances: number[]; done: boolean };
  creationTimeMs: number;
  updateTimeMs: number;
  completionTimeMs?: number;
  opaqueData?: string;
  /**
   * The workflow's own states as it went through them, oldest first (Peloton's job update events, which
   * `WorkflowInfo.events` shows); at most `MAX_WORKFLOW_STATES`, the first and the newest kept. Absent in
   * records stored before it was kept.
   */
  states?: { state: UpdateState; timeMs: number }[];
  /** Bumped on every write (the same stale-write rule as jobs and tasks). */
  version: number;
}

/**
 * A job's secret (Peloton's `secret_info`): written at `path` in each of the job's tasks' containers at
 * launch. The data is kept only here and in the launch: the job's config names the secret by id and path.
 */
export interface SecretRecord {
  jobId: string;
  secretId: string;
  /** Where tasks find it: a path in the container (in the minicluster, under the task's sandbox). */
  path: string;
  /** The secret's bytes, base64 (Peloton's `Secret.Value.data`). */
  data: string;
  createdMs: number;
  /** Bumped when a job update replaces the data. */
  version: number;
}

/** A persistent volume of a stateful task, on the host its task runs on. */
export interface VolumeRecord {
  volumeId: string;
  jobId: string;
  instanceId: number;
  hostname: string;
  containerPath: string;
  sizeMb: number;
  state: "CREATED" | "DELETED";
  createdMs: number;
}

/**
 * A host's maintenance, stored from StartMaintenance until CompleteMaintenance, so that a restarted host
 * manager puts the host back into maintenance (at once if it is registered, else when it registers).
 * Where the cluster manager keeps maintenance of its own (Mesos), a completion is stored too, until the
 * cluster manager has the machine up.
 */
export interface HostMaintenanceRecord {
  hostname: string;
  /**
   * What was asked of the host: DRAINING (StartMaintenance: drain it, DRAINED once empty, DOWN once its
   * machine is down), DOWN (a machine the cluster manager reported down, adopted while it had no agent) or
   * UP (CompleteMaintenance, not yet carried to the cluster manager: a restart carries it, rather than
   * taking the machine back into maintenance from the cluster manager's status).
   */
  state: "HOST_STATE_DRAINING" | "HOST_STATE_DOWN" | "HOST_STATE_UP";
  /** When maintenance (or, for UP, its completion) was asked for. */
  startTimeMs: number;
}

/**
 * A host pool an operator created (v0 HostService CreateHostPool). The default pool, and a pool the
 * `host_pool` attribute of a registered agent names, exist without one.
 */
export interface HostPoolRecord {
  name: string;
  createdMs: number;
}

/**
 * The pool an operator put a host in (ChangeHostPool, or DeleteHostPool moving the pool's hosts to the
 * default pool). It outranks the `host_pool` attribute the host's agent reports.
 */
export interface HostPoolAssignmentRecord {
  hostname: string;
  pool: string;
  changedMs: number;
}

/**
 * A job manager component an operator locked down (v1alpha AdminService Lockdown): `GoalStateEngine`,
 * `Read`, `Write`, `Kill` or `Launch`. Kept until RemoveLockdown, across restarts.
 */
export interface AdminLockRecord {
  component: string;
  lockedMs: number;
}
