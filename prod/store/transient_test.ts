/** Which errors are a full disk, in the forms SQLite, the file system and MySQL give them. */
import { deepStrictEqual as equal, match, ok } from "node:assert/strict";
import { StoreUnavailableError } from "../../core/ports/store.ts";
import { asUnavailable, isDiskFull, isTransient, isUnreachable } from "./transient.ts";

const err = (message: string, fields: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), fields);

Deno.test("a full disk is told by SQLite's, the file system's and MySQL's errors, and nothing else", () => {
  const full = [
    // node:sqlite, from the SQLite thread: SQLITE_FULL and an extended code of it.
    err("database or disk is full", {
      code: "ERR_SQLITE_ERROR",
      errcode: 13,
      errstr: "database or disk is full",
    }),
    err("database or disk is full", { code: "ERR_SQLITE_ERROR" }),
    // Deno's and node's ENOSPC.
    err("No space left on device (os error 28)", { code: "ENOSPC" }),
    err("ENOSPC: no space left on device, write", { code: "ENOSPC", errno: -28 }),
    // mysql2: the server's ER_RECORD_FILE_FULL, and errno 28 inside its file and engine errors.
    err("The table 'tasks' is full", { code: "ER_RECORD_FILE_FULL", errno: 1114 }),
    err(`Error writing file './peloton/#sql-1' (Errcode: 28 "No space left on device")`, { errno: 1026 }),
    err("Got error 28 from storage engine", { code: "ER_GET_ERRNO", errno: 1030 }),
    err("Error on close of './peloton/tasks.frm' (errno: 28)", { errno: 1023 }),
    // Wrapped, as the writer and the daemons see it.
    new Error("Cannot open", { cause: err("x", { errcode: 13 }) }),
  ];
  for (const e of full) {
    ok(isDiskFull(e), String(e));
    ok(isTransient(e), `transient: ${e}`);
  }
  const other = [
    err("UNIQUE constraint failed: jobs.job_id", { code: "ERR_SQLITE_ERROR", errcode: 2067 }),
    err("database is locked", { errcode: 5 }),
    err("Duplicate entry 'a' for key 'PRIMARY'", { code: "ER_DUP_ENTRY", errno: 1062 }),
    err("connect ECONNREFUSED 127.0.0.1:3306", { code: "ECONNREFUSED" }),
    err("job job-28 failed: exit code 28"),
    undefined,
    "database or disk is full",
  ];
  equal(other.map(isDiskFull), other.map(() => false));
});

Deno.test("a full disk is unavailable, saying the disk is full and where, not that the store cannot be reached", () => {
  const e = asUnavailable(err("database or disk is full", { errcode: 13 }), "SQLite file /d/peloton.sqlite");
  ok(e instanceof StoreUnavailableError);
  match(
    e.message,
    /^the store's disk is full \(SQLite file \/d\/peloton\.sqlite\): database or disk is full; its writes wait/,
  );
  ok(isDiskFull(e));
  ok(!isUnreachable(e), "a full disk is not a database out of reach");
  const refused = asUnavailable(
    err("connect ECONNREFUSED", { code: "ECONNREFUSED" }),
    "MySQL database p on h:1",
  );
  match((refused as Error).message, /^the store cannot be reached: connect ECONNREFUSED$/);
});
