/** Runs the Store conformance suite on the SQLite store, plus concurrent opening by several processes. */
import { deepStrictEqual as equal } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { sql } from "kysely";
import { KyselyStore, openStore, openStoreDatabase } from "./kysely_store.ts";
import { migrateToLatest } from "./schema.ts";
import { fullDiskSuite, type OpenFullDisk } from "./full_disk_suite.ts";
import { readWaitSuite } from "./read_wait_suite.ts";
import { openCountingStore } from "./counting_store.ts";
import { makeJob, openConcurrently, storeSuite } from "./store_suite.ts";
import { createSqliteKysely } from "./sqlite_dialect.ts";
import { settlesWithin } from "../settle.ts";
import { fillFileSystem } from "../disk_testing.ts";

const dir = Deno.makeTempDirSync({ prefix: "peloton-store-" });

storeSuite(
  "KyselyStore on SQLite",
  () => openStore(`sqlite:${dir}/store.sqlite`),
  () => Deno.remove(dir, { recursive: true }),
  {
    durable: true,
    migrate: (store) => (store as KyselyStore).migrate(),
    betweenQueryReads: (store, fn) => void ((store as KyselyStore).betweenQueryReads = fn),
    openCounting: () => openCountingStore(`sqlite:${dir}/store.sqlite`),
    freshDatabase: () => {
      const file = `${dir}/upgrade-${crypto.randomUUID()}.sqlite`;
      return { url: `sqlite:${file}`, drop: () => Promise.resolve() }; // the whole directory goes at the end
    },
  },
);

Deno.test("KyselyStore on SQLite: processes opening a new file at once migrate it once", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-store-" });
  try {
    const url = `sqlite:${tmp}/concurrent.sqlite`;
    await openConcurrently(url, 4);
    const db = await createSqliteKysely<{ kysely_migration: { name: string } }>(`${tmp}/concurrent.sqlite`);
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
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("KyselyStore: a failed write with no done callback goes to onLostWrite, not into a log", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-store-" });
  const lost: Error[] = [];
  const store = await openStore(`sqlite:${tmp}/lost.sqlite`, { onLostWrite: (err) => lost.push(err) });
  try {
    store.write([{ kind: "job.put", job: makeJob("job-1", {}, { version: 2 }) }]);
    store.write([{ kind: "job.put", job: makeJob("job-1", {}, { version: 1 }) }]);
    await store.flush();
    equal(lost.map((e) => e.message), [
      "Cannot write job job-1: version 1 is not newer than the stored version 2",
    ]);
    equal((await store.getJob("job-1"))?.runtime.version, 2);
  } finally {
    await store.close();
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("KyselyStore: once a stop has begun, a write waits for a database out of reach only the stop's grace", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "peloton-store-" });
  const file = `${tmp}/stop.sqlite`;
  const store = await openStore(`sqlite:${file}`, { stopGraceMs: 300, sqlite: { busyTimeoutMs: 50 } });
  // Another process holds the write lock: the store's writes keep finding the database locked.
  const other = new DatabaseSync(file);
  other.exec("BEGIN IMMEDIATE");
  try {
    const outcome = new Promise<Error | undefined>((resolve) =>
      store.write([{ kind: "job.put", job: makeJob("job-stop") }], resolve)
    );
    // A daemon's stop flushes before it closes; the retries (300 s by default) must not hold that flush.
    store.stopping();
    equal(await settlesWithin(store.flush(), 20_000), true, "the flush still waited 20 s later");
    equal(/database is locked/.test(String(await outcome)), true, String(await outcome));
  } finally {
    other.exec("ROLLBACK");
    other.close();
    await store.close();
    await Deno.remove(tmp, { recursive: true });
  }
});

/** A store on a file of its own in a directory of its own, which `close` removes; `fill` and `free` to add. */
async function storeInDir(
  dir: string,
  options: Parameters<OpenFullDisk>[0],
): Promise<{ store: KyselyStore; file: string; db: Awaited<ReturnType<typeof openStoreDatabase>>["db"] }> {
  const file = `${dir}/store.sqlite`;
  const { db, kind } = await openStoreDatabase(`sqlite:${file}`);
  try {
    await migrateToLatest(db, kind);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { store: new KyselyStore(db, kind, options), file, db };
}

// SQLite refuses to grow the file past its connection's max_page_count as it does a full disk: SQLITE_FULL,
// "database or disk is full". The store's own (single) connection is given the limit, so its writes meet it.
fullDiskSuite("KyselyStore on SQLite (max_page_count)", async (options) => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-store-full-" });
  const { store, file, db } = await storeInDir(dir, options);
  const pragma = async (p: string) =>
    (await sql.raw(`pragma ${p}`).execute(db)).rows[0] as Record<string, number> | undefined;
  const max = (await pragma("max_page_count"))!.max_page_count;
  return {
    store,
    unreachable: () => store.unreachable(),
    where: `SQLite file ${file}`,
    fill: async () => void await pragma(`max_page_count = ${(await pragma("page_count"))!.page_count}`),
    free: async () => void await pragma(`max_page_count = ${max}`),
    close: async () => {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
});

// A real full file system: a tmpfs of 64 MiB that a file fills. Mounting needs root.
fullDiskSuite("KyselyStore on SQLite (a full tmpfs)", async (options) => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-store-tmpfs-" });
  const mount = async (...args: string[]) => {
    const out = await new Deno.Command(args[0], { args: args.slice(1), stderr: "piped" }).output();
    if (!out.success) throw new Error(`${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  };
  await mount("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir);
  const filler = `${dir}/filler`;
  try {
    const { store, file } = await storeInDir(dir, options);
    return {
      store,
      unreachable: () => store.unreachable(),
      where: `SQLite file ${file}`,
      fill: () => fillFileSystem(filler),
      free: async () => {
        try {
          await Deno.remove(filler);
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
        }
      },
      close: async () => {
        try {
          await store.close();
        } finally {
          await mount("umount", dir);
          await Deno.remove(dir);
        }
      },
    };
  } catch (err) {
    await mount("umount", dir);
    await Deno.remove(dir);
    throw err;
  }
}, { ignore: Deno.uid() !== 0 });

readWaitSuite("KyselyStore on SQLite", async (claim) => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-store-reads-" });
  const store = await openStore(`sqlite:${dir}/store.sqlite`, { claim });
  return {
    store,
    close: async () => {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
});
