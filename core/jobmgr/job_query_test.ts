import assert from "node:assert/strict";
import type { JobState } from "../model/states.ts";
import { makeJobRecord } from "../testing/harness.ts";
import { JobmgrRig } from "../testing/jobmgr_rig.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

const DAY_MS = 24 * 3600_000;
/** Lets store reads (promises) settle so the replies built from them are sent. */
const reads = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Jobs in the store, by name: created `days` days before the rig's now, in `state`. */
function storedJobs(rig: JobmgrRig, nowMs: number, jobs: Record<string, [number, JobState]>): string[] {
  const names = Object.keys(jobs);
  rig.store.write(names.map((name, n) => ({
    kind: "job.put",
    job: makeJobRecord(`33333333-2222-4333-8444-${String(n).padStart(12, "0")}`, { name }, {
      state: jobs[name][1],
      creationTimeMs: nowMs - jobs[name][0] * DAY_MS,
      completionTimeMs: jobs[name][1] === "RUNNING" ? undefined : nowMs - jobs[name][0] * DAY_MS + 1000,
    }),
  })));
  rig.store.settle();
  return names;
}

Deno.test("job Query and QueryJobs of a terminal state without time ranges see the jobs created in the last 7 days", async () => {
  const rig = new JobmgrRig();
  const nowMs = 30 * DAY_MS;
  rig.ports.clock.set(nowMs);
  const names = storedJobs(rig, nowMs, {
    oldDone: [8, "SUCCEEDED"],
    newDone: [6, "SUCCEEDED"],
    oldKilled: [8, "KILLED"],
    oldRunning: [8, "RUNNING"],
    newRunning: [1, "RUNNING"],
  });
  const query = async (spec: Body, v1alpha = false) => {
    if (v1alpha) rig.call(STATELESS_SERVICE, "QueryJobs", { spec });
    else rig.api("job", "Query", { spec, summaryOnly: true });
    await reads();
    const [r] = rig.replies();
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const b = r.body as Body;
    return ((v1alpha ? b.records : b.results) as { name: string }[]).map((j) => j.name).sort();
  };
  assert.deepEqual(await query({ jobStates: ["SUCCEEDED"] }), ["newDone"], "Peloton's default 7 days");
  assert.deepEqual(await query({ jobStates: ["JOB_STATE_SUCCEEDED", "JOB_STATE_KILLED"] }, true), [
    "newDone",
  ]);
  assert.deepEqual(
    await query({ jobStates: ["RUNNING", "SUCCEEDED"] }),
    ["newDone", "newRunning"],
    "one terminal state asked for limits the whole query",
  );
  assert.deepEqual(
    await query({ jobStates: ["RUNNING"] }),
    ["newRunning", "oldRunning"],
    "none terminal: all",
  );
  assert.deepEqual(await query({}), [...names].sort(), "no states: all");
  const since = (days: number) => new Date(nowMs - days * DAY_MS).toISOString();
  assert.deepEqual(
    await query({ jobStates: ["SUCCEEDED"], creationTimeRange: { min: since(10) } }),
    ["newDone", "oldDone"],
    "a creation time range given replaces it",
  );
  assert.deepEqual(
    await query({ jobStates: ["SUCCEEDED"], completionTimeRange: { min: since(10) } }),
    ["newDone", "oldDone"],
    "so does a completion time range",
  );
  // Peloton's window ends 30 s past now, for jobs just created, and so starts 7 days less 30 s before now.
  const createdMs = nowMs - 6 * DAY_MS;
  rig.ports.clock.set(createdMs + 7 * DAY_MS - 31_000);
  assert.deepEqual(await query({ jobStates: ["SUCCEEDED"] }), ["newDone"], "7 days less 31 s old");
  rig.ports.clock.set(createdMs + 7 * DAY_MS - 29_000);
  assert.deepEqual(await query({ jobStates: ["SUCCEEDED"] }), [], "7 days less 29 s old");
});
