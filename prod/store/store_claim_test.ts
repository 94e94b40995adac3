/** Store claims on MySQL and SQLite: one `up` or many daemons, refusals naming the holder, loss and take-back. */
import assert from "node:assert/strict";
import { createConnection } from "mysql2/promise";
import { openStore } from "./kysely_store.ts";
import { dropMysqlDatabase, ensureMysqlDatabase, parseMysqlUrl, redact } from "./mysql_dialect.ts";
import {
  claimStore,
  lockBase,
  type StoreClaim,
  StoreClaimLostError,
  StoreInUseError,
} from "./store_claim.ts";
import { makeJob, put as write } from "./store_suite.ts";
import { testDatabaseUrl } from "../testing_cluster.ts";

async function refused(take: () => Promise<StoreClaim>): Promise<StoreInUseError> {
  let claim: StoreClaim;
  try {
    claim = await take();
  } catch (e) {
    if (e instanceof StoreInUseError) return e;
    throw e;
  }
  await claim.release();
  throw new Error("the store was claimed although it is held");
}

/** A connection of the test's own to the database, to look at and break claims. */
async function admin(url: string) {
  const t = parseMysqlUrl(url);
  return await createConnection({ ...t, supportBigNumbers: true, bigNumberStrings: false });
}

async function waitUntil(what: string, cond: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const HOLDER = (by: string) =>
  `pid ${Deno.pid} on ${Deno.hostname().replace(/[.]/g, "\\.")} \\(${by}, started [^)]+\\)`;

Deno.test({
  name: "MySQL claims: an up excludes every other claim, daemons share, each refusal names the holder",
  sanitizeResources: false,
  async fn() {
    const url = testDatabaseUrl("claim");
    await ensureMysqlDatabase(parseMysqlUrl(url));
    const store = redact(url).replace(/[.$]/g, "\\$&");
    try {
      const up = await claimStore(url, "exclusive", "peloton up at A");
      const again = await refused(() => claimStore(url, "exclusive", "peloton up at B"));
      assert.match(again.message, new RegExp(`^store ${store} is in use by ${HOLDER("peloton up at A")}$`));
      const daemon = await refused(() => claimStore(url, "shared", "peloton jobmgr"));
      assert.match(daemon.message, new RegExp(`in use by ${HOLDER("peloton up at A")}$`));
      await up.release();
      await up.release();

      const jobmgr = await claimStore(url, "shared", "peloton jobmgr at J");
      const resmgr = await claimStore(url, "shared", "peloton resmgr at R");
      const blocked = await refused(() => claimStore(url, "exclusive", "peloton up at C"));
      assert.match(
        blocked.message,
        new RegExp(`in use by ${HOLDER("peloton jobmgr at J")} and 1 other daemons$`),
      );
      await jobmgr.release();
      await resmgr.release();
      (await claimStore(url, "exclusive", "peloton up at D")).release();
    } finally {
      await dropMysqlDatabase(parseMysqlUrl(url));
    }
  },
});

Deno.test({
  name: "MySQL claims: a dropped connection is taken back and writes go on; a claim taken meanwhile is lost",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const url = testDatabaseUrl("claimlost");
    await ensureMysqlDatabase(parseMysqlUrl(url));
    const gate = lockBase(parseMysqlUrl(url).database);
    const conn = await admin(url);
    const claim = await claimStore(url, "exclusive", "peloton up");
    const store = await openStore(url, { claim, retryForMs: 20_000 });
    const put = (version: number) =>
      write(store, [{ kind: "job.put", job: makeJob("job-1", {}, { version }) }]);
    const holderOf = async () => {
      const [rows] = await conn.query("SELECT IS_USED_LOCK(?) AS id", [gate]);
      return (rows as { id: number | null }[])[0].id;
    };
    try {
      assert.equal(await put(1), undefined);
      // As when the server drops the connection: the lock goes with it, nobody else claims, it comes back.
      const first = await holderOf();
      await conn.query(`KILL CONNECTION ${Number(first)}`);
      await waitUntil("the claim to be taken back", async () => ![null, first].includes(await holderOf()));
      assert.equal(await put(2), undefined);

      // Now another process takes the lock the moment the connection dies, and claims the store.
      const taker = await admin(url);
      const waiting = taker.query("SELECT GET_LOCK(?, 10) AS got", [gate]);
      await new Promise((r) => setTimeout(r, 200));
      await conn.query(`KILL CONNECTION ${Number(await holderOf())}`);
      assert.equal(((await waiting)[0] as { got: number }[])[0].got, 1, "the other process took the lock");
      await taker.query(
        "REPLACE INTO peloton_store_claims (lock_name, mode, connection_id, holder) VALUES (?, 'exclusive', " +
          "CONNECTION_ID(), ?)",
        [gate, JSON.stringify({ by: "peloton up elsewhere", pid: 1, host: "h", startedAt: "t" })],
      );
      await taker.query("SELECT RELEASE_LOCK(?)", [gate]);
      const why = await claim.lost;
      assert.match(why, /^lost its claim on store .*: another process claimed it meanwhile$/);
      const err = await put(3);
      assert.ok(err instanceof StoreClaimLostError, String(err));
      assert.equal((await store.getJob("job-1"))?.runtime.version, 2, "nothing was written after the loss");
      await taker.end();
    } finally {
      await store.close();
      await claim.release();
      await conn.end();
      await dropMysqlDatabase(parseMysqlUrl(url));
    }
  },
});

Deno.test("SQLite claims: flock beside the file; an up excludes daemons and daemons an up", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store_claim_test_" });
  const url = `sqlite:${dir}/peloton.sqlite`;
  try {
    const up = await claimStore(url, "exclusive", "peloton up at A");
    const again = await refused(() => claimStore(url, "exclusive", "peloton up at B"));
    assert.match(again.message, new RegExp(`^store ${url} is in use by ${HOLDER("peloton up at A")}$`));
    await refused(() => claimStore(url, "shared", "peloton jobmgr"));
    await up.release();
    const jobmgr = await claimStore(url, "shared", "peloton jobmgr");
    const resmgr = await claimStore(url, "shared", "peloton resmgr");
    const blocked = await refused(() => claimStore(url, "exclusive", "peloton up at C"));
    assert.match(blocked.message, /in use by daemons started on their own/);
    await jobmgr.release();
    await resmgr.release();
    await (await claimStore(url, "exclusive", "peloton up at D")).release();
    await (await claimStore("sqlite::memory:", "exclusive", "x")).release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lock names: readable for plain database names, hashed when long or mixed-case", () => {
  assert.equal(lockBase("qa_ops"), "peloton:qa_ops");
  assert.match(lockBase("QA_ops"), /^peloton:#[0-9a-f]{16}$/);
  assert.notEqual(lockBase("QA_ops"), lockBase("qa_OPS"));
  assert.ok(`${lockBase("x".repeat(64))}:12345678`.length <= 64);
});
