import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { jobConfigJson } from "./api_json.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

/** The default `minRunningSeconds`, in ms: how long a run without a health check must stay RUNNING. */
const SETTLE_MS = 10_000;

/** Instance `i`'s events in the job's current or last workflow, newest first, as `jm` answers them. */
async function events(rig: JobmgrRig, jm: JobManager, instanceId: number): Promise<string[][]> {
  jm.receive({
    kind: "api",
    reqId: 7,
    replyTo: "api/1",
    procedure: `${STATELESS_SERVICE}::GetWorkflowEvents`,
    body: { jobId: { value: JOB_ID }, instanceId },
  });
  for (let i = 0; i < 50; i++) await Promise.resolve();
  const [reply] = rig.replies();
  assert.equal(reply?.error, undefined, JSON.stringify(reply));
  const list = (reply.body as { events: { state: string; timestamp: string }[] }).events;
  return list.map((e) => [e.state.replace("WORKFLOW_STATE_", ""), e.timestamp.slice(11, 19)]);
}

Deno.test("workflow events survive a job manager restart, and the recovered update goes on recording", async () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  const next = makeJobConfig({
    type: "SERVICE",
    instanceCount: 2,
    task: {
      command: { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] },
    },
  });
  rig.call("peloton.api.v0.update.svc.UpdateService", "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 1 },
  });
  rig.replies();
  rig.tick();
  // Instance 0 is updated; instance 1 is taken, its old run asked to stop when the process dies.
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(rig.task(1).desiredConfigVersion, 2, "instance 1 is being updated");
  rig.store.settle();
  rig.transport.drain();

  const jm = await rig.restartJobManager();
  const poll = rig.transport.takeOne("get-placements", "resmgr");
  rig.transport.drain();
  const before = [
    ["SUCCEEDED", "00:00:10"],
    ["ROLLING_FORWARD", "00:00:00"],
    ["INITIALIZED", "00:00:00"],
  ];
  assert.deepEqual(await events(rig, jm, 0), before, "read back by the new job manager");
  assert.deepEqual(await events(rig, jm, 1), [["ROLLING_FORWARD", "00:00:10"], ["INITIALIZED", "00:00:00"]]);

  // The new job manager finishes instance 1 and records it, after what the old one recorded.
  rig.tick(5_000);
  rig.report(jm, `${JOB_ID}-1-1`, "TASK_KILLED");
  const task1 = jm.jobs.get(JOB_ID)!.tasks.get(1)!;
  jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{
      leaseId: "h1#2",
      hostname: "h1",
      agentId: "agent-h1",
      tasks: [{ taskId: `${JOB_ID}-1-${task1.runId}`, ports: {} }],
    }],
    changes: [],
    preemptions: [],
  });
  rig.tick();
  rig.report(jm, `${JOB_ID}-1-${task1.runId}`, "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(await events(rig, jm, 1), [
    ["SUCCEEDED", "00:00:25"],
    ["ROLLING_FORWARD", "00:00:10"],
    ["INITIALIZED", "00:00:00"],
  ]);
  assert.deepEqual(await events(rig, jm, 0), before);
  jm.stop();
});
