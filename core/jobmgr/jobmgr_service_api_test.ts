import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import type { Body } from "./api_json.ts";
import { JOBMGR_SERVICE } from "./jobmgr_service_api.ts";
import { apiLockKind } from "./lockdown.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

/** Sorts before JOB_ID. */
const EARLIER = "00000000-2222-4333-8444-555555555555";
const OTHER = "22222222-2222-4333-8444-555555555555";

function call(rig: JobmgrRig, method: string, body: Body, service = JOBMGR_SERVICE): ApiReply {
  rig.call(service, method, body);
  const replies = rig.replies();
  assert.equal(replies.length, 1, `one reply to ${method}`);
  return replies[0];
}

function ok(reply: ApiReply): Body {
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as Body;
}

function invalid(reply: ApiReply, message: RegExp): void {
  assert.equal(reply.error?.code, "invalid-argument", JSON.stringify(reply));
  assert.match(reply.error!.message, message);
}

/** Runs the job's instances on h1. */
function run(rig: JobmgrRig, instances: number[], jobId = JOB_ID): void {
  const tasks = instances.map((i) => ({ taskId: rig.taskId(i, jobId), ports: {} }));
  rig.placements([{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks }]);
  rig.transport.take("launch-tasks");
  for (const i of instances) rig.status(rig.taskId(i, jobId), "TASK_RUNNING");
}

Deno.test("GetThrottledPods: the pods whose restart waits after a failure, by job id and instance, until they run again", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({ type: "SERVICE", instanceCount: 3 });
  rig.create({ type: "SERVICE", instanceCount: 1 }, EARLIER);
  rig.create({ type: "BATCH", instanceCount: 1 }, OTHER);
  run(rig, [0, 1, 2]);
  run(rig, [0], EARLIER);
  run(rig, [0], OTHER);
  assert.deepEqual(ok(call(rig, "GetThrottledPods", {})), { throttledPods: [] });

  rig.status(rig.taskId(2), "TASK_FAILED");
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.status(rig.taskId(0, EARLIER), "TASK_KILLED");
  // A batch task's failure is retried at once (or not at all), never throttled.
  rig.status(rig.taskId(0, OTHER), "TASK_FAILED");
  assert.equal(rig.task(0).message, "Task throttled due to failure");
  assert.deepEqual(ok(call(rig, "GetThrottledPods", {})).throttledPods, [
    { value: `${EARLIER}-0` },
    { value: `${JOB_ID}-0` },
    { value: `${JOB_ID}-2` },
  ]);

  rig.tick(1_000);
  assert.equal(rig.task(0).runId, 2, "the backoff has passed: a new run");
  assert.deepEqual(ok(call(rig, "GetThrottledPods", {})), { throttledPods: [] });
  assert.equal(apiLockKind(`${JOBMGR_SERVICE}::GetThrottledPods`), "Read");
});

Deno.test("RefreshJob and GetJobCache answer as the JobService's; bad or unknown jobs are refused", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  const body = { jobId: { value: JOB_ID } };
  const cache = ok(call(rig, "GetJobCache", body));
  assert.deepEqual(cache, ok(call(rig, "GetJobCache", body, STATELESS_SERVICE)));
  assert.equal((cache.spec as Body).name, "test-job");

  // A job only the store holds is loaded into the cache again, as Peloton's RefreshJob does.
  rig.jm.jobs.delete(JOB_ID);
  assert.equal(call(rig, "GetJobCache", body).error?.code, "not-found");
  rig.call(JOBMGR_SERVICE, "RefreshJob", body);
  await rig.reads();
  assert.deepEqual(rig.replies().map((r) => r.body), [{}]);
  assert.deepEqual(ok(call(rig, "GetJobCache", body)).spec, cache.spec);
  assert.equal(apiLockKind(`${JOBMGR_SERVICE}::RefreshJob`), "Write");

  for (const method of ["GetJobCache", "RefreshJob"]) {
    invalid(call(rig, method, {}), /^jobId: missing, expected a job id$/);
    invalid(call(rig, method, { jobId: 7 }), /^jobId: got 7, expected a job id as \{"value": \.\.\.\}$/);
  }
  assert.deepEqual(call(rig, "GetJobCache", { jobId: { value: OTHER } }).error, {
    code: "not-found",
    message: `job ${OTHER} not found in cache`,
  });
  assert.equal(call(rig, "Nope", {}).error?.code, "unimplemented");
});

Deno.test("QueryJobCache: jobs held in memory with every label given and the exact name, by job id", () => {
  const rig = new JobmgrRig();
  const team = { key: "team", value: "a" }, tier = { key: "tier", value: "web" };
  rig.create({ name: "web", labels: [team, tier] });
  rig.create({ name: "web", labels: [team] }, EARLIER);
  rig.create({ name: "Web", labels: [tier] }, OTHER);
  const query = (spec: unknown) => ok(call(rig, "QueryJobCache", { spec })).result;
  const job = (id: string, name: string) => ({ jobId: { value: id }, name });

  assert.deepEqual(query(undefined), [job(EARLIER, "web"), job(JOB_ID, "web"), job(OTHER, "Web")]);
  assert.deepEqual(query({ name: "web" }), [job(EARLIER, "web"), job(JOB_ID, "web")], "case-sensitive");
  assert.deepEqual(query({ labels: [tier] }), [job(JOB_ID, "web"), job(OTHER, "Web")]);
  assert.deepEqual(query({ labels: [team, tier], name: "web" }), [job(JOB_ID, "web")], "all the labels");
  assert.deepEqual(query({ labels: [{ key: "team", value: "b" }] }), []);
  assert.deepEqual(query({ name: "we" }), [], "not a part of the name");

  // Memory only: a job the store holds but this job manager does not is not in its cache.
  rig.jm.jobs.delete(OTHER);
  assert.deepEqual(query({ name: "Web" }), []);

  invalid(call(rig, "QueryJobCache", { spec: [] }), /^spec: got \[\], expected an object/);
  invalid(call(rig, "QueryJobCache", { spec: { name: 3 } }), /^spec\.name: got 3, expected a job name$/);
  invalid(call(rig, "QueryJobCache", { spec: { labels: "team=a" } }), /^spec\.labels: got "team=a"/);
  invalid(
    call(rig, "QueryJobCache", { spec: { labels: [team, { value: "x" }] } }),
    /^spec\.labels\[1\]: got \{"value":"x"\}, expected \{key, value\}/,
  );
});

Deno.test("GetInstanceAvailabilityInfoForJob: each instance's availability as SLA-aware maintenance counts it", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create({ type: "SERVICE", instanceCount: 4 });
  run(rig, [0, 1, 2, 3]);
  rig.status(rig.taskId(1), "TASK_FAILED");
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 3, to: 4 }] });
  rig.replies();
  const body = (instances?: unknown) => ({ jobId: { value: JOB_ID }, instances });
  const map = (instances?: unknown) =>
    ok(call(rig, "GetInstanceAvailabilityInfoForJob", body(instances))).instanceAvailabilityMap;

  assert.deepEqual(map(), { 0: "AVAILABLE", 1: "UNAVAILABLE", 2: "AVAILABLE", 3: "KILLED" });
  assert.deepEqual(map([]), map(), "an empty list is every instance");
  assert.deepEqual(map([3, "1", 1]), { 1: "UNAVAILABLE", 3: "KILLED" });

  const get = (b: Body) => call(rig, "GetInstanceAvailabilityInfoForJob", b);
  invalid(get(body([1, 9])), new RegExp(`^instances: job ${JOB_ID} has no instance 9; it has 4 instances$`));
  invalid(get(body([0, -1])), /^instances\[1\]: got -1, expected an instance id/);
  invalid(get(body("0,1")), /^instances: got "0,1", expected a list of instance ids$/);
  invalid(get({}), /^jobId: missing, expected a job id$/);
  invalid(get({ jobId: { value: "web" } }), /^jobId: got \{"value":"web"\}, expected a job id$/);
  assert.deepEqual(get({ jobId: { value: OTHER } }).error, {
    code: "not-found",
    message: `job ${OTHER} not found in cache`,
  });
});
