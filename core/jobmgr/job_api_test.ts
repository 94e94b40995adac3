import assert from "node:assert/strict";
import { type JobState, TASK_STATES } from "../model/states.ts";
import { makeJobConfig, makeJobRecord } from "../testing/harness.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./job_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

const id = (instance: number, run = 1) => `${JOB_ID}-${instance}-${run}`;
/** A v0 `taskStats`: every task state named, 0 for those no task is in (Peloton's GetTaskStateSummaryForJob). */
const taskStats = (counts: Record<string, number>) => ({
  ...Object.fromEntries(Object.keys(TASK_STATES).map((s) => [s, 0])),
  ...counts,
});
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

Deno.test("a name, owner or owning team longer than the store indexes is rejected naming the field", () => {
  // A SQL store keeps these in columns of 512 and 255 characters; a longer one failed the write (and a
  // failed job manager write ends the process).
  const rig = new JobmgrRig();
  const cases: [string, Body, RegExp][] = [
    ["name", { name: "n".repeat(513) }, /name: .*expected text of at most 512 characters/],
    ["owner", { owner: "o".repeat(256) }, /owner: .*expected text of at most 255 characters/],
    ["owningTeam", { owningTeam: "t".repeat(256) }, /owningTeam: .*expected text of at most 255 characters/],
  ];
  for (const [field, over, message] of cases) {
    rig.api("job", "Create", { config: { ...jobConfigJson(makeJobConfig()), ...over } });
    assert.match(invalidConfig(body(rig))!, message, field);
  }
  assertNothingCreated(rig);
  rig.api("job", "Create", {
    config: { ...jobConfigJson(makeJobConfig()), name: "n".repeat(512), owningTeam: "t".repeat(255) },
  });
  assert.equal(
    rig.transport.takeOne("api", "resmgr").procedure,
    "peloton.api.respool.ResourceManager::GetResourcePool",
  );
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

Deno.test("a pool check the resource manager could not answer is that error, not a pool not found", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Create", { config: jobConfigJson(makeJobConfig()) });
  // What production answers for the resource manager when its call times out (a leader change).
  const ask = rig.transport.takeOne("api", "resmgr");
  const timedOut = "peloton.api.respool.ResourceManager::GetResourcePool timed out after 10000 ms";
  rig.jm.receive({ kind: "api-reply", reqId: ask.reqId, error: { code: "unavailable", message: timedOut } });
  const [r] = rig.replies();
  assert.deepEqual(r.error, {
    code: "unavailable",
    message: `config.respoolID: cannot check resource pool pool-a: ${timedOut}`,
  });
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
  assert.deepEqual(rt.taskStats, taskStats({ PENDING: 2 }), "every state, 0 included");
});

Deno.test("job Query pages in Peloton's shape: spec.pagination {offset, limit, maxLimit}, reply pagination {offset, limit, total}", async () => {
  const rig = new JobmgrRig();
  const ids = [0, 1, 2, 3, 4].map((n) => `11111111-2222-4333-8444-${String(n).padStart(12, "0")}`);
  for (const id of ids) {
    rig.create({}, id);
    rig.tick(1000);
  }
  const newest = ids.toReversed();
  const query = async (pagination?: unknown) => {
    rig.api("job", "Query", { spec: pagination === undefined ? {} : { pagination } });
    await reads();
    const b = body(rig);
    return {
      ids: (b.records as { id: { value: string } }[]).map((r) => r.id.value),
      pagination: b.pagination,
    };
  };
  assert.deepEqual(await query(), { ids: newest, pagination: { offset: 0, limit: 100, total: 5 } });
  assert.deepEqual(await query({ offset: 1, limit: 2 }), {
    ids: newest.slice(1, 3),
    pagination: { offset: 1, limit: 2, total: 5 },
  });
  assert.deepEqual((await query({ offset: 4, limit: 2 })).ids, newest.slice(4), "the last page");
  assert.deepEqual(await query({ offset: 5, limit: 2 }), {
    ids: [],
    pagination: { offset: 5, limit: 2, total: 5 },
  });
  // maxLimit caps the matches considered, as Peloton's store did: the page ends there, and so does the total.
  assert.deepEqual(await query({ offset: 2, limit: 2, maxLimit: 3 }), {
    ids: newest.slice(2, 3),
    pagination: { offset: 2, limit: 2, total: 3 },
  });
  assert.deepEqual((await query({ offset: "3", limit: "1" })).ids, newest.slice(3, 4), "proto3 JSON strings");
  assert.deepEqual((await query({ limit: 0 })).pagination, { offset: 0, limit: 100, total: 5 }, "0: default");

  for (const bad of [{ limit: -1 }, { offset: 1.5 }, { maxLimit: "ten" }]) {
    rig.api("job", "Query", { spec: { pagination: bad } });
    await reads();
    const [r] = rig.replies();
    const [[k, v]] = Object.entries(bad);
    assert.equal(r.error?.code, "invalid-argument");
    assert.equal(
      r.error?.message,
      `spec.pagination.${k}: got ${JSON.stringify(v)}, expected a whole number from 0 to 4294967295`,
    );
  }
});

/**
 * Finished jobs as the store holds them (the job manager holds none of them), for queries to order: ids
 * 0-3, with ties in creation time, completion time and owning team, and two jobs not completed.
 */
function storedJobs(rig: JobmgrRig): string[] {
  const ids = [0, 1, 2, 3].map((n) => `22222222-2222-4333-8444-${String(n).padStart(12, "0")}`);
  const rows: [number, number | undefined, string, string, JobState][] = [
    [20, 90, "beta", "ops", "SUCCEEDED"],
    [10, undefined, "alpha", "ml", "RUNNING"],
    [20, undefined, "gamma", "ops", "KILLING"],
    [30, 90, "Delta", "ads", "FAILED"],
  ];
  rig.store.write(rows.map(([creationTimeMs, completionTimeMs, name, owningTeam, state], n) => ({
    kind: "job.put",
    job: makeJobRecord(ids[n], { name, owningTeam, description: "stored" }, {
      state,
      creationTimeMs,
      completionTimeMs,
    }),
  })));
  rig.store.settle();
  return ids;
}

Deno.test("job Query orders by spec.pagination.orderBy: Peloton's properties, ASC or DESC, then job id", async () => {
  const rig = new JobmgrRig();
  const ids = storedJobs(rig);
  const query = async (spec: Body) => {
    rig.api("job", "Query", { spec, summaryOnly: true });
    await reads();
    return (body(rig).results as { id: { value: string } }[]).map((r) => ids.indexOf(r.id.value));
  };
  const by = (property: string, order?: unknown) => ({
    pagination: { orderBy: [{ property: { value: property }, ...(order === undefined ? {} : { order }) }] },
  });
  assert.deepEqual(await query({}), [3, 2, 0, 1], "none: newest first, ties by job id descending");
  assert.deepEqual(await query(by("creation_time")), [1, 0, 2, 3], "no order is ASC; ties by job id");
  assert.deepEqual(await query(by("creation_time", "DESC")), [3, 2, 0, 1]);
  // Jobs not completed come after the others ascending, before them descending.
  assert.deepEqual(await query(by("completion_time", "ASC")), [0, 3, 1, 2]);
  assert.deepEqual(await query(by("completion_time", 2)), [2, 1, 3, 0], "2 is DESC");
  assert.deepEqual(await query(by("name", 1)), [3, 1, 0, 2], "by code point: upper case first");
  assert.deepEqual(await query(by("name", "DESC")), [2, 0, 1, 3]);
  // The owner is the owning team, which QuerySpec.owner matches.
  assert.deepEqual(await query(by("owner", "ASC")), [3, 1, 0, 2]);
  assert.deepEqual(await query(by("owner", "DESC")), [2, 0, 1, 3]);
  // By Peloton's job state numbers (RUNNING 3, SUCCEEDED 4, FAILED 5, KILLING 7), not their names.
  assert.deepEqual(await query(by("state")), [1, 0, 3, 2]);
  assert.deepEqual(await query(by("state", "DESC")), [2, 3, 0, 1]);
  const twoKeys = {
    pagination: {
      orderBy: [
        { order: "ASC", property: { value: "owner" } },
        { order: "DESC", property: { value: "completion_time" } },
      ],
    },
  };
  assert.deepEqual(await query(twoKeys), [3, 1, 2, 0], "each key in turn");
  const paged = (offset: number) => ({ pagination: { ...by("name").pagination, offset, limit: 2 } });
  assert.deepEqual([await query(paged(0)), await query(paged(2))], [[3, 1], [0, 2]], "pages in that order");
  // Keywords are matched here, after the store's read: the order and the page are the same.
  const keyword = (offset: number) => ({ keywords: ["STORED"], ...paged(offset) });
  assert.deepEqual([await query(keyword(0)), await query(keyword(2))], [[3, 1], [0, 2]]);
  const ended = { completionTimeRange: { min: "1970-01-01T00:00:00Z" }, ...by("name", "DESC") };
  assert.deepEqual(await query(ended), [0, 3], "a time range too");

  for (
    const [orderBy, message] of [
      [
        [{ property: { value: "creation_time" } }, { order: "DESC", property: { value: "instanceId" } }],
        'spec.pagination.orderBy[1].property.value: got "instanceId", expected one of creation_time, ' +
        "completion_time, name, owner, state",
      ],
      [
        [{ order: "DESC" }],
        "spec.pagination.orderBy[0].property.value: got null, expected one of " +
        "creation_time, completion_time, name, owner, state",
      ],
      [
        [{ order: "UP", property: { value: "name" } }],
        'spec.pagination.orderBy[0].order: got "UP", expected ASC or DESC',
      ],
      ["name", 'spec.pagination.orderBy: got "name", expected a list'],
    ] as const
  ) {
    rig.api("job", "Query", { spec: { pagination: { orderBy } } });
    await reads();
    assert.deepEqual(rig.replies()[0].error, { code: "invalid-argument", message });
  }
});

Deno.test("job Query and QueryJobs echo the QuerySpec they read: its proto fields as read, nothing else", async () => {
  // Peloton echoes the QuerySpec it decoded; a field it does not know was never in it.
  const rig = new JobmgrRig();
  rig.create();
  const sent = {
    owner: "team",
    name: "",
    frobnicate: true,
    jobStates: [3, "SUCCEEDED"],
    labels: [{ key: "k" }],
    pagination: { offset: "0", limit: "5", orderBy: [{ order: 2, property: { value: "name" } }], extra: 1 },
    creationTimeRange: { min: "1970-01-01T00:00:00Z", other: "x" },
  };
  rig.api("job", "Query", { spec: sent, respoolID: { value: "pool-a" } });
  await reads();
  assert.deepEqual(body(rig).spec, {
    owner: "team",
    name: "",
    jobStates: ["RUNNING", "SUCCEEDED"],
    labels: [{ key: "k", value: "" }],
    pagination: { offset: 0, limit: 5, orderBy: [{ order: "DESC", property: { value: "name" } }] },
    creationTimeRange: { min: "1970-01-01T00:00:00Z" },
  });
  rig.call(STATELESS_SERVICE, "QueryJobs", {
    spec: { keywords: ["web"], jobStates: ["JOB_STATE_RUNNING"], bogus: 1 },
  });
  await reads();
  assert.deepEqual(body(rig).spec, { keywords: ["web"], jobStates: ["JOB_STATE_RUNNING"] });
});

Deno.test("job Query answers job summaries in results, and omits the full configs with summaryOnly", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  const query = async (extra: Body) => {
    rig.api("job", "Query", { spec: { owner: "team" }, ...extra });
    await reads();
    return body(rig);
  };
  const full = await query({});
  const [summary] = full.results as Body[];
  assert.deepEqual(
    Object.keys(summary).sort(),
    ["id", "instanceCount", "labels", "name", "owner", "owningTeam", "respoolID", "runtime", "sla", "type"],
  );
  assert.deepEqual([summary.id, summary.instanceCount, summary.respoolID, summary.type], [
    { value: JOB_ID },
    2,
    { value: "pool-a" },
    "BATCH",
  ]);
  const runtime = summary.runtime as Body;
  assert.deepEqual([runtime.state, runtime.taskStats], ["PENDING", taskStats({ PENDING: 2 })]);
  assert.equal((summary as Body).defaultConfig, undefined, "no task config in a summary");
  assert.deepEqual(
    (full.records as Body[]).map((r) => r.id),
    [{ value: JOB_ID }],
    "records without summaryOnly",
  );
  assert.deepEqual(full.spec, { owner: "team" }, "the spec is echoed, as Peloton does");

  const summaryOnly = await query({ summaryOnly: true });
  assert.equal(summaryOnly.records, undefined);
  assert.deepEqual(summaryOnly.results, full.results);
  assert.deepEqual(summaryOnly.pagination, { offset: 0, limit: 100, total: 1 });
});

Deno.test("job Get, task List, Get and BrowseSandbox of an unknown job answer Peloton's in-body notFound", async () => {
  const rig = new JobmgrRig();
  const notFound = { id: { value: JOB_ID }, message: `job ${JOB_ID} not found` };
  rig.api("job", "Get", { id: { value: JOB_ID } });
  await reads();
  assert.deepEqual(body(rig), { error: { notFound } });
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  await reads();
  assert.deepEqual(body(rig), { notFound }, "ListResponse.notFound");
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  await reads();
  assert.deepEqual(body(rig), { notFound }, "GetResponse.notFound");
  rig.api("task", "BrowseSandbox", { jobId: { value: JOB_ID }, instanceId: 0 });
  await reads();
  assert.deepEqual(body(rig), { error: { notFound } }, "BrowseSandboxResponse.error.notFound");
});

Deno.test("task Stop, Start and Restart of an unknown job answer Peloton's in-body notFound; JobManager's are errors", async () => {
  const rig = new JobmgrRig();
  const notFound = { id: { value: JOB_ID }, message: `job ${JOB_ID} not found` };
  const answers: [string, Body][] = [
    ["Stop", { error: { notFound } }],
    ["Start", { error: { notFound } }],
    ["Restart", { notFound }],
  ];
  for (const [method, answer] of answers) {
    rig.api("task", method, { jobId: { value: JOB_ID } });
    await reads();
    assert.deepEqual(body(rig), answer, `task ${method}`);
  }
  for (const method of ["Stop", "Start", "Restart"]) {
    rig.api("job", method, { id: { value: JOB_ID } });
    await reads();
    const [r] = rig.replies();
    assert.deepEqual(r.error, { code: "not-found", message: `job ${JOB_ID} not found` }, `job ${method}`);
  }
});

Deno.test("task List maps instance ids to task infos with their runtime", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([1]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  // Instance 0 is PENDING: the resource manager is asked why.
  rig.answerWaits();
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

Deno.test("task Get answers Peloton's GetResponse: result the current run, results every run, current first", () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0]);
  rig.status(id(0), "TASK_FAILED");
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  rig.answerWaits();
  const got = body(rig);
  assert.ok(!Array.isArray(got.result), "result is one TaskInfo");
  assert.equal(((got.result as Body).runtime as Body).state, "PENDING");
  assert.deepEqual(((got.result as Body).runtime as Body).mesosTaskId, { value: id(0, 2) });
  const runs = got.results as Body[];
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

Deno.test("task BrowseSandbox finds an earlier run's sandbox by its task id, from the task's history", () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0], "h1");
  rig.status(id(0), "TASK_FAILED");
  rig.launch([0], "h2");
  const sandbox = (taskId?: string) => {
    rig.api("task", "BrowseSandbox", { jobId: { value: JOB_ID }, instanceId: 0, taskId });
    return rig.replies()[0];
  };
  assert.deepEqual(sandbox().body, {
    hostname: "h2",
    agentId: { value: "agent-h2" },
    taskId: { value: id(0, 2) },
    paths: ["stdout", "stderr"],
  });
  assert.deepEqual(sandbox(id(0, 1)).body, {
    hostname: "h1",
    agentId: { value: "agent-h1" },
    taskId: { value: id(0, 1) },
    paths: ["stdout", "stderr"],
  });
  // A run the task never had is Peloton's in-body outOfRange, not an RPC error.
  assert.deepEqual(sandbox(id(0, 7)).body, {
    error: {
      outOfRange: {
        jobId: { value: JOB_ID },
        instanceCount: 1,
        message: `task ${JOB_ID}-0 has no run 7; its runs: 1, 2`,
      },
    },
  });
  assert.deepEqual(sandbox(id(1, 1)).error, {
    code: "invalid-argument",
    message: `taskId: got "${id(1, 1)}", expected a run of ${JOB_ID}-0: ${JOB_ID}-0-RUN`,
  });
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const runs = body(rig).results as Body[];
  assert.deepEqual(runs.map((r) => ((r.runtime as Body).agentID as Body).value), ["agent-h2", "agent-h1"]);
});

Deno.test("task BrowseSandbox answers an instance or run it cannot find, and a task never launched, in the body", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0], "h1");
  const sandbox = (instanceId: number, taskId?: string) => {
    rig.api("task", "BrowseSandbox", { jobId: { value: JOB_ID }, instanceId, taskId });
    const [reply] = rig.replies();
    assert.equal(reply.error, undefined, "answered 200, as Peloton's getSandboxPathInfo does");
    return reply.body;
  };
  // Peloton's BrowseSandboxResponse.error.outOfRange {jobId, instanceCount}, with a message saying which.
  assert.deepEqual(sandbox(5), {
    error: {
      outOfRange: {
        jobId: { value: JOB_ID },
        instanceCount: 2,
        message: `instance 5 is out of range: job ${JOB_ID} has 2 instances`,
      },
    },
  });
  assert.deepEqual(sandbox(0, id(0, 3)), {
    error: {
      outOfRange: {
        jobId: { value: JOB_ID },
        instanceCount: 2,
        message: `task ${JOB_ID}-0 has no run 3; its runs: 1`,
      },
    },
  });
  // Never placed on a host: its error.notRunning.
  assert.deepEqual(sandbox(1), {
    error: { notRunning: { message: `task ${JOB_ID}-1 has not been launched on any host` } },
  });
  assert.deepEqual(sandbox(1, id(1, 1)), {
    error: { notRunning: { message: `task ${id(1, 1)} has not been launched on any host` } },
  });
  assert.equal((sandbox(0) as { hostname: string }).hostname, "h1");
});

Deno.test("task BrowseSandbox of a task whose current run is not launched yet names its latest launched run", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0], "agent-2");
  rig.status(id(0, 1), "TASK_RUNNING", { hostname: "agent-2" });
  // Run 1 is lost (its host went into maintenance, say); run 2 waits for a host.
  rig.status(id(0, 1), "TASK_LOST", { hostname: "agent-2", reason: "REASON_RECONCILIATION" });
  assert.equal(rig.task(0).runId, 2);
  const sandbox = (taskId?: string) => {
    rig.api("task", "BrowseSandbox", { jobId: { value: JOB_ID }, instanceId: 0, taskId });
    return rig.replies()[0].body;
  };
  assert.deepEqual(sandbox(), {
    error: {
      notRunning: {
        message: `task ${JOB_ID}-0: its current run ${id(0, 2)} has not been launched yet; its latest ` +
          `launched run is ${id(0, 1)}, on agent-2 (taskId ${id(0, 1)} browses its sandbox)`,
      },
    },
  });
  // Asked for, that run's sandbox is there; the current run's, named, is not.
  assert.equal((sandbox(id(0, 1)) as { hostname: string }).hostname, "agent-2");
  assert.deepEqual(sandbox(id(0, 2)), {
    error: { notRunning: { message: `task ${id(0, 2)} has not been launched on any host` } },
  });
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

/** A batch task that failed `failures` times, each run on its own host, and is now in run failures+1. */
function failedRuns(failures: number): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: failures + 1 } } });
  for (let run = 1; run <= failures; run++) {
    rig.launch([0], `h${run}`);
    rig.status(id(0, run), "TASK_FAILED", { hostname: `h${run}` });
  }
  return rig;
}

/** GetPodEvents of instance 0 with `extra` fields: each run its events belong to, in order, deduplicated. */
async function eventRuns(rig: JobmgrRig, extra: Body = {}): Promise<number[]> {
  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0, ...extra });
  await reads();
  const runs = (body(rig).result as Body[]).map((e) =>
    Number(((e.taskId as Body).value as string).split("-").at(-1))
  );
  return runs.filter((r, i) => runs[i - 1] !== r);
}

Deno.test("task GetPodEvents walks back from the latest run, 10 runs unless limit says otherwise, as Peloton's", async () => {
  const rig = failedRuns(11);
  assert.equal(rig.task(0).runId, 12);
  assert.deepEqual(await eventRuns(rig), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3], "Peloton's default limit, 10");
  assert.deepEqual(await eventRuns(rig, { limit: 0 }), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3], "0 is the default");
  assert.deepEqual(await eventRuns(rig, { limit: 3 }), [12, 11, 10]);
  // proto3 JSON writes a uint64 as a string.
  assert.deepEqual(await eventRuns(rig, { limit: "2" }), [12, 11]);
  assert.deepEqual(
    await eventRuns(rig, { limit: 50 }),
    [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1],
    "ends at run 1",
  );
  // Every event of a run, newest first, runs one after another.
  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0, limit: 2 });
  await reads();
  const events = body(rig).result as Body[];
  assert.deepEqual(events.map((e) => [(e.taskId as Body).value, e.actualState]), [
    [id(0, 12), "PENDING"],
    [id(0, 12), "INITIALIZED"],
    [id(0, 11), "FAILED"],
    [id(0, 11), "LAUNCHING"],
    [id(0, 11), "PENDING"],
    [id(0, 11), "INITIALIZED"],
  ]);
});

Deno.test("task GetPodEvents with runId answers that run's events alone, whatever the limit", async () => {
  const rig = failedRuns(3);
  assert.deepEqual(await eventRuns(rig, { runId: id(0, 2) }), [2]);
  assert.deepEqual(await eventRuns(rig, { runId: id(0, 2), limit: 5 }), [2], "a run named is 1 run");
  assert.deepEqual(await eventRuns(rig, { runId: id(0, 9) }), [], "a run it never had has no events");
  assert.deepEqual(await eventRuns(rig, { runId: "" }), [4, 3, 2, 1], "empty is no run named");
  // After DeletePodEvents of runs 1 and 2, the walk back ends at run 3, as Peloton's chain of runs does.
  rig.api("task", "DeletePodEvents", { jobId: { value: JOB_ID }, instanceId: 0, runId: 2 });
  rig.store.settle();
  rig.replies();
  assert.deepEqual(await eventRuns(rig), [4, 3]);
  assert.deepEqual(await eventRuns(rig, { runId: id(0, 1) }), []);
});

Deno.test("task GetPodEvents refuses a bad limit, runId or instanceId, naming the field and what it takes", async () => {
  const rig = failedRuns(1);
  rig.store.settle();
  const writes = rig.store.batches.length;
  const RUNS = "a whole number of runs from 0 to 9007199254740991 (0 for the default, 10)";
  const refused: [Body, string][] = [
    [{ limit: -1 }, `limit: got -1, expected ${RUNS}`],
    [{ limit: 1.5 }, `limit: got 1.5, expected ${RUNS}`],
    [{ limit: "ten" }, `limit: got "ten", expected ${RUNS}`],
    ...[
      "2",
      `${JOB_ID}-0`,
      `${JOB_ID}-0-x`,
      `${JOB_ID}-1-2`,
      `99999999-2222-4333-8444-555555555555-0-1`,
    ].map((runId): [Body, string] => [
      { runId },
      `runId: got "${runId}", expected a run of ${JOB_ID}-0: ${JOB_ID}-0-RUN`,
    ]),
    [{ runId: 2 }, `runId: got 2, expected a run of ${JOB_ID}-0: ${JOB_ID}-0-RUN`],
    [{ instanceId: "zero" }, `instanceId: got "zero", expected a whole number from 0 to 4294967295`],
    [{ instanceId: -1 }, `instanceId: got -1, expected a whole number from 0 to 4294967295`],
  ];
  for (const [extra, message] of refused) {
    rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0, ...extra });
    await reads();
    const [r] = rig.replies();
    assert.deepEqual(r.error, { code: "invalid-argument", message }, JSON.stringify(extra));
  }
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.deepEqual(await eventRuns(rig), [2, 1], "and nothing changed");
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

Deno.test("task Stop, Start and Restart of instances out of range answer Peloton's outOfRange, naming them, and do nothing", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 10 });
  rig.store.settle();
  const writes = rig.store.batches.length;
  const before = JSON.stringify([...rig.job().tasks.values()]);
  const outOfRange = (message: string) => ({
    jobId: { value: JOB_ID },
    instanceCount: 10,
    message: `${message} out of range: job ${JOB_ID} has 10 instances`,
  });
  const cases: [string, unknown[], string][] = [
    ["Stop", [{ from: 20, to: 30 }], "instances 20-29 are"],
    ["Stop", [{ from: 5, to: 15 }], "instances 10-14 are"],
    ["Start", [{ from: 0, to: 2 }, { from: 10, to: 11 }], "instance 10 is"],
    ["Stop", [{ from: 12 }], "instances from 12 are"],
  ];
  for (const [method, ranges, message] of cases) {
    rig.api("task", method, { jobId: { value: JOB_ID }, ranges });
    assert.deepEqual(
      body(rig),
      { error: { outOfRange: outOfRange(message) } },
      `${method} ${JSON.stringify(ranges)}`,
    );
  }
  rig.api("task", "Restart", { jobId: { value: JOB_ID }, ranges: [{ from: 9, to: 11 }] });
  assert.deepEqual(
    body(rig),
    { outOfRange: outOfRange("instance 10 is") },
    "Restart's own field, as Peloton's",
  );
  rig.tick(1000);
  assert.equal(JSON.stringify([...rig.job().tasks.values()]), before, "no task changed");
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.deepEqual(rig.transport.take("drop-tasks"), []);
  assert.equal(rig.job().runtime.goalState, "RUNNING");

  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 8, to: 10 }] });
  assert.deepEqual(body(rig).stoppedInstanceIds, [8, 9], "the last instances are in range");
});

Deno.test("an unknown procedure is unimplemented", () => {
  const rig = new JobmgrRig();
  rig.api("job", "Frobnicate", {});
  assert.equal(rig.replies()[0].error?.code, "unimplemented");
});

Deno.test("job Query's spec.respool is a pool path: the jobs of the pool there; respoolID stays an id", async () => {
  const rig = new JobmgrRig();
  const other = "33333333-2222-4333-8444-555555555555";
  rig.create({ name: "hello" });
  rig.create({ name: "elsewhere", respoolId: "pool-b" }, other);
  /** Runs a Query, answering the pool lookup it makes (with `pools`, path → id) if it makes one. */
  const query = async (request: Body, pools: Record<string, string> = {}) => {
    rig.api("job", "Query", { summaryOnly: true, ...request });
    const [lookup] = rig.transport.take("api", "resmgr");
    if (lookup) {
      const path = ((lookup.body as Body).path as Body).value as string;
      assert.equal(lookup.procedure, "peloton.api.respool.ResourceManager::LookupResourcePoolID");
      const reply = pools[path]
        ? { id: { value: pools[path] } }
        : path.includes("//")
        ? { error: { invalidPath: { message: `path.value: got "${path}", expected a pool path` } } }
        : { error: { notFound: { path: { value: path }, message: `resource pool ${path} not found` } } };
      rig.jm.receive({ kind: "api-reply", reqId: lookup.reqId, body: reply });
    }
    await reads();
    const [r] = rig.replies();
    if (r.error) return r.error;
    const b = r.body as { results: { name: string }[]; pagination: { total: number } };
    return { names: b.results.map((j) => j.name), total: b.pagination.total, looked: lookup !== undefined };
  };
  const pools = { "/HelloWorldPool": "pool-a" };
  assert.deepEqual(await query({ spec: { respool: { value: "/HelloWorldPool" } } }, pools), {
    names: ["hello"],
    total: 1,
    looked: true,
  });
  assert.deepEqual(
    await query({ spec: { respool: { value: "/NoSuchPool" } } }),
    { names: [], total: 0, looked: true },
    "an unknown path matches no job, as an unknown pool id does",
  );
  assert.deepEqual(await query({ respoolID: { value: "no-such-id" } }), {
    names: [],
    total: 0,
    looked: false,
  });
  assert.deepEqual(await query({ respoolID: { value: "pool-b" } }), {
    names: ["elsewhere"],
    total: 1,
    looked: false,
  });
  assert.deepEqual(
    await query({ spec: { respool: { value: "pool-b" } } }),
    { names: ["elsewhere"], total: 1, looked: false },
    "a value that is no path is a pool id, as this project's CLI sends it",
  );
  const bad = await query({ spec: { respool: { value: "/a//b" } } }) as { code: string; message: string };
  assert.deepEqual([bad.code, bad.message.startsWith("spec.respool: ")], ["invalid-argument", true]);
});

Deno.test("Create's invalidConfig names the job id, as job.proto's InvalidJobConfig {id, message}: asked for or made", () => {
  const rig = new JobmgrRig();
  const bad = jobConfigJson(makeJobConfig({ instanceCount: 0 }));
  rig.api("job", "Create", { id: { value: JOB_ID }, config: bad });
  const asked = (body(rig).error as Body).invalidConfig as Body;
  assert.deepEqual(asked.id, { value: JOB_ID });
  assert.match(asked.message as string, /instanceCount/);
  rig.api("job", "Create", { config: bad });
  const made = (body(rig).error as Body).invalidConfig as Body;
  assert.match(
    (made.id as Body).value as string,
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  );
  // A pool refused after asking the resource manager is an invalid config too, of the same id.
  rig.api("job", "Create", { id: { value: JOB_ID }, config: jobConfigJson(makeJobConfig()) });
  rig.answerPoolMissing();
  assert.deepEqual(((body(rig).error as Body).invalidConfig as Body).id, { value: JOB_ID });
  // Peloton reads the id before the config: a malformed id is invalidJobId whatever the config.
  rig.api("job", "Create", { id: { value: "not-a-uuid" }, config: bad });
  assert.ok((body(rig).error as Body).invalidJobId);
  assertNothingCreated(rig);
});

Deno.test("Query's records leave instanceConfig out of their config, as job.proto's QueryResponse says; Get keeps it", async () => {
  const rig = new JobmgrRig();
  const config = makeJobConfig({ instanceCount: 2 });
  config.instanceConfig = { 1: { ...config.defaultConfig, name: "special" } };
  rig.api("job", "Create", { id: { value: JOB_ID }, config: jobConfigJson(config) });
  rig.answerPool();
  rig.store.settle();
  rig.tick();
  assert.equal(body(rig).error as Body | undefined, undefined);
  rig.api("job", "Get", { id: { value: JOB_ID } });
  const got = (body(rig).jobInfo as Body).config as Body;
  assert.equal(((got.instanceConfig as Body)["1"] as Body).name, "special");
  rig.api("job", "Query", { spec: {} });
  await rig.reads();
  const [record] = body(rig).records as Body[];
  assert.equal((record.config as Body).instanceCount, 2);
  assert.equal("instanceConfig" in (record.config as Body), false, JSON.stringify(record.config));
});
