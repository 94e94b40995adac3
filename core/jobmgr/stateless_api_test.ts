import assert from "node:assert/strict";
import type { UpdateRecord } from "../model/records.ts";
import { TASK_STATES } from "../model/states.ts";
import { rfc3339 } from "../model/time_format.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig, makeJobRecord, makeStatelessSpec } from "../testing/fixtures.ts";
import { entityVersion, jobConfigJson } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";

/** A JobService write at the job's current entity version, unless `body` gives one. */
function stateless(rig: JobmgrRig, method: string, body: object = {}) {
  rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, version: currentVersion(rig), ...body });
  return rig.replies();
}

const currentVersion = (rig: JobmgrRig) => ({ value: entityVersion(rig.job()) });

/** The GetJob reply (answered from the store when no workflow is in progress). */
async function getJob(rig: JobmgrRig) {
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as {
    jobInfo: { status: { version: { value: string }; workflowStatus?: Record<string, unknown> } };
    workflowInfo?: Record<string, unknown>;
  };
}

/** Kills the instances the job manager asked to kill; returns their instance ids. */
function killAsked(rig: JobmgrRig): number[] {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  for (const id of kills) rig.status(id, "TASK_KILLED");
  return kills.map((id) => Number(id.split("-").at(-2)));
}

async function storedUpdate(rig: JobmgrRig, id: string): Promise<UpdateRecord> {
  return (await rig.store.getUpdate(id))!;
}

Deno.test("StopJob during a rolling restart aborts the restart; the stopped job stays stopped", async () => {
  const rig = runningService(3);
  const [restart] = stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  const workflowId = (restart.body as { workflowId: { value: string } }).workflowId.value;
  rig.tick();
  assert.deepEqual(killAsked(rig), [0], "the first batch is being restarted");
  rig.transport.take("enqueue-gangs");
  const [stop] = stateless(rig, "StopJob");
  assert.equal(stop.error, undefined);
  assert.equal((await storedUpdate(rig, workflowId)).state, "ABORTED");
  assert.equal(rig.jm.updates.size, 0, "no workflow left in progress");
  assert.equal(rig.job().runtime.updateId, undefined);
  assert.deepEqual(killAsked(rig).sort(), [1, 2]);
  rig.tick(60_000);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "nothing is started again");
  assert.equal(rig.job().runtime.state, "KILLED");
  const got = await getJob(rig);
  assert.equal(got.jobInfo.status.workflowStatus?.state, "WORKFLOW_STATE_ABORTED");
});

Deno.test("stopping a whole job through the v0 API aborts its update; stopping some instances does not", async () => {
  const rig = runningService(4);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 4, task: { command: cmd("echo v2") } });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 1 },
  });
  const updateId = (rig.replies()[0].body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 3, to: 4 }] });
  rig.replies();
  assert.equal(rig.jm.updates.get(updateId)?.state, "ROLLING_FORWARD", "a partial stop leaves it rolling");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.equal((await storedUpdate(rig, updateId)).state, "ABORTED");
  assert.equal(rig.jm.updates.size, 0);
});

Deno.test("pause, resume and abort of a job without a workflow are errors naming the job, and change nothing", async () => {
  const rig = runningService(2);
  const before = (await getJob(rig)).jobInfo.status.version.value;
  const writes = rig.store.batches.length;
  for (const method of ["PauseJobWorkflow", "ResumeJobWorkflow", "AbortJobWorkflow"]) {
    const [reply] = stateless(rig, method, { version: { value: before } });
    assert.deepEqual(reply.error, { code: "not-found", message: `job ${JOB_ID} has no active workflow` });
  }
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.equal((await getJob(rig)).jobInfo.status.version.value, before);
  assert.deepEqual(await rig.store.listUpdates(JOB_ID), []);
});

Deno.test("pause and resume act on a workflow in progress, each moving the entity version", async () => {
  const rig = runningService(2);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  const u = [...rig.jm.updates.values()][0];
  const v1 = (await getJob(rig)).jobInfo.status.version.value;
  const [paused] = stateless(rig, "PauseJobWorkflow", { version: { value: v1 } });
  assert.equal(paused.error, undefined);
  assert.equal(u.state, "PAUSED");
  const v2 = (paused.body as { version: { value: string } }).version.value;
  assert.notEqual(v2, v1, "pausing moves the version, as Peloton's does");
  assert.equal((await getJob(rig)).jobInfo.status.version.value, v2);
  // A client still holding the version from before the pause is refused.
  const [stale] = stateless(rig, "ResumeJobWorkflow", { version: { value: v1 } });
  assert.equal(stale.error?.code, "aborted");
  assert.equal(u.state, "PAUSED");
  assert.equal(stateless(rig, "ResumeJobWorkflow", { version: { value: v2 } })[0].error, undefined);
  assert.equal(u.state, "ROLLING_FORWARD");
});

Deno.test("GetJob shows the workflow in Peloton's shapes: workflowInfo, and status.workflowStatus", async () => {
  const rig = runningService(3);
  assert.equal((await getJob(rig)).workflowInfo, undefined, "no workflow yet");
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 2, ranges: [{ from: 0, to: 3 }] } });
  const u = [...rig.jm.updates.values()][0];
  const during = await getJob(rig);
  const status = during.jobInfo.status;
  const [dsv, wv] = status.version.value.split("-").slice(1);
  const expected = {
    type: "WORKFLOW_TYPE_RESTART",
    state: "WORKFLOW_STATE_ROLLING_FORWARD",
    numInstancesCompleted: 0,
    numInstancesRemaining: 3,
    numInstancesFailed: 0,
    instancesCurrent: [0, 1],
    // The restart runs the job's config as a new version (Peloton's RestartJob: WithConfig, a copy).
    version: { value: `2-${dsv}-${wv}` },
    prevVersion: { value: `1-${dsv}-${wv}` },
    creationTime: rfc3339(u.creationTimeMs),
  };
  assert.deepEqual(pick(status.workflowStatus!, Object.keys(expected)), expected);
  assert.deepEqual(during.workflowInfo!.status, status.workflowStatus);
  assert.deepEqual(during.workflowInfo!.restartSpec, {
    batchSize: 2,
    ranges: [{ from: 0, to: 2 }],
    inPlace: false,
  });

  // Once it ends, Peloton still shows the job's last workflow and how it ended.
  for (let batch = 0; batch < 2; batch++) {
    const restarted = killAsked(rig);
    rig.launch(restarted);
    for (const i of restarted) rig.status(rig.taskId(i), "TASK_RUNNING");
    rig.tick(10_000); // the default minRunningSeconds: no health check, so 10 s RUNNING counts as done
  }
  assert.equal(rig.jm.updates.size, 0);
  const after = await getJob(rig);
  assert.equal(after.jobInfo.status.workflowStatus?.state, "WORKFLOW_STATE_SUCCEEDED");
  assert.equal(after.jobInfo.status.workflowStatus?.numInstancesCompleted, 3);
  assert.equal(
    after.workflowInfo?.status && (after.workflowInfo.status as { state: string }).state,
    "WORKFLOW_STATE_SUCCEEDED",
  );
});

Deno.test("GetJob of an update lists its spec and the instances it adds and changes as ranges", async () => {
  const rig = runningService(2);
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 5, task: { command: cmd("echo v2") } });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 1, maxInstanceAttempts: 3, maxFailureInstances: 2, rollbackOnFailure: true },
    opaqueData: { data: "deploy-42" },
  });
  rig.replies();
  const info = (await getJob(rig)).workflowInfo!;
  assert.deepEqual(info.updateSpec, {
    batchSize: 1,
    rollbackOnFailure: true,
    maxInstanceRetries: 3,
    maxTolerableInstanceFailures: 2,
    startPaused: false,
    inPlace: false,
    startPods: false,
  });
  assert.deepEqual(info.instancesAdded, [{ from: 2, to: 4 }]);
  assert.deepEqual(info.instancesUpdated, [{ from: 0, to: 1 }]);
  assert.deepEqual(info.instancesRemoved, []);
  assert.deepEqual(info.opaqueData, { data: "deploy-42" });
  const status = info.status as { type: string; version: { value: string }; prevVersion: { value: string } };
  assert.equal(status.type, "WORKFLOW_TYPE_UPDATE");
  assert.match(status.version.value, /^2-/);
  assert.match(status.prevVersion.value, /^1-/);
});

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}

function cmd(value: string) {
  return { shell: true, value, arguments: [], environment: { variables: [] }, uris: [] };
}

Deno.test("ListJobs answers every job's v1alpha summary, in one reply where Peloton streams them", async () => {
  const rig = new JobmgrRig();
  const other = "22222222-2222-4333-8444-555555555555";
  rig.create({ type: "SERVICE", instanceCount: 2, labels: [{ key: "team", value: "x" }] });
  rig.tick(1000);
  rig.create({ name: "batch", instanceCount: 1 }, other);
  rig.call(STATELESS_SERVICE, "ListJobs", {});
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  const jobs = (reply.body as { jobs: Record<string, unknown>[] }).jobs;
  assert.deepEqual(jobs.map((j) => (j.jobId as { value: string }).value), [other, JOB_ID], "newest first");
  const [, svc] = jobs;
  assert.deepEqual(
    { ...svc, status: undefined },
    {
      jobId: { value: JOB_ID },
      name: "test-job",
      owner: "tester",
      owningTeam: "team",
      labels: [{ key: "team", value: "x" }],
      instanceCount: 2,
      respoolId: { value: "pool-a" },
      status: undefined,
      sla: { priority: 0, preemptible: false, revocable: false, maximumUnavailableInstances: 0 },
    },
  );
  const status = svc.status as Record<string, unknown>;
  assert.deepEqual([status.state, status.desiredState, status.podStats], [
    "JOB_STATE_PENDING",
    "JOB_STATE_RUNNING",
    {
      // Every pod state a task state maps to, 0 included, as Peloton converts its dense taskStats.
      ...Object.fromEntries(
        Object.keys(TASK_STATES).map((s) => [`POD_STATE_${s === "UNKNOWN" ? "INVALID" : s}`, 0]),
      ),
      POD_STATE_PENDING: 2,
    },
  ]);
});

Deno.test("QueryJobs filters by Peloton's v1alpha QuerySpec and pages; the pool is looked up by path", async () => {
  const rig = new JobmgrRig();
  const ids = [1, 2, 3].map((n) => `3333333${n}-2222-4333-8444-555555555555`);
  rig.create({ type: "SERVICE", name: "web-frontend", labels: [{ key: "team", value: "x" }] }, ids[0]);
  rig.tick(1000);
  // Peloton's QuerySpec.owner is the owning team: the job's `owner` field is not what it matches.
  rig.create({ type: "SERVICE", name: "web-backend", owningTeam: "other", owner: "team" }, ids[1]);
  rig.tick(1000);
  rig.create({ name: "nightly", description: "a WEB crawl", labels: [{ key: "team", value: "x" }] }, ids[2]);
  rig.tick(1000);
  const query = async (spec: Record<string, unknown>) => {
    rig.call(STATELESS_SERVICE, "QueryJobs", { spec });
    await rig.reads();
    const [reply] = rig.replies();
    assert.equal(reply.error, undefined, JSON.stringify(reply.error));
    const b = reply.body as { records: { jobId: { value: string } }[]; pagination: unknown; spec: unknown };
    assert.deepEqual(b.spec, spec, "the spec is echoed");
    return { ids: b.records.map((r) => ids.indexOf(r.jobId.value)), pagination: b.pagination };
  };
  assert.deepEqual(await query({}), { ids: [2, 1, 0], pagination: { offset: 0, limit: 100, total: 3 } });
  assert.deepEqual((await query({ labels: [{ key: "team", value: "x" }] })).ids, [2, 0]);
  assert.deepEqual((await query({ owner: "other" })).ids, [1]);
  assert.deepEqual((await query({ jobStates: ["JOB_STATE_PENDING"], owner: "team" })).ids, [2, 0]);
  assert.deepEqual((await query({ owner: "tester" })).ids, [], "config.owner is not the owning team");
  assert.deepEqual((await query({ jobStates: ["JOB_STATE_RUNNING"] })).ids, []);
  // v1alpha's JOB_STATE_INVALID (0) is v0's UNKNOWN, and is echoed by its own name.
  assert.deepEqual((await query({ jobStates: ["JOB_STATE_INVALID"] })).ids, []);
  assert.deepEqual((await query({ keywords: ["web"] })).ids, [2, 1, 0], "name or description, any case");
  assert.deepEqual((await query({ keywords: ["web", "front"] })).ids, [0], "every keyword must match");
  const created = { creationTimeRange: { min: "1970-01-01T00:00:00.500Z", max: "1970-01-01T00:00:01.500Z" } };
  assert.deepEqual((await query(created)).ids, [1]);
  assert.deepEqual(
    (await query({ completionTimeRange: { min: "1970-01-01T00:00:00Z" } })).ids,
    [],
    "none ended",
  );
  assert.deepEqual(await query({ keywords: ["web"], pagination: { offset: 1, limit: 1 } }), {
    ids: [1],
    pagination: { offset: 1, limit: 1, total: 3 },
  });

  rig.call(STATELESS_SERVICE, "QueryJobs", { spec: { respool: { value: "/pool-a" }, owner: "other" } });
  const lookup = rig.transport.takeOne("api", "resmgr");
  assert.deepEqual([lookup.procedure, lookup.body], [
    "peloton.api.respool.ResourceManager::LookupResourcePoolID",
    { path: { value: "/pool-a" } },
  ]);
  rig.jm.receive({ kind: "api-reply", reqId: lookup.reqId, body: { id: { value: "pool-a" } } });
  await rig.reads();
  const [byPool] = rig.replies();
  assert.deepEqual((byPool.body as { records: { jobId: unknown }[] }).records.map((r) => r.jobId), [
    { value: ids[1] },
  ]);

  rig.call(STATELESS_SERVICE, "QueryJobs", { spec: { jobStates: ["JOB_STATE_NAPPING"] } });
  assert.deepEqual(rig.replies()[0].error, {
    code: "invalid-argument",
    message: 'spec.jobStates[0]: got "JOB_STATE_NAPPING", expected v1alpha job states (or their numbers): ' +
      "JOB_STATE_INVALID, JOB_STATE_INITIALIZED, JOB_STATE_PENDING, JOB_STATE_RUNNING, JOB_STATE_SUCCEEDED, " +
      "JOB_STATE_FAILED, JOB_STATE_KILLED, JOB_STATE_KILLING, JOB_STATE_UNINITIALIZED, JOB_STATE_DELETED",
  });
});

Deno.test("QueryJobs orders by spec.pagination.orderBy (ORDER_BY_ASC, ORDER_BY_DESC or their numbers)", async () => {
  const rig = new JobmgrRig();
  const ids = [0, 1, 2, 3].map((n) => `4444444${n}-2222-4333-8444-555555555555`);
  for (const [n, name, owningTeam] of [[0, "web", "ops"], [1, "Batch", "ads"], [2, "api", "ops"]] as const) {
    rig.create({ name, owningTeam }, ids[n]);
    rig.tick(1000);
  }
  // A finished job the job manager no longer holds, as the store has it.
  const done = makeJobRecord(ids[3], { name: "zeta", owningTeam: "ml" }, {
    state: "SUCCEEDED",
    creationTimeMs: 500,
    completionTimeMs: 3000,
  });
  rig.store.write([{ kind: "job.put", job: done }]);
  const query = async (spec: Record<string, unknown>) => {
    rig.call(STATELESS_SERVICE, "QueryJobs", { spec });
    await rig.reads();
    const [reply] = rig.replies();
    assert.equal(reply.error, undefined, JSON.stringify(reply.error));
    const b = reply.body as { records: { jobId: { value: string } }[]; pagination: { total: number } };
    return b.records.map((r) => ids.indexOf(r.jobId.value));
  };
  const order = (...keys: [string, unknown][]) => ({
    pagination: { orderBy: keys.map(([value, order]) => ({ order, property: { value } })) },
  });
  assert.deepEqual(await query({}), [2, 1, 3, 0], "newest first");
  assert.deepEqual(await query(order(["name", "ORDER_BY_DESC"])), [3, 0, 2, 1]);
  assert.deepEqual(await query(order(["owner", "ORDER_BY_ASC"], ["creation_time", 2])), [1, 3, 2, 0]);
  assert.deepEqual(await query(order(["completion_time", 1])), [3, 0, 1, 2], "not completed: last ascending");
  assert.deepEqual(await query(order(["state", "ORDER_BY_DESC"])), [3, 2, 1, 0], "SUCCEEDED after PENDING");
  const byName = order(["name", "ORDER_BY_ASC"]);
  assert.deepEqual(await query({ pagination: { ...byName.pagination, offset: 1, limit: 2 } }), [2, 0]);
  const keyword = { keywords: ["TESTER"], pagination: { ...byName.pagination, offset: 2, limit: 2 } };
  assert.deepEqual(await query(keyword), [0, 3], "keywords are matched after the store's ordered read");

  rig.call(STATELESS_SERVICE, "QueryJobs", { spec: order(["instance_id", "ORDER_BY_ASC"]) });
  assert.deepEqual(rig.replies()[0].error, {
    code: "invalid-argument",
    message: 'spec.pagination.orderBy[0].property.value: got "instance_id", expected one of creation_time, ' +
      "completion_time, name, owner, state",
  });
});

Deno.test("rolling restart|start|stop with instances past the job's end are refused naming them, and do nothing", () => {
  const rig = runningService(4);
  rig.store.settle();
  const writes = rig.store.batches.length;
  const message = (what: string) => `${what} out of range: job ${JOB_ID} has 4 instances`;
  const [restart] = stateless(rig, "RestartJob", {
    restartSpec: { batchSize: 1, ranges: [{ from: 2, to: 6 }] },
  });
  assert.deepEqual(restart.error, { code: "out-of-range", message: message("instances 4-5 are") });
  const JOB = "peloton.api.job.JobManager";
  const cases: [string, unknown[], string][] = [
    ["Restart", [{ from: 0, to: 1 }, { from: 4, to: 5 }], "instance 4 is"],
    ["Start", [{ from: 9 }], "instances from 9 are"],
    ["Stop", [{ from: 3, to: 10 }], "instances 4-9 are"],
  ];
  for (const [method, ranges, what] of cases) {
    rig.call(JOB, method, { id: { value: JOB_ID }, batchSize: 1, ranges });
    const [reply] = rig.replies();
    assert.deepEqual(reply.error, { code: "out-of-range", message: message(what) }, method);
  }
  rig.tick(60_000);
  assert.equal(rig.jm.updates.size, 0, "no workflow was started");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no task was touched");
  assert.equal(rig.store.batches.length, writes, "nothing written");

  // Peloton's CLI sends max uint32 as the end of a range left open: to the job's end, not past it.
  rig.call(JOB, "Restart", { id: { value: JOB_ID }, batchSize: 1, ranges: [{ from: 3, to: 0xffff_ffff }] });
  const [open] = rig.replies();
  assert.equal(open.error, undefined, JSON.stringify(open.error));
  const updateId = (open.body as { updateID: { value: string } }).updateID.value;
  assert.deepEqual(rig.jm.updates.get(updateId)?.instancesUpdated, [3]);
});

Deno.test("a JobService write without an entity version is refused as a stale one, naming the field and the job's version", async () => {
  const rig = runningService(3);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  rig.tick();
  assert.deepEqual(killAsked(rig), [0], "the restart is under way");
  rig.store.settle();
  rig.transport.drain();
  const [u] = rig.jm.updates.values();
  const at = entityVersion(rig.job());
  const writes = rig.store.batches.length;
  const { respoolId: _, ...spec } = makeStatelessSpec(4);
  // Peloton compares `req.GetVersion().GetValue()`, "" when absent, with the job's: every call it guards.
  const calls: [string, Record<string, unknown>][] = [
    ["ReplaceJob", { spec }],
    ["PatchJob", { spec: { instanceCount: 4 } }],
    ["GetReplaceJobDiff", { spec }],
    ["RestartJob", { restartSpec: { batchSize: 1 } }],
    ["PauseJobWorkflow", {}],
    ["ResumeJobWorkflow", {}],
    ["AbortJobWorkflow", {}],
    ["StartJob", {}],
    ["StopJob", {}],
    ["DeleteJob", { force: true }],
  ];
  const message =
    "unexpected entity version: version: missing, expected the job's entity version, the job is " +
    `at ${at}`;
  for (const missing of [{}, { version: {} }, { version: { value: "" } }]) {
    for (const [method, body] of calls) {
      rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, ...missing, ...body });
      await rig.reads();
      const errors = rig.replies().map((r) => r.error);
      assert.deepEqual(errors, [{ code: "aborted", message }], `${method} with ${JSON.stringify(missing)}`);
    }
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.equal(entityVersion(rig.job()), at);
  assert.deepEqual([rig.jm.updates.size, u.state, rig.job().config.instanceCount], [1, "ROLLING_FORWARD", 3]);
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no pod touched");

  // The tester's case: a stopped job is deleted only at its version.
  const [stopped] = stateless(rig, "StopJob");
  assert.equal(stopped.error, undefined, JSON.stringify(stopped.error));
  killAsked(rig);
  rig.tick(60_000);
  assert.equal(rig.job().runtime.state, "KILLED");
  const stoppedAt = (stopped.body as { version: { value: string } }).version.value;
  assert.equal(entityVersion(rig.job()), stoppedAt, "StopJob answers the version it made");
  rig.call(STATELESS_SERVICE, "DeleteJob", { jobId: { value: JOB_ID } });
  assert.equal(rig.replies()[0].error?.code, "aborted");
  assert.ok(rig.jm.jobs.has(JOB_ID), "not deleted");
  rig.call(STATELESS_SERVICE, "DeleteJob", { jobId: { value: JOB_ID }, version: currentVersion(rig) });
  rig.store.settle();
  assert.deepEqual(rig.replies().map((r) => [r.error, r.body]), [[undefined, {}]]);
  assert.equal(rig.store.jobs.get(JOB_ID), undefined, "deleted");
});

Deno.test("a JobService write with a version not an EntityVersion of N-N-N is InvalidArgument naming it; a stale one is Aborted", async () => {
  const rig = runningService(3);
  rig.store.settle();
  rig.transport.drain();
  const at = entityVersion(rig.job());
  const writes = rig.store.batches.length;
  const { respoolId: _, ...spec } = makeStatelessSpec(4);
  const calls: [string, Record<string, unknown>][] = [
    ["ReplaceJob", { spec }],
    ["GetReplaceJobDiff", { spec }],
    ["RestartJob", { restartSpec: { batchSize: 1 } }],
    ["StartJob", {}],
    ["StopJob", {}],
    ["DeleteJob", { force: true }],
  ];
  const form = 'expected an entity version "<configVersion>-<desiredStateVersion>-<workflowVersion>" of ' +
    `whole numbers, such as the job's ${at}`;
  const refusals: [unknown, string][] = [
    [at, `version: got "${at}", expected an entity version as a message, {"value": "${at}"}`],
    [[at], `version: got ["${at}"], expected an entity version as {"value": ...}`],
    [7, `version: got 7, expected an entity version as {"value": ...}`],
    [{ value: 7 }, "version.value: got 7, expected an entity version"],
    [{ value: "garbage" }, `version: entityVersion has wrong format: got "garbage", ${form}`],
    [{ value: "1-1" }, `version: entityVersion has wrong format: got "1-1", ${form}`],
    [{ value: "1-x-1" }, `version: entityVersion has wrong format: got "1-x-1", ${form}`],
    [{ value: "1--1-1" }, `version: entityVersion has wrong format: got "1--1-1", ${form}`],
    [{ value: " 1-1-1" }, `version: entityVersion has wrong format: got " 1-1-1", ${form}`],
  ];
  for (const [version, message] of refusals) {
    for (const [method, body] of calls) {
      rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, version, ...body });
      await rig.reads();
      const errors = rig.replies().map((r) => r.error);
      assert.deepEqual(
        errors,
        [{ code: "invalid-argument", message }],
        `${method} with ${JSON.stringify(version)}`,
      );
    }
  }
  for (const [method, body] of calls) {
    rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, version: { value: "9-9-9" }, ...body });
    await rig.reads();
    assert.deepEqual(rig.replies().map((r) => r.error), [{
      code: "aborted",
      message: `unexpected entity version: got 9-9-9, the job is at ${at}`,
    }], method);
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.equal(entityVersion(rig.job()), at);
  assert.equal(rig.jm.updates.size, 0, "no workflow started");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no pod touched");
});

Deno.test("DeleteJob refuses a force that is not true or false, naming it, and deletes nothing", () => {
  const rig = runningService(3);
  rig.store.settle();
  rig.transport.drain();
  const writes = rig.store.batches.length;
  for (const force of ["yes", 1, "true"]) {
    const [reply] = stateless(rig, "DeleteJob", { force });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `force: got ${JSON.stringify(force)}, expected true or false`,
    });
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.ok(rig.jm.jobs.has(JOB_ID), "not deleted");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no pod touched");
});
