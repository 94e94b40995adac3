import assert from "node:assert/strict";
import { makeJobConfig } from "../testing/harness.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./job_api.ts";

type Body = Record<string, unknown>;

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;
/** Lets store reads (promises) settle so the replies built from them are sent. */
const reads = () => new Promise((resolve) => setTimeout(resolve, 0));

function body(rig: JobmgrRig): Body {
  const [r] = rig.replies();
  assert.ok(r, "expected a reply");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

/** The `error.invalidConfig.message` of Peloton's in-body error, or undefined. */
function invalidConfig(b: Body): string | undefined {
  return ((b.error as Body | undefined)?.invalidConfig as Body | undefined)?.message as string | undefined;
}

function assertNothingCreated(rig: JobmgrRig): void {
  assert.equal(rig.jm.jobs.size, 0);
  assert.deepEqual(rig.store.batches, []);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), []);
}

Deno.test("an invalid config is rejected as {error: {invalidConfig: {message}}} and creates nothing", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Create", { config: jobConfigJson(makeJobConfig({ instanceCount: 0 })) });
  assert.match(invalidConfig(body(rig))!, /instanceCount.*at least 1 instance/);
  assert.deepEqual(rig.transport.take("api", "resmgr"), [], "the pool is not even asked for");
  assertNothingCreated(rig);
});

Deno.test("a config without a command or with a wrong type is rejected naming the field", () => {
  const rig = new JobmgrRig();
  const noCommand = jobConfigJson(makeJobConfig({ task: { command: undefined } }));
  rig.api("job", "Create", { config: noCommand });
  assert.match(invalidConfig(body(rig))!, /command/);
  rig.api("job", "Create", { config: { ...jobConfigJson(makeJobConfig()), instanceCount: "many" } });
  assert.match(invalidConfig(body(rig))!, /instanceCount/);
  assertNothingCreated(rig);
});

Deno.test("a config without a resource pool is rejected", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Create", { config: jobConfigJson(makeJobConfig({ respoolId: undefined })) });
  assert.match(invalidConfig(body(rig))!, /respoolID/);
  assertNothingCreated(rig);
});

Deno.test("a pool that does not exist or is not a leaf is rejected after asking resmgr", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Create", { config: jobConfigJson(makeJobConfig()) });
  rig.answerPoolMissing();
  assert.match(invalidConfig(body(rig))!, /resource pool pool-a not found/);
  rig.api("job", "Create", { config: jobConfigJson(makeJobConfig()) });
  rig.answerPool(["child"]);
  assert.match(invalidConfig(body(rig))!, /not a leaf pool/);
  assertNothingCreated(rig);
});

Deno.test("a job id that is not a UUID is rejected; an existing one already exists", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Create", { id: { value: "job-1" }, config: jobConfigJson(makeJobConfig()) });
  assert.ok((body(rig).error as Body).invalidJobId);
  rig.create();
  rig.api("job", "Create", { id: { value: JOB_ID }, config: jobConfigJson(makeJobConfig()) });
  rig.answerPool();
  const exists = (body(rig).error as Body).alreadyExists as Body;
  assert.deepEqual(exists.id, { value: JOB_ID });
});

Deno.test("a store failure answers internal and leaves no job in memory", () => {
  const rig = new JobmgrRig();
  rig.store.failNextWrite(new Error("disk full"));
  rig.api("job", "Create", { id: { value: JOB_ID }, config: jobConfigJson(makeJobConfig()) });
  rig.answerPool();
  rig.store.settle();
  const [r] = rig.replies();
  assert.equal(r.error?.code, "internal");
  assert.equal(rig.jm.jobs.size, 0);
  assert.deepEqual(rig.transport.take("enqueue-gangs"), []);
});

Deno.test("job Get shows config and runtime in Peloton's shape", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.api("job", "Get", { id: { value: JOB_ID } });
  const info = body(rig).jobInfo as Body;
  assert.deepEqual(info.id, { value: JOB_ID });
  assert.deepEqual((info.config as Body).respoolID, { value: "pool-a" });
  const rt = info.runtime as Body;
  assert.deepEqual([rt.state, rt.goalState, rt.creationTime], [
    "PENDING",
    "SUCCEEDED",
    "1970-01-01T00:00:00.000Z",
  ]);
  assert.deepEqual(rt.taskStats, { INITIALIZED: 0, PENDING: 2 });
});

Deno.test("unknown jobs are not found, read from the store", async () => {
  const rig = new JobmgrRig();
  rig.api("job", "Get", { id: { value: JOB_ID } });
  await reads();
  const [r] = rig.replies();
  assert.equal(r.error?.code, "not-found");
});

Deno.test("task List maps instance ids to task infos with their runtime", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([1]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const value = (body(rig).result as Body).value as Record<string, Body>;
  assert.deepEqual(Object.keys(value), ["0", "1"]);
  const one = value["1"];
  assert.equal(one.instanceId, 1);
  assert.deepEqual(one.jobId, { value: JOB_ID });
  const rt = one.runtime as Body;
  assert.deepEqual([rt.state, rt.host, rt.agentID, rt.mesosTaskId], [
    "LAUNCHING",
    "h1",
    { value: "agent-h1" },
    { value: id(1) },
  ]);
  assert.equal(((one.config as Body).command as Body).value, "echo hello");
});

Deno.test("task Get lists the current run first, then earlier runs", () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 1 } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_FAILED");
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const runs = body(rig).result as Body[];
  assert.deepEqual(
    runs.map((r) => [(r.runtime as Body).state, ((r.runtime as Body).mesosTaskId as Body).value]),
    [
      ["PENDING", id(0, 2)],
      ["FAILED", id(0, 1)],
    ],
  );
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 5 });
  assert.ok(body(rig).outOfRange);
});

Deno.test("task events list every state change of an instance, newest first", async () => {
  const rig = new JobmgrRig();
  rig.create();
  rig.launch([0]);
  rig.ports.clock.set(2_000);
  rig.status(id(0), "TASK_RUNNING");
  rig.status(id(0), "TASK_FINISHED");
  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0 });
  await reads();
  const events = body(rig).result as Body[];
  assert.deepEqual(events.map((e) => e.actualState), ["SUCCEEDED", "RUNNING", "LAUNCHING", "PENDING"]);
  assert.deepEqual(events[0].taskId, { value: id(0) });
  assert.equal(events[0].timestamp, "1970-01-01T00:00:02.000Z");
  assert.equal(events[0].hostname, "h1");
});

Deno.test("task Stop with ranges stops only those instances and leaves the job's goal alone", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3 });
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 1, to: 3 }] });
  assert.deepEqual(body(rig).stoppedInstanceIds, [1, 2]);
  assert.deepEqual(rig.transport.takeOne("drop-tasks").taskIds, [id(1), id(2)]);
  assert.deepEqual([...rig.job().tasks.values()].map((t) => t.state), ["PENDING", "KILLED", "KILLED"]);
  assert.equal(rig.job().runtime.goalState, "SUCCEEDED");
});

Deno.test("an unknown procedure is unimplemented", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Frobnicate", {});
  assert.equal(rig.replies()[0].error?.code, "unimplemented");
});
