/** A trace's window edges: time 0 (before the window) and 2^63 − 1 (after it), on small traces the tests write. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import type { Workload } from "./scenario.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { leftOutBefore, parseTaskEvents, replayedJobs, TRACE_EVENTS as E } from "./trace.ts";
import { writeTraceScenarioYaml } from "./testing.ts";

/** The trace's "after the window" time, as the real files write it. */
const AFTER = "9223372036854775807";

/** One task_events row (time in trace seconds, or AFTER) asking for 1 core of a 16-core machine. */
function row(time: number | string, job: string, index: number, type: number): string {
  const us = typeof time === "number" ? String(time * 1e6) : time;
  return [us, "", job, index, "", type, "u1", "1", "2", "0.0625", "0.01", "0.0001", "0"].join(",");
}

/** Writes the trace and a scenario replaying it on one 16-core host; the scenario's path. */
async function scenario(dir: string, rows: string[], run: string, trace: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/t.csv`, rows.join("\n") + "\n");
  return await writeTraceScenarioYaml(dir, {
    file: "t.csv",
    run,
    trace,
    memoryAndDisk: true,
    tail: "settings: {sampleIntervalSec: 5, taskStartupSec: 0}",
  });
}

Deno.test("an end at 2^63 - 1 (after the trace window) is no end: the task never ends within the trace", () => {
  const jobs = parseTaskEvents(
    [
      row(600, "1", 0, E.SUBMIT),
      row(601, "1", 0, E.SCHEDULE),
      row(AFTER, "1", 0, E.FINISH),
      row(600, "1", 1, E.SUBMIT),
      row(602, "1", 1, E.SCHEDULE),
      row(AFTER, "1", 1, E.EVICT),
      row(AFTER, "1", 1, E.KILL),
      // Ended within the trace, then scheduled again after it: the run that ended is the one replayed.
      row(600, "1", 2, E.SUBMIT),
      row(603, "1", 2, E.SCHEDULE),
      row(613, "1", 2, E.FAIL),
      row(AFTER, "1", 2, E.SCHEDULE),
      // Submitted only after the window: not a task of the trace.
      row(AFTER, "1", 3, E.SUBMIT),
    ].join("\n"),
    "a.csv",
  );
  assert.deepEqual(jobs[0].tasks, [
    { index: 0, durationSec: undefined, exitCode: undefined },
    { index: 1, durationSec: undefined, exitCode: undefined },
    { index: 2, durationSec: 10, exitCode: 1 },
  ]);
  assert.equal(jobs.length, 1);
});

Deno.test("a run without durationSec whose trace finishes a task after the window ends at openEndedSec", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(
      dir,
      [row(600, "1", 0, E.SUBMIT), row(600, "1", 0, E.SCHEDULE), row(AFTER, "1", 0, E.FINISH)],
      "",
      "startSec: 600, openEndedSec: 50",
    );
    const loaded = await loadScenarioFile(file);
    // A run that would go on for the trace's 9.2e12 s is stopped at 10,000 s, so the test cannot hang.
    const sim = await runScenario(loaded.scenario, {
      seed: 1,
      traces: loaded.traces,
      checkInvariants: true,
      onSample: (ms) => ms > 10_000_000,
    });
    assert.equal(sim.endedEarly, false, `still running at ${sim.queue.now} ms`);
    const task = sim.jobmgr.jobs.get(sim.submissions[0].jobId)!.tasks.get(0)!;
    assert.equal(task.state, "SUCCEEDED");
    assert.equal(task.completionTimeMs! - task.startTimeMs!, 50_000);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Job 1 ran from before the window (time 0) until 700 s; job 2 was submitted before it and was still
 * pending; job 3 comes at 610 s.
 */
const EARLY = [
  row(0, "1", 0, E.SUBMIT),
  row(0, "1", 0, E.SCHEDULE),
  row(0, "2", 0, E.SUBMIT),
  row(0, "2", 1, E.SUBMIT),
  row(610, "3", 0, E.SUBMIT),
  row(610, "3", 0, E.SCHEDULE),
  row(620, "3", 0, E.FINISH),
  row(700, "1", 0, E.FINISH),
];

Deno.test("startSec 600: the trace's rows at time 0 are the cluster as the window opens, submitted at 0", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const loaded = await loadScenarioFile(await scenario(dir, EARLY, "durationSec: 300", "startSec: 600"));
    assert.deepEqual(loaded.warnings, []);
    const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces, checkInvariants: true });
    const jobs = sim.submissions.map((s) => sim.jobmgr.jobs.get(s.jobId)!);
    const arrived = jobs.map((j) => Math.floor(j.runtime.creationTimeMs! / 1000));
    assert.deepEqual(arrived, [0, 0, 10], "jobs 1 and 2 at 0 s, job 3 at trace second 610");
    // Job 1 was running when the window opened: it ends when the trace ended it (700 s, 100 s in), not
    // 700 s after the replay started it.
    const early = jobs[0].tasks.get(0)!;
    assert.equal(early.state, "SUCCEEDED");
    assert.equal(Math.round(early.completionTimeMs! / 1000), 100);
    assert.equal(jobs[1].tasks.size, 2);
    const r = buildReport(loaded.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    assert.equal(r.tasks.submitted, 4);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a replay that starts after rows of the trace leaves them out, with a warning saying how many tasks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(
      dir,
      [...EARLY, row(900, "4", 0, E.SUBMIT)],
      "durationSec: 300",
      "startSec: 700",
    );
    const loaded = await loadScenarioFile(file);
    assert.deepEqual(loaded.warnings, [
      `${file}:14: workloads[0].trace: ${dir}/t.csv: left out 4 tasks of 3 trace jobs submitted before the ` +
      "replayed window, which starts at trace second 700 (trace.startSec 700); 3 of them were on the " +
      "cluster before the trace window (time 0), which a replay starting by trace second 600 submits as it " +
      "starts",
    ]);
    const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces });
    assert.equal(sim.submissions.length, 1, "job 4 only");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("time-0 jobs arrive as the replay starts when it starts by trace second 600, the workload's start too", () => {
  const jobs = parseTaskEvents(EARLY.join("\n"), "e.csv");
  const at = (traceStartSec: number, startSec: number, speedup = 1) => {
    const w = { startSec, trace: { startSec: traceStartSec, speedup } } as unknown as Workload;
    return replayedJobs(jobs, w, Infinity).map(({ job, atMs }) => [job.jobId, atMs]);
  };
  assert.deepEqual(at(600, 0), [["1", 0], ["2", 0], ["3", 10_000]]);
  assert.deepEqual(at(0, 0), [["1", 0], ["2", 0], ["3", 610_000]]);
  // The replay starts at trace second 300 + 100 × 3 = 600: the cluster as the window opens, at 100 s.
  assert.deepEqual(at(300, 100, 3), [["1", 100_000], ["2", 100_000], ["3", 103_333.33333333333]]);
  // One trace second later, the window has opened without them.
  assert.deepEqual(at(301, 100, 3), [["3", 103_000]]);
  const w = { startSec: 100, trace: { startSec: 301, speedup: 3 } } as unknown as Workload;
  assert.match(leftOutBefore(jobs, w)!, /^left out 3 tasks of 2 trace jobs .* starts at trace second 601 /);
});
