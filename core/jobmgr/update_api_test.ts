/** UpdateService's reads: GetUpdate (whole, or its status alone) and GetUpdateCache, in Peloton's shapes. */
import assert from "node:assert/strict";
import { JOB_ID, type JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { jobConfigJson } from "./api_json.ts";
import { UPDATE_SERVICE } from "./update_api.ts";

/** Long enough for an aborted update's end to be handled. */
const SETTLE_MS = 10_000;

/** Starts an update of the 3-instance job to 4 instances of a new command, 2 at a time; its id. */
function update(rig: JobmgrRig): string {
  const command = { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] };
  const next = makeJobConfig({ type: "SERVICE", instanceCount: 4, task: { command } });
  rig.call(UPDATE_SERVICE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...jobConfigJson(next), changeLog: { version: 1 } },
    updateConfig: { batchSize: 2 },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

async function call(rig: JobmgrRig, method: string, body: unknown) {
  rig.call(UPDATE_SERVICE, method, body);
  await rig.reads();
  return rig.replies()[0];
}

Deno.test("GetUpdate with statusOnly answers the update's id and status alone, as Peloton's", async () => {
  const rig = runningService(3, { settled: true });
  const id = update(rig);
  const whole = await call(rig, "GetUpdate", { updateId: { value: id } });
  const info = (whole.body as { updateInfo: Record<string, unknown> }).updateInfo;
  assert.ok(info.config && info.jobId, "without statusOnly: the whole UpdateInfo");
  const status = await call(rig, "GetUpdate", { updateId: { value: id }, statusOnly: true });
  assert.deepEqual(status.body, {
    updateInfo: {
      updateId: { value: id },
      status: { state: "ROLLING_FORWARD", numTasksDone: 0, numTasksFailed: 0, numTasksRemaining: 4 },
    },
  });
  assert.deepEqual(
    (await call(rig, "GetUpdate", { updateId: { value: id }, statusOnly: false })).body,
    whole.body,
  );
});

Deno.test("GetUpdate refuses a statusOnly that is not true or false, naming it", async () => {
  const rig = runningService(3, { settled: true });
  const id = update(rig);
  for (const bad of ["yes", 1, "true"]) {
    const reply = await call(rig, "GetUpdate", { updateId: { value: id }, statusOnly: bad });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `statusOnly: got ${JSON.stringify(bad)}, expected true or false`,
    });
  }
});

Deno.test("GetUpdateCache answers the update as the job manager holds it, in Peloton's shape", async () => {
  const rig = runningService(3, { settled: true });
  const id = update(rig);
  const cache = await call(rig, "GetUpdateCache", { updateId: { value: id } });
  assert.equal(cache.error, undefined, JSON.stringify(cache.error));
  assert.deepEqual(cache.body, {
    jobId: { value: JOB_ID },
    state: "ROLLING_FORWARD",
    instancesTotal: [0, 1, 2, 3],
    instancesDone: [],
    instancesCurrent: [3, 0],
    instancesAdded: [3],
    instancesUpdated: [0, 1, 2],
    instancesFailed: [],
  });
  // Once it ends it leaves the cache, as Peloton's workflow does: the store still has it for GetUpdate.
  assert.equal((await call(rig, "AbortUpdate", { updateId: { value: id } })).error, undefined);
  rig.tick(SETTLE_MS);
  assert.equal(rig.jm.updates.size, 0, "the update has ended");
  assert.deepEqual((await call(rig, "GetUpdateCache", { updateId: { value: id } })).error, {
    code: "not-found",
    message: `update ${id} not found in cache`,
  });
  assert.equal((await call(rig, "GetUpdate", { updateId: { value: id } })).error, undefined);
  assert.deepEqual((await call(rig, "GetUpdateCache", {})).error, {
    code: "invalid-argument",
    message: "updateId: missing, expected an update id",
  });
});

Deno.test("AbortUpdate refuses a softAbort that is not true or false, naming it, and the update goes on", async () => {
  const rig = runningService(3, { settled: true });
  const id = update(rig);
  const writes = rig.store.batches.length;
  for (const bad of ["yes", 1, "true", {}]) {
    const reply = await call(rig, "AbortUpdate", { updateId: { value: id }, softAbort: bad });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `softAbort: got ${JSON.stringify(bad)}, expected true or false`,
    });
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.equal(rig.jm.updates.get(id)?.state, "ROLLING_FORWARD", "not aborted");
  assert.equal(
    (await call(rig, "AbortUpdate", { updateId: { value: id }, softAbort: true })).error,
    undefined,
  );
  const info = (await call(rig, "GetUpdate", { updateId: { value: id } })).body as {
    updateInfo: { status: { state: string } };
  };
  assert.equal(info.updateInfo.status.state, "ABORTED");
});

Deno.test("the update calls refuse an update id given as a bare string, as protobuf's JSON does a message", async () => {
  const rig = runningService(3, { settled: true });
  const id = update(rig);
  const writes = rig.store.batches.length;
  for (const method of ["GetUpdate", "GetUpdateCache", "PauseUpdate", "ResumeUpdate", "AbortUpdate"]) {
    const reply = await call(rig, method, { updateId: id });
    assert.deepEqual(reply.error, {
      code: "invalid-argument",
      message: `updateId: got "${id}", expected an update id as a message, {"value": "${id}"}`,
    }, method);
  }
  for (const method of ["GetUpdate", "AbortUpdate"]) {
    assert.deepEqual((await call(rig, method, { updateId: [id] })).error, {
      code: "invalid-argument",
      message: `updateId: got ["${id}"], expected an update id as {"value": ...}`,
    }, method);
    assert.deepEqual((await call(rig, method, {})).error, {
      code: "invalid-argument",
      message: "updateId: missing, expected an update id",
    }, method);
  }
  rig.store.settle();
  assert.equal(rig.store.batches.length, writes, "nothing written");
  assert.equal(rig.jm.updates.get(id)?.state, "ROLLING_FORWARD", "not aborted");
});
