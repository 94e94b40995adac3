/** A trace's KILLs replayed as a user's stops: a task killed while pending never runs, one killed running ends KILLED. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { TRACE_EVENTS as E } from "./trace.ts";

/** One task_events row (time in trace seconds) asking for `cpu` of the largest machine. */
function row(sec: number, job: string, index: number, type: number, cpu: number): string {
  return [sec * 1e6, "", job, index, "", type, "u1", "1", "2", cpu, "0.01", "0.0001", "0"].join(",");
}

/** Job 1 fills the 4 hosts from 600 s to 1000 s; job 2's task is killed at 700 s, still pending. */
const FULL = [
  ...[0, 1, 2, 3].flatMap((i) => [
    row(600, "1", i, E.SUBMIT, 1),
    row(600.5, "1", i, E.SCHEDULE, 1),
    row(1000, "1", i, E.FINISH, 1),
  ]),
  row(610, "2", 0, E.SUBMIT, 0.5),
  row(700, "2", 0, E.KILL, 0.5),
];

/** Job 3's task starts at 1100 s and is killed running at 1200 s. */
const RUNNING = [
  row(1100, "3", 0, E.SUBMIT, 0.5),
  row(1100, "3", 0, E.SCHEDULE, 0.5),
  row(1200, "3", 0, E.KILL, 0.5),
];

async function run(rows: string[]) {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/t.csv`, rows.join("\n") + "\n");
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 1500
hostClasses:
  - {name: std, count: 4, cpu: 32, memoryMb: 131072, diskMb: 1000000}
respools:
  - name: trace
    resources:
      - {kind: cpu, reservation: 128, limit: 128}
      - {kind: memory, reservation: 524288, limit: 524288}
      - {kind: disk, reservation: 4000000, limit: 4000000}
workloads:
  - name: g
    respool: /trace
    trace: {file: t.csv, hostClass: std, startSec: 600}
settings: {sampleIntervalSec: 10, warmupSec: 0}
`,
    );
    const { scenario, traces } = await loadScenarioFile(`${dir}/s.yaml`);
    const sim = await runScenario(scenario, { seed: 1, checkInvariants: true, traces });
    return { sim, report: buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 }) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a task the trace kills while pending is stopped then: it never launches and counts as killed", async () => {
  const { report: r } = await run(FULL);
  const { submitted, launched, succeeded, failed, killed, unplaced } = r.tasks;
  assert.deepEqual({ submitted, launched, succeeded, failed, killed, unplaced }, {
    submitted: 5,
    launched: 4,
    succeeded: 4,
    failed: 0,
    killed: 1,
    unplaced: 0,
  });
  // Only job 1's tasks ran: the killed one's wait neither counts as a start nor as waiting at the end.
  assert.equal(r.queueDelaySeconds.waiting, 0);
  assert.ok(r.queueDelaySeconds.p99! < 5, `p99 ${r.queueDelaySeconds.p99}`);
});

Deno.test("a task the trace kills while running ends through the stop: KILLED, not a failure with 143", async () => {
  const { report: r } = await run([...FULL, ...RUNNING]);
  const { submitted, launched, succeeded, failed, killed, unplaced } = r.tasks;
  assert.deepEqual({ submitted, launched, succeeded, failed, killed, unplaced }, {
    submitted: 6,
    launched: 5,
    succeeded: 4,
    failed: 0,
    killed: 2,
    unplaced: 0,
  });
});
