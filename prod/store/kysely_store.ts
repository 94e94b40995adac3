/** The Store port over Kysely (SQLite or MySQL): one writer loop with group commit, and async reads. */
import {
  type ControlledTransaction,
  type InsertQueryBuilder,
  type InsertResult,
  type Kysely,
  type RawBuilder,
  type Selectable,
  sql,
} from "kysely";
import {
  byCodePoint,
  compareJobs,
  DEFAULT_JOB_ORDER,
  type JobOrder,
  type JobPage,
  type JobQuery,
  type StaleWriteError,
  type Store,
  type StoredHostPools,
  StoreUnavailableError,
  type StoreWrite,
  StoreWriteTooLargeError,
  type WorkflowEventsQuery,
  workflowSteps,
} from "../../core/ports/store.ts";
import {
  type AdminLockRecord,
  type HostMaintenanceRecord,
  isTerminalUpdateState,
  type JobRecord,
  type RespoolRecord,
  type SecretRecord,
  type TaskEventRecord,
  type TaskRecord,
  type UpdateRecord,
  type UpdateState,
  type VolumeRecord,
  type WorkflowEventRecord,
} from "../../core/model/records.ts";
import type { JobConfig } from "../../core/model/config_types.ts";
import { isTerminalJobState, JOB_STATES, type JobState } from "../../core/model/states.ts";
import { findStaleWrite, jobMatches, jobPage } from "../../sim/memory_store.ts";
import {
  adminLockFromRow,
  adminLockRow,
  clip,
  type DialectKind,
  eventFromRow,
  eventRow,
  hostPoolAssignmentFromRow,
  hostPoolAssignmentRow,
  hostPoolFromRow,
  hostPoolRow,
  jobFromRow,
  jobRow,
  LABEL_KEY_CHARS,
  LABEL_VALUE_CHARS,
  labelRows,
  maintenanceFromRow,
  maintenanceRow,
  migrateToLatest,
  OWNING_TEAM_CHARS,
  respoolFromRow,
  respoolRow,
  secretFromRow,
  secretRow,
  type StoreDatabase,
  type TaskEventsTable,
  taskRow,
  updateRow,
  volumeRow,
  workflowEventFromRow,
  workflowEventRow,
  type WorkflowEventsTable,
} from "./schema.ts";
import { createSqliteKysely, type SqliteOptions } from "./sqlite_dialect.ts";
import { createMysqlKysely, type MysqlOptions } from "./mysql_dialect.ts";
import { checkFences, type Fence, FencedError } from "./fence.ts";
import { asUnavailable, isDiskFull, isTransient, isUnreachable } from "./transient.ts";
import { mysqlRowLimit, type RowLimit, SQLITE_ROW_LIMIT, writeRowBytes } from "./row_size.ts";
import { type StoreClaim, StoreClaimLostError } from "./store_claim.ts";
import { ofJob, type ReadKey, writeKeys } from "./read_keys.ts";

export interface StoreOptions {
  /** Most writes one group commit takes from the queue; bounds a transaction's size and lock time. */
  maxGroupWrites?: number;
  sqlite?: SqliteOptions;
  mysql?: MysqlOptions;
  /**
   * Leases the writer must still hold for its writes to be applied (separate daemons): checked in every
   * group's transaction; when one is lost the whole group fails with a FencedError.
   */
  fences?: () => Fence[];
  /** How long writes wait for a database that cannot be reached before they fail. */
  retryForMs?: number;
  /** Once a stop has begun (`stopping`, `close`), how long writes wait for such a database (10 s). */
  stopGraceMs?: number;
  /**
   * The process's claim on the store (`claimStore`), checked in every group's transaction: a process that
   * lost it writes nothing more (its writes wait while a dropped claim is being taken back).
   */
  claim?: StoreClaim;
  /**
   * Told of a batch that failed with no `done` to tell: its writer's memory is ahead of the store and no
   * one can answer for it. The daemons end the process (exit 1) so that a supervisor restarts it and
   * recovery reloads the store, as Peloton's daemons exit on a store error. Without it the error is thrown
   * outside the writer loop, where it ends the process too.
   */
  onLostWrite?: (err: Error) => void;
  /**
   * The most bytes one row may hold; a batch with a larger row is refused whole (`tooLarge`). `openStore`
   * reads a MySQL server's `max_allowed_packet`; SQLite's is its SQLITE_MAX_LENGTH.
   */
  rowLimit?: RowLimit;
}

type Db = Kysely<StoreDatabase>;
type Trx = ControlledTransaction<StoreDatabase>;
type Done = ((err?: Error) => void) | undefined;
type TaskPut = Extract<StoreWrite, { kind: "task.put" }>;
type TaskEvent = Extract<StoreWrite, { kind: "task.event" }>;
type WorkflowEvent = Extract<StoreWrite, { kind: "workflow.event" }>;

const TERMINAL_JOB_STATES = (Object.keys(JOB_STATES) as JobState[]).filter(isTerminalJobState);
/** Every update state; a Record so that the compiler flags a state added to `UpdateState` but not here. */
const UPDATE_STATES: Record<UpdateState, true> = {
  INITIALIZED: true,
  ROLLING_FORWARD: true,
  PAUSED: true,
  SUCCEEDED: true,
  ABORTED: true,
  FAILED: true,
  ROLLING_BACKWARD: true,
  ROLLED_BACK: true,
};
const TERMINAL_UPDATE_STATES = (Object.keys(UPDATE_STATES) as UpdateState[]).filter(isTerminalUpdateState);
/** Rows per multi-row statement: well under SQLite's 32,766 parameters and MySQL's packet limit. */
const ROWS_PER_STATEMENT = 500;
const DEADLOCK_RETRIES = 5;
/** What `job.delete` removes: every table keyed by job id, the job's own row last. */
const JOB_TABLES = [
  "job_labels",
  "tasks",
  "task_events",
  "job_configs",
  "updates",
  "workflow_events",
  "volumes",
  "secret_info",
  "jobs",
] as const;

/**
 * Opens (creating and migrating) a store: `sqlite:/path/file.sqlite`, a bare path, `sqlite::memory:`, or
 * `mysql://user:pass@host:port/db`.
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<KyselyStore> {
  if (url.startsWith("mysql://")) {
    // Migrations run with no statement bound: they wait up to an hour for another process's migration lock,
    // and may rewrite a large table. The store's own statements are bounded.
    const { db, kind } = await openStoreDatabase(url, {
      ...options,
      mysql: { ...options.mysql, untimed: true },
    });
    try {
      await migrateToLatest(db, kind);
    } finally {
      await db.destroy();
    }
    const opened = (await openStoreDatabase(url, options)).db;
    try {
      // Read once: the server's limit is set at its start (a SET GLOBAL applies to new sessions, and is rare).
      const packet = await sql<{ p: number | string }>`select @@max_allowed_packet as p`.execute(opened);
      const rowLimit = options.rowLimit ?? mysqlRowLimit(Number(packet.rows[0].p));
      return new KyselyStore(opened, "mysql", { ...options, rowLimit });
    } catch (err) {
      await opened.destroy();
      throw err;
    }
  }
  const { db, kind } = await openStoreDatabase(url, options);
  let reads: Db | undefined;
  try {
    await migrateToLatest(db, kind);
    // Reads on a connection of their own, which WAL lets read while the writer's transaction is open: on the
    // writer's one connection every read would wait for the group being written. An in-memory database is
    // its connection's own, so its reads share it.
    const path = sqlitePath(url);
    if (path !== ":memory:") reads = await createSqliteKysely<StoreDatabase>(path, options.sqlite);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return new KyselyStore(db, kind, options, reads);
}

/** Opens (creating, for MySQL) the database behind a store URL without migrating it. */
export async function openStoreDatabase(
  url: string,
  options: StoreOptions = {},
): Promise<{ db: Db; kind: DialectKind }> {
  if (url.startsWith("mysql://")) {
    return { db: await createMysqlKysely<StoreDatabase>(url, options.mysql), kind: "mysql" };
  }
  return { db: await createSqliteKysely<StoreDatabase>(sqlitePath(url), options.sqlite), kind: "sqlite" };
}

/** The file (or `:memory:`) a SQLite store URL names: `sqlite:PATH`, `sqlite://PATH` or a bare path. */
export function sqlitePath(url: string): string {
  return url.startsWith("sqlite:") ? url.slice("sqlite:".length).replace(/^\/\//, "") : url;
}

export class KyselyStore implements Store {
  readonly #db: Db;
  /** Where reads go: a SQLite file's second connection, else the writer's (a MySQL pool's are many). */
  readonly #reads: Db;
  readonly #kind: DialectKind;
  readonly #maxGroupWrites: number;
  readonly #fences: () => Fence[];
  readonly #retryForMs: number;
  readonly #claim?: StoreClaim;
  readonly #onLostWrite: (err: Error) => void;
  readonly #rowLimit: RowLimit;
  /**
   * Set while the database is known to be out of reach, or its disk full: the writer's last attempt failed
   * so, and its writes are stalled until that ends. Reads then answer unavailable at once instead of waiting
   * behind the stalled writes.
   */
  #unreachable: StoreUnavailableError | undefined;
  /** Resolved when the database is found out of reach, waking reads that wait for writes. */
  #outage = Promise.withResolvers<void>();
  #probing = false;
  #closed = false;
  /** When the stop began (`stopping` or `close`); writes then wait for a lost database only so long. */
  #stopStartedMs: number | undefined;
  readonly #stopGraceMs: number;
  #queue: { batch: StoreWrite[]; done: Done }[] = [];
  /** This store's prefix of event write keys (16 random hex digits), and the count after it. */
  readonly #writer = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  #events = 0;
  /** Each event write's key, given when it is first written: a commit tried again inserts under the same. */
  readonly #writeKeys = new WeakMap<StoreWrite, string>();
  #draining = false;
  #issued = 0;
  #completed = 0;
  #flushWaiters: { target: number; resolve: () => void }[] = [];
  /**
   * For each key written by a batch not yet completed, the number (in `#issued`) of the last such batch: a
   * read of the key waits for that one (batches complete in order), not for the whole queue.
   */
  readonly #pendingKeys = new Map<ReadKey, number>();
  #closing?: Promise<void>;
  /**
   * Test seam: runs inside `queryJobs`' read snapshot, between its count and its page, so that a test can
   * write there from another connection.
   */
  betweenQueryReads?: () => Promise<void>;

  /** `reads`: a connection to the same database for reads (see `#reads`); by default the writer's. */
  constructor(db: Db, kind: DialectKind, options: StoreOptions = {}, reads: Db = db) {
    this.#db = db;
    this.#reads = reads;
    this.#kind = kind;
    this.#maxGroupWrites = options.maxGroupWrites ?? 20_000;
    this.#fences = options.fences ?? (() => []);
    this.#retryForMs = options.retryForMs ?? 300_000;
    this.#stopGraceMs = options.stopGraceMs ?? 10_000;
    this.#claim = options.claim;
    this.#rowLimit = options.rowLimit ??
      (kind === "mysql" ? mysqlRowLimit(16 * 1024 * 1024) : SQLITE_ROW_LIMIT);
    this.#onLostWrite = options.onLostWrite ?? ((err) => {
      throw new Error(`Store write failed with no done callback: ${err.message}`, { cause: err });
    });
  }

  /** Runs pending schema migrations (openStore already did); returns the names of those it ran. */
  migrate(): Promise<string[]> {
    return migrateToLatest(this.#db, this.#kind);
  }

  write(batch: StoreWrite[], done?: (err?: Error) => void): void {
    if (this.#closing) {
      const err = new Error("Cannot write to the store: it is closed");
      queueMicrotask(() => report(done, err, this.#onLostWrite));
      return;
    }
    // Refused whole before it is queued: a part of it would fail in the database, and always would.
    const tooLarge = this.tooLarge(batch);
    if (tooLarge) {
      queueMicrotask(() => report(done, tooLarge, this.#onLostWrite));
      return;
    }
    for (const w of batch) {
      // A write handed in again (a caller retrying it) keeps its key: it is the same event.
      if ((w.kind === "task.event" || w.kind === "workflow.event") && !this.#writeKeys.has(w)) {
        this.#writeKeys.set(w, `${this.#writer}-${(this.#events++).toString(36)}`);
      }
    }
    this.#queue.push({ batch, done });
    this.#issued++;
    for (const key of writeKeys(batch)) this.#pendingKeys.set(key, this.#issued);
    if (!this.#draining) {
      this.#draining = true;
      // Starting on a microtask lets every batch written in the same turn join the first group.
      queueMicrotask(() => this.#drain());
    }
  }

  tooLarge(batch: readonly StoreWrite[]): StoreWriteTooLargeError | undefined {
    for (const w of batch) {
      const row = writeRowBytes(w, this.#kind);
      if (row && row.bytes > this.#rowLimit.bytes) {
        return new StoreWriteTooLargeError(row.what, row.bytes, this.#rowLimit.bytes, this.#rowLimit.source);
      }
    }
    return undefined;
  }

  /**
   * Why the store is known to be out of reach or its disk full (its writes are stalled, retrying), for a
   * daemon's /health; or undefined.
   */
  unreachable(): string | undefined {
    // No write left to find out that it is back: a probe does, for the next call.
    if (this.#unreachable && this.#completed >= this.#issued && !this.#probing && !this.#closing) {
      this.#probing = true;
      sql`select 1`.execute(this.#db).then(() => this.#markReachable(), () => {})
        .finally(() => this.#probing = false);
    }
    return this.#unreachable?.message;
  }

  /** Resolves once every batch written so far is committed (or failed) and its `done` was called. */
  flush(): Promise<void> {
    return this.#written(this.#issued);
  }

  /** Resolves once the first `target` batches written are committed (or failed) and their `done` called. */
  #written(target: number): Promise<void> {
    if (this.#completed >= target) return Promise.resolve();
    return new Promise((resolve) => this.#flushWaiters.push({ target, resolve }));
  }

  /**
   * A stop has begun: from now on a write waits for a lost database at most `stopGraceMs` from here, not
   * the whole retry time, so a stop's flush ends. Writes are still taken.
   */
  stopping(): void {
    this.#stopStartedMs ??= performance.now();
  }

  close(): Promise<void> {
    this.stopping();
    this.#closing ??= this.flush().then(async () => {
      this.#closed = true;
      try {
        await this.#db.destroy();
      } finally {
        if (this.#reads !== this.#db) await this.#reads.destroy();
      }
    });
    return this.#closing;
  }

  // Reads first wait for the writes issued before them of what they read, so a caller reads its own writes;
  // not for the others, so a read of one job is not held behind a large job's task writes.

  /**
   * Waits for the writes issued so far to any of `keys` (the rows the read may see), as a read must to see
   * them. But while the database is known to be out of reach or its disk full (a pending write's last attempt
   * failed so) it fails at once as unavailable, which a client may retry, rather than waiting behind writes
   * that are stalled until the database is back, or reading from one that cannot answer.
   */
  async #readable(...keys: ReadKey[]): Promise<void> {
    for (;;) {
      let last = 0;
      for (const key of keys) last = Math.max(last, this.#pendingKeys.get(key) ?? 0);
      if (this.#completed >= this.#issued) return;
      if (this.#unreachable) {
        throw new StoreUnavailableError(this.#unreachable.message, { cause: this.#unreachable.cause });
      }
      if (this.#completed >= last) return;
      const outage = this.#outage.promise;
      if (await Promise.race([this.#written(last).then(() => true), outage.then(() => false)])) return;
    }
  }

  #markReachable(): void {
    if (!this.#unreachable) return;
    this.#unreachable = undefined;
    this.#outage = Promise.withResolvers<void>();
  }

  async getJob(jobId: string): Promise<JobRecord | undefined> {
    await this.#readable(ofJob("job", jobId));
    const row = await this.#reads.selectFrom("jobs").selectAll().where("job_id", "=", jobId)
      .executeTakeFirst();
    return row && jobFromRow(row);
  }

  async queryJobs(query: JobQuery): Promise<JobPage> {
    await this.#readable("jobs");
    const clipped =
      (query.labels ?? []).some((l) =>
        clip(l.key, LABEL_KEY_CHARS) !== l.key || clip(l.value, LABEL_VALUE_CHARS) !== l.value
      ) || longOwner(query);
    if (clipped) {
      // Labels longer than the index keeps matched by prefix in SQL, and an owning team that may have been
      // clipped is not matched there; the config has them whole, so the exact matches (and the page of them)
      // are found here, from one read.
      let q = this.#matchingJobs(this.#reads, query).selectAll();
      for (const [term, dir] of jobOrderTerms(query.order ?? [], this.#kind)) q = q.orderBy(term, dir);
      const rows = await q.execute();
      const exact = { labels: query.labels, owner: query.owner };
      return jobPage(rows.map(jobFromRow).filter((j) => jobMatches(j, exact)), query);
    }
    // The count and the page are read from one snapshot, so that a job written meanwhile is in both or
    // in neither: the total never disagrees with the page (a page of 3 with a total of 2).
    return await this.#readSnapshot(async (db) => {
      const q = this.#matchingJobs(db, query);
      const counted = await q.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow();
      const total = Number(counted.n);
      await this.betweenQueryReads?.();
      const offset = query.offset ?? 0;
      // Neither SQLite nor MySQL takes OFFSET without LIMIT.
      const limit = query.limit ?? (offset > 0 ? Number.MAX_SAFE_INTEGER : undefined);
      if (limit === 0 || offset >= total) return { jobs: [], total };
      let page = q.selectAll();
      for (const [term, dir] of jobOrderTerms(query.order ?? [], this.#kind)) page = page.orderBy(term, dir);
      if (limit !== undefined) page = page.limit(limit);
      if (offset > 0) page = page.offset(offset);
      return { jobs: (await page.execute()).map(jobFromRow), total };
    });
  }

  /** The jobs matching a query's filters (labels by their indexed, clipped form), on `db`. */
  #matchingJobs(db: Db, query: JobQuery) {
    let q = db.selectFrom("jobs");
    if (query.states?.length) q = q.where("state", "in", query.states);
    if (query.respoolId !== undefined) q = q.where("respool_id", "=", query.respoolId);
    // Peloton's QuerySpec.owner is the owning team (its job index's "owner" column holds config.owningTeam).
    // An owner as long as the column is matched by its clipped form here and exactly in queryJobs.
    if (query.owner !== undefined) q = q.where("owning_team", "=", clip(query.owner, OWNING_TEAM_CHARS));
    if (query.name !== undefined) {
      // A part of the name in any case; the part's own % and _ are matched as themselves.
      const pattern = `%${query.name.replace(/[!%_]/g, (c) => `!${c}`)}%`;
      q = q.where(sql<boolean>`lower(${sql.ref("jobs.name")}) like lower(${pattern}) escape '!'`);
    }
    for (const { key, value } of query.labels ?? []) {
      q = q.where(({ exists, selectFrom }) =>
        exists(
          selectFrom("job_labels").select("job_labels.job_id")
            .whereRef("job_labels.job_id", "=", "jobs.job_id")
            .where("label_key", "=", clip(key, LABEL_KEY_CHARS))
            .where("label_value", "=", clip(value, LABEL_VALUE_CHARS)),
        )
      );
    }
    return q;
  }

  /**
   * Runs reads that must agree in one read-only transaction on one connection, taking no write lock:
   * MySQL's REPEATABLE READ with its snapshot taken at the start; SQLite's deferred transaction, whose
   * snapshot (WAL) is taken at its first read and kept to its end.
   */
  #readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.#reads.connection().execute(async (db) => {
      if (this.#kind === "mysql") {
        await sql`set transaction isolation level repeatable read`.execute(db);
        await sql`start transaction with consistent snapshot, read only`.execute(db);
      } else await sql`begin deferred`.execute(db);
      try {
        const result = await fn(db);
        await sql`commit`.execute(db);
        return result;
      } catch (err) {
        await sql`rollback`.execute(db).catch(() => {});
        throw err;
      }
    });
  }

  async activeJobs(): Promise<JobRecord[]> {
    await this.#readable("jobs", "tasks");
    // `isActiveJob`: the jobs not ended, and the ended ones with a task that has work left, found through
    // the index of tasks by `has_work` (its entries of 1 alone, the tasks with work), not by reading tasks.
    const jobs = this.#reads.selectFrom("jobs");
    const running = await jobs.selectAll().where("state", "not in", TERMINAL_JOB_STATES).execute();
    const withWork = this.#reads.selectFrom("tasks").select("job_id").where("has_work", "=", 1);
    const revived = await jobs.select("job_id").where("state", "in", TERMINAL_JOB_STATES)
      .where("job_id", "in", withWork).execute();
    const more = [];
    for (const ids of chunks(revived.map((r) => r.job_id))) {
      more.push(...await jobs.selectAll().where("job_id", "in", ids).execute());
    }
    return [...running, ...more].map(jobFromRow).sort(
      compareJobs([{ property: "creation_time", desc: false }]),
    );
  }

  async getTasks(jobId: string): Promise<TaskRecord[]> {
    await this.#readable(ofJob("tasks", jobId));
    const rows = await this.#reads.selectFrom("tasks").select("record").where("job_id", "=", jobId)
      .orderBy("instance_id").execute();
    return rows.map((r) => JSON.parse(r.record));
  }

  async getTask(jobId: string, instanceId: number): Promise<TaskRecord | undefined> {
    await this.#readable(ofJob("tasks", jobId));
    const row = await this.#reads.selectFrom("tasks").select("record").where("job_id", "=", jobId)
      .where("instance_id", "=", instanceId).executeTakeFirst();
    return row && JSON.parse(row.record);
  }

  async getTaskEvents(jobId: string, instanceId: number): Promise<TaskEventRecord[]> {
    await this.#readable(ofJob("taskEvents", jobId));
    const rows = await this.#reads.selectFrom("task_events").selectAll().where("job_id", "=", jobId)
      .where("instance_id", "=", instanceId).orderBy("id").execute();
    return rows.map(eventFromRow);
  }

  async respools(): Promise<RespoolRecord[]> {
    await this.#readable("respools");
    const rows = await this.#reads.selectFrom("respools").selectAll().orderBy("path").execute();
    return rows.map(respoolFromRow);
  }

  async getJobConfig(jobId: string, version: number): Promise<JobConfig | undefined> {
    await this.#readable(ofJob("configs", jobId));
    const row = await this.#reads.selectFrom("job_configs").select("config").where("job_id", "=", jobId)
      .where("version", "=", version).executeTakeFirst();
    return row && JSON.parse(row.config);
  }

  async getUpdate(updateId: string): Promise<UpdateRecord | undefined> {
    await this.#readable("updates");
    const row = await this.#reads.selectFrom("updates").select("record").where("update_id", "=", updateId)
      .executeTakeFirst();
    return row && JSON.parse(row.record);
  }

  /** Newest first, ties by update id descending (as the memory store). */
  async listUpdates(jobId: string): Promise<UpdateRecord[]> {
    await this.#readable(ofJob("updates", jobId));
    const rows = await this.#reads.selectFrom("updates").select("record").where("job_id", "=", jobId)
      .orderBy("creation_time_ms", "desc").orderBy("update_id", "desc").execute();
    return rows.map((r) => JSON.parse(r.record));
  }

  /** Oldest first, ties by update id. */
  async activeUpdates(): Promise<UpdateRecord[]> {
    await this.#readable("updates");
    const rows = await this.#reads.selectFrom("updates").select("record")
      .where("state", "not in", TERMINAL_UPDATE_STATES)
      .orderBy("creation_time_ms", "asc").orderBy("update_id", "asc").execute();
    return rows.map((r) => JSON.parse(r.record));
  }

  /**
   * With a limit, only the newest `limit` events of each instance leave the database (ROW_NUMBER over ids
   * and instances alone, the rows it picks joined back by id). An instance with a run of one state among
   * them has fewer steps than that and is read again whole: a rollback's instance in flight, whose
   * ROLLING_BACKWARD is recorded twice. When more instances are short than one statement takes (a
   * rolled-back workflow read with a limit of 3 or more), the whole workflow is read instead, as without a
   * limit: twenty statements of 500 instances cost MariaDB ten times as much.
   *
   * Collapsing the runs in SQL (LEAD, then numbering what is left) would send only the steps, but two
   * windows cost MariaDB 10.11 about five times the CPU of a plain read of every event, and one about
   * twice. With the whole rows in the window it took twice as long again: MariaDB keeps a window's rows in
   * a temporary table with VARCHAR columns at full width, the two 128-character ids included.
   */
  async getWorkflowEvents(
    jobId: string,
    workflowId: string,
    { instanceId, limit = 0 }: WorkflowEventsQuery = {},
  ): Promise<WorkflowEventRecord[]> {
    await this.#readable(ofJob("workflowEvents", jobId));
    const db = this.#reads;
    const ofWorkflow = db.selectFrom("workflow_events").where("job_id", "=", jobId)
      .where("workflow_id", "=", workflowId)
      .$if(instanceId !== undefined, (q) => q.where("instance_id", "=", instanceId!));
    if (limit === 0) {
      return workflowSteps((await ofWorkflow.selectAll().orderBy("id").execute()).map(workflowEventFromRow));
    }
    const numbered = ofWorkflow.select("id").select((eb) =>
      eb.fn.agg<number>("row_number").over((ob) => ob.partitionBy("instance_id").orderBy("id", "desc"))
        .as("nth_newest")
    );
    const newest = db.selectFrom(numbered.as("n")).select("id").where("nth_newest", "<=", limit);
    let rows = await db.selectFrom("workflow_events as w").innerJoin(newest.as("k"), "k.id", "w.id")
      .selectAll("w").orderBy("w.id").execute();
    const short = fewerSteps(rows, limit);
    if (short.size > ROWS_PER_STATEMENT) rows = await ofWorkflow.selectAll().orderBy("id").execute();
    else if (short.size) {
      const again = await ofWorkflow.selectAll().where("instance_id", "in", [...short]).execute();
      rows = [...rows.filter((r) => !short.has(r.instance_id)), ...again].sort((a, b) => a.id - b.id);
    }
    return workflowSteps(rows.map(workflowEventFromRow), limit);
  }

  /** By instance, ties by volume id. */
  async listVolumes(jobId: string): Promise<VolumeRecord[]> {
    await this.#readable("volumes");
    const rows = await this.#reads.selectFrom("volumes").select("record").where("job_id", "=", jobId)
      .orderBy("instance_id").orderBy("volume_id").execute();
    return rows.map((r) => JSON.parse(r.record));
  }

  /**
   * By path, then secret id, by code point as the in-memory stores order them: sorted here, since MySQL
   * orders strings by their first max_sort_length (1,024) bytes only, and with its utf8mb4_bin collation
   * ties "a" with "a ". A job has few secrets.
   */
  async getSecrets(jobId: string): Promise<SecretRecord[]> {
    await this.#readable(ofJob("secrets", jobId));
    const rows = await this.#reads.selectFrom("secret_info").selectAll().where("job_id", "=", jobId)
      .execute();
    return rows.map(secretFromRow).sort((a, b) =>
      byCodePoint(a.path, b.path) || byCodePoint(a.secretId, b.secretId)
    );
  }

  async getVolume(volumeId: string): Promise<VolumeRecord | undefined> {
    await this.#readable("volumes");
    const row = await this.#reads.selectFrom("volumes").select("record").where("volume_id", "=", volumeId)
      .executeTakeFirst();
    return row && JSON.parse(row.record);
  }

  async hostMaintenance(): Promise<HostMaintenanceRecord[]> {
    await this.#readable("maintenance");
    const rows = await this.#reads.selectFrom("host_maintenance").selectAll().orderBy("hostname").execute();
    return rows.map(maintenanceFromRow);
  }

  /** Both lists from one snapshot, so that a pool deleted with its hosts moved is never half read. */
  async hostPools(): Promise<StoredHostPools> {
    await this.#readable("hostPools");
    return await this.#readSnapshot(async (db) => ({
      pools: (await db.selectFrom("host_pools").selectAll().orderBy("name").execute()).map(hostPoolFromRow),
      assignments: (await db.selectFrom("host_pool_assignments").selectAll().orderBy("hostname").execute())
        .map(hostPoolAssignmentFromRow),
    }));
  }

  async adminLocks(): Promise<AdminLockRecord[]> {
    await this.#readable("adminLocks");
    const rows = await this.#reads.selectFrom("admin_locks").selectAll().orderBy("component").execute();
    return rows.map(adminLockFromRow);
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const group = this.#takeGroup();
        // Empty batches (a caller waiting for the writes before it) have nothing to commit: done in order.
        const results = group.every((p) => p.batch.length === 0)
          ? group.map(() => undefined)
          : await this.#commitRetrying(group.map((p) => p.batch));
        this.#completed += group.length;
        for (const [key, last] of this.#pendingKeys) {
          if (last <= this.#completed) this.#pendingKeys.delete(key);
        }
        group.forEach((p, i) => report(p.done, results[i], this.#onLostWrite));
        this.#wakeFlushWaiters();
      }
    } finally {
      this.#draining = false;
    }
  }

  #takeGroup(): { batch: StoreWrite[]; done: Done }[] {
    let n = 0;
    let writes = 0;
    while (
      n < this.#queue.length && (n === 0 || writes + this.#queue[n].batch.length <= this.#maxGroupWrites)
    ) {
      writes += this.#queue[n++].batch.length;
    }
    return this.#queue.splice(0, n);
  }

  /**
   * Commits a group, waiting out a lost database (a restart, a dropped connection) or a full disk (until the
   * operator frees space): the pipeline stalls and keeps its order instead of failing writes the daemons have
   * already acted on. A retry after a connection lost mid-commit may find the group already applied; those
   * writes are not stale.
   */
  async #commitRetrying(batches: StoreWrite[][]): Promise<(Error | undefined)[]> {
    const deadline = performance.now() + this.#retryForMs;
    let delay = 50, ambiguous = false;
    for (;;) {
      try {
        const results = await this.#commitGroup(batches, ambiguous);
        this.#markReachable();
        return results;
      } catch (err) {
        if (isUnreachable(err) || isDiskFull(err)) {
          // The latest reason: a database back up may have come back with its disk full.
          const first = !this.#unreachable;
          this.#unreachable = asUnavailable(err) as StoreUnavailableError;
          if (first) this.#outage.resolve();
        }
        // A stop waits a little for the database, not the whole retry time.
        const until = this.#stopStartedMs === undefined
          ? deadline
          : Math.min(deadline, this.#stopStartedMs + this.#stopGraceMs);
        // A write given up on for a store out of reach says so (its caller answers unavailable).
        if (this.#closed || performance.now() + delay > until) {
          return batches.map(() => asError(asUnavailable(err)));
        }
        if (!ambiguous) {
          console.error(
            isDiskFull(err)
              ? `Store writes stalled, retrying them: ${asError(asUnavailable(err)).message}`
              : `Store unreachable, retrying writes: ${describeCause(err)}`,
          );
        }
        ambiguous = true;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(2_000, delay * 2);
      }
    }
  }

  /**
   * Commits a group in one transaction. Every batch's version check runs before anything is written, so a
   * stale batch is simply left out and the others' writes go in as one ordered stream, which turns runs of
   * task puts from many batches into multi-row statements. Only if a statement fails (a constraint, say)
   * is the group redone with a savepoint per batch, so that the failing batch alone rolls back.
   */
  async #commitGroup(batches: StoreWrite[][], ambiguous: boolean): Promise<(Error | undefined)[]> {
    try {
      return await this.#transaction(async (trx) => {
        const stored = await this.#readStored(trx, batches.flat());
        // Puts and deletes apply again to the same rows; events already there are kept out by their keys.
        if (ambiguous) forgiveApplied(stored, batches.flat());
        const results = batches.map((batch) => checkAndAccept(batch, stored));
        const accepted = batches.filter((_, i) => !results[i]).flat();
        await this.#applyWrites(trx, accepted, stored.labels);
        // Last, so the lease rows stay locked only for the commit: renewals do not queue behind writes.
        await checkFences(trx, this.#kind, this.#fences());
        await this.#claim?.check(trx);
        return results;
      });
    } catch (err) {
      if (isTransient(err)) throw err;
      if (batches.length === 1 || err instanceof FencedError || err instanceof StoreClaimLostError) {
        return batches.map(() => asError(err));
      }
    }
    try {
      return await this.#transaction(async (trx) => {
        const results: (Error | undefined)[] = [];
        for (const batch of batches) {
          await sql`savepoint batch`.execute(trx);
          try {
            const stored = await this.#readStored(trx, batch);
            const stale = checkAndAccept(batch, stored);
            if (!stale) await this.#applyWrites(trx, batch, stored.labels);
            results.push(stale);
          } catch (err) {
            if (isTransient(err)) throw err;
            await rollbackToSavepoint(trx, err);
            results.push(asError(err));
          }
          await sql`release savepoint batch`.execute(trx);
        }
        await checkFences(trx, this.#kind, this.#fences());
        await this.#claim?.check(trx);
        return results;
      });
    } catch (err) {
      if (isTransient(err)) throw err;
      return batches.map(() => asError(err));
    }
  }

  /**
   * Runs `fn` in a transaction, again if MySQL picked it as a deadlock victim (concurrent writers' gap
   * locks on rows not yet there): the server rolled it all back, and `fn` reads what it checks afresh.
   */
  async #transaction<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
    for (let attempt = 1;; attempt++) {
      const trx = await this.#db.startTransaction().execute();
      try {
        const result = await fn(trx);
        await trx.commit().execute();
        return result;
      } catch (err) {
        await trx.rollback().execute().catch(() => {});
        if ((err as { code?: string }).code !== "ER_LOCK_DEADLOCK" || attempt >= DEADLOCK_RETRIES) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, attempt * 10));
    }
  }

  /**
   * Writes a group's accepted writes in effect as if one by one, in far fewer statements: task puts and
   * events, nearly all of a group, and workflow events are held back and go out as multi-row statements,
   * each task's last put alone (the row ends the same; a task often changes state several times in one
   * group). They are written before any write that removes tasks or events (job.delete, task.delete,
   * task.events.delete, workflow.events.delete); no other kind of write touches their tables, so they may
   * follow those.
   */
  async #applyWrites(trx: Trx, writes: StoreWrite[], labels: Map<string, string>): Promise<void> {
    let puts = new Map<string, TaskRecord>();
    let events: Omit<Selectable<TaskEventsTable>, "id">[] = [];
    let workflowEvents: Omit<Selectable<WorkflowEventsTable>, "id">[] = [];
    const writeHeld = async () => {
      if (puts.size) await this.#putTasks(trx, [...puts.values()]);
      for (const chunk of chunks(events)) await this.#insertOnce(trx.insertInto("task_events").values(chunk));
      for (const chunk of chunks(workflowEvents)) {
        await this.#insertOnce(trx.insertInto("workflow_events").values(chunk));
      }
      puts = new Map();
      events = [];
      workflowEvents = [];
    };
    for (const w of writes) {
      if (w.kind === "task.put") {
        const key = `${w.task.jobId}\n${w.task.instanceId}`;
        puts.delete(key);
        puts.set(key, w.task);
      } else if (w.kind === "task.event") events.push(eventRow(w.event, this.#writeKeys.get(w) ?? null));
      else if (w.kind === "workflow.event") {
        workflowEvents.push(workflowEventRow(w.event, this.#writeKeys.get(w) ?? null));
      } else {
        if (
          w.kind === "job.delete" || w.kind === "task.delete" || w.kind === "task.events.delete" ||
          w.kind === "workflow.events.delete"
        ) {
          await writeHeld();
        }
        await this.#applyOne(trx, w, labels);
      }
    }
    await writeHeld();
  }

  async #applyOne(
    trx: Trx,
    w: Exclude<StoreWrite, TaskPut | TaskEvent | WorkflowEvent>,
    labels: Map<string, string>,
  ): Promise<void> {
    switch (w.kind) {
      case "job.put":
        return await this.#putJob(trx, w.job, labels);
      case "job.delete":
        for (const table of JOB_TABLES) await trx.deleteFrom(table).where("job_id", "=", w.jobId).execute();
        labels.delete(w.jobId);
        return;
      case "job.config":
        return await this.#putJobConfig(trx, w.jobId, w.version, w.config);
      case "task.delete":
        await trx.deleteFrom("tasks").where("job_id", "=", w.jobId).where("instance_id", "=", w.instanceId)
          .execute();
        return;
      case "task.events.delete":
        await trx.deleteFrom("task_events").where("job_id", "=", w.jobId)
          .where("instance_id", "=", w.instanceId).where("run_id", "<=", w.runId).execute();
        return;
      case "respool.put":
        return await this.#putRespool(trx, w.pool);
      case "respool.delete":
        await trx.deleteFrom("respools").where("id", "=", w.id).execute();
        return;
      case "update.put":
        return await this.#upsert(trx, "updates", [updateRow(w.update)], ["update_id"]);
      case "workflow.events.delete":
        await trx.deleteFrom("workflow_events").where("job_id", "=", w.jobId)
          .where("workflow_id", "=", w.workflowId).execute();
        return;
      case "secret.put":
        return await this.#upsert(trx, "secret_info", [secretRow(w.secret)], ["job_id", "secret_id"]);
      case "volume.put":
        return await this.#upsert(trx, "volumes", [volumeRow(w.volume)], ["volume_id"]);
      case "volume.delete":
        await trx.deleteFrom("volumes").where("volume_id", "=", w.volumeId).execute();
        return;
      case "maintenance.put":
        return await this.#upsert(trx, "host_maintenance", [maintenanceRow(w.maintenance)], ["hostname"]);
      case "maintenance.delete":
        await trx.deleteFrom("host_maintenance").where("hostname", "=", w.hostname).execute();
        return;
      case "hostpool.put":
        return await this.#upsert(trx, "host_pools", [hostPoolRow(w.pool)], ["name"]);
      case "hostpool.delete":
        await trx.deleteFrom("host_pools").where("name", "=", w.name).execute();
        return;
      case "hostpool.assign":
        return await this.#upsert(trx, "host_pool_assignments", [hostPoolAssignmentRow(w.assignment)], [
          "hostname",
        ]);
      case "admin.lock":
        return await this.#upsert(trx, "admin_locks", [adminLockRow(w.lock)], ["component"]);
      case "admin.unlock":
        await trx.deleteFrom("admin_locks").where("component", "=", w.component).execute();
        return;
      default:
        throw new Error(`Cannot write ${(w satisfies never as StoreWrite).kind}: unknown kind of write`);
    }
  }

  /**
   * The stored versions of every job, task and update the writes put, and the jobs' labels; MySQL locks
   * these rows until commit so no other writer slips in between check and write (SQLite's BEGIN IMMEDIATE
   * already did).
   */
  async #readStored(trx: Trx, writes: StoreWrite[]): Promise<Stored> {
    const jobIds = new Set<string>();
    const taskKeys: [string, number][] = [];
    const seenTasks = new Set<string>();
    const updateIds = new Set<string>();
    for (const w of writes) {
      if (w.kind === "job.put") jobIds.add(w.job.jobId);
      else if (w.kind === "task.put") {
        const key = `${w.task.jobId}\n${w.task.instanceId}`;
        if (seenTasks.has(key)) continue;
        seenTasks.add(key);
        taskKeys.push([w.task.jobId, w.task.instanceId]);
      } else if (w.kind === "update.put") updateIds.add(w.update.updateId);
    }
    const stored: Stored = { jobs: new Map(), tasks: new Map(), updates: new Map(), labels: new Map() };
    const lock = this.#kind === "mysql";
    for (const ids of chunks([...jobIds])) {
      const rows = await trx.selectFrom("jobs").select(["job_id", "version", "labels"])
        .where("job_id", "in", ids).$if(lock, (q) => q.forUpdate()).execute();
      for (const r of rows) {
        stored.jobs.set(r.job_id, r.version);
        stored.labels.set(r.job_id, r.labels);
      }
    }
    for (const keys of chunks(taskKeys)) {
      const byJob = Map.groupBy(keys, ([jobId]) => jobId);
      const rows = await trx.selectFrom("tasks").select(["job_id", "instance_id", "version"])
        .where((eb) =>
          eb.or(
            [...byJob].map(([jobId, ks]) =>
              eb.and([eb("job_id", "=", jobId), eb("instance_id", "in", ks.map(([, i]) => i))])
            ),
          )
        ).$if(lock, (q) => q.forUpdate()).execute();
      for (const r of rows) {
        let versions = stored.tasks.get(r.job_id);
        if (!versions) stored.tasks.set(r.job_id, versions = new Map());
        versions.set(r.instance_id, r.version);
      }
    }
    for (const ids of chunks([...updateIds])) {
      const rows = await trx.selectFrom("updates").select(["update_id", "job_id", "version"])
        .where("update_id", "in", ids).$if(lock, (q) => q.forUpdate()).execute();
      for (const r of rows) stored.updates.set(r.update_id, { version: r.version, jobId: r.job_id });
    }
    return stored;
  }

  /** `labels` holds each job's stored labels JSON; `job_labels` is rewritten only when they change. */
  async #putJob(trx: Trx, job: JobRecord, labels: Map<string, string>): Promise<void> {
    const row = jobRow(job);
    await this.#upsert(trx, "jobs", [row], ["job_id"]);
    const before = labels.get(job.jobId);
    labels.set(job.jobId, row.labels);
    if (before === row.labels) return;
    if (before !== undefined) await trx.deleteFrom("job_labels").where("job_id", "=", job.jobId).execute();
    for (const rows of chunks(labelRows(job))) await trx.insertInto("job_labels").values(rows).execute();
  }

  /** Config versions are immutable: a version already stored keeps its config. */
  async #putJobConfig(trx: Trx, jobId: string, version: number, config: JobConfig): Promise<void> {
    const insert = trx.insertInto("job_configs").values({
      job_id: jobId,
      version,
      config: JSON.stringify(config),
    });
    // Not INSERT IGNORE, which would also turn errors such as an over-long key into warnings.
    if (this.#kind === "mysql") await insert.onDuplicateKeyUpdate({ job_id: sql.ref("job_id") }).execute();
    else await insert.onConflict((oc) => oc.columns(["job_id", "version"]).doNothing()).execute();
  }

  async #putTasks(trx: Trx, tasks: TaskRecord[]): Promise<void> {
    for (const chunk of chunks(tasks.map(taskRow))) {
      await this.#upsert(trx, "tasks", chunk, ["job_id", "instance_id"]);
    }
  }

  /** Inserts event rows, leaving out any whose write key is already there (the same write, stored before). */
  async #insertOnce<T extends "task_events" | "workflow_events">(
    insert: InsertQueryBuilder<StoreDatabase, T, InsertResult>,
  ): Promise<void> {
    await (this.#kind === "mysql"
      // A no-op update: the only other unique key is the generated id, which an insert never repeats.
      ? insert.onDuplicateKeyUpdate((eb) => ({ write_key: eb.ref("write_key") } as never))
      : insert.onConflict((oc) => oc.column("write_key").doNothing())).execute();
  }

  /**
   * Respools have a second unique key (path), and MySQL's ON DUPLICATE KEY UPDATE fires on any unique key:
   * a new pool reusing a path would overwrite the other pool instead of failing. So update, else insert.
   */
  async #putRespool(trx: Trx, pool: RespoolRecord): Promise<void> {
    const { id: _, ...values } = respoolRow(pool);
    const exists = await trx.selectFrom("respools").select("id").where("id", "=", pool.id).executeTakeFirst();
    if (exists) await trx.updateTable("respools").set(values).where("id", "=", pool.id).execute();
    else await trx.insertInto("respools").values(respoolRow(pool)).execute();
  }

  /** Insert-or-replace by primary key; the caller has already applied the version rule. */
  async #upsert(
    trx: Trx,
    table:
      | "jobs"
      | "tasks"
      | "updates"
      | "volumes"
      | "host_maintenance"
      | "host_pools"
      | "host_pool_assignments"
      | "admin_locks"
      | "secret_info",
    rows: Record<string, unknown>[],
    keys: string[],
  ): Promise<void> {
    const columns = Object.keys(rows[0]).filter((c) => !keys.includes(c));
    // deno-lint-ignore no-explicit-any
    const insert = (trx as unknown as Kysely<any>).insertInto(table as string).values(rows);
    if (this.#kind === "mysql") {
      const set = Object.fromEntries(columns.map((c) => [c, sql`values(${sql.ref(c)})`]));
      await insert.onDuplicateKeyUpdate(set).execute();
    } else {
      const set = Object.fromEntries(columns.map((c) => [c, sql.ref(`excluded.${c}`)]));
      await insert.onConflict((oc) => oc.columns(keys).doUpdateSet(set)).execute();
    }
  }

  #wakeFlushWaiters(): void {
    if (this.#flushWaiters.length === 0) return;
    const ready = this.#flushWaiters.filter((w) => w.target <= this.#completed);
    this.#flushWaiters = this.#flushWaiters.filter((w) => w.target > this.#completed);
    for (const w of ready) w.resolve();
  }
}

/**
 * A job query's order as SQL ORDER BY terms, the same as `compareJobs`: its keys, then job id in the
 * direction of the last. A NULL completion time (none yet) sorts after the others ascending, before them
 * descending. Names and owning teams go by their bytes, which is by code point (on MySQL through a binary
 * cast: its utf8mb4_bin collation pads with spaces, tying "a" with "a "); state by its number, the column
 * holding its name.
 */
function jobOrderTerms(
  order: readonly JobOrder[],
  kind: DialectKind,
): [RawBuilder<unknown>, "asc" | "desc"][] {
  const keys = order.length ? order : DEFAULT_JOB_ORDER;
  const column = (name: string) => sql`${sql.ref(name)}`;
  const bytes = (name: string) => kind === "mysql" ? sql`cast(${sql.ref(name)} as binary)` : column(name);
  const terms = keys.flatMap(({ property, desc }): [RawBuilder<unknown>, "asc" | "desc"][] => {
    const dir = desc ? "desc" : "asc";
    switch (property) {
      case "creation_time":
        return [[column("creation_time_ms"), dir]];
      case "completion_time":
        return [[sql`${sql.ref("completion_time_ms")} is null`, dir], [column("completion_time_ms"), dir]];
      case "name":
        return [[bytes("name"), dir]];
      case "owner":
        return [[bytes("owning_team"), dir]];
      case "state":
        return [[STATE_NUMBER, dir]];
    }
  });
  return [...terms, [column("job_id"), keys[keys.length - 1].desc ? "desc" : "asc"]];
}

/** The jobs table's state name as Peloton's job state number. */
const STATE_NUMBER = sql`case ${sql.ref("state")} ${
  sql.join(
    Object.entries(JOB_STATES).map(([name, n]) => sql`when ${sql.lit(name)} then ${sql.lit(n)}`),
    sql` `,
  )
} end`;

/**
 * An owner as long as the owning_team column: a job stored before owning teams were limited may have its
 * team clipped to that width there, so the column cannot tell such an owner from a longer team.
 */
function longOwner(query: JobQuery): boolean {
  return query.owner !== undefined && query.owner.length >= OWNING_TEAM_CHARS;
}

/** What the database holds for the keys a group writes; versions advance as batches are accepted. */
interface Stored {
  jobs: Map<string, number>;
  tasks: Map<string, Map<number, number>>;
  updates: Map<string, { version: number; jobId: string }>;
  labels: Map<string, string>;
}

/**
 * Checks a batch against the versions stored and accepted so far; if it is not stale, records its writes
 * as accepted. `stored` covers every key of the group, so a key missing from it is not in the database.
 */
function checkAndAccept(batch: StoreWrite[], stored: Stored): StaleWriteError | undefined {
  const stale = findStaleWrite(batch, {
    job: (id) => stored.jobs.get(id),
    task: (id, i) => stored.tasks.get(id)?.get(i),
    update: (id) => stored.updates.get(id),
  });
  if (stale) return stale;
  for (const w of batch) {
    if (w.kind === "job.put") stored.jobs.set(w.job.jobId, w.job.runtime.version);
    else if (w.kind === "job.delete") {
      stored.jobs.delete(w.jobId);
      stored.tasks.delete(w.jobId);
      for (const [id, u] of stored.updates) if (u.jobId === w.jobId) stored.updates.delete(id);
    } else if (w.kind === "task.put") {
      let versions = stored.tasks.get(w.task.jobId);
      if (!versions) stored.tasks.set(w.task.jobId, versions = new Map());
      versions.set(w.task.instanceId, w.task.version);
    } else if (w.kind === "task.delete") stored.tasks.get(w.jobId)?.delete(w.instanceId);
    else if (w.kind === "update.put") {
      stored.updates.set(w.update.updateId, { version: w.update.version, jobId: w.update.jobId });
    }
  }
  return undefined;
}

/**
 * After a connection lost mid-commit the group may be in the database already: a key whose stored
 * version is the last one the group writes is taken as stored before the group, so the writes apply
 * again (the same rows) instead of failing as stale.
 */
function forgiveApplied(stored: Stored, writes: StoreWrite[]): void {
  const first = new Map<string, number>(), last = new Map<string, number>();
  const note = (key: string, v: number) => {
    if (!first.has(key)) first.set(key, v);
    last.set(key, v);
  };
  for (const w of writes) {
    if (w.kind === "job.put") note(`j ${w.job.jobId}`, w.job.runtime.version);
    else if (w.kind === "task.put") note(`t ${w.task.jobId} ${w.task.instanceId}`, w.task.version);
    else if (w.kind === "update.put") note(`u ${w.update.updateId}`, w.update.version);
  }
  for (const [key, v] of last) {
    const before = first.get(key)! - 1;
    const [kind, id, instance] = key.split(" ");
    if (kind === "j" && stored.jobs.get(id) === v) stored.jobs.set(id, before);
    else if (kind === "t" && stored.tasks.get(id)?.get(Number(instance)) === v) {
      stored.tasks.get(id)!.set(Number(instance), before);
    } else if (kind === "u" && stored.updates.get(id)?.version === v) {
      stored.updates.get(id)!.version = before;
    }
  }
}

/** What went wrong underneath a `StoreUnavailableError`, which only says the store cannot be reached. */
function describeCause(err: unknown): string {
  const cause = err instanceof StoreUnavailableError && err.cause instanceof Error ? err.cause : asError(err);
  return cause.message || String(cause);
}

/** If this fails, the server dropped the whole transaction (deadlock, lost connection): the group fails. */
async function rollbackToSavepoint(trx: Trx, cause: unknown): Promise<void> {
  try {
    await sql`rollback to savepoint batch`.execute(trx);
  } catch {
    throw cause;
  }
}

/** Tells `done` how a batch ended; a failed batch without one is a lost write. */
function report(done: Done, err: Error | undefined, lost: (err: Error) => void): void {
  try {
    if (done) done(err);
    else if (err) lost(err);
  } catch (thrown) {
    // A throwing callback must not stop the writer loop; rethrown outside it, it still fails loudly.
    queueMicrotask(() => {
      throw thrown;
    });
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The instances whose newest `limit` events, oldest first in `rows`, hold fewer than `limit` steps (runs of
 * one state): their older events may hold more.
 */
function fewerSteps(rows: Selectable<WorkflowEventsTable>[], limit: number): Set<number> {
  const seen = new Map<number, { rows: number; steps: number; state: string }>();
  for (const r of rows) {
    const s = seen.get(r.instance_id);
    if (!s) seen.set(r.instance_id, { rows: 1, steps: 1, state: r.state });
    else {
      s.rows++;
      if (s.state !== r.state) [s.steps, s.state] = [s.steps + 1, r.state];
    }
  }
  return new Set([...seen].filter(([, s]) => s.rows === limit && s.steps < limit).map(([i]) => i));
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += ROWS_PER_STATEMENT) yield items.slice(i, i + ROWS_PER_STATEMENT);
}
