/** A task stopped while out with a placement engine: the engine that holds it is told, and only that one. */
import assert from "node:assert/strict";
import type { Gang } from "../messages.ts";
import { makeRmTask } from "../testing/harness.ts";
import { resmgrWithPool } from "../testing/resmgr_pool.ts";

const setup = resmgrWithPool;

const gang = (jobId: string, n: number): Gang => ({
  tasks: Array.from(
    { length: n },
    (_, i) => makeRmTask({ jobId, instanceId: i, respoolId: "a", minInstances: n }),
  ),
});

Deno.test("a PLACING gang member that is dropped is taken back from the engine holding it", () => {
  const { rm, transport, dequeue } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("g", 3)] });
  rm.schedule();
  assert.equal(dequeue("placement@1").length, 1);
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("h", 2)] });
  rm.schedule();
  assert.equal(dequeue("placement@2").length, 1);
  rm.receive({ kind: "drop-tasks", taskIds: ["g-1-1", "h-9-1"] });
  assert.deepEqual(transport.take("tasks-dropped", "placement@1").map((m) => m.taskIds), [["g-1-1"]]);
  assert.deepEqual(transport.take("tasks-dropped", "placement@2"), [], "the other engine holds none of them");
  // What the engine hands back of the rest of the gang goes back to READY as one gang, without the member.
  rm.receive({
    kind: "set-placements",
    placements: [],
    failed: ["g-0-1", "g-2-1"].map((taskId) => ({ taskId, reason: "a member of its gang was stopped" })),
  });
  assert.deepEqual(["g-0-1", "g-2-1"].map((id) => rm.tasks.get(id)?.state), ["READY", "READY"]);
  assert.equal(rm.tasks.get("g-1-1"), undefined);
});

Deno.test("a dropped task that is READY or PENDING, or dropped twice, tells no engine", () => {
  const { rm, transport, dequeue } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("g", 2)] });
  rm.schedule();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("h", 2)] });
  rm.receive({ kind: "drop-tasks", taskIds: ["g-0-1", "h-0-1"] });
  assert.deepEqual(dequeue("placement@1").map((g) => g.tasks.map((t) => t.taskId)), [["g-1-1"]]);
  assert.deepEqual(transport.take("tasks-dropped"), []);
  rm.receive({ kind: "drop-tasks", taskIds: ["g-1-1"] });
  rm.receive({ kind: "drop-tasks", taskIds: ["g-1-1"] });
  assert.deepEqual(transport.take("tasks-dropped", "placement@1").map((m) => m.taskIds), [["g-1-1"]]);
});
