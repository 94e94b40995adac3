/**
 * v1alpha CreateJob's `createSpec` (Peloton's ConvertCreateSpecToUpdateConfig): the rolling start's batch
 * size, retry and failure limits and `startPaused`, and the request's `opaqueData`.
 */
import { entityVersion } from "./api_json.ts";
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeStatelessSpec } from "../testing/fixtures.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const SPEC = makeStatelessSpec(3);

type Body = Record<string, unknown>;

const createJob = (rig: JobmgrRig, extra: Body) => rig.createStateless({ spec: SPEC, ...extra });

const started = (rig: JobmgrRig) =>
  rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs)
    .flatMap((g) => g.tasks.map((t) => Number(t.taskId.split("-").at(-2))));

Deno.test("createSpec.startPaused: no pod starts until the create workflow is resumed, across a restart too", async () => {
  const rig = new JobmgrRig();
  const reply = createJob(rig, {
    createSpec: { batchSize: 2, startPaused: true },
    opaqueData: { data: "rollout-7" },
  });
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick(60_000);
  assert.deepEqual(started(rig), [], "paused: nothing starts");
  const [u] = rig.jm.updates.values();
  assert.deepEqual([u.type, u.state, u.opaqueData], ["START", "PAUSED", "rollout-7"]);

  rig.transport.drain();
  const jm: JobManager = await rig.restartJobManager();
  rig.tick(60_000);
  assert.deepEqual(started(rig), [], "still paused after the job manager restarted");
  const job = jm.jobs.get(JOB_ID)!;
  assert.deepEqual([...job.tasks.values()].map((t) => t.state), [
    "INITIALIZED",
    "INITIALIZED",
    "INITIALIZED",
  ]);

  // The rig's calls go to its own job manager; the restarted one takes them directly.
  const version = entityVersion(job);
  jm.receive({
    kind: "api",
    reqId: 99,
    replyTo: "client",
    procedure: `${STATELESS_SERVICE}::ResumeJobWorkflow`,
    body: { jobId: { value: JOB_ID }, version: { value: version } },
  });
  rig.store.settle();
  rig.tick();
  assert.deepEqual(started(rig), [0, 1], "resumed: the first batch starts");
});

Deno.test("createSpec retry and failure limits: a create whose pods keep crashing ends FAILED", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  createJob(rig, { createSpec: { batchSize: 1, maxInstanceRetries: 1, maxTolerableInstanceFailures: 1 } });
  assert.deepEqual(started(rig), [0]);
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.tick(1_000);
  const job = rig.job();
  assert.equal(job.runtime.updateId, undefined, "the create workflow ended");
  const stored = [...rig.store.updates.values()].filter((u) => u.jobId === JOB_ID);
  assert.deepEqual(stored.map((u) => [u.state, u.config.maxInstanceAttempts, u.config.maxFailureInstances]), [
    ["FAILED", 1, 1],
  ]);
  assert.deepEqual(started(rig).filter((i) => i !== 0), [], "instances 1 and 2 were never started by it");
});

Deno.test("a bad createSpec is refused, naming the field, and creates nothing", () => {
  const rig = new JobmgrRig();
  rig.call(STATELESS_SERVICE, "CreateJob", {
    jobId: { value: JOB_ID },
    spec: SPEC,
    createSpec: { batchSize: -2 },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error?.code, "invalid-argument");
  assert.match(reply.error!.message, /createSpec: batchSize: got -2, expected a whole number/);
  assert.equal(rig.jm.jobs.size, 0);
  rig.store.settle();
  assert.equal(rig.store.jobs.get(JOB_ID), undefined, "nothing stored");
});

Deno.test("an update may take over from a rolling create, and starts the pods the create had not reached", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  createJob(rig, { createSpec: { batchSize: 1 } });
  assert.deepEqual(started(rig), [0]);
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  const [create] = rig.jm.updates.values();
  const job = rig.job();
  const version = entityVersion(job);
  // One more pod and nothing else: pods 1 and 2 are left as they were, never started.
  rig.call(STATELESS_SERVICE, "PatchJob", {
    jobId: { value: JOB_ID },
    version: { value: version },
    spec: { instanceCount: 4 },
    updateSpec: { batchSize: 0 },
  });
  rig.store.settle();
  rig.tick();
  assert.equal(rig.replies()[0].error, undefined, "a rolling create is Peloton's RollingCreate, an update");
  assert.equal(rig.store.updates.get(create.updateId)?.state, "ABORTED");
  assert.deepEqual(
    started(rig).sort(),
    [1, 2, 3],
    "the ones the create had not reached start with the update",
  );
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "the running one is left alone");
  assert.deepEqual([...rig.jm.updates.values()][0].instancesUpdated, [1, 2]);
});

/** A JobService read of the rig's job, answered once the store's reads have settled. */
async function read(rig: JobmgrRig, method: string, extra: Body = {}): Promise<Body> {
  rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, ...extra });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as Body;
}

Deno.test("a rolling create is reported as Peloton's RollingCreate: an UPDATE with the CreateSpec as updateSpec", async () => {
  const rig = new JobmgrRig();
  createJob(rig, { createSpec: { batchSize: 2, maxInstanceRetries: 3 }, opaqueData: { data: "rollout-1" } });
  assert.deepEqual(started(rig), [0, 1]);
  const { workflowInfos: [info] } = await read(rig, "ListJobWorkflows", { instanceEvents: true }) as {
    workflowInfos: Body[];
  };
  const status = info.status as Body;
  assert.deepEqual([status.type, status.state], ["WORKFLOW_TYPE_UPDATE", "WORKFLOW_STATE_ROLLING_FORWARD"]);
  assert.deepEqual(info.updateSpec, {
    batchSize: 2,
    rollbackOnFailure: false,
    maxInstanceRetries: 3,
    maxTolerableInstanceFailures: 0,
    startPaused: false,
    inPlace: false,
    startPods: false,
  });
  // Peloton's create is an update from its empty placeholder config (version 0) adding every instance.
  assert.deepEqual(
    [info.instancesAdded, info.instancesUpdated, info.instancesRemoved],
    [[{ from: 0, to: 2 }], [], []],
  );
  assert.deepEqual([status.prevVersion, status.version], [{ value: "0-1-1" }, { value: "1-1-1" }]);
  assert.deepEqual(info.opaqueData, { data: "rollout-1" });
  assert.deepEqual(new Set((info.events as Body[]).map((e) => e.type)), new Set(["WORKFLOW_TYPE_UPDATE"]));
  const instanceEvents = info.instanceEvents as { events: Body[] }[];
  assert.equal(instanceEvents.length, 3);
  assert.deepEqual(
    new Set(instanceEvents.flatMap((i) => i.events.map((e) => e.type))),
    new Set(["WORKFLOW_TYPE_UPDATE"]),
  );
  assert.equal("restartSpec" in info, false);
  // GetWorkflowEvents reads the same steps: an UPDATE's.
  const { events } = await read(rig, "GetWorkflowEvents", { instanceId: 0 }) as { events: Body[] };
  assert.ok(events.length > 0);
  assert.deepEqual(new Set(events.map((e) => e.type)), new Set(["WORKFLOW_TYPE_UPDATE"]));

  const got = await read(rig, "GetJob");
  const jobStatus = (got.jobInfo as { status: { workflowStatus: Body } }).status;
  assert.deepEqual(jobStatus.workflowStatus, status);
  const { instanceEvents: _, workflowId: __, ...withoutIds } = info;
  assert.deepEqual(got.workflowInfo, withoutIds);
});

Deno.test("a CreateJob without a createSpec, or with batch size 0, starts every pod at once in an UPDATE workflow, as Peloton's", async () => {
  for (const extra of [{}, { createSpec: { batchSize: 0 } }]) {
    const rig = new JobmgrRig();
    const reply = createJob(rig, { ...extra, opaqueData: { data: "v1" } });
    assert.deepEqual(
      (reply.body as Body).version,
      { value: "1-1-1" },
      "Peloton's RollingCreate starts at workflow version 1",
    );
    assert.deepEqual(started(rig), [0, 1, 2], JSON.stringify(extra));
    const { workflowInfos } = await read(rig, "ListJobWorkflows") as { workflowInfos: Body[] };
    assert.equal(workflowInfos.length, 1);
    const [info] = workflowInfos;
    assert.equal((info.status as Body).type, "WORKFLOW_TYPE_UPDATE");
    assert.equal((info.updateSpec as Body).batchSize, 0);
    assert.deepEqual(info.opaqueData, { data: "v1" }, "kept with the workflow, as with any batch size");
    rig.launch([0, 1, 2]);
    for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_RUNNING");
    rig.tick(60_000);
    assert.equal(rig.job().runtime.updateId, undefined, "the create's workflow ended");
    const [stored] = [...rig.store.updates.values()];
    assert.deepEqual([stored.state, stored.create], ["SUCCEEDED", true]);
  }
});

Deno.test("a restart during a rolling create is refused, naming the create as the UPDATE it is", () => {
  const rig = new JobmgrRig();
  createJob(rig, { createSpec: { batchSize: 1 } });
  rig.tick();
  const job = rig.jm.jobs.get(JOB_ID)!;
  const version = entityVersion(job);
  rig.replies();
  rig.call(STATELESS_SERVICE, "RestartJob", {
    jobId: { value: JOB_ID },
    version: { value: version },
    restartSpec: { batchSize: 1 },
  });
  rig.tick();
  const [reply] = rig.replies();
  assert.match(reply.error?.message ?? "", /^workflow RESTART cannot overwrite workflow UPDATE \(/);
});
