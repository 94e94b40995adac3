/** Kysely over Deno's built-in `node:sqlite`: a better-sqlite3-shaped adapter, WAL mode and a busy timeout. */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from "kysely";

export interface SqliteOptions {
  /** How long a writer waits for another process's lock before SQLITE_BUSY. */
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
    // The busy timeout first, so that switching to WAL waits for another process opening the same file.
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    useWal(db, busyTimeoutMs);
    db.exec(`PRAGMA synchronous = ${options.synchronous ?? "FULL"}`);
  } catch (err) {
    db.close();
    throw new Error(`Cannot open SQLite database ${path}: ${(err as Error).message}`, { cause: err });
  }
  return new NodeSqliteDatabase(db);
}

/**
 * Puts the file in WAL mode (it stays so: later opens find it set). Switching takes the file's exclusive
 * lock; when two processes switch a new file at once, each holding a shared lock and wanting the other's
 * gone, SQLite tells one "database is locked" at once rather than deadlock, without its busy handler. So
 * the switch is tried again, with short pauses, until the busy timeout has passed.
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

  constructor(db: DatabaseSync) {
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
 * Kysely's SQLite dialect with two changes. Transactions begin IMMEDIATE: a deferred transaction that reads
 * and then writes fails at once with SQLITE_BUSY when another process wrote in between, while IMMEDIATE
 * takes the write lock up front and lets the busy timeout queue writers. And it declares SQLite's
 * transactional DDL, so the migrator runs inside such a transaction, which serializes migrating processes.
 */
export class NodeSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}
