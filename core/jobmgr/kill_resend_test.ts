import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { ADMIN_SERVICE } from "./lockdown.ts";
import { type Metrics, noMetrics } from "../ports/metrics.ts";

const GRACE_MS = 5_000, RESEND_MS = 60_000;

/** A running 1-instance batch job with a 5 s kill grace period, stopped: its first kill taken. */
function stopped(): JobmgrRig {
  const rig = new JobmgrRig({ killResendMs: RESEND_MS });
  rig.create({ instanceCount: 1, task: { killGracePeriodSeconds: GRACE_MS / 1000 } });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  assert.deepEqual(kills(rig), [[rig.taskId(0), GRACE_MS]], "the stop's kill, with the grace period");
  assert.equal(rig.task(0).state, "KILLING");
  return rig;
}

function kills(rig: JobmgrRig): [string, number][] {
  return rig.transport.take("kill-tasks", "hostmgr").flatMap((k) =>
    k.tasks.map((t): [string, number] => [t.taskId, t.gracePeriodMs])
  );
}

Deno.test("a kill that gets no answer is sent again, with no grace left, once the grace period and killResendMs passed; and again every killResendMs until the task ends", () => {
  const rig = stopped();
  rig.tick(GRACE_MS + RESEND_MS - 1);
  assert.deepEqual(kills(rig), [], "not before its time");
  rig.tick(1);
  assert.deepEqual(kills(rig), [[rig.taskId(0), 0]]);
  rig.tick(RESEND_MS - 1);
  assert.deepEqual(kills(rig), []);
  rig.tick(1);
  assert.deepEqual(kills(rig), [[rig.taskId(0), 0]], "and again");
  rig.status(rig.taskId(0), "TASK_KILLED");
  assert.equal(rig.task(0).state, "KILLED");
  assert.equal(rig.job().runtime.state, "KILLED");
  rig.tick(10 * RESEND_MS);
  assert.deepEqual(kills(rig), [], "an ended task is not killed again");
});

Deno.test("a kill answered in time is not sent again", () => {
  const rig = stopped();
  rig.tick(GRACE_MS);
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.tick(10 * RESEND_MS);
  assert.deepEqual(kills(rig), []);
});

Deno.test("while kills are locked down nothing is sent again; once lifted, the held kill goes and resends resume", () => {
  const rig = stopped();
  rig.call(ADMIN_SERVICE, "Lockdown", { components: ["Kill"] });
  rig.replies();
  rig.tick(GRACE_MS + 3 * RESEND_MS);
  assert.deepEqual(kills(rig), [], "held");
  rig.call(ADMIN_SERVICE, "RemoveLockdown", { components: ["Kill"] });
  rig.replies();
  rig.tick(RESEND_MS);
  assert.deepEqual(kills(rig), [[rig.taskId(0), 0]], "one kill, not one per period missed");
});

Deno.test("the kill resend counter exists from the start, at 0, so /metrics shows it before any resend", () => {
  const counts = new Map<string, number>();
  const metrics: Metrics = {
    ...noMetrics,
    counter(name) {
      counts.set(name, counts.get(name) ?? 0);
      return { inc: (by = 1) => void counts.set(name, counts.get(name)! + by) };
    },
  };
  const rig = new JobmgrRig({ killResendMs: RESEND_MS }, { metrics });
  assert.equal(counts.get("peloton_jobmgr_kill_resends_total"), 0, "made at start");
  rig.create({ instanceCount: 1, task: { killGracePeriodSeconds: GRACE_MS / 1000 } });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.api("task", "Stop", { jobId: { value: JOB_ID } });
  rig.replies();
  rig.tick(GRACE_MS + RESEND_MS);
  assert.deepEqual(kills(rig).at(-1), [rig.taskId(0), 0]);
  assert.equal(counts.get("peloton_jobmgr_kill_resends_total"), 1, "and counts each resend");
});
