/** The Google cluster-data 2011 `task_events` loader and its replay, on small files the tests write. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { readTaskEvents } from "./trace_file.ts";
import type { Workload } from "./scenario.ts";
import { parseTaskEvents, replayedJobs, TRACE_EVENTS as E } from "./trace.ts";
import { traceScenarioYaml, writeTraceScenario, writeTraceScenarioYaml } from "./testing.ts";

/** One task_events row: time µs, missing, job, task index, machine, type, user, class, priority, cpu, mem, disk, restriction. */
function row(
  timeUs: number,
  job: string,
  index: number,
  type: number,
  extra: Partial<Record<string, string>> = {},
) {
  return [
    timeUs,
    "",
    job,
    index,
    extra.machine ?? "",
    type,
    "u1",
    "1",
    extra.priority ?? "2",
    extra.cpu ?? "0.0625",
    extra.mem ?? "0.03",
    extra.disk ?? "0.0001",
    extra.spread ?? "0",
  ].join(",");
}

const TRACE = [
  row(0, "100", 0, E.SUBMIT), // before the trace window: time 0
  row(0, "100", 1, E.SUBMIT),
  row(5e6, "100", 0, E.SCHEDULE, { machine: "7" }),
  row(6e6, "100", 1, E.SCHEDULE, { machine: "8" }),
  row(65e6, "100", 0, E.FINISH, { machine: "7" }),
  row(30e6, "100", 1, E.EVICT, { machine: "8" }),
  row(40e6, "100", 1, E.SCHEDULE, { machine: "9" }),
  row(100e6, "100", 1, E.FAIL, { machine: "9" }),
  row(20e6, "200", 0, E.SUBMIT, { priority: "10", cpu: "0.125", spread: "1" }),
  row(20e6, "200", 1, E.SUBMIT, { priority: "10", cpu: "0.25", spread: "1" }),
  row(21e6, "200", 0, E.SCHEDULE),
  row(22e6, "200", 1, E.SCHEDULE),
  row(50e6, "200", 1, E.KILL),
  row(30e6, "300", 0, E.UPDATE_PENDING), // never submitted in the window: left out
].join("\n");

Deno.test("task_events rows become jobs: submit time, per-task run time and ending, largest request", () => {
  const jobs = parseTaskEvents(TRACE, "t.csv");
  assert.deepEqual(jobs.map((j) => [j.jobId, j.submitSec]), [["100", 0], ["200", 20]]);
  const [a, b] = jobs;
  // Task 0 ran 5 s → 65 s; task 1 was evicted and its last run (40 s → 100 s) failed.
  assert.deepEqual(a.tasks, [
    { index: 0, durationSec: 60, exitCode: 0 },
    { index: 1, durationSec: 60, exitCode: 1 },
  ]);
  // A killed task keeps its kill's time, when the replay stops it; one never ends in the trace.
  assert.deepEqual(b.tasks, [
    { index: 0, durationSec: undefined, exitCode: undefined },
    { index: 1, durationSec: 28, exitCode: 143, killedSec: 50 },
  ]);
  assert.deepEqual([b.cpu, b.priority, b.differentMachines], [0.25, 10, true]);
  assert.deepEqual([a.cpu, a.memory, a.disk, a.differentMachines], [0.0625, 0.03, 0.0001, false]);
});

Deno.test("a row without 13 columns or with a bad event type fails with its line number", () => {
  assert.throws(
    () => parseTaskEvents(`${row(1, "1", 0, 0)}\n1,2,3`, "x.csv"),
    { name: "TraceError", message: "x.csv line 2: expected 13 columns (task_events of 2011), got 3" },
  );
  assert.throws(() => parseTaskEvents(row(1, "1", 0, 11), "x.csv"), {
    message: 'x.csv line 1, column 6 (event type): expected an integer from 0 to 8, got "11"',
  });
});

/** The message for `bad` as the second row of a file, after a good one. */
function errorOf(bad: string): string {
  try {
    parseTaskEvents(`${row(1, "1", 0, E.SUBMIT)}\n${bad}`, "t.csv");
  } catch (e) {
    assert.equal((e as Error).name, "TraceError");
    return (e as Error).message;
  }
  throw new Error(`accepted ${bad}`);
}

Deno.test("a malformed field fails with the file, line, column and what was expected", () => {
  const cases: [string, string][] = [
    [row(1, "9", 0, 0, { cpu: "abc" }), 'column 10 (CPU request): expected a number from 0 to 1, got "abc"'],
    [
      row(1, "9", 0, 0, { cpu: "-0.5" }),
      'column 10 (CPU request): expected a number from 0 to 1, got "-0.5"',
    ],
    [row(1, "9", 0, 0, { cpu: "5" }), 'column 10 (CPU request): expected a number from 0 to 1, got "5"'],
    [row(1, "9", 0, 0, { cpu: " " }), 'column 10 (CPU request): expected a number from 0 to 1, got " "'],
    [
      row(1, "9", 0, 0, { mem: "NaN" }),
      'column 11 (memory request): expected a number from 0 to 1, got "NaN"',
    ],
    [
      row(1, "9", 0, 0, { disk: "1.5" }),
      'column 12 (disk request): expected a number from 0 to 1, got "1.5"',
    ],
    [
      row(1, "9", 0, 0, { priority: "high" }),
      'column 9 (priority): expected an integer from 0 to 11, got "high"',
    ],
    [
      row(1, "9", 0, 0, { priority: "12" }),
      'column 9 (priority): expected an integer from 0 to 11, got "12"',
    ],
    [row(1, "9", -3, 0), 'column 4 (task index): expected an integer ≥ 0, got "-3"'],
    [row(1, "9", 1.5, 0), 'column 4 (task index): expected an integer ≥ 0, got "1.5"'],
    [row(-1, "9", 0, 0), 'column 1 (timestamp): expected a time in µs (a number ≥ 0), got "-1"'],
    [row(1, "x9", 0, 0), 'column 3 (job ID): expected an integer, got "x9"'],
    [row(1, "9", 0, 0, { machine: "m1" }), 'column 5 (machine ID): expected an integer, got "m1"'],
    [
      row(1, "9", 0, 0, { spread: "yes" }),
      'column 13 (different-machine constraint): expected 0 or 1, got "yes"',
    ],
    ["1,x,9,0,,0,u1,1,2,0.1,0.1,0,0", 'column 2 (missing info): expected an integer, got "x"'],
    ["1,,9,0,,0,u1,4,2,0.1,0.1,0,0", 'column 8 (scheduling class): expected an integer from 0 to 3, got "4"'],
    // The mandatory fields may not be empty (they used to read as 0).
    [
      ",,999,,,,user1,1,0,0.03,0.02,0.0001,0",
      "column 1 (timestamp): expected a time in µs (a number ≥ 0), got an empty field",
    ],
    [
      "1,,999,,,0,user1,1,0,0.03,0.02,0.0001,0",
      "column 4 (task index): expected an integer ≥ 0, got an empty field",
    ],
    [
      "1,,999,0,,,user1,1,0,0.03,0.02,0.0001,0",
      "column 6 (event type): expected an integer from 0 to 8, got an empty field",
    ],
    ["1,,,0,,0,user1,1,0,0.03,0.02,0.0001,0", "column 3 (job ID): expected an integer, got an empty field"],
  ];
  for (const [bad, message] of cases) assert.equal(errorOf(bad), `t.csv line 2, ${message}`, bad);
});

Deno.test("a file without task events is an error", () => {
  for (const text of ["", "\n", "\r\n\r\n"]) {
    assert.throws(() => parseTaskEvents(text, "e.csv"), {
      name: "TraceError",
      message: "e.csv: no task events (the file has no rows)",
    });
  }
});

Deno.test("a trace in which no task is ever submitted is refused; tasks submitted elsewhere are left out", () => {
  // Rows of every other kind: tasks that were all submitted before this file (another part of the trace).
  const unsubmitted = [
    row(5e6, "100", 0, E.SCHEDULE, { machine: "7" }),
    row(65e6, "100", 0, E.FINISH, { machine: "7" }),
    row(30e6, "300", 0, E.UPDATE_PENDING),
  ];
  assert.throws(() => parseTaskEvents(unsubmitted.join("\n"), "s.csv"), {
    name: "TraceError",
    message: "s.csv: no task was ever submitted: none of its 3 rows are a SUBMIT event (event type 0), " +
      "so there is no job to replay",
  });
  assert.throws(() => parseTaskEvents(unsubmitted[0], "s.csv"), {
    message: "s.csv: no task was ever submitted: none of its 1 row is a SUBMIT event (event type 0), " +
      "so there is no job to replay",
  });
  // With one task submitted, that task is the replay: the others' SUBMIT is in a part file not given.
  const jobs = parseTaskEvents([...unsubmitted, row(40e6, "100", 1, E.SUBMIT)].join("\n"), "s.csv");
  assert.deepEqual(jobs.map((j) => [j.jobId, j.submitSec, j.tasks.map((t) => t.index)]), [["100", 40, [1]]]);
});

Deno.test("real-data conventions are accepted: empty optional fields, CRLF, 0 and 1 requests, MAXINT time", () => {
  const text = [
    "0,,5,0,,0,,,,,,,", // only the mandatory fields
    "0,1,5,1,,0,u,3,11,1,0,1e-5,1",
    // After the trace window: its request counts, but the task does not end within the trace.
    `9223372036854775807,,5,1,42,${E.FINISH},u,0,0,0.5,0.5,0,0`,
  ].join("\r\n");
  const [job] = parseTaskEvents(text, "r.csv");
  assert.deepEqual([job.cpu, job.memory, job.disk, job.priority, job.differentMachines], [
    1,
    0.5,
    1e-5,
    11,
    true,
  ]);
  const ends = job.tasks.map((t) => [t.index, t.durationSec, t.exitCode]);
  assert.deepEqual(ends, [[0, undefined, undefined], [1, undefined, undefined]]);
});

Deno.test("a scenario whose trace has a bad row, no rows or no SUBMIT fails to load, naming the file and line", async () => {
  const dir = await Deno.makeTempDir();
  await writeTraceScenario(dir, "trace.csv", 10);
  const load = () => loadScenarioFile(`${dir}/s.yaml`);
  await Deno.writeTextFile(`${dir}/trace.csv`, `${TRACE}\n${row(1, "7", 0, E.SUBMIT, { cpu: "abc" })}\n`);
  await assert.rejects(load, {
    name: "ScenarioError",
    message: `${dir}/trace.csv line 15, column 10 (CPU request): expected a number from 0 to 1, got "abc"`,
  });
  await Deno.writeTextFile(`${dir}/trace.csv`, "");
  await assert.rejects(load, { message: `${dir}/trace.csv: no task events (the file has no rows)` });
  await Deno.writeTextFile(
    `${dir}/trace.csv`,
    `${row(5e6, "100", 0, E.SCHEDULE)}\n${row(9e6, "100", 0, E.FINISH)}\n`,
  );
  await assert.rejects(load, {
    name: "ScenarioError",
    message: `${dir}/trace.csv: no task was ever submitted: none of its 2 rows are a SUBMIT event ` +
      "(event type 0), so there is no job to replay",
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a trace window that holds none of the trace's jobs is refused, naming the file, window and jobs' times", async () => {
  const dir = await Deno.makeTempDir();
  // Jobs 100 (submitted at 0.5 s) and 200 (20 s); see TRACE, whose time-0 rows (before the trace window,
  // replayed at the start of a replay that starts by then) are put just after it here.
  await Deno.writeTextFile(`${dir}/trace.csv`, TRACE.replaceAll(/^0,/gm, "500000,"));
  const load = async (run: string, trace: string, workload = "") => {
    await writeTraceScenarioYaml(dir, { file: "trace.csv", run, trace, tail: workload });
    return await loadScenarioFile(`${dir}/s.yaml`);
  };
  const refused = (message: string) => ({ name: "ScenarioError", message });
  const where = `${dir}/s.yaml:12: workloads[0].trace: cannot replay ${dir}/trace.csv`;
  const fix =
    "set trace.startSec (or the run's durationSec, the workload's startSec or stopSec) so that the " +
    "window holds some";
  // The window starts after the last job.
  await assert.rejects(
    load("durationSec: 10", "startSec: 1000"),
    refused(
      `${where}: the replayed window, trace seconds 1000 to 1010 (trace.startSec 1000, then the run's ` +
        "durationSec 10 at trace.speedup 1), holds none of the trace's jobs: its 2 jobs are submitted " +
        `from trace second 0.5 to 20; ${fix}`,
    ),
  );
  // No durationSec: the window is open at its end, and still starts after every job.
  await assert.rejects(
    load("", "startSec: 21"),
    refused(
      `${where}: the replayed window, trace seconds 21 on (trace.startSec), holds none of the trace's jobs: ` +
        `its 2 jobs are submitted from trace second 0.5 to 20; ${fix}`,
    ),
  );
  // The workload stops before the second job comes, even twice as fast; the first is before the start.
  await assert.rejects(
    load("durationSec: 100", "startSec: 1, speedup: 2", "    stopSec: 9"),
    refused(
      `${where}: the replayed window, trace seconds 1 to 19 (trace.startSec 1, then the workload's stopSec 9 ` +
        `at trace.speedup 2), holds none of the trace's jobs: its 2 jobs are submitted from trace second 0.5 ` +
        `to 20; ${fix}`,
    ),
  );
  // The workload's own start, in simulated seconds, moves the window's start: 15 s at speedup 2 is 30
  // trace seconds on.
  await assert.rejects(
    load("durationSec: 100", "startSec: 10, speedup: 2", "    startSec: 15"),
    refused(
      `${where}: the replayed window, trace seconds 40 to 210 (trace.startSec 10, the workload's startSec ` +
        `15, then the run's durationSec 100 at trace.speedup 2), holds none of the trace's jobs: its 2 jobs ` +
        `are submitted from trace second 0.5 to 20; ${fix}`,
    ),
  );
  // maxJobs counts the window's jobs, not the trace's first ones (job 100, before the window).
  assert.equal((await load("durationSec: 100", "startSec: 10", "    maxJobs: 1")).traces?.g.length, 2);
  // The second job comes at 9 s: a run that ends then leaves it out, as no job arrives at the run's end
  // itself; a workload that stops then takes it (stopSec is its last time to submit).
  await assert.rejects(
    load("durationSec: 9", "startSec: 2, speedup: 2"),
    refused(
      `${where}: the replayed window, trace seconds 2 to 20 (trace.startSec 2, then the run's durationSec 9 ` +
        `at trace.speedup 2), holds none of the trace's jobs: its 2 jobs are submitted from trace second 0.5 ` +
        `to 20; ${fix}`,
    ),
  );
  const loaded = await load("durationSec: 10", "startSec: 2, speedup: 2", "    stopSec: 9");
  assert.equal(loaded.traces?.g.length, 2);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a trace workload replays the jobs at their times, scaled to a host class, gzipped or not", async () => {
  const dir = await Deno.makeTempDir();
  const gz = new Blob([TRACE]).stream().pipeThrough(new CompressionStream("gzip"));
  await Deno.writeFile(`${dir}/events.csv.gz`, gz);
  assert.deepEqual(
    await readTaskEvents(`${dir}/events.csv.gz`),
    parseTaskEvents(TRACE, `${dir}/events.csv.gz`),
  );
  await Deno.writeTextFile(
    `${dir}/replay.yaml`,
    `name: replay
durationSec: 200
hostClasses:
  - {name: std, count: 4, cpu: 16, memoryMb: 65536, diskMb: 100000}
respools:
  - name: trace
    resources:
      - {kind: cpu, reservation: 64, limit: 64}
      - {kind: memory, reservation: 262144, limit: 262144}
      - {kind: disk, reservation: 400000, limit: 400000}
workloads:
  - name: g
    respool: /trace
    trace: {file: events.csv.gz, hostClass: std, openEndedSec: 500}
settings: {sampleIntervalSec: 5}
`,
  );
  const loaded = await loadScenarioFile(`${dir}/replay.yaml`);
  const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces, checkInvariants: true });
  const report = buildReport(loaded.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(sim.submissions.map((s) => [s.workload, s.instances, s.accepted]), [["g", 2, true], [
    "g",
    2,
    true,
  ]]);
  const jobs = sim.submissions.map((s) => sim.jobmgr.jobs.get(s.jobId)!);
  assert.equal(jobs[1].config.defaultConfig.resource!.cpuLimit, 4, "0.25 of a 16-core machine");
  assert.equal(jobs[1].config.sla.preemptible, false, "Google's production band");
  assert.ok(jobs[0].runtime.creationTimeMs < 100, "at once (after the pools exist)");
  assert.ok(jobs[1].runtime.creationTimeMs! >= 20_000 && jobs[1].runtime.creationTimeMs! < 21_000);
  // Job 100: one task finished, one failed; job 200: one stopped at its kill time, one still running.
  assert.deepEqual([report.tasks.succeeded, report.tasks.failed, report.tasks.killed], [1, 1, 1]);
  assert.equal(jobs[0].tasks.get(0)!.completionTimeMs! - jobs[0].tasks.get(0)!.startTimeMs!, 60_000);
  assert.equal(jobs[1].tasks.get(0)!.state, "RUNNING");
  const hosts = [...jobs[1].tasks.values()].map((t) => t.hostname);
  assert.notEqual(hosts[0], hosts[1], "the different-machine restriction");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a task's last run is replayed, ended the way the trace last ended the task", () => {
  const jobs = parseTaskEvents(
    [
      // Failed, resubmitted, scheduled again and finished: its second run, 13 s → 113 s, succeeded.
      row(0, "1", 0, E.SUBMIT),
      row(1e6, "1", 0, E.SCHEDULE),
      row(11e6, "1", 0, E.FAIL),
      row(12e6, "1", 0, E.SUBMIT),
      row(13e6, "1", 0, E.SCHEDULE),
      row(113e6, "1", 0, E.FINISH),
      // Failed, then scheduled again and still running when the trace stops: it never ends.
      row(0, "1", 1, E.SUBMIT),
      row(2e6, "1", 1, E.SCHEDULE),
      row(9e6, "1", 1, E.FAIL),
      row(10e6, "1", 1, E.SCHEDULE),
      // Ran 5 s → 30 s, was evicted and killed while pending again: that run, ended as killed.
      row(0, "1", 2, E.SUBMIT),
      row(5e6, "1", 2, E.SCHEDULE),
      row(30e6, "1", 2, E.EVICT),
      row(31e6, "1", 2, E.SUBMIT),
      row(60e6, "1", 2, E.KILL),
      // Killed while pending, never scheduled: it did not run for those 60 s.
      row(20e6, "1", 3, E.SUBMIT),
      row(80e6, "1", 3, E.KILL),
    ].join("\n"),
    "t.csv",
  );
  assert.deepEqual(jobs[0].tasks, [
    { index: 0, durationSec: 100, exitCode: 0 },
    { index: 1, durationSec: undefined, exitCode: undefined },
    { index: 2, durationSec: 25, exitCode: 143, killedSec: 60 },
  ]);
  // Task 3 was added to the job 20 s in: it arrives then, as a lot of its own.
  assert.deepEqual([jobs[1].jobId, jobs[1].part, jobs[1].submitSec], ["1", 1, 20]);
  assert.deepEqual(jobs[1].tasks, [{ index: 3, durationSec: 0, exitCode: 143, killedSec: 80 }]);
});

Deno.test("replay: a task that failed and ran again succeeds; one the trace kills is stopped then, pending or running", async () => {
  const dir = await Deno.makeTempDir();
  // One 16-core host. Job 100: task 0 fails at 11 s, runs again 13 s → 113 s and finishes; task 1 runs
  // 5 s → 55 s. Job 200 (8 cores) is killed at 80 s, pending all along. Job 300 (8 cores) is killed at
  // 40 s, pending; here it finds no room before its kill, so it never runs.
  const trace = [
    row(0, "100", 0, E.SUBMIT, { cpu: "0.125" }),
    row(0, "100", 1, E.SUBMIT, { cpu: "0.125" }),
    row(1e6, "100", 0, E.SCHEDULE),
    row(5e6, "100", 1, E.SCHEDULE),
    row(11e6, "100", 0, E.FAIL),
    row(12e6, "100", 0, E.SUBMIT),
    row(13e6, "100", 0, E.SCHEDULE),
    row(20e6, "200", 0, E.SUBMIT, { cpu: "0.5" }),
    row(30e6, "300", 0, E.SUBMIT, { cpu: "0.5" }),
    row(40e6, "300", 0, E.KILL),
    row(55e6, "100", 1, E.FINISH),
    row(80e6, "200", 0, E.KILL),
    row(113e6, "100", 0, E.FINISH),
  ].join("\n");
  await Deno.writeTextFile(`${dir}/tr.csv`, trace);
  await Deno.writeTextFile(
    `${dir}/tr.yaml`,
    traceScenarioYaml({
      file: "tr.csv",
      run: "durationSec: 300",
      memoryAndDisk: true,
      tail: "settings: {sampleIntervalSec: 5}",
    }),
  );
  try {
    const loaded = await loadScenarioFile(`${dir}/tr.yaml`);
    const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces, checkInvariants: true });
    const report = buildReport(loaded.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    assert.deepEqual([report.tasks.succeeded, report.tasks.failed, report.tasks.killed], [2, 0, 2]);
    assert.equal(report.tasks.unplaced, 0, "the one stopped before it ran is killed, not unplaced");
    const [a, b, c] = sim.submissions.map((s) => sim.jobmgr.jobs.get(s.jobId)!.tasks.get(0)!);
    assert.equal(a.state, "SUCCEEDED");
    assert.equal(a.completionTimeMs! - a.startTimeMs!, 100_000, "the last run's 100 s, not the first's 10 s");
    // Submitted at 20 s and placed at once, it runs until the replay stops it at the trace's kill, 80 s.
    assert.equal(b.state, "KILLED");
    assert.ok(b.startTimeMs! < 22_000, `started at ${b.startTimeMs}`);
    assert.ok(
      b.completionTimeMs! >= 80_000 && b.completionTimeMs! < 81_000,
      `ended at ${b.completionTimeMs}`,
    );
    // Still waiting for room at its kill at 40 s: stopped there, it never runs.
    assert.equal(c.state, "KILLED");
    assert.equal(c.startTimeMs, undefined, "never started");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Jobs 1 … 4 submitted at trace seconds 90, 110, 130 and 150, one 10-second task each. */
const WINDOWED = [90, 110, 130, 150].flatMap((s, i) => [
  row(s * 1e6, String(i + 1), 0, E.SUBMIT),
  row(s * 1e6, String(i + 1), 0, E.SCHEDULE),
  row((s + 10) * 1e6, String(i + 1), 0, E.FINISH),
]).join("\n");

/** Runs WINDOWED as a trace workload with these workload fields; the submission times, in ms. */
async function replayTimes(traceFields: string, workloadFields = ""): Promise<number[]> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/w.csv`, WINDOWED);
    await Deno.writeTextFile(
      `${dir}/w.yaml`,
      `name: w
durationSec: 100
hostClasses:
  - {name: std, count: 4, cpu: 16, memoryMb: 65536, diskMb: 100000}
respools:
  - name: trace
    resources:
      - {kind: cpu, reservation: 64, limit: 64}
      - {kind: memory, reservation: 262144, limit: 262144}
      - {kind: disk, reservation: 400000, limit: 400000}
workloads:
  - {name: g, respool: /trace, trace: {file: w.csv, hostClass: std, ${traceFields}}${workloadFields}}
`,
    );
    const loaded = await loadScenarioFile(`${dir}/w.yaml`);
    const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces, checkInvariants: true });
    return sim.submissions.map((s) => sim.jobmgr.jobs.get(s.jobId)!.runtime.creationTimeMs!);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Whole seconds of `ms` (a submission reaches the job manager a few ms after it is sent). */
const seconds = (ms: number[]) => ms.map((t) => Math.floor(t / 1000));

Deno.test("trace.startSec is where simulated time 0 is: a job submitted at startSec + 10 arrives at 10 s", async () => {
  assert.deepEqual(seconds(await replayTimes("startSec: 100")), [10, 30, 50]);
  // Twice as fast: 10 trace seconds in, 5 s into the run.
  assert.deepEqual(seconds(await replayTimes("startSec: 100, speedup: 2")), [5, 15, 25]);
});

Deno.test("a trace workload's maxJobs counts the jobs in the replayed window, not those before it", async () => {
  // Job 1 (trace second 90) is before the window: the two jobs replayed are jobs 2 and 3.
  assert.deepEqual(seconds(await replayTimes("startSec: 100", ", maxJobs: 2")), [10, 30]);
  assert.deepEqual(seconds(await replayTimes("startSec: 100", ", maxJobs: 1")), [10]);
});

Deno.test("a trace workload's own startSec and stopSec bound its arrivals in simulated time, as other workloads'", async () => {
  assert.deepEqual(seconds(await replayTimes("startSec: 100", ", startSec: 20")), [30, 50]);
  assert.deepEqual(seconds(await replayTimes("startSec: 100", ", startSec: 20, stopSec: 40")), [30]);
  // maxJobs counts from the workload's start, too.
  assert.deepEqual(seconds(await replayTimes("startSec: 100", ", startSec: 20, maxJobs: 1")), [30]);
});

Deno.test("rows out of time order are read in time order, ties in the file's order", () => {
  // Job 4's FINISH is written before its SCHEDULE; job 6's part file comes before job 3's earlier one.
  const jobs = parseTaskEvents(
    [
      row(45e6, "4", 0, E.SUBMIT),
      row(80e6, "4", 0, E.FINISH),
      row(50e6, "4", 0, E.SCHEDULE),
      row(90e6, "6", 0, E.SUBMIT),
      row(90e6, "6", 0, E.SCHEDULE),
      row(95e6, "6", 0, E.FINISH),
      row(10e6, "3", 0, E.SUBMIT),
      row(10e6, "3", 0, E.SCHEDULE),
      row(12e6, "3", 0, E.EVICT),
      row(13e6, "3", 0, E.SCHEDULE),
      row(20e6, "3", 0, E.FAIL),
    ].join("\n"),
    "o.csv",
  );
  assert.deepEqual(jobs.map((j) => [j.jobId, j.submitSec, j.tasks]), [
    ["3", 10, [{ index: 0, durationSec: 7, exitCode: 1 }]],
    // Scheduled at 50 s and finished at 80 s: not a run restarted after its end, with none in the trace.
    ["4", 45, [{ index: 0, durationSec: 30, exitCode: 0 }]],
    ["6", 90, [{ index: 0, durationSec: 5, exitCode: 0 }]],
  ]);
  // A bad row is still named by its line in the file.
  assert.throws(
    () => parseTaskEvents(`${row(9e6, "1", 0, 0)}\n${row(1e6, "1", 0, 0, { cpu: "x" })}`, "o.csv"),
    {
      message: 'o.csv line 2, column 10 (CPU request): expected a number from 0 to 1, got "x"',
    },
  );
});

Deno.test("tasks added to a job later arrive at their own SUBMIT time, as a lot of their own", () => {
  const jobs = parseTaskEvents(
    [
      row(5e6, "5", 0, E.SUBMIT),
      row(6e6, "5", 0, E.SCHEDULE),
      // Within the arrival window of the job's first SUBMIT: it comes with task 0.
      row(9e6, "5", 2, E.SUBMIT),
      row(16e6, "5", 0, E.FINISH),
      row(500e6, "5", 1, E.SUBMIT),
      row(501e6, "5", 1, E.SCHEDULE),
      row(502e6, "5", 3, E.SUBMIT, { spread: "1" }),
      row(511e6, "5", 1, E.FINISH),
      row(200e6, "7", 0, E.SUBMIT),
    ].join("\n"),
    "a.csv",
  );
  assert.deepEqual(jobs.map((j) => [j.jobId, j.part, j.submitSec, j.tasks.map((t) => t.index)]), [
    ["5", 0, 5, [0, 2]],
    ["7", 0, 200, [0]],
    ["5", 1, 500, [1, 3]],
  ]);
  assert.deepEqual(jobs[2].tasks[0], { index: 1, durationSec: 10, exitCode: 0 });
  // The job's largest request and restriction hold for each of its lots.
  assert.deepEqual(jobs.filter((j) => j.jobId === "5").map((j) => j.differentMachines), [true, true]);
  // maxJobs counts trace jobs: the one job it takes comes with the tasks added to it later.
  const w = { startSec: 0, maxJobs: 1, trace: { startSec: 0, speedup: 1 } } as unknown as Workload;
  assert.deepEqual(replayedJobs(jobs, w, Infinity).map(({ job, atMs }) => [job.jobId, job.part, atMs]), [
    ["5", 0, 5000],
    ["5", 1, 500_000],
  ]);
});

Deno.test("replay: a task added later runs at its SUBMIT time; a FINISH written before its SCHEDULE ends the run", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/late.csv`,
    [
      row(5e6, "5", 0, E.SUBMIT),
      row(6e6, "5", 0, E.SCHEDULE),
      row(16e6, "5", 0, E.FINISH),
      row(500e6, "5", 1, E.SUBMIT),
      row(501e6, "5", 1, E.SCHEDULE),
      row(511e6, "5", 1, E.FINISH),
      row(45e6, "4", 0, E.SUBMIT),
      row(80e6, "4", 0, E.FINISH),
      row(50e6, "4", 0, E.SCHEDULE),
    ].join("\n"),
  );
  await Deno.writeTextFile(
    `${dir}/late.yaml`,
    `name: late
durationSec: 600
hostClasses:
  - {name: std, count: 2, cpu: 16, memoryMb: 65536, diskMb: 100000}
respools:
  - name: trace
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
      - {kind: disk, reservation: 200000, limit: 200000}
workloads:
  - {name: g, respool: /trace, trace: {file: late.csv, hostClass: std}}
settings: {sampleIntervalSec: 1, taskStartupSec: 0}
`,
  );
  try {
    const loaded = await loadScenarioFile(`${dir}/late.yaml`);
    const sim = await runScenario(loaded.scenario, { seed: 1, traces: loaded.traces, checkInvariants: true });
    const tasks = sim.submissions.map((s) => sim.jobmgr.jobs.get(s.jobId)!.tasks.get(0)!);
    const seconds = (ms: number | undefined) => Math.floor(ms! / 1000);
    assert.deepEqual(tasks.map((t) => [seconds(t.startTimeMs), seconds(t.completionTimeMs), t.state]), [
      [5, 15, "SUCCEEDED"], // job 5's first task: 10 s from its submission at 5 s
      [45, 75, "SUCCEEDED"], // job 4: 30 s, not the hour of a run the trace never ended
      [500, 510, "SUCCEEDED"], // job 5's task 1, added at 500 s
    ]);
    const r = buildReport(loaded.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    const running = (t: number) => r.series.runningTasks[r.series.t.indexOf(t)];
    assert.deepEqual([running(10), running(20), running(505), running(520)], [1, 0, 1, 0]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
