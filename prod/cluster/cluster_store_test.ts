/** Leases, fencing and membership on both stores: SQLite and MySQL (the CI's MariaDB). */
import assert from "node:assert/strict";
import { openStore } from "../store/kysely_store.ts";
import { dropMysqlDatabase, parseMysqlUrl } from "../store/mysql_dialect.ts";
import { testDatabaseUrl } from "../testing_cluster.ts";
import { ClusterStore } from "./cluster_store.ts";
import { FencedError } from "../store/fence.ts";

/** Runs `fn` with a migrated store and its cluster tables, a clock the test moves, on each store kind. */
function onBothStores(name: string, fn: (url: string, clock: { ms: number }) => Promise<void>): void {
  Deno.test(`${name} (SQLite)`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "peloton-cluster-" });
    try {
      await fn(`sqlite:${dir}/s.sqlite`, { ms: 1_000_000 });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
  Deno.test(`${name} (MySQL)`, async () => {
    const url = testDatabaseUrl("cluster");
    try {
      await fn(url, { ms: 1_000_000 });
    } finally {
      await dropMysqlDatabase(parseMysqlUrl(url));
    }
  });
}

onBothStores(
  "leases: one holder at a time; a new term after expiry has the next token",
  async (url, clock) => {
    await (await openStore(url)).close();
    const c = await ClusterStore.open(url, () => clock.ms);
    try {
      const a = await c.acquire("resmgr", "a", "http://a", 1000);
      assert.deepEqual([a.holder, a.token], ["a", 1]);
      assert.equal((await c.acquire("resmgr", "b", "http://b", 1000)).holder, "a", "b must wait");
      clock.ms += 500;
      const renewed = await c.acquire("resmgr", "a", "http://a", 1000);
      assert.deepEqual([renewed.token, renewed.expiresMs], [1, clock.ms + 1000]);
      clock.ms += 1001;
      const b = await c.acquire("resmgr", "b", "http://b", 1000);
      assert.deepEqual([b.holder, b.token, b.url], ["b", 2, "http://b"]);
      // A former holder coming back finds the lease taken.
      assert.equal((await c.acquire("resmgr", "a", "http://a", 1000)).holder, "b");
      // Renewing several at once reports the ones lost.
      await c.acquire("shard-1", "b", "http://b", 1000);
      const many = await c.renew(["resmgr", "shard-1"], "b", 1000);
      assert.deepEqual([...many.values()].map((l) => [l.name, l.holder]), [["resmgr", "b"], [
        "shard-1",
        "b",
      ]]);
      await c.release("resmgr", "b", 2);
      assert.equal((await c.acquire("resmgr", "a", "http://a", 1000)).token, 3, "released: taken at once");
    } finally {
      await c.close();
    }
  },
);

onBothStores("fencing: writes of a holder whose lease passed on are refused", async (url, clock) => {
  await (await openStore(url)).close();
  const c = await ClusterStore.open(url, () => clock.ms);
  let fence = { name: "jobmgr-shard-0", holder: "a", token: 1 };
  const store = await openStore(url, { fences: () => [fence] });
  try {
    await c.acquire("jobmgr-shard-0", "a", "http://a", 1000);
    const job = (id: string) => ({
      kind: "respool.put" as const,
      pool: { id, path: `/${id}`, parentId: "root", config: { name: id } as never },
    });
    const write = (id: string) => new Promise<Error | undefined>((r) => store.write([job(id)], r));
    assert.equal(await write("p1"), undefined);
    clock.ms += 2000;
    await c.acquire("jobmgr-shard-0", "b", "http://b", 1000);
    const err = await write("p2");
    assert.ok(err instanceof FencedError, String(err));
    assert.match(err.message, /now held by b with token 2/);
    fence = { name: "jobmgr-shard-0", holder: "b", token: 2 };
    assert.equal(await write("p3"), undefined);
    assert.deepEqual((await store.respools()).map((p) => p.id), ["p1", "p3"]);
  } finally {
    await store.close();
    await c.close();
  }
});

onBothStores("members: live until their heartbeat expires; the framework id is kept", async (url, clock) => {
  await (await openStore(url)).close();
  const c = await ClusterStore.open(url, () => clock.ms);
  try {
    await c.heartbeat({ instanceId: "x", role: "jobmgr", url: "http://x", startedMs: 1 }, 1000);
    await c.heartbeat({ instanceId: "y", role: "placement", url: "http://y", startedMs: 2 }, 3000);
    assert.deepEqual((await c.members()).map((m) => m.instanceId), ["x", "y"]);
    clock.ms += 2000;
    assert.deepEqual((await c.members()).map((m) => m.instanceId), ["y"]);
    await c.leave("y");
    assert.deepEqual(await c.members(), []);
    assert.equal(await c.frameworkId("Peloton"), undefined);
    await c.saveFrameworkId("Peloton", "fw-1", "host-a");
    await c.saveFrameworkId("Peloton", "fw-2", "host-b");
    assert.equal(await c.frameworkId("Peloton"), "fw-2");
  } finally {
    await c.close();
  }
});
