/** Why a PENDING task waits: task List and Get ask the resource manager (GetAdmissionWaits) and show it. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { WAITS_TIMEOUT_MS } from "./job_api.ts";

type Body = Record<string, unknown>;

const FULL =
  "resource pool /pool-a has no room in its entitlement for the first task in line: cpu 12 of 12 " +
  "in use; it asks for cpu 1, memory 128 MB";
const RESERVED =
  "resource pool /pool-a has no room in its reservation (which non-preemptible tasks may not " +
  "exceed) for the first task in line: cpu 4 of 4 in use; it asks for cpu 1, memory 128 MB";
const CONTROLLER =
  "resource pool /pool-a has no room in its controller limit (10% of its reservation) for the " +
  "first task in line: cpu 1 of 1 in use; it asks for cpu 1, memory 128 MB";
const SLACK =
  "resource pool /pool-a has no room in its slack entitlement (for revocable tasks) for the first " +
  "task in line: cpu 2 of 2 in use; it asks for cpu 1, memory 128 MB";

const SLA = {
  priority: 0,
  preemptible: false,
  revocable: false,
  maximumRunningInstances: 0,
  minimumRunningInstances: 0,
  maxRunningTime: 0,
  maximumUnavailableInstances: 0,
};

function body(r: ApiReply): Body {
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

const listed = (r: ApiReply) => (body(r).result as Body).value as Record<string, Body>;
const runtimeOf = (info: Body) => info.runtime as Body;

Deno.test("task List: PENDING tasks show why their pool does not admit them; other tasks are left as they are", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3, sla: { ...SLA, preemptible: true } });
  rig.launch([1]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "the answer waits for the resource manager");
  rig.answerWaits({ entitlement: FULL, reservation: RESERVED });
  const [reply] = rig.replies();
  const value = listed(reply);
  // Preemptible tasks are not held by the reservation: only the entitlement line applies.
  assert.deepEqual(
    Object.values(value).map((t) => [runtimeOf(t).state, runtimeOf(t).message]),
    [["PENDING", FULL], ["LAUNCHING", undefined], ["PENDING", FULL]],
  );
  // Shown, not stored: the task's own record has no message.
  assert.equal(rig.task(0).message, undefined);
  assert.equal(rig.store.task(JOB_ID, 0)?.message, undefined);
});

Deno.test("task Get: a task asking for more than its pool's limit is told it will never be admitted", () => {
  const rig = new JobmgrRig();
  rig.create({
    task: { resource: { cpuLimit: 1, memLimitMb: 128, diskLimitMb: 0, fdLimit: 0, gpuLimit: 2 } },
  });
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  rig.answerWaits({ entitlement: FULL, limit: { cpu: 12, memory: 6144, disk: 10240, gpu: 0 } });
  const [reply] = rig.replies();
  const got = body(reply);
  const message = "the task asks for more than resource pool /pool-a may ever hold: gpu 2 (its limit: 0); " +
    "it will not be admitted unless the pool's limit is raised";
  assert.equal(runtimeOf(got.result as Body).message, message);
  assert.equal(runtimeOf((got.results as Body[])[0]).message, message, "results[0] is the same current run");
});

Deno.test("the waits that apply depend on the task: non-preemptible, controller, revocable", () => {
  const cases: [string, Parameters<JobmgrRig["create"]>[0], string | undefined][] = [
    ["non-preemptible", {}, `${FULL}; ${RESERVED}`],
    ["controller", { task: { controller: true } }, `${FULL}; ${CONTROLLER}; ${RESERVED}`],
    ["revocable", { sla: { ...SLA, revocable: true, preemptible: true } }, SLACK],
  ];
  for (const [what, config, expected] of cases) {
    const rig = new JobmgrRig();
    rig.create(config);
    rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
    rig.answerWaits({ entitlement: FULL, reservation: RESERVED, controller: CONTROLLER, slack: SLACK });
    assert.equal(runtimeOf(body(rig.replies()[0]).result as Body).message, expected, what);
  }
  // A pool whose queues nothing holds: no message.
  const rig = new JobmgrRig();
  rig.create();
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  rig.answerWaits();
  assert.equal(runtimeOf(body(rig.replies()[0]).result as Body).message, undefined);
});

Deno.test("without an answer from the resource manager, List answers after the timeout, without reasons", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const req = rig.transport.takeOne("api", "resmgr");
  rig.tick(WAITS_TIMEOUT_MS - 1);
  assert.deepEqual(rig.repliesSoFar(), []);
  rig.tick(1);
  const [reply] = rig.replies();
  assert.deepEqual(Object.values(listed(reply)).map((t) => runtimeOf(t).message), [undefined, undefined]);
  // The late answer is not a second reply.
  rig.jm.receive({
    kind: "api-reply",
    reqId: req.reqId,
    body: { waits: { path: "/pool-a", entitlement: FULL } },
  });
  rig.tick();
  assert.deepEqual(rig.repliesSoFar(), []);

  // An error from the resource manager (an unknown pool: the job's pool was deleted) is no reason either.
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const again = rig.transport.takeOne("api", "resmgr");
  rig.jm.receive({
    kind: "api-reply",
    reqId: again.reqId,
    body: { error: { notFound: { message: "gone" } } },
  });
  rig.tick();
  assert.deepEqual(Object.values(listed(rig.replies()[0])).map((t) => runtimeOf(t).message), [
    undefined,
    undefined,
  ]);
});

Deno.test("a List without PENDING tasks, or a PENDING task with its own message, asks the resource manager nothing", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.launch([0, 1]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  assert.equal(rig.transport.take("api", "resmgr").length, 0);
  assert.equal(Object.keys(listed(rig.replies()[0])).length, 2);

  // Preempted while waiting: back to PENDING with the resource manager's own reason, which stays.
  const other = new JobmgrRig();
  other.create();
  const id = other.taskId(0);
  other.placements([], [{ taskId: id, state: "READY", timeMs: 1 }]);
  other.placements([], [{
    taskId: id,
    state: "PENDING",
    timeMs: 2,
    reason: "PREEMPTION_REASON_REVOKE_RESOURCES",
  }]);
  other.store.settle();
  assert.equal(other.task(0).state, "PENDING");
  other.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  assert.equal(other.transport.take("api", "resmgr").length, 0);
  assert.equal(
    runtimeOf(body(other.replies()[0]).result as Body).message,
    "PREEMPTION_REASON_REVOKE_RESOURCES",
  );
});
