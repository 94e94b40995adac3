import assert from "node:assert/strict";
import type { ApiReply, Gang, RmTask } from "../messages.ts";
import { resources, zero } from "../model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";
import { RESMGR_SERVICE } from "./task_inspect.ts";

/** Pools /a (3 cores) and /b, a cluster of 100 cores; job `run` admitted, `wait` and `np` queued in /a. */
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
      gang("wait2", 1),
      gang("np", 1, { preemptible: false }),
      gang("other", 1, { respoolId: "b" }),
    ],
  });
  const call = (method: string, body: unknown): ApiReply => {
    rm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${RESMGR_SERVICE}::${method}`, body });
    return ports.transport.takeOne("api-reply", "cli");
  };
  return { rm, call };
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
  assert.deepEqual(ids(call("GetActiveTasks", { jobID: "wait" }), "PENDING"), ["wait-0-1", "wait-1-1"]);
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
        pendingGangs: [{ taskIDs: ["wait-0", "wait-1"] }, { taskIDs: ["wait2-0"] }, { taskIDs: ["np-0"] }],
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
