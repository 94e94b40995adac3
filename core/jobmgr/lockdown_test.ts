import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { DEFAULT_JOBMGR_CONFIG, JobManager } from "./jobmgr.ts";
import { ADMIN_SERVICE, apiLockKind, storedLocks } from "./lockdown.ts";
import { WAITS_TIMEOUT_MS } from "./job_api.ts";

const ALL = [0, 1, 2];

function lock(rig: JobmgrRig, method: "Lockdown" | "RemoveLockdown", components: unknown) {
  rig.call(ADMIN_SERVICE, method, { components });
  const [reply] = rig.replies();
  return reply;
}

/** A running 3-instance batch job. */
function running(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: ALL.length });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.transport.drain();
  return rig;
}

Deno.test("Peloton's api_lock classes: Get/Query/List/Browse read, Create/Stop/Update/... write, the rest neither", () => {
  assert.equal(apiLockKind("peloton.api.job.JobManager::Get"), "Read");
  assert.equal(apiLockKind("peloton.api.task.TaskManager::BrowseSandbox"), "Read");
  assert.equal(apiLockKind("peloton.api.v1alpha.job.stateless.svc.JobService::QueryPods"), "Read");
  assert.equal(apiLockKind("peloton.api.job.JobManager::Create"), "Write");
  assert.equal(apiLockKind("peloton.api.v1alpha.pod.svc.PodService::RestartPod"), "Write");
  assert.equal(apiLockKind("peloton.api.v0.update.svc.UpdateService::RollbackUpdate"), "Write");
  assert.equal(apiLockKind(`${ADMIN_SERVICE}::RemoveLockdown`), undefined);
});

Deno.test("Lockdown Write refuses write calls with Peloton's message, keeps reads, and is lifted by RemoveLockdown", () => {
  const rig = running();
  assert.deepEqual(lock(rig, "Lockdown", ["Write"]).body, { successes: ["Write"], failures: [] });
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.replies()[0].error, { code: "internal", message: "All write APIs are locked down" });
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "nothing stopped");
  rig.api("job", "Get", { id: { value: JOB_ID } });
  assert.equal(rig.replies()[0].error, undefined, "reads still answer");

  assert.deepEqual(
    lock(rig, "Lockdown", [1]).body,
    { successes: ["Read"], failures: [] },
    "Peloton's number",
  );
  rig.api("job", "Get", { id: { value: JOB_ID } });
  assert.deepEqual(rig.replies()[0].error, { code: "internal", message: "All read APIs are locked down" });

  assert.deepEqual(lock(rig, "RemoveLockdown", ["Read", "Write"]).body, {
    successes: ["Read", "Write"],
    failures: [],
  });
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  assert.equal(rig.replies()[0].error, undefined);
  assert.equal(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks).length, ALL.length);
});

Deno.test("Lockdown Kill holds kills back until it is lifted; GoalStateEngine runs no actions meanwhile", () => {
  const rig = running();
  lock(rig, "Lockdown", ["Kill"]);
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "held back");
  lock(rig, "RemoveLockdown", ["Kill"]);
  assert.equal(rig.transport.take("kill-tasks", "hostmgr").flatMap((k) => k.tasks).length, ALL.length);

  // With the goal-state engine locked, a new job is stored but its tasks are not sent for scheduling.
  const rig2 = new JobmgrRig();
  lock(rig2, "Lockdown", ["GoalStateEngine"]);
  assert.equal(rig2.jm.taskEngine.paused, true);
  assert.deepEqual(rig2.create({ instanceCount: 2 }).gangs, [], "accepted, not acted on");
  rig2.tick(60_000);
  assert.deepEqual(rig2.transport.take("enqueue-gangs"), []);
  lock(rig2, "RemoveLockdown", ["GoalStateEngine"]);
  rig2.tick();
  const sent = rig2.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs.flatMap((g) => g.tasks));
  assert.deepEqual(sent.map((t) => t.instanceId), [0, 1]);
});

Deno.test("Lockdown Launch stops fetching placements; a placement already on its way is launched once lifted", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  const poll = rig.transport.takeOne("get-placements", "resmgr");
  lock(rig, "Lockdown", ["Launch"]);
  // The poll out before the lock is answered: its tasks are not launched yet.
  rig.jm.receive({
    kind: "placements",
    reqId: poll.reqId,
    placements: [{
      leaseId: "h1#1",
      hostname: "h1",
      agentId: "agent-h1",
      tasks: [{ taskId: rig.taskId(0), ports: {} }],
    }],
    changes: [],
    preemptions: [],
  });
  rig.tick(10_000);
  assert.deepEqual(rig.transport.take("launch-tasks"), []);
  assert.deepEqual(rig.transport.take("get-placements"), [], "no new poll while locked");
  lock(rig, "RemoveLockdown", ["Launch"]);
  const launched = rig.transport.take("launch-tasks", "hostmgr");
  assert.deepEqual(launched.flatMap((l) => l.tasks.map((t) => t.taskId)), [rig.taskId(0)]);
  assert.equal(rig.transport.take("get-placements", "resmgr").length, 1, "polling again");
});

Deno.test("a lockdown is stored, outlives a restart, and a refused write undoes it; bad components are refused", async () => {
  const rig = running();
  assert.deepEqual(lock(rig, "Lockdown", ["Write", "GoalStateEngine"]).body, {
    successes: ["Write", "GoalStateEngine"],
    failures: [],
  });
  const stored = await rig.store.adminLocks();
  assert.deepEqual(storedLocks(stored), ["GoalStateEngine", "Write"]);
  const jm = new JobManager(
    { ...rig.ports, self: "jobmgr", resmgr: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_JOBMGR_CONFIG,
  );
  jm.applyLocks(storedLocks(stored));
  jm.start();
  assert.deepEqual([...jm.locks].sort(), ["GoalStateEngine", "Write"]);
  assert.equal(jm.jobEngine.paused, true);

  rig.store.failNextWrite(new Error("disk full"));
  rig.call(ADMIN_SERVICE, "Lockdown", { components: ["Kill"] });
  assert.deepEqual(rig.replies()[0].error, { code: "internal", message: "storing the lockdown: disk full" });
  assert.deepEqual([...rig.jm.locks].sort(), ["GoalStateEngine", "Write"], "as stored");

  for (const bad of [[], ["Everything"], "Write", [9]]) {
    rig.call(ADMIN_SERVICE, "Lockdown", { components: bad });
    const [reply] = rig.replies();
    assert.equal(reply.error?.code, "invalid-argument");
    assert.match(
      reply.error!.message,
      /^components: got .*, expected a list of components \(GoalStateEngine/,
    );
  }
  rig.call(ADMIN_SERVICE, "Unlock", {});
  assert.equal(rig.replies()[0].error?.code, "unimplemented");
});

Deno.test("with Launch locked down, a PENDING task no pool queue holds says its launch is held back", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  lock(rig, "Lockdown", ["Launch"]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  // No pool's wait from the resource manager (it does not answer here): the lockdown is the reason shown.
  rig.tick(WAITS_TIMEOUT_MS);
  const [reply] = rig.replies();
  const task =
    (reply.body as { result: { value: Record<string, { runtime: { state: string; message?: string } }> } })
      .result.value[0];
  assert.equal(task.runtime.state, "PENDING");
  assert.match(task.runtime.message ?? "", /^launches are locked down \(AdminService Lockdown: Launch\)/);
  lock(rig, "RemoveLockdown", ["Launch"]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  rig.tick(WAITS_TIMEOUT_MS);
  const [after] = rig.replies();
  const again = (after.body as { result: { value: Record<string, { runtime: { message?: string } }> } })
    .result.value[0];
  assert.equal(again.runtime.message, undefined);
});
