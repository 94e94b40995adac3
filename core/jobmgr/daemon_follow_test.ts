/**
 * A daemon's instances follow its hosts through everything done to the job: a rolling update rolls the
 * instances it has (its count is its hosts', not the config's), a constraint changed by the update moves it to
 * the hosts the new one matches, a daemon left with no host waits for one, and a started daemon covers the
 * hosts that came while it was stopped.
 */
import assert from "node:assert/strict";
import type { HostInventory } from "../messages.ts";
import type { Constraint, JobConfig } from "../model/config_types.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson } from "./api_json.ts";

const UPDATE = "peloton.api.v0.update.svc.UpdateService";
/** The default `minRunningSeconds`, in ms. */
const SETTLE_MS = 10_000;

type Host = HostInventory["hosts"][number];
const host = (hostname: string, state: Host["state"] = "HOST_STATE_UP", attributes = {}): Host => ({
  hostname,
  attributes,
  state,
});

function inventory(rig: JobmgrRig, full: boolean, hosts: Host[]) {
  rig.jm.receive({ kind: "host-inventory", full, hosts });
  rig.tick();
}

const poolIs = (value: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key: "pool", value }, requirement: 1 },
});

const command = (value: string) => ({
  shell: true,
  value,
  arguments: [],
  environment: { variables: [] },
  uris: [],
});

function daemon(task: Partial<JobConfig["defaultConfig"]> = {}): JobConfig {
  return makeJobConfig({ type: "DAEMON", instanceCount: 0, task: { command: command("agent v1"), ...task } });
}

/** The daemon's live instances by host, and the config version each runs, or is to run. */
const byHost = (rig: JobmgrRig) =>
  Object.fromEntries(
    [...rig.job().tasks.values()].filter((t) => t.goalState !== "DELETED")
      .map((t) => [t.requiredHost, t.desiredConfigVersion ?? t.configVersion]),
  );

const onHost = (rig: JobmgrRig, hostname: string) =>
  [...rig.job().tasks.values()].find((t) => t.requiredHost === hostname && t.goalState !== "DELETED")!;

/** Places and runs every instance the resource manager was asked to place, each on its own host. */
function runQueued(rig: JobmgrRig): number[] {
  const tasks = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs).flatMap((g) => g.tasks);
  for (const t of tasks) {
    rig.launch([t.instanceId], t.requiredHost);
    rig.status(rig.taskId(t.instanceId), "TASK_RUNNING", { hostname: t.requiredHost });
  }
  return tasks.map((t) => t.instanceId);
}

/** Kills the host manager was asked for, each answered KILLED; the instances killed. */
function killsDone(rig: JobmgrRig): number[] {
  const kills = rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks);
  for (const k of kills) rig.status(k.taskId, "TASK_KILLED", { hostname: k.hostname });
  return kills.map((k) => Number(k.taskId.split("-").at(-2)));
}

/** A daemon (with `task`'s overrides) running on every matching host of `hosts`. */
function runningDaemon(
  hosts: Host[],
  task: Partial<JobConfig["defaultConfig"]> = {},
  config: ConstructorParameters<typeof JobmgrRig>[0] = {},
): JobmgrRig {
  const rig = new JobmgrRig({ initialTaskBackoffMs: 1_000, ...config });
  rig.create(daemon(task));
  inventory(rig, true, hosts);
  runQueued(rig);
  return rig;
}

/** A v0 CreateUpdate of the daemon to `next`, its file without an instanceCount, as daemon.yaml has none. */
function createUpdate(rig: JobmgrRig, next: JobConfig, batchSize: number): string {
  const { instanceCount: _, ...config } = jobConfigJson(next) as Record<string, unknown>;
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...config, changeLog: { version: rig.job().configVersion } },
    updateConfig: { batchSize },
  });
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  rig.tick();
  return (reply.body as { updateID: { value: string } }).updateID.value;
}

const stateOf = (rig: JobmgrRig, updateId: string) =>
  rig.jm.updates.get(updateId)?.state ?? rig.store.updates.get(updateId)?.state;

Deno.test("a rolling update of a daemon rolls its instances to the new config in batches, keeping one per host", () => {
  const rig = runningDaemon([host("a"), host("b"), host("c")]);
  assert.deepEqual(byHost(rig), { a: 1, b: 1, c: 1 });
  const updateId = createUpdate(rig, daemon({ command: command("agent v2") }), 1);
  const u = rig.jm.updates.get(updateId)!;
  // Before, the file's missing count read as 0: every instance was removed at once and the job left dead.
  assert.deepEqual([u.instancesAdded, u.instancesUpdated, u.instancesRemoved], [[], [0, 1, 2], []]);
  assert.equal(rig.job().config.instanceCount, 3);
  for (const batch of [[0], [1], [2]]) {
    assert.deepEqual(killsDone(rig), batch, "one instance at a time");
    assert.deepEqual(runQueued(rig), batch, "run again on its own host");
    rig.tick(SETTLE_MS);
  }
  rig.store.settle();
  assert.equal(stateOf(rig, updateId), "SUCCEEDED");
  assert.deepEqual(byHost(rig), { a: 2, b: 2, c: 2 });
  assert.deepEqual(
    [rig.job().runtime.state, rig.job().runtime.goalState, rig.job().config.instanceCount],
    ["RUNNING", "RUNNING", 3],
  );
  // It still follows its hosts, on the new config.
  inventory(rig, false, [host("d")]);
  assert.deepEqual(runQueued(rig), [3]);
  assert.deepEqual(byHost(rig), { a: 2, b: 2, c: 2, d: 2 });
});

Deno.test("a daemon update that changes its constraint moves it to the hosts the new one matches", () => {
  const hosts = [
    host("a", "HOST_STATE_UP", { pool: "edge" }),
    host("b", "HOST_STATE_UP", { pool: "core" }),
    host("c", "HOST_STATE_UP", { pool: "edge" }),
  ];
  const rig = runningDaemon(hosts, { constraint: poolIs("edge") });
  assert.deepEqual(byHost(rig), { a: 1, c: 1 });
  const updateId = createUpdate(rig, daemon({ constraint: poolIs("core") }), 1);
  assert.deepEqual(byHost(rig), { b: 2 }, "a and c no longer match: removed; b does: it gets one on v2");
  rig.store.settle();
  const u = rig.store.updates.get(updateId)!;
  assert.deepEqual(
    [u.state, u.instancesUpdated, u.instancesRemoved],
    ["SUCCEEDED", [], []],
    "none of its instances is on a host both match: nothing to roll",
  );
  assert.deepEqual(killsDone(rig).sort(), [0, 1]);
  assert.deepEqual(runQueued(rig), [2]);
  assert.deepEqual([...rig.job().tasks.keys()], [2], "the removed instances are gone");
  assert.equal(rig.job().config.instanceCount, 1);
});

Deno.test("a daemon with no host left waits for one, PENDING, and runs again when one comes back", () => {
  const pinned = {
    constraint: {
      type: "LABEL_CONSTRAINT",
      labelConstraint: {
        kind: "HOST",
        condition: "EQUAL",
        label: { key: "hostname", value: "c" },
        requirement: 1,
      },
    } as Constraint,
  };
  const rig = runningDaemon([host("a"), host("b"), host("c")], pinned);
  assert.deepEqual(byHost(rig), { c: 1 });
  inventory(rig, false, [host("c", "HOST_STATE_DRAINING")]);
  assert.deepEqual(killsDone(rig), [0]);
  rig.store.settle();
  assert.equal(rig.job().tasks.size, 0);
  // Before, it stayed KILLED and never followed its host back.
  assert.deepEqual([rig.job().runtime.state, rig.job().runtime.goalState], ["PENDING", "RUNNING"]);
  inventory(rig, false, [host("c", "HOST_STATE_UP")]);
  assert.deepEqual(runQueued(rig), [1]);
  rig.store.settle();
  assert.deepEqual(byHost(rig), { c: 1 });
  assert.equal(rig.job().runtime.state, "RUNNING");

  // Its one instance crashed (the job FAILED, the instance's restart held back) when its host left: removed.
  rig.status(rig.taskId(1), "TASK_FAILED", { hostname: "c" });
  rig.store.settle();
  assert.equal(rig.job().runtime.state, "FAILED");
  inventory(rig, false, [host("c", "HOST_STATE_DRAINING")]);
  rig.store.settle();
  assert.deepEqual([rig.job().tasks.size, rig.job().runtime.state], [0, "PENDING"]);
  inventory(rig, false, [host("c", "HOST_STATE_UP")]);
  assert.deepEqual(runQueued(rig), [2]);
});

Deno.test("a daemon started again covers the hosts that came while it was stopped, and leaves those that went", () => {
  const rig = runningDaemon([host("a"), host("b")]);
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.deepEqual(killsDone(rig), [0, 1]);
  inventory(rig, false, [host("c"), host("a", "LOST")]);
  assert.deepEqual(rig.transport.take("enqueue-gangs", "resmgr"), [], "stopped: it follows no host");
  rig.api("task", "Start", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.tick();
  // Before, it ran on a and b again, and never on c.
  assert.deepEqual(runQueued(rig).sort(), [1, 2]);
  assert.deepEqual(byHost(rig), { b: 1, c: 1 });
  assert.equal(onHost(rig, "c").state, "RUNNING");
});

Deno.test("a daemon update rolled back takes its instances and its hosts back to the old config", () => {
  const hosts = [
    host("a", "HOST_STATE_UP", { pool: "edge" }),
    host("b", "HOST_STATE_UP", { pool: "core" }),
    host("c", "HOST_STATE_UP", { pool: "edge" }),
  ];
  const rig = runningDaemon(hosts, { constraint: poolIs("edge") });
  assert.deepEqual(byHost(rig), { a: 1, c: 1 });
  const next = daemon({ command: command("agent v2 crashes") });
  const { instanceCount: _, ...config } = jobConfigJson(next) as Record<string, unknown>;
  rig.call(UPDATE, "CreateUpdate", {
    jobId: { value: JOB_ID },
    jobConfig: { ...config, changeLog: { version: 1 } },
    updateConfig: { batchSize: 1, maxInstanceAttempts: 1, maxFailureInstances: 1, rollbackOnFailure: true },
  });
  const updateId = (rig.replies()[0].body as { updateID: { value: string } }).updateID.value;
  rig.tick();
  assert.deepEqual(
    byHost(rig),
    { a: 2, b: 2, c: 1 },
    "b matches v2: it gets an instance at once; a is taken",
  );
  assert.deepEqual(killsDone(rig), [0]);
  const queued = rig.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs).flatMap((g) =>
    g.tasks
  );
  for (const t of queued) rig.launch([t.instanceId], t.requiredHost);
  rig.status(rig.taskId(0), "TASK_FAILED", { hostname: "a" });
  rig.tick();
  assert.equal(rig.jm.updates.get(updateId)?.state, "ROLLING_BACKWARD");
  // Back on the old constraint: b's instance goes; a's, and none other, goes back to the old config. c's, on
  // it still, is at the rollback's version without a restart (Peloton's handleUnchangedInstancesInUpdate).
  assert.deepEqual(rig.jm.updates.get(updateId)?.instancesUpdated, [0]);
  assert.deepEqual(byHost(rig), { a: 3, c: 3 });
  runQueued(rig);
  killsDone(rig);
  rig.tick(SETTLE_MS);
  rig.store.settle();
  assert.equal(stateOf(rig, updateId), "ROLLED_BACK");
  assert.deepEqual([...rig.job().tasks.keys()], [0, 1]);
  assert.equal(rig.job().config.instanceCount, 2);
});

Deno.test("the simulator's untracking of ended jobs keeps a daemon whose instances all ended for now", () => {
  const rig = runningDaemon([host("a")], {}, { untrackTerminalJobs: true });
  rig.status(rig.taskId(0), "TASK_FAILED", { hostname: "a" });
  rig.store.settle();
  assert.equal(rig.job()?.runtime.state, "FAILED", "still held: its goal is to run");
  rig.tick(1_000);
  assert.deepEqual(runQueued(rig), [0], "its instance restarts after its backoff");
});

Deno.test("a daemon started by a rolling start is to run again: it covers new hosts and is not stopped again", () => {
  const rig = runningDaemon([host("a"), host("b")]);
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.deepEqual(killsDone(rig), [0, 1]);
  rig.api("job", "Start", { id: { value: JOB_ID }, startConfig: { batchSize: 1 } });
  assert.equal(rig.replies()[0].error, undefined);
  rig.tick();
  assert.equal(rig.job().runtime.goalState, "RUNNING");
  // Before, its goal stayed KILLED: the next host change stopped the instances it had started, and gave the
  // new host none.
  inventory(rig, false, [host("c")]);
  assert.deepEqual(killsDone(rig), []);
  assert.deepEqual(runQueued(rig).sort(), [0, 2]);
  rig.tick(SETTLE_MS);
  assert.deepEqual(runQueued(rig), [1]);
  // The start runs the daemon's config as a new version, as Peloton's JobManager Start makes one.
  assert.deepEqual(byHost(rig), { a: 2, b: 2, c: 2 });
});
