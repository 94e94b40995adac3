/** Leader election: the lease is renewed while the new leader takes the lead up, and a failed start is a loss. */
import assert from "node:assert/strict";
import { openStore } from "../store/kysely_store.ts";
import { ClusterStore, type Lease } from "./cluster_store.ts";
import { LeaseKeeper } from "./election.ts";
import { orWithin } from "../settle.ts";

/** A cluster store on a fresh SQLite file that tells when `acquire` (take or renew) has answered `n` times. */
async function withCluster(fn: (cluster: CountingCluster) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-election-" });
  const url = `sqlite:${dir}/s.sqlite`;
  await (await openStore(url)).close();
  const { db, kind } = await ClusterStore.open(url);
  const cluster = new CountingCluster(db, kind);
  try {
    await fn(cluster);
  } finally {
    await cluster.close();
    await Deno.remove(dir, { recursive: true });
  }
}

class CountingCluster extends ClusterStore {
  acquired = 0;
  /** The store is out of reach: every take or renewal fails. */
  down = false;
  readonly #waiters: { n: number; resolve: () => void }[] = [];

  override async acquire(name: string, holder: string, url: string, ttlMs: number): Promise<Lease> {
    if (this.down) throw new Error("the store is out of reach");
    const l = await super.acquire(name, holder, url, ttlMs);
    this.acquired++;
    for (const w of this.#waiters) if (this.acquired >= w.n) w.resolve();
    return l;
  }

  answered(n: number): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
}

Deno.test("LeaseKeeper: the lease is renewed while onAcquired is still taking the lead up", async () => {
  await withCluster(async (cluster) => {
    const lost = Promise.withResolvers<string>();
    const outcome = Promise.withResolvers<string>();
    const keeper = new LeaseKeeper({
      cluster,
      name: "resmgr",
      holder: "a",
      url: "http://a",
      ttlMs: 3_000,
      // Taking the lead up lasts until the lease has been renewed (a backend slow to start). Renewals that
      // waited for it would never come, and the lease would lapse.
      onAcquired: async () => {
        outcome.resolve(await Promise.race([cluster.answered(2).then(() => "renewed"), lost.promise]));
      },
      onLost: (why) => lost.resolve(why),
    });
    keeper.start();
    try {
      assert.equal(await outcome.promise, "renewed");
      assert.equal(keeper.held, true);
    } finally {
      await keeper.stop(true);
    }
  });
});

Deno.test("LeaseKeeper: a leader whose onAcquired fails gives the lead up as lost", async () => {
  await withCluster(async (cluster) => {
    const lost = Promise.withResolvers<string>();
    const keeper = new LeaseKeeper({
      cluster,
      name: "hostmgr",
      holder: "a",
      url: "http://a",
      ttlMs: 600,
      onAcquired: () => Promise.reject(new Error("the backend did not start")),
      onLost: (why) => lost.resolve(why),
    });
    keeper.start();
    try {
      // Not a leader that goes on renewing a lease it does not lead by.
      const renewing = cluster.answered(3).then(() => "renewed twice after its start failed");
      assert.equal(
        await Promise.race([lost.promise, renewing]),
        "cannot lead after taking lease hostmgr: the backend did not start",
      );
      assert.equal(keeper.held, false);
    } finally {
      await keeper.stop(true);
    }
  });
});

Deno.test("LeaseKeeper: a wall clock set back does not keep a leader whose store is out of reach", async () => {
  await withCluster(async (cluster) => {
    const acquired = Promise.withResolvers<void>();
    const lost = Promise.withResolvers<string>();
    const keeper = new LeaseKeeper({
      cluster,
      name: "resmgr",
      holder: "a",
      url: "http://a",
      ttlMs: 600,
      onAcquired: () => acquired.resolve(),
      onLost: (why) => lost.resolve(why),
    });
    const wallClock = Date.now;
    keeper.start();
    try {
      await acquired.promise;
      // The store goes out of reach and NTP sets the clock back an hour: the lease ends in the store when
      // its TTL has passed, and so must this process's belief that it leads.
      cluster.down = true;
      Date.now = () => wallClock() - 3_600_000;
      const outcome = await orWithin(lost.promise, 10_000, "still leading 10 s later");
      // Whichever notices first: the watchdog, the next renewal, or the failed renewal itself.
      assert.match(
        outcome,
        /^(lease resmgr was not renewed in time|the lease expired before it was renewed|cannot renew lease resmgr)/,
      );
      assert.equal(keeper.held, false);
    } finally {
      Date.now = wallClock;
      await keeper.stop(false);
    }
  });
});

Deno.test("LeaseKeeper: a leader campaigning again before its lease ran out takes a new term's token", async () => {
  await withCluster(async (cluster) => {
    const terms: number[] = [];
    const took = (n: number) => {
      const taken = Promise.withResolvers<void>();
      const keeper = new LeaseKeeper({
        cluster,
        name: "resmgr",
        holder: "a",
        url: "http://a",
        ttlMs: 3_000,
        after: terms.at(-1),
        onAcquired: (l) => void (terms.push(l.token), terms.length === n && taken.resolve()),
        onLost: () => {},
      });
      keeper.start();
      return { keeper, taken: taken.promise };
    };
    const first = took(1);
    await first.taken;
    // It stepped down (say, a start that failed) with the lease still live in the store.
    await first.keeper.stop(false);
    const second = took(2);
    try {
      await second.taken;
      assert.equal(terms.length, 2);
      assert.ok(terms[1] > terms[0], `token ${terms[1]} after ${terms[0]}: the others see a new leader`);
    } finally {
      await second.keeper.stop(true);
    }
  });
});
