/** The v0 JobManager's debug calls: Refresh, GetCache and GetActiveJobs. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import type { Body } from "./api_json.ts";
import { JOB_SERVICE } from "./job_api.ts";
import { apiLockKind } from "./lockdown.ts";

const SECOND = "22222222-2222-4333-8444-555555555555";
const THIRD = "33333333-2222-4333-8444-555555555555";

/** One call to the JobManager, answered once the store reads it makes are done. */
async function call(rig: JobmgrRig, method: string, body: unknown): Promise<ApiReply> {
  rig.api("job", method, body);
  await rig.reads();
  const replies = rig.replies();
  assert.equal(replies.length, 1, `one reply to ${method}`);
  return replies[0];
}

function ok(reply: ApiReply): Body {
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.body as Body;
}

/** A service of `n` instances with priority 3, not preemptible, each RUNNING on h1. */
const service = (n: number) =>
  runningService(n, { job: { sla: { priority: 3, preemptible: false } as never } });

/** Each wrong `id` a call naming a job may get, and the message that names it. */
const BAD_IDS: [unknown, RegExp][] = [
  [{}, /^id: missing, expected a job id$/],
  [{ id: 7 }, /^id: got 7, expected a job id as \{"value": \.\.\.\}$/],
  [
    { id: JOB_ID },
    new RegExp(`^id: got "${JOB_ID}", expected a job id as a message, \\{"value": "${JOB_ID}"\\}$`),
  ],
  [{ id: { value: "" } }, /^id: got \{"value":""\}, expected a job id$/],
  [{ id: { value: "web" } }, /^id: got \{"value":"web"\}, expected a job id$/],
  // Peloton's RefreshRequest and GetCacheRequest name the job `id`, not `jobId`.
  [{ jobId: { value: JOB_ID } }, /^id: missing, expected a job id$/],
];

Deno.test("job GetCache: the runtime held in memory and the config fields Peloton's cache keeps; nothing is loaded", async () => {
  const rig = service(2);
  const cache = ok(await call(rig, "GetCache", { id: { value: JOB_ID } }));
  assert.deepEqual(cache.config, {
    changeLog: { version: 1 },
    sla: rig.job().config.sla,
    respoolID: { value: "pool-a" },
    type: "SERVICE",
    instanceCount: 2,
  });
  const runtime = cache.runtime as Body;
  assert.deepEqual([runtime.state, runtime.goalState], ["RUNNING", "RUNNING"]);
  assert.equal((runtime.taskStats as Body).RUNNING, 2);
  assert.equal(runtime.configurationVersion, 1);
  // The same runtime `job get` shows: nothing has changed behind it.
  const get = ok(await call(rig, "Get", { id: { value: JOB_ID } }));
  assert.deepEqual(runtime, (get.jobInfo as Body).runtime);

  // Memory, not the store: a job the store holds but this job manager does not drive is not found...
  rig.jm.jobs.delete(JOB_ID);
  assert.deepEqual((await call(rig, "GetCache", { id: { value: JOB_ID } })).error, {
    code: "not-found",
    message: `job ${JOB_ID} not found in cache`,
  });
  // ...and not loaded for the asking.
  assert.equal(rig.jm.jobs.has(JOB_ID), false);
  assert.equal(apiLockKind(`${JOB_SERVICE}::GetCache`), "Read");
});

Deno.test("job Refresh runs the job's and its tasks' goal-state actions again; a job only the store holds is loaded", async () => {
  const rig = service(3);
  // A task whose goal changed behind the engines' backs: nothing acts on it...
  rig.task(1).goalState = "KILLED";
  rig.tick(60_000);
  assert.deepEqual(rig.transport.take("kill-tasks"), []);
  // ...until a refresh runs its actions.
  assert.deepEqual(ok(await call(rig, "Refresh", { id: { value: JOB_ID } })), {});
  rig.tick();
  const killed = rig.transport.take("kill-tasks", "hostmgr").flatMap((m) => m.tasks.map((t) => t.taskId));
  assert.deepEqual(killed, [rig.taskId(1)]);

  // A job dropped from memory (as another job manager's) is read back from the store and driven here.
  rig.jm.jobs.delete(JOB_ID);
  assert.deepEqual(ok(await call(rig, "Refresh", { id: { value: JOB_ID } })), {});
  assert.equal(rig.jm.jobs.has(JOB_ID), true);
  const cache = ok(await call(rig, "GetCache", { id: { value: JOB_ID } }));
  assert.equal((cache.config as Body).instanceCount, 3);

  assert.deepEqual((await call(rig, "Refresh", { id: { value: THIRD } })).error, {
    code: "not-found",
    message: `job ${THIRD} not found`,
  });
  assert.equal(apiLockKind(`${JOB_SERVICE}::Refresh`), "Write");
});

Deno.test("job Refresh and GetCache refuse a missing or malformed id, naming the field", async () => {
  const rig = service(1);
  for (const method of ["Refresh", "GetCache"]) {
    for (const [body, message] of BAD_IDS) {
      const reply = await call(rig, method, body);
      assert.equal(reply.error?.code, "invalid-argument", `${method} ${JSON.stringify(body)}`);
      assert.match(reply.error!.message, message);
    }
  }
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "nothing was done");
});

Deno.test("job GetActiveJobs lists the store's jobs that have not ended, oldest first, held in memory or not", async () => {
  const rig = new JobmgrRig();
  const active = async () => (ok(await call(rig, "GetActiveJobs", {})).ids as Body[]).map((i) => i.value);
  assert.deepEqual(await active(), []);

  rig.create({ instanceCount: 1 }, THIRD);
  rig.tick(1_000);
  rig.create({ instanceCount: 1 });
  rig.tick(1_000);
  rig.create({ instanceCount: 1 }, SECOND);
  assert.deepEqual(await active(), [THIRD, JOB_ID, SECOND], "by creation time, not by id");

  // A batch job whose task finished has SUCCEEDED: no longer active.
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.status(rig.taskId(0), "TASK_FINISHED");
  rig.tick(1_000);
  assert.equal(rig.job().runtime.state, "SUCCEEDED");
  // Another job manager's job (in the shared store, not in this one's memory) is listed all the same.
  rig.jm.jobs.delete(SECOND);
  assert.deepEqual(await active(), [THIRD, SECOND]);
  assert.equal(rig.jm.jobs.has(SECOND), false, "listing loads nothing");
  assert.equal(apiLockKind(`${JOB_SERVICE}::GetActiveJobs`), "Read");
});
