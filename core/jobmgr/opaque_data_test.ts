/**
 * `opaqueData`, the caller's own data kept with a workflow (Aurora bridge keeps its update metadata there):
 * every call that creates or changes a workflow takes it, as Peloton's do, and WorkflowInfo/UpdateInfo give it.
 */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { entityVersion, MAX_OPAQUE_DATA_BYTES } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;
const UPDATE = "peloton.api.v0.update.svc.UpdateService";
const container = (cmd: string) => ({ name: "c", entrypoint: { value: cmd }, resource: { cpuLimit: 0.1 } });

function call(rig: JobmgrRig, method: string, body: Body = {}, service = STATELESS_SERVICE): ApiReply {
  rig.call(service, method, { jobId: { value: JOB_ID }, ...body });
  rig.store.settle();
  rig.tick();
  return rig.replies()[0];
}

function ok(reply: ApiReply): Body {
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  return reply.body as Body;
}

/** A 2-pod service created through the v1alpha JobService, its pods RUNNING; its entity version. */
function service(rig: JobmgrRig): string {
  const created = rig.createStateless({
    spec: {
      name: "web",
      instanceCount: 2,
      defaultSpec: { containers: [container("sleep 60")] },
      respoolId: { value: "pool-a" },
    },
  });
  const version = (ok(created).version as { value: string }).value;
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  return version;
}

const version = (rig: JobmgrRig) => {
  const j = rig.job();
  return {
    value: entityVersion(j),
  };
};

const workflowOpaque = (rig: JobmgrRig) => [...rig.jm.updates.values()][0]?.opaqueData;

Deno.test("ReplaceJob, RestartJob and Pause|Resume|AbortJobWorkflow keep and replace opaqueData", async () => {
  const rig = new JobmgrRig();
  const v = service(rig);
  ok(call(rig, "PatchJob", {
    version: { value: v },
    spec: { defaultSpec: { containers: [container("sleep 120")] } },
    updateSpec: { batchSize: 1 },
    opaqueData: { data: "deploy-1" },
  }));
  assert.equal(workflowOpaque(rig), "deploy-1");
  ok(call(rig, "PauseJobWorkflow", { version: version(rig), opaqueData: { data: "paused-by-bridge" } }));
  assert.equal(workflowOpaque(rig), "paused-by-bridge");
  ok(call(rig, "ResumeJobWorkflow", { version: version(rig) }));
  assert.equal(workflowOpaque(rig), "paused-by-bridge", "a call without it leaves it");
  rig.call(STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } });
  await rig.reads();
  const info = ok(rig.replies()[0]).workflowInfo as Body;
  assert.deepEqual(info.opaqueData, { data: "paused-by-bridge" }, "GetJob's WorkflowInfo gives it");
  ok(call(rig, "AbortJobWorkflow", { version: version(rig), opaqueData: { data: "aborted" } }));
  const stored = [...rig.store.updates.values()].find((u) => u.state === "ABORTED" && !u.create)!;
  assert.equal(stored.opaqueData, "aborted");

  ok(
    call(rig, "RestartJob", {
      version: version(rig),
      restartSpec: { batchSize: 1 },
      opaqueData: { data: "r" },
    }),
  );
  assert.equal(workflowOpaque(rig), "r");
});

Deno.test("v0 Pause|Resume|AbortUpdate replace opaqueData; bad opaqueData is refused, naming it, changing nothing", () => {
  const rig = new JobmgrRig();
  const v = service(rig);
  ok(call(rig, "ReplaceJob", {
    version: { value: v },
    spec: {
      name: "web",
      instanceCount: 2,
      defaultSpec: { containers: [container("sleep 90")] },
      respoolId: { value: "pool-a" },
    },
    updateSpec: { batchSize: 1 },
    opaqueData: { data: "d1" },
  }));
  const [u] = rig.jm.updates.values();
  const updateId = { value: u.updateId };
  ok(call(rig, "PauseUpdate", { updateId, opaqueData: { data: "d2" } }, UPDATE));
  assert.deepEqual([u.state, u.opaqueData], ["PAUSED", "d2"]);

  const bad = call(rig, "ResumeUpdate", { updateId, opaqueData: { data: 5 } }, UPDATE);
  assert.equal(bad.error?.code, "invalid-argument");
  assert.match(bad.error!.message, /^opaqueData\.data: got 5, expected text$/);
  assert.deepEqual([u.state, u.opaqueData], ["PAUSED", "d2"], "nothing changed");
  const badPause = call(rig, "PauseJobWorkflow", { version: version(rig), opaqueData: "x" });
  assert.equal(badPause.error?.code, "invalid-argument");
  // Kept with the workflow after the change is made: too large for a store, it is refused first, whole.
  const huge = "é".repeat(MAX_OPAQUE_DATA_BYTES / 2 + 1);
  const tooLarge = call(rig, "ResumeUpdate", { updateId, opaqueData: { data: huge } }, UPDATE);
  assert.equal(tooLarge.error?.code, "invalid-argument");
  assert.equal(
    tooLarge.error!.message,
    `opaqueData.data: ${MAX_OPAQUE_DATA_BYTES + 2} bytes, expected at most ${MAX_OPAQUE_DATA_BYTES}`,
  );
  assert.deepEqual([u.state, u.opaqueData], ["PAUSED", "d2"], "nothing changed");

  ok(call(rig, "ResumeUpdate", { updateId, opaqueData: { data: "d3" } }, UPDATE));
  assert.deepEqual([u.state, u.opaqueData], ["ROLLING_FORWARD", "d3"]);
  ok(call(rig, "AbortUpdate", { updateId, opaqueData: { data: "d4" } }, UPDATE));
  assert.equal(rig.store.updates.get(u.updateId)!.opaqueData, "d4");
});

Deno.test("StopJob is refused while an update with startPods rolls, as Peloton's is", () => {
  const rig = new JobmgrRig();
  const v = service(rig);
  ok(call(rig, "PatchJob", {
    version: { value: v },
    spec: { defaultSpec: { containers: [container("sleep 120")] } },
    updateSpec: { batchSize: 1, startPods: true },
  }));
  rig.tick();
  assert.equal([...rig.jm.updates.values()][0].state, "ROLLING_FORWARD");
  const refused = call(rig, "StopJob", { version: version(rig) });
  assert.equal(refused.error?.code, "aborted");
  assert.match(refused.error!.message, /has active update with start_pods set, cannot stop the job now/);
  assert.equal(rig.job().runtime.goalState, "RUNNING");
  ok(call(rig, "PauseJobWorkflow", { version: version(rig) }));
  ok(call(rig, "StopJob", { version: version(rig) }));
  assert.equal(rig.job().runtime.goalState, "KILLED", "a paused one does not hold the stop back");
});
