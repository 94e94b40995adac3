/** v1alpha GetJob's two options: `summaryOnly` (the job's summary alone) and `version` (one config's spec). */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const SPEC = {
  name: "web",
  owner: "alice",
  owningTeam: "team-web",
  labels: [{ key: "app", value: "web" }],
  instanceCount: 3,
  respoolId: { value: "pool-a" },
  defaultSpec: { containers: [{ name: "server", entrypoint: { value: "serve" } }] },
};

/** A stateless job at config version 2: created with SPEC, then replaced by a spec of 5 instances. */
function replacedJob(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, spec: SPEC });
  rig.answerPool();
  rig.store.settle();
  assert.equal(rig.replies()[0].error, undefined);
  // The create's rolling start ends once its pods have stayed up a while; the replace then leaves them be.
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(60_000);
  assert.equal(rig.job().runtime.updateId, undefined, "the create's workflow ended");
  const next = { ...SPEC, instanceCount: 5, labels: [{ key: "app", value: "web2" }] };
  const version = { value: entityVersion(rig.job()) };
  rig.call(STATELESS_SERVICE, "ReplaceJob", { jobId: { value: JOB_ID }, version, spec: next });
  assert.equal(rig.replies()[0].error, undefined);
  assert.equal(rig.job().configVersion, 2);
  return rig;
}

async function getJob(rig: JobmgrRig, body: Record<string, unknown>): Promise<ApiReply> {
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID }, ...body });
  await rig.reads();
  const replies = rig.replies();
  assert.equal(replies.length, 1);
  return replies[0];
}

type Body = Record<string, Record<string, unknown>>;

Deno.test("GetJob with summaryOnly answers the job's summary alone, as Peloton's getJobSummary does", async () => {
  const rig = replacedJob();
  const reply = await getJob(rig, { summaryOnly: true });
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  const body = reply.body as Body;
  assert.deepEqual(Object.keys(body), ["summary"], "no jobInfo, no workflowInfo");
  const { status, ...summary } = body.summary;
  assert.deepEqual(summary, {
    jobId: { value: JOB_ID },
    name: "web",
    owner: "alice",
    owningTeam: "team-web",
    labels: [{ key: "app", value: "web2" }],
    instanceCount: 5,
    respoolId: { value: "pool-a" },
    sla: { priority: 0, preemptible: false, revocable: false, maximumUnavailableInstances: 0 },
  });
  const s = status as { state: string; version: { value: string }; workflowStatus?: { type: string } };
  assert.equal(s.version.value, entityVersion(rig.job()));
  assert.equal(s.workflowStatus?.type, "WORKFLOW_TYPE_UPDATE", "the summary's status carries the workflow");
});

Deno.test("GetJob with a version answers that config version's spec, without status", async () => {
  const rig = replacedJob();
  const v1 = await getJob(rig, { version: { value: "1-1-0" } });
  assert.equal(v1.error, undefined, JSON.stringify(v1.error));
  const body = v1.body as Body;
  assert.deepEqual(Object.keys(body), ["jobInfo"], "no workflowInfo");
  assert.deepEqual(Object.keys(body.jobInfo), ["jobId", "spec"], "no status");
  const spec = body.jobInfo.spec as { revision: unknown; instanceCount: number; labels: unknown };
  assert.deepEqual(spec.revision, { version: 1 });
  assert.equal(spec.instanceCount, 3);
  assert.deepEqual(spec.labels, SPEC.labels);

  // Only the config version is read (Peloton's GetConfigVersion): the other two parts may be anything.
  const v2 = ((await getJob(rig, { version: { value: "2-9-9" } })).body as Body).jobInfo.spec as typeof spec;
  assert.deepEqual(v2.revision, { version: 2 });
  assert.equal(v2.instanceCount, 5);
});

Deno.test("GetJob with a version the job manager no longer holds reads it from the store", async () => {
  const rig = replacedJob();
  rig.job().versions.delete(1);
  const reply = await getJob(rig, { version: { value: "1-1-0" } });
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  const spec = (reply.body as Body).jobInfo.spec as { revision: unknown; instanceCount: number };
  assert.deepEqual(spec.revision, { version: 1 });
  assert.equal(spec.instanceCount, 3);
});

Deno.test("GetJob of a config version the job never had is NotFound, naming the version", async () => {
  const rig = replacedJob();
  const reply = await getJob(rig, { version: { value: "7-1-0" } });
  assert.equal(reply.body, undefined);
  assert.deepEqual(reply.error, {
    code: "not-found",
    message: `version: job ${JOB_ID} has no config version 7`,
  });
});

Deno.test("GetJob with a malformed version is InvalidArgument, as Peloton's 'entityVersion has wrong format'", async () => {
  const rig = replacedJob();
  const before = entityVersion(rig.job());
  const expected = 'expected an entity version "<configVersion>-<desiredStateVersion>-<workflowVersion>"' +
    " whose config version is an unsigned integer";
  for (
    const [version, got] of [
      [{ value: "abc" }, '"abc"'],
      [{ value: "1-2" }, '"1-2"'],
      [{ value: "x-1-0" }, '"x-1-0"'],
      [{ value: "-1-1-0" }, '"-1-1-0"'],
      [{ value: "" }, '""'],
      [{}, "{}"],
    ] as const
  ) {
    const reply = await getJob(rig, { version });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `version: entityVersion has wrong format: ${expected}, got ${got}`,
    }, JSON.stringify(version));
  }
  // An EntityVersion is a message: a bare value is refused, as protobuf's JSON decoding refuses it.
  for (
    const [version, message] of [
      ["2-9-9", 'version: got "2-9-9", expected an entity version as a message, {"value": "2-9-9"}'],
      [["2-9-9"], 'version: got ["2-9-9"], expected an entity version as {"value": ...}'],
      [5, 'version: got 5, expected an entity version as {"value": ...}'],
      [{ value: 2 }, "version.value: got 2, expected an entity version"],
    ] as const
  ) {
    const reply = await getJob(rig, { version });
    assert.deepEqual(reply.error, { code: "invalid-argument", message }, JSON.stringify(version));
  }
  assert.equal(entityVersion(rig.job()), before, "nothing changed");
  assert.equal(rig.store.unsettled, 0, "nothing written");

  // The version is checked before the job is looked up.
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: "no-such-job" }, version: { value: "bad" } });
  await rig.reads();
  assert.equal(rig.replies()[0].error?.code, "invalid-argument");
});

Deno.test("GetJob with summaryOnly and a version answers the summary, as Peloton looks at summaryOnly first", async () => {
  const rig = replacedJob();
  const reply = await getJob(rig, { summaryOnly: true, version: { value: "bad" } });
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  assert.deepEqual(Object.keys(reply.body as Body), ["summary"]);
});

Deno.test("GetJob without options still answers spec, status and workflow", async () => {
  const rig = replacedJob();
  const reply = await getJob(rig, { summaryOnly: false, version: null });
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  const body = reply.body as Body;
  assert.deepEqual(Object.keys(body.jobInfo), ["jobId", "spec", "status"]);
  assert.notEqual(body.workflowInfo, undefined);
});

Deno.test("GetJob's status counts the pods on each config version, keyed by pod entity version", async () => {
  // The replace added instances 3 and 4 at config version 2, and moved 0 to 2, whose pod spec it leaves as
  // it was, to version 2 too (Peloton's handleUnchangedInstancesInUpdate). Aborted, then a restart of pod 0
  // alone: pod 0 is to run version 3 (being stopped on 2), the others move to 3 unrestarted.
  const rig = replacedJob();
  let reply = await getJob(rig, {});
  let status = (reply.body as Body).jobInfo.status as { podStatsByConfigurationVersion: unknown };
  assert.deepEqual(status.podStatsByConfigurationVersion, {
    "2-0-0": { stateStats: { POD_STATE_RUNNING: 3, POD_STATE_PENDING: 2 } },
  });
  rig.call(STATELESS_SERVICE, "AbortJobWorkflow", {
    jobId: { value: JOB_ID },
    version: { value: entityVersion(rig.job()) },
  });
  assert.equal(rig.replies()[0].error, undefined);
  const version = { value: entityVersion(rig.job()) };
  rig.call(STATELESS_SERVICE, "RestartJob", {
    jobId: { value: JOB_ID },
    version,
    ranges: [{ from: 0, to: 1 }],
  });
  assert.equal(rig.replies()[0].error, undefined);
  rig.tick();
  reply = await getJob(rig, {});
  status = (reply.body as Body).jobInfo.status as { podStatsByConfigurationVersion: unknown };
  assert.deepEqual(status.podStatsByConfigurationVersion, {
    "2-0-0": { stateStats: { POD_STATE_KILLING: 1 } },
    "3-0-0": { stateStats: { POD_STATE_RUNNING: 2, POD_STATE_PENDING: 2 } },
  });
});
