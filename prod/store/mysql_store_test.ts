/**
 * Runs the Store conformance suite on MySQL/MariaDB. The server comes from PELOTON_TEST_MYSQL_URL (default
 * mysql://root@127.0.0.1:3306/); the test always works in a database of its own, made and dropped here, and
 * fails (never skips) when the server cannot be reached.
 */
import { deepStrictEqual as equal } from "node:assert/strict";
import { createConnection } from "mysql2/promise";
import { type KyselyStore, openStore } from "./kysely_store.ts";
import { openCountingStore } from "./counting_store.ts";
import { openConcurrently, storeSuite } from "./store_suite.ts";
import { createMysqlKysely, dropMysqlDatabase, parseMysqlUrl } from "./mysql_dialect.ts";
import { fullDiskSuite } from "./full_disk_suite.ts";
import { readWaitSuite } from "./read_wait_suite.ts";

/** The server's URL with a database name unique to this run (the given name, if any, as its prefix). */
function uniqueDatabaseUrl(label: string): string {
  const u = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
  const base = decodeURIComponent(u.pathname.replace(/^\//, "")) || "peloton_test";
  u.pathname = `/${base}_${label}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  return u.href;
}

const url = uniqueDatabaseUrl("suite");

const openWithHint = (url: string, options?: Parameters<typeof openStore>[1]) =>
  openStore(url, options).catch((err) => {
    throw new Error(
      `${err.message} (these tests need a MySQL server: start one or set PELOTON_TEST_MYSQL_URL)`,
      {
        cause: err,
      },
    );
  });

storeSuite(
  "KyselyStore on MySQL",
  () => openWithHint(url),
  () => dropMysqlDatabase(parseMysqlUrl(url)),
  {
    durable: true,
    migrate: (store) => (store as KyselyStore).migrate(),
    betweenQueryReads: (store, fn) => void ((store as KyselyStore).betweenQueryReads = fn),
    openCounting: () => openCountingStore(url),
    freshDatabase: () => {
      const fresh = uniqueDatabaseUrl("upgrade");
      return { url: fresh, drop: () => dropMysqlDatabase(parseMysqlUrl(fresh)) };
    },
  },
);

Deno.test("KyselyStore on MySQL: processes opening a new database at once migrate it once", async () => {
  const fresh = uniqueDatabaseUrl("concurrent");
  await (await openWithHint(fresh)).close();
  try {
    // Dropped again so that the processes below race to create and migrate it.
    await dropMysqlDatabase(parseMysqlUrl(fresh));
    await openConcurrently(fresh, 4);
    const db = await createMysqlKysely<{ kysely_migration: { name: string } }>(fresh);
    try {
      equal((await db.selectFrom("kysely_migration").select("name").execute()).map((r) => r.name), [
        "0001_initial",
        "0002_updates_volumes_configs",
        "0003_leases_members_frameworks",
        "0004_host_maintenance",
        "0005_jobs_owning_team",
        "0006_workflow_events",
        "0007_jobs_completion_time",
        "0008_host_pools",
        "0009_admin_locks",
        "0010_secret_info",
        "0011_event_write_keys",
        "0012_task_has_work",
        "0013_task_event_details",
      ]);
    } finally {
      await db.destroy();
    }
  } finally {
    await dropMysqlDatabase(parseMysqlUrl(fresh));
  }
});

// The server's own "The table ... is full" (ER_RECORD_FILE_FULL, 1114), as InnoDB answers when its disk is
// full: a trigger on the jobs table inserts into a MEMORY table kept at its smallest size, which `fill` fills
// and `free` empties. Making the server's disk full is not for a test to do.
fullDiskSuite("KyselyStore on MySQL (a full table)", async (options) => {
  const fresh = uniqueDatabaseUrl("full");
  const target = parseMysqlUrl(fresh);
  const store = await openWithHint(fresh, options);
  const conn = await createConnection(target);
  try {
    await conn.query("SET SESSION max_heap_table_size = 16384");
    await conn.query("CREATE TABLE disk (b BINARY(255)) ENGINE=MEMORY");
    await conn.query(
      "CREATE TRIGGER disk_full BEFORE INSERT ON jobs FOR EACH ROW INSERT INTO disk VALUES ('')",
    );
  } catch (err) {
    await conn.end();
    await store.close();
    await dropMysqlDatabase(target);
    throw err;
  }
  return {
    store,
    unreachable: () => store.unreachable(),
    where: `MySQL database ${target.database} on ${target.host}:${target.port}`,
    async fill() {
      try {
        for (;;) await conn.query("INSERT INTO disk VALUES ('')");
      } catch (err) {
        if ((err as { code?: string }).code !== "ER_RECORD_FILE_FULL") throw err;
      }
    },
    free: async () => void await conn.query("DELETE FROM disk"),
    async close() {
      await conn.end();
      await store.close();
      await dropMysqlDatabase(target);
    },
  };
});

readWaitSuite("KyselyStore on MySQL", async (claim) => {
  const fresh = uniqueDatabaseUrl("reads");
  const store = await openWithHint(fresh, { claim });
  return {
    store,
    close: async () => {
      await store.close();
      await dropMysqlDatabase(parseMysqlUrl(fresh));
    },
  };
});
