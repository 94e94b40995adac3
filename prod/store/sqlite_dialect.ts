/**
 * Kysely over Deno's built-in `node:sqlite`, run on a thread of its own: WAL mode, a busy timeout waited on
 * timers, and a better-sqlite3-shaped adapter.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { Worker as NodeWorker } from "node:worker_threads";
import { unavailableOnTransient } from "./transient.ts";
import { guardSqliteFiles } from "./sqlite_files.ts";
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  Kysely,
  type QueryCompiler,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
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

/** Opens a SQLite file (or `:memory:`) configured for one writer and concurrent readers; files are 0600. */
export function openSqliteDatabase(path: string, options: SqliteOptions = {}): NodeSqliteDatabase {
  // Owner-only before SQLite makes the file: the store holds jobs' secrets.
  guardSqliteFiles(path);
  const db = new DatabaseSync(path);
  const busyTimeoutMs = Math.trunc(options.busyTimeoutMs ?? 10_000);
  try {
    // No busy handler: it would wait inside a synchronous call, blocking the event loop (see
    // `WaitingSqliteConnection`); a busy statement fails at once and is tried again after a pause.
    db.exec("PRAGMA busy_timeout = 0");
    // SQLite's lower() folds only A-Z; the job name filter (`lower(name) like lower(part)`) is to match any
    // case, as MySQL's does. An application function of the same name replaces it on this connection.
    db.function("lower", { deterministic: true }, (v) => typeof v === "string" ? v.toLowerCase() : v);
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

/**
 * A Kysely over a SQLite file, opened on the process's SQLite thread (`SqliteThread`); `destroy()` closes it.
 * Fails as opening the file does (`openSqliteDatabase`).
 */
export async function createSqliteKysely<DB>(path: string, options: SqliteOptions = {}): Promise<Kysely<DB>> {
  const database = await SqliteThread.shared().open(path, options);
  return new Kysely<DB>({
    dialect: unavailableOnTransient(new NodeSqliteDialect({ database }), `SQLite file ${path}`),
  });
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
 * Kysely's SQLite dialect with four changes. Statements run on the process's SQLite thread, so their work
 * (a multi-row insert of a large job, a commit's fsync) never holds the event loop. Transactions begin
 * IMMEDIATE: a deferred transaction that reads and then writes fails at once with SQLITE_BUSY when another
 * process wrote in between, while IMMEDIATE takes the write lock up front, so writers queue for it.
 * Statements that find the file locked wait on timers (`WaitingSqliteConnection`). And it declares SQLite's
 * transactional DDL, so the migrator runs inside such a transaction, which serializes migrating processes.
 */
export class NodeSqliteDialect implements Dialect {
  readonly #database: ThreadSqliteDatabase;

  constructor(config: { database: ThreadSqliteDatabase }) {
    this.#database = config.database;
  }

  createDriver(): Driver {
    return new ThreadSqliteDriver(this.#database);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

/** One connection (SQLite allows one writer per file): Kysely's callers take turns through the store. */
class ThreadSqliteDriver implements Driver {
  readonly #connection: WaitingSqliteConnection;

  constructor(readonly database: ThreadSqliteDatabase) {
    this.#connection = new WaitingSqliteConnection(database);
  }

  async init(): Promise<void> {}

  acquireConnection(): Promise<DatabaseConnection> {
    return Promise.resolve(this.#connection);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("commit"));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("rollback"));
  }

  async releaseConnection(): Promise<void> {}

  /** Waits until the thread has closed the file, so the caller may remove or reopen it at once. */
  destroy(): Promise<void> {
    return this.database.close();
  }
}

/** Longest pause between two tries of a statement that found the file locked. */
const MAX_BUSY_PAUSE_MS = 20;

/**
 * Kysely's SQLite connection, except that a statement finding the file locked (SQLITE_BUSY) is tried again
 * after a pause on a timer, for up to the database's busy timeout, instead of waiting in SQLite's busy
 * handler. The SQLite thread runs every connection of the process, one statement at a time, so a wait
 * inside one statement would stop all of them. Worse, a daemon opens the file twice (its store and its
 * cluster tables): when one connection's transaction is between two statements and the other's BEGIN
 * IMMEDIATE waits in the handler, the transaction holding the lock cannot go on until the wait gives up, so
 * the process stood still for the whole busy timeout. A statement that failed with SQLITE_BUSY did nothing
 * (statements are atomic, a failed BEGIN begins nothing), so trying it again is safe.
 */
export class WaitingSqliteConnection implements DatabaseConnection {
  constructor(readonly db: ThreadSqliteDatabase) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const deadline = performance.now() + this.db.busyTimeoutMs;
    for (let pauseMs = 1;; pauseMs = Math.min(pauseMs * 2, MAX_BUSY_PAUSE_MS)) {
      try {
        return await this.db.query<R>(compiledQuery);
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
    for (const row of await this.db.rows<R>(compiledQuery)) yield { rows: [row] };
  }
}

/** Runs one statement on a connection (on the SQLite thread). */
export function runQuery<R>(
  db: NodeSqliteDatabase,
  { sql, parameters }: { sql: string; parameters: ReadonlyArray<unknown> },
): QueryResult<R> {
  const stmt = db.prepare(sql);
  if (stmt.reader) return { rows: stmt.all(parameters) as R[] };
  const { changes, lastInsertRowid } = stmt.run(parameters);
  return {
    insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
    numAffectedRows: changes != null ? BigInt(changes) : undefined,
    rows: [],
  };
}

/** What the main thread asks of the SQLite thread (`sqlite_worker.ts`) about one connection. */
export type SqliteCall =
  | { op: "open"; conn: number; path: string; options: SqliteOptions }
  | { op: "query" | "rows"; conn: number; sql: string; parameters: ReadonlyArray<unknown> }
  | { op: "close"; conn: number };

/** A call as sent, with the id its reply carries. */
export type SqliteRequest = SqliteCall & { id: number };

/** The SQLite thread's answer; an error keeps node:sqlite's codes, which `isBusy` reads. */
export type SqliteReply =
  | { id: number; ok: true; value: unknown }
  | {
    id: number;
    ok: false;
    error: { name: string; message: string; errcode?: number; errstr?: string; code?: string };
  };

/**
 * The thread that runs every SQLite statement of this process (node:sqlite is synchronous: on the main
 * thread, a 10,000-task job's insert or a commit's fsync held up HTTP calls, lease renewals and every
 * timer for as long as it took). Started with the first open, stopped when the last connection closes,
 * and it keeps the process alive only while a statement is under way. If it dies, every statement waiting
 * on it fails, and so does each later one on a connection it had open; the next open starts a new one.
 */
export class SqliteThread {
  static #shared: SqliteThread | undefined;

  static shared(): SqliteThread {
    return SqliteThread.#shared ??= new SqliteThread();
  }

  #current: Thread | undefined;
  #nextConn = 1;

  async open(path: string, options: SqliteOptions): Promise<ThreadSqliteDatabase> {
    const thread = this.#current ??= new Thread(() => {
      if (this.#current === thread) this.#current = undefined;
    });
    const conn = this.#nextConn++;
    thread.connections++;
    try {
      await thread.request({ op: "open", conn, path, options });
    } catch (err) {
      thread.closed();
      throw err;
    }
    return new ThreadSqliteDatabase(thread, conn, Math.trunc(options.busyTimeoutMs ?? 10_000));
  }
}

type Waiting = { resolve(value: unknown): void; reject(err: Error): void };

/** One worker thread and what is waiting on it. */
class Thread {
  readonly #worker: NodeWorker;
  readonly #pending = new Map<number, Waiting>();
  #nextId = 1;
  /** Why it can take no more requests: stopped after its last connection closed, or died. */
  #gone: string | undefined;
  /** Connections opened on it and not closed yet; it stops with the last. */
  connections = 0;

  constructor(readonly onGone: () => void) {
    const worker = this.#worker = new NodeWorker(new URL("./sqlite_worker.ts", import.meta.url));
    worker.unref();
    worker.on("message", (reply: SqliteReply) => {
      const waiting = this.#pending.get(reply.id);
      if (!waiting) return;
      this.#settled(reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else waiting.reject(errorOf(reply.error));
    });
    worker.on("error", (err: Error) => this.#end(`the SQLite thread stopped: ${err.message}`));
    worker.on("exit", (code: number) => this.#end(`the SQLite thread stopped: it exited with code ${code}`));
  }

  /** Runs a request; fails at once once the thread is gone. */
  request(req: SqliteCall): Promise<unknown> {
    if (this.#gone) return Promise.reject(new Error(this.#gone));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (!this.#pending.size) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ ...req, id });
      } catch (err) {
        // A parameter that cannot cross to the thread (a symbol, a function): this statement alone fails.
        this.#settled(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** One connection fewer: with the last, the thread stops, after answering what was sent before. */
  closed(): void {
    if (--this.connections > 0 || this.#gone) return;
    this.#end("the SQLite database is closed");
    void this.#worker.terminate();
  }

  #settled(id: number): void {
    this.#pending.delete(id);
    if (!this.#pending.size) this.#worker.unref();
  }

  #end(why: string): void {
    if (this.#gone) return;
    this.#gone = why;
    this.onGone();
    const err = new Error(why);
    for (const waiting of this.#pending.values()) waiting.reject(err);
    this.#pending.clear();
    this.#worker.unref();
  }
}

/** The SQLite thread's error as the caller's: its class where it is a standard one, and node:sqlite's codes. */
function errorOf(e: Extract<SqliteReply, { ok: false }>["error"]): Error {
  const Class = ({ TypeError, RangeError } as Record<string, ErrorConstructor>)[e.name] ?? Error;
  return Object.assign(new Class(e.message), e);
}

/** A connection on the SQLite thread. */
export class ThreadSqliteDatabase {
  #closing: Promise<void> | undefined;

  constructor(
    readonly thread: Thread,
    readonly conn: number,
    /** How long `WaitingSqliteConnection` tries a statement that finds the file locked. */
    readonly busyTimeoutMs: number,
  ) {}

  query<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    return this.#request({ op: "query", conn: this.conn, sql, parameters }) as Promise<QueryResult<R>>;
  }

  rows<R>({ sql, parameters }: CompiledQuery): Promise<R[]> {
    return this.#request({ op: "rows", conn: this.conn, sql, parameters }) as Promise<R[]>;
  }

  /** Closes the connection once what was sent before has run; statements sent after fail. */
  close(): Promise<void> {
    return this.#closing ??= this.thread.request({ op: "close", conn: this.conn }).then(
      () => this.thread.closed(),
      () => this.thread.closed(),
    );
  }

  #request(req: SqliteCall): Promise<unknown> {
    if (this.#closing) return Promise.reject(new Error("the SQLite database is closed"));
    return this.thread.request(req);
  }
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
