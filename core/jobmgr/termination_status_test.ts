/**
 * A task's `terminationStatus` (v0 task.proto RuntimeInfo 20, v1alpha pod.proto ContainerStatus 11) and its
 * previous and desired run ids (v0 RuntimeInfo 16 and 19), as Peloton fills them.
 */
import assert from "node:assert/strict";
import { MESOS_TO_TASK_STATE } from "../model/states.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { POD_SERVICE } from "./pod_api.ts";

type Body = Record<string, unknown>;

const run = (i: number, r: number) => `${JOB_ID}-${i}-${r}`;

function body(rig: JobmgrRig): Body {
  const [r] = rig.replies();
  assert.ok(r, "expected a reply");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

/** The v0 runtime of TaskManager Get, List and Query of instance 0, each. */
async function v0Runtimes(rig: JobmgrRig): Promise<[string, Body][]> {
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const got = (body(rig).result as Body).runtime as Body;
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const listed = ((body(rig).result as Body).value as Record<string, Body>)["0"].runtime as Body;
  rig.api("task", "Query", { jobId: { value: JOB_ID }, spec: {} });
  await rig.reads();
  const queried = ((body(rig).records as Body[]).find((t) => t.instanceId === 0)!).runtime as Body;
  return [["Get", got], ["List", listed], ["Query", queried]];
}

/** GetPod's current container status of instance 0. */
async function containerStatus(rig: JobmgrRig): Promise<Body> {
  rig.call(POD_SERVICE, "GetPod", { podName: { value: `${JOB_ID}-0` } });
  await rig.reads();
  const current = body(rig).current as Body;
  return ((current.status as Body).containersStatus as Body[])[0];
}

/** A Mesos status with the exit code the host manager read from it. */
function exited(rig: JobmgrRig, taskId: string, state: "TASK_FAILED" | "TASK_KILLED", exitCode: number) {
  rig.jm.receive({
    kind: "task-statuses",
    statuses: [{
      taskId,
      state,
      pelotonState: MESOS_TO_TASK_STATE[state],
      hostname: "h1",
      agentId: "agent-h1",
      timeMs: rig.ports.clock.now(),
      message: `Command exited with status ${exitCode}`,
      exitCode,
    }],
  });
  rig.tick();
}

Deno.test("a failed task's terminationStatus is FAILED with its exit code, in v0 and v1alpha; no exitCode outside it", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  rig.status(run(0, 1), "TASK_RUNNING");
  exited(rig, run(0, 1), "TASK_FAILED", 3);
  rig.replies();
  for (const [where, runtime] of await v0Runtimes(rig)) {
    assert.equal(runtime.state, "FAILED", where);
    assert.deepEqual(
      runtime.terminationStatus,
      { reason: "TERMINATION_STATUS_REASON_FAILED", exitCode: 3 },
      where,
    );
    // task.proto's RuntimeInfo has no exitCode of its own: a client decoding it strictly would refuse it.
    assert.equal("exitCode" in runtime && runtime.exitCode !== undefined, false, `${where}: exitCode`);
  }
  assert.deepEqual((await containerStatus(rig)).terminationStatus, {
    reason: "TERMINATION_STATUS_REASON_FAILED",
    exitCode: 3,
  });
});

Deno.test("TaskManager.Stop and PodService.StopPod: terminationStatus is KILLED_ON_REQUEST", async () => {
  for (const how of ["Stop", "StopPod"]) {
    const rig = new JobmgrRig();
    rig.create({ instanceCount: 1 });
    rig.launch([0]);
    rig.status(run(0, 1), "TASK_RUNNING");
    if (how === "Stop") rig.api("task", "Stop", { jobId: { value: JOB_ID } });
    else rig.call(POD_SERVICE, "StopPod", { podName: { value: `${JOB_ID}-0` } });
    rig.replies();
    rig.status(run(0, 1), "TASK_KILLED");
    rig.replies();
    const want = { reason: "TERMINATION_STATUS_REASON_KILLED_ON_REQUEST" };
    for (const [where, runtime] of await v0Runtimes(rig)) {
      assert.equal(runtime.state, "KILLED", `${how} ${where}`);
      assert.deepEqual(runtime.terminationStatus, want, `${how} ${where}`);
    }
    assert.deepEqual((await containerStatus(rig)).terminationStatus, want, how);
  }
});

Deno.test("terminationStatus: a running task has none; a preempted one says PREEMPTED_RESOURCES in GetPod too", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, task: { preemptionPolicy: { type: "PREEMPTIBLE", killOnPreempt: true } } });
  rig.launch([0]);
  rig.status(run(0, 1), "TASK_RUNNING");
  rig.replies();
  for (const [where, runtime] of await v0Runtimes(rig)) {
    assert.equal(runtime.terminationStatus, undefined, where);
  }
  assert.equal((await containerStatus(rig)).terminationStatus, undefined);
  rig.placements([], [], [{ taskId: run(0, 1), reason: "PREEMPTION_REASON_REVOKE_RESOURCES" }]);
  rig.status(run(0, 1), "TASK_KILLED");
  rig.replies();
  const want = { reason: "TERMINATION_STATUS_REASON_PREEMPTED_RESOURCES" };
  for (const [where, runtime] of await v0Runtimes(rig)) {
    assert.deepEqual(runtime.terminationStatus, want, where);
  }
  assert.deepEqual((await containerStatus(rig)).terminationStatus, want);
});

Deno.test("v0 task runtime: prevMesosTaskId and desiredMesosTaskId, as GetPod's prevPodId and desiredPodId", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0]);
  rig.status(run(0, 1), "TASK_FAILED");
  rig.launch([0]);
  rig.status(run(0, 2), "TASK_RUNNING");
  rig.replies();
  const status = await (async () => {
    rig.call(POD_SERVICE, "GetPod", { podName: { value: `${JOB_ID}-0` } });
    await rig.reads();
    return (body(rig).current as Body).status as Body;
  })();
  assert.deepEqual(status.prevPodId, { value: run(0, 1) });
  assert.deepEqual(status.desiredPodId, { value: run(0, 2) });
  for (const [where, runtime] of await v0Runtimes(rig)) {
    assert.deepEqual(runtime.mesosTaskId, { value: run(0, 2) }, where);
    assert.deepEqual(runtime.prevMesosTaskId, status.prevPodId, where);
    assert.deepEqual(runtime.desiredMesosTaskId, status.desiredPodId, where);
  }
});
