/**
 * A job's v1alpha summary keeps its last workflow once that workflow has ended, wherever a summary is
 * answered (GetJob with summaryOnly, QueryJobs, ListJobs, a job watch), as GetJob's full answer does.
 */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { makeStatelessSpec } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { WATCH_SERVICE } from "./watch.ts";

type Summary = { jobId: { value: string }; status: { state: string; workflowStatus?: { state: string } } };

/** A v1alpha job of 2 pods whose create workflow has ended SUCCEEDED; its writes are stored. */
function createdAndSettled(rig: JobmgrRig): void {
  assert.equal(rig.createStateless({ spec: makeStatelessSpec(2) }).error, undefined);
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  // No health check: 10 s RUNNING (the default minRunningSeconds) counts as done.
  rig.tick(10_000);
  assert.equal(rig.jm.updates.size, 0, "the create workflow has ended");
  assert.equal(rig.job().runtime.updateId, undefined);
}

async function answer(rig: JobmgrRig, method: string, body: unknown): Promise<ApiReply> {
  rig.call(STATELESS_SERVICE, method, body);
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply;
}

Deno.test("summaries show the job's last workflow after it ended: GetJob summaryOnly, QueryJobs, ListJobs", async () => {
  const rig = new JobmgrRig();
  createdAndSettled(rig);
  rig.store.settle();
  const full = await answer(rig, "GetJob", { jobId: { value: JOB_ID } });
  const status = (full.body as { jobInfo: { status: Summary["status"] } }).jobInfo.status;
  assert.equal(status.workflowStatus?.state, "WORKFLOW_STATE_SUCCEEDED", "GetJob without summaryOnly");

  const summary = (await answer(rig, "GetJob", { jobId: { value: JOB_ID }, summaryOnly: true })).body as {
    summary: Summary;
  };
  assert.deepEqual(summary.summary.status.workflowStatus, status.workflowStatus, "GetJob with summaryOnly");
  const query = (await answer(rig, "QueryJobs", { spec: {} })).body as { records: Summary[] };
  assert.deepEqual(query.records.map((j) => j.status.workflowStatus), [status.workflowStatus], "QueryJobs");
  const list = (await answer(rig, "ListJobs", {})).body as { jobs: Summary[] };
  assert.deepEqual(list.jobs.map((j) => j.status.workflowStatus), [status.workflowStatus], "ListJobs");
});

Deno.test("a job that never had a workflow has no workflowStatus in its summary", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 1 });
  const summary = (await answer(rig, "GetJob", { jobId: { value: JOB_ID }, summaryOnly: true })).body as {
    summary: Summary;
  };
  assert.equal(summary.summary.status.workflowStatus, undefined);
});

Deno.test("a job watch is sent the job's last workflow, as it ended, with the changes after its end", async () => {
  const rig = new JobmgrRig();
  rig.call(WATCH_SERVICE, "Watch", { statelessJobFilter: { jobIds: [{ value: JOB_ID }] } });
  const watchId = (rig.replies()[0].body as { watchId: string }).watchId;
  createdAndSettled(rig);
  // The pods end: the job's state changes after its workflow ended.
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  for (const t of rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks)) {
    rig.status(t.taskId, "TASK_KILLED");
  }
  // The summaries wait for the store to have the workflow's end.
  for (let i = 0; i < 5; i++) {
    rig.store.settle();
    await rig.reads();
  }
  const sent = rig.transport.take("watch-event", "api/1").filter((e) => e.watchId === watchId)
    .flatMap((e) => (e.response.statelessJobs ?? []) as Summary[])
    .map((j) => `${j.status.state} ${j.status.workflowStatus?.state ?? "-"}`);
  // In the order the changes were made; the ones after its end with it as it ended.
  assert.deepEqual(sent, [
    "JOB_STATE_PENDING WORKFLOW_STATE_INITIALIZED",
    "JOB_STATE_RUNNING WORKFLOW_STATE_ROLLING_FORWARD",
    "JOB_STATE_RUNNING WORKFLOW_STATE_SUCCEEDED",
    "JOB_STATE_KILLING WORKFLOW_STATE_SUCCEEDED",
    "JOB_STATE_KILLED WORKFLOW_STATE_SUCCEEDED",
  ]);
});
