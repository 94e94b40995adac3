/** Structured logs: one JSON object per line on stderr, with the daemon and instance on every line. */

export type Level = "debug" | "info" | "warn" | "error";

export interface Logger {
  (msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  with(fields: Record<string, unknown>): Logger;
}

/** A logger writing JSON lines through `write` (stderr by default). */
export function jsonLogger(
  base: Record<string, unknown>,
  write: (line: string) => void = (l) => console.error(l),
): Logger {
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) =>
    write(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...base, ...fields }));
  const log = ((msg: string, fields?: Record<string, unknown>) => emit("info", msg, fields)) as Logger;
  log.warn = (msg, fields) => emit("warn", msg, fields);
  log.error = (msg, fields) => emit("error", msg, fields);
  log.with = (fields) => jsonLogger({ ...base, ...fields }, write);
  return log;
}
