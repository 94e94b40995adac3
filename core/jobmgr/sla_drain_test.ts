import assert from "node:assert/strict";
import { DEFAULT_SLA } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { availability } from "./sla_drain.ts";

const ALL = [0, 1, 2, 3];
const MAINTENANCE = "PREEMPTION_REASON_HOST_MAINTENANCE" as const;

/** A running 4-instance service on h1 (no health check), `maximumUnavailableInstances` as given. */
function service(maxUnavailable: number, type: "SERVICE" | "BATCH" = "SERVICE"): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({
    type,
    instanceCount: ALL.length,
    sla: { ...DEFAULT_SLA, maximumUnavailableInstances: maxUnavailable },
  });
  rig.launch(ALL);
  for (const i of ALL) rig.status(rig.taskId(i), "TASK_RUNNING");
  hostState(rig, "HOST_STATE_DRAINING");
  return rig;
}

function hostState(rig: JobmgrRig, state: string): void {
  rig.jm.receive({
    kind: "host-inventory",
    full: false,
    hosts: [{ hostname: "h1", attributes: {}, state: state as "HOST_STATE_UP" }],
  });
  rig.tick();
}

/** The resource manager asks the job manager to drain these instances off h1. */
function drain(rig: JobmgrRig, instances: number[]): void {
  rig.placements([], [], instances.map((i) => ({ taskId: rig.taskId(i), reason: MAINTENANCE })));
}

const killed = (rig: JobmgrRig) =>
  rig.transport.take("kill-tasks", "hostmgr").flatMap((k) =>
    k.tasks.map((t) => Number(t.taskId.split("-").at(-2)))
  );

/** A drained instance ends, is placed on h2 and runs again there. */
function backElsewhere(rig: JobmgrRig, i: number): void {
  rig.status(rig.taskId(i), "TASK_KILLED");
  rig.launch([i], "h2");
  rig.status(rig.taskId(i), "TASK_RUNNING", { hostname: "h2" });
}

Deno.test("a service drains from a host in maintenance no more than maximumUnavailableInstances at a time", () => {
  const rig = service(1);
  drain(rig, [0, 1, 2]);
  assert.deepEqual(killed(rig), [0], "one at a time");
  // The resource manager has the held ones RUNNING again: the host manager's next drain request asks again
  // (after a restart of this job manager too).
  assert.deepEqual(rig.transport.take("drains-held", "resmgr").map((m) => m.taskIds), [
    [1, 2].map((i) => rig.taskId(i)),
  ]);
  assert.equal(rig.task(0).terminationReason, "KILLED_HOST_MAINTENANCE");
  assert.deepEqual([1, 2].map((i) => rig.task(i).state), ["RUNNING", "RUNNING"]);
  assert.equal(
    rig.task(1).message,
    "host h1 is in maintenance: draining waits for the job's SLA, 1 of at most 1 instances unavailable: " +
      "instance 0 (PREEMPTING)",
  );

  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.deepEqual(killed(rig), [], "still one down while it is placed again");
  rig.launch([0], "h2");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h2" });
  assert.deepEqual(killed(rig), [1], "the next as soon as the first is back");
  backElsewhere(rig, 1);
  assert.deepEqual(killed(rig), [2]);
  backElsewhere(rig, 2);
  assert.deepEqual(killed(rig), []);
  assert.deepEqual(ALL.map((i) => rig.task(i).hostname), ["h2", "h2", "h2", "h1"]);
});

Deno.test("without an SLA limit, or for batch work, every instance is drained at once", () => {
  for (const rig of [service(0), service(1, "BATCH")]) {
    drain(rig, [0, 1, 2]);
    assert.deepEqual(killed(rig), [0, 1, 2]);
  }
});

Deno.test("an instance that is down already is drained at once; one that is up waits; the wait ends with maintenance", () => {
  const rig = service(2);
  // Instance 3 is unhealthy: unavailable, so the job has one instance down before the drain starts.
  rig.status(rig.taskId(3), "TASK_RUNNING", { healthy: false });
  assert.equal(availability(rig.task(3)), "UNAVAILABLE");
  drain(rig, [0, 1, 3]);
  assert.deepEqual(killed(rig), [0, 3], "0 takes the job to 2 down; 3 was down already");
  assert.equal(rig.task(1).state, "RUNNING");

  // Maintenance is completed before the job recovers: instance 1 stays where it is, no longer waiting.
  assert.match(rig.task(1).message ?? "", /draining waits for the job's SLA/);
  hostState(rig, "HOST_STATE_UP");
  assert.equal(rig.task(1).message, "", "the wait for the drain is over");
  backElsewhere(rig, 0);
  assert.deepEqual(killed(rig), []);
  assert.equal(rig.task(1).hostname, "h1");
  assert.equal(rig.job(JOB_ID).tasks.size, 4);
});

Deno.test("a drain the SLA holds says which instance is down, and that it is pinned to a host in maintenance", async () => {
  // Two instances of a stateful service on h1, each pinned there by its volume; one may be down at a time.
  const rig = new JobmgrRig();
  rig.create({
    type: "SERVICE",
    instanceCount: 2,
    sla: { ...DEFAULT_SLA, maximumUnavailableInstances: 1 },
    task: { volume: { containerPath: "data", sizeMB: 64 } },
  });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  assert.deepEqual([0, 1].map((i) => rig.task(i).requiredHost), ["h1", "h1"]);
  hostState(rig, "HOST_STATE_DRAINING");
  drain(rig, [0, 1]);
  assert.deepEqual(killed(rig), [0], "one at a time");
  const why = "host h1 is in maintenance: draining waits for the job's SLA, 1 of at most 1 instances " +
    "unavailable: instance 0 (PREEMPTING), pinned by its volume to host h1, which is in maintenance " +
    "(HOST_STATE_DRAINING): it runs again only when h1 leaves maintenance";
  assert.equal(rig.task(1).message, why);

  // Instance 0 ends and waits to run again on h1, which is draining: the drain of 1 waits for ever, and
  // its message keeps saying why, as task Get and List show it.
  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.deepEqual(killed(rig), [], "the SLA still holds instance 1");
  assert.equal(rig.task(0).requiredHost, "h1");
  assert.equal(rig.task(1).state, "RUNNING");
  assert.equal(rig.task(1).message, why.replace("(PREEMPTING)", `(${rig.task(0).state})`));
  assert.match(rig.task(1).message!, /instance 0 \((INITIALIZED|PENDING)\), pinned by its volume to host h1/);
  rig.replies();
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  await rig.reads();
  if (rig.task(0).state === "PENDING") rig.answerWaits();
  const listed =
    (rig.replies()[0].body as { result: { value: Record<string, { runtime: { message: string } }> } })
      .result.value;
  assert.equal(listed["1"].runtime.message, rig.task(1).message);

  // Maintenance is completed: instance 0 runs again on h1, and instance 1 no longer waits.
  hostState(rig, "HOST_STATE_UP");
  assert.equal(rig.task(1).message, "");
  assert.deepEqual(killed(rig), []);
});

Deno.test("a drain the SLA holds names the instances down when none is pinned to a host in maintenance", () => {
  const rig = service(1);
  drain(rig, [0, 1]);
  assert.deepEqual(killed(rig), [0]);
  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.equal(
    rig.task(1).message,
    `host h1 is in maintenance: draining waits for the job's SLA, 1 of at most 1 instances unavailable: ` +
      `instance 0 (${rig.task(0).state})`,
  );
});

Deno.test("stopping the instance that holds a drain (ended, waiting to run again) lets the drain go at once", () => {
  const rig = service(1);
  // Instance 3 fails: a service's instance runs again, so it is unavailable until it does.
  rig.status(rig.taskId(3), "TASK_FAILED");
  assert.equal(availability(rig.task(3)), "UNAVAILABLE");
  drain(rig, [0]);
  assert.deepEqual(killed(rig), [], "held: instance 3 is down");
  assert.match(rig.task(0).message ?? "", /instance 3 \(/);

  // Stopped, it is no longer unavailable but KILLED (Peloton's getInstanceAvailability): the drain goes.
  rig.api("task", "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 3, to: 4 }] });
  rig.tick();
  assert.equal(availability(rig.task(3)), "KILLED");
  assert.deepEqual(killed(rig), [0]);
});

Deno.test("a held drain's reason is said anew when the host an unavailable instance is pinned to changes state", () => {
  // Instance 0 pinned to h2 by its volume, down; instance 1 on h1, whose drain the SLA holds.
  const rig = new JobmgrRig();
  rig.create({
    type: "SERVICE",
    instanceCount: 2,
    sla: { ...DEFAULT_SLA, maximumUnavailableInstances: 1 },
    task: { volume: { containerPath: "data", sizeMB: 64 } },
  });
  rig.launch([0], "h2");
  rig.launch([1], "h1");
  rig.status(rig.taskId(0), "TASK_RUNNING", { hostname: "h2" });
  rig.status(rig.taskId(1), "TASK_RUNNING");
  const state = (hostname: string, s: string) =>
    rig.jm.receive({
      kind: "host-inventory",
      full: false,
      hosts: [{ hostname, attributes: {}, state: s as "HOST_STATE_UP" }],
    });
  state("h2", "HOST_STATE_DRAINING");
  rig.tick();
  rig.placements([], [], [{ taskId: rig.taskId(0), reason: MAINTENANCE }]);
  assert.deepEqual(killed(rig), [0]);
  rig.status(rig.taskId(0), "TASK_KILLED", { hostname: "h2" });
  state("h1", "HOST_STATE_DRAINING");
  rig.tick();
  rig.placements([], [], [{ taskId: rig.taskId(1), reason: MAINTENANCE }]);
  assert.deepEqual(killed(rig), [], "held: instance 0 is down");
  assert.match(
    rig.task(1).message ?? "",
    /pinned by its volume to host h2, which is in maintenance \(HOST_STATE_DRAINING\)/,
  );

  // h2 is DOWN now: the reason says so, though no host the drains wait on changed.
  state("h2", "HOST_STATE_DOWN");
  rig.tick();
  assert.match(
    rig.task(1).message ?? "",
    /pinned by its volume to host h2, which is in maintenance \(HOST_STATE_DOWN\)/,
  );
});
