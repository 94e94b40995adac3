/**
 * Request fields of the wrong shape are refused naming them, and change nothing: a create's job id, the
 * batch size of a restart, start or stop workflow, and the parts of a job, task or pod query.
 */
import assert from "node:assert/strict";
import { makeStatelessSpec } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { entityVersion, jobConfigJson } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { makeJobConfig } from "../testing/harness.ts";

type Body = Record<string, unknown>;

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const POD = "peloton.api.v1alpha.pod.svc.PodService";

/** Calls the job manager and answers the one reply, once store reads have settled. */
async function call(rig: JobmgrRig, service: string, method: string, body: Body) {
  rig.call(service, method, body);
  await rig.reads();
  const replies = rig.replies();
  assert.equal(replies.length, 1, `${method}: ${JSON.stringify(replies)}`);
  return replies[0];
}

Deno.test("CreateJob's job id must be a UUID, as v0 Create's: another is refused and nothing is stored", async () => {
  const rig = new JobmgrRig();
  const refused: [unknown, string | number][] = [
    [{ value: "bad-id" }, "bad-id"],
    [{ value: "../../x y" }, "../../x y"],
    [{ value: "a".repeat(300) }, "a".repeat(300)],
    [{ value: `${JOB_ID}-0` }, `${JOB_ID}-0`],
    [{ value: 5 }, 5],
  ];
  for (const [jobId, got] of refused) {
    const reply = await call(rig, STATELESS_SERVICE, "CreateJob", { jobId, spec: makeStatelessSpec(2) });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `jobId: got ${JSON.stringify(got)}, expected a UUID`,
    }, JSON.stringify(jobId));
    // v0's Create refuses the same ids with the same check, in its body's `invalidJobId` (job.proto's
    // InvalidJobId {id, message}), the id as sent, as Peloton's handler gives `req.Id` back.
    const v0 = await call(rig, JOB, "Create", { id: jobId, config: jobConfigJson(makeJobConfig()) });
    assert.deepEqual(
      v0.body,
      {
        error: {
          invalidJobId: {
            id: { value: typeof got === "string" ? got : JSON.stringify(got) },
            message: `id: got ${JSON.stringify(got)}, expected a UUID`,
          },
        },
      },
      JSON.stringify(jobId),
    );
  }
  // A job id is a message (peloton.JobID): a bare string, which protobuf's JSON decoding refuses, is too.
  const bare = `jobId: got "${JOB_ID}", expected a job id as a message, {"value": "${JOB_ID}"}`;
  const reply = await call(rig, STATELESS_SERVICE, "CreateJob", {
    jobId: JOB_ID,
    spec: makeStatelessSpec(2),
  });
  assert.deepEqual(reply.error, { code: "invalid-argument", message: bare });
  const v0 = await call(rig, JOB, "Create", { id: JOB_ID, config: jobConfigJson(makeJobConfig()) });
  assert.deepEqual(v0.body, {
    error: { invalidJobId: { id: { value: JOB_ID }, message: bare.replace(/^jobId/, "id") } },
  });
  assert.deepEqual(rig.transport.take("api", "resmgr"), [], "the pool is not even asked for");
  assert.equal(rig.jm.jobs.size, 0);
  rig.store.settle();
  assert.deepEqual(rig.store.batches, [], "nothing stored");

  // A UUID is taken; none (or an empty one, as Peloton's handlers) makes one.
  assert.equal(rig.createStateless({ spec: makeStatelessSpec(2) }).error, undefined);
  assert.ok(rig.jm.jobs.has(JOB_ID));
  rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: "" }, spec: makeStatelessSpec(2) });
  rig.answerPool();
  rig.store.settle();
  const made = (rig.replies()[0].body as { jobId: { value: string } }).jobId.value;
  assert.match(made, /^[0-9a-f]{8}-[0-9a-f]{4}-/);
  assert.notEqual(made, JOB_ID);
});

Deno.test("Create and CreateJob take a UUID in upper case and make the job in lower case, the id Get reads", async () => {
  const rig = new JobmgrRig();
  const upper = "ABCDEF00-0000-4000-8000-000000000001";
  const lower = upper.toLowerCase();
  rig.api("job", "Create", { id: { value: upper }, config: jobConfigJson(makeJobConfig()) });
  rig.answerPool();
  rig.store.settle();
  const [created] = rig.replies();
  assert.equal((created.body as Body).error, undefined, JSON.stringify(created.body));
  assert.deepEqual((created.body as Body).jobId, { value: lower });
  assert.ok(rig.jm.jobs.has(lower));
  const got = await call(rig, JOB, "Get", { id: { value: upper } });
  assert.deepEqual(((got.body as Body).jobInfo as Body).id, { value: lower }, "Get reads the id in any case");
  // Made again in lower case: the same job, which already exists.
  rig.api("job", "Create", { id: { value: lower }, config: jobConfigJson(makeJobConfig()) });
  rig.answerPool();
  rig.store.settle();
  assert.ok(((rig.replies()[0].body as Body).error as Body).alreadyExists);

  const upper2 = "ABCDEF00-0000-4000-8000-000000000002";
  const made = rig.createStateless({ jobId: { value: upper2 }, spec: makeStatelessSpec(2) });
  assert.equal(made.error, undefined, JSON.stringify(made.error));
  assert.deepEqual((made.body as Body).jobId, { value: upper2.toLowerCase() });
  assert.ok(rig.jm.jobs.has(upper2.toLowerCase()));
  const gotJob = await call(rig, STATELESS_SERVICE, "GetJob", { jobId: { value: upper2 } });
  assert.deepEqual(((gotJob.body as Body).jobInfo as Body).jobId, { value: upper2.toLowerCase() });
});

Deno.test("a restart, start or stop workflow's batch size of the wrong type is refused naming it, and nothing starts", async () => {
  const rig = runningService(3, { settled: true });
  const writes = rig.store.batches.length;
  const id = { value: JOB_ID };
  const refused: [string, string, Body, string][] = [
    [
      STATELESS_SERVICE,
      "RestartJob",
      { jobId: id, restartSpec: { batchSize: "abc" } },
      'restartSpec: batchSize: got "abc", expected a whole number (0 or more)',
    ],
    [
      STATELESS_SERVICE,
      "RestartJob",
      { jobId: id, restartSpec: { batchSize: 1, inPlace: "yes" } },
      'restartSpec: inPlace: got "yes", expected true or false',
    ],
    [
      STATELESS_SERVICE,
      "RestartJob",
      { jobId: id, restartSpec: "x" },
      'restartSpec: got "x", expected an object',
    ],
    [
      JOB,
      "Restart",
      { id, restartConfig: { batchSize: [] } },
      "restartConfig: batchSize: got an empty list, expected a whole number (0 or more)",
    ],
    [
      JOB,
      "Start",
      { id, startConfig: { batchSize: 1.5 } },
      "startConfig: batchSize: got 1.5, expected a whole number (0 or more)",
    ],
    [JOB, "Stop", { id, stopConfig: 2 }, "stopConfig: got 2, expected an object"],
    [
      JOB,
      "Restart",
      { id, batchSize: "abc" },
      'request: batchSize: got "abc", expected a whole number (0 or more)',
    ],
  ];
  for (const [service, method, body, message] of refused) {
    const reply = await call(rig, service, method, body);
    assert.deepEqual(reply.error, { code: "invalid-argument", message }, JSON.stringify(body));
  }
  const typo = await call(rig, JOB, "Restart", { id, restartConfig: { batchSise: 1 } });
  assert.match(typo.error!.message, /^restartConfig: batchSise: unknown key; did you mean batchSize\?/);
  rig.tick(60_000);
  assert.equal(rig.jm.updates.size, 0, "no workflow was started");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no task was touched");
  assert.equal(rig.store.batches.length, writes, "nothing written");

  // As text, as proto3 JSON may write it, a batch size is taken.
  const ok = await call(rig, STATELESS_SERVICE, "RestartJob", {
    jobId: id,
    version: { value: entityVersion(rig.job()) },
    restartSpec: { batchSize: "2" },
  });
  assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  assert.equal([...rig.jm.updates.values()][0].config.batchSize, 2);
});

Deno.test("a job query whose spec, pagination, labels or other fields are of the wrong type is refused naming them", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE" });
  const refused: [unknown, string][] = [
    ["x", 'spec: got "x", expected an object'],
    [{ labels: "x" }, 'spec.labels: got "x", expected a list of {key, value}'],
    [
      { labels: [{ value: "v" }] },
      'spec.labels[0]: got {"value":"v"}, expected {key, value} with a non-empty key',
    ],
    [{ pagination: "x" }, 'spec.pagination: got "x", expected an object'],
    [{ pagination: { orderBy: "name" } }, 'spec.pagination.orderBy: got "name", expected a list'],
    [{ jobStates: "RUNNING" }, 'spec.jobStates: got "RUNNING", expected a list'],
    [{ keywords: "web" }, 'spec.keywords: got "web", expected a list'],
    [{ creationTimeRange: "today" }, 'spec.creationTimeRange: got "today", expected an object'],
    [{ respool: 7 }, 'spec.respool: got 7, expected a resource pool path as {"value": ...}'],
    // A ResourcePoolPath is a message: a bare path is refused, as protobuf's JSON decoding refuses it.
    [
      { respool: "/a" },
      'spec.respool: got "/a", expected a resource pool path as a message, {"value": "/a"}',
    ],
    [{ respool: { value: 7 } }, "spec.respool.value: got 7, expected a resource pool path"],
  ];
  for (const method of ["Query", "QueryJobs"]) {
    for (const [spec, message] of refused) {
      const reply = await call(rig, method === "Query" ? JOB : STATELESS_SERVICE, method, { spec });
      assert.deepEqual(
        reply.error,
        { code: "invalid-argument", message },
        `${method} ${JSON.stringify(spec)}`,
      );
    }
  }
  // v0 QueryRequest's own `respoolID` is a ResourcePoolID message too.
  assert.deepEqual((await call(rig, JOB, "Query", { respoolID: "pool-a" })).error, {
    code: "invalid-argument",
    message: 'respoolID: got "pool-a", expected a resource pool id as a message, {"value": "pool-a"}',
  });
  assert.deepEqual(rig.transport.take("api", "resmgr"), [], "no pool was looked up");
  const all = await call(rig, JOB, "Query", { spec: { labels: [], pagination: {} } });
  assert.equal((all.body as { results: unknown[] }).results.length, 1, "empty ones are no filter");
});

Deno.test("QueryJobs takes v1alpha's JOB_STATE_ names or their numbers; another, v0's too, is refused naming it", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE" });
  const names = "JOB_STATE_INVALID, JOB_STATE_INITIALIZED, JOB_STATE_PENDING, JOB_STATE_RUNNING, " +
    "JOB_STATE_SUCCEEDED, JOB_STATE_FAILED, JOB_STATE_KILLED, JOB_STATE_KILLING, JOB_STATE_UNINITIALIZED, " +
    "JOB_STATE_DELETED";
  for (
    const [states, message] of [
      [
        ["RUNNING"],
        `spec.jobStates[0]: got "RUNNING", expected v1alpha job states (or their numbers): ${names}`,
      ],
      [
        ["JOB_STATE_PENDING", "JOB_STATE_RUNNIN"],
        `spec.jobStates[1]: got "JOB_STATE_RUNNIN", expected v1alpha job states (or their numbers): ${names}`,
      ],
      [
        ["UNKNOWN"],
        `spec.jobStates[0]: got "UNKNOWN", expected v1alpha job states (or their numbers): ${names}`,
      ],
      [[10], `spec.jobStates[0]: got 10, expected v1alpha job states (or their numbers): ${names}`],
    ] as const
  ) {
    const reply = await call(rig, STATELESS_SERVICE, "QueryJobs", { spec: { jobStates: states } });
    assert.deepEqual(reply.error, { code: "invalid-argument", message }, JSON.stringify(states));
  }
  const ids = async (jobStates: unknown[]) => {
    const reply = await call(rig, STATELESS_SERVICE, "QueryJobs", { spec: { jobStates } });
    assert.equal(reply.error, undefined, JSON.stringify(reply.error));
    return (reply.body as { records: { jobId: { value: string } }[] }).records.map((j) => j.jobId.value);
  };
  assert.deepEqual(await ids(["JOB_STATE_PENDING", "JOB_STATE_RUNNING"]), [JOB_ID]);
  assert.deepEqual(await ids([2]), [JOB_ID], "PENDING by its number");
  assert.deepEqual(await ids(["JOB_STATE_KILLED"]), []);
  // v0's Query takes v0's names, as before.
  const v0 = await call(rig, JOB, "Query", { spec: { jobStates: ["PENDING"] } });
  assert.equal((v0.body as { results: unknown[] }).results.length, 1);
});

Deno.test("a page bound past a uint32 is refused saying the bound, in every query and limit", async () => {
  // Peloton's PaginationSpec fields are uint32s: "expected a whole number" alone did not say why 1e20 is not.
  const rig = runningService(1, { settled: true });
  const UINT32 = "expected a whole number from 0 to 4294967295";
  const BIG = 1e20, BIG_TEXT = "100000000000000000000";
  const refused: [string, string, Body, string][] = [];
  for (const k of ["offset", "limit", "maxLimit"]) {
    refused.push([
      JOB,
      "Query",
      { spec: { pagination: { [k]: BIG } } },
      `spec.pagination.${k}: got ${BIG_TEXT}, ${UINT32}`,
    ]);
    refused.push([
      STATELESS_SERVICE,
      "QueryJobs",
      { spec: { pagination: { [k]: 2 ** 32 } } },
      `spec.pagination.${k}: got 4294967296, ${UINT32}`,
    ]);
  }
  for (const k of ["offset", "limit"]) {
    refused.push([
      TASK,
      "Query",
      { jobId: { value: JOB_ID }, spec: { pagination: { [k]: BIG } } },
      `spec.pagination.${k}: got ${BIG_TEXT}, ${UINT32}`,
    ]);
    refused.push([
      STATELESS_SERVICE,
      "QueryPods",
      { jobId: { value: JOB_ID }, pagination: { [k]: BIG } },
      `pagination.${k}: got ${BIG_TEXT}, ${UINT32}`,
    ]);
  }
  refused.push(
    [
      POD,
      "GetPod",
      { podName: { value: `${JOB_ID}-0` }, limit: BIG },
      `limit: got ${BIG_TEXT}, expected a whole number of runs from 0 to 4294967295 (1 for the current run alone, 0 for all)`,
    ],
    [
      TASK,
      "GetPodEvents",
      { jobId: { value: JOB_ID }, instanceId: 0, limit: BIG },
      `limit: got ${BIG_TEXT}, expected a whole number of runs from 0 to 9007199254740991 (0 for the default, 10)`,
    ],
    [
      TASK,
      "GetCache",
      { jobId: { value: JOB_ID }, instanceId: BIG },
      `instanceId: got ${BIG_TEXT}, ${UINT32}`,
    ],
  );
  for (const [service, method, body, message] of refused) {
    const reply = await call(rig, service, method, body);
    assert.deepEqual(reply.error, { code: "invalid-argument", message }, `${method} ${JSON.stringify(body)}`);
  }
  // The largest uint32 is a page bound like any other.
  const top = await call(rig, JOB, "Query", {
    spec: { pagination: { offset: 2 ** 32 - 1, limit: 2 ** 32 - 1 } },
  });
  assert.equal(top.error, undefined);
});

Deno.test("a task or pod query whose spec or pagination is of the wrong type is refused naming them", async () => {
  const rig = runningService(3, { settled: true });
  const refused: [string, string, Body, string][] = [
    [TASK, "Query", { spec: "x" }, 'spec: got "x", expected an object'],
    [TASK, "Query", { spec: { pagination: "x" } }, 'spec.pagination: got "x", expected an object'],
    [STATELESS_SERVICE, "QueryPods", { spec: "x" }, 'spec: got "x", expected an object'],
    [STATELESS_SERVICE, "QueryPods", { pagination: "x" }, 'pagination: got "x", expected an object'],
    [
      STATELESS_SERVICE,
      "QueryPods",
      { spec: { pagination: { limit: "ten" } } },
      'spec.pagination.limit: got "ten", expected a whole number from 0 to 4294967295',
    ],
    [
      STATELESS_SERVICE,
      "QueryPods",
      { pagination: { offset: -1 } },
      "pagination.offset: got -1, expected a whole number from 0 to 4294967295",
    ],
    [
      STATELESS_SERVICE,
      "QueryPods",
      { spec: { names: [5] } },
      'spec.names[0]: got 5, expected a pod name as {"value": ...}',
    ],
    // A PodName is a message: a bare name is refused, as protobuf's JSON decoding refuses it.
    [
      STATELESS_SERVICE,
      "QueryPods",
      { spec: { names: [{ value: `${JOB_ID}-0` }, `${JOB_ID}-1`] } },
      `spec.names[1]: got "${JOB_ID}-1", expected a pod name as a message, {"value": "${JOB_ID}-1"}`,
    ],
    [STATELESS_SERVICE, "QueryPods", { spec: { hosts: [1] } }, "spec.hosts[0]: got 1, expected a string"],
  ];
  for (const [service, method, body, message] of refused) {
    const reply = await call(rig, service, method, { jobId: { value: JOB_ID }, ...body });
    assert.deepEqual(reply.error, { code: "invalid-argument", message }, `${method} ${JSON.stringify(body)}`);
  }
  const pods = await call(rig, STATELESS_SERVICE, "QueryPods", {
    jobId: { value: JOB_ID },
    pagination: { offset: "1", limit: 1 },
  });
  assert.deepEqual((pods.body as Body).pagination, { offset: 1, limit: 1, total: 3 });
});
