import assert from "node:assert/strict";
import type { TaskConfig } from "../model/config_types.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

const run = (instance: number, r = 1) => `${JOB_ID}-${instance}-${r}`;

function ok(rig: JobmgrRig): Body {
  const [r] = rig.replies();
  assert.ok(r, "expected a reply");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

function error(rig: JobmgrRig): { code: string; message: string } {
  const [r] = rig.replies();
  assert.ok(r?.error, `expected an error, got ${JSON.stringify(r?.body)}`);
  return r.error as { code: string; message: string };
}

/**
 * A job of six: 0 and 1 RUNNING on h2 (1 started first), 2 RUNNING on h1, 3 LAUNCHING on h1, 4 and 5
 * PENDING. Instances 1 and 4 are named "b", the rest "a".
 */
function sixTasks(): JobmgrRig {
  const rig = new JobmgrRig();
  const named = { name: "b" } as TaskConfig;
  rig.create({ instanceCount: 6, task: { name: "a" }, instanceConfig: { 1: named, 4: named } });
  rig.launch([0, 1], "h2");
  rig.launch([2, 3], "h1");
  rig.status(run(1), "TASK_RUNNING", { hostname: "h2" });
  rig.tick(1000);
  rig.status(run(2), "TASK_RUNNING", { hostname: "h1" });
  rig.tick(1000);
  rig.status(run(0), "TASK_RUNNING", { hostname: "h2" });
  return rig;
}

/** Answers the resource manager's GetAdmissionWaits calls, if any: a page with PENDING tasks asks. */
function answerAnyWaits(rig: JobmgrRig): void {
  for (const req of rig.transport.take("api", "resmgr")) {
    const waits = {
      path: "/pool-a",
      limit: { cpu: 1000, memory: 1e9, disk: 1e9, gpu: 1000 },
      preemption: true,
    };
    rig.jm.receive({ kind: "api-reply", reqId: req.reqId, body: { waits: { ...waits, queues: {} } } });
  }
}

/** task Query's records as [instance, state] pairs, and the reply's pagination. */
async function query(rig: JobmgrRig, spec: Body): Promise<{ got: [number, string][]; pagination: Body }> {
  rig.api("task", "Query", { jobId: { value: JOB_ID }, spec });
  answerAnyWaits(rig);
  await rig.reads();
  const b = ok(rig);
  const records = (b.records ?? []) as Body[];
  return {
    got: records.map((r) => [r.instanceId as number, (r.runtime as Body).state as string]),
    pagination: b.pagination as Body,
  };
}

const by = (property: string, order?: string | number) => ({ property: { value: property }, order });

Deno.test("task Query filters by states, names and hosts, each list when given, with the total matched", async () => {
  const rig = sixTasks();
  const running = await query(rig, { taskStates: ["RUNNING"] });
  assert.deepEqual(running.got, [[0, "RUNNING"], [1, "RUNNING"], [2, "RUNNING"]]);
  assert.deepEqual(running.pagination, { offset: 0, limit: 0, total: 3 });
  // States by number too (v0 wire numbers: PENDING is 2).
  assert.deepEqual((await query(rig, { taskStates: [2] })).got, [[4, "PENDING"], [5, "PENDING"]]);
  assert.deepEqual((await query(rig, { hosts: ["h1"] })).got, [[2, "RUNNING"], [3, "LAUNCHING"]]);
  // Names are task config names, as Peloton's store matches them.
  assert.deepEqual((await query(rig, { names: ["b"] })).got, [[1, "RUNNING"], [4, "PENDING"]]);
  assert.deepEqual((await query(rig, { names: ["b"], taskStates: ["PENDING"] })).got, [[4, "PENDING"]]);
  assert.deepEqual((await query(rig, { hosts: ["h3"] })).got, []);
});

Deno.test("task Query pages: 10 by default as Peloton's store, an offset, and the limit asked repeated", async () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 12 });
  const all = await query(rig, {});
  assert.deepEqual(all.got.map(([i]) => i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(all.pagination, { offset: 0, limit: 0, total: 12 });
  const page = await query(rig, { pagination: { offset: "5", limit: 4 } });
  assert.deepEqual(page.got.map(([i]) => i), [5, 6, 7, 8]);
  assert.deepEqual(page.pagination, { offset: 5, limit: 4, total: 12 });
  assert.deepEqual((await query(rig, { pagination: { offset: 12 } })).got, []);
});

Deno.test("task Query orders by Peloton's properties, each in its own order, then instance id", async () => {
  const rig = sixTasks();
  const order = async (...orderBy: Body[]) =>
    (await query(rig, { pagination: { orderBy } })).got.map(([i]) => i);
  // State numbers: LAUNCHING 6 < RUNNING 8; PENDING 2 first.
  assert.deepEqual(await order(by("state")), [4, 5, 3, 0, 1, 2]);
  assert.deepEqual(await order(by("state", "DESC")), [0, 1, 2, 3, 4, 5], "ties stay by instance id");
  // Hosts: tasks with none (PENDING) sort first ascending, as the empty string.
  assert.deepEqual(await order(by("host")), [4, 5, 2, 3, 0, 1]);
  assert.deepEqual(await order(by("host", 2), by("state", "ASC")), [0, 1, 3, 2, 4, 5]);
  assert.deepEqual(await order(by("name", "DESC")), [1, 4, 0, 2, 3, 5]);
  assert.deepEqual(await order(by("instanceId", "DESC")), [5, 4, 3, 2, 1, 0]);
  // creation_time is the run's start: unstarted tasks after the started ones ascending, before them
  // descending (Peloton's Less); among started ones, by start.
  assert.deepEqual(await order(by("creation_time")), [1, 2, 0, 3, 4, 5]);
  assert.deepEqual(await order(by("creation_time", "DESC")), [3, 4, 5, 0, 2, 1]);
});

Deno.test("task Query refuses a bad spec naming the field, and of an unknown job answers in-body notFound", async () => {
  const rig = sixTasks();
  const refused: [Body, RegExp][] = [
    [
      { pagination: { orderBy: [by("cpu")] } },
      /spec\.pagination\.orderBy\[0\]\.property\.value: got "cpu", expected one of creation_time, host/,
    ],
    [
      { pagination: { orderBy: [by("state", "UP")] } },
      /spec\.pagination\.orderBy\[0\]\.order: got "UP", expected ASC or DESC/,
    ],
    [{ pagination: { orderBy: by("state") } }, /spec\.pagination\.orderBy: .* expected a list/],
    [
      { taskStates: ["SLEEPING"] },
      /spec\.taskStates\[0\]: got "SLEEPING", expected one of UNKNOWN, INITIALIZED/,
    ],
    [{ hosts: "h1" }, /spec\.hosts: got "h1", expected a list/],
    [{ names: [3] }, /spec\.names\[0\]: got 3, expected a string/],
    [{ pagination: { limit: -1 } }, /spec\.pagination\.limit: got -1, expected a whole number/],
  ];
  for (const [spec, message] of refused) {
    rig.api("task", "Query", { jobId: { value: JOB_ID }, spec });
    const e = error(rig);
    assert.equal(e.code, "invalid-argument");
    assert.match(e.message, message);
  }
  const other = "00000000-0000-0000-0000-000000000001";
  rig.api("task", "Query", { jobId: { value: other }, spec: {} });
  await rig.reads();
  assert.deepEqual(ok(rig), {
    error: { notFound: { id: { value: other }, message: `job ${other} not found` } },
  });
});

Deno.test("task Query tells why PENDING tasks wait, as task list does", async () => {
  const rig = sixTasks();
  rig.api("task", "Query", { jobId: { value: JOB_ID }, spec: { taskStates: ["PENDING"] } });
  rig.answerWaits({ pending: "no room in its entitlement" });
  await rig.reads();
  const records = ok(rig).records as Body[];
  assert.deepEqual(records.map((r) => (r.runtime as Body).message), [
    "no room in its entitlement",
    "no room in its entitlement",
  ]);
});

Deno.test("v1alpha QueryPods orders by its pagination's orderBy (ORDER_BY_ASC/DESC)", async () => {
  const rig = sixTasks();
  const pods = async (pagination: Body) => {
    rig.call(STATELESS_SERVICE, "QueryPods", { jobId: { value: JOB_ID }, pagination, summaryOnly: true });
    await rig.reads();
    return (ok(rig).pods as { status: Body }[]).map((p) => ((p.status.podId as Body).value as string));
  };
  assert.deepEqual(await pods({}), [0, 1, 2, 3, 4, 5].map((i) => run(i)), "instance order by default");
  assert.deepEqual(
    await pods({ orderBy: [by("host", "ORDER_BY_DESC"), by("instanceId", "ORDER_BY_DESC")] }),
    [1, 0, 3, 2, 5, 4].map((i) => run(i)),
  );
  rig.call(STATELESS_SERVICE, "QueryPods", {
    jobId: { value: JOB_ID },
    pagination: { orderBy: [by("zone")] },
  });
  await rig.reads();
  assert.match(error(rig).message, /pagination\.orderBy\[0\]\.property\.value: got "zone"/);
});

Deno.test("task GetCache answers the job manager's memory: runtime and labels; nothing is loaded", async () => {
  const rig = sixTasks();
  rig.api("task", "GetCache", { jobId: { value: JOB_ID }, instanceId: 2 });
  const b = ok(rig);
  assert.deepEqual([(b.runtime as Body).state, (b.runtime as Body).host], ["RUNNING", "h1"]);
  assert.deepEqual(b.labels, []);
  rig.api("task", "GetCache", { jobId: { value: JOB_ID }, instanceId: 6 });
  assert.deepEqual(error(rig), { code: "not-found", message: `task ${JOB_ID}-6 not found in cache` });
  rig.api("task", "GetCache", { jobId: { value: JOB_ID }, instanceId: "x" });
  assert.equal(error(rig).code, "invalid-argument");
  const other = "00000000-0000-0000-0000-000000000001";
  rig.api("task", "GetCache", { jobId: { value: other }, instanceId: 0 });
  assert.deepEqual(error(rig), { code: "not-found", message: `job ${other} not found in cache` });
  await rig.reads();
  assert.equal(rig.jm.jobs.has(other), false);
});

Deno.test("task Refresh runs a range's goal-state actions again (all by default)", () => {
  const rig = sixTasks();
  rig.transport.take("kill-tasks");
  // Tasks whose goal changed behind the engines' backs (as after a store edit): nothing acts on them...
  for (const i of [0, 2]) rig.task(i).goalState = "KILLED";
  rig.tick(60_000);
  assert.deepEqual(rig.transport.take("kill-tasks"), []);
  // ...until a refresh runs their actions: the range's only, then all.
  const killed = () =>
    rig.transport.take("kill-tasks", "hostmgr").flatMap((m) => m.tasks.map((t) => t.taskId));
  rig.api("task", "Refresh", { jobId: { value: JOB_ID }, range: { from: 1, to: 3 } });
  assert.deepEqual(ok(rig), {});
  assert.deepEqual(killed(), [run(2)]);
  rig.api("task", "Refresh", { jobId: { value: JOB_ID } });
  assert.deepEqual(ok(rig), {});
  assert.deepEqual(killed(), [run(0)]);
  rig.api("task", "Refresh", { jobId: { value: JOB_ID }, range: { from: 6, to: 9 } });
  assert.equal(error(rig).code, "not-found");
  rig.api("task", "Refresh", { jobId: { value: JOB_ID }, range: { from: 3, to: 1 } });
  assert.match(error(rig).message, /^range: .* expected from below to/);
});

Deno.test("task DeletePodEvents deletes an instance's events of the runs up to runId, once stored", async () => {
  const rig = new JobmgrRig();
  rig.create({ task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_FAILED");
  rig.launch([0], "h2");
  rig.store.settle();
  const runs = async () => {
    rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0 });
    await rig.reads();
    return [...new Set((ok(rig).result as Body[]).map((e) => (e.taskId as Body).value))];
  };
  assert.deepEqual(await runs(), [run(0, 2), run(0, 1)]);
  rig.api("task", "DeletePodEvents", { jobId: { value: JOB_ID }, instanceId: 0, runId: 0 });
  assert.match(error(rig).message, /^runId: got 0, expected a run number/);
  rig.api("task", "DeletePodEvents", { jobId: { value: JOB_ID }, instanceId: 0, runId: "1" });
  assert.deepEqual(rig.repliesSoFar(), [], "answered once the delete is stored");
  rig.store.settle();
  assert.deepEqual(ok(rig), {});
  assert.deepEqual(await runs(), [run(0, 2)]);
});

Deno.test("task DeletePodEvents refuses an instance the job never had and a run after the current one, deleting nothing", async () => {
  // Peloton deletes every run up to the one named: run 99 of a task at run 2 took the current run's events.
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2, task: { restartPolicy: { maxFailures: 2 } } });
  rig.launch([0], "h1");
  rig.status(run(0, 1), "TASK_FAILED");
  rig.launch([0], "h2");
  rig.store.settle();
  const writes = rig.store.batches.length;
  const refused: [Body, string][] = [
    [
      { instanceId: 0, runId: 99 },
      `runId: got 99, expected a run of task ${JOB_ID}-0 up to its current run, 2`,
    ],
    [{ instanceId: 2, runId: 1 }, `instanceId: got 2, expected an instance of job ${JOB_ID} (below 2)`],
    [
      { instanceId: 2 ** 32, runId: 1 },
      "instanceId: got 4294967296, expected a whole number from 0 to 4294967295",
    ],
  ];
  for (const [fields, message] of refused) {
    rig.api("task", "DeletePodEvents", { jobId: { value: JOB_ID }, ...fields });
    await rig.reads();
    assert.deepEqual(rig.replies()[0].error, { code: "invalid-argument", message }, JSON.stringify(fields));
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing deleted");
  rig.api("task", "GetPodEvents", { jobId: { value: JOB_ID }, instanceId: 0 });
  await rig.reads();
  const runsLeft = new Set((ok(rig).result as Body[]).map((e) => (e.taskId as Body).value));
  assert.deepEqual([...runsLeft], [run(0, 2), run(0, 1)]);
  // The current run itself may be named.
  rig.api("task", "DeletePodEvents", { jobId: { value: JOB_ID }, instanceId: 0, runId: 2 });
  rig.store.settle();
  assert.deepEqual(ok(rig), {});
});
