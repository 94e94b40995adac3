/** v1alpha PodService: pods by name (`<jobId>-<instanceId>`), their runs, events, sandboxes and actions. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { POD_SERVICE } from "./pod_api.ts";

type Body = Record<string, unknown>;

const pod = (i: number) => ({ value: `${JOB_ID}-${i}` });
const run = (i: number, r: number) => `${JOB_ID}-${i}-${r}`;

async function call(rig: JobmgrRig, method: string, body: Body): Promise<ApiReply> {
  rig.call(POD_SERVICE, method, body);
  await rig.reads();
  const [reply] = rig.replies();
  return reply;
}

function ok(r: ApiReply): Body {
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

Deno.test("GetPod: the current run's spec and status, and the runs before it; statusOnly leaves the spec out", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 1 } } });
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_FAILED");
  rig.launch([0], "h2");
  rig.status(run(0, 2), "TASK_RUNNING", { hostname: "h2" });
  const got = ok(await call(rig, "GetPod", { podName: pod(0) }));
  const current = got.current as { spec: Body; status: Body };
  assert.deepEqual(current.spec.podName, pod(0));
  assert.equal(((current.spec.containers as Body[])[0].command as Body).value, "echo hello");
  const s = current.status;
  assert.deepEqual([s.state, s.desiredState, s.host], ["POD_STATE_RUNNING", "POD_STATE_SUCCEEDED", "h2"]);
  assert.deepEqual(s.podId, { value: run(0, 2) });
  assert.deepEqual(s.prevPodId, { value: run(0, 1) });
  assert.deepEqual(s.version, { value: "1-0-0" });
  assert.equal(s.failureCount, 1);
  const previous = got.previous as { status: Body }[];
  assert.deepEqual(previous.map((p) => [p.status.state, (p.status.podId as Body).value]), [
    ["POD_STATE_FAILED", run(0, 1)],
  ]);

  const status = ok(await call(rig, "GetPod", { podName: pod(0), statusOnly: true }));
  assert.equal((status.current as Body).spec, undefined);
  assert.equal(((status.current as Body).status as Body).state, "POD_STATE_RUNNING");
  assert.deepEqual(ok(await call(rig, "GetPodCache", { podName: pod(0) })).status, s);
});

Deno.test("a pod name is <jobId>-<instanceId>: anything else is InvalidArgument, an unknown pod NotFound", async () => {
  const rig = new JobmgrRig();
  rig.create();
  for (const name of ["nope", `${JOB_ID}`, `${JOB_ID}-x`]) {
    const r = await call(rig, "GetPod", { podName: { value: name } });
    assert.equal(r.error?.code, "invalid-argument", name);
    assert.match(r.error!.message, /^podName: got ".*", expected <jobId>-<instanceId>$/);
  }
  const other = "99999999-2222-4333-8444-555555555555-0";
  assert.deepEqual((await call(rig, "GetPod", { podName: { value: other } })).error, {
    code: "not-found",
    message: `pod ${other} not found`,
  });
  for (const method of ["GetPod", "StopPod", "GetPodCache", "BrowsePodSandbox"]) {
    const r = await call(rig, method, { podName: pod(7) });
    assert.deepEqual(r.error, { code: "not-found", message: `pod ${JOB_ID}-7 not found` }, method);
  }
});

Deno.test("StopPod, StartPod and RestartPod act on the one instance, and answer once that is stored", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  rig.launch([0, 1]);
  rig.status(run(0, 1), "TASK_RUNNING");
  rig.status(run(1, 1), "TASK_RUNNING");
  assert.deepEqual(ok(await call(rig, "StopPod", { podName: pod(1) })), {});
  assert.deepEqual([rig.task(0).goalState, rig.task(1).goalState], ["RUNNING", "KILLED"]);
  assert.equal(rig.store.task(JOB_ID, 1)?.goalState, "KILLED", "stored before the answer");
  rig.status(rig.transport.takeOne("kill-tasks", "hostmgr").tasks[0].taskId, "TASK_KILLED");
  assert.deepEqual(ok(await call(rig, "StartPod", { podName: pod(1) })), {});
  assert.equal(rig.task(1).goalState, "RUNNING");
  assert.deepEqual(ok(await call(rig, "RestartPod", { podName: pod(0) })), {});
  assert.equal(rig.task(0).desiredRunId, 2);
  assert.deepEqual(ok(await call(rig, "RefreshPod", { podName: pod(0) })), {});
});

Deno.test("GetPodEvents: one run's events, newest first; BrowsePodSandbox: where a run ran", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 1 } } });
  assert.equal(
    (await call(rig, "BrowsePodSandbox", { podName: pod(0) })).error?.code,
    "aborted",
    "not run yet",
  );
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_FAILED");
  rig.launch([0], "h2");
  rig.status(run(0, 2), "TASK_RUNNING", { hostname: "h2" });
  rig.store.settle();
  const events = ok(await call(rig, "GetPodEvents", { podName: pod(0) })).events as Body[];
  assert.deepEqual(events.map((e) => e.actualState), [
    "POD_STATE_RUNNING",
    "POD_STATE_LAUNCHING",
    "POD_STATE_PENDING",
    "POD_STATE_INITIALIZED",
  ]);
  assert.ok(events.every((e) => (e.podId as Body).value === run(0, 2)));
  const first = ok(await call(rig, "GetPodEvents", { podName: pod(0), podId: { value: run(0, 1) } }))
    .events as Body[];
  assert.equal(first[0].actualState, "POD_STATE_FAILED");
  assert.ok(first.every((e) => (e.podId as Body).value === run(0, 1)));
  const wrong = await call(rig, "GetPodEvents", { podName: pod(0), podId: { value: run(1, 1) } });
  assert.equal(wrong.error?.code, "invalid-argument");

  const sandbox = ok(await call(rig, "BrowsePodSandbox", { podName: pod(0) }));
  assert.deepEqual([sandbox.hostname, sandbox.paths], ["h2", ["stdout", "stderr"]]);
  const earlier = ok(await call(rig, "BrowsePodSandbox", { podName: pod(0), podId: { value: run(0, 1) } }));
  assert.equal(earlier.hostname, "h1");
  assert.equal((await call(rig, "DeletePodEvents", { podName: pod(0) })).error?.code, "unimplemented");
});
