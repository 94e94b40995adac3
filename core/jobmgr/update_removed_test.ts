/**
 * An instance removed from the job while a workflow had it to do (a daemon's host drained) is listed removed,
 * not updated, and the workflow's counts add up to the job's instances.
 */
import assert from "node:assert/strict";
import type { HostInventory } from "../messages.ts";
import type { JobConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./api_json.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms. */
const SETTLE_MS = 10_000;

type Host = HostInventory["hosts"][number];
const host = (hostname: string, state: Host["state"] = "HOST_STATE_UP"): Host => ({
  hostname,
  attributes: {},
  state,
});

function inventory(rig: JobmgrRig, hosts: Host[], full = false) {
  rig.jm.receive({ kind: "host-inventory", full, hosts });
  rig.tick();
}

function daemon(version: string): JobConfig {
  const command = { shell: true, value: `agent ${version}`, arguments: [], environment: { variables: [] } };
  return makeJobConfig({ type: "DAEMON", instanceCount: 0, task: { command: { ...command, uris: [] } } });
}

/** Places and runs every instance the resource manager was asked to place, each on its host. */
function runQueued(rig: JobmgrRig): number[] {
  const tasks = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs).flatMap((g) => g.tasks);
  const live = tasks.filter((t) => rig.job().tasks.get(t.instanceId)?.goalState === "RUNNING");
  for (const t of live) {
    rig.launch([t.instanceId], t.requiredHost);
    rig.status(rig.taskId(t.instanceId), "TASK_RUNNING", { hostname: t.requiredHost });
  }
  return live.map((t) => t.instanceId);
}

/** Kills the host manager was asked for, each answered KILLED; the instances killed. */
function killsDone(rig: JobmgrRig): number[] {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks);
  for (const k of kills) rig.status(k.taskId, "TASK_KILLED", { hostname: k.hostname });
  return kills.map((k) => Number(k.taskId.split("-").at(-2)));
}

/** A daemon running on hosts a, b, c and d (instances 0 to 3), and a rolling update of it to v2. */
function updating(batchSize: number): { rig: JobmgrRig; updateId: string } {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000 });
  rig.create(daemon("v1"));
  inventory(rig, ["a", "b", "c", "d"].map((h) => host(h)), true);
  runQueued(rig);
  const { instanceCount: _, ...config } = jobConfigJson(daemon("v2")) as Record<string, unknown>;
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...config, changeLog: { version: rig.job().configVersion } },
    updateConfig: { batchSize },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return { rig, updateId: (reply.body as { updateID: { value: string } }).updateID.value };
}

/** The update as GetUpdate answers it: its lists and its counts. */
async function progress(rig: JobmgrRig, updateId: string) {
  rig.store.settle();
  rig.call(UPDATE, "GetUpdate", { updateId: { value: updateId } });
  await rig.reads();
  const info = (rig.replies()[0].body as { updateInfo: Record<string, unknown> }).updateInfo as {
    status: { state: string; numTasksDone: number; numTasksRemaining: number; numTasksFailed: number };
    instancesUpdated: number[];
    instancesRemoved: number[];
  };
  const { state, numTasksDone, numTasksRemaining, numTasksFailed } = info.status;
  return {
    state,
    updated: info.instancesUpdated,
    removed: info.instancesRemoved,
    done: numTasksDone,
    remaining: numTasksRemaining,
    failed: numTasksFailed,
  };
}

Deno.test("a daemon instance whose host drains while its batch updates it is listed removed, not updated", async () => {
  const { rig, updateId } = updating(2);
  assert.deepEqual(killsDone(rig).sort(), [0, 1], "the first batch is taken down");
  // Host b goes into maintenance before instance 1 runs on v2: the daemon leaves it.
  inventory(rig, [host("b", "HOST_STATE_DRAINING")]);
  rig.store.settle();
  assert.equal(rig.job().tasks.has(1), false, "instance 1 is removed");
  assert.deepEqual(runQueued(rig), [0]);
  assert.deepEqual(
    await progress(rig, updateId),
    { state: "ROLLING_FORWARD", updated: [0, 2, 3], removed: [1], done: 1, remaining: 3, failed: 0 },
    "instance 1 counts as removed (its removal done), not as updated",
  );
  rig.tick(SETTLE_MS);
  assert.deepEqual(killsDone(rig).sort(), [2, 3]);
  assert.deepEqual(runQueued(rig).sort(), [2, 3]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(
    await progress(rig, updateId),
    { state: "SUCCEEDED", updated: [0, 2, 3], removed: [1], done: 4, remaining: 0, failed: 0 },
  );
  assert.deepEqual([...rig.job().tasks.keys()], [0, 2, 3], "the job's instances are the updated ones");
});

Deno.test("a daemon instance whose host drains before its batch comes is listed removed, and no batch waits for it", async () => {
  const { rig, updateId } = updating(1);
  assert.deepEqual(killsDone(rig), [0]);
  // Host d goes into maintenance while instance 3 waits for its batch, still on v1.
  inventory(rig, [host("d", "HOST_STATE_DRAINING")]);
  assert.deepEqual(killsDone(rig), [3], "the daemon leaves d");
  rig.store.settle();
  assert.deepEqual(runQueued(rig), [0]);
  assert.deepEqual(await progress(rig, updateId), {
    state: "ROLLING_FORWARD",
    updated: [0, 1, 2],
    removed: [3],
    done: 1,
    remaining: 3,
    failed: 0,
  });
  for (const batch of [[1], [2]]) {
    rig.tick(SETTLE_MS);
    assert.deepEqual(killsDone(rig), batch);
    assert.deepEqual(runQueued(rig), batch);
  }
  rig.tick(SETTLE_MS);
  assert.deepEqual(
    await progress(rig, updateId),
    { state: "SUCCEEDED", updated: [0, 1, 2], removed: [3], done: 4, remaining: 0, failed: 0 },
  );
});
