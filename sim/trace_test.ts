/** The Google cluster-data 2011 `task_events` loader and its replay, on small files the tests write. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile, readText } from "./scenario_load.ts";
import { parseTaskEvents, TRACE_EVENTS as E } from "./trace.ts";

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
  // Killed tasks end with SIGTERM's status; one never ends in the trace.
  assert.deepEqual(b.tasks, [
    { index: 0, durationSec: undefined, exitCode: undefined },
    { index: 1, durationSec: 28, exitCode: 143 },
  ]);
  assert.deepEqual([b.cpu, b.priority, b.differentMachines], [0.25, 10, true]);
  assert.deepEqual([a.cpu, a.memory, a.disk, a.differentMachines], [0.0625, 0.03, 0.0001, false]);
});

Deno.test("a row without 13 columns or with a bad event type fails with its line number", () => {
  assert.throws(
    () => parseTaskEvents(`${row(1, "1", 0, 0)}\n1,2,3`, "x.csv"),
    /x\.csv:2: expected 13 columns/,
  );
  assert.throws(() => parseTaskEvents(row(1, "1", 0, 11), "x.csv"), /x\.csv:1: expected .* event type 0-8/);
});

Deno.test("a trace workload replays the jobs at their times, scaled to a host class, gzipped or not", async () => {
  const dir = await Deno.makeTempDir();
  const gz = new Blob([TRACE]).stream().pipeThrough(new CompressionStream("gzip"));
  await Deno.writeFile(`${dir}/events.csv.gz`, gz);
  assert.equal(await readText(`${dir}/events.csv.gz`), TRACE);
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
  // Job 100: one task finished, one failed; job 200: one killed (exit 143), one still running.
  assert.deepEqual([report.tasks.succeeded, report.tasks.failed], [1, 2]);
  assert.equal(jobs[0].tasks.get(0)!.completionTimeMs! - jobs[0].tasks.get(0)!.startTimeMs!, 60_000);
  assert.equal(jobs[1].tasks.get(0)!.state, "RUNNING");
  const hosts = [...jobs[1].tasks.values()].map((t) => t.hostname);
  assert.notEqual(hosts[0], hosts[1], "the different-machine restriction");
  await Deno.remove(dir, { recursive: true });
});
