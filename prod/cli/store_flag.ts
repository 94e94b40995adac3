/** `--store`: checks the URL's shape and that a MySQL server answers, before a daemon starts on it. */
import {
  ensureMysqlDatabase,
  type MysqlTarget,
  mysqlUrlOptions,
  parseMysqlUrl,
  redact,
} from "../store/mysql_dialect.ts";
import { sqlitePath } from "../store/kysely_store.ts";
import { UsageError } from "./command.ts";

const EXPECTED =
  "a SQLite path (sqlite:PATH or PATH) or mysql://user[:pass]@host:port/db[?statementTimeout=MS&connectTimeout=MS]";

/** Throws a UsageError naming --store for a malformed value; returns the MySQL target, if any. */
export function parseStoreFlag(value: string): MysqlTarget | undefined {
  if (value.startsWith("mysql://")) {
    try {
      mysqlUrlOptions(value);
      return parseMysqlUrl(value);
    } catch (e) {
      // The store's own messages hide the password; another's (a TypeError from `new URL`) may not.
      const message = (e as Error).message.replaceAll(value, redact(value));
      throw new UsageError(`--store: ${message}`);
    }
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1];
  if ((scheme && scheme !== "sqlite") || sqlitePath(value) === "") {
    throw new UsageError(`--store: got "${redact(value)}", expected ${EXPECTED}`);
  }
  return undefined;
}

/**
 * Checks `--store` before anything starts; returns an error line when its MySQL server cannot be reached
 * (a failure, exit 1, not a usage error: the value itself is fine).
 */
export async function checkStoreFlag(value: string | undefined): Promise<string | undefined> {
  if (value === undefined) return undefined;
  const target = parseStoreFlag(value);
  if (!target) return undefined;
  try {
    await ensureMysqlDatabase(target);
  } catch (e) {
    return `--store: ${(e as Error).message}`;
  }
  return undefined;
}
