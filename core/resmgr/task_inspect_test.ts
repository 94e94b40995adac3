import assert from "node:assert/strict";
import type { ApiReply, Gang, RmTask } from "../messages.ts";
import { resources, zero } from "../model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import type { TaskState } from "../model/states.ts";
import { ROOT_ID } from "./respool_tree.ts";
import { RESMGR_SERVICE } from "./task_inspect.ts";

/** A job whose id is a UUID, as a job manager's are (the others' short names keep the ids readable). */
const JOB = "4b0e3c1a-7c2d-4e5f-8a9b-0c1d2e3f4a5b";

/** Pools /a (3 cores) and /b, a cluster of 100 cores; job `run` admitted, `wait`, JOB and `np` queued in /a. */
function setup() {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, DEFAULT_RESMGR_CONFIG);
  for (const id of ["a", "b"]) {
    assert.ok(rm.tree.create(id, ROOT_ID, makeRespoolConfig(id, { cpu: 3, memory: 100_000 })).ok);
  }
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1_000_000), slack: zero() },
  });
  const gang = (jobId: string, n: number, extra: Partial<RmTask> = {}): Gang => ({
    tasks: Array.from(
      { length: n },
      (_, i) =>
        makeRmTask({ jobId, instanceId: i, respoolId: "a", minInstances: n, preemptible: true, ...extra }),
    ),
  });
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("run", 3)] });
  rm.schedule();
  rm.receive({
    kind: "enqueue-gangs",
    gangs: [
      gang("wait", 2),
      gang(JOB, 1),
      gang("np", 1, { preemptible: false }),
      gang("other", 1, { respoolId: "b" }),
    ],
  });
  const call = (method: string, body: unknown): ApiReply => {
    rm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${RESMGR_SERVICE}::${method}`, body });
    return ports.transport.takeOne("api-reply", "cli");
  };
  return { rm, call, ports };
}

type Active = {
  tasksByState: Record<string, { taskEntry: { taskID: string; respool: string }[] }>;
  total: number;
};
const ids = (r: ApiReply, state: string) =>
  (r.body as Active).tasksByState[state]?.taskEntry.map((e) => e.taskID) ?? [];

Deno.test("GetActiveTasks lists the resource manager's tasks by state, filtered by job, pool and states", () => {
  const { call } = setup();
  const all = call("GetActiveTasks", {});
  assert.deepEqual(Object.keys((all.body as Active).tasksByState).sort(), ["PENDING", "READY"]);
  assert.deepEqual(ids(all, "READY"), ["run-0-1", "run-1-1", "run-2-1"]);
  assert.equal((all.body as Active).total, 8);
  assert.deepEqual((all.body as Active).tasksByState.READY.taskEntry[0], {
    taskID: "run-0-1",
    taskState: "READY",
    respool: "/a",
    reason: "",
  });
  assert.deepEqual(ids(call("GetActiveTasks", { jobID: JOB }), "PENDING"), [`${JOB}-0-1`]);
  assert.equal((call("GetActiveTasks", { jobID: JOB.toUpperCase() }).body as Active).total, 0);
  assert.equal((call("GetActiveTasks", { jobID: "" }).body as Active).total, 8, "empty: every job");
  // Not a job id: refused, where it would list nothing as a job without tasks does.
  for (const bad of ["wait", `${JOB}-0`, "not-a-job"]) {
    assert.deepEqual(call("GetActiveTasks", { jobID: bad }).error, {
      code: "invalid-argument",
      message: `jobID: got ${JSON.stringify(bad)}, expected a job id`,
    }, bad);
  }
  assert.deepEqual(ids(call("GetActiveTasks", { respoolID: "/b" }), "PENDING"), ["other-0-1"]);
  assert.deepEqual(ids(call("GetActiveTasks", { respoolID: "b" }), "PENDING"), ["other-0-1"]);
  const pending = call("GetActiveTasks", { states: ["PENDING"], limit: 2 }).body as Active;
  assert.deepEqual(Object.keys(pending.tasksByState), ["PENDING"]);
  assert.equal(pending.tasksByState.PENDING.taskEntry.length, 2);
  assert.equal(pending.total, 5, "total counts every match, past the limit");
});

Deno.test("GetPendingTasks lists a leaf pool's queued gangs per queue, in admission order", () => {
  // Preemption is off: non-preemptible work waits in the pending queue with the rest.
  const { call } = setup();
  assert.deepEqual(call("GetPendingTasks", { respoolID: { value: "/a" } }).body, {
    pendingGangsByQueue: {
      pending: {
        pendingGangs: [{ taskIDs: ["wait-0", "wait-1"] }, { taskIDs: [`${JOB}-0`] }, { taskIDs: ["np-0"] }],
      },
    },
  });
  assert.deepEqual(call("GetPendingTasks", { respoolID: "a", limit: 1 }).body, {
    pendingGangsByQueue: { pending: { pendingGangs: [{ taskIDs: ["wait-0", "wait-1"] }] } },
  });
});

Deno.test("bad task inspection requests name the field; other methods of the service are not served", () => {
  const { call } = setup();
  assert.deepEqual(call("GetPendingTasks", {}).error, {
    code: "invalid-argument",
    message: "respoolID: expected a resource pool id or path",
  });
  assert.deepEqual(call("GetPendingTasks", { respoolID: "/nope" }).error, {
    code: "not-found",
    message: "resource pool /nope not found",
  });
  assert.deepEqual(call("GetPendingTasks", { respoolID: ROOT_ID }).error, {
    code: "invalid-argument",
    message: "respoolID: resource pool / is not a leaf pool",
  });
  assert.match(call("GetActiveTasks", { states: ["SLEEPING"] }).error!.message, /^states: got "SLEEPING"/);
  assert.match(call("GetActiveTasks", { limit: -1 }).error!.message, /^limit: got -1/);
  assert.equal(call("EnqueueGangs", {}).error?.code, "unimplemented");
});

Deno.test("a task inspection limit past a uint32 is refused saying the bound; one written as text is read", () => {
  const { call } = setup();
  assert.deepEqual(call("GetActiveTasks", { limit: 1e20 }).error, {
    code: "invalid-argument",
    message: "limit: got 100000000000000000000, expected a whole number from 0 to 4294967295 (0 for all)",
  });
  assert.deepEqual(call("GetPendingTasks", { respoolID: "a", limit: 2 ** 32 }).error, {
    code: "invalid-argument",
    message: "limit: got 4294967296, expected a whole number of gangs from 0 to 4294967295",
  });
  const one = call("GetActiveTasks", { limit: "1" }).body as Active;
  assert.equal(Object.values(one.tasksByState).flatMap((s) => s.taskEntry).length, 1);
  assert.equal(call("GetPendingTasks", { respoolID: "a", limit: 2 ** 32 - 1 }).error, undefined);
});

type Orphan = {
  id: { value: string };
  taskId: { value: string };
  state: string;
  respool: string;
  held: boolean;
  kind: string;
  reason: string;
  hostname?: string;
  resource: Record<string, number>;
};
const orphans = (r: ApiReply) => (r.body as { orphanTasks: Orphan[] }).orphanTasks;
const ended = (taskId: string, state: TaskState = "KILLED") => ({
  kind: "task-updates" as const,
  updates: [{ taskId, state, hostname: "h1", timeMs: 1 }],
});

Deno.test("GetOrphanTasks lists a run held beside a later run of its instance (Peloton's orphan), by pool", () => {
  const { rm, call } = setup();
  assert.deepEqual(orphans(call("GetOrphanTasks", {})), [], "one run of each instance: no orphan");
  // The end of run-0-1 (admitted) and of wait-1-1 (queued) never arrived; their next runs did, one in /b.
  rm.receive({
    kind: "enqueue-gangs",
    gangs: [
      { tasks: [makeRmTask({ jobId: "run", instanceId: 0, taskId: "run-0-3", respoolId: "b" })] },
      { tasks: [makeRmTask({ jobId: "wait", instanceId: 1, taskId: "wait-1-2", respoolId: "a" })] },
    ],
  });
  const all = orphans(call("GetOrphanTasks", {}));
  assert.deepEqual(all.map((o) => o.taskId.value), ["run-0-1", "wait-1-1"], "the newer runs are not orphans");
  assert.deepEqual(all[0], {
    id: { value: "run-0" },
    jobId: { value: "run" },
    taskId: { value: "run-0-1" },
    resource: { cpuLimit: 1, memLimitMb: 128, diskLimitMb: 0, gpuLimit: 0 },
    state: "READY",
    respool: "/a",
    held: true,
    kind: "SUPERSEDED",
    reason: "run 3 of the instance is held too; this run's end has not reached the resource manager",
  });
  assert.equal(all[1].held, false, "a queued run holds no allocation");
  assert.equal(all[1].state, "PENDING");

  assert.deepEqual(orphans(call("GetOrphanTasks", { respoolID: "/b" })), []);
  assert.equal(orphans(call("GetOrphanTasks", { respoolID: "a" })).length, 2);
  assert.equal(orphans(call("GetOrphanTasks", { respoolID: ROOT_ID })).length, 2, "a pool's subtree");

  // The lost ends come after all: nothing is orphaned, and the allocation is back.
  const a = rm.tree.get("a")!;
  const before = a.allocation.total.cpuMilli;
  rm.receive(ended("run-0-1"));
  rm.receive(ended("wait-1-1"));
  assert.deepEqual(orphans(call("GetOrphanTasks", {})), []);
  assert.equal(a.allocation.total.cpuMilli, before - 1000);
});

Deno.test("GetOrphanTasks lists a task still LAUNCHING after its placement was handed over the last time", () => {
  const { rm, call, ports } = setup();
  const { launchingTimeoutMs, launchingResends } = DEFAULT_RESMGR_CONFIG;
  rm.receive({ kind: "dequeue-gangs", reqId: 2, replyTo: "placement", limit: 10, timeoutMs: 0 });
  const placement = {
    leaseId: "l1",
    hostname: "h1",
    agentId: "a1",
    tasks: [{ taskId: "run-0-1", ports: {} }],
  };
  rm.receive({ kind: "set-placements", placements: [placement], failed: [] });
  const handOver = () => {
    rm.receive({ kind: "get-placements", reqId: 3, replyTo: "jobmgr", limit: 10, timeoutMs: 0 });
    return ports.transport.take("placements", "jobmgr").flatMap((r) => r.placements).length;
  };
  assert.equal(handOver(), 1);
  assert.equal(rm.tasks.get("run-0-1")?.state, "LAUNCHING");
  for (let i = 0; i < launchingResends; i++) {
    ports.clock.advance(launchingTimeoutMs);
    rm.schedule();
    assert.equal(handOver(), 1, `handed over again (${i + 1})`);
    assert.deepEqual(orphans(call("GetOrphanTasks", {})), [], "not while it is still being handed over");
  }
  ports.clock.advance(launchingTimeoutMs);
  rm.schedule();
  assert.equal(handOver(), 0, "handed over enough");
  const [o, ...rest] = orphans(call("GetOrphanTasks", {}));
  assert.deepEqual(rest, []);
  assert.deepEqual(
    [o.taskId.value, o.state, o.kind, o.hostname, o.held],
    ["run-0-1", "LAUNCHING", "LAUNCH_ABANDONED", "h1", true],
  );
  const times = launchingResends + 1;
  assert.equal(
    o.reason,
    `placed on h1 and handed to the job manager ${times} times, with no status from the host manager since`,
  );
  // A status from the host manager at last: the task moves on and is no orphan.
  rm.receive({
    kind: "task-updates",
    updates: [{ taskId: "run-0-1", state: "RUNNING", hostname: "h1", timeMs: 2 }],
  });
  assert.deepEqual(orphans(call("GetOrphanTasks", {})), []);
});

Deno.test("GetOrphanTasks: a bad or unknown pool is an error naming it", () => {
  const { call } = setup();
  assert.deepEqual(call("GetOrphanTasks", { respoolID: "/nope" }).error, {
    code: "not-found",
    message: "resource pool /nope not found",
  });
  assert.match(call("GetOrphanTasks", { respoolID: 7 }).error!.message, /^respoolID: got 7, expected/);
});
