/** Shrinking a batch job that has ended keeps when it ended: no task ran again. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

Deno.test("a batch job shrunk after it ended keeps its completion time", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3 });
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) {
    rig.status(rig.taskId(i), "TASK_RUNNING");
    rig.status(rig.taskId(i), "TASK_FINISHED");
  }
  rig.store.settle();
  const { state, completionTimeMs } = rig.job().runtime;
  assert.equal(state, "SUCCEEDED");
  assert.ok(completionTimeMs !== undefined);
  rig.tick(600_000);
  const config = { ...rig.job().config, instanceCount: 2, respoolID: { value: "pool-a" } };
  rig.api("job", "Update", { id: { value: JOB_ID }, config });
  rig.replies();
  rig.tick(1_000);
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
  assert.equal(rig.job().runtime.completionTimeMs, completionTimeMs, "when it ended, not when it shrank");
});
