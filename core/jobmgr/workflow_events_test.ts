import assert from "node:assert/strict";
import type { WorkflowEventRecord } from "../model/records.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { entityVersion, jobConfigJson } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { MAX_WORKFLOW_STATES, MAX_WORKFLOWS_WITH_EVENTS } from "./workflow.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms: how long a run without a health check must stay RUNNING. */
const SETTLE_MS = 10_000;

/** Starts a rolling update of every instance to a new command; returns its id. */
function update(rig: JobmgrRig, n: number, updateConfig: object, version = 1): string {
  const next = makeJobConfig({
    type: "SERVICE",
    instanceCount: n,
    task: {
      command: { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] },
    },
  });
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version } },
    updateConfig,
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

/** One instance's stored events of a workflow, oldest first, as `[state, timeMs]`. */
function steps(rig: JobmgrRig, workflowId: string, instanceId: number): [string, number][] {
  return rig.store.workflowEvents
    .filter((e) => e.workflowId === workflowId && e.instanceId === instanceId)
    .map((e) => [e.state, e.timeMs]);
}

/** A JobService write at the job's current entity version, as Peloton requires one. */
function stateless(rig: JobmgrRig, method: string, body: object = {}) {
  const version = { value: entityVersion(rig.job()) };
  rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, version, ...body });
  const replies = rig.replies();
  assert.equal(replies[0]?.error, undefined, JSON.stringify(replies));
  return replies[0].body as Record<string, unknown>;
}

Deno.test("an update records, per instance, INITIALIZED, ROLLING_FORWARD when taken and SUCCEEDED when done", () => {
  const rig = runningService(3);
  const id = update(rig, 3, { batchSize: 2 });
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0, 1]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch(), [2]);
  rig.tick(SETTLE_MS);
  assert.equal(rig.store.updates.get(id)?.state, "SUCCEEDED");
  for (const i of [0, 1]) {
    assert.deepEqual(steps(rig, id, i), [["INITIALIZED", 0], ["ROLLING_FORWARD", 0], ["SUCCEEDED", 10_000]]);
  }
  assert.deepEqual(steps(rig, id, 2), [
    ["INITIALIZED", 0],
    ["ROLLING_FORWARD", 10_000],
    ["SUCCEEDED", 20_000],
  ]);
  const e = rig.store.workflowEvents[0];
  assert.deepEqual([e.jobId, e.type], [JOB_ID, "UPDATE"]);
});

Deno.test("an instance out of attempts records FAILED; the rollback records ROLLING_BACKWARD, then SUCCEEDED", () => {
  const rig = runningService(4);
  const id = update(rig, 4, {
    batchSize: 2,
    maxInstanceAttempts: 1,
    maxFailureInstances: 1,
    rollbackOnFailure: true,
  });
  rig.tick();
  assert.deepEqual(rig.rollBatch("TASK_FAILED"), [0, 1]);
  rig.tick();
  assert.equal(rig.jm.updates.get(id)?.state, "ROLLING_BACKWARD");
  rig.tick(1_000);
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.equal(rig.store.updates.get(id)?.state, "ROLLED_BACK");
  // ROLLING_BACKWARD for each instance when the rollback starts, and again when it takes the instance.
  assert.deepEqual(steps(rig, id, 0), [
    ["INITIALIZED", 0],
    ["ROLLING_FORWARD", 0],
    ["FAILED", 0],
    ["ROLLING_BACKWARD", 0],
    ["ROLLING_BACKWARD", 0],
    ["SUCCEEDED", 11_000],
  ]);
  // Instance 1 failed too, but the rollback had started by then (at instance 0's failure): it was in flight.
  assert.deepEqual(steps(rig, id, 1), [
    ["INITIALIZED", 0],
    ["ROLLING_FORWARD", 0],
    ["ROLLING_BACKWARD", 0],
    ["ROLLING_BACKWARD", 0],
    ["SUCCEEDED", 11_000],
  ]);
  for (const i of [2, 3]) {
    assert.deepEqual(steps(rig, id, i), [["INITIALIZED", 0]], `instance ${i} untouched`);
  }
});

Deno.test("an update that fails records FAILED for the instances still in flight", () => {
  const rig = runningService(2);
  const id = update(rig, 2, { batchSize: 2, maxInstanceAttempts: 1, maxFailureInstances: 1 });
  rig.tick();
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  for (const taskId of kills) rig.status(taskId, "TASK_KILLED");
  rig.launch([0, 1]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.tick();
  assert.equal(rig.store.updates.get(id)?.state, "FAILED");
  assert.deepEqual(steps(rig, id, 0).map(([s]) => s), ["INITIALIZED", "ROLLING_FORWARD", "FAILED"]);
  assert.deepEqual(steps(rig, id, 1).map(([s]) => s), ["INITIALIZED", "ROLLING_FORWARD", "FAILED"]);
});

Deno.test("pausing, resuming and aborting a restart record the instances in flight; the others stay INITIALIZED", async () => {
  const rig = runningService(3);
  const id = (stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } }).workflowId as { value: string })
    .value;
  rig.tick();
  rig.tick(1_000);
  stateless(rig, "PauseJobWorkflow");
  rig.tick(1_000);
  stateless(rig, "ResumeJobWorkflow");
  rig.tick(1_000);
  stateless(rig, "AbortJobWorkflow");
  assert.deepEqual(steps(rig, id, 0), [
    ["INITIALIZED", 0],
    ["ROLLING_FORWARD", 0],
    ["PAUSED", 1_000],
    ["ROLLING_FORWARD", 2_000],
    ["ABORTED", 3_000],
  ]);
  for (const i of [1, 2]) assert.deepEqual(steps(rig, id, i), [["INITIALIZED", 0]]);
  assert.deepEqual(new Set(rig.store.workflowEvents.map((e) => e.type)), new Set(["RESTART"]));

  // The workflow's own states: WorkflowInfo.events in GetJob and ListJobWorkflows, newest first.
  type Event = { type: string; state: string; timestamp: string };
  const shown = (events: Event[]) =>
    events.map((e) => [e.type, e.state.replace("WORKFLOW_STATE_", ""), e.timestamp.slice(17, 19)]);
  const expected = [
    ["WORKFLOW_TYPE_RESTART", "ABORTED", "03"],
    ["WORKFLOW_TYPE_RESTART", "ROLLING_FORWARD", "02"],
    ["WORKFLOW_TYPE_RESTART", "PAUSED", "01"],
    ["WORKFLOW_TYPE_RESTART", "ROLLING_FORWARD", "00"],
    ["WORKFLOW_TYPE_RESTART", "INITIALIZED", "00"],
  ];
  const got = await read(rig, "GetJob", { jobId: { value: JOB_ID } });
  assert.deepEqual(shown((got.body as { workflowInfo: { events: Event[] } }).workflowInfo.events), expected);
  const listed = await read(rig, "ListJobWorkflows", { jobId: { value: JOB_ID } });
  const [workflow] = (listed.body as { workflowInfos: { events: Event[] }[] }).workflowInfos;
  assert.deepEqual(shown(workflow.events), expected, "ListJobWorkflows too");
});

Deno.test("a workflow created paused records PAUSED for its instances; a new one aborts the one in flight", () => {
  const rig = runningService(2);
  const first = update(rig, 2, { batchSize: 1 });
  rig.tick();
  rig.tick(1_000);
  const second = update(rig, 2, { batchSize: 1, startPaused: true }, 2);
  assert.deepEqual(steps(rig, first, 0), [["INITIALIZED", 0], ["ROLLING_FORWARD", 0], ["ABORTED", 1_000]]);
  assert.deepEqual(steps(rig, first, 1), [["INITIALIZED", 0]]);
  for (const i of [0, 1]) assert.deepEqual(steps(rig, second, i), [["PAUSED", 1_000]]);
});

Deno.test(`a job keeps the instance events of its newest ${MAX_WORKFLOWS_WITH_EVENTS} workflows`, () => {
  const rig = runningService(1);
  const ids: string[] = [];
  for (let n = 0; n <= MAX_WORKFLOWS_WITH_EVENTS; n++) {
    ids.push((stateless(rig, "RestartJob").workflowId as { value: string }).value);
    rig.tick();
    // A restart does not overwrite one in progress (as in Peloton): each is aborted before the next.
    rig.jm.workflows.abortActive(rig.job());
  }
  const kept = new Set(rig.store.workflowEvents.map((e) => e.workflowId));
  assert.deepEqual([...kept].sort(), ids.slice(1).sort(), "the oldest one's are deleted");
  assert.deepEqual(rig.job().runtime.workflowsWithEvents, ids.slice(1));
  assert.deepEqual(rig.store.jobs.get(JOB_ID)?.runtime.workflowsWithEvents, ids.slice(1), "stored");
  assert.ok(rig.store.updates.has(ids[0]), "the workflow itself stays");
});

Deno.test("with events turned off (the large simulations), workflows record none", () => {
  const rig = runningService(2, { config: { recordEvents: false } });
  update(rig, 2, { batchSize: 1 });
  rig.tick();
  rig.rollBatch();
  rig.tick(SETTLE_MS);
  const none: WorkflowEventRecord[] = [];
  assert.deepEqual(rig.store.workflowEvents, none);
  assert.equal(rig.job().runtime.workflowsWithEvents, undefined);
});

Deno.test("a rolling create stores its instances' INITIALIZED events with the job", () => {
  const rig = new JobmgrRig();
  rig.call(STATELESS_SERVICE, "CreateJob", {
    jobId: { value: JOB_ID },
    spec: {
      name: "svc",
      instanceCount: 2,
      respoolId: { value: "pool-a" },
      defaultSpec: { containers: [{ name: "c", command: { value: "sleep 100" } }] },
    },
    createSpec: { batchSize: 1 },
  });
  rig.answerPool();
  const createBatch = rig.store.batches.find((b) => b.some((w) => w.kind === "job.put"))!;
  const events = createBatch.flatMap((w) => w.kind === "workflow.event" ? [w.event] : []);
  assert.deepEqual(events.map((e) => [e.instanceId, e.type, e.state]), [[0, "START", "INITIALIZED"], [
    1,
    "START",
    "INITIALIZED",
  ]]);
});

// ---------------------------------------------------------------------------------------------
// GetWorkflowEvents and ListJobWorkflows' instance events

/** Calls the stateless JobService once the call's store reads have answered; returns the one reply. */
async function read(rig: JobmgrRig, method: string, body: object) {
  rig.call(STATELESS_SERVICE, method, body);
  const answered = () => rig.transport.sent.some((s) => s.msg.kind === "api-reply");
  for (let i = 0; i < 5 && !answered(); i++) await rig.reads();
  const replies = rig.replies();
  assert.equal(replies.length, 1, JSON.stringify(replies));
  return replies[0];
}

async function workflowEvents(rig: JobmgrRig, body: object) {
  const reply = await read(rig, "GetWorkflowEvents", { jobId: { value: JOB_ID }, ...body });
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return (reply.body as { events: { type: string; timestamp: string; state: string }[] }).events;
}

/** GetWorkflowEvents refused: its error's code and message. */
async function refusedEvents(rig: JobmgrRig, body: object) {
  const reply = await read(rig, "GetWorkflowEvents", { jobId: { value: JOB_ID }, ...body });
  return [reply.error?.code, reply.error?.message];
}

Deno.test("GetWorkflowEvents: an instance's events in the job's last workflow, newest first, `limit` newest", async () => {
  const rig = runningService(2);
  const first = update(rig, 2, { batchSize: 1 });
  rig.tick();
  rig.rollBatch();
  rig.tick(SETTLE_MS);
  rig.rollBatch();
  rig.tick(SETTLE_MS);
  assert.equal(rig.job().runtime.updateId, undefined, "the update ended; the job no longer names it");
  assert.deepEqual(await workflowEvents(rig, { instanceId: 1 }), [
    {
      type: "WORKFLOW_TYPE_UPDATE",
      timestamp: "1970-01-01T00:00:20.000Z",
      state: "WORKFLOW_STATE_SUCCEEDED",
    },
    {
      type: "WORKFLOW_TYPE_UPDATE",
      timestamp: "1970-01-01T00:00:10.000Z",
      state: "WORKFLOW_STATE_ROLLING_FORWARD",
    },
    {
      type: "WORKFLOW_TYPE_UPDATE",
      timestamp: "1970-01-01T00:00:00.000Z",
      state: "WORKFLOW_STATE_INITIALIZED",
    },
  ]);
  assert.deepEqual(
    (await workflowEvents(rig, { instanceId: "0", limit: 2 })).map((e) => e.state),
    ["WORKFLOW_STATE_SUCCEEDED", "WORKFLOW_STATE_ROLLING_FORWARD"],
  );
  assert.deepEqual((await workflowEvents(rig, {})).length, 3, "instance 0 by default, as proto3's zero");

  // A restart in progress is the job's current workflow now.
  rig.tick(1_000);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  rig.tick();
  assert.deepEqual(await workflowEvents(rig, { instanceId: 0 }), [
    {
      type: "WORKFLOW_TYPE_RESTART",
      timestamp: "1970-01-01T00:00:21.000Z",
      state: "WORKFLOW_STATE_ROLLING_FORWARD",
    },
    {
      type: "WORKFLOW_TYPE_RESTART",
      timestamp: "1970-01-01T00:00:21.000Z",
      state: "WORKFLOW_STATE_INITIALIZED",
    },
  ]);
  // An instance the job does not have is out of range, as `task events` says, not an empty list.
  assert.deepEqual(await refusedEvents(rig, { instanceId: 7 }), [
    "out-of-range",
    `instance 7 is out of range: job ${JOB_ID} has 2 instances`,
  ]);
  assert.ok(rig.store.workflowEvents.some((e) => e.workflowId === first), "the update's events stay");
});

Deno.test("GetWorkflowEvents refuses a bad job id, instance id or limit, naming the field; unknown jobs are not found", async () => {
  const rig = runningService(1);
  const refused = async (body: object) => {
    const reply = await read(rig, "GetWorkflowEvents", body);
    return [reply.error?.code, reply.error?.message];
  };
  assert.deepEqual(await refused({ jobId: { value: "nope" } }), [
    "invalid-argument",
    'jobId: got {"value":"nope"}, expected a job id',
  ]);
  assert.deepEqual(await refused({}), ["invalid-argument", "jobId: missing, expected a job id"]);
  for (const bad of [-1, 1.5, "x", true]) {
    const [code, message] = await refused({ jobId: { value: JOB_ID }, instanceId: bad });
    assert.equal(code, "invalid-argument");
    assert.match(String(message), /^instanceId: got .+, expected an instance id \(a whole number/);
  }
  const [code, message] = await refused({ jobId: { value: JOB_ID }, limit: "ten" });
  assert.equal(code, "invalid-argument");
  assert.match(String(message), /^limit: got "ten", expected how many events to return, 0 for all/);
  const unknown = "99999999-2222-4333-8444-555555555555";
  assert.deepEqual(await refused({ jobId: { value: unknown } }), ["not-found", `job ${unknown} not found`]);
  assert.deepEqual(await refused({ jobId: { value: JOB_ID } }), [
    "not-found",
    `job ${JOB_ID} has no workflow`,
  ]);
});

Deno.test("ListJobWorkflows with instanceEvents lists each workflow's instances with their events, newest first", async () => {
  const rig = runningService(3);
  const restart = (stateless(rig, "RestartJob", {
    restartSpec: { batchSize: 1, ranges: [{ from: 1, to: 3 }] },
  }).workflowId as { value: string }).value;
  rig.tick();
  rig.tick(1_000);
  stateless(rig, "AbortJobWorkflow");
  type Info = {
    workflowId: { value: string };
    instanceEvents?: { instanceId: number; events: { state: string }[] }[];
  };
  const list = async (body: object) => {
    const reply = await read(rig, "ListJobWorkflows", { jobId: { value: JOB_ID }, ...body });
    assert.equal(reply.error, undefined, JSON.stringify(reply.error));
    return (reply.body as { workflowInfos: Info[] }).workflowInfos;
  };
  const states = (info: Info) =>
    info.instanceEvents?.map((
      i,
    ) => [i.instanceId, i.events.map((e) => e.state.replace("WORKFLOW_STATE_", ""))]);

  const [plain] = await list({});
  assert.equal(plain.workflowId.value, restart);
  assert.equal(plain.instanceEvents, undefined, "only when asked");
  const [full] = await list({ instanceEvents: true });
  assert.deepEqual(states(full), [
    [1, ["ABORTED", "ROLLING_FORWARD", "INITIALIZED"]],
    [2, ["INITIALIZED"]],
  ]);
  const [limited] = await list({ instanceEvents: true, instanceEventsLimit: 1 });
  assert.deepEqual(states(limited), [[1, ["ABORTED"]], [2, ["INITIALIZED"]]]);
  const bad = await read(rig, "ListJobWorkflows", {
    jobId: { value: JOB_ID },
    instanceEvents: true,
    instanceEventsLimit: -2,
  });
  assert.equal(bad.error?.code, "invalid-argument");
  assert.match(bad.error!.message, /^instanceEventsLimit: got -2, expected/);
  // A limit of the workflows listed that is not a number is refused, not read as no limit.
  const badLimit = await read(rig, "ListJobWorkflows", { jobId: { value: JOB_ID }, updatesLimit: "abc" });
  assert.equal(badLimit.error?.code, "invalid-argument");
  assert.match(
    badLimit.error!.message,
    /^updatesLimit: got "abc", expected how many of the newest workflows/,
  );
  const one = await read(rig, "ListJobWorkflows", { jobId: { value: JOB_ID }, updatesLimit: "1" });
  assert.equal((one.body as { workflowInfos: unknown[] }).workflowInfos.length, 1);
});

Deno.test("GetWorkflowEvents shows when a rollback took each instance back, one batch after another", async () => {
  const rig = runningService(2);
  update(rig, 2, { batchSize: 1, maxInstanceAttempts: 1, maxFailureInstances: 1, rollbackOnFailure: true });
  rig.tick();
  assert.deepEqual(rig.rollBatch(), [0]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch("TASK_FAILED"), [1], "instance 1 is taken at 10 s, and fails");
  rig.tick();
  // The rollback takes instance 1 back first: it is down, and 0 is up (Peloton's sortInstancesByAvailability).
  // Its run ended, so it needs no kill: it starts again on the old config.
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), []);
  rig.launch([1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.rollBatch(), [0], "then instance 0, at 20 s");
  rig.tick(SETTLE_MS);
  assert.equal(rig.job().runtime.updateId, undefined, "rolled back");
  const seen = async (instanceId: number) =>
    (await workflowEvents(rig, { instanceId })).map((e) => [e.state.slice(15), e.timestamp.slice(11, 19)]);
  assert.deepEqual(await seen(0), [
    ["SUCCEEDED", "00:00:30"],
    ["ROLLING_BACKWARD", "00:00:20"],
    ["SUCCEEDED", "00:00:10"],
    ["ROLLING_FORWARD", "00:00:00"],
    ["INITIALIZED", "00:00:00"],
  ]);
  assert.deepEqual(await seen(1), [
    ["SUCCEEDED", "00:00:20"],
    ["ROLLING_BACKWARD", "00:00:10"],
    ["FAILED", "00:00:10"],
    ["ROLLING_FORWARD", "00:00:10"],
    ["INITIALIZED", "00:00:00"],
  ]);
});

Deno.test("a deleted job's workflow events go with it", async () => {
  const rig = runningService(1);
  stateless(rig, "RestartJob");
  rig.tick();
  assert.ok(rig.store.workflowEvents.length > 0);
  stateless(rig, "DeleteJob", { force: true });
  await rig.reads();
  assert.deepEqual(rig.store.workflowEvents, []);
});

Deno.test(`a workflow paused and resumed again and again keeps its first and newest ${MAX_WORKFLOW_STATES} states`, () => {
  const rig = runningService(1);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  rig.tick();
  for (let i = 0; i < MAX_WORKFLOW_STATES; i++) {
    stateless(rig, "PauseJobWorkflow");
    stateless(rig, "ResumeJobWorkflow");
  }
  const u = [...rig.jm.updates.values()][0];
  const states = u.states!.map((s) => s.state);
  // INITIALIZED, ROLLING_FORWARD and 64 pairs of PAUSED, ROLLING_FORWARD: 130 states, of which the first
  // and the newest 63 are kept.
  assert.equal(states.length, MAX_WORKFLOW_STATES);
  assert.deepEqual(states.slice(0, 3), ["INITIALIZED", "ROLLING_FORWARD", "PAUSED"]);
  assert.equal(states.at(-1), "ROLLING_FORWARD");
  const stored = rig.store.updates.get(u.updateId)!;
  assert.deepEqual(stored.states, u.states, "stored with the record");
});

Deno.test("a paused update of a stopped service outlives a restart: it can be resumed, and it starts no pod", async () => {
  const rig = runningService(3);
  rig.call("peloton.api.task.TaskManager", "Stop", { jobId: { value: JOB_ID } });
  rig.transport.take("kill-tasks");
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_KILLED");
  rig.replies();
  const id = update(rig, 3, { batchSize: 1, startPaused: true });
  assert.equal(rig.store.jobs.get(JOB_ID)!.runtime.state, "KILLED");
  const jm = await rig.restartJobManager();
  rig.transport.take("api-reply");
  const call = async (method: string) => {
    jm.receive({
      kind: "api",
      reqId: 7,
      replyTo: "api/1",
      procedure: `${UPDATE}::${method}`,
      body: { updateId: { value: id } },
    });
    rig.tick();
    // A read of the store answers on a later turn.
    await new Promise((r) => setTimeout(r, 0));
    return rig.replies()[0];
  };
  assert.ok(jm.jobs.has(JOB_ID), "the job of a workflow in progress is loaded, though it ended");
  assert.equal((await call("ResumeUpdate")).error, undefined);
  rig.tick(60_000);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), [], "a stopped pod stays stopped");
  const got = await call("GetUpdate");
  assert.equal(
    (got.body as { updateInfo: { status: { state: string } } }).updateInfo.status.state,
    "SUCCEEDED",
  );
});

Deno.test("GetWorkflowEvents: an instance the workflow never took has none; one the job never had or removed is out of range", async () => {
  const rig = runningService(3);
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1, ranges: [{ from: 1, to: 3 }] } });
  rig.tick();
  assert.deepEqual(
    await workflowEvents(rig, { instanceId: 0 }),
    [],
    "instance 0 is the job's, not restarted",
  );
  assert.ok((await workflowEvents(rig, { instanceId: 1 })).length, "instance 1 is restarted");
  assert.deepEqual(await refusedEvents(rig, { instanceId: 3 }), [
    "out-of-range",
    `instance 3 is out of range: job ${JOB_ID} has 3 instances`,
  ]);
});

/** TaskManager::Get's `outOfRange` message for an instance (what `task events` shows when it finds none). */
async function taskGetOutOfRange(rig: JobmgrRig, instanceId: number): Promise<unknown> {
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId });
  await rig.reads();
  const [reply] = rig.replies();
  return (reply.body as { outOfRange?: { message: string } }).outOfRange?.message;
}

Deno.test("GetWorkflowEvents: a shrink's removed instance keeps its events until a later workflow, then is out of range", async () => {
  const rig = runningService(3);
  update(rig, 2, { batchSize: 3 });
  rig.tick();
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
  for (const id of kills) rig.status(id, "TASK_KILLED");
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.equal(rig.job().runtime.updateId, undefined, "the update ended");
  assert.deepEqual(
    (await workflowEvents(rig, { instanceId: 2 })).map((e) => e.state),
    ["WORKFLOW_STATE_SUCCEEDED", "WORKFLOW_STATE_ROLLING_FORWARD", "WORKFLOW_STATE_INITIALIZED"],
    "the workflow that removed it recorded it",
  );
  stateless(rig, "RestartJob", { restartSpec: { batchSize: 1 } });
  rig.tick();
  const removed =
    `instance 2 of job ${JOB_ID} was removed when the job shrank to 2 instances; its last run, ` +
    `${JOB_ID}-2-1, ended KILLED`;
  assert.deepEqual(await refusedEvents(rig, { instanceId: 2 }), ["out-of-range", removed]);
  const never = `instance 4 is out of range: job ${JOB_ID} has 2 instances`;
  assert.deepEqual(await refusedEvents(rig, { instanceId: 4 }), ["out-of-range", never]);
  // Word for word as `task events` (TaskManager::Get) says it.
  assert.equal(await taskGetOutOfRange(rig, 2), removed);
  assert.equal(await taskGetOutOfRange(rig, 4), never);
});
