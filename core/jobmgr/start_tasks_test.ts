/**
 * Workflows over a stopped job: an update's `startTasks` (v1alpha `startPods`) starts its stopped instances on
 * the new config, an update without it finishes with them still stopped, and a restart runs them again
 * (Peloton's `update_run.go`, `cached/job.go` and `workflow_strategy.go`).
 */
import assert from "node:assert/strict";
import type { JobConfig } from "../model/config_types.ts";
import { jobConfigJson } from "./api_json.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms. */
const SETTLE_MS = 10_000;

/** A service of `n` instances that ran on h1 and was stopped: the job and every instance KILLED. */
function stoppedService(n: number): JobmgrRig {
  const rig = service(n);
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.store.settle();
  rig.tick();
  rig.replies();
  for (const id of killed(rig)) rig.status(id, "TASK_KILLED");
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.goalState], ["KILLED", "KILLED"]);
  return rig;
}

const service = (n: number) => runningService(n, { config: { initialTaskBackoffMs: 1_000 } });

/** The Mesos task ids the host manager was asked to kill since last asked. */
function killed(rig: JobmgrRig): string[] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks.map((t) => t.taskId));
}

function v2(n: number): JobConfig {
  const command = { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] };
  return makeJobConfig({ type: "SERVICE", instanceCount: n, task: { command } });
}

function createUpdate(rig: JobmgrRig, updateConfig: object) {
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(v2(rig.job().config.instanceCount)), changeLog: { version: 1 } },
    updateConfig,
  });
  const [reply] = rig.replies();
  rig.tick();
  return reply;
}

async function updateState(rig: JobmgrRig, updateId: string): Promise<string> {
  rig.call(UPDATE, "GetUpdate", { updateId: { value: updateId } });
  await rig.reads();
  return (rig.replies()[0].body as { updateInfo: { status: { state: string } } }).updateInfo.status.state;
}

const states = (rig: JobmgrRig, n: number) =>
  [...Array(n).keys()].map((i) => `${rig.task(i).state}/${rig.task(i).goalState}`);

Deno.test("an update of a stopped service succeeds with its instances still stopped; started, they run the new config", async () => {
  const rig = stoppedService(3);
  const reply = createUpdate(rig, { batchSize: 1 });
  const updateId = (reply.body as { updateID: { value: string } }).updateID.value;
  // Before, the first instance waited for ever for a run that nothing would start, and so did the update.
  assert.equal(await updateState(rig, updateId), "SUCCEEDED");
  assert.deepEqual(states(rig, 3), ["KILLED/KILLED", "KILLED/KILLED", "KILLED/KILLED"]);
  assert.equal(rig.job().runtime.goalState, "KILLED");
  assert.deepEqual(rig.transport.take("enqueue-gangs", "resmgr"), [], "nothing was started");

  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  rig.store.settle();
  rig.tick();
  rig.replies();
  rig.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) {
    rig.status(rig.taskId(i), "TASK_RUNNING");
    assert.deepEqual([rig.task(i).state, rig.task(i).configVersion], ["RUNNING", 2]);
  }
});

Deno.test("startTasks: an update starts a stopped service's instances on the new config, batch by batch", async () => {
  const rig = stoppedService(3);
  const reply = createUpdate(rig, { batchSize: 2, startTasks: true });
  const updateId = (reply.body as { updateID: { value: string } }).updateID.value;
  assert.equal(rig.job().runtime.goalState, "RUNNING", "the job is to run again");
  assert.deepEqual(states(rig, 3), ["PENDING/RUNNING", "PENDING/RUNNING", "KILLED/KILLED"]);
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(states(rig, 3), ["RUNNING/RUNNING", "RUNNING/RUNNING", "PENDING/RUNNING"]);
  rig.launch([2]);
  rig.status(rig.taskId(2), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.equal(await updateState(rig, updateId), "SUCCEEDED");
  for (const i of [0, 1, 2]) {
    assert.deepEqual(
      [rig.task(i).configVersion, rig.task(i).runId],
      [2, 2],
      `instance ${i}: a new run of v2`,
    );
  }
  assert.equal(rig.job().runtime.state, "RUNNING");
});

Deno.test("startPods through PatchJob (a ReplaceJob of the patched spec) starts a stopped stateless job again", () => {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  const call = (method: string, body: Record<string, unknown>) => {
    rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, ...body });
    rig.store.settle();
    rig.tick();
    const [reply] = rig.replies();
    assert.equal(reply.error, undefined, JSON.stringify(reply));
    return reply.body as { version: { value: string } };
  };
  const container = (cmd: string) => ({ name: "c", entrypoint: { value: cmd }, resource: { cpuLimit: 0.1 } });
  const created = rig.createStateless({
    spec: {
      name: "web",
      instanceCount: 2,
      defaultSpec: { containers: [container("sleep 60")] },
      respoolId: { value: "pool-a" },
    },
  });
  assert.equal(created.error, undefined);
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  const { version } = call("StopJob", { version: (created.body as { version: unknown }).version });
  for (const id of killed(rig)) rig.status(id, "TASK_KILLED");
  assert.deepEqual(states(rig, 2), ["KILLED/KILLED", "KILLED/KILLED"]);
  call("PatchJob", {
    version,
    spec: { defaultSpec: { containers: [container("sleep 120")] } },
    updateSpec: { batchSize: 0, startPods: true },
  });
  assert.equal(rig.job().runtime.goalState, "RUNNING");
  assert.deepEqual(states(rig, 2), ["PENDING/RUNNING", "PENDING/RUNNING"]);
  assert.equal(rig.task(0).configVersion, 2, "the new run is of the patched spec");
});

Deno.test("startTasks while the job is being stopped is refused, naming the field, and changes nothing", () => {
  const rig = service(2);
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.store.settle();
  rig.tick();
  rig.replies();
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.goalState], ["KILLING", "KILLED"]);
  const reply = createUpdate(rig, { batchSize: 1, startTasks: true });
  assert.equal(reply.error?.code, "aborted");
  assert.match(
    reply.error!.message,
    /updateConfig\.startTasks: job .* is being terminated \(KILLING\), cannot update with start_pods set now/,
  );
  assert.deepEqual([rig.job().configVersion, rig.job().runtime.goalState, rig.jm.updates.size], [
    1,
    "KILLED",
    0,
  ]);
  // Without it, the update is taken (its instances stay stopped).
  assert.equal(createUpdate(rig, { batchSize: 1 }).error, undefined);
});

Deno.test("v0 Stop of the whole job is refused while an update starts its pods, as StopJob is", () => {
  const rig = stoppedService(3);
  const reply = createUpdate(rig, { batchSize: 2, startTasks: true });
  const u = rig.jm.updates.get((reply.body as { updateID: { value: string } }).updateID.value)!;
  assert.equal(u.state, "ROLLING_FORWARD");
  const stop = () => {
    rig.api("task", "Stop", { jobId: { value: JOB_ID } });
    rig.store.settle();
    rig.tick();
    return rig.replies()[0];
  };
  const refused = stop();
  assert.equal(refused.error?.code, "aborted");
  assert.match(
    refused.error!.message,
    new RegExp(
      `^job ${JOB_ID} has active update with start_pods set, cannot stop the job now: update ${u.updateId} ` +
        `\\(ROLLING_FORWARD\\) is starting its pods; pause or abort it first$`,
    ),
  );
  assert.deepEqual([u.state, rig.job().runtime.goalState], ["ROLLING_FORWARD", "RUNNING"], "nothing changed");
  assert.deepEqual(states(rig, 3), ["PENDING/RUNNING", "PENDING/RUNNING", "KILLED/KILLED"]);
  assert.deepEqual(killed(rig), []);

  rig.call(UPDATE, "PauseUpdate", { updateId: { value: u.updateId } });
  assert.equal(rig.replies()[0].error, undefined);
  const stopped = stop();
  assert.equal(stopped.error, undefined, "a paused update does not hold the stop back");
  assert.deepEqual([u.state, rig.job().runtime.goalState], ["ABORTED", "KILLED"]);
});

Deno.test("a restart of a stopped service runs every instance again, and the job with them", () => {
  const rig = stoppedService(2);
  rig.api("job", "Restart", { id: { value: JOB_ID }, restartConfig: { batchSize: 1 } });
  rig.store.settle();
  rig.replies();
  rig.tick();
  assert.equal(rig.job().runtime.goalState, "RUNNING");
  assert.deepEqual(states(rig, 2), ["PENDING/RUNNING", "KILLED/KILLED"]);
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  rig.launch([1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  rig.tick(SETTLE_MS);
  assert.deepEqual(states(rig, 2), ["RUNNING/RUNNING", "RUNNING/RUNNING"]);
  assert.deepEqual([rig.task(0).runId, rig.task(1).runId], [2, 2]);
  assert.equal(rig.jm.updates.size, 0, "the restart finished");
});
