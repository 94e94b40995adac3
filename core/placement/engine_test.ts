import assert from "node:assert/strict";
import type { Gang } from "../messages.ts";
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import { makeHost, makeLease, makeRmTask } from "../testing/harness.ts";
import { placeRound } from "./plan.ts";
import { DEFAULT_PLACEMENT_CONFIG } from "./engine.ts";
import { PELOTON_POLICIES } from "./policy.ts";
import type { PlacementResult, PlacementRound } from "./round.ts";
import { engineRig, lease, one } from "./testing.ts";

const setup = engineRig;
const quick = { ...PELOTON_POLICIES, BATCH: { ...PELOTON_POLICIES.BATCH, maxDurationMs: 5_000 } };

Deno.test("an empty dequeue reply starts another dequeue without leasing hosts", () => {
  const { gangs, transport } = setup();
  gangs();
  assert.equal(transport.take("dequeue-gangs", "resmgr").length, 1);
  assert.deepEqual(transport.take("acquire-hosts"), []);
});

Deno.test("one acquire per round: a filter per group of identical tasks, sized by its task count", () => {
  const { gangs, hosts, transport } = setup();
  const big = { cpuMilli: 3000, memMb: 128, diskMb: 0, gpuMilli: 1000 };
  gangs(
    one({ instanceId: 0 }),
    one({ instanceId: 1 }),
    one({
      instanceId: 2,
      resources: big,
      ports: [{ name: "a", value: 0 }],
    }),
  );
  const filters = hosts([lease("h1"), lease("h2", { gpu: 1 })]);
  assert.equal(filters.length, 2);
  assert.deepEqual(
    [filters[0].minResources.cpuMilli, filters[0].maxHosts, filters[0].tasks, filters[0].gpu],
    [1000, 2, 4, false],
  );
  assert.deepEqual([filters[1].numPorts, filters[1].gpu, filters[1].hints, filters[1].order], [
    1,
    true,
    undefined,
    "least-free",
  ]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.failed, []);
  assert.deepEqual(set.placements.map((p) => [p.leaseId, p.tasks.map((t) => t.taskId)]), [
    ["h1#1", ["job-a-0-1", "job-a-1-1"]],
    ["h2#1", ["job-a-2-1"]],
  ]);
  assert.deepEqual(set.placements[1].tasks[0].ports, { a: 31000 });
  assert.deepEqual(transport.take("release-hosts"), []);
  assert.equal(transport.take("dequeue-gangs", "resmgr").length, 1, "the next round starts");
});

Deno.test("leases that end up unused are released", () => {
  const { gangs, hosts, transport } = setup();
  gangs(one({}));
  hosts([lease("h1"), lease("h2")]);
  assert.deepEqual(transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h2#1"]);
  assert.deepEqual(transport.takeOne("set-placements").placements.map((p) => p.hostname), ["h1"]);
});

Deno.test("a task with no host is retried after a backoff, and handed back with the reason past its deadline", () => {
  const { gangs, hosts, transport, clock } = setup({ policies: quick });
  gangs(one({}));
  hosts([], { "insufficient cpu": 48_112, "host in maintenance": 3 });
  const why = "no host with 1 free cpus: insufficient cpu on 48,112 hosts, host in maintenance on 3 hosts";
  const [interim] = transport.take("set-placements");
  assert.deepEqual(
    [interim.placements, interim.failed],
    [[], []],
    "before its deadline the engine keeps the task",
  );
  assert.deepEqual(interim.pending, [{ reason: why, taskIds: ["job-a-0-1"] }], "but says why at once");
  assert.deepEqual(transport.take("release-hosts"), []);
  assert.equal(gangs(), 100, "the engine long-polls for new work meanwhile");
  assert.deepEqual(transport.take("acquire-hosts"), [], "the retry is not due yet");
  clock.advance(1000);
  gangs();
  hosts([], { "insufficient cpu": 48_112 });
  assert.deepEqual(transport.take("set-placements"), [], "a changed reason waits for the report interval");
  clock.advance(5000);
  gangs();
  hosts([], { "insufficient cpu": 48_112, "host in maintenance": 3 });
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.failed, [{ taskId: "job-a-0-1", reason: why }]);
});

Deno.test("a failure while the host manager had more matching hosts is retried at once", () => {
  const { gangs, hosts, transport } = setup();
  gangs(one({ instanceId: 0 }), one({ instanceId: 1 }));
  hosts([lease("h1", { cpu: 1 })], {}, false);
  assert.equal(transport.takeOne("set-placements").placements.length, 1);
  assert.equal(gangs(), 0, "work is due now: no long poll");
  const filters = hosts([lease("h2", { cpu: 1 })]);
  assert.equal(filters[0].tasks, 3);
  assert.equal(transport.takeOne("set-placements").placements[0].hostname, "h2");
});

Deno.test("a gang with any unplaced task fails whole and keeps no placement", () => {
  const { gangs, hosts, transport, clock } = setup({ policies: quick });
  const gang: Gang = {
    tasks: [0, 1, 2].map((i) => makeRmTask({ jobId: "g", instanceId: i, minInstances: 3 })),
  };
  gangs(gang, one({ jobId: "solo" }));
  hosts([lease("h1", { cpu: 2 })]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(
    set.placements.map((p) => p.tasks.map((t) => t.taskId)),
    [["solo-0-1"]],
    "the gang gave h1 back",
  );
  clock.advance(5000);
  gangs();
  hosts([]);
  const [late] = transport.take("set-placements", "resmgr");
  assert.deepEqual(late.failed.map((f) => f.taskId), ["g-0-1", "g-1-1", "g-2-1"]);
  assert.match(late.failed[0].reason, /^gang of 3 could not be placed whole: /);
});

Deno.test("stateless tasks look for a better host for a second round, keeping the first host leased", () => {
  const { gangs, hosts, transport } = setup();
  gangs(one({ taskType: "STATELESS" }));
  const [f] = hosts([lease("h1")]);
  assert.equal(f.order, "most-free");
  assert.deepEqual(transport.take("set-placements"), []);
  assert.deepEqual(transport.take("release-hosts"), [], "h1 stays leased for the next round");
  gangs();
  hosts([lease("h2", { cpu: 16 })]);
  const [set] = transport.take("set-placements");
  assert.deepEqual(set.placements.map((p) => p.hostname), ["h2"], "the roomier host won the second round");
  assert.deepEqual(transport.takeOne("release-hosts").leaseIds, ["h1#1"]);
});

Deno.test("a host whose lease goes out with a placement is not held for another round", () => {
  // A batch task and a two-task service share a round: the batch placement uses up a lease the service
  // also landed on. The service must not place on that lease again next round (its launch would find
  // the lease gone and the tasks would be lost).
  const { gangs, hosts, transport } = setup();
  gangs(
    one({ jobId: "batch", instanceId: 0, taskId: "batch-0-1" }),
    { tasks: [makeRmTask({ jobId: "svc", instanceId: 0, taskId: "svc-0-1", taskType: "STATELESS" })] },
    { tasks: [makeRmTask({ jobId: "svc", instanceId: 1, taskId: "svc-1-1", taskType: "STATELESS" })] },
  );
  hosts([lease("h1"), lease("h2")]);
  const [first] = transport.take("set-placements");
  const usedUp = new Set(first.placements.map((p) => p.leaseId));
  assert.deepEqual(first.placements.flatMap((p) => p.tasks.map((t) => t.taskId)), ["batch-0-1"]);
  gangs();
  hosts([]);
  const later = transport.take("set-placements");
  const placed = later.flatMap((s) => s.placements);
  assert.deepEqual(placed.filter((p) => usedUp.has(p.leaseId)), [], "no placement reuses a lease used up");
  assert.deepEqual(placed.flatMap((p) => p.tasks.map((t) => t.taskId)).sort(), ["svc-0-1", "svc-1-1"]);
});

Deno.test("a task waits for its desired host until the desired-host deadline, then takes another", () => {
  const { pe, gangs, hosts, transport, clock } = setup();
  gangs(one({ desiredHost: "h9" }));
  assert.deepEqual(hosts([lease("h1")])[0].hints, ["h9"]);
  assert.deepEqual(transport.take("set-placements").flatMap((s) => s.placements), []);
  assert.deepEqual(transport.takeOne("release-hosts").leaseIds, ["h1#1"]);
  clock.advance(PELOTON_POLICIES.BATCH.retryBackoffMs);
  gangs();
  hosts([lease("h9")]);
  assert.equal(transport.takeOne("set-placements").placements[0].hostname, "h9");
  gangs(one({ instanceId: 1, desiredHost: "h9" }));
  hosts([lease("h1")]);
  clock.advance(PELOTON_POLICIES.BATCH.desiredHostDurationMs);
  // Unanswered that long, the dequeue was sent again (`requestRetryMs`): the latest is answered.
  const dequeues = transport.take("dequeue-gangs", "resmgr");
  assert.ok(dequeues.length > 1);
  pe.receive({ kind: "gangs", reqId: dequeues[dequeues.length - 1].reqId, gangs: [] });
  hosts([lease("h1")]);
  assert.deepEqual(transport.take("set-placements").flatMap((s) => s.placements).map((p) => p.hostname), [
    "h1",
  ]);
});

Deno.test("a large task that keeps failing for room gets a host reserved, and is placed there when it frees up", () => {
  const { gangs, hosts, transport, clock, pe } = setup();
  const big = makeRmTask({ resources: { cpuMilli: 32_000, memMb: 1024, diskMb: 0, gpuMilli: 0 } });
  gangs({ tasks: [big] });
  for (let i = 0; i < 3; i++) {
    hosts([], { "insufficient cpu": 100 });
    clock.advance(20_000);
    if (i < 2) gangs();
  }
  const req = transport.takeOne("reserve-host", "hostmgr");
  assert.equal(req.taskId, big.taskId);
  pe.receive({ kind: "host-reserved", reqId: req.reqId, hostname: "h5" });
  gangs();
  hosts([], { "insufficient cpu": 99, "host reserved for a large task": 1 });
  assert.deepEqual(
    transport.take("set-placements").flatMap((s) => s.placements),
    [],
    "no room elsewhere either",
  );
  const ready = makeLease(makeHost("h5", { cpu: 32, memMb: 4096 }), { leaseId: "h5#9" });
  pe.receive({
    kind: "reservation-update",
    taskId: big.taskId,
    reservationId: req.reservationId,
    lease: ready,
  });
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => [p.leaseId, p.tasks[0].taskId]), [["h5#9", big.taskId]]);
  assert.equal(pe.holding, 0);
});

Deno.test("rounds run in the executor; nothing is handed back until its result arrives", () => {
  const pending: [PlacementRound, (r: PlacementResult) => void][] = [];
  const executor: PlacementExecutor = { partitions: 2, place: (round, cb) => pending.push([round, cb]) };
  const { gangs, hosts, transport } = setup({ pipelineDepth: 1 }, executor);
  gangs(one({ instanceId: 0 }), one({ instanceId: 1 }));
  hosts([lease("h1", { cpu: 1 }), lease("h2", { cpu: 1 })]);
  assert.deepEqual(transport.take("set-placements"), []);
  assert.deepEqual(transport.take("dequeue-gangs"), [], "one round at a time");
  const [round, cb] = pending[0];
  cb(placeRound(round, 2));
  assert.equal(transport.takeOne("set-placements").placements.length, 2);
});

Deno.test("pipelined rounds: the next round is leased while one is out, without its tasks", () => {
  const pending: [PlacementRound, (r: PlacementResult) => void][] = [];
  const executor: PlacementExecutor = { partitions: 1, place: (round, cb) => pending.push([round, cb]) };
  const { gangs, hosts, transport } = setup({ pipelineDepth: 2 }, executor);
  gangs(one({ instanceId: 0 }));
  hosts([lease("h1")]);
  gangs(one({ instanceId: 1 }));
  const filters = hosts([lease("h2")]);
  assert.deepEqual(filters.map((f) => f.maxHosts), [1], "only the new task: the first is still out");
  assert.deepEqual(transport.take("dequeue-gangs"), [], "two rounds out: no more dequeues");
  for (const [round, cb] of pending) cb(placeRound(round, 1));
  const sets = transport.take("set-placements");
  assert.deepEqual(sets.map((s) => s.placements.map((p) => [p.hostname, p.tasks[0].taskId])), [
    [["h1", "job-a-0-1"]],
    [["h2", "job-a-1-1"]],
  ]);
  assert.equal(transport.take("dequeue-gangs").length, 1, "a single long poll follows");
});

Deno.test("gangs in a second answer to a dequeue (its request delivered twice) are placed, not dropped", () => {
  const { pe, gangs, hosts, transport } = setup();
  const dq = transport.takeOne("dequeue-gangs", "resmgr");
  pe.receive({ kind: "gangs", reqId: dq.reqId, gangs: [] });
  // The resource manager answers the same request again, handing over a task it now has PLACING.
  pe.receive({ kind: "gangs", reqId: dq.reqId, gangs: [one({ instanceId: 7 })] });
  // Held with the engine: when the dequeue already out comes back, the round places the task.
  const next = transport.takeOne("dequeue-gangs", "resmgr");
  pe.receive({ kind: "gangs", reqId: next.reqId, gangs: [] });
  hosts([lease("h1")]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => p.tasks.map((t) => t.taskId)), [["job-a-7-1"]]);
  assert.equal(gangs(), 100, "the next dequeue waits again: nothing is held");
});

Deno.test("a dequeue not answered within requestRetryMs is sent again; a late answer's gangs are still placed", () => {
  const { pe, gangs, hosts, transport, clock } = setup();
  const lost = transport.takeOne("dequeue-gangs", "resmgr");
  clock.advance(DEFAULT_PLACEMENT_CONFIG.requestRetryMs - 1);
  assert.deepEqual(transport.take("dequeue-gangs"), [], "still waiting");
  clock.advance(1);
  const again = transport.takeOne("dequeue-gangs", "resmgr");
  assert.notEqual(again.reqId, lost.reqId);
  // The first answer comes after all: its gang is held and placed with the next round.
  pe.receive({ kind: "gangs", reqId: lost.reqId, gangs: [one({ instanceId: 3 })] });
  assert.deepEqual(transport.take("dequeue-gangs"), [], "one dequeue out at a time");
  pe.receive({ kind: "gangs", reqId: again.reqId, gangs: [] });
  hosts([lease("h1")]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => p.tasks.map((t) => t.taskId)), [["job-a-3-1"]]);
  gangs();
  pe.stop();
  assert.equal(clock.pending, 0, "stop leaves no timer behind");
});

Deno.test("a round whose hosts never come is given up after requestRetryMs; its tasks go in the next round", () => {
  const { pe, gangs, hosts, transport, clock } = setup();
  gangs(one({ instanceId: 4 }));
  const lost = transport.takeOne("acquire-hosts", "hostmgr");
  // The round waits for its hosts, which never come.
  clock.advance(DEFAULT_PLACEMENT_CONFIG.requestRetryMs - 1);
  assert.deepEqual(transport.take("dequeue-gangs"), [], "still waiting");
  clock.advance(1);
  gangs();
  hosts([lease("h2")]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => [p.hostname, p.tasks.map((t) => t.taskId)]), [
    ["h2", ["job-a-4-1"]],
  ]);
  // The lost answer comes after all: its leases go back unused.
  pe.receive({
    kind: "hosts-acquired",
    reqId: lost.reqId,
    leases: [lease("h1")],
    rejections: [],
    exhausted: [],
  });
  assert.deepEqual(transport.takeOne("release-hosts", "hostmgr").leaseIds, ["h1#1"]);
  assert.deepEqual(transport.take("set-placements"), []);
});

Deno.test("after stop the engine finishes its round but dequeues no more; stray replies are ignored", () => {
  const { pe, gangs, hosts, transport } = setup();
  gangs(one({}));
  pe.stop();
  hosts([lease("h1")]);
  assert.equal(transport.take("set-placements").length, 1);
  assert.deepEqual(transport.take("dequeue-gangs"), []);
  pe.receive({ kind: "hosts-acquired", reqId: 999, leases: [lease("h1")], rejections: [], exhausted: [] });
  pe.receive({ kind: "gangs", reqId: 999, gangs: [one({})] });
  assert.deepEqual(transport.drain(), []);
});
