/**
 * Pods a rolling create (or update) has not reached wait for it, as Peloton creates them only when its
 * workflow reaches them: a refresh or a recovery does not start them, and once the workflow ended without
 * reaching them (aborted, failed) they wait for a start or an update, their message saying so.
 */
import { entityVersion } from "./api_json.ts";
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeStatelessSpec } from "../testing/fixtures.ts";
import type { JobEntry, JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

/** The instances the resource manager was asked to place since last asked. */
const started = (rig: JobmgrRig) =>
  rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs)
    .flatMap((g) => g.tasks.map((t) => Number(t.taskId.split("-").at(-2))));

let reqId = 1000;

/** A JobService call to `jm` (the rig's, or one `restartJobManager` recovered) at the job's entity version. */
function stateless(rig: JobmgrRig, jm: JobManager, method: string, extra: Body = {}): ApiReply {
  const job = jm.jobs.get(JOB_ID)!;
  jm.receive({
    kind: "api",
    reqId: ++reqId,
    replyTo: "api/1",
    procedure: `${STATELESS_SERVICE}::${method}`,
    body: { jobId: { value: JOB_ID }, version: { value: entityVersion(job) }, ...extra },
  });
  rig.tick();
  const [reply] = rig.replies();
  assert.equal(reply?.error, undefined, JSON.stringify(reply));
  return reply;
}

/** Every refresh there is: v0 JobManager and TaskManager Refresh, v1alpha JobService RefreshJob. */
function refreshAll(rig: JobmgrRig): void {
  rig.api("job", "Refresh", { id: { value: JOB_ID } });
  rig.api("task", "Refresh", { jobId: { value: JOB_ID } });
  rig.call(STATELESS_SERVICE, "RefreshJob", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.tick(60_000);
}

const messages = (job: JobEntry) => [...job.tasks.values()].map((t) => `${t.state}: ${t.message ?? ""}`);

/** A 3-pod job whose rolling create (batch size 1) started pod 0, which runs, and was then aborted. */
function abortedCreate(): { rig: JobmgrRig; createId: string } {
  const rig = new JobmgrRig();
  rig.createStateless({ spec: makeStatelessSpec(3), createSpec: { batchSize: 1 } });
  assert.deepEqual(started(rig), [0]);
  const [create] = rig.jm.updates.values();
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  stateless(rig, rig.jm, "PauseJobWorkflow");
  stateless(rig, rig.jm, "AbortJobWorkflow");
  rig.tick(60_000);
  assert.equal(rig.store.updates.get(create.updateId)?.state, "ABORTED");
  return { rig, createId: create.updateId };
}

Deno.test("pods an aborted rolling create had not reached are not started by a refresh, nor by a restart", async () => {
  const { rig, createId } = abortedCreate();
  const waiting = `INITIALIZED: not started: the job's create workflow ${createId} was aborted; ` +
    "start or update the job to run it";
  assert.deepEqual(messages(rig.job()), ["RUNNING: ", waiting, waiting]);
  // Before, a refresh launched them all at once.
  refreshAll(rig);
  assert.deepEqual(started(rig), [], "a refresh leaves them as the live job manager does");

  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.tick(60_000);
  assert.deepEqual(started(rig), [], "so does a recovery");
  assert.deepEqual(messages(jm.jobs.get(JOB_ID)!).slice(1), [waiting, waiting]);

  // A start runs them.
  stateless(rig, jm, "StartJob");
  rig.tick();
  assert.deepEqual(started(rig), [1, 2]);
  assert.deepEqual(messages(jm.jobs.get(JOB_ID)!).slice(1), ["PENDING: ", "PENDING: "]);
});

Deno.test("pods a failed rolling create had not reached wait for an update, which starts them in its batches", async () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.createStateless({
    spec: makeStatelessSpec(3),
    createSpec: { batchSize: 1, maxInstanceRetries: 1, maxTolerableInstanceFailures: 1 },
  });
  assert.deepEqual(started(rig), [0]);
  const [create] = rig.jm.updates.values();
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_FAILED");
  rig.tick(1_000);
  assert.equal(rig.store.updates.get(create.updateId)?.state, "FAILED");
  const waiting = `INITIALIZED: not started: the job's create workflow ${create.updateId} failed; ` +
    "start or update the job to run it";
  assert.deepEqual(messages(rig.job()).slice(1), [waiting, waiting]);
  started(rig);
  refreshAll(rig);
  assert.deepEqual(started(rig).filter((i) => i !== 0), [], "a refresh does not start them");
  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.tick(60_000);
  assert.deepEqual(started(rig).filter((i) => i !== 0), [], "nor does a recovery");

  // An update to the same spec takes them, one batch at a time, as they wait for it.
  const reply = stateless(rig, jm, "PatchJob", { spec: {}, updateSpec: { batchSize: 1 } });
  const updateId = (reply.body as { workflowId: { value: string } }).workflowId.value;
  const job = jm.jobs.get(JOB_ID)!;
  assert.deepEqual(jm.updates.get(updateId)?.instancesUpdated, [1, 2]);
  rig.tick();
  assert.deepEqual(started(rig), [1], "instance 1 in the first batch");
  assert.equal(
    job.tasks.get(2)!.message,
    `not started: the job's update workflow ${updateId} has not reached it yet`,
  );
});

Deno.test("a refresh during a paused rolling create does not start the pods it has not reached", () => {
  const rig = new JobmgrRig();
  rig.createStateless({ spec: makeStatelessSpec(3), createSpec: { batchSize: 1, startPaused: true } });
  const [create] = rig.jm.updates.values();
  refreshAll(rig);
  assert.deepEqual(started(rig), []);
  const waiting =
    `INITIALIZED: not started: the job's create workflow ${create.updateId} has not reached it yet`;
  assert.deepEqual(messages(rig.job()), [waiting, waiting, waiting]);
  stateless(rig, rig.jm, "ResumeJobWorkflow");
  rig.tick();
  assert.deepEqual(started(rig), [0], "resumed, its first batch starts");
});
