/** The SQLite dialect's lock waits: a statement that finds the file locked waits on timers, not in SQLite. */
import { StoreUnavailableError } from "../../core/ports/store.ts";
import { deepStrictEqual as equal } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { sql } from "kysely";
import { createSqliteKysely, isBusy } from "./sqlite_dialect.ts";

interface Db {
  t: { x: number };
}

async function withFile(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-sqlite-" });
  try {
    await fn(`${dir}/db.sqlite`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("SQLite: a write waiting for the lock leaves the event loop free, so the holder can finish", async () => {
  await withFile(async (path) => {
    const db = await createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
    try {
      await db.schema.createTable("t").addColumn("x", "integer").execute();
      // Another connection (another process, or this process's other store) holds the write lock, and lets
      // go only when a timer of this process fires. A wait inside SQLite's busy handler would block that
      // timer until the busy timeout ran out, and the write would fail with "database is locked".
      const other = new DatabaseSync(path);
      other.exec("BEGIN IMMEDIATE");
      other.exec("INSERT INTO t (x) VALUES (1)");
      const timer = setTimeout(() => other.exec("COMMIT"), 0);
      try {
        await db.insertInto("t").values({ x: 2 }).execute();
      } finally {
        clearTimeout(timer);
        if (other.isTransaction) other.exec("ROLLBACK");
        other.close();
      }
      equal((await db.selectFrom("t").select("x").orderBy("x").execute()).map((r) => r.x), [1, 2]);
    } finally {
      await db.destroy();
    }
  });
});

Deno.test("SQLite: two connections of one process whose transactions overlap both commit", async () => {
  // A daemon's store and its cluster tables (leases) are two connections to one file. A lease renewal that
  // began while the store's transaction awaited between statements waited in SQLite for a lock that its
  // own process held, which could not be let go until the wait gave up: the renewal failed.
  await withFile(async (path) => {
    const store = await createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
    const leases = await createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
    try {
      await store.schema.createTable("t").addColumn("x", "integer").execute();
      let renewal: Promise<unknown> | undefined;
      await store.transaction().execute(async (trx) => {
        await trx.insertInto("t").values({ x: 1 }).execute();
        renewal = leases.transaction().execute((t) => t.insertInto("t").values({ x: 2 }).execute());
        // Something the transaction awaits (a timer here; I/O in a daemon) lets the renewal run meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 0));
        await trx.insertInto("t").values({ x: 3 }).execute();
      });
      await renewal;
      equal((await leases.selectFrom("t").select("x").orderBy("x").execute()).map((r) => r.x), [1, 2, 3]);
    } finally {
      await store.destroy();
      await leases.destroy();
    }
  });
});

Deno.test("SQLite: a write still fails with SQLITE_BUSY once the busy timeout has passed", async () => {
  await withFile(async (path) => {
    const db = await createSqliteKysely<Db>(path, { busyTimeoutMs: 50 });
    const other = new DatabaseSync(path);
    try {
      await db.schema.createTable("t").addColumn("x", "integer").execute();
      other.exec("BEGIN IMMEDIATE");
      const err = await db.insertInto("t").values({ x: 1 }).execute().then(() => undefined, (e) => e);
      equal(isBusy(err), true, String(err));
      // Reported as the store out of reach (the API answers unavailable), with SQLite's own error beneath.
      equal(err instanceof StoreUnavailableError, true, String(err));
      equal(((err as Error).cause as Error).message, "database is locked");
    } finally {
      if (other.isTransaction) other.exec("ROLLBACK");
      other.close();
      await db.destroy();
    }
  });
});

Deno.test("SQLite: isBusy knows SQLITE_BUSY and its extended codes, but not a stale snapshot", () => {
  equal(isBusy(Object.assign(new Error("database is locked"), { errcode: 5 })), true);
  equal(isBusy(Object.assign(new Error("database is locked"), { errcode: 261 })), true); // BUSY_RECOVERY
  equal(isBusy(Object.assign(new Error("database is locked"), { errcode: 517 })), false); // BUSY_SNAPSHOT
  equal(isBusy(Object.assign(new Error("UNIQUE constraint failed: t.x"), { errcode: 2067 })), false);
  equal(isBusy(new Error("database is locked")), true);
});

Deno.test("SQLite: a long statement runs off the event loop, so timers fire while it runs", async () => {
  await withFile(async (path) => {
    const db = await createSqliteKysely<Db>(path);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    try {
      // Counting to two million in SQL takes a good part of a second; on the event loop, no tick could
      // come until it had finished.
      const { rows } = await sql<{ n: number }>`
        with recursive c(i) as (select 1 union all select i + 1 from c where i < 2000000)
        select count(*) as n from c`.execute(db);
      equal(rows[0].n, 2_000_000);
      equal(ticks > 0, true, "no timer fired while the statement ran");
    } finally {
      clearInterval(ticker);
      await db.destroy();
    }
  });
});

/**
 * Runs `script` (TypeScript; `DIALECT` is this dialect's module URL) in a process of its own and returns
 * what it printed; a process still alive after 60 s is killed, and its exit code says so.
 */
async function runScript(script: string): Promise<{ code: number; out: string; err: string }> {
  const module = new URL("./sqlite_dialect.ts", import.meta.url).href;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script.replaceAll("DIALECT", JSON.stringify(module))],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const out = await child.output();
  clearTimeout(killer);
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { code: out.code, out: text(out.stdout), err: text(out.stderr) };
}

function rowsOf(path: string): unknown[] {
  const check = new DatabaseSync(path);
  try {
    return check.prepare("select x from t order by rowid").all().map((r) => r.x);
  } finally {
    check.close();
  }
}

Deno.test("SQLite: a process that leaves its database open still exits; the file holds what it wrote", async () => {
  await withFile(async (path) => {
    const run = await runScript(`
      import { createSqliteKysely } from DIALECT;
      const db = await createSqliteKysely(${JSON.stringify(path)});
      await db.schema.createTable("t").addColumn("x", "integer").execute();
      await db.insertInto("t").values({ x: 7 }).execute();
      console.log("wrote");`);
    equal(run.out, "wrote", run.err);
    equal(run.code, 0, "the child was killed: the SQLite thread kept it alive");
    equal(rowsOf(path), [7]);
  });
});

Deno.test("SQLite: statements sent as the database closes fail; one opened after runs before the process exits", async () => {
  await withFile(async (path) => {
    const run = await runScript(`
      import { sql } from "kysely";
      import { createSqliteKysely } from DIALECT;
      const db = await createSqliteKysely(${JSON.stringify(path)});
      await db.schema.createTable("t").addColumn("x", "text").execute();
      const outcome = (p) => p.then(() => "ran", (e) => "failed: " + e.message);
      // Sent as the close is: Kysely takes a few turns to hand a statement over, so these go after it.
      const read = outcome(sql\`select count(*) from t\`.execute(db));
      const write = outcome(db.insertInto("t").values({ x: "late" }).execute());
      await db.destroy();
      console.log(await read);
      console.log(await write);
      // Opened again (a store reopened in the same process): a write left unawaited still runs.
      const again = await createSqliteKysely(${JSON.stringify(path)});
      void again.insertInto("t").values({ x: "after" }).execute().then(() => again.destroy());`);
    equal(run.code, 0, run.err);
    equal(run.out, "failed: the SQLite database is closed\nfailed: the SQLite database is closed");
    equal(rowsOf(path), ["after"]);
  });
});

Deno.test("SQLite: a parameter that cannot reach the thread fails its statement alone; the process still exits", async () => {
  await withFile(async (path) => {
    const run = await runScript(`
      import { CompiledQuery } from "kysely";
      import { createSqliteKysely } from DIALECT;
      const db = await createSqliteKysely(${JSON.stringify(path)});
      await db.schema.createTable("t").addColumn("x", "text").execute();
      const bad = { toString() { return "x"; } };
      const err = await db.executeQuery(CompiledQuery.raw("insert into t values (?)", [bad])).then(() => "", (e) => e);
      console.log(err.name);
      await db.insertInto("t").values({ x: "ok" }).execute();`);
    equal(run.code, 0, "the child was killed: the SQLite thread kept it alive");
    equal(run.out, "TypeError", run.err);
    equal(rowsOf(path), ["ok"]);
  });
});

Deno.test("SQLite: a file that cannot be opened fails at open, naming it", async () => {
  await withFile(async (path) => {
    const err = await createSqliteKysely<Db>(`${path}/missing-dir/db.sqlite`).then(() => undefined, (e) => e);
    equal(err instanceof Error, true);
    equal((err as Error).message.includes(`${path}/missing-dir/db.sqlite`), true, String(err));
  });
});
