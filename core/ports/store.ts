/**
 * Store port: durable storage of jobs, tasks, task events, workflows and their instance events, resource
 * pools, host maintenance, host pools and the job managers' lockdown.
 */
import type { JobConfig } from "../model/config_types.ts";
import { isTerminalJobState, isTerminalTaskState, JOB_STATES } from "../model/states.ts";
import type {
  AdminLockRecord,
  HostMaintenanceRecord,
  HostPoolAssignmentRecord,
  HostPoolRecord,
  JobRecord,
  RespoolRecord,
  SecretRecord,
  TaskEventRecord,
  TaskRecord,
  UpdateRecord,
  VolumeRecord,
  WorkflowEventRecord,
} from "../model/records.ts";

/** One mutation; a `write` batch is applied atomically and in order. */
export type StoreWrite =
  | { kind: "job.put"; job: JobRecord }
  /** Deletes the job with its tasks, events, configs, updates, workflow events, volumes and secrets. */
  | { kind: "job.delete"; jobId: string }
  /** A job config version, kept for rollbacks; versions are immutable (re-putting one is a no-op). */
  | { kind: "job.config"; jobId: string; version: number; config: JobConfig }
  | { kind: "task.put"; task: TaskRecord }
  /** Removes an instance (a job shrank); its events stay. */
  | { kind: "task.delete"; jobId: string; instanceId: number }
  | { kind: "task.event"; event: TaskEventRecord }
  /** Deletes an instance's events of runs up to `runId` (v1alpha DeletePodEvents, bounding their growth). */
  | { kind: "task.events.delete"; jobId: string; instanceId: number; runId: number }
  | { kind: "respool.put"; pool: RespoolRecord }
  | { kind: "respool.delete"; id: string }
  /** Same version rule as jobs and tasks. */
  | { kind: "update.put"; update: UpdateRecord }
  /** A workflow's step on one instance (v1alpha GetWorkflowEvents). */
  | { kind: "workflow.event"; event: WorkflowEventRecord }
  /** Deletes the instance events of one of a job's workflows (bounding their growth); the workflow stays. */
  | { kind: "workflow.events.delete"; jobId: string; workflowId: string }
  /** A job's secret created, or its data replaced: one record per job and secret id. */
  | { kind: "secret.put"; secret: SecretRecord }
  | { kind: "volume.put"; volume: VolumeRecord }
  | { kind: "volume.delete"; volumeId: string }
  /**
   * A host in maintenance (or, state UP, a completion the cluster manager is yet to hear of); putting one
   * again replaces its record.
   */
  | { kind: "maintenance.put"; maintenance: HostMaintenanceRecord }
  /** A host's maintenance completed (and carried); a host with none is a no-op. */
  | { kind: "maintenance.delete"; hostname: string }
  /** A host pool created; putting one again replaces its record. */
  | { kind: "hostpool.put"; pool: HostPoolRecord }
  /** A host pool deleted (only its record: its hosts' new assignments are written in the same batch). */
  | { kind: "hostpool.delete"; name: string }
  /** The pool a host was put in; replaces the host's earlier assignment. */
  | { kind: "hostpool.assign"; assignment: HostPoolAssignmentRecord }
  /** A component locked down; locking one again replaces its record. */
  | { kind: "admin.lock"; lock: AdminLockRecord }
  /** A component's lockdown removed; one not locked is a no-op. */
  | { kind: "admin.unlock"; component: string };

/** Host pools created and hosts put in pools, for recovery; each list ordered by name. */
export interface StoredHostPools {
  pools: HostPoolRecord[];
  assignments: HostPoolAssignmentRecord[];
}

/** A `job.put`, `task.put` or `update.put` whose version is not newer than the stored one; its whole batch was dropped. */
export class StaleWriteError extends Error {
  override readonly name = "StaleWriteError";

  constructor(
    readonly entity: "job" | "task" | "update",
    /** The job id, `<jobId>/<instanceId>` for a task, or the update id. */
    readonly id: string,
    readonly storedVersion: number,
    readonly writeVersion: number,
  ) {
    super(
      `Cannot write ${entity} ${id}: version ${writeVersion} is not newer than the stored version ${storedVersion}`,
    );
  }
}

export interface JobQuery {
  states?: string[];
  respoolId?: string;
  /**
   * The owning team, as Peloton's QuerySpec.owner matches it (its job index's "owner" column holds
   * `config.owningTeam`, pkg/storage/cassandra), not `config.owner`.
   */
  owner?: string;
  /**
   * Part of the job's name, in any case (Peloton's QuerySpec.name matches a substring). SQLite folds only
   * ASCII letters; MySQL and the in-memory stores fold every letter.
   */
  name?: string;
  labels?: { key: string; value: string }[];
  /** The order of the matches (see `compareJobs`); absent or empty: newest first. */
  order?: readonly JobOrder[];
  /** Matching jobs to skip, in `order`. */
  offset?: number;
  /** Most jobs to return after `offset`; absent: all of them. 0 returns none, only the total. */
  limit?: number;
}

/** Which of a workflow's instance events `Store.getWorkflowEvents` reads. */
export interface WorkflowEventsQuery {
  /** Only this instance's; absent: every instance's. */
  instanceId?: number;
  /** The newest `limit` steps of each instance; 0 or absent: all of them. */
  limit?: number;
}

/**
 * A workflow's steps, as every store reads them (the in-memory ones with this), from its instance events
 * oldest first: a run of one state on an instance as the run's newest event (Peloton's
 * `convertToWorkflowEvents`: a rollback records ROLLING_BACKWARD for each of its instances when it starts,
 * and again when it takes one), then the newest `limit` of each instance (0: all), still oldest first.
 */
export function workflowSteps(events: readonly WorkflowEventRecord[], limit = 0): WorkflowEventRecord[] {
  const newer = new Map<number, { state: string; taken: number }>();
  const out: WorkflowEventRecord[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const seen = newer.get(e.instanceId);
    if (seen?.state === e.state || (limit > 0 && (seen?.taken ?? 0) >= limit)) continue;
    newer.set(e.instanceId, { state: e.state, taken: (seen?.taken ?? 0) + 1 });
    out.push(e);
  }
  return out.reverse();
}

/** Whether `name` contains `part`, in any case: JobQuery.name, as the in-memory stores match it. */
export function nameContains(name: string, part: string): boolean {
  return name.toLowerCase().includes(part.toLowerCase());
}

/** The properties Peloton's job queries sort by (`pagination.orderBy`). */
export const JOB_ORDER_PROPERTIES = ["creation_time", "completion_time", "name", "owner", "state"] as const;
export type JobOrderProperty = typeof JOB_ORDER_PROPERTIES[number];

export interface JobOrder {
  property: JobOrderProperty;
  desc: boolean;
}

/** Peloton's order when a query gives none: newest first. */
export const DEFAULT_JOB_ORDER: readonly JobOrder[] = [{ property: "creation_time", desc: true }];

/**
 * A job query's order, as every store sorts (the in-memory ones with this): each key in turn until two jobs
 * differ, then job id in the direction of the last key (an empty order is `DEFAULT_JOB_ORDER`).
 * `creation_time` and `completion_time` are the runtime's; a job without a completion time comes after
 * those with one ascending and before them descending, as if it completed after all of them (the rule of
 * Peloton's task order for tasks not started). `name` is the config's; `owner` is the owning team, as
 * JobQuery.owner matches it (the SQL stores sort one past their column by its first 255 characters);
 * both by code point, which is the SQL stores' byte order of UTF-8. `state` is by Peloton's job state
 * number (JOB_STATES: INITIALIZED, PENDING, RUNNING, SUCCEEDED, ...), not by name.
 */
export function compareJobs(order: readonly JobOrder[]): (a: JobRecord, b: JobRecord) => number {
  const keys = order.length ? order : DEFAULT_JOB_ORDER;
  const lastDesc = keys[keys.length - 1].desc;
  return (a, b) => {
    for (const { property, desc } of keys) {
      const c = compareJobsBy(property, a, b);
      if (c !== 0) return desc ? -c : c;
    }
    const c = byCodePoint(a.jobId, b.jobId);
    return lastDesc ? -c : c;
  };
}

function compareJobsBy(property: JobOrderProperty, a: JobRecord, b: JobRecord): number {
  switch (property) {
    case "creation_time":
      return a.runtime.creationTimeMs - b.runtime.creationTimeMs;
    case "completion_time": {
      const x = a.runtime.completionTimeMs, y = b.runtime.completionTimeMs;
      if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
      return x - y;
    }
    case "name":
      return byCodePoint(a.config.name, b.config.name);
    case "owner":
      return byCodePoint(a.config.owningTeam ?? "", b.config.owningTeam ?? "");
    case "state":
      return JOB_STATES[a.runtime.state] - JOB_STATES[b.runtime.state];
  }
}

/**
 * Strings by code point (`<` compares UTF-16 units, which puts a character past U+FFFF before U+E000 to
 * U+FFFF); negative, 0 or positive.
 */
export function byCodePoint(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate starts a code point past U+FFFF: after every unit that is not one.
    const sx = x >= 0xd800 && x <= 0xdfff, sy = y >= 0xd800 && y <= 0xdfff;
    return sx === sy ? x - y : sx ? 1 : -1;
  }
  return a.length - b.length;
}

/** One page of a job query, in its order, and how many jobs match in all. */
export interface JobPage {
  jobs: JobRecord[];
  total: number;
}

/**
 * The store could not be reached: its database restarted, went away, stopped answering or was busy. The
 * same read or write may succeed later, so the API answers it as `unavailable` rather than `internal`.
 */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
}

/**
 * A batch the store refuses whole, before anything of it is applied: one of its rows is larger than the
 * database takes in one statement (MySQL's `max_allowed_packet`). The same batch can only fail the same way,
 * so the API answers it as `invalid-argument`.
 */
export class StoreWriteTooLargeError extends Error {
  override readonly name = "StoreWriteTooLargeError";

  constructor(
    /** What the row holds, as "the config of job X". */
    readonly what: string,
    readonly bytes: number,
    readonly limitBytes: number,
    /** Where the limit comes from, as "MySQL's max_allowed_packet of 16777216 bytes". */
    readonly limitSource: string,
  ) {
    super(
      `Cannot store ${what}: it takes ${bytes} bytes in the store, over its limit of ${limitBytes} bytes ` +
        `for one row (${limitSource})`,
    );
  }
}

/**
 * The API error for a store read or write that failed: `unavailable` when the store could not be reached (the
 * client may call again), `invalid-argument` when the writes are too large for it (they never fit),
 * `internal` otherwise. `doing` says what the call was doing, as "storing job X".
 */
export function storeFailure(
  err: unknown,
  doing?: string,
): { code: "unavailable" | "invalid-argument" | "internal"; message: string } {
  const code = err instanceof StoreUnavailableError
    ? "unavailable"
    : err instanceof StoreWriteTooLargeError
    ? "invalid-argument"
    : "internal";
  if (doing === undefined) {
    return { code, message: code === "unavailable" ? (err as Error).message : String(err) };
  }
  return { code, message: `${doing}: ${err instanceof Error ? err.message : String(err)}` };
}

/**
 * Writes go through one ordered pipeline: `write` returns at once, and `done` is called (never
 * synchronously) once the batch is durable, or with the error that stopped it. Implementations
 * may group concurrent batches into one transaction, but never reorder them; so an empty batch's `done`
 * tells when every batch written before it is durable. A batch without `done`
 * that fails is a lost write (its writer's memory is ahead of the store): implementations must not
 * drop it quietly; production's store hands it to a handler that ends the process.
 *
 * Reads are asynchronous and used for recovery and for API reads of what the daemons do not hold
 * in memory; decision logic never waits on them.
 */
export interface Store {
  write(batch: StoreWrite[], done?: (err?: Error) => void): void;
  /**
   * Why the store would refuse these writes whole for their size (`write` refuses such a batch, applying
   * none of it, with this error), or undefined when they fit. A caller checks a change it cannot take back
   * before it acts on it. Stores without a limit (the in-memory ones) leave it out.
   */
  tooLarge?(batch: readonly StoreWrite[]): StoreWriteTooLargeError | undefined;

  getJob(jobId: string): Promise<JobRecord | undefined>;
  /** Jobs matching every filter, in the query's order (`compareJobs`), one page of them. */
  queryJobs(query: JobQuery): Promise<JobPage>;
  /** The jobs recovery loads (`isActiveJob`): not ended, or ended with tasks that have work left. */
  activeJobs(): Promise<JobRecord[]>;
  getTasks(jobId: string): Promise<TaskRecord[]>;
  getTask(jobId: string, instanceId: number): Promise<TaskRecord | undefined>;
  /** Events of one instance, oldest first. */
  getTaskEvents(jobId: string, instanceId: number): Promise<TaskEventRecord[]>;
  respools(): Promise<RespoolRecord[]>;
  getJobConfig(jobId: string, version: number): Promise<JobConfig | undefined>;
  getUpdate(updateId: string): Promise<UpdateRecord | undefined>;
  /** A job's updates, newest first. */
  listUpdates(jobId: string): Promise<UpdateRecord[]>;
  /** Updates in a non-terminal state, for recovery. */
  activeUpdates(): Promise<UpdateRecord[]>;
  /** The steps of one of a job's workflows on its instances (see `workflowSteps`), oldest first. */
  getWorkflowEvents(
    jobId: string,
    workflowId: string,
    query?: WorkflowEventsQuery,
  ): Promise<WorkflowEventRecord[]>;
  /** A job's secrets, ordered by path. */
  getSecrets(jobId: string): Promise<SecretRecord[]>;
  listVolumes(jobId: string): Promise<VolumeRecord[]>;
  getVolume(volumeId: string): Promise<VolumeRecord | undefined>;
  /** Hosts in maintenance and completions not yet carried, by host name, for recovery. */
  hostMaintenance(): Promise<HostMaintenanceRecord[]>;
  /** Host pools created and hosts put in pools, for recovery. */
  hostPools(): Promise<StoredHostPools>;
  /** Components locked down, by component name. */
  adminLocks(): Promise<AdminLockRecord[]>;

  /** Resolves once every write issued so far is durable. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Lockdown as the in-memory stores keep it: a record per locked component. */
export class AdminLockRows {
  readonly locks = new Map<string, AdminLockRecord>();

  /** Applies a lockdown write; false for any other kind. */
  apply(w: StoreWrite): boolean {
    if (w.kind === "admin.lock") this.locks.set(w.lock.component, { ...w.lock });
    else if (w.kind === "admin.unlock") this.locks.delete(w.component);
    else return false;
    return true;
  }

  read(): AdminLockRecord[] {
    return copiesByKey(this.locks);
  }
}

/** Secrets as the in-memory stores keep them: a record per job and secret id. */
export class SecretRows {
  readonly #byJob = new Map<string, Map<string, SecretRecord>>();

  /** Applies a `secret.put`, or a `job.delete`'s share; false for any other kind. */
  apply(w: StoreWrite): boolean {
    if (w.kind === "secret.put") {
      let rows = this.#byJob.get(w.secret.jobId);
      if (!rows) this.#byJob.set(w.secret.jobId, rows = new Map());
      rows.set(w.secret.secretId, { ...w.secret });
      return true;
    }
    if (w.kind === "job.delete") this.#byJob.delete(w.jobId);
    return false;
  }

  read(jobId: string): SecretRecord[] {
    const rows = [...this.#byJob.get(jobId)?.values() ?? []].map((r) => ({ ...r }));
    return rows.sort((a, b) => byCodePoint(a.path, b.path) || byCodePoint(a.secretId, b.secretId));
  }
}

/** Host pools as the in-memory stores keep them: a record per pool and per host, applied as written. */
export class HostPoolRows {
  readonly pools = new Map<string, HostPoolRecord>();
  readonly assignments = new Map<string, HostPoolAssignmentRecord>();

  /** Applies a host pool write; false for any other kind. */
  apply(w: StoreWrite): boolean {
    if (w.kind === "hostpool.put") this.pools.set(w.pool.name, { ...w.pool });
    else if (w.kind === "hostpool.delete") this.pools.delete(w.name);
    else if (w.kind === "hostpool.assign") this.assignments.set(w.assignment.hostname, { ...w.assignment });
    else return false;
    return true;
  }

  read(): StoredHostPools {
    return { pools: copiesByKey(this.pools), assignments: copiesByKey(this.assignments) };
  }
}

/** Copies of a map's records, in the order of their keys (as a store lists them). */
function copiesByKey<T extends object>(records: Map<string, T>): T[] {
  return [...records].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([, r]) => ({ ...r }));
}

/**
 * Whether a stored task has work left: as the job manager said when it stored it (`hasWork`), else as its
 * record tells: a run not ended, a service's or a preempted task's ended run (always run again), a run
 * asked for (`desiredRunId`).
 */
export function storedHasWork(t: TaskRecord): boolean {
  if (t.hasWork !== undefined) return t.hasWork;
  return !isTerminalTaskState(t.state) || t.goalState === "RUNNING" || t.goalState === "PREEMPTING" ||
    (t.desiredRunId ?? 0) > t.runId;
}

/**
 * Whether recovery loads the job: one whose state has not ended, and one that ended with a task that still
 * has work (`anyTask(storedHasWork)`): a stopped job started again, a batch job restarted or with a failed
 * task to retry, a service whose every instance crashed are stored in an ended state until their tasks move.
 */
export function isActiveJob(job: JobRecord, anyTask: (has: typeof storedHasWork) => boolean): boolean {
  return !isTerminalJobState(job.runtime.state) || anyTask(storedHasWork);
}
