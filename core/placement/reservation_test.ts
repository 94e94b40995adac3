import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import { makeHost, makeLease, makeRmTask } from "../testing/harness.ts";
import { placeRound } from "./plan.ts";
import { isLarge } from "./policy.ts";
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
  return { ...rig, big };
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
  assert.equal(rig.transport.takeOne("cancel-reservation", "hostmgr").taskId, rig.big.taskId);
  assert.equal(rig.pe.holding, 0);
  // The host manager completed the reservation before the cancel reached it: the lease goes back.
  rig.pe.receive({ kind: "reservation-update", taskId: rig.big.taskId, lease: lease("h5", { cpu: 32 }) });
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
    rig.pe.receive({ kind: "reservation-update", taskId: rig.big.taskId, lease: late });
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
  rig.pe.receive({ kind: "reservation-update", taskId: big.taskId, lease: lease("h5", { cpu: 32 }) });
  const placed = rig.transport.take("set-placements").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((p) => p.hostname), ["h5"]);
  assert.deepEqual(rig.transport.takeOne("release-hosts").leaseIds, ["h7#1"]);
  assert.equal(rig.pe.holding, 0);
});
