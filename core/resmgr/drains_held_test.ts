import assert from "node:assert/strict";
import { resources, zero } from "../model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

Deno.test("a drain the job manager holds for its job's SLA leaves the task RUNNING, and the next drain asks again", () => {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, DEFAULT_RESMGR_CONFIG);
  assert.ok(rm.tree.create("a", ROOT_ID, makeRespoolConfig("a", { cpu: 10, memory: 100_000 })).ok);
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1_000_000), slack: zero() },
  });
  const task = makeRmTask({ jobId: "svc", instanceId: 0, respoolId: "a" });
  rm.receive({ kind: "track-tasks", tasks: [{ task, state: "RUNNING" }] });
  let reqId = 0;
  /** The preemptions the job manager is handed on its next poll. */
  const preemptions = () => {
    rm.receive({ kind: "get-placements", reqId: ++reqId, replyTo: "jobmgr", limit: 100, timeoutMs: 0 });
    return ports.transport.take("placements", "jobmgr").flatMap((r) => r.preemptions ?? []).map((p) =>
      p.taskId
    );
  };

  rm.receive({ kind: "drain-tasks", taskIds: [task.taskId] });
  assert.deepEqual(preemptions(), [task.taskId]);
  assert.equal(rm.tasks.get(task.taskId)?.state, "PREEMPTING");
  rm.receive({ kind: "drain-tasks", taskIds: [task.taskId] });
  assert.deepEqual(preemptions(), [], "already being drained");

  rm.receive({ kind: "drains-held", taskIds: [task.taskId] });
  assert.equal(rm.tasks.get(task.taskId)?.state, "RUNNING");
  rm.receive({ kind: "drain-tasks", taskIds: [task.taskId] });
  assert.deepEqual(preemptions(), [task.taskId], "the host manager's next drain request asks again");
});
