/**
 * The thread that runs a process's SQLite statements (see `SqliteThread` in `sqlite_dialect.ts`). It owns
 * every connection the process opened; each request runs one statement to the end, synchronously, and
 * answers. A statement that finds the file locked fails at once (no busy handler), so one connection's wait
 * never holds up another's statements: the main thread tries it again on a timer.
 */
import { parentPort } from "node:worker_threads";
import {
  type NodeSqliteDatabase,
  openSqliteDatabase,
  runQuery,
  type SqliteOptions,
  type SqliteReply,
  type SqliteRequest,
} from "./sqlite_dialect.ts";

const port = parentPort!;
const connections = new Map<number, NodeSqliteDatabase>();

function handle(req: SqliteRequest): unknown {
  if (req.op === "open") {
    connections.set(req.conn, openSqliteDatabase(req.path, req.options as SqliteOptions));
    return undefined;
  }
  const db = connections.get(req.conn);
  if (!db) throw new Error(`SQLite connection ${req.conn} is not open`);
  switch (req.op) {
    case "query":
      return runQuery(db, { sql: req.sql, parameters: req.parameters });
    case "rows":
      return db.prepare(req.sql).all(req.parameters);
    case "close":
      connections.delete(req.conn);
      db.close();
      return undefined;
  }
}

port.on("message", (req: SqliteRequest) => {
  let reply: SqliteReply;
  try {
    reply = { id: req.id, ok: true, value: handle(req) };
  } catch (err) {
    type SqliteError = Error & { errcode?: number; errstr?: string; code?: string };
    const e = err as SqliteError;
    // An open that failed wraps node:sqlite's error, whose codes the caller may need.
    const cause = (e?.cause ?? {}) as SqliteError;
    reply = {
      id: req.id,
      ok: false,
      error: {
        name: e?.name ?? "Error",
        message: e?.message ?? String(err),
        errcode: e?.errcode ?? cause.errcode,
        errstr: e?.errstr ?? cause.errstr,
        code: e?.code ?? cause.code,
      },
    };
  }
  port.postMessage(reply);
});
