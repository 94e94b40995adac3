/**
 * Errors of the connection rather than of a statement: the database restarted, went away, stopped answering
 * or is busy, or its disk is full. They reach the daemons as the store port's `StoreUnavailableError`, which
 * the API answers as `unavailable` (a client may call again) rather than `internal`; the store's writer waits
 * them out.
 */
import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryResult,
  TransactionSettings,
} from "kysely";
import { StoreUnavailableError } from "../../core/ports/store.ts";

const TRANSIENT_CODES =
  /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|PROTOCOL_CONNECTION_LOST|ER_SERVER_SHUTDOWN|ER_CON_COUNT_ERROR|ER_LOCK_WAIT_TIMEOUT|SQLITE_BUSY|PELOTON_CLAIM_INTERRUPTED|PELOTON_STATEMENT_TIMEOUT|PELOTON_STATEMENT_ABANDONED)/;

/** Whether an error is of the connection, not of the writes (the store's claim being taken back counts). */
export function isTransient(err: unknown): boolean {
  if (err instanceof StoreUnavailableError || isDiskFull(err)) return true;
  const e = err as { code?: string; fatal?: boolean; message?: string; errors?: unknown[] };
  if (e?.fatal === true) return true;
  if (TRANSIENT_CODES.test(e?.code ?? "")) return true;
  if (Array.isArray(e?.errors) && e.errors.some(isTransient)) return true;
  return /database is locked|Connection lost|connect ECONNREFUSED|Pool is closed/.test(e?.message ?? "");
}

/** Connection errors alone: the database cannot be reached (not merely busy, nor a claim being retaken). */
const UNREACHABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|PROTOCOL_CONNECTION_LOST|ER_SERVER_SHUTDOWN|PELOTON_STATEMENT_TIMEOUT)/;

/**
 * Whether an error says the database cannot be reached: a connection refused, lost or unanswered. While it
 * is so, reads answer unavailable at once rather than wait behind the writer's retries.
 */
export function isUnreachable(err: unknown): boolean {
  const e = err as { code?: string; message?: string; errors?: unknown[]; cause?: unknown };
  if (err instanceof StoreUnavailableError && e.code === undefined && e.cause !== undefined) {
    return isUnreachable(e.cause);
  }
  if (UNREACHABLE_CODES.test(e?.code ?? "")) return true;
  if (Array.isArray(e?.errors) && e.errors.some(isUnreachable)) return true;
  return /Connection lost|connect ECONNREFUSED/.test(e?.message ?? "");
}

/** A full disk by its code: the file system's, or MySQL's ER_RECORD_FILE_FULL (1114) and ER_DISK_FULL (1021). */
const DISK_FULL_CODES = /^(ENOSPC|ER_RECORD_FILE_FULL|ER_DISK_FULL)$/;
const DISK_FULL_ERRNOS = new Set([1114, 1021]);
/** SQLite's SQLITE_FULL, ENOSPC's text, MySQL's ER_RECORD_FILE_FULL, and errno 28 inside MySQL's file errors. */
const DISK_FULL_MESSAGES =
  /database or disk is full|No space left on device|^The table '.*' is full|\b(errno|Errcode): 28\b|Got error 28\b/;
/** SQLite's primary result code, the low byte of its extended ones. */
const SQLITE_FULL = 13;

/**
 * Whether an error says the database's disk is full: SQLite's SQLITE_FULL, a file system's ENOSPC, MySQL's
 * "The table ... is full" or its errno 28. Not a fault of the writes: once the operator frees space the same
 * writes go in, so the writer waits it out as it does a database out of reach.
 */
export function isDiskFull(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const e = err as { code?: string; errno?: number; errcode?: number; message?: string; errors?: unknown[] };
  if (typeof e.errcode === "number" && (e.errcode & 0xff) === SQLITE_FULL) return true;
  if (DISK_FULL_CODES.test(e.code ?? "") || DISK_FULL_ERRNOS.has(e.errno ?? 0)) return true;
  if (DISK_FULL_MESSAGES.test(e.message ?? "")) return true;
  if (Array.isArray(e.errors) && e.errors.some(isDiskFull)) return true;
  return isDiskFull((err as { cause?: unknown }).cause);
}

/**
 * A transient error as a `StoreUnavailableError` keeping its code and fatality; any other as it is. `where`
 * names the database (its file, or its name and server), which a full disk's message gives.
 */
export function asUnavailable(err: unknown, where?: string): unknown {
  if (err instanceof StoreUnavailableError || !isTransient(err)) return err;
  const e = err as { code?: string; fatal?: boolean; message?: string };
  // An ECONNREFUSED from node:net arrives as an AggregateError with an empty message.
  const message = e?.message || e?.code || String(err);
  const why = isDiskFull(err)
    ? `the store's disk is full${
      where ? ` (${where})` : ""
    }: ${message}; its writes wait until space is freed`
    : `the store cannot be reached: ${message}`;
  return Object.assign(new StoreUnavailableError(why, { cause: err }), { code: e?.code, fatal: e?.fatal });
}

/**
 * `dialect` with every transient error of its connections turned into a `StoreUnavailableError`; `where`
 * names the database in the message of a full disk ("SQLite file /data/peloton.sqlite").
 */
export function unavailableOnTransient(dialect: Dialect, where?: string): Dialect {
  return {
    createDriver: () => new UnavailableDriver(dialect.createDriver(), where),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

type CompileQuery = Parameters<NonNullable<Driver["savepoint"]>>[2];

async function translated<T>(run: () => Promise<T>, where: string | undefined): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asUnavailable(err, where);
  }
}

class UnavailableConnection implements DatabaseConnection {
  constructor(readonly inner: DatabaseConnection, readonly where: string | undefined) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return translated(() => this.inner.executeQuery<R>(query), this.where);
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (err) {
      throw asUnavailable(err, this.where);
    }
  }
}

/**
 * Passes everything on to the dialect's own driver. Transactions and savepoints are run by that driver
 * through the connection it is given, so they are given this wrapper, whose statements translate errors;
 * releasing takes the driver's own connection back.
 */
class UnavailableDriver implements Driver {
  readonly #wrapped = new WeakMap<DatabaseConnection, UnavailableConnection>();

  constructor(readonly inner: Driver, readonly where: string | undefined) {}

  init(): Promise<void> {
    return translated(() => this.inner.init(), this.where);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const conn = await translated(() => this.inner.acquireConnection(), this.where);
    let w = this.#wrapped.get(conn);
    if (!w) this.#wrapped.set(conn, w = new UnavailableConnection(conn, this.where));
    return w;
  }

  beginTransaction(conn: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return translated(() => this.inner.beginTransaction(conn, settings), this.where);
  }

  commitTransaction(conn: DatabaseConnection): Promise<void> {
    return translated(() => this.inner.commitTransaction(conn), this.where);
  }

  rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    return translated(() => this.inner.rollbackTransaction(conn), this.where);
  }

  savepoint(conn: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepoint("savepoint", conn, name, compile);
  }

  rollbackToSavepoint(conn: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepoint("rollbackToSavepoint", conn, name, compile);
  }

  releaseSavepoint(conn: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepoint("releaseSavepoint", conn, name, compile);
  }

  #savepoint(
    step: "savepoint" | "rollbackToSavepoint" | "releaseSavepoint",
    conn: DatabaseConnection,
    name: string,
    compile: CompileQuery,
  ): Promise<void> {
    const inner = this.inner[step]?.bind(this.inner);
    if (!inner) return Promise.reject(new Error("the dialect has no savepoints"));
    return translated(() => inner(conn, name, compile), this.where);
  }

  releaseConnection(conn: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((conn as UnavailableConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
