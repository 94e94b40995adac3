import assert from "node:assert/strict";
import { parseJobConfig, parseRespoolConfig } from "../model/load.ts";
import { jobConfigJson } from "../jobmgr/job_api.ts";
import { CaptureTransport, makeJobConfig, makeRespoolConfig, ManualClock, TestStore } from "./harness.ts";
import { JOB_ID, JobmgrRig } from "./jobmgr_rig.ts";

Deno.test("ManualClock runs due timers in (time, creation) order, including timers they set", () => {
  const clock = new ManualClock(10);
  const ran: string[] = [];
  clock.setTimer(5, () => ran.push("b@15"));
  clock.setTimer(0, () => ran.push("a@10"));
  clock.setTimer(5, () => {
    ran.push("c@15");
    clock.setTimer(0, () => ran.push(`e@${clock.now()}`));
  });
  const cancelled = clock.setTimer(1, () => ran.push("never"));
  clock.setTimer(50, () => ran.push("late"));
  clock.cancelTimer(cancelled);
  clock.cancelTimer(cancelled);
  assert.deepEqual(ran, [], "never synchronously");
  clock.advance(5);
  assert.deepEqual(ran, ["a@10", "b@15", "c@15", "e@15"]);
  assert.equal(clock.now(), 15);
  assert.equal(clock.pending, 1);
});

Deno.test("CaptureTransport takes messages by kind and delivers one hop by hand", () => {
  const t = new CaptureTransport();
  t.send("resmgr", { kind: "drop-tasks", taskIds: ["a"] });
  t.send("hostmgr", { kind: "release-hosts", leaseIds: ["l"] });
  t.send("resmgr", { kind: "drop-tasks", taskIds: ["b"] });
  assert.equal(t.peek("drop-tasks").length, 2);
  assert.deepEqual(t.take("drop-tasks", "resmgr").map((m) => m.taskIds), [["a"], ["b"]]);
  assert.throws(() => t.takeOne("drop-tasks"), /found 0/);
  const got: string[] = [];
  const echo = {
    receive: (m: { kind: string }) => {
      got.push(m.kind);
      t.send("hostmgr", { kind: "release-hosts", leaseIds: ["again"] });
    },
  };
  assert.equal(t.deliverTo("hostmgr", echo).length, 1);
  assert.deepEqual(got, ["release-hosts"]);
  assert.deepEqual(t.drain().map((s) => s.to), ["hostmgr"], "replies wait for the next hop");
});

Deno.test("TestStore applies writes at once but calls done only on settle", async () => {
  const store = new TestStore();
  const done: string[] = [];
  store.write([{ kind: "respool.delete", id: "x" }], () => done.push("first"));
  store.write([], () => store.write([], () => done.push("nested")));
  let flushed = false;
  const f = store.flush().then(() => (flushed = true));
  assert.equal(store.unsettled, 2);
  await Promise.resolve();
  assert.deepEqual([done, flushed], [[], false]);
  store.settle();
  await f;
  assert.deepEqual(done, ["first", "nested"]);
  assert.equal(store.unsettled, 0);
  store.failNextWrite(new Error("boom"));
  let err: Error | undefined;
  store.write([{ kind: "respool.delete", id: "y" }], (e) => (err = e));
  store.settle();
  assert.equal(err?.message, "boom");
  assert.equal(store.batches.length, 3, "a failed write is not applied");
});

Deno.test("the job and pool fixtures are valid Peloton configs", () => {
  const job = parseJobConfig(jobConfigJson(makeJobConfig({ instanceCount: 3 })));
  assert.ok(job.ok, JSON.stringify(!job.ok && job.errors));
  assert.equal(job.value.instanceCount, 3);
  const pool = parseRespoolConfig(makeRespoolConfig("p", { cpu: { reservation: 1, limit: 2 } }));
  assert.ok(pool.ok);
});

Deno.test("TestStore matches a job query's name as the other stores do: a part, in any case", async () => {
  const rig = new JobmgrRig();
  rig.create({ name: "Nightly-ETL" });
  rig.store.settle();
  const ids = async (name: string) => (await rig.store.queryJobs({ name })).jobs.map((j) => j.jobId);
  assert.deepEqual(await ids("etl"), [JOB_ID]);
  assert.deepEqual(await ids("NIGHTLY-"), [JOB_ID]);
  assert.deepEqual(await ids("nightly_"), []);
});
