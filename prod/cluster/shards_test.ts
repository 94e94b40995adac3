/** Shard ownership at shutdown: a stop waits for the balancing step under way, and leaves no shard held. */
import assert from "node:assert/strict";
import { openStore } from "../store/kysely_store.ts";
import { ClusterStore, type Lease } from "./cluster_store.ts";
import { Registry, SHARD_LEASE_PREFIX } from "./registry.ts";
import { ShardOwner } from "./shards.ts";
import { orWithin } from "../settle.ts";

/** A cluster store on a fresh SQLite file whose lease takes wait until the test lets them through. */
class GatedCluster extends ClusterStore {
  readonly takes: string[] = [];
  #gate = Promise.withResolvers<void>();
  #waiting = Promise.withResolvers<void>();

  override async acquire(name: string, holder: string, url: string, ttlMs: number): Promise<Lease> {
    this.takes.push(name);
    this.#waiting.resolve();
    await this.#gate.promise;
    return super.acquire(name, holder, url, ttlMs);
  }

  /** Resolves once a take is waiting at the gate. */
  waiting(): Promise<void> {
    return this.#waiting.promise;
  }

  open(): void {
    this.#gate.resolve();
  }
}

/** The cluster tables of a fresh SQLite store in a directory of its own. */
async function clusterTables() {
  const dir = await Deno.makeTempDir({ prefix: "peloton-shards-" });
  const url = `sqlite:${dir}/s.sqlite`;
  await (await openStore(url)).close();
  return { dir, ...(await ClusterStore.open(url)) };
}

Deno.test("ShardOwner.stop waits for a shard take under way, and the shard it took is handed back", async () => {
  const { dir, db, kind } = await clusterTables();
  const cluster = new GatedCluster(db, kind);
  const registry = new Registry(cluster);
  const adopted: number[] = [];
  const owner = new ShardOwner({
    cluster,
    registry,
    holder: "jm-a",
    url: "http://a",
    ttlMs: 60_000,
    shards: 4,
    adopt: (k) => (adopted.push(k), Promise.resolve()),
    release: () => Promise.resolve(),
    onLost: (why) => assert.fail(`lost: ${why}`),
  });
  try {
    owner.start();
    await cluster.waiting();
    const stopped = owner.stop(true);
    // The take was sent before the stop; it is answered after it.
    cluster.open();
    await stopped;
    const live = (await cluster.leases(SHARD_LEASE_PREFIX)).filter((l) =>
      l.holder === "jm-a" && l.expiresMs > cluster.now()
    );
    assert.deepEqual(live.map((l) => l.name), [], "no shard is left held by a stopped job manager");
    assert.deepEqual(adopted, [], "nothing was adopted after the stop");
    assert.equal(owner.held.size, 0);
    assert.equal(cluster.takes.length, 1, "no shard was taken after the stop");
  } finally {
    await cluster.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A cluster store that can go out of reach: every take and renewal then fails. */
class FlakyCluster extends ClusterStore {
  down = false;

  override acquire(name: string, holder: string, url: string, ttlMs: number): Promise<Lease> {
    return this.down
      ? Promise.reject(new Error("the store is out of reach"))
      : super.acquire(name, holder, url, ttlMs);
  }

  override renew(names: string[], holder: string, ttlMs: number): Promise<Map<string, Lease>> {
    return this.down
      ? Promise.reject(new Error("the store is out of reach"))
      : super.renew(names, holder, ttlMs);
  }
}

Deno.test("ShardOwner: a wall clock set back does not keep shards whose store is out of reach", async () => {
  const { dir, db, kind } = await clusterTables();
  const cluster = new FlakyCluster(db, kind);
  const adopted = Promise.withResolvers<void>();
  const lost = Promise.withResolvers<string>();
  const owner = new ShardOwner({
    cluster,
    registry: new Registry(cluster),
    holder: "jm-a",
    url: "http://a",
    ttlMs: 600,
    shards: 1,
    adopt: () => (adopted.resolve(), Promise.resolve()),
    release: () => Promise.resolve(),
    onLost: (why) => lost.resolve(why),
  });
  const wallClock = Date.now;
  try {
    owner.start();
    await adopted.promise;
    // Out of reach, and the clock set back an hour: the shard's lease ends in the store when its TTL has
    // passed, and another job manager takes its jobs; this one must stop driving them by then.
    cluster.down = true;
    Date.now = () => wallClock() - 3_600_000;
    const outcome = await orWithin(lost.promise, 10_000, "still driving the shard 10 s later");
    assert.equal(outcome, "shard 0's lease was not renewed in time");
  } finally {
    Date.now = wallClock;
    await owner.stop(false);
    await cluster.close();
    await Deno.remove(dir, { recursive: true });
  }
});
