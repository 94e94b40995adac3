/**
 * Every call naming a job reads its id alike: a malformed one (not `{value: "<uuid>"}`) is refused as
 * InvalidArgument naming the field, before anything is looked up or changed; a well-formed id of no job is
 * not found, not refused.
 */
import assert from "node:assert/strict";
import { JOB_ID, runningService } from "../testing/jobmgr_rig.ts";
import { JOBMGR_SERVICE } from "./jobmgr_service_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { UPDATE_SERVICE } from "./update_api.ts";
import { VOLUME_SERVICE } from "./volume_api.ts";

type Body = Record<string, unknown>;

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const UNKNOWN = "99999999-2222-4333-8444-555555555555";

/** Each call taking a job id: its service, method, the field naming the job, and its other fields. */
const CALLS: [string, string, string, Body][] = [
  [JOB, "Get", "id", {}],
  [JOB, "Delete", "id", {}],
  [JOB, "Update", "id", { config: {} }],
  [JOB, "Restart", "id", {}],
  [JOB, "Start", "id", {}],
  [JOB, "Stop", "id", {}],
  [JOB, "Refresh", "id", {}],
  [JOB, "GetCache", "id", {}],
  [TASK, "Get", "jobId", { instanceId: 0 }],
  [TASK, "List", "jobId", {}],
  [TASK, "Start", "jobId", {}],
  [TASK, "Stop", "jobId", {}],
  [TASK, "Restart", "jobId", {}],
  [TASK, "Query", "jobId", {}],
  [TASK, "BrowseSandbox", "jobId", { instanceId: 0 }],
  [TASK, "Refresh", "jobId", {}],
  [TASK, "GetCache", "jobId", { instanceId: 0 }],
  [TASK, "GetPodEvents", "jobId", { instanceId: 0 }],
  [TASK, "DeletePodEvents", "jobId", { instanceId: 0, runId: 1 }],
  [UPDATE_SERVICE, "CreateUpdate", "jobId", {}],
  [UPDATE_SERVICE, "ListUpdates", "jobID", {}],
  [VOLUME_SERVICE, "ListVolumes", "jobId", {}],
  [STATELESS_SERVICE, "GetJob", "jobId", {}],
  [STATELESS_SERVICE, "GetJob", "jobId", { summaryOnly: true }],
  [STATELESS_SERVICE, "ReplaceJob", "jobId", {}],
  [STATELESS_SERVICE, "PatchJob", "jobId", {}],
  [STATELESS_SERVICE, "RestartJob", "jobId", {}],
  [STATELESS_SERVICE, "PauseJobWorkflow", "jobId", {}],
  [STATELESS_SERVICE, "ResumeJobWorkflow", "jobId", {}],
  [STATELESS_SERVICE, "AbortJobWorkflow", "jobId", {}],
  [STATELESS_SERVICE, "StartJob", "jobId", {}],
  [STATELESS_SERVICE, "StopJob", "jobId", {}],
  [STATELESS_SERVICE, "DeleteJob", "jobId", {}],
  [STATELESS_SERVICE, "GetWorkflowEvents", "jobId", {}],
  [STATELESS_SERVICE, "ListJobWorkflows", "jobId", {}],
  [STATELESS_SERVICE, "GetReplaceJobDiff", "jobId", {}],
  [STATELESS_SERVICE, "ListPods", "jobId", {}],
  [STATELESS_SERVICE, "QueryPods", "jobId", {}],
  [STATELESS_SERVICE, "GetJobCache", "jobId", {}],
  [STATELESS_SERVICE, "RefreshJob", "jobId", {}],
  [JOBMGR_SERVICE, "GetJobCache", "jobId", {}],
  [JOBMGR_SERVICE, "RefreshJob", "jobId", {}],
  [JOBMGR_SERVICE, "GetInstanceAvailabilityInfoForJob", "jobId", {}],
];

Deno.test("a malformed job id is refused as invalid-argument naming the field, by every call taking one", async () => {
  const rig = runningService(2);
  rig.store.settle();
  const writes = rig.store.batches.length;
  const malformed: [unknown, (field: string) => string][] = [
    [{ value: "notauuid" }, (f) => `${f}: got {"value":"notauuid"}, expected a job id`],
    [{ value: `${JOB_ID}-0` }, (f) => `${f}: got {"value":"${JOB_ID}-0"}, expected a job id`],
    [{ value: 5 }, (f) => `${f}.value: got 5, expected a job id`],
    [7, (f) => `${f}: got 7, expected a job id as {"value": ...}`],
    // A JobID is a message: protobuf's JSON decoding, which Peloton's servers used, refuses a bare string.
    [JOB_ID, (f) => `${f}: got "${JOB_ID}", expected a job id as a message, {"value": "${JOB_ID}"}`],
    [undefined, (f) => `${f}: missing, expected a job id`],
  ];
  for (const [service, method, field, rest] of CALLS) {
    for (const [id, message] of malformed) {
      rig.call(service, method, { ...rest, [field]: id });
      await rig.reads();
      const replies = rig.replies();
      assert.deepEqual(
        replies.map((r) => r.error),
        [{ code: "invalid-argument", message: message(field) }],
        `${method} ${JSON.stringify(id)}`,
      );
    }
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing changed");
});

Deno.test("a well-formed id of no job is not found (in the body where Peloton answers so), never refused", async () => {
  const rig = runningService(2);
  // Calls that read the store by job id alone answer an unknown job with what it has: nothing.
  const empty = new Set(["GetPodEvents", "ListUpdates", "ListVolumes"]);
  for (const [service, method, field, rest] of CALLS) {
    rig.call(service, method, { ...rest, [field]: { value: UNKNOWN } });
    await rig.reads();
    const [reply] = rig.replies();
    const text = JSON.stringify(reply);
    if (empty.has(method)) assert.equal(reply.error, undefined, `${method}: ${text}`);
    else assert.match(text, /not-?[fF]ound/, `${method}: ${text}`);
    assert.notEqual(reply.error?.code, "invalid-argument", `${method}: ${text}`);
  }
  // A job id in upper case is the job's, as a pod name's is.
  rig.call(JOB, "Get", { id: { value: JOB_ID.toUpperCase() } });
  await rig.reads();
  assert.equal(((rig.replies()[0].body as Body).jobInfo as Body & { id: Body }).id.value, JOB_ID);
});
