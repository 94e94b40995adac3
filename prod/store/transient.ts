/**
 * Errors of the connection rather than of a statement: the database restarted, went away, stopped answering
 * or is busy. They reach the daemons as the store port's `StoreUnavailableError`, which the API answers as
 * `unavailable` (a client may call again) rather than `internal`; the store's writer waits them out.
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
  if (err instanceof StoreUnavailableError) return true;
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

/** A transient error as a `StoreUnavailableError` keeping its code and fatality; any other as it is. */
export function asUnavailable(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !isTransient(err)) return err;
  const e = err as { code?: string; fatal?: boolean; message?: string };
  // An ECONNREFUSED from node:net arrives as an AggregateError with an empty message.
  const message = e?.message || e?.code || String(err);
  return Object.assign(new StoreUnavailableError(`the store cannot be reached: ${message}`, { cause: err }), {
    code: e?.code,
    fatal: e?.fatal,
  });
}

/** `dialect` with every transient error of its connections turned into a `StoreUnavailableError`. */
export function unavailableOnTransient(dialect: Dialect): Dialect {
  return {
    createDriver: () => new UnavailableDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

type CompileQuery = Parameters<NonNullable<Driver["savepoint"]>>[2];

async function translated<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asUnavailable(err);
  }
}

class UnavailableConnection implements DatabaseConnection {
  constructor(readonly inner: DatabaseConnection) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return translated(() => this.inner.executeQuery<R>(query));
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (err) {
      throw asUnavailable(err);
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

  constructor(readonly inner: Driver) {}

  init(): Promise<void> {
    return translated(() => this.inner.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const conn = await translated(() => this.inner.acquireConnection());
    let w = this.#wrapped.get(conn);
    if (!w) this.#wrapped.set(conn, w = new UnavailableConnection(conn));
    return w;
  }

  beginTransaction(conn: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return translated(() => this.inner.beginTransaction(conn, settings));
  }

  commitTransaction(conn: DatabaseConnection): Promise<void> {
    return translated(() => this.inner.commitTransaction(conn));
  }

  rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    return translated(() => this.inner.rollbackTransaction(conn));
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
    return translated(() => inner(conn, name, compile));
  }

  releaseConnection(conn: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((conn as UnavailableConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
