import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { ADMIN_SERVICE } from "./lockdown.ts";
import { WATCH_SERVICE } from "./watch.ts";

type Pod = { podName: { value: string }; status: { state: string } };

function watch(rig: JobmgrRig, body: unknown): ApiReply {
  rig.call(WATCH_SERVICE, "Watch", body);
  return rig.replies()[0];
}

/** A watch opened: its id. */
const watchId = (rig: JobmgrRig, body: unknown) => (watch(rig, body).body as { watchId: string }).watchId;

type WatchEvent = { watchId: string; response: { pods?: unknown[] } };

/** The pods of `events` sent to one watch, as `instance state`. */
function podsOf(events: WatchEvent[], id: string): string[] {
  return events.filter((e) => e.watchId === id)
    .flatMap((e) => (e.response.pods ?? []) as Pod[])
    .map((p) => `${p.podName.value.slice(JOB_ID.length + 1)} ${p.status.state}`);
}

/** The pods the watch was sent since the last look. */
const podEvents = (rig: JobmgrRig, id: string) => podsOf(rig.transport.take("watch-event", "api/1"), id);

Deno.test("a pod watch is sent every change of the pods it matches, from the watch on", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2, task: { labels: [{ key: "app", value: "web" }] } });
  const all = watchId(rig, { podFilter: { jobId: { value: JOB_ID } } });
  assert.match(all, /^pod-\d+@jobmgr$/);
  const one = watchId(rig, { podFilter: { podNames: [{ value: `${JOB_ID}-1` }] } });
  const other = watchId(rig, { podFilter: { labels: [{ key: "app", value: "db" }] } });
  rig.launch([0, 1]);
  rig.status(rig.taskId(1), "TASK_RUNNING");
  const events = rig.transport.take("watch-event", "api/1");
  const of = (id: string) => podsOf(events, id);
  assert.deepEqual(of(all), [
    "0 POD_STATE_LAUNCHING",
    "1 POD_STATE_LAUNCHING",
    "1 POD_STATE_RUNNING",
  ]);
  assert.deepEqual(of(one), ["1 POD_STATE_LAUNCHING", "1 POD_STATE_RUNNING"]);
  assert.deepEqual(of(other), [], "labels the pods do not have");
  assert.deepEqual(events[0].response.watchId, events[0].watchId);
});

Deno.test("a pod name is read as every call reads it: its job id in any case, its instance a number", () => {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  const id = watchId(rig, { podFilter: { podNames: [{ value: `${JOB_ID.toUpperCase()}-01` }] } });
  rig.launch([0, 1]);
  assert.deepEqual(podEvents(rig, id), ["1 POD_STATE_LAUNCHING"]);
});

Deno.test("a stateless job watch is sent the job's summary when its state changes", () => {
  const rig = new JobmgrRig();
  const id = watchId(rig, { statelessJobFilter: { jobIds: [{ value: JOB_ID }] } });
  assert.match(id, /^job-\d+@jobmgr$/);
  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  const states = rig.transport.take("watch-event", "api/1").flatMap((e) =>
    ((e.response.statelessJobs ?? []) as { jobId: { value: string }; status: { state: string } }[])
      .map((j) => `${j.jobId.value === JOB_ID} ${j.status.state}`)
  );
  assert.deepEqual(states.at(-1), "true JOB_STATE_RUNNING");
});

Deno.test("batch jobs and their pods are not watched, as in Peloton: only service jobs are", () => {
  const rig = new JobmgrRig();
  const batch = "22222222-2222-4333-8444-555555555555";
  const pods = watchId(rig, { podFilter: {} });
  const named = watchId(rig, { podFilter: { jobId: { value: batch } } });
  const jobs = watchId(rig, { statelessJobFilter: {} });
  rig.create({ type: "BATCH", instanceCount: 1 }, batch);
  const tasks = [{ taskId: rig.taskId(0, batch), ports: {} }];
  rig.placements([{ leaseId: "h1#1", hostname: "h1", agentId: "agent-h1", tasks }]);
  rig.store.settle();
  rig.transport.take("launch-tasks", "hostmgr");
  rig.status(rig.taskId(0, batch), "TASK_RUNNING");
  rig.status(rig.taskId(0, batch), "TASK_FINISHED");
  assert.equal(rig.job(batch).runtime.state, "SUCCEEDED", "the batch job ran and ended");
  assert.deepEqual(rig.transport.take("watch-event", "api/1"), [], "nothing of the batch job is sent");

  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  const events = rig.transport.take("watch-event", "api/1");
  assert.deepEqual(podsOf(events, pods), [
    "0 POD_STATE_PENDING",
    "0 POD_STATE_LAUNCHING",
    "0 POD_STATE_RUNNING",
  ]);
  assert.deepEqual(podsOf(events, named), []);
  const summaries = events.filter((e) => e.watchId === jobs)
    .flatMap((e) => (e.response.statelessJobs ?? []) as { jobId: { value: string } }[]);
  assert.ok(summaries.length > 0 && summaries.every((j) => j.jobId.value === JOB_ID), "the service's alone");
});

Deno.test("Cancel ends the stream cancelled; a stopped job manager ends every stream unavailable", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  const id = watchId(rig, { podFilter: {} });
  rig.call(WATCH_SERVICE, "Cancel", { watchId: id });
  assert.deepEqual(rig.replies()[0].body, {});
  assert.deepEqual(rig.transport.take("watch-end", "api/1"), [{
    kind: "watch-end",
    watchId: id,
    error: { code: "cancelled", message: `watch cancelled: ${id}` },
  }]);
  rig.launch([0]);
  assert.deepEqual(podEvents(rig, id), [], "nothing after the end");
  rig.call(WATCH_SERVICE, "Cancel", { watchId: id });
  assert.deepEqual(rig.replies()[0].error, { code: "not-found", message: `watch ${id} not found` });

  const next = watchId(rig, { statelessJobFilter: {} });
  rig.jm.stop();
  assert.deepEqual(rig.transport.take("watch-end", "api/1").map((e) => [e.watchId, e.error.code]), [
    [next, "unavailable"],
  ]);
});

Deno.test("a startRevision not a uint64 is refused naming it; a whole number, or its decimal text, is taken", () => {
  const rig = new JobmgrRig();
  const uint64 = "expected a whole number from 0 to 18446744073709551615 (a number or its decimal text)";
  for (const bad of ["abc", -5, 1.5, "-5", "1e3", " 7", "18446744073709551616", true, {}, [1]]) {
    for (const filter of [{ podFilter: {} }, { statelessJobFilter: {} }]) {
      assert.deepEqual(watch(rig, { ...filter, startRevision: bad }).error, {
        code: "invalid-argument",
        message: `startRevision: got ${JSON.stringify(bad)}, ${uint64}`,
      }, JSON.stringify(bad));
    }
  }
  rig.create({ type: "SERVICE", instanceCount: 1 });
  rig.launch([0]);
  assert.deepEqual(rig.transport.take("watch-event", "api/1"), [], "no watch was opened");
  for (const good of [0, 12, "12", "18446744073709551615", null]) {
    const reply = watch(rig, { podFilter: {}, startRevision: good });
    assert.equal(reply.error, undefined, JSON.stringify(good));
  }
});

Deno.test("bad watch requests are refused naming the field; Lockdown Read refuses watches", () => {
  const rig = new JobmgrRig();
  const refused = (body: unknown) => watch(rig, body).error;
  assert.deepEqual(refused({}), {
    code: "invalid-argument",
    message: "podFilter, statelessJobFilter: expected exactly one of them",
  });
  assert.equal(refused({ podFilter: {}, statelessJobFilter: {} })?.code, "invalid-argument");
  assert.match(refused({ podFilter: { labels: [{ value: "x" }] } })!.message, /^podFilter\.labels\[0\]: got/);
  assert.match(
    refused({ statelessJobFilter: { jobIds: "j" } })!.message,
    /^statelessJobFilter\.jobIds: got "j"/,
  );
  assert.match(refused({ podFilter: { jobId: 7 } })!.message, /^podFilter\.jobId: got 7, expected a job id/);

  // Ids are read as every other call reads them: a malformed one would be a watch that never reports.
  const refusals: [unknown, string][] = [
    [{ podFilter: { jobId: { value: "nope" } } }, 'podFilter.jobId: got {"value":"nope"}, expected a job id'],
    [
      { podFilter: { jobId: JOB_ID } },
      `podFilter.jobId: got "${JOB_ID}", expected a job id as a message, {"value": "${JOB_ID}"}`,
    ],
    [
      { podFilter: { podNames: [{ value: `${JOB_ID}-0` }, { value: "garbage" }] } },
      'podFilter.podNames[1]: got "garbage", expected <jobId>-<instanceId>',
    ],
    [
      { podFilter: { podNames: [{ value: `${JOB_ID}-4294967296` }] } },
      `podFilter.podNames[0]: got "${JOB_ID}-4294967296", expected <jobId>-<instanceId>`,
    ],
    [
      { statelessJobFilter: { jobIds: [{ value: JOB_ID }, { value: "nope" }] } },
      'statelessJobFilter.jobIds[1]: got {"value":"nope"}, expected a job id',
    ],
  ];
  for (const [body, message] of refusals) {
    assert.deepEqual(refused(body), { code: "invalid-argument", message }, JSON.stringify(body));
  }
  rig.call(WATCH_SERVICE, "Cancel", {});
  assert.deepEqual(rig.replies()[0].error, {
    code: "invalid-argument",
    message: "watchId: missing, expected a watch id",
  });
  rig.create({ instanceCount: 1 });
  rig.launch([0]);
  assert.deepEqual(rig.transport.take("watch-event", "api/1"), [], "no watch was opened");
  rig.call(WATCH_SERVICE, "Rewind", {});
  assert.equal(rig.replies()[0].error?.code, "unimplemented");

  rig.call(ADMIN_SERVICE, "Lockdown", { components: ["Read"] });
  rig.replies();
  assert.deepEqual(refused({ podFilter: {} }), {
    code: "internal",
    message: "All read APIs are locked down",
  });
  // A watch opened before the lockdown can still be cancelled.
  rig.call(WATCH_SERVICE, "Cancel", { watchId: "pod-9@jobmgr" });
  assert.equal(rig.replies()[0].error?.code, "not-found");
});
