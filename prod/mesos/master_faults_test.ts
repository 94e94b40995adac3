/** The emulator's fault hooks, master restart, maintenance (operator and legacy endpoints) and `/files`. */
import assert from "node:assert/strict";
import { seededPrng } from "../../core/ports/prng.ts";
import { conformance, operator, RawFramework, type Target } from "./_conformance.ts";
import { eventually, frameworkInfo, RawSubscription, referenceSchema, startTestMaster } from "./_testing.ts";
import { MesosMaster } from "./master.ts";

async function runningOn(fw: RawFramework, command = "sleep 30") {
  const offer = (await fw.offers())[0];
  const taskId = `task-${crypto.randomUUID()}`;
  await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId, command }], { refuse_seconds: 0 });
  await fw.ackUntil(taskId, "TASK_RUNNING");
  return { taskId, agentId: offer.agent_id.value, hostname: offer.hostname };
}

async function operatorOk(
  t: Target,
  call: Record<string, unknown>,
  status = 200,
): Promise<Record<string, unknown>> {
  const r = await operator(t.url, call);
  assert.equal(r.status, status, r.body);
  if (status !== 200) return {};
  const body = JSON.parse(r.body);
  assert.deepEqual((await referenceSchema()).check("Operator", body), [], `${call.type} answer shape`);
  return body;
}

conformance("agent loss: offers rescinded, tasks TASK_UNREACHABLE, then FAILURE", async (t) => {
  const fw = await RawFramework.subscribe(t);
  const { taskId, agentId } = await runningOn(fw);
  const offered = await fw.offers();
  assert.ok(t.emu!.master.loseAgent(agentId));
  const lostOffer = offered.find((o) => o.agent_id.value === agentId);
  if (lostOffer) assert.equal((await fw.sub.nextOf("RESCIND")).rescind.offer_id.value, lostOffer.id.value);
  const s = await fw.update(taskId);
  assert.equal(s.state, "TASK_UNREACHABLE");
  assert.equal(s.source, "SOURCE_MASTER");
  const failure = await fw.sub.nextOf("FAILURE");
  assert.deepEqual(failure.failure, { agent_id: { value: agentId } });
  const agents = await operatorOk(t, { type: "GET_AGENTS" });
  const ids = (agents.get_agents as { agents: { agent_info: { id: { value: string } } }[] }).agents.map((a) =>
    a.agent_info.id.value
  );
  assert.ok(!ids.includes(agentId), "an unreachable agent is not listed");
}, { emulatorOnly: true });

conformance(
  "master restart without state: streams drop, unknown tasks get no answer until agents re-register",
  async (t) => {
    const info = frameworkInfo({ failover_timeout: 60 });
    const fw = await RawFramework.subscribe(t, info);
    const { taskId, agentId } = await runningOn(fw);
    t.emu!.master.restart({ keepState: false, recoveryMs: 100, reregisterDelayMs: 400 });
    while (await fw.sub.next(2000)) { /* events sent before the restart, then the end of the stream */ }
    await new Promise((r) => setTimeout(r, 120));
    const back = await RawFramework.subscribe(t, info, fw.frameworkId);
    assert.equal(back.frameworkId, fw.frameworkId, "the master accepts the id it no longer knows");
    await back.reconcile([{ taskId, agentId }, { taskId: "other" }]);
    await assert.rejects(back.update(taskId, undefined, 200), /timed out/);
    // Once the agent is back it reports the task; reconciliation answers and the task still runs.
    await eventually("agents to re-register", () => t.emu!.master.agentIds().length === 2);
    await back.reconcile([{ taskId, agentId }]);
    const s = await back.update(taskId, "TASK_RUNNING");
    assert.equal(s.reason, "REASON_RECONCILIATION");
  },
  { emulatorOnly: true },
);

conformance("master restart: unacknowledged updates are resent after the agents re-register", async (t) => {
  const fw = await RawFramework.subscribe(t);
  const offer = (await fw.offers())[0];
  await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId: "t", command: "sleep 30" }]);
  const starting = await fw.update("t", "TASK_STARTING");
  t.emu!.master.restart({ keepState: false, reregisterDelayMs: 50 });
  const back = await RawFramework.subscribe(t, frameworkInfo(), fw.frameworkId);
  const again = await back.update("t", "TASK_STARTING", 3000);
  assert.equal(again.uuid, starting.uuid, "the same checkpointed update");
  await back.ackUntil("t", "TASK_RUNNING");
}, { emulatorOnly: true });

conformance(
  "stream faults: no heartbeats, a partition, and re-chunked bytes with multi-byte characters",
  async (t) => {
    t.emu!.master.rechunk(seededPrng(42));
    const fw = await RawFramework.subscribe(t);
    const offers = await fw.offers();
    assert.ok(offers.some((o) => o.attributes?.some((a) => a.text?.value === "zürich-日本-🚀")));
    await fw.sub.nextOf("HEARTBEAT");
    t.emu!.master.setHeartbeats(false);
    await assert.rejects(fw.sub.nextOf("HEARTBEAT", 300), /timed out/);
    t.emu!.master.setHeartbeats(true);
    await fw.sub.nextOf("HEARTBEAT");
    t.emu!.master.partition();
    await assert.rejects(fw.sub.next(300), /timed out/);
  },
  { emulatorOnly: true, master: { agents: [{ attributes: { zone: "zürich-日本-🚀" } }, {}] } },
);

conformance("offer timeout: outstanding offers are rescinded and made again", async (t) => {
  const fw = await RawFramework.subscribe(t);
  const first = (await fw.offers()).map((o) => o.id.value);
  const rescind = await fw.sub.nextOf("RESCIND", 2000);
  assert.ok(first.includes(rescind.rescind.offer_id.value));
  const again = (await fw.offers(2000)).map((o) => o.id.value);
  assert.ok(again.every((id) => !first.includes(id)), "new offers have new ids");
}, { emulatorOnly: true, master: { offerTimeoutMs: 200 } });

conformance(
  "maintenance: schedule → offers with unavailability and inverse offers → DOWN → UP",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const { taskId, hostname, agentId } = await runningOn(fw);
    const window = {
      machine_ids: [{ hostname, ip: "127.0.0.1" }],
      unavailability: { start: { nanoseconds: 1.9e18 } },
    };
    const bad = await operator(t.url, {
      type: "START_MAINTENANCE",
      start_maintenance: { machines: [{ hostname }] },
    });
    assert.equal(bad.status, 400, "a machine must be scheduled before it goes down");
    await operatorOk(t, {
      type: "UPDATE_MAINTENANCE_SCHEDULE",
      update_maintenance_schedule: { schedule: { windows: [window] } },
    }, 202);
    const inverse = (await fw.sub.nextOf("INVERSE_OFFERS")).inverse_offers.inverse_offers[0];
    assert.deepEqual(inverse.unavailability, window.unavailability);
    // Its outstanding offer was rescinded and made again, now with the unavailability.
    const drained = await eventually(
      "an offer of the draining agent",
      async () => (await fw.offers()).find((o) => o.hostname === hostname && o.unavailability),
    );
    assert.deepEqual(drained.unavailability, window.unavailability);
    await fw.call({
      type: "ACCEPT_INVERSE_OFFERS",
      accept_inverse_offers: { inverse_offer_ids: [inverse.id] },
    });
    const status = await operatorOk(t, { type: "GET_MAINTENANCE_STATUS" });
    const machines = (status.get_maintenance_status as {
      status: { draining_machines: { statuses: { status: string }[] }[] };
    }).status;
    assert.equal(machines.draining_machines[0].statuses[0].status, "ACCEPT");
    await operatorOk(t, { type: "GET_MAINTENANCE_SCHEDULE" });

    await operatorOk(t, {
      type: "START_MAINTENANCE",
      start_maintenance: { machines: [{ hostname, ip: "127.0.0.1" }] },
    }, 202);
    const gone = await fw.update(taskId);
    assert.equal(gone.state, "TASK_GONE_BY_OPERATOR");
    assert.equal(gone.reason, "REASON_AGENT_REMOVED_BY_OPERATOR");
    await fw.sub.nextOf("FAILURE");
    const removal = await operator(t.url, {
      type: "UPDATE_MAINTENANCE_SCHEDULE",
      update_maintenance_schedule: { schedule: {} },
    });
    assert.equal(removal.status, 400, "a DOWN machine cannot leave the schedule");
    await operatorOk(t, {
      type: "STOP_MAINTENANCE",
      stop_maintenance: { machines: [{ hostname, ip: "127.0.0.1" }] },
    }, 202);
    // The machine's agent registers again, under a new id, and is offered.
    const back = await eventually(
      "an offer from the machine's new agent",
      async () => (await fw.offers()).find((o) => o.hostname === hostname && o.agent_id.value !== agentId),
    );
    assert.equal(back.unavailability, undefined);
  },
  { emulatorOnly: true },
);

conformance("maintenance: the legacy /master/maintenance and /master/machine endpoints", async (t) => {
  const base = t.url + "/master";
  const schedule = {
    windows: [{ machine_ids: [{ hostname: "agent-1" }], unavailability: { start: { nanoseconds: 1.9e18 } } }],
  };
  const post = (path: string, body: unknown) =>
    fetch(base + path, { method: "POST", body: JSON.stringify(body) });
  const posted = await post("/maintenance/schedule", schedule);
  assert.equal(posted.status, 200, await posted.text());
  assert.deepEqual(await (await fetch(base + "/maintenance/schedule")).json(), schedule);
  const up = await post("/machine/up", [{ hostname: "agent-1" }]);
  assert.equal(up.status, 400, await up.text());
  const down = await post("/machine/down", [{ hostname: "agent-1" }]);
  assert.equal(down.status, 200, await down.text());
  const status = await (await fetch(base + "/maintenance/status")).json();
  assert.deepEqual(status.down_machines, [{ hostname: "agent-1" }]);
  assert.equal((await post("/machine/up", [{ hostname: "agent-1" }])).status, 200);
  assert.deepEqual(await (await fetch(base + "/maintenance/schedule")).json(), { windows: [] });
}, { emulatorOnly: true });

conformance(
  "operator API: GET_AGENTS, GET_FRAMEWORKS, GET_TASKS, and a task's sandbox through /files/download",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const { taskId, agentId } = await runningOn(fw, "echo 'héllo sandbox'; sleep 30");
    const agents = await operatorOk(t, { type: "GET_AGENTS" });
    const list =
      (agents.get_agents as { agents: { agent_info: { id: { value: string } }; pid: string }[] }).agents;
    assert.equal(list.length, 2);
    const agent = list.find((a) => a.agent_info.id.value === agentId)!;
    assert.equal(agent.pid, `slave(1)@127.0.0.1:${t.emu!.master.port}`);
    // No reference example covers these two answers; their content is checked instead.
    const frameworks = JSON.parse((await operator(t.url, { type: "GET_FRAMEWORKS" })).body);
    assert.equal(frameworks.get_frameworks.frameworks[0].framework_info.id.value, fw.frameworkId);
    const tasks = JSON.parse((await operator(t.url, { type: "GET_TASKS" })).body);
    assert.deepEqual(tasks.get_tasks.tasks.map((x: { state: string }) => x.state), ["TASK_RUNNING"]);
    const path = `/frameworks/${fw.frameworkId}/executors/${taskId}/runs/latest/stdout`;
    const text = await eventually("the task's output", async () => {
      const res = await fetch(`${t.url}/files/download?path=${encodeURIComponent(path)}`);
      const body = await res.text();
      return res.ok && body.includes("héllo") ? body : undefined;
    });
    assert.equal(text, "héllo sandbox\n");
    const missing = await fetch(`${t.url}/files/download?path=${encodeURIComponent("/etc/passwd")}`);
    await missing.body?.cancel();
    assert.equal(missing.status, 404);
    const health = await operator(t.url, { type: "GET_HEALTH" });
    assert.equal(JSON.parse(health.body).get_health.healthy, true);
  },
  { emulatorOnly: true },
);

Deno.test("maintenance: the schedule and DOWN machines survive a restart of the emulator on its data dir", async () => {
  const m = await startTestMaster({ agents: 2 });
  // What a crash (kill -9) leaves: the data dir as it was the moment the calls were answered.
  const crashed = await Deno.makeTempDir({ prefix: "mesos-emu-crashed-" });
  const machine = (hostname: string) => ({ hostname, ip: "127.0.0.1" });
  const schedule = {
    windows: [
      { machine_ids: [machine("agent-0")], unavailability: { start: { nanoseconds: 1.9e18 } } },
      { machine_ids: [machine("agent-1")], unavailability: { start: { nanoseconds: 1.8e18 } } },
    ],
  };
  const ok = async (url: string, call: Record<string, unknown>) => {
    const r = await operator(url, call);
    assert.ok(r.status === 200 || r.status === 202, `${call.type}: ${r.status} ${r.body}`);
    return r.body ? JSON.parse(r.body) : undefined;
  };
  try {
    await ok(m.url, {
      type: "UPDATE_MAINTENANCE_SCHEDULE",
      update_maintenance_schedule: { schedule },
    });
    await ok(m.url, { type: "START_MAINTENANCE", start_maintenance: { machines: [machine("agent-1")] } });
    for await (const e of Deno.readDir(m.dataDir)) {
      if (e.isFile && e.name.endsWith(".json")) {
        await Deno.copyFile(`${m.dataDir}/${e.name}`, `${crashed}/${e.name}`);
      }
    }
    await m.master.stop();

    for (const dataDir of [m.dataDir, crashed]) {
      const again = await MesosMaster.start({
        dataDir,
        agents: 2,
        heartbeatIntervalMs: 100,
        allocationIntervalMs: 10,
      });
      try {
        assert.deepEqual(
          (await ok(again.url, { type: "GET_MAINTENANCE_SCHEDULE" })).get_maintenance_schedule,
          {
            schedule,
          },
        );
        const status =
          (await ok(again.url, { type: "GET_MAINTENANCE_STATUS" })).get_maintenance_status.status;
        assert.deepEqual(status.down_machines, [machine("agent-1")], dataDir);
        assert.deepEqual(status.draining_machines.map((d: { id: unknown }) => d.id), [machine("agent-0")]);
        // A DOWN machine's agent cannot register: only agent-0's is there, and offered.
        const agents = (await ok(again.url, { type: "GET_AGENTS" })).get_agents.agents;
        assert.deepEqual(agents.map((a: { agent_info: { hostname: string } }) => a.agent_info.hostname), [
          "agent-0",
        ]);
        const fw = await RawSubscription.open(again.url, {
          type: "SUBSCRIBE",
          subscribe: { framework_info: frameworkInfo() },
        });
        try {
          const offers = (await fw.nextOf("OFFERS")).offers.offers;
          assert.deepEqual(offers.map((o) => o.hostname), ["agent-0"]);
        } finally {
          await fw.close();
        }
        // Brought up, the machine's agent registers.
        await ok(again.url, {
          type: "STOP_MAINTENANCE",
          stop_maintenance: { machines: [machine("agent-1")] },
        });
        await eventually("agent-1 registered", () => again.agentIds().length === 2);
      } finally {
        await again.stop();
      }
    }
  } finally {
    await m.stop();
    await Deno.remove(crashed, { recursive: true }).catch(() => {});
  }
});
