/** Mesos's `scheduler_tests.cpp` cases through our SchedulerClient: emulator always, MESOS_MASTER_URL when set. */
import assert from "node:assert/strict";
import { conformance, type Target } from "./_conformance.ts";
import { eventually, frameworkInfo } from "./_testing.ts";
import type { Event, EventOf, Offer, TaskStatus } from "./protocol.ts";
import { MemoryFrameworkIdStore, SchedulerClient, type SchedulerClientOptions } from "./scheduler_client.ts";

const USER = Deno.env.get("MESOS_USER") ?? "root";

/** A client plus the events it saw, with waits that skip what a test does not care about. */
class Harness {
  readonly events: Event[] = [];
  readonly store: MemoryFrameworkIdStore;
  readonly client: SchedulerClient;
  fatal?: string;
  #cursor = 0;

  constructor(readonly t: Target, id?: string, extra: Partial<SchedulerClientOptions> = {}) {
    this.store = new MemoryFrameworkIdStore(id);
    this.client = new SchedulerClient({
      masterUrl: t.url,
      framework: { user: USER, name: "conformance", failover_timeout: 30 },
      idStore: this.store,
      heartbeatMisses: 3,
      backoffMinMs: 50,
      backoffMaxMs: 500,
      random: () => 0.5,
      onEvent: (e) => {
        this.events.push(e);
        t.session.seen.push(e);
        // Acknowledge like a scheduler that processed the update (only updates carrying a uuid).
        if (e.type === "UPDATE" && e.update.status.uuid && this.autoAck) {
          const s = e.update.status;
          this.client.acknowledge(s.agent_id!.value, s.task_id.value, s.uuid!).catch(() => {});
        }
      },
      onFatal: (m) => (this.fatal = m),
      onCall: (c) => t.session.sent.push(c),
      ...extra,
    });
  }

  autoAck = true;

  async start(): Promise<EventOf<"SUBSCRIBED">> {
    this.client.start();
    return await this.next("SUBSCRIBED");
  }

  /** The next event of `type` after the ones already consumed, matching `pred`. */
  async next<T extends Event["type"]>(
    type: T,
    pred: (e: EventOf<T>) => boolean = () => true,
    timeoutMs = 10_000,
  ) {
    return await eventually(`${type} event`, () => {
      for (; this.#cursor < this.events.length; this.#cursor++) {
        const e = this.events[this.#cursor];
        if (e.type === type && pred(e as EventOf<T>)) {
          this.#cursor++;
          return e as EventOf<T>;
        }
      }
      return undefined;
    }, timeoutMs);
  }

  /** No event of `type` arrives within `ms`. */
  async none(type: Event["type"], ms: number): Promise<void> {
    const from = this.events.length;
    await new Promise((r) => setTimeout(r, ms));
    const late = this.events.slice(from).filter((e) => e.type === type);
    assert.equal(late.length, 0, `unexpected ${type}: ${JSON.stringify(late)}`);
  }

  status(taskId: string, state: string): Promise<EventOf<"UPDATE">> {
    return this.next(
      "UPDATE",
      (e) => e.update.status.task_id.value === taskId && e.update.status.state === state,
    );
  }

  /** Launches one small command task on the first offer that fits it. */
  async launch(command: string, diskMb?: number): Promise<{ taskId: string; agentId: string; offer: Offer }> {
    const fits = (o: Offer) =>
      o.resources.some((r) => r.name === "cpus" && (r.scalar?.value ?? 0) >= 0.1) &&
      o.resources.some((r) => r.name === "mem" && (r.scalar?.value ?? 0) >= 32);
    const e = await this.next("OFFERS", (e) => e.offers.offers.some(fits));
    const offer = e.offers.offers.find(fits)!;
    const taskId = `conformance-${crypto.randomUUID()}`;
    const resources = [
      { name: "cpus", type: "SCALAR" as const, scalar: { value: 0.1 }, role: "*" },
      { name: "mem", type: "SCALAR" as const, scalar: { value: 32 }, role: "*" },
      ...(diskMb ? [{ name: "disk", type: "SCALAR" as const, scalar: { value: diskMb }, role: "*" }] : []),
    ];
    await this.client.accept([offer.id.value], [{
      type: "LAUNCH",
      launch: {
        task_infos: [{
          name: "conformance",
          task_id: { value: taskId },
          agent_id: offer.agent_id,
          resources,
          command: { shell: true, value: command },
        }],
      },
    }], { refuse_seconds: 0 });
    return { taskId, agentId: offer.agent_id.value, offer };
  }

  async stop(teardown = true): Promise<void> {
    if (teardown && this.client.subscribed) await this.client.teardown().catch(() => {});
    await this.client.stop();
  }
}

async function withHarness(t: Target, fn: (h: Harness) => Promise<void>, id?: string): Promise<void> {
  const h = new Harness(t, id);
  try {
    await fn(h);
  } finally {
    await h.stop();
  }
}

conformance("SchedulerTest.Subscribe", (t) =>
  withHarness(t, async (h) => {
    const e = await h.start();
    assert.ok(e.subscribed.framework_id.value);
    assert.equal(
      await h.store.load(),
      e.subscribed.framework_id.value,
      "the id is persisted before anything else",
    );
    assert.ok(e.subscribed.heartbeat_interval_seconds! > 0);
    assert.ok(e.subscribed.master_info?.id);
    assert.ok(h.client.streamId);
  }));

conformance("SchedulerTest.SubscribeDrop", async (t) => {
  const dropped = await t.session.subscribe(frameworkInfo({ failover_timeout: 30 }));
  await dropped.sub.close();
  if (t.emu) {
    await eventually(
      "the master to see the drop",
      () => t.emu!.master.core.framework(dropped.frameworkId)?.sub === undefined,
    );
  }
  // The dropped framework re-subscribes with its id and carries on.
  await withHarness(t, async (h) => {
    const e = await h.start();
    assert.equal(e.subscribed.framework_id.value, dropped.frameworkId);
  }, dropped.frameworkId);
  t.session.frameworks.delete(dropped.frameworkId);
});

conformance("SchedulerTest.SchedulerFailover", (t) =>
  withHarness(t, async (a) => {
    const id = (await a.start()).subscribed.framework_id.value;
    const b = new Harness(t, id);
    try {
      const e = await b.start();
      assert.equal(e.subscribed.framework_id.value, id);
      await eventually("the old instance to be told", () => a.fatal);
      assert.equal(a.fatal, "Framework failed over");
      assert.equal(a.client.subscribed, false);
    } finally {
      await b.stop();
    }
  }));

conformance("SchedulerTest.TaskRunning", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const { taskId, agentId } = await h.launch("sleep 30");
    const starting = await h.status(taskId, "TASK_STARTING");
    assert.equal(starting.update.status.agent_id?.value, agentId);
    assert.equal(starting.update.status.source, "SOURCE_EXECUTOR");
    assert.ok(starting.update.status.uuid, "executor updates carry a uuid to acknowledge");
    await h.status(taskId, "TASK_RUNNING");
  }));

// The emulator's agents hold a sandbox to the task's disk, as `disk/du` with `--enforce_container_disk_quota`
// (off by default in a real Mesos agent, so emulator only): the agent, not the executor, reports the end.
conformance(
  "a task over its disk quota ends TASK_FAILED from the agent, with the container limitation",
  (t) =>
    withHarness(t, async (h) => {
      await h.start();
      const { taskId } = await h.launch("head -c 3000000 /dev/zero > junk; sleep 30", 1);
      const failed = await h.next("UPDATE", (e) =>
        e.update.status.task_id.value === taskId &&
        e.update.status.state === "TASK_FAILED", 20_000);
      assert.equal(failed.update.status.reason, "REASON_CONTAINER_LIMITATION_DISK");
      assert.equal(failed.update.status.source, "SOURCE_AGENT");
      assert.match(failed.update.status.message ?? "", /^Disk usage \(\d+KB\) exceeds quota \(1MB\)/);
    }),
  { emulatorOnly: true },
);

conformance("SchedulerTest.ReconcileTask", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const { taskId, agentId } = await h.launch("sleep 30");
    await h.status(taskId, "TASK_RUNNING");
    await h.client.reconcile([{ taskId, agentId }]);
    const e = await h.next("UPDATE", (e) => e.update.status.reason === "REASON_RECONCILIATION");
    const s: TaskStatus = e.update.status;
    assert.equal(s.state, "TASK_RUNNING");
    assert.equal(s.source, "SOURCE_MASTER");
    assert.equal(s.uuid, undefined, "master-generated updates are never acknowledged");
  }));

conformance("SchedulerTest.KillTask", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const { taskId, agentId } = await h.launch("sleep 30");
    await h.status(taskId, "TASK_RUNNING");
    await h.client.kill(taskId, agentId, 200);
    await h.status(taskId, "TASK_KILLING"); // the framework has TASK_KILLING_STATE
    const killed = await h.status(taskId, "TASK_KILLED");
    assert.ok(killed.update.status.uuid);
  }));

conformance("SchedulerTest.ShutdownExecutor", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const { taskId, agentId } = await h.launch("sleep 30");
    await h.status(taskId, "TASK_RUNNING");
    // A command task's executor id is its task id.
    await h.client.shutdown(taskId, agentId);
    const failure = await h.next("FAILURE", (e) => e.failure.executor_id?.value === taskId);
    assert.equal(failure.failure.agent_id?.value, agentId);
    // The task's terminal update and the FAILURE come in no guaranteed order.
    const end = await eventually("a terminal update", () =>
      h.events.find((e) =>
        e.type === "UPDATE" && e.update.status.task_id.value === taskId &&
        ["TASK_KILLED", "TASK_FAILED"].includes(e.update.status.state)
      ));
    assert.ok(end);
  }));

conformance("SchedulerTest.Decline", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const offers = (await h.next("OFFERS")).offers.offers;
    await h.client.decline(offers.map((o) => o.id.value), { refuse_seconds: 3600 });
    const declined = new Set(offers.map((o) => o.agent_id.value));
    const from = h.events.length;
    await new Promise((r) => setTimeout(r, t.quietMs));
    const again = h.events.slice(from).flatMap((e) => e.type === "OFFERS" ? e.offers.offers : [])
      .filter((o) => declined.has(o.agent_id.value));
    assert.deepEqual(again, [], "declined agents are filtered for refuse_seconds");
  }));

conformance("SchedulerTest.Revive", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const offers = (await h.next("OFFERS")).offers.offers;
    await h.client.decline(offers.map((o) => o.id.value), { refuse_seconds: 3600 });
    await h.client.revive();
    const again = await h.next("OFFERS");
    assert.ok(again.offers.offers.some((o) => offers.some((p) => p.agent_id.value === o.agent_id.value)));
  }));

conformance("SchedulerTest.Suppress", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const offers = (await h.next("OFFERS")).offers.offers;
    await h.client.suppress();
    await h.client.decline(offers.map((o) => o.id.value), { refuse_seconds: 0 });
    await h.none("OFFERS", t.quietMs);
    await h.client.revive();
    await h.next("OFFERS");
  }));

conformance("SchedulerTest.NoOffersWithAllRolesSuppressed", async (t) => {
  const { sub, frameworkId, streamId } = await t.session.subscribe(frameworkInfo(), undefined, ["peloton"]);
  await assertNoOffers(sub, t.quietMs);
  const r = await t.session.call(frameworkId, streamId, { type: "REVIVE", revive: { roles: ["peloton"] } });
  assert.equal(r.status, 202);
  await sub.nextOf("OFFERS");
});

conformance("SchedulerTest.NoOffersOnReregistrationWithAllRolesSuppressed", async (t) => {
  const first = await t.session.subscribe();
  await first.sub.nextOf("OFFERS");
  const again = await t.session.subscribe(frameworkInfo(), first.frameworkId, ["peloton"]);
  await assertNoOffers(again.sub, t.quietMs);
});

async function assertNoOffers(sub: { next(ms: number): Promise<Event | undefined> }, quietMs: number) {
  const until = Date.now() + quietMs;
  while (Date.now() < until) {
    const e = await sub.next(Math.max(1, until - Date.now())).catch(() => undefined);
    assert.notEqual(e?.type, "OFFERS", "no offers while every role is suppressed");
  }
}

conformance("SchedulerTest.Message", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    const { taskId, agentId } = await h.launch("sleep 30");
    await h.status(taskId, "TASK_RUNNING");
    // Accepted (202); the command executor has no handler for framework messages.
    await h.client.call({
      type: "MESSAGE",
      message: { agent_id: { value: agentId }, executor_id: { value: taskId }, data: btoa("hello") },
    });
  }));

conformance("SchedulerTest.Request", (t) =>
  withHarness(t, async (h) => {
    await h.start();
    await h.client.call({ type: "REQUEST", request: { requests: [{ resources: [] }] } });
  }));

conformance("SchedulerTest.SchedulerReconnect", (t) =>
  withHarness(t, async (h) => {
    const first = await h.start();
    const stream = h.client.streamId;
    h.client.reconnect("test");
    const again = await h.next("SUBSCRIBED");
    assert.equal(again.subscribed.framework_id.value, first.subscribed.framework_id.value);
    await eventually("a new stream id", () => h.client.subscribed && h.client.streamId !== stream);
  }));

conformance("SchedulerTest.RunTaskAndTeardown", (t) =>
  withHarness(t, async (h) => {
    const id = (await h.start()).subscribed.framework_id.value;
    const { taskId } = await h.launch("sleep 30");
    await h.status(taskId, "TASK_RUNNING");
    const pid = t.emu?.master.core.agents().map((a) => a.agent.pid(taskId)).find((p) => p !== undefined);
    await h.client.teardown();
    if (pid !== undefined) {
      await eventually("the task's process to exit", () => !processAlive(pid));
    }
    const back = await t.session.subscribe(frameworkInfo({ user: USER }), id).catch((e) => e as Error);
    assert.ok(back instanceof Error, "a removed framework cannot subscribe again");
    const error = t.session.subs.at(-1)!.received.find((e) => e.type === "ERROR");
    assert.equal(error?.type === "ERROR" && error.error.message, "Framework has been removed");
  }));

Deno.test({
  name:
    "SchedulerTest.TaskGroupRunning (not applicable: LAUNCH_GROUP and the default executor are not emulated)",
  ignore: true,
  fn() {},
});

function processAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}
