/** Kysely over a mysql2 pool, opened from a `mysql://user:pass@host:port/db` URL that creates the database. */
import { Kysely, MysqlDialect } from "kysely";
import { createPool } from "mysql2";
import { createConnection } from "mysql2/promise";

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
}

const DATABASE_NAME = /^[A-Za-z0-9_$]{1,64}$/;

/** Parses `mysql://user:pass@host:port/db`; the database name is required. */
export function parseMysqlUrl(url: string): MysqlTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`Cannot parse MySQL URL "${redact(url)}": expected mysql://user:pass@host:port/db`);
  }
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

/** The URL with its password hidden, for messages. */
export function redact(url: string): string {
  return url.replace(/^(mysql:\/\/[^:@/]*):[^@/]*@/, "$1:***@");
}

/** Creates the database if it does not exist (binary collation: names and labels match case-sensitively). */
export async function ensureMysqlDatabase(target: MysqlTarget): Promise<void> {
  await withServer(target, (conn) =>
    conn.query(
      `CREATE DATABASE IF NOT EXISTS \`${target.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
    ));
}

/** Drops the database if it exists; for tests and benchmarks that made their own. */
export async function dropMysqlDatabase(target: MysqlTarget): Promise<void> {
  await withServer(target, (conn) => conn.query(`DROP DATABASE IF EXISTS \`${target.database}\``));
}

/** A Kysely over a pool on the URL's database, created first if missing; `destroy()` ends the pool. */
export async function createMysqlKysely<DB>(url: string, options: MysqlOptions = {}): Promise<Kysely<DB>> {
  const target = parseMysqlUrl(url);
  await ensureMysqlDatabase(target);
  const pool = createPool({
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    database: target.database,
    charset: "utf8mb4",
    connectionLimit: options.connectionLimit ?? 8,
    // The schema keeps no DATE columns; BIGINT ms timestamps must come back as plain numbers.
    supportBigNumbers: true,
    bigNumberStrings: false,
  });
  return new Kysely<DB>({ dialect: new MysqlDialect({ pool }) });
}

async function withServer(
  target: MysqlTarget,
  fn: (conn: Awaited<ReturnType<typeof createConnection>>) => Promise<unknown>,
): Promise<void> {
  const where = `${target.user}@${target.host}:${target.port}`;
  let conn;
  try {
    conn = await createConnection({
      host: target.host,
      port: target.port,
      user: target.user,
      password: target.password,
      connectTimeout: 5_000,
    });
  } catch (err) {
    throw new Error(`Cannot connect to MySQL as ${where}: ${describe(err)}`, { cause: err });
  }
  try {
    await fn(conn);
  } catch (err) {
    throw new Error(`Cannot prepare database ${target.database} on ${where}: ${describe(err)}`, {
      cause: err,
    });
  } finally {
    await conn.end();
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  // An ECONNREFUSED from node:net arrives as an AggregateError with an empty message.
  return e.message || e.code || String(err);
}
