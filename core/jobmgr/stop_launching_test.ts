/** A graceful stop's first step at the job manager: nothing more launched, statuses still recorded. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { DEFAULT_JOBMGR_CONFIG } from "./jobmgr.ts";

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;

Deno.test("stopLaunching: no launch goes out, not even one waiting for its write; statuses are still stored", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3 });
  rig.launch([0]);
  rig.status(id(0), "TASK_RUNNING");
  // Placed before the stop, its LAUNCHING write not stored yet.
  rig.placements([{
    leaseId: "h1#2",
    hostname: "h1",
    agentId: "agent-h1",
    tasks: [{ taskId: id(1), ports: {} }],
  }]);
  const poll = rig.transport.takeOne("get-placements", "resmgr");

  rig.jm.stopLaunching();
  rig.store.settle();
  rig.tick();
  assert.deepEqual(rig.transport.take("launch-tasks"), [], "the launch waiting for its write stays unsent");
  assert.equal(
    rig.task(1).state,
    "LAUNCHING",
    "stored so: the next start finds it unknown, and runs it anew",
  );
  // The poll under way is answered: what it places is left to the next start, and no poll follows.
  rig.jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{
      leaseId: "h1#3",
      hostname: "h1",
      agentId: "agent-h1",
      tasks: [{ taskId: id(2), ports: {} }],
    }],
    changes: [{ taskId: id(2), state: "PLACED", timeMs: 1 }],
  });
  rig.tick(DEFAULT_JOBMGR_CONFIG.placementPollRetryMs);
  rig.store.settle();
  assert.deepEqual(rig.transport.take("launch-tasks"), []);
  assert.deepEqual(rig.transport.take("get-placements"), []);
  assert.equal(rig.task(2).state, "PLACED");

  // A task that ends meanwhile is recorded, and stored.
  rig.status(id(0), "TASK_FINISHED");
  rig.store.settle();
  assert.equal(rig.task(0).state, "SUCCEEDED");
  assert.equal(rig.store.task(JOB_ID, 0)!.state, "SUCCEEDED");
});
