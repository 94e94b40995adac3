/** The store's SQL schema, portable between SQLite and MySQL: tables, record↔row mapping, migrations in code. */
import { type ColumnType, type Generated, type Kysely, type Selectable, sql } from "kysely";
import { type Migration, type MigrationProvider, Migrator } from "kysely/migration";
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
} from "../../core/model/records.ts";
import { isTerminalTaskState, TASK_STATES, type TaskState } from "../../core/model/states.ts";
import { storedHasWork } from "../../core/ports/store.ts";

export type DialectKind = "sqlite" | "mysql";

/** BIGINT columns come back as numbers from both drivers (ms timestamps stay below 2^53). */
type Int = ColumnType<number, number, number>;

export interface JobsTable {
  job_id: string;
  name: string;
  owner: string;
  /**
   * `config.owningTeam` (migration 0005): what Peloton's job index calls `owner` and its QuerySpec.owner
   * matches (pkg/storage/cassandra: `Set("owner", config.GetOwningTeam())`).
   */
  owning_team: string;
  respool_id: string;
  state: string;
  goal_state: string;
  /** JSON `JobConfig`. */
  config: string;
  config_version: Int;
  /** JSON `JobRuntime`. */
  runtime: string;
  /** JSON of `config.labels`, compared on write so `job_labels` is only rewritten when they change. */
  labels: string;
  version: Int;
  creation_time_ms: Int;
  /** `runtime.completionTimeMs` (migration 0007), for queries ordered by it; NULL while the job has none. */
  completion_time_ms: ColumnType<number | null, number | null, number | null>;
}

/** One row per job label, so that label queries use an index instead of scanning configs. */
export interface JobLabelsTable {
  job_id: string;
  position: Int;
  label_key: string;
  label_value: string;
}

export interface TasksTable {
  job_id: string;
  instance_id: Int;
  run_id: Int;
  state: string;
  goal_state: string;
  hostname: string | null;
  /** JSON `TaskRecord`; the columns beside it are copies for querying. */
  record: string;
  version: Int;
  /**
   * 1 when the job manager has work left for the task (`storedHasWork`; migration 0012): recovery's index.
   * Optional on insert only for rows written as older code did (its default is 0).
   */
  has_work: ColumnType<number, number | undefined, number>;
}

export interface TaskEventsTable {
  id: Generated<number>;
  job_id: string;
  instance_id: Int;
  run_id: Int;
  state: string;
  time_ms: Int;
  hostname: string | null;
  message: string | null;
  reason: string | null;
  /**
   * The writer's own key for the event, unique: a write tried again after its commit's answer was lost
   * inserts nothing. Null in rows written before migration 0011.
   */
  write_key: string | null;
  /**
   * The task's goal state, config versions, agent, health and neighbouring runs at the event (migration
   * 0013; null in rows written before, and where the task had none).
   */
  goal_state: string | null;
  config_version: Int | null;
  desired_config_version: Int | null;
  agent_id: string | null;
  healthy: string | null;
  prev_run_id: Int | null;
  desired_run_id: Int | null;
}

export interface RespoolsTable {
  id: string;
  path: string;
  parent_id: string;
  /** JSON `RespoolConfig`. */
  config: string;
}

/** Every config version a job had, kept for rollbacks (migration 0002). */
export interface JobConfigsTable {
  job_id: string;
  version: Int;
  /** JSON `JobConfig`. */
  config: string;
}

/** Job updates and other workflows (migration 0002). */
export interface UpdatesTable {
  update_id: string;
  job_id: string;
  state: string;
  type: string;
  /** JSON `UpdateRecord`; the columns beside it are copies for querying. */
  record: string;
  version: Int;
  creation_time_ms: Int;
}

/** Persistent volumes of stateful tasks (migration 0002). */
export interface VolumesTable {
  volume_id: string;
  job_id: string;
  instance_id: Int;
  hostname: string;
  /** JSON `VolumeRecord`. */
  record: string;
}

/**
 * A lease (migration 0003): leadership of a daemon role or ownership of a job shard. `token` grows with
 * every change of holder, so a deposed holder's writes can be fenced.
 */
export interface LeasesTable {
  name: string;
  holder: string;
  token: Int;
  expires_ms: Int;
  /** Where the holder serves (its HTTP base URL). */
  url: string;
}

/** A running daemon process (migration 0003), kept alive by its heartbeat. */
export interface MembersTable {
  instance_id: string;
  role: string;
  url: string;
  expires_ms: Int;
  started_ms: Int;
}

/** The Mesos framework id (and the host manager that saved it), as Peloton's `frameworks` table. */
export interface FrameworksTable {
  framework_name: string;
  framework_id: string;
  update_host: string;
  update_time_ms: Int;
}

/**
 * Hosts in maintenance (migration 0004), from StartMaintenance until CompleteMaintenance; with Mesos, a
 * completion stays (state HOST_STATE_UP) until the master has the machine up.
 */
export interface HostMaintenanceTable {
  hostname: string;
  state: string;
  start_time_ms: Int;
}

/**
 * Host pools an operator created (migration 0008); the default pool, and pools named by agents'
 * `host_pool` attribute, have no row.
 */
export interface HostPoolsTable {
  name: string;
  created_ms: Int;
}

/**
 * The pool an operator put each host in (migration 0008). `pool` need not have a `host_pools` row (the
 * default pool has none), so there is no foreign key.
 */
export interface HostPoolAssignmentsTable {
  hostname: string;
  pool: string;
  changed_ms: Int;
}

/**
 * A job manager component an operator locked down (migration 0009), kept until it is unlocked. The store
 * does not check the name: the API that takes Lockdown requests does.
 */
export interface AdminLocksTable {
  component: string;
  locked_ms: Int;
}

/**
 * A job's secrets (migration 0010), as Peloton's `secret_info`: one row per job and secret id, replaced
 * when a job update changes the secret. `data` (base64) may be large: a secret of up to ~1 MB.
 */
export interface SecretInfoTable {
  job_id: string;
  secret_id: string;
  path: string;
  data: string;
  created_ms: Int;
  version: Int;
}

/** A workflow's steps on a job's instances (migration 0006), read by workflow and instance in write order. */
export interface WorkflowEventsTable {
  id: Generated<number>;
  job_id: string;
  workflow_id: string;
  instance_id: Int;
  type: string;
  state: string;
  time_ms: Int;
  /** As `task_events.write_key`. */
  write_key: string | null;
}

export interface StoreDatabase {
  leases: LeasesTable;
  members: MembersTable;
  frameworks: FrameworksTable;
  jobs: JobsTable;
  job_labels: JobLabelsTable;
  tasks: TasksTable;
  task_events: TaskEventsTable;
  respools: RespoolsTable;
  job_configs: JobConfigsTable;
  updates: UpdatesTable;
  volumes: VolumesTable;
  host_maintenance: HostMaintenanceTable;
  workflow_events: WorkflowEventsTable;
  host_pools: HostPoolsTable;
  host_pool_assignments: HostPoolAssignmentsTable;
  admin_locks: AdminLocksTable;
  secret_info: SecretInfoTable;
}

/**
 * Longest indexed label key and value. MySQL (utf8mb4, 4 bytes a character) caps an index at 3,072 bytes;
 * longer labels are indexed by their prefix and matched exactly against the config after the query.
 */
export const LABEL_KEY_CHARS = 255;
export const LABEL_VALUE_CHARS = 512;

/**
 * Width of the owning_team column. New configs are refused past it, but a job stored before they were
 * (its config whole) keeps its team clipped there, and a query matches such a team against the config.
 */
export const OWNING_TEAM_CHARS = 255;

export function jobRow(job: JobRecord) {
  return {
    job_id: job.jobId,
    name: job.config.name,
    owner: job.config.owner,
    owning_team: clip(job.config.owningTeam ?? "", OWNING_TEAM_CHARS),
    respool_id: job.config.respoolId ?? "",
    state: job.runtime.state,
    goal_state: job.runtime.goalState,
    config: JSON.stringify(job.config),
    config_version: job.configVersion,
    runtime: JSON.stringify(job.runtime),
    labels: JSON.stringify(job.config.labels ?? []),
    version: job.runtime.version,
    creation_time_ms: job.runtime.creationTimeMs,
    completion_time_ms: job.runtime.completionTimeMs ?? null,
  } satisfies Selectable<JobsTable>;
}

export function jobFromRow(
  row: Pick<Selectable<JobsTable>, "job_id" | "config" | "config_version" | "runtime">,
) {
  return {
    jobId: row.job_id,
    config: JSON.parse(row.config),
    configVersion: row.config_version,
    runtime: JSON.parse(row.runtime),
  } satisfies JobRecord;
}

export function labelRows(job: JobRecord): Selectable<JobLabelsTable>[] {
  return (job.config.labels ?? []).map((l, position) => ({
    job_id: job.jobId,
    position,
    label_key: clip(l.key, LABEL_KEY_CHARS),
    label_value: clip(l.value, LABEL_VALUE_CHARS),
  }));
}

export function taskRow(t: TaskRecord) {
  return {
    job_id: t.jobId,
    instance_id: t.instanceId,
    run_id: t.runId,
    state: t.state,
    goal_state: t.goalState,
    hostname: t.hostname ?? null,
    record: JSON.stringify(t),
    version: t.version,
    has_work: storedHasWork(t) ? 1 : 0,
  } satisfies Selectable<TasksTable>;
}

export function eventRow(
  e: TaskEventRecord,
  writeKey: string | null,
): Omit<Selectable<TaskEventsTable>, "id"> {
  return {
    job_id: e.jobId,
    instance_id: e.instanceId,
    run_id: e.runId,
    state: e.state,
    time_ms: e.timeMs,
    hostname: e.hostname ?? null,
    message: e.message ?? null,
    reason: e.reason ?? null,
    write_key: writeKey,
    goal_state: e.goalState ?? null,
    config_version: e.configVersion ?? null,
    desired_config_version: e.desiredConfigVersion ?? null,
    agent_id: e.agentId ?? null,
    healthy: e.healthy ?? null,
    prev_run_id: e.prevRunId ?? null,
    desired_run_id: e.desiredRunId ?? null,
  };
}

/** Absent optional fields stay absent rather than coming back as null. */
export function eventFromRow(r: Selectable<TaskEventsTable>): TaskEventRecord {
  const e: TaskEventRecord = {
    jobId: r.job_id,
    instanceId: r.instance_id,
    runId: r.run_id,
    state: r.state as TaskEventRecord["state"],
    timeMs: r.time_ms,
  };
  if (r.hostname !== null) e.hostname = r.hostname;
  if (r.message !== null) e.message = r.message;
  if (r.reason !== null) e.reason = r.reason;
  // Null in rows written before migration 0013.
  if (r.goal_state !== null) e.goalState = r.goal_state as TaskState;
  if (r.config_version !== null) e.configVersion = r.config_version;
  if (r.desired_config_version !== null) e.desiredConfigVersion = r.desired_config_version;
  if (r.agent_id !== null) e.agentId = r.agent_id;
  if (r.healthy !== null) e.healthy = r.healthy as TaskEventRecord["healthy"];
  if (r.prev_run_id !== null) e.prevRunId = r.prev_run_id;
  if (r.desired_run_id !== null) e.desiredRunId = r.desired_run_id;
  return e;
}

export function workflowEventRow(
  e: WorkflowEventRecord,
  writeKey: string | null,
): Omit<Selectable<WorkflowEventsTable>, "id"> {
  return {
    job_id: e.jobId,
    workflow_id: e.workflowId,
    instance_id: e.instanceId,
    type: e.type,
    state: e.state,
    time_ms: e.timeMs,
    write_key: writeKey,
  };
}

export function workflowEventFromRow(r: Selectable<WorkflowEventsTable>): WorkflowEventRecord {
  return {
    jobId: r.job_id,
    workflowId: r.workflow_id,
    instanceId: r.instance_id,
    type: r.type as WorkflowEventRecord["type"],
    state: r.state as WorkflowEventRecord["state"],
    timeMs: r.time_ms,
  };
}

export function respoolRow(p: RespoolRecord): Selectable<RespoolsTable> {
  return { id: p.id, path: p.path, parent_id: p.parentId, config: JSON.stringify(p.config) };
}

export function respoolFromRow(r: Selectable<RespoolsTable>): RespoolRecord {
  return { id: r.id, path: r.path, parentId: r.parent_id, config: JSON.parse(r.config) };
}

export function updateRow(u: UpdateRecord) {
  return {
    update_id: u.updateId,
    job_id: u.jobId,
    state: u.state,
    type: u.type,
    record: JSON.stringify(u),
    version: u.version,
    creation_time_ms: u.creationTimeMs,
  } satisfies Selectable<UpdatesTable>;
}

export function volumeRow(v: VolumeRecord) {
  return {
    volume_id: v.volumeId,
    job_id: v.jobId,
    instance_id: v.instanceId,
    hostname: v.hostname,
    record: JSON.stringify(v),
  } satisfies Selectable<VolumesTable>;
}

export function maintenanceRow(m: HostMaintenanceRecord): Selectable<HostMaintenanceTable> {
  return { hostname: m.hostname, state: m.state, start_time_ms: m.startTimeMs };
}

export function maintenanceFromRow(r: Selectable<HostMaintenanceTable>): HostMaintenanceRecord {
  return {
    hostname: r.hostname,
    state: r.state as HostMaintenanceRecord["state"],
    startTimeMs: r.start_time_ms,
  };
}

export function hostPoolRow(p: HostPoolRecord): Selectable<HostPoolsTable> {
  return { name: p.name, created_ms: p.createdMs };
}

export function hostPoolFromRow(r: Selectable<HostPoolsTable>): HostPoolRecord {
  return { name: r.name, createdMs: r.created_ms };
}

export function hostPoolAssignmentRow(a: HostPoolAssignmentRecord): Selectable<HostPoolAssignmentsTable> {
  return { hostname: a.hostname, pool: a.pool, changed_ms: a.changedMs };
}

export function hostPoolAssignmentFromRow(r: Selectable<HostPoolAssignmentsTable>): HostPoolAssignmentRecord {
  return { hostname: r.hostname, pool: r.pool, changedMs: r.changed_ms };
}

export function adminLockRow(l: AdminLockRecord): Selectable<AdminLocksTable> {
  return { component: l.component, locked_ms: l.lockedMs };
}

export function adminLockFromRow(r: Selectable<AdminLocksTable>): AdminLockRecord {
  return { component: r.component, lockedMs: r.locked_ms };
}

export function secretRow(s: SecretRecord): Selectable<SecretInfoTable> {
  return {
    job_id: s.jobId,
    secret_id: s.secretId,
    path: s.path,
    data: s.data,
    created_ms: s.createdMs,
    version: s.version,
  };
}

export function secretFromRow(r: Selectable<SecretInfoTable>): SecretRecord {
  return {
    jobId: r.job_id,
    secretId: r.secret_id,
    path: r.path,
    data: r.data,
    createdMs: r.created_ms,
    version: r.version,
  };
}

/** Cuts a label to what its indexed column holds. */
export function clip(s: string, chars: number): string {
  return s.length <= chars ? s : s.slice(0, chars);
}

// deno-lint-ignore no-explicit-any
type AnyDb = Kysely<any>;

/** The migrations of one dialect, by name; names sort in the order they run. Never edit a released one. */
export function storeMigrations(kind: DialectKind): Record<string, Migration> {
  return {
    "0001_initial": { up: (db) => initialSchema(db, kind) },
    "0002_updates_volumes_configs": { up: (db) => updatesVolumesConfigs(db, kind) },
    "0003_leases_members_frameworks": { up: (db) => leasesMembersFrameworks(db, kind) },
    "0004_host_maintenance": { up: (db) => hostMaintenance(db, kind) },
    "0005_jobs_owning_team": { up: (db) => jobsOwningTeam(db, kind) },
    "0006_workflow_events": { up: (db) => workflowEvents(db, kind) },
    "0007_jobs_completion_time": { up: (db) => jobsCompletionTime(db, kind) },
    "0008_host_pools": { up: (db) => hostPools(db, kind) },
    "0009_admin_locks": { up: (db) => adminLocks(db, kind) },
    "0010_secret_info": { up: (db) => secretInfo(db, kind) },
    "0011_event_write_keys": { up: (db) => eventWriteKeys(db, kind) },
    "0012_task_has_work": { up: (db) => taskHasWork(db, kind) },
    "0013_task_event_details": { up: (db) => taskEventDetails(db, kind) },
  };
}

/** The columns migration 0013 adds to `task_events`, all nullable: rows before it have none of them. */
const TASK_EVENT_DETAILS = [
  ["goal_state", "varchar(32)"],
  ["config_version", "bigint"],
  ["desired_config_version", "bigint"],
  ["agent_id", "varchar(255)"],
  ["healthy", "varchar(32)"],
  ["prev_run_id", "integer"],
  ["desired_run_id", "integer"],
] as const;

/**
 * The task's goal, config versions, agent, health and previous and desired runs with each event, as
 * Peloton's pod events keep them. Events written before are left without them (null: no rewrite of what
 * may be millions of rows). Safe to run again after a cut.
 */
async function taskEventDetails(db: AnyDb, kind: DialectKind): Promise<void> {
  for (const [name, type] of TASK_EVENT_DETAILS) {
    try {
      await db.schema.alterTable("task_events").addColumn(name, type).execute();
    } catch (err) {
      if (!isDuplicateColumn(err, kind)) throw err;
    }
  }
}

/**
 * Whether the job manager has work left for a task, indexed with its job, so that recovery finds the ended
 * jobs it must still load without reading their tasks. Filled from the columns there are (a run not ended,
 * a service's or a preempted task's run); a restart asked for just before the upgrade is not seen. Safe to
 * run again after a cut.
 */
async function taskHasWork(db: AnyDb, kind: DialectKind): Promise<void> {
  try {
    await db.schema.alterTable("tasks").addColumn("has_work", "smallint", (c) => c.notNull().defaultTo(0))
      .execute();
  } catch (err) {
    if (!isDuplicateColumn(err, kind)) throw err;
  }
  const ended = (Object.keys(TASK_STATES) as TaskState[]).filter(isTerminalTaskState);
  await db.updateTable("tasks").set({ has_work: 1 }).where((eb) =>
    eb.or([eb("state", "not in", ended), eb("goal_state", "in", ["RUNNING", "PREEMPTING"])])
  ).execute();
  await createIndex(db, kind, "tasks_has_work", "tasks", ["has_work", "job_id"]);
}

/**
 * A unique key for each event row that its writer chooses, so that a group committed again after its
 * commit's answer was lost does not insert its events twice. Rows written before have none (null, which a
 * unique index allows many of). Safe to run again after a cut.
 */
async function eventWriteKeys(db: AnyDb, kind: DialectKind): Promise<void> {
  for (const table of ["task_events", "workflow_events"]) {
    try {
      await db.schema.alterTable(table).addColumn("write_key", `varchar(${WRITE_KEY_CHARS})`).execute();
    } catch (err) {
      if (!isDuplicateColumn(err, kind)) throw err;
    }
    await createIndex(db, kind, `${table}_write_key`, table, ["write_key"], true);
  }
}

/** The longest event write key: a writer's 16 hex digits, a dash and a count in base 36. */
export const WRITE_KEY_CHARS = 32;

/**
 * A column for the completion time, which job queries may be ordered by; filled from each stored job's
 * runtime. Safe to run again after a cut.
 */
async function jobsCompletionTime(db: AnyDb, kind: DialectKind): Promise<void> {
  try {
    await db.schema.alterTable("jobs").addColumn("completion_time_ms", "bigint").execute();
  } catch (err) {
    if (!isDuplicateColumn(err, kind)) throw err;
  }
  const completed = kind === "mysql"
    ? sql`cast(json_unquote(json_extract(runtime, '$.completionTimeMs')) as signed)`
    : sql`json_extract(runtime, '$.completionTimeMs')`;
  await sql`update jobs set completion_time_ms = ${completed}`.execute(db);
}

/** Whether adding a column failed because an earlier, cut run of the migration added it. */
function isDuplicateColumn(err: unknown, kind: DialectKind): boolean {
  return kind === "mysql"
    ? (err as { code?: string }).code === "ER_DUP_FIELDNAME"
    : /duplicate column name/i.test(String(err));
}

/** Workflows' instance events (v1alpha GetWorkflowEvents). Safe to run again after a cut. */
async function workflowEvents(db: AnyDb, kind: DialectKind): Promise<void> {
  await createTable(db, kind, "workflow_events")
    // SQLite only auto-increments an INTEGER PRIMARY KEY; MySQL wants BIGINT AUTO_INCREMENT.
    .addColumn("id", kind === "mysql" ? "bigint" : "integer", (c) => c.primaryKey().autoIncrement())
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("workflow_id", "varchar(128)", (c) => c.notNull())
    .addColumn("instance_id", "integer", (c) => c.notNull())
    .addColumn("type", "varchar(32)", (c) => c.notNull())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("time_ms", "bigint", (c) => c.notNull())
    .execute();
  await createIndex(db, kind, "workflow_events_instance", "workflow_events", [
    "job_id",
    "workflow_id",
    "instance_id",
  ]);
}

/**
 * A column and index for the owning team, which Peloton's job queries match as `owner`; filled from each
 * stored job's config. Safe to run again after a cut (MySQL's DDL is not transactional).
 */
async function jobsOwningTeam(db: AnyDb, kind: DialectKind): Promise<void> {
  try {
    await db.schema.alterTable("jobs").addColumn(
      "owning_team",
      "varchar(255)",
      (c) => c.notNull().defaultTo(""),
    )
      .execute();
  } catch (err) {
    if (!isDuplicateColumn(err, kind)) throw err;
  }
  // Clipped to the column: configs stored before owning teams were limited may hold longer ones, which
  // MySQL's strict mode refuses whole ("Data too long"), failing the upgrade.
  const team = kind === "mysql"
    ? sql`left(coalesce(json_unquote(json_extract(config, '$.owningTeam')), ''), ${
      sql.lit(OWNING_TEAM_CHARS)
    })`
    : sql`substr(coalesce(json_extract(config, '$.owningTeam'), ''), 1, ${sql.lit(OWNING_TEAM_CHARS)})`;
  await sql`update jobs set owning_team = ${team}`.execute(db);
  await createIndex(db, kind, "jobs_owning_team", "jobs", ["owning_team"]);
}

/**
 * Runs every pending migration (or those up to and including `last`, to build an older schema in tests)
 * and returns the names of those it ran. Safe to call twice and from several processes at once: MySQL
 * serializes migrators with GET_LOCK, and our SQLite dialect runs them in a BEGIN IMMEDIATE transaction,
 * so a second migrator waits and then finds nothing to do.
 */
/**
 * A store a newer release migrated: this release does not know its schema, so it is refused before anything
 * reads or writes it (a downgrade is not supported; the newer release's migrations stay).
 */
export class StoreTooNewError extends Error {
  override readonly name = "StoreTooNewError";
  constructor(readonly newest: string, readonly known: string) {
    super(
      `the store was migrated by a newer release (its schema is at migration ${newest}, this release knows ` +
        `up to ${known}): a downgrade is not supported; run the newer release on it`,
    );
  }
}

/** The migrations a database has run (none before its first, when the table is not there yet). */
async function executedMigrations(db: AnyDb): Promise<string[]> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    return rows.map((r) => r.name);
  } catch {
    // No table yet (a new store), or a store that cannot be reached: the migrator says which.
    return [];
  }
}

export async function migrateToLatest(db: AnyDb, kind: DialectKind, last?: string): Promise<string[]> {
  const migrations = storeMigrations(kind);
  const unknown = (await executedMigrations(db)).filter((name) => !(name in migrations)).sort();
  if (unknown.length) throw new StoreTooNewError(unknown.at(-1)!, Object.keys(migrations).sort().at(-1)!);
  const provider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations) };
  const migrator = new Migrator({ db, provider });
  const { error, results } =
    await (last === undefined ? migrator.migrateToLatest() : migrator.migrateTo(last));
  if (error) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName;
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(`Cannot migrate the store schema${failed ? ` (migration ${failed})` : ""}: ${why}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** MySQL's TEXT holds 64 KiB, too little for a job with many instance configs. */
function bigText(kind: DialectKind) {
  return kind === "mysql" ? sql`longtext` : sql`text`;
}

/** CREATE TABLE IF NOT EXISTS; binary collation makes matches case-sensitive on MySQL, as they are in SQLite. */
function createTable(db: AnyDb, kind: DialectKind, name: string) {
  const t = db.schema.createTable(name).ifNotExists();
  return kind === "mysql" ? t.modifyEnd(sql`engine=InnoDB default charset=utf8mb4 collate=utf8mb4_bin`) : t;
}

async function initialSchema(db: AnyDb, kind: DialectKind): Promise<void> {
  const text = bigText(kind);
  const table = (name: string) => createTable(db, kind, name);

  await table("jobs")
    .addColumn("job_id", "varchar(128)", (c) => c.primaryKey())
    .addColumn("name", "varchar(512)", (c) => c.notNull())
    .addColumn("owner", "varchar(255)", (c) => c.notNull())
    .addColumn("respool_id", "varchar(128)", (c) => c.notNull())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("goal_state", "varchar(32)", (c) => c.notNull())
    .addColumn("config", text, (c) => c.notNull())
    .addColumn("config_version", "bigint", (c) => c.notNull())
    .addColumn("runtime", text, (c) => c.notNull())
    .addColumn("labels", text, (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addColumn("creation_time_ms", "bigint", (c) => c.notNull())
    .execute();
  await createIndex(db, kind, "jobs_state_created", "jobs", ["state", "creation_time_ms"]);
  await createIndex(db, kind, "jobs_respool", "jobs", ["respool_id"]);
  await createIndex(db, kind, "jobs_owner", "jobs", ["owner"]);
  await createIndex(db, kind, "jobs_name", "jobs", ["name"]);
  await createIndex(db, kind, "jobs_created", "jobs", ["creation_time_ms"]);

  await table("job_labels")
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("label_key", `varchar(${LABEL_KEY_CHARS})`, (c) => c.notNull())
    .addColumn("label_value", `varchar(${LABEL_VALUE_CHARS})`, (c) => c.notNull())
    .addPrimaryKeyConstraint("job_labels_pk", ["job_id", "position"])
    .execute();
  await createIndex(db, kind, "job_labels_kv", "job_labels", ["label_key", "label_value"]);

  await table("tasks")
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("instance_id", "integer", (c) => c.notNull())
    .addColumn("run_id", "integer", (c) => c.notNull())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("goal_state", "varchar(32)", (c) => c.notNull())
    .addColumn("hostname", "varchar(255)")
    .addColumn("record", text, (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("tasks_pk", ["job_id", "instance_id"])
    .execute();
  await createIndex(db, kind, "tasks_hostname", "tasks", ["hostname"]);

  await table("task_events")
    // SQLite only auto-increments an INTEGER PRIMARY KEY; MySQL wants BIGINT AUTO_INCREMENT.
    .addColumn("id", kind === "mysql" ? "bigint" : "integer", (c) => c.primaryKey().autoIncrement())
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("instance_id", "integer", (c) => c.notNull())
    .addColumn("run_id", "integer", (c) => c.notNull())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("time_ms", "bigint", (c) => c.notNull())
    .addColumn("hostname", "varchar(255)")
    .addColumn("message", text)
    .addColumn("reason", text)
    .execute();
  await createIndex(db, kind, "task_events_instance", "task_events", ["job_id", "instance_id"]);

  await table("respools")
    .addColumn("id", "varchar(128)", (c) => c.primaryKey())
    .addColumn("path", "varchar(700)", (c) => c.notNull())
    .addColumn("parent_id", "varchar(128)", (c) => c.notNull())
    .addColumn("config", text, (c) => c.notNull())
    .execute();
  await createIndex(db, kind, "respools_path", "respools", ["path"], true);
  await createIndex(db, kind, "respools_parent", "respools", ["parent_id"]);
}

/** Job config history, updates and volumes. Every step tolerates having been done (see `createIndex`). */
async function updatesVolumesConfigs(db: AnyDb, kind: DialectKind): Promise<void> {
  const text = bigText(kind);
  const table = (name: string) => createTable(db, kind, name);

  await table("job_configs")
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addColumn("config", text, (c) => c.notNull())
    .addPrimaryKeyConstraint("job_configs_pk", ["job_id", "version"])
    .execute();

  await table("updates")
    .addColumn("update_id", "varchar(128)", (c) => c.primaryKey())
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("type", "varchar(32)", (c) => c.notNull())
    .addColumn("record", text, (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addColumn("creation_time_ms", "bigint", (c) => c.notNull())
    .execute();
  // listUpdates reads one job's updates by creation time; activeUpdates filters on state.
  await createIndex(db, kind, "updates_job_created", "updates", ["job_id", "creation_time_ms"]);
  await createIndex(db, kind, "updates_state_created", "updates", ["state", "creation_time_ms"]);

  await table("volumes")
    .addColumn("volume_id", "varchar(128)", (c) => c.primaryKey())
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("instance_id", "integer", (c) => c.notNull())
    .addColumn("hostname", "varchar(255)", (c) => c.notNull())
    .addColumn("record", text, (c) => c.notNull())
    .execute();
  await createIndex(db, kind, "volumes_job_instance", "volumes", ["job_id", "instance_id"]);
}

/** Leases, daemon membership and the Mesos framework id, for separate daemon processes. */
async function leasesMembersFrameworks(db: AnyDb, kind: DialectKind): Promise<void> {
  const table = (name: string) => createTable(db, kind, name);
  await table("leases")
    .addColumn("name", "varchar(128)", (c) => c.primaryKey())
    .addColumn("holder", "varchar(128)", (c) => c.notNull())
    .addColumn("token", "bigint", (c) => c.notNull())
    .addColumn("expires_ms", "bigint", (c) => c.notNull())
    .addColumn("url", "varchar(512)", (c) => c.notNull())
    .execute();
  await table("members")
    .addColumn("instance_id", "varchar(128)", (c) => c.primaryKey())
    .addColumn("role", "varchar(32)", (c) => c.notNull())
    .addColumn("url", "varchar(512)", (c) => c.notNull())
    .addColumn("expires_ms", "bigint", (c) => c.notNull())
    .addColumn("started_ms", "bigint", (c) => c.notNull())
    .execute();
  await createIndex(db, kind, "members_role", "members", ["role"]);
  await table("frameworks")
    .addColumn("framework_name", "varchar(128)", (c) => c.primaryKey())
    .addColumn("framework_id", "varchar(255)", (c) => c.notNull())
    .addColumn("update_host", "varchar(255)", (c) => c.notNull())
    .addColumn("update_time_ms", "bigint", (c) => c.notNull())
    .execute();
}

/** Hosts in maintenance, so that maintenance outlives a restart of the host manager. */
async function hostMaintenance(db: AnyDb, kind: DialectKind): Promise<void> {
  await createTable(db, kind, "host_maintenance")
    .addColumn("hostname", "varchar(255)", (c) => c.primaryKey())
    .addColumn("state", "varchar(32)", (c) => c.notNull())
    .addColumn("start_time_ms", "bigint", (c) => c.notNull())
    .execute();
}

/**
 * Host pools created and the pool each host was put in, so that both outlive a restart of the host
 * manager. Safe to run again after a cut.
 */
async function hostPools(db: AnyDb, kind: DialectKind): Promise<void> {
  await createTable(db, kind, "host_pools")
    .addColumn("name", "varchar(255)", (c) => c.primaryKey())
    .addColumn("created_ms", "bigint", (c) => c.notNull())
    .execute();
  await createTable(db, kind, "host_pool_assignments")
    .addColumn("hostname", "varchar(255)", (c) => c.primaryKey())
    .addColumn("pool", "varchar(255)", (c) => c.notNull())
    .addColumn("changed_ms", "bigint", (c) => c.notNull())
    .execute();
}

/**
 * The job manager components locked down, so that a lockdown outlives a restart of the job manager. Safe
 * to run again after a cut.
 */
async function adminLocks(db: AnyDb, kind: DialectKind): Promise<void> {
  await createTable(db, kind, "admin_locks")
    .addColumn("component", "varchar(255)", (c) => c.primaryKey())
    .addColumn("locked_ms", "bigint", (c) => c.notNull())
    .execute();
}

/**
 * Width of a secret id, part of the key (Peloton's are UUIDs); MySQL refuses a longer one, failing its batch.
 * The path is TEXT (64 KiB on MySQL), not indexed: the store sorts a job's few secrets itself.
 */
export const SECRET_ID_CHARS = 255;

/**
 * Jobs' secrets, so that a job's tasks get them when launched after a restart. `data` is MySQL's LONGTEXT
 * (TEXT holds only 64 KiB); base64 is ASCII, so its bytes are its length. Safe to run again after a cut.
 */
async function secretInfo(db: AnyDb, kind: DialectKind): Promise<void> {
  await createTable(db, kind, "secret_info")
    .addColumn("job_id", "varchar(128)", (c) => c.notNull())
    .addColumn("secret_id", `varchar(${SECRET_ID_CHARS})`, (c) => c.notNull())
    .addColumn("path", "text", (c) => c.notNull())
    .addColumn("data", bigText(kind), (c) => c.notNull())
    .addColumn("created_ms", "bigint", (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("secret_info_pk", ["job_id", "secret_id"])
    .execute();
}

/**
 * MySQL runs DDL outside transactions, so a migration cut short is run again from the top: every step
 * must tolerate having been done. MySQL has no CREATE INDEX IF NOT EXISTS; a duplicate name means done.
 */
async function createIndex(
  db: AnyDb,
  kind: DialectKind,
  name: string,
  table: string,
  columns: string[],
  unique = false,
): Promise<void> {
  let index = db.schema.createIndex(name).on(table).columns(columns);
  if (unique) index = index.unique();
  if (kind === "sqlite") {
    await index.ifNotExists().execute();
    return;
  }
  try {
    await index.execute();
  } catch (err) {
    if ((err as { code?: string }).code !== "ER_DUP_KEYNAME") throw err;
  }
}
