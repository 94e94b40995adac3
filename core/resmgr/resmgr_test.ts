import assert from "node:assert/strict";
import type { Gang, RmTask } from "../messages.ts";
import { resources, zero } from "../model/resources.ts";
import type { TaskState } from "../model/states.ts";
import { HostManager } from "../hostmgr/hostmgr.ts";
import { makeHost, makePorts, makeRespoolConfig, makeRmTask, type PoolAmount } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

const ME = "placement";

function setup() {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, DEFAULT_RESMGR_CONFIG);
  const pool = (id: string, amounts: Partial<Record<"cpu" | "memory", PoolAmount>>) => {
    const res = rm.tree.create(id, ROOT_ID, makeRespoolConfig(id, { memory: 100_000, ...amounts }));
    assert.ok(res.ok);
    return res.value;
  };
  const capacity = (cpu: number, memMb = 1_000_000) =>
    rm.receive({
      kind: "cluster-capacity",
      reqId: 0,
      capacity: { physical: resources(cpu * 1000, memMb), slack: zero() },
    });
  const enqueue = (...gangs: Gang[]) => rm.receive({ kind: "enqueue-gangs", gangs });
  const state = (taskId: string): TaskState | undefined => rm.tasks.get(taskId)?.state;
  let reqId = 0;
  const dequeue = (timeoutMs = 0, limit = 100) =>
    rm.receive({ kind: "dequeue-gangs", reqId: ++reqId, replyTo: ME, limit, timeoutMs });
  const gangsReplies = () => ports.transport.take("gangs", ME);
  const getPlacements = () =>
    rm.receive({ kind: "get-placements", reqId: ++reqId, replyTo: "jobmgr", limit: 100, timeoutMs: 0 });
  return { ...ports, rm, pool, capacity, enqueue, state, dequeue, gangsReplies, getPlacements };
}

/** A gang of `n` tasks of job `jobId` in pool `respoolId`. */
function gang(jobId: string, n: number, extra: Partial<RmTask> = {}): Gang {
  const tasks = [];
  for (let i = 0; i < n; i++) {
    tasks.push(makeRmTask({ jobId, instanceId: i, respoolId: "a", minInstances: n, ...extra }));
  }
  return { tasks };
}

Deno.test("start asks the host manager for capacity; scheduling runs every period", () => {
  const { rm, transport, clock, pool, capacity, enqueue, state } = setup();
  pool("a", { cpu: 10 });
  rm.start();
  assert.deepEqual(transport.take("get-cluster-capacity", "hostmgr").length, 1);
  capacity(100);
  enqueue(gang("j", 1));
  assert.equal(state("j-0-1"), "PENDING");
  clock.advance(DEFAULT_RESMGR_CONFIG.schedulingPeriodMs);
  assert.equal(state("j-0-1"), "READY");
  rm.stop();
  assert.equal(clock.pending, 0);
});

Deno.test("a gang is admitted whole; demand moves to allocation", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  const a = pool("a", { cpu: 3 });
  capacity(100);
  enqueue(gang("j", 3));
  assert.equal(a.demand.cpuMilli, 3000);
  rm.schedule();
  assert.deepEqual(["j-0-1", "j-1-1", "j-2-1"].map(state), ["READY", "READY", "READY"]);
  assert.equal(a.demand.cpuMilli, 0);
  assert.equal(a.allocation.total.cpuMilli, 3000);
  assert.equal(a.allocation.nonSlack.cpuMilli, 3000);
  assert.equal(a.allocation.nonPreemptible.cpuMilli, 3000);
});

Deno.test("a preemptible gang above the entitlement stays PENDING and blocks later gangs of its pool only", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  // Within a's limit (4), above its entitlement (the 4 cores split 2 and 2 by reservation).
  pool("a", { cpu: { reservation: 2, limit: 4 } });
  pool("b", { cpu: 2 });
  capacity(4);
  const p = { preemptible: true };
  enqueue(gang("big", 3, p), gang("small", 1, p), {
    tasks: [makeRmTask({ jobId: "other", respoolId: "b", ...p })],
  });
  rm.schedule();
  assert.deepEqual(["big-0-1", "big-1-1", "big-2-1"].map(state), ["PENDING", "PENDING", "PENDING"]);
  assert.equal(state("small-0-1"), "PENDING", "FIFO: the small gang waits behind the big one");
  assert.equal(state("other-0-1"), "READY", "another pool is not blocked");
  // Dropping one task shrinks the gang to 2 cores: it now fits, and the small gang still waits.
  rm.receive({ kind: "drop-tasks", taskIds: ["big-2-1"] });
  rm.schedule();
  assert.deepEqual(["big-0-1", "big-1-1"].map(state), ["READY", "READY"]);
  assert.equal(state("small-0-1"), "PENDING");
});

Deno.test("a gang over its pool's limit stays PENDING without holding up the gangs behind it", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  pool("a", { cpu: 2 });
  capacity(100);
  enqueue(gang("big", 3), gang("small", 1));
  rm.schedule();
  assert.deepEqual(["big-0-1", "big-1-1", "big-2-1"].map(state), ["PENDING", "PENDING", "PENDING"]);
  assert.equal(state("small-0-1"), "READY", "3 cores can never fit a limit of 2: the small gang goes first");
});

Deno.test("higher priority gangs are admitted first", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  pool("a", { cpu: 1 });
  capacity(100);
  enqueue(gang("low", 1, { priority: 1 }), gang("high", 1, { priority: 5 }));
  rm.schedule();
  assert.equal(state("high-0-1"), "READY");
  assert.equal(state("low-0-1"), "PENDING");
});

Deno.test("gangs for a pool that is not a leaf, or no longer exists, are KILLED saying which", () => {
  const { rm, pool, enqueue, transport, getPlacements } = setup();
  pool("gone", { cpu: 1 });
  assert.ok(rm.tree.delete("/gone").ok);
  pool("parent", { cpu: 2 });
  assert.ok(rm.tree.create("child", "parent", makeRespoolConfig("child", { cpu: 1, memory: 100 })).ok);
  for (const respoolId of ["nope", "gone", "parent", ROOT_ID]) {
    enqueue({ tasks: [makeRmTask({ jobId: respoolId, respoolId })] });
  }
  assert.equal(rm.tasks.size, 0);
  getPlacements();
  const [reply] = transport.take("placements", "jobmgr");
  assert.deepEqual(reply.changes.map((c) => [c.state, c.reason]), [
    ["KILLED", "resource pool nope does not exist (deleted?)"],
    ["KILLED", "resource pool gone does not exist (deleted?)"],
    ["KILLED", "resource pool parent is not a leaf pool"],
    ["KILLED", "resource pool root is not a leaf pool"],
  ]);
});

Deno.test("a gang with resources that are not whole units is KILLED and never reaches the pool's demand", () => {
  // Infinity milli-cores (a cpuLimit of 1e308) would make the demand Infinity, then NaN once taken back,
  // and the pool would admit nothing more.
  const { rm, pool, capacity, enqueue, state, transport, getPlacements } = setup();
  const a = pool("a", { cpu: 10 });
  capacity(100);
  const huge = resources(Infinity, 1);
  enqueue(
    gang("bad", 2, { resources: huge }),
    gang("frac", 1, { resources: resources(1.5, 1) }),
    gang("j", 1),
  );
  assert.deepEqual([state("bad-0-1"), state("bad-1-1"), state("frac-0-1")], [
    undefined,
    undefined,
    undefined,
  ]);
  assert.equal(a.demand.cpuMilli, 1000, "only the good gang's");
  getPlacements();
  const [reply] = transport.take("placements", "jobmgr");
  assert.deepEqual(reply.changes.map((c) => [c.taskId, c.state]), [
    ["bad-0-1", "KILLED"],
    ["bad-1-1", "KILLED"],
    ["frac-0-1", "KILLED"],
  ]);
  assert.equal(
    reply.changes[0].reason,
    "task bad-0-1: resources.cpuMilli: got Infinity, expected a whole number of units from 0 to 9007199254740991",
  );
  assert.match(reply.changes[2].reason!, /resources\.cpuMilli: got 1\.5,/);
  rm.schedule();
  assert.equal(state("j-0-1"), "READY", "the pool still admits");
  // A job manager recovering reports its running tasks: one such is not accounted either.
  rm.receive({
    kind: "track-tasks",
    tasks: [{ task: makeRmTask({ jobId: "old", respoolId: "a", resources: huge }), state: "RUNNING" }],
  });
  assert.equal(state("old-0-1"), undefined);
  assert.equal(a.allocation.total.cpuMilli, 1000);
  assert.ok(Number.isFinite(a.entitlement.cpu));
});

Deno.test("dequeue-gangs answers at once when READY gangs exist and marks their tasks PLACING", () => {
  const { rm, pool, capacity, enqueue, state, dequeue, gangsReplies } = setup();
  pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 2), gang("k", 1));
  rm.schedule();
  dequeue(5_000, 2);
  const [reply] = gangsReplies();
  assert.deepEqual(reply.gangs.map((g) => g.tasks.length), [2], "limit counts tasks; the next gang waits");
  assert.deepEqual([state("j-0-1"), state("j-1-1"), state("k-0-1")], ["PLACING", "PLACING", "READY"]);
  assert.equal(rm.tasks.get("j-0-1")!.placementAttempts, 1);
});

Deno.test("dequeue-gangs with nothing READY waits for its timeout and then answers empty", () => {
  const { clock, dequeue, gangsReplies } = setup();
  dequeue(500);
  assert.deepEqual(gangsReplies(), []);
  clock.advance(499);
  assert.deepEqual(gangsReplies(), []);
  clock.advance(1);
  assert.deepEqual(gangsReplies().map((r) => r.gangs), [[]]);
});

Deno.test("a parked dequeue-gangs is answered as soon as a gang becomes READY", () => {
  const { rm, clock, pool, capacity, enqueue, dequeue, gangsReplies } = setup();
  pool("a", { cpu: 10 });
  capacity(100);
  rm.start();
  dequeue(10_000);
  enqueue(gang("j", 1));
  assert.deepEqual(gangsReplies(), []);
  clock.advance(DEFAULT_RESMGR_CONFIG.schedulingPeriodMs);
  const replies = gangsReplies();
  assert.equal(replies.length, 1);
  assert.deepEqual(replies[0].gangs[0].tasks.map((t) => t.taskId), ["j-0-1"]);
  clock.advance(10_000);
  assert.deepEqual(gangsReplies(), [], "the timeout was cancelled");
  rm.stop();
});

Deno.test("set-placements makes tasks PLACED; get-placements hands them off (LAUNCHING) with the changes", () => {
  const { rm, transport, pool, capacity, enqueue, state, dequeue, getPlacements } = setup();
  pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 1));
  rm.schedule();
  dequeue();
  const placement = {
    leaseId: "h1#1",
    hostname: "h1",
    agentId: "agent-h1",
    tasks: [{ taskId: "j-0-1", ports: {} }],
  };
  rm.receive({ kind: "set-placements", placements: [placement], failed: [] });
  assert.equal(state("j-0-1"), "PLACED");
  getPlacements();
  const [reply] = transport.take("placements", "jobmgr");
  assert.deepEqual(reply.placements, [placement]);
  assert.deepEqual(reply.changes.map((c) => c.state), ["READY", "PLACING", "PLACED"]);
  assert.equal(state("j-0-1"), "LAUNCHING");
  getPlacements();
  const [empty] = transport.take("placements", "jobmgr");
  assert.deepEqual([empty.placements, empty.changes], [[], []], "each change is reported once");
});

Deno.test("a parked get-placements is answered when placements arrive", () => {
  const { rm, transport, pool, capacity, enqueue, dequeue } = setup();
  pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 1));
  rm.schedule();
  dequeue();
  rm.receive({ kind: "get-placements", reqId: 1, replyTo: "jobmgr", limit: 10, timeoutMs: 0 });
  transport.take("placements");
  rm.receive({ kind: "get-placements", reqId: 2, replyTo: "jobmgr", limit: 10, timeoutMs: 1000 });
  assert.deepEqual(transport.take("placements"), []);
  const p = { leaseId: "l", hostname: "h1", agentId: "a1", tasks: [{ taskId: "j-0-1", ports: {} }] };
  rm.receive({ kind: "set-placements", placements: [p], failed: [] });
  const [reply] = transport.take("placements", "jobmgr");
  assert.equal(reply.reqId, 2);
  assert.deepEqual(reply.placements, [p]);
});

Deno.test("a placement whose tasks stay LAUNCHING (its reply lost) is handed over again, a few times", () => {
  const { rm, clock, transport, pool, capacity, enqueue, state, dequeue, getPlacements } = setup();
  pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 2, { minInstances: 1 }));
  rm.start();
  clock.advance(DEFAULT_RESMGR_CONFIG.schedulingPeriodMs);
  dequeue();
  const p = {
    leaseId: "l",
    hostname: "h1",
    agentId: "a1",
    tasks: [{ taskId: "j-0-1", ports: {} }, { taskId: "j-1-1", ports: {} }],
  };
  rm.receive({ kind: "set-placements", placements: [p], failed: [] });
  getPlacements();
  assert.deepEqual(transport.take("placements", "jobmgr").flatMap((r) => r.placements), [p]);
  assert.deepEqual([state("j-0-1"), state("j-1-1")], ["LAUNCHING", "LAUNCHING"]);
  // One task's launch is heard of; the other's reply was lost on the way and nothing came of it.
  rm.receive({
    kind: "task-updates",
    updates: [{ taskId: "j-0-1", state: "LAUNCHED", hostname: "h1", timeMs: 5 }],
  });
  clock.advance(DEFAULT_RESMGR_CONFIG.launchingTimeoutMs - 1);
  getPlacements();
  assert.deepEqual(transport.take("placements", "jobmgr").flatMap((r) => r.placements), [], "not yet");
  const { launchingTimeoutMs, launchingResends } = DEFAULT_RESMGR_CONFIG;
  for (let i = 0; i < launchingResends; i++) {
    clock.advance(i === 0 ? 1 : launchingTimeoutMs);
    getPlacements();
    const again = transport.take("placements", "jobmgr").flatMap((r) => r.placements);
    assert.deepEqual(again, [{ ...p, tasks: [{ taskId: "j-1-1", ports: {} }] }], `resend ${i + 1}`);
  }
  clock.advance(launchingTimeoutMs);
  getPlacements();
  assert.deepEqual(transport.take("placements", "jobmgr").flatMap((r) => r.placements), [], "sent enough");
  assert.equal(state("j-1-1"), "LAUNCHING");
  rm.stop();
});

Deno.test("failed placements go back to READY with their reason and are offered again after the backoff", () => {
  const { rm, clock, transport, pool, capacity, enqueue, state, dequeue, gangsReplies, getPlacements } =
    setup();
  pool("a", { cpu: 10 });
  capacity(100);
  rm.start();
  enqueue(gang("g", 2));
  clock.advance(100);
  dequeue();
  gangsReplies();
  rm.receive({
    kind: "set-placements",
    placements: [],
    failed: [{ taskId: "g-0-1", reason: "no host fits" }, { taskId: "g-1-1", reason: "no host fits" }],
  });
  assert.deepEqual([state("g-0-1"), state("g-1-1")], ["READY", "READY"]);
  assert.equal(rm.tasks.get("g-0-1")!.lastFailure, "no host fits");
  getPlacements();
  const changes = transport.take("placements", "jobmgr")[0].changes.filter((c) => c.taskId === "g-0-1");
  assert.deepEqual(changes.at(-1), { taskId: "g-0-1", state: "READY", timeMs: 100, reason: "no host fits" });
  dequeue();
  assert.deepEqual(gangsReplies()[0].gangs, [], "not before the backoff");
  clock.advance(DEFAULT_RESMGR_CONFIG.placementRetryBackoffMs);
  dequeue();
  const [again] = gangsReplies()[0].gangs;
  assert.deepEqual(again.tasks.map((t) => t.taskId), ["g-0-1", "g-1-1"], "the gang stays together");
  assert.equal(rm.tasks.get("g-0-1")!.placementAttempts, 2);
  rm.stop();
});

Deno.test("an engine's interim reason stays PLACING and reaches the job manager with the next changes", () => {
  const { rm, clock, transport, pool, capacity, enqueue, state, dequeue, gangsReplies, getPlacements } =
    setup();
  pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("g", 1), gang("h", 1));
  rm.schedule();
  clock.advance(100);
  dequeue();
  gangsReplies();
  const why = "no host with 6 free cpus: insufficient cpu on 3 hosts";
  rm.receive({
    kind: "set-placements",
    placements: [],
    failed: [],
    pending: [{ reason: why, taskIds: ["g-0-1", "gone-0-1"] }],
  });
  assert.deepEqual([state("g-0-1"), state("h-0-1")], ["PLACING", "PLACING"], "still the engine's to place");
  assert.equal(rm.tasks.get("g-0-1")!.lastFailure, why);
  getPlacements();
  const [reply] = transport.take("placements", "jobmgr");
  assert.deepEqual(reply.changes.at(-1), { taskId: "g-0-1", state: "PLACING", timeMs: 100, reason: why });
  assert.equal(reply.changes.filter((c) => c.reason).length, 1, "only the task the reason is for");
});

Deno.test("each dequeue carries the room epoch: it grows when tasks end, capacity grows or a host is back", () => {
  const { rm, pool, capacity, enqueue, dequeue, gangsReplies } = setup();
  const epoch = () => {
    dequeue();
    return gangsReplies()[0].roomEpoch;
  };
  assert.equal(epoch(), undefined, "no capacity yet");
  capacity(100);
  assert.equal(epoch(), 1);
  capacity(96);
  capacity(96);
  assert.equal(epoch(), 1, "a lost host or the same capacity again");
  capacity(100);
  assert.equal(epoch(), 2, "the host is back");
  // A host out of maintenance: the same capacity, but room the engines may use now.
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1_000_000), slack: zero() },
    roomFreed: true,
  });
  assert.equal(epoch(), 3, "a host left maintenance");
  pool("a", { cpu: 10 });
  enqueue(gang("g", 1));
  rm.schedule();
  const update = (state: TaskState) =>
    rm.receive({ kind: "task-updates", updates: [{ taskId: "g-0-1", state, hostname: "h1", timeMs: 1 }] });
  update("RUNNING");
  assert.equal(epoch(), 3);
  update("SUCCEEDED");
  assert.equal(epoch(), 4, "the task's room on h1 is free");
});

Deno.test("PLACING tasks whose engine never answers go back to READY after the placing timeout", () => {
  const ports = makePorts();
  const cfg = { ...DEFAULT_RESMGR_CONFIG, placingTimeoutMs: 1_000, placementRetryBackoffMs: 0 };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, cfg);
  rm.tree.create("a", ROOT_ID, makeRespoolConfig("a"));
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1e6), slack: zero() },
  });
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j", 1)] });
  rm.start();
  ports.clock.advance(100);
  rm.receive({ kind: "dequeue-gangs", reqId: 1, replyTo: ME, limit: 10, timeoutMs: 0 });
  assert.equal(rm.tasks.get("j-0-1")!.state, "PLACING");
  ports.clock.advance(1_000);
  assert.equal(rm.tasks.get("j-0-1")!.state, "READY");
  rm.stop();
});

Deno.test("drop-tasks releases the allocation of admitted tasks and the demand of pending ones", () => {
  const { rm, pool, capacity, enqueue, dequeue, gangsReplies } = setup();
  const a = pool("a", { cpu: 2 });
  capacity(100);
  enqueue(gang("placing", 1), gang("ready", 1), gang("wait", 1));
  rm.schedule();
  dequeue(0, 1);
  assert.equal(gangsReplies()[0].gangs[0].tasks[0].taskId, "placing-0-1");
  assert.equal(a.allocation.total.cpuMilli, 2000);
  assert.equal(a.demand.cpuMilli, 1000);
  rm.receive({ kind: "drop-tasks", taskIds: ["placing-0-1", "ready-0-1", "wait-0-1"] });
  assert.equal(a.allocation.total.cpuMilli, 0);
  assert.equal(a.allocation.nonSlack.cpuMilli, 0);
  assert.equal(a.demand.cpuMilli, 0);
  assert.equal(a.pending.size, 0);
  assert.equal(rm.tasks.size, 0);
  dequeue();
  assert.deepEqual(gangsReplies()[0].gangs, [], "a dropped READY task is not offered to placement");
});

Deno.test("terminal task-updates release the allocation; others only move the state", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  const a = pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 2));
  rm.schedule();
  const update = (taskId: string, s: TaskState) =>
    rm.receive({ kind: "task-updates", updates: [{ taskId, state: s, hostname: "h1", timeMs: 5 }] });
  update("j-0-1", "RUNNING");
  assert.equal(state("j-0-1"), "RUNNING");
  assert.equal(a.allocation.total.cpuMilli, 2000);
  update("j-0-1", "SUCCEEDED");
  update("j-1-1", "LOST");
  assert.equal(a.allocation.total.cpuMilli, 0);
  assert.equal(rm.tasks.size, 0);
  update("j-1-1", "LOST");
  assert.equal(a.allocation.total.cpuMilli, 0, "a second terminal update is harmless");
});

Deno.test("track-tasks accounts recovered tasks in their pool's allocation", () => {
  const { rm, pool } = setup();
  const a = pool("a", { cpu: 10 });
  const task = makeRmTask({ respoolId: "a", preemptible: true });
  rm.receive({ kind: "track-tasks", tasks: [{ task, state: "RUNNING" }] });
  rm.receive({ kind: "track-tasks", tasks: [{ task, state: "RUNNING" }] });
  assert.equal(rm.tasks.get(task.taskId)!.state, "RUNNING");
  assert.equal(a.allocation.total.cpuMilli, 1000, "tracking twice counts once");
  assert.equal(a.allocation.nonPreemptible.cpuMilli, 0);
  rm.receive({
    kind: "task-updates",
    updates: [{ taskId: task.taskId, state: "FAILED", hostname: "h", timeMs: 1 }],
  });
  assert.equal(a.allocation.total.cpuMilli, 0);
});

Deno.test("a capacity change recalculates entitlement and admits what now fits", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  const a = pool("a", { cpu: { reservation: 0, limit: 1000 } });
  capacity(2);
  assert.equal(a.entitlement.cpu, 2);
  enqueue(gang("j", 3, { preemptible: true }));
  rm.schedule();
  assert.equal(state("j-0-1"), "PENDING");
  capacity(4);
  assert.equal(a.entitlement.cpu, 4);
  rm.schedule();
  assert.equal(state("j-0-1"), "READY");
});

Deno.test("hosts registering at the host manager grow the pools' entitlement", () => {
  const { rm, transport, clock, metrics, store, pool } = setup();
  const a = pool("a", { cpu: { reservation: 0, limit: 1000 } });
  const backend = { start() {}, launch() {}, kill() {}, reconcile() {}, stop: () => Promise.resolve() };
  const hm = new HostManager({
    clock,
    transport,
    backend,
    metrics,
    store,
    self: "hostmgr",
    jobmgr: "jobmgr",
    resmgr: "resmgr",
  });
  hm.onBackendEvents([{ kind: "host-up", host: makeHost("h1", { cpu: 8 }) }]);
  transport.deliverTo("resmgr", rm);
  assert.equal(a.entitlement.cpu, 8);
  hm.onBackendEvents([{ kind: "host-up", host: makeHost("h2", { cpu: 8 }) }]);
  transport.deliverTo("resmgr", rm);
  assert.equal(a.entitlement.cpu, 16);
});

Deno.test("a PLACING timeout belongs to its attempt: an earlier attempt's deadline does not end a later one", () => {
  const ports = makePorts();
  const cfg = { ...DEFAULT_RESMGR_CONFIG, placingTimeoutMs: 1_000, placementRetryBackoffMs: 0 };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, cfg);
  rm.tree.create("a", ROOT_ID, makeRespoolConfig("a"));
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1e6), slack: zero() },
  });
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j", 1)] });
  rm.start();
  const dequeue = () => rm.receive({ kind: "dequeue-gangs", reqId: 1, replyTo: ME, limit: 10, timeoutMs: 0 });
  ports.clock.advance(100);
  dequeue(); // attempt 1, due back at 1,100
  ports.clock.advance(200);
  rm.receive({ kind: "set-placements", placements: [], failed: [{ taskId: "j-0-1", reason: "no host" }] });
  ports.clock.advance(200);
  dequeue(); // attempt 2 at 500, due back at 1,500
  assert.equal(rm.tasks.get("j-0-1")!.placementAttempts, 2);
  ports.clock.advance(700); // 1,200: past attempt 1's deadline
  assert.equal(rm.tasks.get("j-0-1")!.state, "PLACING");
  ports.clock.advance(300);
  assert.equal(rm.tasks.get("j-0-1")!.state, "READY");
  rm.stop();
});

Deno.test("a pending gang that loses a task keeps its place in its queue", () => {
  const { rm, pool, capacity, enqueue, state } = setup();
  const a = pool("a", { cpu: 3 });
  capacity(100);
  const p = { preemptible: true };
  enqueue(gang("first", 3, p));
  rm.schedule();
  enqueue(gang("x", 2, p), gang("big", 3, p), gang("y", 1, p));
  rm.receive({ kind: "drop-tasks", taskIds: ["big-1-1"] });
  assert.deepEqual([...a.pending].map((g) => rm.tasks.task[g.rows[0]]!.jobId), ["x", "big", "y"]);
  assert.deepEqual(a.demand.cpuMilli, 5000);
  for (const id of ["first-0-1", "first-1-1", "first-2-1"]) {
    rm.receive({
      kind: "task-updates",
      updates: [{ taskId: id, state: "SUCCEEDED", hostname: "h", timeMs: 1 }],
    });
  }
  rm.schedule();
  assert.deepEqual([state("x-0-1"), state("big-0-1"), state("y-0-1")], ["READY", "PENDING", "PENDING"]);
});

Deno.test("a task enqueued again replaces its earlier copy; the same task twice in a gang counts once", () => {
  const { rm, pool, capacity, enqueue, state, dequeue, gangsReplies } = setup();
  const a = pool("a", { cpu: 10 });
  capacity(100);
  enqueue(gang("j", 2));
  rm.schedule();
  assert.equal(state("j-0-1"), "READY");
  assert.equal(a.allocation.total.cpuMilli, 2000);
  // A recovering job manager sends the gang again: the admitted copies give their allocation back.
  enqueue(gang("j", 2));
  assert.deepEqual(["j-0-1", "j-1-1"].map(state), ["PENDING", "PENDING"]);
  assert.equal(rm.tasks.size, 2);
  assert.equal(a.allocation.total.cpuMilli, 0);
  assert.equal(a.demand.cpuMilli, 2000);
  const twice = makeRmTask({ jobId: "k", instanceId: 0, respoolId: "a" });
  enqueue({ tasks: [twice, { ...twice }] });
  assert.equal(rm.tasks.size, 3);
  assert.equal(a.demand.cpuMilli, 3000);
  rm.schedule();
  assert.equal(a.allocation.total.cpuMilli, 3000);
  dequeue();
  const offered = gangsReplies()[0].gangs.flatMap((g) => g.tasks.map((t) => t.taskId)).sort();
  assert.deepEqual(offered, ["j-0-1", "j-1-1", "k-0-1"]);
});
