/** The SQLite dialect's lock waits: a statement that finds the file locked waits on timers, not in SQLite. */
import { deepStrictEqual as equal } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
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
    const db = createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
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
    const store = createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
    const leases = createSqliteKysely<Db>(path, { busyTimeoutMs: 5_000 });
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
    const db = createSqliteKysely<Db>(path, { busyTimeoutMs: 50 });
    const other = new DatabaseSync(path);
    try {
      await db.schema.createTable("t").addColumn("x", "integer").execute();
      other.exec("BEGIN IMMEDIATE");
      const err = await db.insertInto("t").values({ x: 1 }).execute().then(() => undefined, (e) => e);
      equal(isBusy(err), true, String(err));
      equal((err as Error).message, "database is locked");
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
