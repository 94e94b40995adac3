/** The emulator's RESERVE, UNRESERVE, CREATE and DESTROY: Mesos's validation, volumes across runs and restarts. */
import assert from "node:assert/strict";
import { conformance, operator, RawFramework, Session, type Target } from "./_conformance.ts";
import { eventually, frameworkInfo, startTestMaster } from "./_testing.ts";
import type { Offer, Resource } from "./protocol.ts";

const INFO = frameworkInfo({ principal: "peloton" });
const LABELS = { labels: [{ key: "peloton.volume_id", value: "vol1" }] };

function reserved(name: string, value: number, principal = "peloton"): Resource {
  return {
    name,
    type: "SCALAR",
    scalar: { value },
    role: "peloton",
    reservation: { principal, labels: LABELS },
    allocation_info: { role: "peloton" },
  } as Resource;
}

function volume(id = "vol1", size = 16): Resource {
  return {
    ...reserved("disk", size),
    disk: { persistence: { id, principal: "peloton" }, volume: { container_path: "data", mode: "RW" } },
  };
}

function task(taskId: string, agentId: string, command: string, resources: Resource[]) {
  return {
    name: taskId,
    task_id: { value: taskId },
    agent_id: { value: agentId },
    resources,
    command: { shell: true, value: command },
  };
}

/** The next offer of an agent (others are declined for a long while, so they stay away). */
async function offerOf(fw: RawFramework, agentId: string): Promise<Offer> {
  for (;;) {
    for (const o of await fw.offers()) {
      if (o.agent_id.value === agentId) return o;
      await fw.call({ type: "DECLINE", decline: { offer_ids: [o.id], filters: { refuse_seconds: 3600 } } });
    }
  }
}

/**
 * The agent's next offers: every one of them in the next event that has any (resources freed at different
 * times may come in several), the others' declined.
 */
async function offersOf(fw: RawFramework, agentId: string): Promise<Offer[]> {
  for (;;) {
    const mine: Offer[] = [];
    for (const o of await fw.offers()) {
      if (o.agent_id.value === agentId) mine.push(o);
      else {
        await fw.call({ type: "DECLINE", decline: { offer_ids: [o.id], filters: { refuse_seconds: 3600 } } });
      }
    }
    if (mine.length) return mine;
  }
}

async function accept(fw: RawFramework, offer: Offer | Offer[], operations: unknown[]): Promise<void> {
  const ids = (Array.isArray(offer) ? offer : [offer]).map((o) => o.id);
  const r = await fw.call({
    type: "ACCEPT",
    accept: { offer_ids: ids, operations, filters: { refuse_seconds: 0 } },
  });
  assert.equal(r.status, 202, r.body);
}

const carries = (o: Offer, id: string) => o.resources.some((r) => r.disk?.persistence?.id === id);

/** The first offers: one agent's kept, the others declined for a long while. */
async function firstOffer(fw: RawFramework): Promise<Offer> {
  const [offer, ...rest] = await fw.offers();
  if (rest.length) {
    await fw.call({
      type: "DECLINE",
      decline: { offer_ids: rest.map((o) => o.id), filters: { refuse_seconds: 3600 } },
    });
  }
  return offer;
}

/** RESERVE + CREATE + LAUNCH of a task writing into the volume; returns the agent once the task finished. */
async function firstRun(fw: RawFramework): Promise<string> {
  const offer = await firstOffer(fw);
  const agentId = offer.agent_id.value;
  await accept(fw, offer, [
    {
      type: "RESERVE",
      reserve: { resources: [reserved("cpus", 0.1), reserved("mem", 32), reserved("disk", 16)] },
    },
    { type: "CREATE", create: { volumes: [volume()] } },
    {
      type: "LAUNCH",
      launch: {
        task_infos: [
          task("t1", agentId, "echo kept > data/f", [reserved("cpus", 0.1), reserved("mem", 32), volume()]),
        ],
      },
    },
  ]);
  assert.equal((await fw.ackUntil("t1", "TASK_FINISHED")).state, "TASK_FINISHED");
  return agentId;
}

conformance(
  "volumes: RESERVE + CREATE + LAUNCH, the volume offered back and kept for the next run, DESTROY + UNRESERVE",
  async (t) => {
    const fw = await RawFramework.subscribe(t, INFO);
    const agentId = await firstRun(fw);
    assert.equal(await Deno.readTextFile(`${t.emu!.dataDir}/agents/${agentId}/volumes/vol1/f`), "kept\n");
    // Offered back to the role with its reservation and its DiskInfo, as the framework wrote them.
    let offer = await offerOf(fw, agentId);
    while (!carries(offer, "vol1")) offer = await offerOf(fw, agentId);
    assert.deepEqual(offer.resources.find((r) => r.disk), volume());
    assert.deepEqual(offer.resources.find((r) => r.name === "cpus" && r.reservation), reserved("cpus", 0.1));
    // GET_AGENTS counts them in the agent's total.
    const agents = JSON.parse((await operator(t.url, { type: "GET_AGENTS" })).body).get_agents.agents;
    const total: Resource[] =
      agents.find((a: { agent_info: { id: { value: string } } }) => a.agent_info.id.value === agentId)
        .total_resources;
    assert.ok(total.some((r) => r.disk?.persistence?.id === "vol1"));

    // The next run reads what the first wrote; while it runs, the volume is in use.
    await accept(fw, offer, [{
      type: "LAUNCH",
      launch: {
        task_infos: [
          task("t2", agentId, 'test "$(cat data/f)" = kept && sleep 30', [reserved("mem", 32), volume()]),
        ],
      },
    }]);
    await fw.ackUntil("t2", "TASK_RUNNING");
    const busy = await offerOf(fw, agentId);
    assert.ok(!carries(busy, "vol1"), "a volume in use is not offered");
    await accept(fw, busy, [{ type: "DESTROY", destroy: { volumes: [volume()] } }]);
    await eventually(
      "the DESTROY dropped",
      () => t.emu!.master.core.allocator.dropped.length === 1 || undefined,
    );
    assert.deepEqual(t.emu!.master.core.allocator.dropped, [{
      type: "DESTROY",
      message: "Persistent volumes in use",
    }]);
    await fw.call({ type: "KILL", kill: { task_id: { value: "t2" }, agent_id: { value: agentId } } });
    await fw.ackUntil("t2", "TASK_KILLED");

    // The killed task's reservations and its volume may come back in more than one offer: all are taken.
    const held = await offersOf(fw, agentId);
    while (!held.some((o) => carries(o, "vol1"))) held.push(...await offersOf(fw, agentId));
    const { disk: _disk, ...disk } = volume();
    await accept(fw, held, [
      { type: "DESTROY", destroy: { volumes: [volume()] } },
      { type: "UNRESERVE", unreserve: { resources: [reserved("cpus", 0.1), reserved("mem", 32), disk] } },
    ]);
    await eventually(
      "the volume's directory removed",
      () => Deno.stat(`${t.emu!.dataDir}/agents/${agentId}/volumes/vol1`).then(() => undefined, () => true),
    );
    const after = (await offersOf(fw, agentId)).flatMap((o) => o.resources);
    assert.ok(after.every((r) => r.role === "*" && !r.disk), JSON.stringify(after));
    assert.equal(t.emu!.master.core.allocator.dropped.length, 1);
  },
  { emulatorOnly: true },
);

conformance(
  "volumes: operations Mesos refuses are dropped with its message, and the ACCEPT goes on without them",
  async (t) => {
    const fw = await RawFramework.subscribe(t, INFO);
    const agentId = await firstRun(fw);
    let offer = await offerOf(fw, agentId);
    while (!carries(offer, "vol1")) offer = await offerOf(fw, agentId);
    const unreserved = (name: string, value: number) => ({
      name,
      type: "SCALAR",
      scalar: { value },
      role: "*",
    });
    const plainVolume = { ...unreserved("disk", 1), disk: volume().disk };
    const { disk: _d, ...reservedDisk } = volume("vol2", 1);
    await accept(fw, offer, [
      { type: "RESERVE", reserve: { resources: [unreserved("cpus", 0.1)] } },
      { type: "RESERVE", reserve: { resources: [reserved("cpus", 0.1, "someone")] } },
      { type: "RESERVE", reserve: { resources: [reserved("cpus", 1000)] } },
      { type: "RESERVE", reserve: { resources: [volume("vol3")] } },
      { type: "UNRESERVE", unreserve: { resources: [volume()] } },
      { type: "CREATE", create: { volumes: [volume("vol1", 1)] } },
      { type: "CREATE", create: { volumes: [plainVolume] } },
      {
        type: "CREATE",
        create: {
          volumes: [{
            ...volume("ro", 1),
            disk: { ...volume().disk, volume: { container_path: "d", mode: "RO" } },
          }],
        },
      },
      { type: "CREATE", create: { volumes: [volume("vol4", 1000000)] } },
      { type: "DESTROY", destroy: { volumes: [volume("vol9")] } },
      { type: "UNRESERVE", unreserve: { resources: [reservedDisk] } },
      // What the dropped operations left alone is still there for the LAUNCH.
      {
        type: "LAUNCH",
        launch: { task_infos: [task("t2", agentId, 'test "$(cat data/f)" = kept', [volume()])] },
      },
    ]);
    assert.equal((await fw.ackUntil("t2", "TASK_FINISHED")).state, "TASK_FINISHED");
    const messages = t.emu!.master.core.allocator.dropped.map((d) => `${d.type}: ${d.message}`);
    const expected = [
      /^RESERVE: Resource cpus:0\.1 is not dynamically reserved$/,
      /^RESERVE: A reserve operation was attempted by principal 'peloton', but there is a reserved resource in the request with principal 'someone' set in `ReservationInfo`$/,
      /^RESERVE: Invalid RESERVE Operation: .* does not contain cpus:1000$/,
      /^RESERVE: A persistent volume .* must already be reserved$/,
      /^UNRESERVE: A dynamically reserved persistent volume .* cannot be unreserved directly/,
      /^CREATE: Persistence ID 'vol1' is not unique$/,
      /^CREATE: Invalid resources: Invalid DiskInfo: Persistent volumes cannot be created from unreserved resources$/,
      /^CREATE: Not a persistent volume: Read-only persistent volume not supported$/,
      /^CREATE: Invalid CREATE Operation: Insufficient disk resources$/,
      /^DESTROY: Persistent volumes not found$/,
      /^UNRESERVE: Invalid UNRESERVE Operation: .* does not contain disk/,
    ];
    assert.equal(messages.length, expected.length, messages.join("\n"));
    messages.forEach((m, i) => assert.match(m, expected[i]));
  },
  { emulatorOnly: true },
);

Deno.test("emulator volumes: reservations and volumes are checkpointed and outlive an emulator restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "mesos-emu-volumes-" });
  const target = (emu: Awaited<ReturnType<typeof startTestMaster>>): Target => ({
    url: emu.url,
    emu,
    quietMs: 300,
    heartbeatMs: emu.master.http.heartbeatIntervalMs,
    session: new Session(emu.url),
  });
  try {
    const first = await startTestMaster({ dataDir, agents: 1 });
    const t1 = target(first);
    let agentId: string;
    try {
      const fw = await RawFramework.subscribe(t1, INFO);
      agentId = await firstRun(fw);
    } finally {
      await t1.session.close();
      await first.stop();
    }
    const again = await startTestMaster({ dataDir, agents: 1 });
    const t2 = target(again);
    try {
      const fw = await RawFramework.subscribe(t2, INFO);
      const offer = await firstOffer(fw);
      assert.equal(offer.agent_id.value, agentId, "the agent under its id");
      assert.deepEqual(offer.resources.find((r) => r.disk), volume(), "the agent came back with its volume");
      await accept(fw, offer, [{
        type: "LAUNCH",
        launch: { task_infos: [task("t9", agentId, 'test "$(cat data/f)" = kept', [volume()])] },
      }]);
      assert.equal((await fw.ackUntil("t9", "TASK_FINISHED")).state, "TASK_FINISHED");
    } finally {
      await t2.session.close();
      await again.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
