/**
 * Instance ranges as every call that takes them reads them (`instanceRangesOf`): a malformed one is refused
 * naming the field, and nothing is done; absent or empty still means every instance.
 */
import assert from "node:assert/strict";
import { JOB_ID, runningService } from "../testing/jobmgr_rig.ts";
import { instanceRangesOf } from "./api_json.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";

/** Each call that acts on a job's instance ranges, with `ranges` in its place. */
const RANGE_CALLS: [string, string, (ranges: unknown) => Body][] = [
  [TASK, "Stop", (ranges) => ({ jobId: { value: JOB_ID }, ranges })],
  [TASK, "Start", (ranges) => ({ jobId: { value: JOB_ID }, ranges })],
  [TASK, "Restart", (ranges) => ({ jobId: { value: JOB_ID }, ranges })],
  [JOB, "Restart", (ranges) => ({ id: { value: JOB_ID }, ranges })],
  [JOB, "Start", (ranges) => ({ id: { value: JOB_ID }, ranges })],
  [JOB, "Stop", (ranges) => ({ id: { value: JOB_ID }, ranges })],
  [STATELESS_SERVICE, "RestartJob", (ranges) => ({ jobId: { value: JOB_ID }, restartSpec: { ranges } })],
];

/** Malformed `ranges`, each with the message that refuses it (`restartSpec.ranges` for RestartJob). */
const MALFORMED: [unknown, string][] = [
  [{ from: 2, to: 3 }, 'ranges: got {"from":2,"to":3}, expected a list of {from, to}'],
  ["x", 'ranges: got "x", expected a list of {from, to}'],
  [[{ from: -1, to: 2 }], "ranges[0].from: got -1, expected a whole number from 0 to 4294967295"],
  [[{ from: "a", to: 2 }], 'ranges[0].from: got "a", expected a whole number from 0 to 4294967295'],
  [[{ from: 1.5, to: 3 }], "ranges[0].from: got 1.5, expected a whole number from 0 to 4294967295"],
  [
    [{ from: 0, to: 1 }, { from: 5, to: 2 }],
    'ranges[1]: got {"from":5,"to":2}, expected from below to (to is exclusive: {from: 5, to: 6} is instance 5 alone)',
  ],
  [
    [{ from: 2, to: 2 }],
    'ranges[0]: got {"from":2,"to":2}, expected from below to (to is exclusive: {from: 2, to: 3} is instance 2 alone)',
  ],
  [
    [{ from: -20000000, to: 1 }],
    "ranges[0].from: got -20000000, expected a whole number from 0 to 4294967295",
  ],
  [[{ from: 0, to: 2 ** 32 }], "ranges[0].to: got 4294967296, expected a whole number from 0 to 4294967295"],
  [[null], "ranges[0]: got null, expected {from, to}"],
  [[[0, 2]], "ranges[0]: got [0,2], expected {from, to}"],
];

Deno.test("malformed ranges are refused by every call that takes them, naming the field, and nothing is done", () => {
  const rig = runningService(4, { settled: true });
  const writes = rig.store.batches.length;
  const before = JSON.stringify([...rig.job().tasks.values()]);
  for (const [service, method, body] of RANGE_CALLS) {
    for (const [ranges, message] of MALFORMED) {
      rig.call(service, method, body(ranges));
      const [reply] = rig.replies();
      const expected = method === "RestartJob" ? `restartSpec.${message}` : message;
      assert.deepEqual(
        reply.error,
        { code: "invalid-argument", message: expected },
        `${method} ${JSON.stringify(ranges)}`,
      );
    }
  }
  rig.tick(60_000);
  assert.equal(rig.jm.updates.size, 0, "no workflow was started");
  assert.equal(rig.store.updates.size, 0, "none was stored");
  assert.deepEqual(rig.transport.take("kill-tasks", "hostmgr"), [], "no task was touched");
  assert.equal(JSON.stringify([...rig.job().tasks.values()]), before, "no task changed");
  assert.equal(rig.store.batches.length, writes, "nothing written");
});

Deno.test("ranges absent, null or empty are every instance; to absent, max int32 or max uint32 is to the job's end", () => {
  assert.deepEqual(instanceRangesOf(undefined), []);
  assert.deepEqual(instanceRangesOf(null), []);
  assert.deepEqual(instanceRangesOf([]), []);
  assert.deepEqual(
    instanceRangesOf([
      { from: 1 },
      { to: 2 },
      { from: "3", to: 0xffff_ffff },
      { from: 1, to: "3" },
      { from: 2, to: 0x7fff_ffff },
    ]),
    [{ from: 1 }, { from: 0, to: 2 }, { from: 3 }, { from: 1, to: 3 }, { from: 2 }],
    "from absent is 0; whole numbers may come as text, as proto3 JSON allows",
  );

  const rig = runningService(4, { settled: true });
  const stop = (ranges: unknown) => {
    rig.call(TASK, "Stop", { jobId: { value: JOB_ID }, ranges });
    return (rig.replies()[0].body as Body).stoppedInstanceIds;
  };
  assert.deepEqual(stop([{ from: 3, to: 0xffff_ffff }]), [3], "max uint32 (Peloton's older CLI): to the end");
  // Peloton's CLI sends max int32 for `-r 1:` (cmd/cli parseRangeFromString): not out of range.
  assert.deepEqual(stop([{ from: 1, to: 0x7fff_ffff }]), [1, 2, 3], "max int32: to the end");
  assert.deepEqual(stop([{ from: 2 }]), [2, 3], "to absent: to the end");
  assert.deepEqual(stop([]), [0, 1, 2, 3], "empty: every instance");
});

Deno.test("one instance range (task List and Refresh, ListPods) is read the same way; instanceId must be a whole number", async () => {
  const rig = runningService(4, { settled: true });
  const calls: [string, string, Body][] = [
    [TASK, "List", { jobId: { value: JOB_ID } }],
    [TASK, "Refresh", { jobId: { value: JOB_ID } }],
    [STATELESS_SERVICE, "ListPods", { jobId: { value: JOB_ID } }],
  ];
  const refused: [unknown, string][] = [
    ["1:3", 'range: got "1:3", expected {from, to}'],
    [{ from: "a" }, 'range.from: got "a", expected a whole number from 0 to 4294967295'],
    [
      { from: 3, to: 1 },
      'range: got {"from":3,"to":1}, expected from below to (to is exclusive: {from: 3, to: 4} is instance 3 alone)',
    ],
  ];
  for (const [service, method, body] of calls) {
    for (const [range, message] of refused) {
      rig.call(service, method, { ...body, range });
      await rig.reads();
      assert.deepEqual(
        rig.replies()[0].error,
        { code: "invalid-argument", message },
        `${method} ${JSON.stringify(range)}`,
      );
    }
  }
  rig.call(TASK, "List", { jobId: { value: JOB_ID }, range: { from: 1, to: 3 } });
  await rig.reads();
  assert.deepEqual(Object.keys(((rig.replies()[0].body as Body).result as Body).value as Body), ["1", "2"]);
  rig.call(STATELESS_SERVICE, "ListPods", { jobId: { value: JOB_ID }, range: { from: 2 } });
  await rig.reads();
  assert.equal(((rig.replies()[0].body as Body).pods as unknown[]).length, 2, "to absent: to the end");

  for (const method of ["Get", "BrowseSandbox"]) {
    rig.call(TASK, method, { jobId: { value: JOB_ID }, instanceId: "one" });
    await rig.reads();
    assert.deepEqual(rig.replies()[0].error, {
      code: "invalid-argument",
      message: 'instanceId: got "one", expected a whole number from 0 to 4294967295',
    }, method);
  }
});
