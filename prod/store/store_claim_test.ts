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
import { ROOT } from "../testing.ts";
import { orWithin } from "../settle.ts";

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

/**
 * A TCP relay to the MySQL server that can cut the connections through it and refuse new ones, as a network
 * that fails and comes back.
 */
function faultyLink(target: { host: string; port: number }) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let down = false;
  const close = (c: Deno.Conn) => {
    conns.delete(c);
    try {
      c.close();
    } catch { /* closed already */ }
  };
  const pipe = (from: Deno.Conn, to: Deno.Conn) =>
    from.readable.pipeTo(to.writable).catch(() => {}).finally(() => {
      close(from);
      close(to);
    });
  const accepting = (async () => {
    for await (const client of listener) {
      if (down) {
        close(client);
        continue;
      }
      const server = await Deno.connect({ hostname: target.host, port: target.port });
      conns.add(client);
      conns.add(server);
      void pipe(client, server);
      void pipe(server, client);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    /** Cuts every connection through the link and refuses new ones until `restore`. */
    fail() {
      down = true;
      for (const c of [...conns]) close(c);
    },
    restore() {
      down = false;
    },
    async close() {
      this.fail();
      listener.close();
      await accepting;
    },
  };
}

Deno.test({
  name: "MySQL claims: an up cut off while a daemon claimed the store and left does not take it back",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const url = testDatabaseUrl("claimgone");
    const target = parseMysqlUrl(url);
    await ensureMysqlDatabase(target);
    const gate = lockBase(target.database);
    const link = faultyLink(target);
    const viaLink = new URL(url);
    viaLink.port = String(link.port);
    const conn = await admin(url);
    const holderOf = async () => {
      const [rows] = await conn.query("SELECT IS_USED_LOCK(?) AS id", [gate]);
      return (rows as { id: number | null }[])[0].id;
    };
    const claim = await claimStore(viaLink.href, "exclusive", "peloton up");
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      // The up's network fails and stays down; the server frees the lock of its connection.
      link.fail();
      await waitUntil("the server to free the up's lock", async () => (await holderOf()) === null);
      // Meanwhile a daemon is started on the store (it recovers from it and writes), and is stopped.
      const daemon = await claimStore(url, "shared", "peloton jobmgr");
      await daemon.release();
      // The network comes back: the up's memory is behind the store, so it must not write on.
      link.restore();
      const late = new Promise<string>((
        r,
      ) => (timer = setTimeout(() => r("the claim was taken back"), 10_000)));
      const why = await Promise.race([claim.lost, late]);
      assert.match(why, /^lost its claim on store .*: another process claimed it meanwhile$/);
      assert.equal(await holderOf(), null, "the up holds the store again");

      // A daemon's dropped connection, with no up in between, is taken back as before.
      const again = await claimStore(url, "shared", "peloton jobmgr");
      const shared = async () => {
        const [rows] = await conn.query(
          "SELECT connection_id AS id, IS_USED_LOCK(lock_name) AS used FROM peloton_store_claims WHERE mode = 'shared'",
        );
        return (rows as { id: number; used: number | null }[])[0];
      };
      const first = (await shared()).id;
      await conn.query(`KILL CONNECTION ${Number(first)}`);
      await waitUntil("the daemon's claim to be taken back", async () => {
        const row = await shared();
        return row.id !== first && row.used === row.id;
      });
      await again.release();
    } finally {
      clearTimeout(timer);
      await claim.release();
      await link.close();
      await conn.end();
      await dropMysqlDatabase(target);
    }
  },
});

/**
 * A TCP relay to the MySQL server that can hold the server's answers back (`delay`), as a server or a machine
 * too busy to answer at once does, the connection staying up; `Infinity` holds them until the delay is cut.
 */
function slowLink(target: { host: string; port: number }) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let delayMs = 0;
  const close = (c: Deno.Conn) => {
    conns.delete(c);
    try {
      c.close();
    } catch { /* closed already */ }
  };
  const pump = async (from: Deno.Conn, to: Deno.Conn, delayed: boolean) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        const chunk = buf.slice(0, n);
        const at = performance.now();
        while (delayed && performance.now() < at + delayMs) await new Promise((r) => setTimeout(r, 20));
        for (let off = 0; off < n;) off += await to.write(chunk.subarray(off));
      }
    } catch { /* closed */ }
    close(from);
    close(to);
  };
  const accepting = (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: target.host, port: target.port });
      conns.add(client).add(server);
      void pump(client, server, false);
      void pump(server, client, true);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    /** From now on the server's bytes reach the client `ms` after they came (those held too). */
    delay(ms: number) {
      delayMs = ms;
    },
    async close() {
      delayMs = 0;
      for (const c of [...conns]) close(c);
      listener.close();
      await accepting;
    },
  };
}

/** What `console.error` is given until `restore`, instead of printing it. */
function capturedErrors() {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void lines.push(args.map(String).join(" "));
  return { lines, restore: () => void (console.error = original) };
}

const PENDING = Symbol("pending");

/**
 * An exclusive claim on a fresh database whose connection goes through a link that can be slowed or silenced,
 * and a store on it: `holderOf` reads which connection holds the claim's lock, `put` writes a job's version,
 * `errors` captures what is logged; `close` undoes it all.
 */
async function claimThroughSlowLink(label: string, opts: Parameters<typeof claimStore>[3] = {}) {
  const url = testDatabaseUrl(label);
  const target = parseMysqlUrl(url);
  await ensureMysqlDatabase(target);
  const gate = lockBase(target.database);
  const link = slowLink(target);
  const viaLink = new URL(url);
  viaLink.port = String(link.port);
  const conn = await admin(url);
  const holderOf = async () => {
    const [rows] = await conn.query("SELECT IS_USED_LOCK(?) AS id", [gate]);
    return (rows as { id: number | null }[])[0].id;
  };
  const errors = capturedErrors();
  const claim = await claimStore(viaLink.href, "exclusive", "peloton up", opts);
  const store = await openStore(url, { claim, retryForMs: 20_000 });
  const put = (version: number) =>
    write(store, [{ kind: "job.put", job: makeJob("job-1", {}, { version }) }]);
  const close = async () => {
    errors.restore();
    await store.close();
    await claim.release();
    await link.close();
    await conn.end();
    await dropMysqlDatabase(target);
  };
  return { link, holderOf, errors, claim, put, close };
}

Deno.test({
  name: "MySQL claims: a keep-alive answered late is not a lost claim: writes go on, the lock stays",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { link, holderOf, errors, claim, put, close } = await claimThroughSlowLink("claimslow");
    try {
      assert.equal(await put(1), undefined);
      const holder = await holderOf();
      // The claim's keep-alive is answered 8 s late, far past the 5 s it was once given.
      link.delay(8_000);
      await new Promise((r) => setTimeout(r, 6_500));
      assert.equal(await orWithin(put(2), 2_000, PENDING), undefined, "a write while the answer is late");
      assert.equal(await holderOf(), holder, "the claim's connection holds the lock throughout");
      link.delay(0);
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(await holderOf(), holder);
      assert.equal(await orWithin(claim.lost, 0, PENDING), PENDING);
      assert.deepEqual(errors.lines.filter((l) => /Store claim/.test(l)), [], "the claim was never dropped");
      assert.equal(await put(3), undefined);
    } finally {
      await close();
    }
  },
});

Deno.test({
  name:
    "MySQL claims: a claim whose connection stays silent past the bound is taken back; writes wait meanwhile",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { link, holderOf, errors, claim, put, close } = await claimThroughSlowLink("claimsilent", {
      silentLimitMs: 1_000,
    });
    try {
      assert.equal(await put(1), undefined);
      const holder = await holderOf();
      // No answer comes back at all, as from a machine cut off with no reset to notice.
      link.delay(Infinity);
      await waitUntil("the claim to be dropped", () => errors.lines.some((l) => /interrupted/.test(l)));
      assert.match(
        errors.lines[0],
        /^Store claim on .* interrupted \(its connection did not answer for \d+ s\)/,
      );
      // Its connection gone, another process could take the lock: nothing is written until it is taken back.
      const waiting = put(2);
      assert.equal(await orWithin(waiting, 500, PENDING), PENDING, "a write while the claim is retaken");
      link.delay(0);
      assert.equal(await orWithin(waiting, 15_000, PENDING), undefined);
      assert.notEqual(await holderOf(), holder, "taken back on a new connection");
      assert.equal(await orWithin(claim.lost, 0, PENDING), PENDING);
    } finally {
      await close();
    }
  },
});

Deno.test({
  name: "MySQL claims: a database not created yet is created first, as openStore does, so up starts on it",
  sanitizeResources: false,
  async fn() {
    const url = testDatabaseUrl("claimnew");
    try {
      const claim = await claimStore(url, "exclusive", "peloton up");
      const store = await openStore(url, { claim });
      try {
        assert.equal(await write(store, [{ kind: "job.put", job: makeJob("job-1") }]), undefined);
      } finally {
        await store.close();
        await claim.release();
      }
    } finally {
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

Deno.test("SQLite claims: one whose holder cannot be written names the store and gives its lock back", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store_claim_test_" });
  const url = `sqlite:${dir}/peloton.sqlite`;
  // Twice, in a process whose files may not grow (ulimit -f 0): each claim fails to write its holder.
  const code = `import { claimStore } from "./prod/store/store_claim.ts";
for (let i = 0; i < 2; i++) {
  try {
    await (await claimStore(Deno.args[0], "exclusive", "peloton up")).release();
    console.log("claimed");
  } catch (e) {
    console.log(e.message);
  }
}`;
  try {
    const run = await new Deno.Command("sh", {
      args: ["-c", 'trap "" XFSZ; ulimit -f 0; exec "$0" eval "$1" "$2"', Deno.execPath(), code, url],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(run.stdout).trim().split("\n");
    assert.equal(lines.length, 2, new TextDecoder().decode(run.stderr));
    // The second is not refused by the first one's lock, as if another process held the store.
    for (const line of lines) {
      assert.match(line, new RegExp(`^Cannot claim SQLite store ${dir}/peloton\\.sqlite: File too large`));
    }
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
