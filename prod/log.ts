/** Structured logs: one JSON object per line on stderr, with the daemon and instance on every line. */

export type Level = "debug" | "info" | "warn" | "error";

const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface Logger {
  (msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  with(fields: Record<string, unknown>): Logger;
}

/**
 * A logger writing JSON lines through `write` (stderr by default), those below `minLevel` left out. A line
 * logged as info that carries an `error` field is a warning: the parts that take a plain log function (the
 * job archiver, shard balancing, the Mesos maintenance sync) log their failures so, and have no level of
 * their own to say it with.
 */
export function jsonLogger(
  base: Record<string, unknown>,
  write: (line: string) => void = (l) => console.error(l),
  minLevel: Level = "info",
): Logger {
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < RANK[minLevel]) return;
    write(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...base, ...fields }));
  };
  const log =
    ((msg: string, fields?: Record<string, unknown>) =>
      emit(fields?.error === undefined ? "info" : "warn", msg, fields)) as Logger;
  log.warn = (msg, fields) => emit("warn", msg, fields);
  log.error = (msg, fields) => emit("error", msg, fields);
  log.with = (fields) => jsonLogger({ ...base, ...fields }, write, minLevel);
  return log;
}

/**
 * `log` for parts that log plain lines (the Mesos scheduler client): a line saying ERROR is an error, one
 * saying something failed or cannot be done a warning, any other line info.
 */
export function lineLogger(log: Logger): (line: string) => void {
  return (line) => {
    if (/\bERROR\b/.test(line)) log.error(line);
    else if (/\b(failed|cannot|unable|refused)\b/i.test(line)) log.warn(line);
    else log(line);
  };
}
