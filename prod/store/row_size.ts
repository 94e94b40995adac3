/**
 * The size of the rows a write sends the database, so that the store refuses a batch too large for it whole,
 * before anything of it is applied, rather than failing part way (MySQL: "Got a packet bigger than
 * 'max_allowed_packet' bytes").
 */
import type { StoreWrite } from "../../core/ports/store.ts";
import type { JobConfig } from "../../core/model/config_types.ts";
import type { DialectKind } from "./schema.ts";

/** What a statement carries besides its values: the column names, ON DUPLICATE KEY UPDATE, the keys. */
export const STATEMENT_OVERHEAD_BYTES = 64 * 1024;
/** SQLite's longest string or blob (SQLITE_MAX_LENGTH as built by default, and by node:sqlite). */
export const SQLITE_MAX_LENGTH_BYTES = 1_000_000_000;

/** The most bytes of values one row may hold in a store, and where that limit comes from. */
export interface RowLimit {
  bytes: number;
  source: string;
}

/** The row limit of a MySQL server whose `max_allowed_packet` is `packetBytes`. */
export function mysqlRowLimit(packetBytes: number): RowLimit {
  return {
    bytes: packetBytes - STATEMENT_OVERHEAD_BYTES,
    source: `MySQL's max_allowed_packet of ${packetBytes} bytes`,
  };
}

export const SQLITE_ROW_LIMIT: RowLimit = {
  bytes: SQLITE_MAX_LENGTH_BYTES,
  source: `SQLite's SQLITE_MAX_LENGTH of ${SQLITE_MAX_LENGTH_BYTES} bytes`,
};

/** A config's stored text's size, by config object: a job's config is written again with each job put. */
const configBytes = new WeakMap<JobConfig, Map<DialectKind, number>>();

/**
 * The row a write puts that may be large, with what it holds and its size as the database receives it (on
 * MySQL, whose statements carry their values as escaped text, with the escapes); undefined for writes whose
 * rows are small by construction (task puts and events, volumes, deletes), which are never checked, as they
 * are most of the writes.
 */
export function writeRowBytes(w: StoreWrite, kind: DialectKind): { what: string; bytes: number } | undefined {
  switch (w.kind) {
    case "job.put": {
      const { config, runtime } = w.job;
      return {
        what: `job ${w.job.jobId} (its config, runtime and labels)`,
        bytes: jobConfigBytes(config, kind) + textBytes(JSON.stringify(runtime), kind) +
          textBytes(JSON.stringify(config.labels ?? []), kind) + textBytes(config.name ?? "", kind) +
          textBytes(config.owner ?? "", kind),
      };
    }
    case "job.config":
      return {
        what: `version ${w.version} of job ${w.jobId}'s config`,
        bytes: jobConfigBytes(w.config, kind),
      };
    case "update.put":
      return {
        what: `workflow ${w.update.updateId} of job ${w.update.jobId}`,
        bytes: textBytes(JSON.stringify(w.update), kind),
      };
    case "secret.put":
      return {
        what: `secret ${w.secret.secretId} of job ${w.secret.jobId}`,
        bytes: textBytes(w.secret.data, kind) + textBytes(w.secret.path, kind),
      };
    case "respool.put":
      return { what: `resource pool ${w.pool.path}`, bytes: textBytes(JSON.stringify(w.pool.config), kind) };
    default:
      return undefined;
  }
}

function jobConfigBytes(config: JobConfig, kind: DialectKind): number {
  let sizes = configBytes.get(config);
  if (!sizes) configBytes.set(config, sizes = new Map());
  let n = sizes.get(kind);
  if (n === undefined) sizes.set(kind, n = textBytes(JSON.stringify(config), kind));
  return n;
}

/** What mysql2 escapes in a literal: NUL, backspace, tab, newline, return, ^Z, quotes and backslashes. */
const ESCAPED = new Set([0, 8, 9, 10, 13, 26, 34, 39, 92]);

/**
 * A text's bytes in UTF-8, and on MySQL the backslash each escaped character adds (mysql2 sends values as
 * escaped literals).
 */
export function textBytes(s: string, kind: DialectKind): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x800) n += c >= 0xd800 && c <= 0xdfff ? 1 : 2; // a surrogate pair is 4 bytes
    else if (c >= 0x80) n += 1;
    else if (kind === "mysql" && ESCAPED.has(c)) n += 1;
  }
  return n;
}
