import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import { makeHost, makeLease, makeRmTask } from "../testing/harness.ts";
import { placeRound } from "./plan.ts";
import { DEFAULT_RESERVATION, isLarge, PELOTON_POLICIES, type TaskTypePolicy } from "./policy.ts";
import type { PlacementResult, PlacementRound } from "./round.ts";
import { engineRig, LARGEST, lease } from "./testing.ts";

const BIG = resources(24_000, 1024);

/** Fails `n` rounds for want of cpu, the first one pending, advancing past the backoff before each next. */
function failRounds(rig: ReturnType<typeof engineRig>, n: number, stepMs = 20_000) {
  for (let i = 0; i < n; i++) {
    if (i) {
      rig.clock.advance(stepMs);
      rig.gangs();
    }
    rig.hosts([], { "insufficient cpu": 100 });
  }
}

/** A 24-cpu task (of 32-cpu hosts) that has a host reserved: h5, its reservation waiting. */
function reserved(executor?: PlacementExecutor) {
  const rig = engineRig({}, executor);
  const big = makeRmTask({ resources: BIG });
  rig.gangs({ tasks: [big] });
  failRounds(rig, 3);
  const req = rig.transport.takeOne("reserve-host", "hostmgr");
  rig.pe.receive({ kind: "host-reserved", reqId: req.reqId, hostname: "h5" });
  rig.transport.take("set-placements");
  return { ...rig, big, reservationId: req.reservationId };
}

Deno.test("large means more than the share of the largest host in cpu, memory or gpu", () => {
  assert.equal(isLarge(resources(16_000, 1024), LARGEST, 0.5), false, "half a host is not large");
  assert.equal(isLarge(resources(16_001, 1024), LARGEST, 0.5), true);
  assert.equal(isLarge(resources(1000, 40_000), LARGEST, 0.5), true, "memory alone");
  assert.equal(isLarge(resources(1000, 128, 0, 3000), LARGEST, 0.5), true, "GPUs alone");
  assert.equal(isLarge(BIG, undefined, 0.5), false, "hosts unknown");
});

Deno.test("small tasks never have a host reserved, however long they wait for room", () => {
  const rig = engineRig();
  rig.gangs(
    { tasks: [makeRmTask({ instanceId: 0 })] },
    { tasks: [makeRmTask({ jobId: "half", resources: resources(16_000, 32_768) })] },
  );
  failRounds(rig, 8);
  assert.deepEqual(rig.transport.take("reserve-host"), []);
  assert.equal(rig.pe.holding, 2, "both are still tried");
});

Deno.test("a task waiting for its reserved host is still tried elsewhere; placed there, the reservation ends", () => {
  const rig = reserved();
  rig.clock.advance(20_000);
  rig.gangs();
  rig.hosts([lease("h7", { cpu: 32 })]);
  const [set] = rig.transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => [p.hostname, p.tasks[0].taskId]), [["h7", rig.big.taskId]]);
  const cancel = rig.transport.takeOne("cancel-reservation", "hostmgr");
  assert.deepEqual([cancel.taskId, cancel.reservationId], [rig.big.taskId, rig.reservationId]);
  assert.equal(rig.pe.holding, 0);
  // The host manager completed the reservation before the cancel reached it: the lease goes back.
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: rig.reservationId,
    lease: lease("h5", { cpu: 32 }),
  });
  assert.deepEqual(rig.transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h5#1"]);
  assert.deepEqual(rig.transport.take("set-placements"), [], "placed once only");
});

Deno.test("the reserved host frees up while the task is in a round: the round decides, never both", () => {
  // Rounds place at once, except the one a test holds back to deliver the reserved lease meanwhile.
  let held: [PlacementRound, (r: PlacementResult) => void] | undefined, hold = false;
  const executor: PlacementExecutor = {
    partitions: 1,
    place: (round, cb) => hold ? held = [round, cb] : cb(placeRound(round, 1)),
  };
  const late = makeLease(makeHost("h5", { cpu: 32 }), { leaseId: "h5#9" });
  const decide = (rig: ReturnType<typeof reserved>, elsewhere: number) => {
    rig.clock.advance(20_000);
    rig.gangs();
    hold = true;
    rig.hosts([lease("h7", { cpu: elsewhere })]);
    hold = false;
    rig.pe.receive({
      kind: "reservation-update",
      taskId: rig.big.taskId,
      reservationId: rig.reservationId,
      lease: late,
    });
    assert.deepEqual(rig.transport.take("set-placements"), [], "nothing before the round ends");
    held![1](placeRound(held![0], 1));
    const placed = rig.transport.take("set-placements", "resmgr").flatMap((s) => s.placements);
    assert.equal(rig.pe.holding, 0);
    assert.deepEqual(rig.transport.take("cancel-reservation"), [], "the host manager already ended it");
    return {
      placed: placed.map((p) => [p.leaseId, p.tasks[0].taskId]),
      released: rig.transport.take("release-hosts").flatMap((r) => r.leaseIds),
    };
  };

  const a = reserved(executor);
  assert.deepEqual(decide(a, 32), { placed: [["h7#1", a.big.taskId]], released: ["h5#9"] }, "room elsewhere");
  const b = reserved(executor);
  assert.deepEqual(
    decide(b, 2),
    { placed: [["h5#9", b.big.taskId]], released: ["h7#1"] },
    "no room elsewhere",
  );
});

Deno.test("news of room: work backing off is retried a second after its failure, not when its backoff ends", () => {
  const rig = engineRig();
  rig.gangs({ tasks: [makeRmTask({})] });
  failRounds(rig, 6);
  rig.roomEpoch(1);
  assert.deepEqual(rig.transport.take("acquire-hosts"), [], "not within a second of the failure");
  rig.clock.advance(1000);
  rig.roomEpoch(1);
  assert.equal(rig.hosts([lease("h0", { cpu: 4 })]).length, 1, "a second after it, not 16");
  const placed = rig.transport.take("set-placements").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((p) => p.hostname), ["h0"]);
});

Deno.test("a service placed on its reserved host gives back the host it kept for a better round", () => {
  const rig = engineRig();
  const big = makeRmTask({ resources: BIG, taskType: "STATELESS" });
  rig.gangs({ tasks: [big] });
  failRounds(rig, 3, 5_000);
  const req = rig.transport.takeOne("reserve-host", "hostmgr");
  rig.pe.receive({ kind: "host-reserved", reqId: req.reqId, hostname: "h5" });
  rig.clock.advance(5_000);
  rig.gangs();
  rig.hosts([lease("h7", { cpu: 32 })]);
  assert.deepEqual(rig.transport.take("release-hosts"), [], "h7 kept: a second round may find better");
  rig.pe.receive({
    kind: "reservation-update",
    taskId: big.taskId,
    reservationId: req.reservationId,
    lease: lease("h5", { cpu: 32 }),
  });
  const placed = rig.transport.take("set-placements").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((p) => p.hostname), ["h5"]);
  assert.deepEqual(rig.transport.takeOne("release-hosts").leaseIds, ["h7#1"]);
  assert.equal(rig.pe.holding, 0);
});

/** A 20-cpu task with h5 reserved for it after `afterFailedRounds` failed rounds, 10 s to wait for it. */
function timingOut(afterFailedRounds: number, batch: Partial<TaskTypePolicy> = {}) {
  const rig = engineRig({
    reservation: { ...DEFAULT_RESERVATION, afterFailedRounds, maxActive: 1, timeoutMs: 10_000 },
    policies: { ...PELOTON_POLICIES, BATCH: { ...PELOTON_POLICIES.BATCH, ...batch } },
  });
  const big = makeRmTask({ resources: resources(20_000, 1024) });
  rig.gangs({ tasks: [big] });
  failRounds(rig, afterFailedRounds, 1_000);
  const req = rig.transport.takeOne("reserve-host", "hostmgr");
  rig.pe.receive({ kind: "host-reserved", reqId: req.reqId, hostname: "h5" });
  rig.transport.take("set-placements");
  const reservationId = req.reservationId;
  /** Another round without room, `stepMs` on. */
  const failAgain = (stepMs: number) => {
    rig.clock.advance(stepMs);
    rig.gangs();
    rig.hosts([], { "insufficient cpu": 5 });
  };
  return { ...rig, big, reservationId, failAgain };
}

Deno.test("a reservation that times out before the task's deadline ends; the task is tried on and placed elsewhere", () => {
  const rig = timingOut(1);
  rig.failAgain(10_000);
  // The round is over; before the next dequeue the reservation has waited its 10 s out.
  const cancel = rig.transport.takeOne("cancel-reservation", "hostmgr");
  assert.deepEqual([cancel.taskId, cancel.reservationId], [rig.big.taskId, rig.reservationId]);
  const sets = rig.transport.take("set-placements", "resmgr");
  assert.deepEqual(sets.flatMap((s) => s.failed), [], "500 s to its deadline: not handed back");
  assert.deepEqual(sets.flatMap((s) => s.pending ?? []), [{
    reason: "host h5 was reserved for the task but did not free up in time; " +
      "no host with 20 free cpus: insufficient cpu on 5 hosts",
    taskIds: [rig.big.taskId],
  }]);
  assert.equal(rig.pe.holding, 1);
  // The host manager leased h5 before the cancel reached it: the lease goes back, the task is not placed.
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: rig.reservationId,
    lease: lease("h5", { cpu: 32 }),
  });
  assert.deepEqual(rig.transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h5#1"]);
  assert.deepEqual(rig.transport.take("set-placements"), []);
  rig.clock.advance(2_000);
  rig.gangs();
  rig.hosts([lease("h7", { cpu: 32 })]);
  const placed = rig.transport.take("set-placements", "resmgr").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((p) => [p.hostname, p.tasks[0].taskId]), [["h7", rig.big.taskId]]);
  assert.deepEqual(rig.transport.take("cancel-reservation"), [], "cancelled once");
  assert.deepEqual(rig.transport.take("release-hosts"), []);
  assert.equal(rig.pe.holding, 0);
});

Deno.test("after a reservation times out the task reserves again by the usual count, and goes back at its deadline", () => {
  const rig = timingOut(2, { maxDurationMs: 20_000, retryBackoffMaxMs: 2_000 });
  rig.failAgain(10_000);
  assert.equal(rig.transport.takeOne("cancel-reservation", "hostmgr").taskId, rig.big.taskId);
  rig.failAgain(2_000);
  assert.deepEqual(rig.transport.take("reserve-host"), [], "not straight after the timeout");
  rig.failAgain(2_000);
  const again = rig.transport.takeOne("reserve-host", "hostmgr");
  rig.pe.receive({ kind: "host-reserved", reqId: again.reqId, hostname: "h6" });
  assert.deepEqual(rig.transport.take("set-placements").flatMap((s) => s.failed), [], "before its deadline");
  // Its own deadline (20 s from dequeue) comes before the second reservation's 10 s are up.
  rig.failAgain(5_000);
  const failed = rig.transport.take("set-placements", "resmgr").flatMap((s) => s.failed);
  assert.deepEqual(failed, [{
    taskId: rig.big.taskId,
    reason: "no host with 20 free cpus: insufficient cpu on 5 hosts",
  }]);
  assert.equal(rig.transport.takeOne("cancel-reservation", "hostmgr").taskId, rig.big.taskId);
  assert.equal(rig.pe.holding, 0);
});

Deno.test("a late lease or end of a cancelled reservation is told from the task's next one by its id", () => {
  const rig = timingOut(2, { retryBackoffMaxMs: 2_000 });
  rig.failAgain(10_000);
  assert.equal(rig.transport.takeOne("cancel-reservation", "hostmgr").reservationId, rig.reservationId);
  rig.failAgain(2_000);
  rig.failAgain(2_000);
  const again = rig.transport.takeOne("reserve-host", "hostmgr");
  assert.notEqual(again.reservationId, rig.reservationId, "a new reservation, a new id");
  rig.transport.take("set-placements");
  // h5's lease from the first reservation (sent before its cancel reached the host manager) comes only now,
  // while the second is asked for: it is given back, and the task is not placed on it.
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: rig.reservationId,
    lease: lease("h5", { cpu: 32 }),
  });
  assert.deepEqual(rig.transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h5#1"]);
  assert.deepEqual(rig.transport.take("set-placements"), [], "not placed on the old reservation's lease");
  assert.equal(rig.pe.holding, 1);
  rig.pe.receive({ kind: "host-reserved", reqId: again.reqId, hostname: "h6" });
  // Nor does an end of the old one (its host lost before the cancel arrived) end the new one.
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: rig.reservationId,
    reason: "host h5 lost: agent gone",
  });
  assert.deepEqual(rig.transport.take("cancel-reservation"), [], "the new reservation stays");
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: again.reservationId,
    lease: lease("h6", { cpu: 32 }),
  });
  const placed = rig.transport.take("set-placements", "resmgr").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((p) => [p.leaseId, p.tasks[0].taskId]), [["h6#1", rig.big.taskId]]);
  assert.deepEqual(rig.transport.drain().filter((m) => m.msg.kind !== "dequeue-gangs"), []);
  assert.equal(rig.pe.holding, 0);
});

Deno.test("a reservation granted after the engine cancelled it is cancelled again", () => {
  const rig = timingOut(1, { retryBackoffMaxMs: 2_000 });
  rig.failAgain(10_000);
  rig.transport.take("cancel-reservation");
  rig.failAgain(2_000);
  const again = rig.transport.takeOne("reserve-host", "hostmgr");
  // Placed elsewhere while the request is out: the cancel goes at once, and may reach the host manager first.
  rig.clock.advance(2_000);
  rig.gangs();
  rig.hosts([lease("h7", { cpu: 32 })]);
  const cancel = rig.transport.takeOne("cancel-reservation", "hostmgr");
  assert.equal(cancel.reservationId, again.reservationId);
  rig.pe.receive({ kind: "host-reserved", reqId: again.reqId, hostname: "h6" });
  const late = rig.transport.takeOne("cancel-reservation", "hostmgr");
  assert.deepEqual([late.taskId, late.reservationId], [rig.big.taskId, again.reservationId]);
});

Deno.test("a reservation the host manager ends says why and lets the task reserve again by the usual count", () => {
  const rig = timingOut(2);
  rig.pe.receive({
    kind: "reservation-update",
    taskId: rig.big.taskId,
    reservationId: rig.reservationId,
    reason: "host h5 reserved for the task went into maintenance",
  });
  assert.deepEqual(rig.transport.take("set-placements", "resmgr"), [{
    kind: "set-placements",
    placements: [],
    failed: [],
    pending: [{
      reason: "host h5 reserved for the task went into maintenance; " +
        "no host with 20 free cpus: insufficient cpu on 100 hosts",
      taskIds: [rig.big.taskId],
    }],
  }]);
  assert.deepEqual(rig.transport.take("cancel-reservation"), [], "the host manager ended it already");
  rig.failAgain(1_000);
  assert.deepEqual(rig.transport.take("reserve-host"), [], "not straight after it ended");
  rig.failAgain(5_000);
  const again = rig.transport.takeOne("reserve-host", "hostmgr");
  assert.deepEqual([again.taskId, again.filter.minResources.cpuMilli], [rig.big.taskId, 20_000]);
  assert.notEqual(again.reservationId, rig.reservationId);
  assert.equal(rig.pe.holding, 1);
});

Deno.test("a refused reservation says why at once and lets the task reserve again by the usual count", () => {
  const rig = engineRig({
    reservation: { ...DEFAULT_RESERVATION, afterFailedRounds: 2, maxActive: 1, timeoutMs: 10_000 },
  });
  const big = makeRmTask({ resources: resources(20_000, 1024) });
  rig.gangs({ tasks: [big] });
  failRounds(rig, 2, 1_000);
  const req = rig.transport.takeOne("reserve-host", "hostmgr");
  rig.transport.take("set-placements");
  const why = "no ready host could ever hold cpu 20, memory 1024 MB";
  rig.pe.receive({ kind: "host-reserved", reqId: req.reqId, reason: why });
  // The round's own reason stays first (reports count it by that headline); the refusal follows.
  const reason =
    `no host with 20 free cpus: insufficient cpu on 100 hosts; no host could be reserved for the task: ${why}`;
  assert.deepEqual(rig.transport.take("set-placements", "resmgr").flatMap((s) => s.pending ?? []), [{
    reason,
    taskIds: [big.taskId],
  }]);
  const failAgain = (stepMs: number) => {
    rig.clock.advance(stepMs);
    rig.gangs();
    rig.hosts([], { "insufficient cpu": 5 });
  };
  // Capacity may grow (a larger host joins): the task asks again after as many failed rounds as the first time.
  failAgain(20_000);
  assert.deepEqual(rig.transport.take("reserve-host"), [], "not straight after the refusal");
  failAgain(20_000);
  const again = rig.transport.takeOne("reserve-host", "hostmgr");
  assert.equal(again.taskId, big.taskId);
  assert.notEqual(again.reservationId, req.reservationId);
  assert.equal(rig.pe.holding, 1);
  // The rounds between kept the refusal on the reason, which changed only by their count.
  const held =
    `no host with 20 free cpus: insufficient cpu on 5 hosts; no host could be reserved for the task: ${why}`;
  assert.deepEqual(rig.transport.take("set-placements", "resmgr").flatMap((s) => s.pending ?? []), [{
    reason: held,
    taskIds: [big.taskId],
  }]);
  // Refused again for the same reason: nothing new to tell it either.
  rig.pe.receive({ kind: "host-reserved", reqId: again.reqId, reason: why });
  assert.deepEqual(rig.transport.take("set-placements", "resmgr").flatMap((s) => s.pending ?? []), []);
  // Refused for another reason: it hears that at once.
  failAgain(20_000);
  failAgain(20_000);
  const third = rig.transport.takeOne("reserve-host", "hostmgr");
  const other = "no ready host could ever hold cpu 20, memory 1024 MB, 1 gpu";
  rig.pe.receive({ kind: "host-reserved", reqId: third.reqId, reason: other });
  assert.deepEqual(rig.transport.take("set-placements", "resmgr").flatMap((s) => s.pending ?? []), [{
    reason:
      `no host with 20 free cpus: insufficient cpu on 5 hosts; no host could be reserved for the task: ${other}`,
    taskIds: [big.taskId],
  }]);
});
