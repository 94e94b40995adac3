/** Kysely over Deno's built-in `node:sqlite`: a better-sqlite3-shaped adapter, WAL mode and a busy timeout. */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
} from "kysely";

export interface SqliteOptions {
  /**
   * How long a statement waits, in all, for another connection's lock before it fails with SQLITE_BUSY.
   * The wait is between attempts, on timers, never inside SQLite (see `WaitingSqliteConnection`).
   */
  busyTimeoutMs?: number;
  /** FULL syncs the WAL on every commit (durable across power loss); NORMAL only at checkpoints. */
  synchronous?: "FULL" | "NORMAL";
}

/** Prepared statements kept per connection; Kysely re-sends the same SQL text for the same query shape. */
const STATEMENT_CACHE_SIZE = 256;

/** Opens a SQLite file (or `:memory:`) configured for one writer and concurrent readers. */
export function openSqliteDatabase(path: string, options: SqliteOptions = {}): NodeSqliteDatabase {
  const db = new DatabaseSync(path);
  const busyTimeoutMs = Math.trunc(options.busyTimeoutMs ?? 10_000);
  try {
    // No busy handler: it would wait inside a synchronous call, blocking the event loop (see
    // `WaitingSqliteConnection`); a busy statement fails at once and is tried again after a pause.
    db.exec("PRAGMA busy_timeout = 0");
    useWal(db, busyTimeoutMs);
    db.exec(`PRAGMA synchronous = ${options.synchronous ?? "FULL"}`);
  } catch (err) {
    db.close();
    throw new Error(`Cannot open SQLite database ${path}: ${(err as Error).message}`, { cause: err });
  }
  return new NodeSqliteDatabase(db, busyTimeoutMs);
}

/**
 * Puts the file in WAL mode (it stays so: later opens find it set). Switching takes the file's exclusive
 * lock, which another process opening or using the same file may hold (and when two processes switch a new
 * file at once, SQLite tells one "database is locked" rather than deadlock). So the switch is tried again,
 * with short pauses, until the busy timeout has passed.
 */
function useWal(db: DatabaseSync, busyTimeoutMs: number): void {
  const deadline = performance.now() + busyTimeoutMs;
  for (let pauseMs = 5;; pauseMs = Math.min(pauseMs * 2, 200)) {
    let mode: string | undefined;
    try {
      mode = (db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode?: string } | undefined)
        ?.journal_mode;
    } catch (err) {
      if (!/locked|busy/i.test((err as Error).message) || performance.now() >= deadline) throw err;
    }
    // An in-memory database keeps its journal in memory.
    if (mode === "wal" || mode === "memory") return;
    if (mode !== undefined && performance.now() >= deadline) {
      throw new Error(`cannot switch the journal to WAL: it stays ${mode}`);
    }
    // Opening is synchronous (Kysely's SQLite driver wants the database at once): a pause without a timer.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs);
  }
}

/** A Kysely over a SQLite file; `destroy()` closes the database. */
export function createSqliteKysely<DB>(path: string, options: SqliteOptions = {}): Kysely<DB> {
  return new Kysely<DB>({ dialect: new NodeSqliteDialect({ database: openSqliteDatabase(path, options) }) });
}

/** The slice of better-sqlite3's `Database` that Kysely's SQLite driver calls. */
export class NodeSqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, NodeSqliteStatement>();

  /** `busyTimeoutMs`: how long `WaitingSqliteConnection` tries a statement that finds the file locked. */
  constructor(db: DatabaseSync, readonly busyTimeoutMs = 10_000) {
    this.#db = db;
  }

  prepare(sqlText: string): NodeSqliteStatement {
    const cached = this.#statements.get(sqlText);
    if (cached) {
      // Re-inserting keeps the Map in least-recently-used order, so eviction drops the coldest.
      this.#statements.delete(sqlText);
      this.#statements.set(sqlText, cached);
      return cached;
    }
    const statement = new NodeSqliteStatement(this.#db.prepare(sqlText));
    if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
      this.#statements.delete(this.#statements.keys().next().value!);
    }
    this.#statements.set(sqlText, statement);
    return statement;
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}

/** The slice of better-sqlite3's `Statement` that Kysely's SQLite driver calls. */
export class NodeSqliteStatement {
  /** Whether the statement returns rows (SELECT, PRAGMA, ... RETURNING); Kysely then calls `all`. */
  readonly reader: boolean;
  readonly #stmt: StatementSync;

  constructor(stmt: StatementSync) {
    this.#stmt = stmt;
    this.reader = stmt.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#stmt.all(...bind(parameters));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    const { changes, lastInsertRowid } = this.#stmt.run(...bind(parameters));
    return { changes, lastInsertRowid };
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#stmt.iterate(...bind(parameters)) as IterableIterator<unknown>;
  }
}

/** node:sqlite binds only numbers, bigints, strings, bytes and null. */
function bind(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((p) => {
    if (p === undefined || p === null) return null;
    if (typeof p === "boolean") return p ? 1 : 0;
    if (p instanceof Date) return p.toISOString();
    return p as SQLInputValue;
  });
}

/**
 * Kysely's SQLite dialect with three changes. Transactions begin IMMEDIATE: a deferred transaction that
 * reads and then writes fails at once with SQLITE_BUSY when another process wrote in between, while
 * IMMEDIATE takes the write lock up front, so writers queue for it. Statements that find the file locked
 * wait on timers (`WaitingSqliteConnection`). And it declares SQLite's transactional DDL, so the migrator
 * runs inside such a transaction, which serializes migrating processes.
 */
export class NodeSqliteDialect extends SqliteDialect {
  readonly #database: NodeSqliteDatabase;

  constructor(config: { database: NodeSqliteDatabase }) {
    super(config);
    this.#database = config.database;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#database);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  readonly #connection: WaitingSqliteConnection;

  constructor(database: NodeSqliteDatabase) {
    super({ database });
    this.#connection = new WaitingSqliteConnection(database);
  }

  override acquireConnection(): Promise<DatabaseConnection> {
    return Promise.resolve(this.#connection);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** Longest pause between two tries of a statement that found the file locked. */
const MAX_BUSY_PAUSE_MS = 20;

/**
 * Kysely's SQLite connection, except that a statement finding the file locked (SQLITE_BUSY) is tried again
 * after a pause on a timer, for up to the database's busy timeout, instead of waiting in SQLite's busy
 * handler. node:sqlite is synchronous, so a busy handler's wait blocks the whole event loop: lease
 * renewals, their watchdogs, HTTP and every other store of the process stop. Worse, a daemon opens the
 * file twice (its store and its cluster tables): when one connection's transaction is between two
 * statements and the other's BEGIN IMMEDIATE waits in the handler, the transaction holding the lock cannot
 * go on until the wait gives up, so the process stood still for the whole busy timeout. A statement that
 * failed with SQLITE_BUSY did nothing (statements are atomic, a failed BEGIN begins nothing), so trying it
 * again is safe.
 */
export class WaitingSqliteConnection implements DatabaseConnection {
  constructor(readonly db: NodeSqliteDatabase) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const deadline = performance.now() + this.db.busyTimeoutMs;
    for (let pauseMs = 1;; pauseMs = Math.min(pauseMs * 2, MAX_BUSY_PAUSE_MS)) {
      try {
        return runQuery<R>(this.db, compiledQuery);
      } catch (err) {
        if (!isBusy(err) || performance.now() + pauseMs > deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) {
      throw new Error("Sqlite driver only supports streaming of select queries");
    }
    for (const row of this.db.prepare(compiledQuery.sql).iterate(compiledQuery.parameters)) {
      yield { rows: [row as R] };
    }
  }
}

function runQuery<R>(db: NodeSqliteDatabase, { sql, parameters }: CompiledQuery): QueryResult<R> {
  const stmt = db.prepare(sql);
  if (stmt.reader) return { rows: stmt.all(parameters) as R[] };
  const { changes, lastInsertRowid } = stmt.run(parameters);
  return {
    insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
    numAffectedRows: changes != null ? BigInt(changes) : undefined,
    rows: [],
  };
}

/**
 * SQLITE_BUSY (5) and its extended codes, except SQLITE_BUSY_SNAPSHOT (517): a read transaction whose
 * snapshot is stale cannot become a writer however long it waits.
 */
export function isBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown })?.errcode;
  if (typeof code === "number") return (code & 0xff) === 5 && code !== 517;
  return /database is locked/.test((err as Error)?.message ?? "");
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}
