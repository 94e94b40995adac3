/** The emulator's master rules from the notes (§1.9): update streams, ACCEPT validation, reconciliation, failover. */
import assert from "node:assert/strict";
import { conformance, RawFramework, type Target } from "./_conformance.ts";
import { eventually, frameworkInfo } from "./_testing.ts";

const NOT_PARTITION_AWARE = frameworkInfo({ capabilities: [{ type: "MULTI_ROLE" }] });

async function running(t: Target, info = frameworkInfo(), command = "sleep 30") {
  const fw = await RawFramework.subscribe(t, info);
  const offer = (await fw.offers())[0];
  const taskId = `task-${crypto.randomUUID()}`;
  await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId, command }]);
  await fw.ackUntil(taskId, "TASK_RUNNING");
  return { fw, taskId, agentId: offer.agent_id.value, offer };
}

conformance(
  "status updates: only the head is sent, resent until acknowledged, the next after the ack",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId: "t1", command: "echo done" }]);
    const first = await fw.update("t1");
    assert.equal(first.state, "TASK_STARTING");
    // Not acknowledged: the same update (same uuid) comes again, and nothing newer does.
    const again = await fw.update("t1", undefined, 2000);
    assert.equal(again.state, "TASK_STARTING");
    assert.equal(again.uuid, first.uuid);
    // An acknowledgement of another uuid is ignored.
    await fw.ack({ ...first, uuid: btoa("0123456789abcdef") });
    assert.equal((await fw.update("t1", undefined, 2000)).uuid, first.uuid);
    await fw.ack(first);
    const runningUpdate = await fw.update("t1");
    assert.equal(runningUpdate.state, "TASK_RUNNING");
    await fw.ack(runningUpdate);
    const finished = await fw.update("t1", "TASK_FINISHED");
    assert.match(finished.message ?? "", /Command exited with status 0/);
    // Terminal but unacknowledged: still known to implicit reconciliation.
    await fw.reconcile([]);
    assert.equal((await fw.update("t1")).state, "TASK_FINISHED");
    await fw.ack(finished);
    await eventually(
      "the task to be forgotten",
      () => !t.emu!.master.core.framework(fw.frameworkId)?.tasks.has("t1"),
    );
  },
  { emulatorOnly: true },
);

conformance(
  "ACCEPT: unknown or rescinded offers drop the tasks (TASK_DROPPED, or TASK_LOST without PARTITION_AWARE)",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offers = await fw.offers();
    await fw.launch(["no-such-offer"], offers[0].agent_id.value, [{ taskId: "t1", command: "true" }]);
    const dropped = await fw.update("t1");
    assert.equal(dropped.state, "TASK_DROPPED");
    assert.equal(dropped.reason, "REASON_INVALID_OFFERS");
    assert.equal(dropped.source, "SOURCE_MASTER");
    assert.equal(dropped.uuid, undefined);
    assert.match(dropped.message ?? "", /Offer no-such-offer is no longer valid/);
    // Hand the resources to the second framework.
    await fw.call({
      type: "DECLINE",
      decline: { offer_ids: offers.map((o) => o.id), filters: { refuse_seconds: 3600 } },
    });

    const legacy = await RawFramework.subscribe(t, NOT_PARTITION_AWARE);
    const o2 = (await legacy.offers())[0];
    t.emu!.master.rescindDuringNextAccept();
    await legacy.launch([o2.id.value], o2.agent_id.value, [{ taskId: "t2", command: "true" }]);
    const rescind = await legacy.sub.nextOf("RESCIND");
    assert.equal(rescind.rescind.offer_id.value, o2.id.value);
    const lost = await legacy.update("t2");
    assert.equal(lost.state, "TASK_LOST");
    assert.equal(lost.reason, "REASON_INVALID_OFFERS");
  },
  { emulatorOnly: true },
);

conformance(
  "ACCEPT: offers of two agents cannot be combined; invalid tasks get TASK_ERROR; an offer is used once",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const [a, b] = await fw.offers();
    assert.notEqual(a.agent_id.value, b.agent_id.value);
    await fw.launch([a.id.value, b.id.value], a.agent_id.value, [{ taskId: "two", command: "true" }]);
    assert.match((await fw.update("two")).message ?? "", /one single agent/);
    // Both offers went back to the pool and come again.
    const fresh = await fw.offers();
    const offer = fresh.find((o) => o.agent_id.value === a.agent_id.value) ?? fresh[0];
    await fw.launch([offer.id.value], offer.agent_id.value, [
      { taskId: "big", command: "true", cpus: 1000 },
      { taskId: "ok", command: "sleep 30" },
      { taskId: "ok", command: "true" },
      { taskId: "bad/id", command: "true" },
    ]);
    // Read from the master's record so the stream's own order does not matter here.
    const errors = () =>
      t.emu!.events.flatMap((e) =>
        e.type === "UPDATE" && e.update.status.state === "TASK_ERROR" ? [e.update.status] : []
      );
    await eventually("three TASK_ERRORs", () => errors().length >= 3);
    const byTask = Object.fromEntries(errors().map((s) => [s.task_id.value, s]));
    assert.equal(byTask.big.reason, "REASON_TASK_INVALID");
    assert.match(byTask.big.message ?? "", /more resources/);
    assert.match(byTask.ok.message ?? "", /duplicate ID: ok/);
    assert.match(byTask["bad/id"].message ?? "", /invalid characters/);
    await fw.ackUntil("ok", "TASK_RUNNING");
    // The offer is gone now: using it again is an invalid offer.
    await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId: "again", command: "true" }]);
    assert.equal((await fw.update("again")).state, "TASK_DROPPED");
  },
  { emulatorOnly: true },
);

conformance("ACCEPT: unused resources are declined with the call's filter, then offered again", async (t) => {
  const fw = await RawFramework.subscribe(t);
  const offer = (await fw.offers())[0];
  await fw.launch([offer.id.value], offer.agent_id.value, [{ taskId: "t", command: "sleep 30" }], {
    refuse_seconds: 0.3,
  });
  const started = Date.now();
  const next = (await fw.offers(3000)).find((o) => o.agent_id.value === offer.agent_id.value);
  const cpus = next?.resources.find((r) => r.name === "cpus")?.scalar?.value;
  assert.ok(Date.now() - started >= 200, "the remainder waits for the filter");
  assert.equal(cpus, 3.9, "the remainder is offered: 4 − 0.1 cpus");
}, { emulatorOnly: true });

conformance("reconciliation: explicit answers follow the master's case table", async (t) => {
  const fw = await RawFramework.subscribe(t);
  const [a, b] = await fw.offers();
  await fw.launch([a.id.value], a.agent_id.value, [{ taskId: "on-a", command: "sleep 30" }]);
  await fw.launch([b.id.value], b.agent_id.value, [{ taskId: "on-b", command: "sleep 30" }]);
  await fw.ackUntil("on-a", "TASK_RUNNING");
  await fw.ackUntil("on-b", "TASK_RUNNING");
  t.emu!.master.loseAgent(b.agent_id.value);
  const unreachable = await fw.update("on-b", "TASK_UNREACHABLE");
  assert.equal(unreachable.reason, "REASON_AGENT_REMOVED");
  assert.ok(unreachable.unreachable_time);
  await fw.reconcile([
    { taskId: "on-a", agentId: a.agent_id.value },
    { taskId: "on-b", agentId: b.agent_id.value },
    { taskId: "unknown-on-registered", agentId: a.agent_id.value },
    { taskId: "unknown-on-unreachable", agentId: b.agent_id.value },
    { taskId: "unknown-on-unknown-agent", agentId: "no-such-agent" },
    { taskId: "unknown-without-agent" },
  ]);
  const answers: Record<string, string> = {};
  while (Object.keys(answers).length < 6) {
    const e = await fw.sub.nextOf("UPDATE");
    if (e.update.status.reason !== "REASON_RECONCILIATION") continue;
    assert.equal(e.update.status.uuid, undefined);
    assert.equal(e.update.status.source, "SOURCE_MASTER");
    answers[e.update.status.task_id.value] = e.update.status.state;
  }
  assert.deepEqual(answers, {
    "on-a": "TASK_RUNNING",
    "on-b": "TASK_UNREACHABLE",
    "unknown-on-registered": "TASK_GONE",
    "unknown-on-unreachable": "TASK_UNREACHABLE",
    "unknown-on-unknown-agent": "TASK_UNKNOWN",
    "unknown-without-agent": "TASK_UNKNOWN",
  });
  // Without PARTITION_AWARE every unknown case is TASK_LOST.
  const legacy = await RawFramework.subscribe(t, NOT_PARTITION_AWARE);
  await legacy.reconcile([{ taskId: "nope", agentId: a.agent_id.value }, {
    taskId: "nope2",
    agentId: b.agent_id.value,
  }]);
  assert.equal((await legacy.update("nope")).state, "TASK_LOST");
  assert.equal((await legacy.update("nope2")).state, "TASK_LOST");
}, { emulatorOnly: true });

conformance(
  "reconciliation: implicit returns the latest state of every task; KILL of an unknown task reconciles it",
  async (t) => {
    const { fw, taskId } = await running(t);
    await fw.reconcile([]);
    const s = await fw.update(taskId);
    assert.equal(s.state, "TASK_RUNNING");
    assert.equal(s.message, "Reconciliation: Latest task state");
    const r = await fw.call({ type: "KILL", kill: { task_id: { value: "ghost" } } });
    assert.equal(r.status, 202);
    assert.equal((await fw.update("ghost")).state, "TASK_UNKNOWN");
  },
  { emulatorOnly: true },
);

conformance(
  "KILL: naming another agent is silently ignored; the task's kill policy sets the grace period",
  async (t) => {
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    await fw.launch([offer.id.value], offer.agent_id.value, [{
      taskId: "k",
      command: "trap '' TERM; sleep 30",
      killGraceMs: 300,
    }]);
    await fw.ackUntil("k", "TASK_RUNNING");
    await fw.call({ type: "KILL", kill: { task_id: { value: "k" }, agent_id: { value: "another-agent" } } });
    await assert.rejects(fw.update("k", "TASK_KILLING", 300), /timed out/);
    const started = Date.now();
    await fw.call({ type: "KILL", kill: { task_id: { value: "k" } } });
    const killed = await fw.ackUntil("k", "TASK_KILLED");
    assert.ok(
      Date.now() - started >= 250,
      "SIGKILL only after the 300 ms grace period (the task ignores SIGTERM)",
    );
    assert.match(killed.message ?? "", /signal/);
  },
  { emulatorOnly: true },
);

conformance(
  "failover timeout: a framework that does not come back is removed and its tasks killed",
  async (t) => {
    const { fw, taskId } = await running(t, frameworkInfo({ failover_timeout: 0.3 }));
    const pid = t.emu!.master.core.agents().map((a) => a.agent.pid(taskId)).find((p) => p !== undefined)!;
    await fw.sub.close();
    await eventually(
      "the framework to be removed",
      () => !t.emu!.master.core.framework(fw.frameworkId),
      5000,
    );
    await eventually("the process to be killed", () => {
      try {
        Deno.kill(pid, "SIGCONT");
        return false;
      } catch {
        return true;
      }
    });
    const back = await t.session.subscribe(frameworkInfo(), fw.frameworkId).catch((e) => e);
    assert.ok(back instanceof Error);
    const error = t.session.subs.at(-1)!.received[0];
    assert.deepEqual(error, { type: "ERROR", error: { message: "Framework has been removed" } });
    t.session.frameworks.delete(fw.frameworkId);
  },
  { emulatorOnly: true },
);

conformance(
  "failover timeout: re-subscribing in time keeps the tasks, and discards old offers without RESCIND",
  async (t) => {
    const { fw, taskId, agentId } = await running(t, frameworkInfo({ failover_timeout: 5 }));
    await fw.sub.close();
    await eventually(
      "the disconnection",
      () => t.emu!.master.core.framework(fw.frameworkId)?.sub === undefined,
    );
    const back = await RawFramework.subscribe(t, frameworkInfo({ failover_timeout: 5 }), fw.frameworkId);
    await back.reconcile([{ taskId, agentId }]);
    assert.equal((await back.update(taskId)).state, "TASK_RUNNING");
    assert.ok(!back.sub.received.some((e) => e.type === "RESCIND"));
  },
  { emulatorOnly: true },
);

/** Peloton's minicluster agents (`tools/minicluster`): part of each resource reserved for the role. */
const MINICLUSTER_AGENT =
  "cpus(peloton):0.5;cpus(*):3.5;mem(peloton):1024;mem(*):1024;disk(*):20000;ports(peloton):[31000-32000]";

type Piece = Record<string, unknown>;
const cpus = (value: number, extra: Piece = {}) => ({
  name: "cpus",
  type: "SCALAR",
  scalar: { value },
  ...extra,
});
const mem = (value: number, extra: Piece = {}) => ({
  name: "mem",
  type: "SCALAR",
  scalar: { value },
  ...extra,
});
const port = (p: number, extra: Piece = {}) => ({
  name: "ports",
  type: "RANGES",
  ranges: { range: [{ begin: p, end: p }] },
  ...extra,
});

conformance(
  "ACCEPT: reserved resources are offered to their role only, and a task must use them reserved and allocated",
  async (t) => {
    // A framework of another role, first: it is offered the unreserved resources only.
    const other = await RawFramework.subscribe(t, frameworkInfo({ roles: ["other"] }));
    const theirs = (await other.offers())[0];
    assert.deepEqual(
      theirs.resources.map((r) => [r.name, r.role, r.scalar?.value, r.allocation_info?.role]),
      [
        ["cpus", "*", 3.5, "other"],
        ["mem", "*", 1024, "other"],
        ["disk", "*", 20000, "other"],
      ],
    );
    // Ours gets what is reserved for its role, in the pre-refinement format (no RESERVATION_REFINEMENT).
    const fw = await RawFramework.subscribe(t);
    const offer = (await fw.offers())[0];
    const allocation_info = { role: "peloton" };
    const reserved = { role: "peloton", allocation_info };
    assert.deepEqual(offer.resources, [
      cpus(0.5, reserved),
      mem(1024, reserved),
      { name: "ports", type: "RANGES", ranges: { range: [{ begin: 31000, end: 32000 }] }, ...reserved },
    ]);
    const task = (id: string, resources: Piece[]) => ({
      name: id,
      task_id: { value: id },
      agent_id: offer.agent_id,
      resources,
      command: { shell: true, value: "sleep 30" },
    });
    const tasks = [
      // Written unreserved: the offer has no such resources, whatever their names.
      task("unreserved", [cpus(0.1, { role: "*" }), mem(32, reserved)]),
      task("unreserved-port", [cpus(0.1, reserved), port(31000, { role: "*" })]),
      // Reserved, but allocated to a role the offer is not.
      task("other-allocation", [cpus(0.1, { role: "peloton", allocation_info: { role: "other" } })]),
      task("two-allocations", [
        cpus(0.1, reserved),
        mem(32, { role: "peloton", allocation_info: { role: "other" } }),
      ]),
      // As offered; the master fills in the allocation where it is left out.
      task("as-offered", [cpus(0.5, reserved), mem(32, { role: "peloton" }), port(31000, reserved)]),
    ];
    const r = await fw.call({
      type: "ACCEPT",
      accept: { offer_ids: [offer.id], operations: [{ type: "LAUNCH", launch: { task_infos: tasks } }] },
    });
    assert.equal(r.status, 202, r.body);
    for (const id of ["unreserved", "unreserved-port", "other-allocation"]) {
      const s = await fw.update(id);
      assert.equal(s.state, "TASK_ERROR", id);
      assert.match(s.message ?? "", /Task uses more resources .* than available/, id);
    }
    const two = await fw.update("two-allocations");
    assert.equal(two.state, "TASK_ERROR");
    assert.match(two.message ?? "", /multiple allocation roles \('other' and 'peloton'\)/);
    await fw.ackUntil("as-offered", "TASK_RUNNING");
    const running = t.emu!.master.core.framework(fw.frameworkId)!.tasks.get("as-offered")!;
    assert.deepEqual(running.info.resources, tasks[4].resources, "the call as sent");
  },
  { emulatorOnly: true, master: { agents: [{ resources: MINICLUSTER_AGENT }] } },
);

conformance(
  "ACCEPT: a RESERVATION_REFINEMENT framework is offered `reservations`; either format names the same resources",
  async (t) => {
    const info = frameworkInfo({
      capabilities: [{ type: "MULTI_ROLE" }, { type: "PARTITION_AWARE" }, { type: "RESERVATION_REFINEMENT" }],
    });
    const fw = await RawFramework.subscribe(t, info);
    const offer = (await fw.offers())[0];
    const allocation_info = { role: "peloton" };
    const reservations = [{ type: "STATIC", role: "peloton" }];
    assert.deepEqual(offer.resources.filter((r) => r.name === "cpus"), [
      cpus(3.5, { allocation_info }),
      cpus(0.5, { allocation_info, reservations }),
    ]);
    const task = (id: string, resources: Piece[]) => ({
      name: id,
      task_id: { value: id },
      agent_id: offer.agent_id,
      resources,
      command: { shell: true, value: "sleep 30" },
    });
    const r = await fw.call({
      type: "ACCEPT",
      accept: {
        offer_ids: [offer.id],
        operations: [{
          type: "LAUNCH",
          launch: {
            task_infos: [
              // More reserved cpus than there are, the unreserved ones written as such.
              task("too-much", [cpus(0.6, { allocation_info, reservations }), mem(32, { allocation_info })]),
              task("refined", [cpus(0.5, { allocation_info, reservations }), cpus(1, { allocation_info })]),
              // The pre-refinement `role` names the same static reservation (the master upgrades it).
              task("legacy", [port(31001, { role: "peloton" }), mem(32, { role: "*" })]),
            ],
          },
        }],
      },
    });
    assert.equal(r.status, 202, r.body);
    assert.equal((await fw.update("too-much")).state, "TASK_ERROR");
    await fw.ackUntil("refined", "TASK_RUNNING");
    await fw.ackUntil("legacy", "TASK_RUNNING");
  },
  { emulatorOnly: true, master: { agents: [{ resources: MINICLUSTER_AGENT }] } },
);
