import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

type Body = Record<string, unknown>;

const WHY = "no host with 6 free cpus: insufficient cpu on 3 hosts";

function reply(rig: JobmgrRig): Body {
  const [r] = rig.replies();
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

Deno.test("a reason for a task still PLACING shows in task List and Get and as an event, once", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  const id = rig.taskId(0);
  rig.placements([], [{ taskId: id, state: "READY", timeMs: 1 }, {
    taskId: id,
    state: "PLACING",
    timeMs: 2,
  }]);
  rig.placements([], [{ taskId: id, state: "PLACING", timeMs: 3, reason: WHY }]);
  rig.placements([], [{ taskId: id, state: "PLACING", timeMs: 4, reason: WHY }]);
  rig.store.settle();

  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const runtime = ((reply(rig).result as Body).value as Record<string, Body>)["0"].runtime as Body;
  assert.deepEqual([runtime.state, runtime.message], ["PLACING", WHY]);
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  assert.equal(((reply(rig).result as Body).runtime as Body).message, WHY);

  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0 });
  await new Promise((resolve) => setTimeout(resolve, 0));
  const events = reply(rig).result as Body[];
  assert.deepEqual(
    events.map((e) => [e.actualState, e.message ?? ""]),
    [["PLACING", WHY], ["PLACING", ""], ["READY", ""], ["PENDING", ""]],
    "the same reason again is no new event",
  );
  assert.equal(rig.task(0).stateSinceMs, 2, "still PLACING since the state changed");
});
