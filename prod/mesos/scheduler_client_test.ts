/** SchedulerClient against the emulator: framework info, id persistence, loss detection, backoff, redirects. */
import assert from "node:assert/strict";
import { seededPrng } from "../../core/ports/prng.ts";
import {
  eventually,
  frameworkInfo,
  RawSubscription,
  shapeProblems,
  startTestMaster,
  type TestMaster,
} from "./_testing.ts";
import type { Call, Event } from "./protocol.ts";
import {
  FileFrameworkIdStore,
  MemoryFrameworkIdStore,
  MesosCallError,
  NotSubscribedError,
  SchedulerClient,
  type SchedulerClientOptions,
} from "./scheduler_client.ts";

interface Run {
  client: SchedulerClient;
  events: Event[];
  calls: Call[];
  disconnects: string[];
  store: MemoryFrameworkIdStore;
  subscribed(n: number): Promise<void>;
}

function run(url: string, extra: Partial<SchedulerClientOptions> = {}, id?: string): Run {
  const events: Event[] = [], calls: Call[] = [], disconnects: string[] = [];
  const store = new MemoryFrameworkIdStore(id);
  const client = new SchedulerClient({
    masterUrl: url,
    idStore: store,
    heartbeatMisses: 3,
    backoffMinMs: 20,
    backoffMaxMs: 200,
    random: () => 0.5,
    onEvent: (e) => events.push(e),
    onCall: (c) => calls.push(structuredClone(c)),
    onDisconnected: (r) => disconnects.push(r),
    ...extra,
  });
  client.start();
  const subscribed = (n: number) =>
    eventually(
      `${n} SUBSCRIBED events`,
      () => events.filter((e) => e.type === "SUBSCRIBED").length >= n ? true : undefined,
    )
      .then(() => undefined);
  return { client, events, calls, disconnects, store, subscribed };
}

async function withMaster(fn: (m: TestMaster) => Promise<void>, options = {}): Promise<void> {
  const m = await startTestMaster(options);
  try {
    await fn(m);
  } finally {
    await m.stop();
  }
  assert.deepEqual(await shapeProblems(m.calls, m.events), []);
}

Deno.test("client: subscribes with Peloton's framework info, persists the id, re-subscribes with it in both places", () =>
  withMaster(async (m) => {
    const r = run(m.url);
    try {
      await r.subscribed(1);
      const first = r.calls[0] as Extract<Call, { type: "SUBSCRIBE" }>;
      const info = first.subscribe.framework_info;
      assert.equal(first.framework_id, undefined, "a new framework has no id yet");
      assert.deepEqual(
        {
          user: info.user,
          name: info.name,
          roles: info.roles,
          principal: info.principal,
          checkpoint: info.checkpoint,
        },
        { user: "root", name: "Peloton", roles: ["peloton"], principal: "peloton", checkpoint: true },
      );
      assert.equal(info.failover_timeout, 60_000_000);
      assert.deepEqual(info.capabilities?.map((c) => c.type).sort(), [
        "GPU_RESOURCES",
        "MULTI_ROLE",
        "PARTITION_AWARE",
        "REVOCABLE_RESOURCES",
        "TASK_KILLING_STATE",
      ]);
      const id = r.client.frameworkId!;
      assert.equal(r.store.id, id);
      m.master.dropStreams();
      await r.subscribed(2);
      const again = r.calls.filter((c) => c.type === "SUBSCRIBE").at(-1) as Extract<
        Call,
        { type: "SUBSCRIBE" }
      >;
      assert.equal(again.framework_id?.value, id);
      assert.equal(again.subscribe.framework_info.id?.value, id);
      assert.deepEqual(r.disconnects, ["the master closed the event stream"]);
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: missed heartbeats and a silent partition both lead to a new subscription", () =>
  withMaster(async (m) => {
    const r = run(m.url);
    try {
      await r.subscribed(1);
      const stream = r.client.streamId;
      m.master.setHeartbeats(false);
      await eventually(
        "the loss to be detected",
        () => r.disconnects.find((d) => /missed heartbeats/.test(d)),
      );
      m.master.setHeartbeats(true);
      await r.subscribed(2);
      assert.notEqual(r.client.streamId, stream);
      m.master.partition();
      await r.subscribed(3);
      assert.equal(r.disconnects.filter((d) => /missed heartbeats/.test(d)).length, 2);
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: failed subscriptions back off exponentially, then recover", () =>
  withMaster(async (m) => {
    m.master.setLeader(null);
    const started: number[] = [];
    const r = run(m.url, { onCall: (c) => c.type === "SUBSCRIBE" && started.push(performance.now()) });
    try {
      await eventually("five attempts", () => started.length >= 5 ? true : undefined);
      const gaps = started.slice(1).map((t, i) => t - started[i]);
      // 20 ms doubling (×0.75 jitter): about 15, 30, 60, 120 ms.
      assert.ok(gaps[3] > gaps[0] * 3, `gaps grow: ${gaps.map((g) => g.toFixed(0))}`);
      assert.match(r.disconnects[0], /HTTP 503 No leader elected/);
      m.master.setLeader(undefined);
      await r.subscribed(1);
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: follows a 307 to the leading master", async () => {
  const leader = await startTestMaster();
  const follower = await startTestMaster();
  try {
    follower.master.setLeader(`127.0.0.1:${leader.master.port}`);
    const r = run(follower.url);
    try {
      await r.subscribed(1);
      assert.equal(r.client.masterUrl, leader.url);
      await r.client.revive(); // calls go to the leader too
    } finally {
      await r.client.stop();
    }
  } finally {
    await follower.stop();
    await leader.stop();
  }
});

Deno.test("client: re-chunked stream bytes decode to the same events", () =>
  withMaster(async (m) => {
    m.master.rechunk(seededPrng(3));
    const r = run(m.url);
    try {
      await eventually("offers", () => r.events.find((e) => e.type === "OFFERS"));
      const offers = r.events.flatMap((e) => e.type === "OFFERS" ? e.offers.offers : []);
      const zones = offers.flatMap((o) => o.attributes ?? []).filter((a) => a.name === "zone").map((a) =>
        a.text?.value
      );
      assert.ok(zones.includes("ünïcödé-区域-🚀"), JSON.stringify(zones));
    } finally {
      await r.client.stop();
    }
  }, { agents: [{ attributes: { zone: "ünïcödé-区域-🚀" } }] }));

Deno.test("client: calls need a subscription, carry the stream id, and report refusals", () =>
  withMaster(async (m) => {
    const r = run(m.url);
    try {
      await assert.rejects(r.client.revive(), NotSubscribedError);
      await r.subscribed(1);
      await r.client.reconcile([]);
      await r.client.suppress();
      const err = await r.client.acknowledge("agent", "task", btoa("short")).catch((e) => e);
      assert.ok(err instanceof MesosCallError);
      assert.equal(err.status, 400);
      assert.match(err.message, /Invalid UUID/);
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: an ERROR event stops it for good (framework removed)", () =>
  withMaster(async (m) => {
    const first = run(m.url, { framework: { failover_timeout: 0 } });
    await first.subscribed(1);
    const id = first.client.frameworkId!;
    await first.client.stop();
    await eventually("the framework to be removed", () => !m.master.core.framework(id));
    let fatal: string | undefined;
    const again = run(m.url, { onFatal: (msg) => (fatal = msg) }, id);
    try {
      await eventually("the ERROR", () => fatal);
      assert.equal(fatal, "Framework has been removed");
      const attempts = again.calls.length;
      await new Promise((res) => setTimeout(res, 100));
      assert.equal(again.calls.length, attempts, "no re-subscription after a fatal error");
    } finally {
      await again.client.stop();
    }
  }));

Deno.test("client: with onFrameworkRemoved, a removed framework's id is forgotten and it subscribes anew", () =>
  withMaster(async (m) => {
    const first = run(m.url, { framework: { failover_timeout: 0 } });
    await first.subscribed(1);
    const id = first.client.frameworkId!;
    await first.client.stop();
    await eventually("the framework to be removed", () => !m.master.core.framework(id));
    const removed: [string, string | undefined][] = [];
    let fatal: string | undefined;
    const again = run(m.url, {
      onFatal: (msg) => (fatal = msg),
      onFrameworkRemoved: (msg, was) => removed.push([msg, was]),
    }, id);
    try {
      await again.subscribed(1);
      assert.deepEqual(removed, [["Framework has been removed", id]]);
      assert.equal(fatal, undefined);
      assert.equal(again.client.fatal, undefined);
      const fresh = again.client.frameworkId!;
      assert.notEqual(fresh, id);
      assert.equal(again.store.id, fresh, "the new id stored in place of the removed one");
      // The new SUBSCRIBE names no framework: a new one.
      const subscribes = again.calls.filter((c) => c.type === "SUBSCRIBE");
      assert.equal(subscribes.at(-1)!.framework_id, undefined);
      assert.ok(m.master.core.framework(fresh)?.sub);
    } finally {
      await again.client.stop();
    }
  }));

Deno.test("client: HTTP basic authentication", () =>
  withMaster(async (m) => {
    const denied = run(m.url);
    await eventually("a 401", () => denied.disconnects.find((d) => /HTTP 401/.test(d)));
    await denied.client.stop();
    const r = run(m.url, { credentials: { principal: "peloton", secret: "s3cret" } });
    try {
      await r.subscribed(1);
    } finally {
      await r.client.stop();
    }
  }, { credentials: [{ principal: "peloton", secret: "s3cret" }] }));

Deno.test("client: FileFrameworkIdStore keeps the id across restarts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = new FileFrameworkIdStore(`${dir}/framework.json`);
    assert.equal(await store.load(), undefined);
    await store.save("abc-0000");
    assert.equal(await new FileFrameworkIdStore(`${dir}/framework.json`).load(), "abc-0000");
    // A removed framework's id is forgotten for good.
    await store.clear();
    await store.clear();
    assert.equal(await new FileFrameworkIdStore(`${dir}/framework.json`).load(), undefined);
    await Deno.writeTextFile(`${dir}/bad.json`, "{");
    await assert.rejects(
      new FileFrameworkIdStore(`${dir}/bad.json`).load(),
      /Cannot read the Mesos framework id/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A URL nothing listens on: a server started and shut down. */
async function deadUrl(): Promise<string> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response());
  await server.shutdown();
  return `http://127.0.0.1:${server.addr.port}`;
}

Deno.test("client: after the leader a 307 named dies, it asks the configured master again (HA failover)", async () => {
  const leader = await startTestMaster();
  const follower = await startTestMaster();
  try {
    follower.master.setLeader(`127.0.0.1:${leader.master.port}`);
    const r = run(follower.url);
    try {
      await r.subscribed(1);
      assert.equal(r.client.masterUrl, leader.url);
      // The leader goes away; the master first configured is elected.
      await leader.stop();
      follower.master.setLeader(undefined);
      await r.subscribed(2);
      assert.equal(r.client.masterUrl, follower.url);
      await r.client.revive();
    } finally {
      await r.client.stop();
    }
  } finally {
    await follower.stop();
    await leader.stop();
  }
});

Deno.test("client: a comma-separated list of masters is tried in turn", () =>
  withMaster(async (m) => {
    const r = run(`${await deadUrl()}, ${m.url}`);
    try {
      await r.subscribed(1);
      assert.equal(r.client.masterUrl, m.url);
      assert.match(r.disconnects[0], /event stream failed/);
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: a call answered 307 moves it to the leader the master names", async () => {
  const first = await startTestMaster();
  const second = await startTestMaster();
  try {
    const r = run(first.url);
    try {
      await r.subscribed(1);
      // The first master stops leading; its stream, still open, keeps beating.
      first.master.setLeader(`127.0.0.1:${second.master.port}`);
      const err = await r.client.revive().catch((e) => e);
      assert.ok(err instanceof MesosCallError && err.status === 307, String(err));
      await r.subscribed(2);
      assert.equal(r.client.masterUrl, second.url);
      assert.ok(second.master.core.framework(r.client.frameworkId)?.sub, "subscribed at the leader");
    } finally {
      await r.client.stop();
    }
  } finally {
    await second.stop();
    await first.stop();
  }
});

Deno.test("client: a call refused 403 on a half-open stream makes it subscribe again", () =>
  withMaster(async (m) => {
    // Heartbeat loss alone would take 100 s here: the refusal is what must bring the new subscription.
    const r = run(m.url, { heartbeatMisses: 1000 });
    try {
      await r.subscribed(1);
      // The master sees the connection end; the end never reaches the client.
      m.master.partition();
      m.master.dropStreams();
      const err = await r.client.revive().catch((e) => e);
      assert.ok(err instanceof MesosCallError && err.status === 403, String(err));
      await r.subscribed(2);
      assert.match(r.disconnects[0], /refused REVIVE \(HTTP 403 Framework is not subscribed\)/);
      await r.client.revive();
    } finally {
      await r.client.stop();
    }
  }));

Deno.test("client: a call refused for a stale stream id makes it subscribe again", () =>
  withMaster(async (m) => {
    const r = run(m.url, { heartbeatMisses: 1000 });
    try {
      await r.subscribed(1);
      const id = r.client.frameworkId!;
      // Another subscription with our id takes over; the "failed over" ERROR is lost in a partition.
      m.master.partition();
      const other = await RawSubscription.open(m.url, {
        framework_id: { value: id },
        type: "SUBSCRIBE",
        subscribe: { framework_info: { ...frameworkInfo(), id: { value: id } } },
      });
      try {
        await other.nextOf("SUBSCRIBED");
        // Two calls in flight on the stale stream: both refused, one new subscription.
        const errors = await Promise.all(
          [r.client.suppress(), r.client.revive()].map((p) => p.catch((e) => e)),
        );
        for (const err of errors) {
          assert.ok(err instanceof MesosCallError && err.status === 400, String(err));
          assert.match(err.message, /stream ID/);
        }
        await r.subscribed(2);
        assert.equal((await other.nextOf("ERROR")).error.message, "Framework failed over");
        assert.equal(r.calls.filter((c) => c.type === "SUBSCRIBE").length, 2);
        assert.equal(r.client.fatal, undefined);
      } finally {
        await other.close();
      }
    } finally {
      await r.client.stop();
    }
  }));
