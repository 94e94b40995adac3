/**
 * Ranges reaching past a job's end are refused by every call that takes them, and the message names every
 * instance of them the job does not have from the first one, those it removed included.
 */
import assert from "node:assert/strict";
import type { HostInventory } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;
const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";

/** A daemon job that had instances 0-5, one per host, and lost 2-5 with their hosts: it has 0 and 1. */
function shrunkDaemon(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "DAEMON", instanceCount: 0 });
  const inventory = (full: boolean, names: string[], state: HostInventory["hosts"][number]["state"]) => {
    rig.jm.receive({
      kind: "host-inventory",
      full,
      hosts: names.map((hostname) => ({ hostname, attributes: {}, state })),
    });
    rig.tick();
  };
  inventory(true, ["a", "b", "c", "d", "e", "f"], "HOST_STATE_UP");
  inventory(false, ["c", "d", "e", "f"], "LOST");
  rig.store.settle();
  rig.tick();
  rig.replies();
  rig.transport.drain();
  assert.deepEqual([...rig.job().tasks.keys()], [0, 1]);
  assert.equal(rig.job().runtime.nextInstanceId, 6);
  return rig;
}

/** Every call that takes instance ranges, with `ranges` in its place. */
function calls(rig: JobmgrRig, ranges: unknown): [string, string, Body][] {
  const version = { value: entityVersion(rig.job()) };
  return [
    [TASK, "Stop", { jobId: { value: JOB_ID }, ranges }],
    [TASK, "Start", { jobId: { value: JOB_ID }, ranges }],
    [TASK, "Restart", { jobId: { value: JOB_ID }, ranges }],
    [JOB, "Restart", { id: { value: JOB_ID }, ranges }],
    [JOB, "Start", { id: { value: JOB_ID }, ranges }],
    [JOB, "Stop", { id: { value: JOB_ID }, ranges }],
    [STATELESS_SERVICE, "RestartJob", { jobId: { value: JOB_ID }, version, restartSpec: { ranges } }],
  ];
}

/** The out-of-range message of a reply, wherever the call puts it. */
function outOfRange(
  method: string,
  body: Body | undefined,
  error: { code: string; message: string } | undefined,
) {
  if (error) return [error.code, error.message];
  const o = (method === "Restart" ? body?.outOfRange : (body?.error as Body | undefined)?.outOfRange) as
    | Body
    | undefined;
  return ["outOfRange", o?.message];
}

Deno.test("a range past the end of a job that removed instances names the first it lacks, not the first past its end", () => {
  const rig = shrunkDaemon();
  const cases: [unknown, string][] = [
    [[{ from: 5, to: 7 }], "instances 5-6 are out of range"],
    [[{ from: 1, to: 7 }], "instances 2-6 are out of range"],
    [[{ from: 3, to: 4 }, { from: 7, to: 9 }], "instance 3, instances 7-8 are out of range"],
    [[{ from: 1, to: 3 }, { from: 6 }], "instance 2, instances from 6 are out of range"],
    [[{ from: 0, to: 1 }, { from: 6, to: 7 }], "instance 6 is out of range"],
    [[{ from: 4, to: 8 }, { from: 2, to: 5 }], "instances 2-7 are out of range"],
  ];
  for (const [ranges, words] of cases) {
    for (const [service, method, body] of calls(rig, ranges)) {
      rig.call(service, method, body);
      const [reply] = rig.replies();
      const [code, message] = outOfRange(method, reply.body as Body | undefined, reply.error);
      const expected = `${words}: job ${JOB_ID} has 2 instances`;
      assert.deepEqual(
        [code, message],
        [service === TASK ? "outOfRange" : "out-of-range", expected],
        `${method} ${JSON.stringify(ranges)}`,
      );
    }
  }
  rig.tick(60_000);
  assert.equal(rig.jm.updates.size, 0, "no workflow was started");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no task was touched");
});

Deno.test("ranges within the instances the job ever had are not out of range: removed ones are invalid", () => {
  const rig = shrunkDaemon();
  rig.call(TASK, "Stop", { jobId: { value: JOB_ID }, ranges: [{ from: 1, to: 6 }, { from: 4 }] });
  assert.deepEqual(rig.replies()[0].body, { stoppedInstanceIds: [1], invalidInstanceIds: [2, 3, 4, 5] });
});
