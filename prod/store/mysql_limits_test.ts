/**
 * The MySQL store at its limits: a row over the server's max_allowed_packet is refused whole before anything
 * is written, and a read while the database is down answers unavailable at once, not behind stalled writes.
 */
import { deepStrictEqual as equal, match, ok } from "node:assert/strict";
import { createConnection } from "mysql2/promise";
import { StoreUnavailableError } from "../../core/ports/store.ts";
import { type KyselyStore, openStore } from "./kysely_store.ts";
import { dropMysqlDatabase, parseMysqlUrl } from "./mysql_dialect.ts";
import { makeJob, put } from "./store_suite.ts";
import { orWithin } from "../settle.ts";
import { Outage } from "./outage_testing.ts";

const LATE = Symbol("late");

/** Fails, rather than letting the test hang, if `p` is still pending after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  const r = await orWithin(p, ms, LATE);
  if (r === LATE) throw new Error(`${what}: still waiting after ${ms} ms`);
  return r;
}

function databaseUrl(label: string): URL {
  const u = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
  u.pathname = `/xfix_${label}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  return u;
}

async function maxAllowedPacket(url: string): Promise<number> {
  const conn = await createConnection({ ...parseMysqlUrl(url), database: undefined });
  try {
    const [rows] = await conn.query("SELECT @@max_allowed_packet AS p");
    return Number((rows as { p: number }[])[0].p);
  } finally {
    await conn.end();
  }
}

Deno.test("MySQL store: a batch with a row over max_allowed_packet is refused whole, naming sizes", async () => {
  const url = databaseUrl("limits").href;
  const lost: Error[] = [];
  const store = await openStore(url, { onLostWrite: (err) => lost.push(err) });
  try {
    const packet = await maxAllowedPacket(url);
    const big = makeJob("big", { description: "x".repeat(packet + 1024) });
    const batch = [{ kind: "job.put" as const, job: big }, {
      kind: "job.config" as const,
      jobId: "big",
      version: 1,
      config: big.config,
    }];
    const checked = store.tooLarge?.(batch);
    ok(checked, "the store's own check finds the batch too large");
    equal(checked.name, "StoreWriteTooLargeError");
    const err = await within(put(store, batch), 10_000, "the refused write");
    ok(err, "the write was refused");
    equal(err.name, "StoreWriteTooLargeError");
    match(
      err.message,
      new RegExp(`^Cannot store job big .* over its limit of \\d+ bytes for one row .*${packet}`),
    );
    equal(await store.getJob("big"), undefined, "nothing of the batch was written");
    equal(lost, []);
    // The store goes on: a write that fits is stored.
    equal(await put(store, [{ kind: "job.put", job: makeJob("small") }]), undefined);
    equal((await store.getJob("small"))?.jobId, "small");
  } finally {
    await store.close();
    await dropMysqlDatabase(parseMysqlUrl(url));
  }
});

Deno.test({
  name: "MySQL store: while the database is down, a read answers unavailable at once, not behind a write",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const direct = databaseUrl("outage");
    const outage = new Outage(parseMysqlUrl(direct.href));
    const via = new URL(direct.href);
    via.hostname = "127.0.0.1";
    via.port = String(outage.port);
    via.search = "?connectTimeout=1000";
    let store: KyselyStore | undefined;
    try {
      store = await openStore(via.href, { stopGraceMs: 1_000 });
      equal(await put(store, [{ kind: "job.put", job: makeJob("before") }]), undefined);
      equal(store.unreachable(), undefined);
      outage.down();
      const written = put(store, [{ kind: "job.put", job: makeJob("during") }]);
      // The write's first attempt fails; from then on a read does not wait for it.
      await new Promise((r) => setTimeout(r, 300));
      const started = performance.now();
      const read = await within(
        store.getJob("before").then(() => "answered", (e: Error) => e),
        2_000,
        "a read during the outage",
      );
      ok(read instanceof StoreUnavailableError, `got ${read}`);
      match(read.message, /^the store cannot be reached: /);
      ok(performance.now() - started < 1_000, `the read took ${performance.now() - started} ms`);
      match(store.unreachable() ?? "", /^the store cannot be reached: /);
      // Back up, the pending write goes in and a read sees it (read-your-writes).
      outage.up();
      equal(await within(written, 20_000, "the write after the outage"), undefined);
      equal((await store.getJob("during"))?.jobId, "during");
      equal(store.unreachable(), undefined);
    } finally {
      outage.up();
      await store?.close();
      outage.down();
      await dropMysqlDatabase(parseMysqlUrl(direct.href));
    }
  },
});
