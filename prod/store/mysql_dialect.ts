/** Kysely over a mysql2 pool, opened from a `mysql://user:pass@host:port/db` URL that creates the database. */
import { Kysely, MysqlDialect, type MysqlPool, type MysqlPoolConnection } from "kysely";
import { createPool, type Pool, type PoolConnection } from "mysql2";
import { createConnection } from "mysql2/promise";
import { unavailableOnTransient } from "./transient.ts";

export interface MysqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export interface MysqlOptions {
  /** Connections in the pool: one carries the writer's transaction, the rest serve reads. */
  connectionLimit?: number;
  /**
   * How long a statement may go unanswered (30 s): then its connection is dropped and the statement fails
   * as a lost database does, so the store's writer retries it on a new connection rather than waiting on
   * one that a network partition or a frozen server left hanging. URL parameter `statementTimeout`.
   */
  statementTimeoutMs?: number;
  /** How long opening a connection may take (10 s, mysql2's default). URL parameter `connectTimeout`. */
  connectTimeoutMs?: number;
  /**
   * No bound on statements, whatever the URL says: for schema migrations, which wait up to an hour for the
   * migration lock another process holds, and may rewrite a large table.
   */
  untimed?: boolean;
}

/** The URL parameters a store URL may carry, each a number of milliseconds, and the option each sets. */
const URL_OPTIONS = { statementTimeout: "statementTimeoutMs", connectTimeout: "connectTimeoutMs" } as const;

const DATABASE_NAME = /^[A-Za-z0-9_$]{1,64}$/;

/** Parses `mysql://user:pass@host:port/db`; the database name is required. */
export function parseMysqlUrl(url: string): MysqlTarget {
  const u = urlOf(url);
  if (u.protocol !== "mysql:") {
    throw new Error(`Cannot parse MySQL URL "${redact(url)}": scheme is ${u.protocol}, expected mysql:`);
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
  if (!DATABASE_NAME.test(database)) {
    throw new Error(
      `Cannot parse MySQL URL "${redact(url)}": database name "${database}" must be 1-64 of [A-Za-z0-9_$]`,
    );
  }
  return {
    host: u.hostname || "127.0.0.1",
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username) || "root",
    password: decodeURIComponent(u.password),
    database,
  };
}

/**
 * The options a MySQL URL's parameters set: `?statementTimeout=MS&connectTimeout=MS`. Any other parameter, or
 * a value that is not a whole number of milliseconds from 1 to 3,600,000, is an error naming it.
 */
export function mysqlUrlOptions(url: string): MysqlOptions {
  const options: MysqlOptions = {};
  for (const [name, value] of urlOf(url).searchParams) {
    const option = URL_OPTIONS[name as keyof typeof URL_OPTIONS];
    if (!option) {
      throw new Error(
        `MySQL URL "${redact(url)}": unknown parameter "${name}"; expected ${
          Object.keys(URL_OPTIONS).join(" or ")
        } (milliseconds)`,
      );
    }
    const ms = Number(value);
    if (!/^\d+$/.test(value) || ms < 1 || ms > 3_600_000) {
      throw new Error(
        `MySQL URL "${
          redact(url)
        }": ${name} is "${value}"; expected a whole number of milliseconds from 1 to 3600000`,
      );
    }
    options[option] = ms;
  }
  return options;
}

/** `new URL`, whose own error would show the whole URL, password and all. */
function urlOf(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new Error(
      `Cannot parse MySQL URL "${redact(url)}": expected mysql://user:pass@host:port/db ` +
        "(a / ? # or @ in the user or password percent-encoded)",
    );
  }
}

/**
 * The URL with its password hidden, for messages: everything from the first `:` of its userinfo to the last
 * `@`, where a URL parser splits the userinfo from the host. A password holding `/`, `?`, `#`, `:` or `@`
 * (which a parser may refuse, or read otherwise) is hidden whole, at worst with more of the URL after it.
 */
export function redact(url: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0];
  if (!scheme) return url;
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf("@");
  const colon = rest.indexOf(":");
  if (at < 0 || colon < 0 || colon > at) return url;
  return `${scheme}${rest.slice(0, colon)}:***@${rest.slice(at + 1)}`;
}

/** Creates the database if it does not exist (binary collation: names and labels match case-sensitively). */
export async function ensureMysqlDatabase(target: MysqlTarget, connectTimeoutMs = 5_000): Promise<void> {
  await withServer(
    target,
    connectTimeoutMs,
    `CREATE DATABASE IF NOT EXISTS \`${target.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
  );
}

/** Drops the database if it exists; for tests and benchmarks that made their own. */
export async function dropMysqlDatabase(target: MysqlTarget): Promise<void> {
  await withServer(target, 5_000, `DROP DATABASE IF EXISTS \`${target.database}\``);
}

/**
 * A Kysely over a pool on the URL's database, created first if missing; `destroy()` ends the pool. The URL's
 * parameters (`mysqlUrlOptions`) override `options`.
 */
export async function createMysqlKysely<DB>(url: string, options: MysqlOptions = {}): Promise<Kysely<DB>> {
  const target = parseMysqlUrl(url);
  options = { ...options, ...mysqlUrlOptions(url) };
  await ensureMysqlDatabase(target, options.connectTimeoutMs);
  const pool = createPool({
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    database: target.database,
    charset: "utf8mb4",
    connectionLimit: options.connectionLimit ?? 8,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    // The schema keeps no DATE columns; BIGINT ms timestamps must come back as plain numbers.
    supportBigNumbers: true,
    bigNumberStrings: false,
  });
  const timeoutMs = options.untimed ? undefined : options.statementTimeoutMs ?? 30_000;
  return new Kysely<DB>({
    dialect: unavailableOnTransient(
      new MysqlDialect({ pool: timedPool(pool, timeoutMs) }),
      `MySQL database ${target.database} on ${target.host}:${target.port}`,
    ),
  });
}

/**
 * The pool as Kysely sees it, with every statement bounded by `timeoutMs` (none when undefined). mysql2's own
 * query `timeout` only fails the callback: the command stays at the head of its connection's queue, so the
 * rollback after it and every later use of that pooled connection would hang behind it. Here the connection
 * is dropped instead (mysql2 takes it out of the pool) and the error is `fatal`, which the store treats as a
 * lost database: the writer retries on a new connection, a read fails rather than hanging its API call.
 * Ending the pool first abandons the statements still under way: mysql2's `end` queues a quit behind each
 * connection's statement, and would wait for a hung one for good.
 */
function timedPool(pool: Pool, timeoutMs: number | undefined): MysqlPool {
  // One wrapper per connection: Kysely keys its own per-connection state by the object it is given.
  const wrapped = new WeakMap<PoolConnection, MysqlPoolConnection>();
  /** Statements under way, each with what abandons it. */
  const underWay = new Set<(why: Error) => void>();
  const wrap = (conn: PoolConnection): MysqlPoolConnection => {
    let w = wrapped.get(conn);
    if (!w) {
      w = {
        get config() {
          return conn.config;
        },
        get threadId() {
          return conn.threadId;
        },
        connect: (cb) => conn.connect(cb),
        destroy: () => conn.destroy(),
        release: () => conn.release(),
        // deno-lint-ignore no-explicit-any
        query: (sql: string, parameters: any, cb?: (err: unknown, result: any) => void): any => {
          if (!cb || timeoutMs === undefined) return conn.query(sql, parameters, cb!);
          let settled = false;
          const finish = (err: unknown, result?: unknown) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            underWay.delete(abandon);
            cb(err, result);
          };
          const abandon = (why: Error) => {
            if (settled) return;
            drop(conn);
            finish(why);
          };
          const timer = setTimeout(() => abandon(statementTimeout(timeoutMs, conn.threadId)), timeoutMs);
          underWay.add(abandon);
          try {
            return conn.query(sql, parameters, finish);
          } catch (e) {
            // Refused before it was sent (a value it cannot format): the connection is fine.
            settled = true;
            clearTimeout(timer);
            underWay.delete(abandon);
            throw e;
          }
        },
      };
      wrapped.set(conn, w);
    }
    return w;
  };
  return {
    getConnection: (cb) => pool.getConnection((err, conn) => cb(err, err ? conn : wrap(conn))),
    end: (cb) => {
      for (const abandon of [...underWay]) abandon(abandoned());
      pool.end(cb);
    },
  };
}

/**
 * Drops a connection for good: out of the pool, and its socket closed at once rather than half-closed (a
 * peer that no longer answers would never finish the close mysql2 starts).
 */
function drop(conn: PoolConnection): void {
  conn.destroy();
  (conn as unknown as { stream?: { destroy?: () => void } }).stream?.destroy?.();
}

function abandoned(): Error {
  return Object.assign(new Error("the MySQL pool was closed while a statement was still under way"), {
    code: "PELOTON_STATEMENT_ABANDONED",
    fatal: true,
  });
}

function statementTimeout(timeoutMs: number, threadId: number | null): Error {
  return Object.assign(
    new Error(
      `MySQL gave no answer to a statement within ${timeoutMs} ms; its connection (thread ${threadId}) was dropped`,
    ),
    { code: "PELOTON_STATEMENT_TIMEOUT", fatal: true },
  );
}

/** How long a statement on the server (not in a database) may go unanswered. */
const SERVER_STATEMENT_TIMEOUT_MS = 30_000;

/** Runs one statement on a connection of its own to the server; a statement left unanswered fails. */
async function withServer(target: MysqlTarget, connectTimeoutMs: number, statement: string): Promise<void> {
  const where = `${target.user}@${target.host}:${target.port}`;
  let conn;
  try {
    conn = await createConnection({
      host: target.host,
      port: target.port,
      user: target.user,
      password: target.password,
      connectTimeout: connectTimeoutMs,
    });
  } catch (err) {
    throw new Error(`Cannot connect to MySQL as ${where}: ${describe(err, target)}`, { cause: err });
  }
  try {
    await conn.query({ sql: statement, timeout: SERVER_STATEMENT_TIMEOUT_MS });
  } catch (err) {
    // A statement that timed out is still at the head of the connection's queue: a quit would wait for it.
    conn.destroy();
    throw new Error(`Cannot prepare database ${target.database} on ${where}: ${describe(err, target)}`, {
      cause: err,
    });
  }
  await conn.end();
}

/**
 * The error's message, without the password should it hold it (mysql2's do not today). One shorter than 4
 * characters is left: hiding it would hide its letters all through the message.
 */
function describe(err: unknown, target: MysqlTarget): string {
  const e = err as { code?: string; message?: string };
  // An ECONNREFUSED from node:net arrives as an AggregateError with an empty message.
  const text = e.message || e.code || String(err);
  return target.password.length < 4 ? text : text.replaceAll(target.password, "***");
}
