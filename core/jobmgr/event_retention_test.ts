/** A task's events are kept for its newest runs only (Peloton's archiver keeps 100 per instance). */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { KEPT_EVENT_RUNS } from "./jobmgr.ts";

Deno.test("a service in a crash loop keeps the events of its newest runs, not every run's", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1, maxTaskBackoffMs: 1 });
  rig.create({ type: "SERVICE", instanceCount: 1 });
  const runs = KEPT_EVENT_RUNS + 5;
  for (let run = 1; run <= runs; run++) {
    assert.equal(rig.task(0).runId, run);
    const taskId = rig.taskId(0);
    rig.launch([0]);
    rig.status(taskId, "TASK_RUNNING");
    rig.status(taskId, "TASK_FAILED");
    rig.store.settle();
    // Past its restart backoff: the next run starts and is enqueued.
    rig.tick(1);
    rig.store.settle();
    rig.transport.take("enqueue-gangs", "resmgr");
  }
  const kept = new Set(rig.store.events.filter((e) => e.jobId === JOB_ID).map((e) => e.runId));
  // Run `runs + 1` has started: the newest 100 runs are the ones after run `runs + 1 - 100`.
  const newest = runs + 1;
  assert.equal(Math.min(...kept), newest - KEPT_EVENT_RUNS + 1);
  assert.equal(Math.max(...kept), newest);
  assert.equal(kept.size, KEPT_EVENT_RUNS);
});
