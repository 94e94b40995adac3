/** v1alpha PodService, and JobService's pod, cache and lookup calls: pods by name (`<jobId>-<instanceId>`), their runs, events, sandboxes and actions. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { DEFAULT_SLA } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { POD_SERVICE } from "./pod_api.ts";
import { STATELESS_SERVICE as STATELESS } from "./stateless_api.ts";

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
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
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

Deno.test("GetPod limit counts the current run, as Peloton's: 1 is it alone, N at most N-1 runs before it, 0 all", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 4 } } });
  for (let r = 1; r <= 3; r++) {
    rig.launch([0], `h${r}`);
    rig.status(run(0, r), "TASK_FAILED", { hostname: `h${r}` });
  }
  const runs = async (extra: Body) => {
    const got = ok(await call(rig, "GetPod", { podName: pod(0), statusOnly: true, ...extra }));
    const infos = [got.current, ...(got.previous as Body[])] as { status: Body }[];
    return infos.map((p) => (p.status.podId as Body).value);
  };
  assert.deepEqual(await runs({}), [run(0, 4), run(0, 3), run(0, 2), run(0, 1)], "unset: every run");
  assert.deepEqual(await runs({ limit: 0 }), [run(0, 4), run(0, 3), run(0, 2), run(0, 1)]);
  assert.deepEqual(await runs({ limit: 1 }), [run(0, 4)]);
  assert.deepEqual(await runs({ limit: 3 }), [run(0, 4), run(0, 3), run(0, 2)]);
  assert.deepEqual(
    await runs({ limit: "2" }),
    [run(0, 4), run(0, 3)],
    "proto3 JSON may write it as a string",
  );
  assert.deepEqual(await runs({ limit: 10 }), [run(0, 4), run(0, 3), run(0, 2), run(0, 1)]);

  rig.store.settle();
  const writes = rig.store.batches.length;
  const expected =
    "expected a whole number of runs from 0 to 4294967295 (1 for the current run alone, 0 for all)";
  for (const limit of [-1, 2.5, "all"]) {
    assert.deepEqual((await call(rig, "GetPod", { podName: pod(0), limit })).error, {
      code: "invalid-argument",
      message: `limit: got ${JSON.stringify(limit)}, ${expected}`,
    });
  }
  assert.equal(rig.store.batches.length, writes, "nothing written");
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
  for (const method of ["GetPod", "StopPod", "BrowsePodSandbox"]) {
    const r = await call(rig, method, { podName: pod(7) });
    assert.deepEqual(r.error, { code: "not-found", message: `pod ${JOB_ID}-7 not found` }, method);
  }
  assert.equal((await call(rig, "Nope", { podName: pod(0) })).error?.code, "unimplemented");
});

Deno.test("pod names and pod ids are read in any case; an empty pod id is the current run", async () => {
  const rig = new JobmgrRig();
  const id = "abcdef12-2222-4333-8444-555555555555";
  rig.create({}, id);
  rig.placements([{
    leaseId: "h1#1",
    hostname: "h1",
    agentId: "agent-h1",
    tasks: [{ taskId: `${id}-0-1`, ports: {} }],
  }]);
  rig.store.settle();
  rig.transport.takeOne("launch-tasks", "hostmgr");
  const upper = { value: `${id.toUpperCase()}-0` };
  assert.equal(
    ((ok(await call(rig, "GetPod", { podName: upper })).current as Body).status as Body).host,
    "h1",
  );
  for (const podId of [{ value: `${id.toUpperCase()}-0-1` }, { value: "" }]) {
    const events = ok(await call(rig, "GetPodEvents", { podName: upper, podId })).events as Body[];
    assert.ok(events.length > 0 && events.every((e) => (e.podId as Body).value === `${id}-0-1`));
    assert.ok(
      events.every((e) => e.desiredState === "POD_STATE_SUCCEEDED"),
      "the goal of each event's moment",
    );
  }
});

Deno.test("GetPodCache answers from the job manager's memory only: a job only the store holds is not loaded", async () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.store.settle();
  rig.jm.jobs.delete(JOB_ID);
  assert.deepEqual((await call(rig, "GetPodCache", { podName: pod(0) })).error, {
    code: "not-found",
    message: `pod ${JOB_ID}-0 not found in cache`,
  });
  assert.equal(rig.jm.jobs.has(JOB_ID), false, "not adopted");
  // Reads of the store still answer.
  assert.equal(
    ((ok(await call(rig, "GetPod", { podName: pod(0) })).current as Body).status as Body).state,
    "POD_STATE_PENDING",
  );
  assert.equal(rig.jm.jobs.has(JOB_ID), false);
});

Deno.test("an earlier run shows its own fields only, not the current run's", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE" });
  rig.api("task", "Restart", { jobId: { value: JOB_ID } });
  rig.replies();
  // Restarted before it ever launched: the first run had no host.
  rig.launch([0], "h9");
  // As the SQL store reads it back: JSON leaves out the fields the run never had.
  const run1 = rig.task(0).history![0] as unknown as Record<string, unknown>;
  for (const k of Object.keys(run1)) if (run1[k] === undefined) delete run1[k];
  const got = ok(await call(rig, "GetPod", { podName: pod(0) }));
  assert.equal(((got.current as Body).status as Body).host, "h9");
  const first = (got.previous as { status: Body; spec?: Body }[])[0];
  assert.deepEqual([first.status.host, first.status.startTime], [undefined, undefined]);
  assert.deepEqual(first.status.version, { value: "1-0-0" });
  assert.ok(first.spec, "its config version is at hand: its spec is shown");
});

Deno.test("StartPod in a stopped job starts the job again; a finished batch job's pods do not start", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.equal(rig.job().runtime.goalState, "KILLED");
  ok(await call(rig, "StartPod", { podName: pod(0) }));
  assert.equal(rig.job().runtime.goalState, "RUNNING");
  assert.equal(rig.task(0).goalState, "RUNNING");

  const batch = new JobmgrRig();
  batch.create();
  batch.launch([0]);
  batch.status(`${JOB_ID}-0-1`, "TASK_FINISHED");
  batch.store.settle();
  assert.equal(batch.job().runtime.state, "SUCCEEDED");
  assert.equal((await call(batch, "StartPod", { podName: pod(0) })).error?.code, "invalid-argument");
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

Deno.test("RestartPod checkSla: an available pod is not restarted while its job has as many pods down as its SLA allows", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 3, sla: { ...DEFAULT_SLA, maximumUnavailableInstances: 1 } });
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) rig.status(run(i, 1), "TASK_RUNNING");
  // All available: one may go down.
  assert.deepEqual(ok(await call(rig, "RestartPod", { podName: pod(0), checkSla: true })), {});
  assert.equal(rig.task(0).desiredRunId, 2);
  // Pod 0 is down now (being restarted): another would take the job past its SLA.
  const refused = await call(rig, "RestartPod", { podName: pod(1), checkSla: true });
  assert.equal(refused.error?.code, "aborted");
  assert.match(
    refused.error!.message,
    new RegExp(
      `^pod restart would violate SLA: job ${JOB_ID} has 1 pods unavailable, its sla\\.maximumUnavailableInstances is 1$`,
    ),
  );
  assert.equal(rig.task(1).desiredRunId, undefined, "nothing changed");
  // A pod already down may restart; without checkSla the SLA is not asked.
  assert.deepEqual(ok(await call(rig, "RestartPod", { podName: pod(0), checkSla: true })), {});
  assert.deepEqual(ok(await call(rig, "RestartPod", { podName: pod(2) })), {});
  assert.equal(rig.task(2).desiredRunId, 2);
});

Deno.test("BrowsePodSandbox of a pod whose current run is not launched yet names its latest launched run", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0], "agent-2");
  rig.status(run(0, 1), "TASK_RUNNING", { hostname: "agent-2" });
  // Run 1 is lost (its host went into maintenance, say); run 2 waits for a host.
  rig.status(run(0, 1), "TASK_LOST", { hostname: "agent-2", reason: "REASON_RECONCILIATION" });
  assert.equal(rig.task(0).runId, 2);
  const current = await call(rig, "BrowsePodSandbox", { podName: pod(0) });
  assert.equal(current.error?.code, "aborted");
  assert.equal(
    current.error?.message,
    `pod ${JOB_ID}-0: its current run ${run(0, 2)} has not been launched yet; its latest launched run is ` +
      `${run(0, 1)}, on agent-2 (podId ${run(0, 1)} browses its sandbox)`,
  );
  // Asked for, that run's sandbox is there; the current run's, named, is not.
  const earlier = ok(await call(rig, "BrowsePodSandbox", { podName: pod(0), podId: { value: run(0, 1) } }));
  assert.equal(earlier.hostname, "agent-2");
  const named = await call(rig, "BrowsePodSandbox", { podName: pod(0), podId: { value: run(0, 2) } });
  assert.equal(named.error?.message, `pod ${JOB_ID}-0 has not been launched on any host`);
});

Deno.test("GetPodEvents: one run's events, newest first; BrowsePodSandbox: where a run ran", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
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

  // DeletePodEvents: the runs up to the one named lose their events; later runs keep theirs.
  assert.equal((await call(rig, "DeletePodEvents", { podName: pod(0) })).error?.code, "invalid-argument");
  assert.deepEqual(
    ok(await call(rig, "DeletePodEvents", { podName: pod(0), podId: { value: run(0, 1) } })),
    {},
  );
  rig.store.settle();
  const gone = ok(await call(rig, "GetPodEvents", { podName: pod(0), podId: { value: run(0, 1) } })).events;
  assert.deepEqual(gone, []);
  const kept = ok(await call(rig, "GetPodEvents", { podName: pod(0) })).events as Body[];
  assert.equal(kept.length, 4, "the current run's events stay");
});

Deno.test("DeletePodEvents of a run the pod never had (after its current one) is refused and deletes nothing", async () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_RUNNING");
  rig.store.settle();
  const writes = rig.store.batches.length;
  const r = await call(rig, "DeletePodEvents", { podName: pod(0), podId: { value: run(0, 99) } });
  assert.deepEqual(r.error, {
    code: "invalid-argument",
    message: `podId: got "${run(0, 99)}", expected a run of ${JOB_ID}-0 up to its current run, ${run(0, 1)}`,
  });
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing deleted");
  const events = ok(await call(rig, "GetPodEvents", { podName: pod(0) })).events as Body[];
  assert.ok(events.length > 0, "the current run keeps its events");
});

Deno.test("a pod id is a PodID message: a bare one is refused, naming podId, and nothing is deleted", async () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_RUNNING");
  rig.store.settle();
  const writes = rig.store.batches.length;
  for (const method of ["GetPodEvents", "BrowsePodSandbox", "DeletePodEvents"]) {
    const bare = await call(rig, method, { podName: pod(0), podId: run(0, 1) });
    assert.deepEqual(bare.error, {
      code: "invalid-argument",
      message: `podId: got "${run(0, 1)}", expected a pod id as a message, {"value": "${run(0, 1)}"}`,
    }, method);
    assert.deepEqual((await call(rig, method, { podName: pod(0), podId: { value: 1 } })).error, {
      code: "invalid-argument",
      message: "podId.value: got 1, expected a pod id",
    }, method);
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing deleted");
});

Deno.test("JobService ListPods and QueryPods: a job's pods in instance order, filtered and paged", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 4 });
  rig.launch([0, 1], "h1");
  rig.launch([2], "h2");
  rig.status(run(0, 1), "TASK_RUNNING");
  rig.status(run(2, 1), "TASK_RUNNING", { hostname: "h2" });
  const stateless = async (method: string, body: Body) => {
    rig.call(STATELESS, method, { jobId: { value: JOB_ID }, ...body });
    await rig.reads();
    return ok(rig.replies()[0]);
  };
  const listed = (await stateless("ListPods", {})).pods as { podName: Body; status: Body }[];
  assert.deepEqual(listed.map((p) => [p.podName.value, p.status.state]), [
    [`${JOB_ID}-0`, "POD_STATE_RUNNING"],
    [`${JOB_ID}-1`, "POD_STATE_LAUNCHING"],
    [`${JOB_ID}-2`, "POD_STATE_RUNNING"],
    [`${JOB_ID}-3`, "POD_STATE_PENDING"],
  ]);
  const ranged = (await stateless("ListPods", { range: { from: 1, to: 3 } })).pods as { podName: Body }[];
  assert.deepEqual(ranged.map((p) => p.podName.value), [`${JOB_ID}-1`, `${JOB_ID}-2`]);

  const running = await stateless("QueryPods", {
    spec: { podStates: ["POD_STATE_RUNNING"] },
    summaryOnly: true,
  });
  assert.deepEqual(
    (running.pods as { status: Body; spec?: Body }[]).map((p) => [(p.status.podId as Body).value, p.spec]),
    [[run(0, 1), undefined], [run(2, 1), undefined]],
  );
  assert.deepEqual(running.pagination, { offset: 0, limit: 100, total: 2 });
  const onH2 = await stateless("QueryPods", { spec: { hosts: ["h2"] } });
  const pods = onH2.pods as { status: Body; spec: Body }[];
  assert.deepEqual(pods.map((p) => p.spec.podName), [{ value: `${JOB_ID}-2` }], "with their specs");
  const page = await stateless("QueryPods", { pagination: { offset: 1, limit: 2 } });
  assert.deepEqual((page.pods as { status: Body }[]).map((p) => (p.status.podId as Body).value), [
    run(1, 1),
    run(2, 1),
  ]);
  assert.deepEqual(page.pagination, { offset: 1, limit: 2, total: 4 });
  const named = await stateless("QueryPods", { spec: { names: [{ value: `${JOB_ID}-3` }], podStates: [2] } });
  assert.equal((named.pagination as Body).total, 1, "PENDING by number, and the name");
});

Deno.test("JobService GetJobCache (memory only), RefreshJob and GetJobIDFromJobName (the exact name, newest first)", async () => {
  const rig = new JobmgrRig();
  const second = "22222222-2222-4333-8444-555555555555";
  rig.create({ type: "SERVICE" });
  rig.create({ type: "SERVICE" }, second);
  rig.create({ type: "SERVICE", name: "test-job-2" }, "33333333-2222-4333-8444-555555555555");
  rig.store.settle();
  const stateless = async (method: string, body: Body) => {
    rig.call(STATELESS, method, body);
    await rig.reads();
    return rig.replies()[0];
  };
  const cache = ok(await stateless("GetJobCache", { jobId: { value: JOB_ID } }));
  assert.equal((cache.spec as Body).name, "test-job");
  assert.equal((cache.status as Body).state, "JOB_STATE_PENDING");
  assert.deepEqual(ok(await stateless("RefreshJob", { jobId: { value: JOB_ID } })), {});
  assert.deepEqual(ok(await stateless("GetJobIDFromJobName", { jobName: "test-job" })).jobId, [
    { value: second },
    { value: JOB_ID },
  ]);
  assert.equal((await stateless("GetJobIDFromJobName", { jobName: "nope" })).error?.code, "not-found");
  rig.jm.jobs.delete(second);
  assert.deepEqual((await stateless("GetJobCache", { jobId: { value: second } })).error, {
    code: "not-found",
    message: `job ${second} not found in cache`,
  });
  assert.equal(rig.jm.jobs.has(second), false, "not loaded");
});

Deno.test("JobService GetReplaceJobDiff: the instances a replace would add, remove, update and leave, changing nothing", async () => {
  const rig = new JobmgrRig();
  const container = (cmd: string) => ({
    name: "c",
    entrypoint: { value: cmd },
    resource: { cpuLimit: 0.1, memLimitMb: 8 },
  });
  const spec = {
    name: "s",
    instanceCount: 3,
    defaultSpec: { containers: [container("sleep 60")] },
    respoolId: { value: "pool-a" },
  };
  rig.call(STATELESS, "CreateJob", { jobId: { value: JOB_ID }, spec });
  rig.answerPool();
  rig.store.settle();
  const version = ok(rig.replies()[0]).version;
  const diff = async (next: Body) => {
    rig.call(STATELESS, "GetReplaceJobDiff", { jobId: { value: JOB_ID }, version, spec: next });
    await rig.reads();
    return ok(rig.replies()[0]);
  };
  assert.deepEqual(
    await diff({ ...spec, instanceCount: 4, instanceSpec: { 1: { containers: [container("sleep 61")] } } }),
    // Ranges with `to` inclusive, as Peloton's ConvertInstanceIDListToInstanceRange makes them.
    {
      instancesAdded: [{ from: 3, to: 3 }],
      instancesRemoved: [],
      instancesUpdated: [{ from: 1, to: 1 }],
      instancesUnchanged: [{ from: 0, to: 0 }, { from: 2, to: 2 }],
    },
  );
  assert.deepEqual(await diff({ ...spec, instanceCount: 1 }), {
    instancesAdded: [],
    instancesRemoved: [{ from: 1, to: 2 }],
    instancesUpdated: [],
    instancesUnchanged: [{ from: 0, to: 0 }],
  });
  assert.equal(rig.job().configVersion, 1, "nothing changed");
  rig.call(STATELESS, "GetReplaceJobDiff", { jobId: { value: JOB_ID }, version: { value: "9-9-9" }, spec });
  await rig.reads();
  assert.equal(rig.replies()[0].error?.code, "aborted", "a stale version is refused");
  rig.call(STATELESS, "GetReplaceJobDiff", { jobId: { value: JOB_ID }, spec });
  await rig.reads();
  assert.deepEqual(rig.replies()[0].error, {
    code: "aborted",
    message: "unexpected entity version: version: missing, expected the job's entity version, the job is " +
      `at ${entityVersion(rig.job())}`,
  }, "a missing version is refused as Peloton's ValidateEntityVersion refuses it");
  rig.call(STATELESS, "GetReplaceJobDiff", {
    jobId: { value: JOB_ID },
    version,
    spec: { ...spec, respoolId: { value: "b" } },
  });
  await rig.reads();
  assert.match(rig.replies()[0].error?.message ?? "", /cannot move a job to another pool/);
  // A job only the store holds is looked at there, not loaded to be driven by this job manager.
  rig.jm.jobs.delete(JOB_ID);
  assert.deepEqual((await diff({ ...spec, instanceCount: 2 })).instancesRemoved, [{ from: 2, to: 2 }]);
  assert.equal(rig.jm.jobs.has(JOB_ID), false, "not adopted");

  // A batch job cannot be replaced by a stateless spec: nor diffed against one.
  const batch = new JobmgrRig();
  batch.create();
  batch.call(STATELESS, "GetReplaceJobDiff", { jobId: { value: JOB_ID }, spec });
  await batch.reads();
  assert.match(batch.replies()[0].error?.message ?? "", /^job type is immutable/);
});

/** What QueryPods' `spec.podStates` takes: v1alpha's names but POD_STATE_INVALID, or their numbers. */
const POD_STATES =
  "expected v1alpha pod states (or their numbers): POD_STATE_INITIALIZED, POD_STATE_PENDING, " +
  "POD_STATE_READY, POD_STATE_PLACING, POD_STATE_PLACED, POD_STATE_LAUNCHING, POD_STATE_LAUNCHED, " +
  "POD_STATE_STARTING, POD_STATE_RUNNING, POD_STATE_SUCCEEDED, POD_STATE_FAILED, POD_STATE_LOST, " +
  "POD_STATE_KILLING, POD_STATE_KILLED, POD_STATE_PREEMPTING, POD_STATE_DELETED, POD_STATE_RESERVED";

Deno.test("QueryPods refuses malformed filters, naming them, instead of failing without an answer", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE" });
  for (
    const [spec, why] of [
      [{ podStates: "RUNNING" }, 'spec.podStates: got "RUNNING", expected a list'],
      [{ hosts: "h1" }, 'spec.hosts: got "h1", expected a list'],
      [{ podStates: ["POD_STATE_RUNNIN"] }, `spec.podStates[0]: got "POD_STATE_RUNNIN", ${POD_STATES}`],
      [{ podStates: ["POD_STATE_RUNNING", "SLEEPING"] }, `spec.podStates[1]: got "SLEEPING", ${POD_STATES}`],
      // v0's task state names are not v1alpha's: refused, as protobuf's JSON decoding refuses them.
      [{ podStates: ["RUNNING"] }, `spec.podStates[0]: got "RUNNING", ${POD_STATES}`],
      [{ podStates: ["pod_state_running"] }, `spec.podStates[0]: got "pod_state_running", ${POD_STATES}`],
      [{ podStates: ["POD_STATE_INVALID"] }, `spec.podStates[0]: got "POD_STATE_INVALID", ${POD_STATES}`],
      [{ podStates: [0] }, `spec.podStates[0]: got 0, ${POD_STATES}`],
      [{ podStates: [99] }, `spec.podStates[0]: got 99, ${POD_STATES}`],
      [{ podStates: [true] }, `spec.podStates[0]: got true, ${POD_STATES}`],
    ] as const
  ) {
    rig.call(STATELESS, "QueryPods", { jobId: { value: JOB_ID }, spec });
    await rig.reads();
    assert.deepEqual(rig.replies()[0].error, { code: "invalid-argument", message: why });
  }
});
