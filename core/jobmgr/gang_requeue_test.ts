import assert from "node:assert/strict";
import type { TaskConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/harness.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

const REVOKE = "PREEMPTION_REASON_REVOKE_RESOURCES";
const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;

/** A batch job of `instanceCount` instances, the first 3 a gang, all launched and RUNNING. */
function runningGang(instanceCount = 3, task: Partial<TaskConfig> = {}) {
  const rig = new JobmgrRig();
  const sla = { ...makeJobConfig().sla, preemptible: true, minimumRunningInstances: 3 };
  const { gangs } = rig.create({ instanceCount, sla, task });
  assert.equal(gangs[0].tasks.length, 3);
  const all = Array.from({ length: instanceCount }, (_, i) => i);
  rig.launch(all);
  for (const i of all) rig.status(id(i), "TASK_RUNNING");
  return rig;
}

/** The gangs sent to the resource manager since last asked, as task ids. */
function sent(rig: JobmgrRig): string[][] {
  return rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) =>
    m.gangs.map((g) => g.tasks.map((t) => t.taskId))
  );
}

Deno.test("a preempted gang's members, ending one by one, are enqueued again as one gang", () => {
  const rig = runningGang(4);
  rig.placements([], [], [0, 1, 2].map((i) => ({ taskId: id(i), reason: REVOKE })));
  assert.deepEqual([0, 1, 2].map((i) => rig.task(i).state), ["PREEMPTING", "PREEMPTING", "PREEMPTING"]);
  rig.status(id(0), "TASK_KILLED");
  assert.deepEqual([rig.task(0).state, rig.task(0).runId], ["PENDING", 2]);
  assert.deepEqual(sent(rig), [], "held back: the rest of its gang is on its way");
  assert.match(rig.task(0).message ?? "", /^waiting for the rest of its gang \(minimumRunningInstances 3\)/);
  assert.match(rig.store.task(JOB_ID, 0)!.message ?? "", /^waiting for the rest of its gang/, "stored too");
  rig.status(id(1), "TASK_KILLED");
  assert.deepEqual(sent(rig), []);
  rig.status(id(2), "TASK_KILLED");
  assert.deepEqual(sent(rig), [[id(0, 2), id(1, 2), id(2, 2)]], "one gang of 3, never in parts");
  assert.deepEqual([0, 1, 2].map((i) => rig.task(i).message), [undefined, undefined, undefined]);
  // A task outside the gang goes on its own, at once.
  rig.placements([], [], [{ taskId: id(3), reason: REVOKE }]);
  rig.status(id(3), "TASK_KILLED");
  assert.deepEqual(sent(rig), [[id(3, 2)]]);
});

Deno.test("a member that fails while the rest of its gang runs rejoins it alone, at once", () => {
  const rig = runningGang(3, { restartPolicy: { maxFailures: 3 } });
  rig.status(id(0), "TASK_FAILED");
  assert.equal(rig.task(0).state, "PENDING");
  // Its gang is running: held back for instances that run, it would wait as long as they do (and they, in a
  // gang such as Horovod's, for it).
  assert.deepEqual(sent(rig), [[id(0, 2)]]);
  assert.doesNotMatch(rig.task(0).message ?? "", /waiting for the rest of its gang/);
});

Deno.test("held members let go of: one stopped is never sent; the rest go once the others are back or done", () => {
  const rig = runningGang(3);
  rig.placements([], [], [0, 1, 2].map((i) => ({ taskId: id(i), reason: REVOKE })));
  rig.status(id(0), "TASK_KILLED");
  rig.status(id(1), "TASK_KILLED");
  assert.deepEqual(sent(rig), []);
  assert.match(rig.task(0).message ?? "", /instance 2 is still to run again$/);
  // Instance 1 is stopped while held: its run is not sent.
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 1, to: 2 }] });
  assert.equal(rig.task(1).state, "KILLED");
  assert.deepEqual(sent(rig), []);
  rig.status(id(2), "TASK_KILLED");
  assert.deepEqual(sent(rig), [[id(0, 2), id(2, 2)]], "what is left of the gang goes as one");
});
