/** Why a PENDING task waits: task List and Get ask the resource manager (GetAdmissionWaits) and show it. */
import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import type { TaskConfig } from "../model/config_types.ts";
import { DEFAULT_SLA } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { WAITS_TIMEOUT_MS } from "./job_api.ts";

type Body = Record<string, unknown>;

// What the resource manager would say of the first gang of each of the pool's queues.
const PENDING =
  "resource pool /pool-a has no room in its entitlement for the first task in line: cpu 12 of 12 " +
  "in use; it asks for cpu 1, memory 128 MB";
const NON_PREEMPTIBLE =
  "resource pool /pool-a has no room in its reservation (which non-preemptible tasks may " +
  "not exceed) for the first task in line: cpu 4 of 4 in use; it asks for cpu 1, memory 128 MB";
const CONTROLLER =
  "resource pool /pool-a has no room in its controller limit (10% of its reservation) for the " +
  "first task in line: cpu 1 of 1 in use; it asks for cpu 1, memory 128 MB";
const REVOCABLE =
  "resource pool /pool-a has no room in its slack entitlement (for revocable tasks) for the " +
  "first task in line: cpu 2 of 2 in use; it asks for cpu 1, memory 128 MB";
const ALL = {
  pending: PENDING,
  nonPreemptible: NON_PREEMPTIBLE,
  controller: CONTROLLER,
  revocable: REVOCABLE,
};

function body(r: ApiReply): Body {
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

const listed = (r: ApiReply) => (body(r).result as Body).value as Record<string, Body>;
const runtimeOf = (info: Body) => info.runtime as Body;
const messages = (r: ApiReply) => Object.values(listed(r)).map((t) => runtimeOf(t).message);

Deno.test("task List: PENDING tasks show why their pool does not admit them; other tasks are left as they are", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 3, sla: { ...DEFAULT_SLA, preemptible: true } });
  rig.launch([1]);
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  assert.deepEqual(rig.repliesSoFar(), [], "the answer waits for the resource manager");
  rig.answerWaits(ALL);
  const [reply] = rig.replies();
  // A preemptible, non-controller, non-revocable task waits only in the pending queue.
  assert.deepEqual(
    Object.values(listed(reply)).map((t) => [runtimeOf(t).state, runtimeOf(t).message]),
    [["PENDING", PENDING], ["LAUNCHING", undefined], ["PENDING", PENDING]],
  );
  // Shown, not stored: the task's own record has no message.
  assert.equal(rig.task(0).message, undefined);
  assert.equal(rig.store.task(JOB_ID, 0)?.message, undefined);
  // Answered once: the timer that would have answered without reasons is gone.
  rig.tick(WAITS_TIMEOUT_MS);
  assert.deepEqual(rig.repliesSoFar(), []);
});

Deno.test("task Get: a task asking for more than its pool's limit is told it will never be admitted", () => {
  const rig = new JobmgrRig();
  rig.create({
    task: { resource: { cpuLimit: 1, memLimitMb: 128, diskLimitMb: 0, fdLimit: 0, gpuLimit: 2 } },
  });
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  rig.answerWaits({ pending: PENDING }, { cpu: 12, memory: 6144, disk: 10240, gpu: 0 });
  const got = body(rig.replies()[0]);
  const message = "the task asks for more than resource pool /pool-a may ever hold: gpu 2 (its limit: 0); " +
    "it will not be admitted unless the pool's limit is raised";
  assert.equal(runtimeOf(got.result as Body).message, message);
  assert.equal(runtimeOf((got.results as Body[])[0]).message, message, "results[0] is the same current run");
});

Deno.test("a task is told about the pending queue and the one side queue admission would move it to", () => {
  const cases: [string, Parameters<JobmgrRig["create"]>[0], string, boolean?][] = [
    ["non-preemptible", {}, `${PENDING}; ${NON_PREEMPTIBLE}`],
    ["non-preemptible, preemption off", {}, PENDING, false],
    [
      "controller",
      { task: { controller: true }, sla: { ...DEFAULT_SLA, preemptible: true } },
      `${PENDING}; ${CONTROLLER}`,
    ],
    // Revocable tasks queue in the pending queue too: a non-revocable gang at its head holds them.
    [
      "revocable",
      { sla: { ...DEFAULT_SLA, revocable: true, preemptible: true } },
      `${PENDING}; ${REVOCABLE}`,
    ],
    // Admission's order (`sideQueueFor`): non-preemptible first, then controller, then revocable.
    ["non-preemptible controller", { task: { controller: true } }, `${PENDING}; ${NON_PREEMPTIBLE}`],
    [
      "non-preemptible revocable",
      { sla: { ...DEFAULT_SLA, revocable: true } },
      `${PENDING}; ${NON_PREEMPTIBLE}`,
    ],
    // A controller task in a gang is no controller gang: it stays in the pending queue.
    [
      "controller in a gang of 2",
      {
        instanceCount: 2,
        instanceConfig: { 0: { controller: true } as TaskConfig },
        sla: { ...DEFAULT_SLA, preemptible: true, minimumRunningInstances: 2 },
      },
      PENDING,
    ],
  ];
  for (const [what, config, expected, preemption] of cases) {
    const rig = new JobmgrRig();
    rig.create(config);
    rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
    rig.answerWaits(ALL, undefined, preemption);
    assert.equal(runtimeOf(body(rig.replies()[0]).result as Body).message, expected, what);
  }
  // Only a side queue is held: a plain task is not told about it.
  const plain = new JobmgrRig();
  plain.create({ sla: { ...DEFAULT_SLA, preemptible: true } });
  plain.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  plain.answerWaits({ nonPreemptible: NON_PREEMPTIBLE, controller: CONTROLLER, revocable: REVOCABLE });
  assert.equal(runtimeOf(body(plain.replies()[0]).result as Body).message, undefined);
});

Deno.test("without an answer from the resource manager, List answers after the timeout, without reasons", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2 });
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const req = rig.transport.takeOne("api", "resmgr");
  rig.tick(WAITS_TIMEOUT_MS - 1);
  assert.deepEqual(rig.repliesSoFar(), []);
  rig.tick(1);
  assert.deepEqual(messages(rig.replies()[0]), [undefined, undefined]);
  // The late answer is dropped: no second reply.
  const waits = {
    path: "/pool-a",
    limit: { cpu: 1000, memory: 1e9, disk: 1e9, gpu: 1000 },
    preemption: true,
    queues: ALL,
  };
  rig.jm.receive({ kind: "api-reply", reqId: req.reqId, body: { waits } });
  rig.tick();
  assert.deepEqual(rig.repliesSoFar(), []);

  // An error from the resource manager (the job's pool was deleted) is no reason either.
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const again = rig.transport.takeOne("api", "resmgr");
  rig.jm.receive({
    kind: "api-reply",
    reqId: again.reqId,
    body: { error: { notFound: { message: "gone" } } },
  });
  rig.tick();
  assert.deepEqual(messages(rig.replies()[0]), [undefined, undefined]);

  // Nor is an answer of another shape (a resource manager of another version): answered all the same.
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const odd = rig.transport.takeOne("api", "resmgr");
  rig.jm.receive({ kind: "api-reply", reqId: odd.reqId, body: { waits: { entitlement: PENDING } } });
  rig.tick();
  assert.deepEqual(messages(rig.replies()[0]), [undefined, undefined]);
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
