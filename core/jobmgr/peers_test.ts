/** Production's separate daemons: a new resource or host manager gets the job manager's tasks again; shards move. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";

Deno.test("a new resource manager gets the waiting tasks queued again and the running ones registered", () => {
  const r = new JobmgrRig();
  r.create({ instanceCount: 3 });
  const launch = r.launch([0]);
  r.status(launch.tasks[0].taskId, "TASK_RUNNING");
  r.transport.drain();
  r.jm.receive({ kind: "peer-changed", role: "resmgr" });
  r.tick();
  const gangs = r.transport.take("enqueue-gangs", "resmgr").flatMap((m) => m.gangs);
  assert.deepEqual(gangs.flatMap((g) => g.tasks.map((t) => t.instanceId)).sort(), [1, 2]);
  const tracked = r.transport.takeOne("track-tasks", "resmgr").tasks;
  assert.deepEqual(tracked.map((t) => [t.task.instanceId, t.state]), [[0, "RUNNING"]]);
  // The placement poll starts over with the new leader.
  assert.equal(r.transport.take("get-placements", "resmgr").length, 1);
});

Deno.test("a new host manager gets every launched task to reconcile", () => {
  const r = new JobmgrRig();
  r.create({ instanceCount: 2 });
  r.launch([0, 1]);
  r.transport.drain();
  r.jm.receive({ kind: "peer-changed", role: "hostmgr" });
  const msg = r.transport.takeOne("reconcile-tasks", "hostmgr");
  assert.deepEqual(msg.tasks.map((t) => [t.instanceId, t.hostname]), [[0, "h1"], [1, "h1"]]);
});

Deno.test("a new host manager is sent again the kills of tasks still KILLING or PREEMPTING, with the rest of their grace", () => {
  const r = new JobmgrRig();
  r.create({ type: "SERVICE", instanceCount: 3, task: { killGracePeriodSeconds: 20 } });
  r.launch([0, 1, 2]);
  for (const i of [0, 1, 2]) r.status(r.taskId(i), "TASK_RUNNING");
  r.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 0, to: 1 }] });
  r.placements([], [], [{ taskId: r.taskId(2), reason: "PREEMPTION_REASON_REVOKE_RESOURCES" }]);
  assert.deepEqual([0, 1, 2].map((i) => r.task(i).state), ["KILLING", "RUNNING", "PREEMPTING"]);
  r.tick(5_000);
  r.transport.drain();
  // The old host manager died with the kills: the new one hears of every launched task, then the kills.
  r.jm.receive({ kind: "peer-changed", role: "hostmgr" });
  const sent = r.transport.drain().filter((s) => s.to === "hostmgr").map((s) => s.msg);
  assert.deepEqual(sent.map((m) => m.kind), ["reconcile-tasks", "kill-tasks"]);
  assert.equal(sent[0].kind === "reconcile-tasks" ? sent[0].tasks.length : 0, 3);
  const kills = sent[1].kind === "kill-tasks" ? sent[1].tasks : [];
  // 15 s left of each one's 20 s grace.
  assert.deepEqual(kills.map((k) => [k.taskId, k.gracePeriodMs, k.hostname]), [
    [r.taskId(0), 15_000, "h1"],
    [r.taskId(2), 15_000, "h1"],
  ]);
  // Nothing else changed: the tasks wait for their kills to land.
  assert.deepEqual([0, 1, 2].map((i) => r.task(i).state), ["KILLING", "RUNNING", "PREEMPTING"]);
});

Deno.test("a released job is forgotten and nothing more is written for it; adopting it resumes it", async () => {
  const r = new JobmgrRig();
  r.create({ instanceCount: 2 });
  r.launch([0, 1]);
  r.store.settle();
  r.jm.release([JOB_ID]);
  assert.equal(r.jm.jobs.size, 0);
  const before = r.store.batches.length;
  r.status(`${JOB_ID}-0-1`, "TASK_RUNNING");
  r.store.settle();
  assert.equal(r.store.batches.length, before, "no write for a released job");
  // Nor is its running task killed as an orphan: it is another job manager's now.
  assert.deepEqual(r.transport.take("kill-tasks", "hostmgr"), []);
  const job = (await r.store.getJob(JOB_ID))!;
  const tasks = await r.store.getTasks(JOB_ID);
  r.transport.drain();
  r.jm.adopt([{ job, tasks }]);
  r.tick();
  assert.equal(r.jm.jobs.size, 1);
  assert.equal(r.transport.takeOne("reconcile-tasks", "hostmgr").tasks.length, 2);
});
