/** Arrivals a run cannot simulate (too many jobs or tasks over the run) are refused when the scenario is read. */
import assert from "node:assert/strict";
import { parseScenario } from "./scenario.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { expectedWork, MAX_EXPECTED_JOBS, MAX_EXPECTED_TASKS } from "./scenario_arrivals.ts";
import { ROOT } from "./testing.ts";

const BASE = `name: t
durationSec: 2400
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
workloads:
`;

function errors(workloads: string, base = BASE): string[] {
  const res = parseScenario(`${base}${workloads}`, "bad.yaml");
  assert.equal(res.ok, false, "expected the scenario to be refused");
  return res.ok ? [] : res.errors;
}

function accepted(workloads: string, base = BASE): void {
  const res = parseScenario(`${base}${workloads}`, "ok.yaml");
  assert.ok(res.ok, res.ok ? "" : res.errors.join("\n"));
}

Deno.test("an arrival rate giving more jobs over the run than a run can simulate is refused, naming the bound", () => {
  const e = errors("  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1e308}}\n");
  assert.equal(e.length, 1, e.join("\n"));
  assert.match(e[0], /^bad\.yaml:10: workloads\[0\]\.arrival\.ratePerSec: got 1e\+308, expected /);
  assert.match(e[0], /at most 10,000,000 jobs over the run/);
  // The largest rate the run's 2,400 s allow, so the fix is plain.
  assert.match(e[0], /4,166\.667 a second/);
});

Deno.test("a rate past what a number holds (1e309 reads as infinity) is refused, shown as the file writes it", () => {
  const e = errors("  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1e309}}\n");
  assert.deepEqual(e, [
    "bad.yaml:10: workloads[0].arrival: expected {ratePerSec: n}, n a number above 0 (Poisson arrivals); " +
    "got {ratePerSec: .inf}",
  ]);
});

Deno.test("diurnal means and bursts are held to the same bound over the arrival window", () => {
  const e = errors(`  - name: d
    respool: /pool
    durationSec: 1
    arrival: {diurnal: {meanPerSec: 1e5, amplitude: 1, periodSec: 600}}
  - name: b
    respool: /pool
    durationSec: 1
    arrival: {bursts: {everySec: 0.001, jobs: 10}}
`);
  assert.equal(e.length, 2, e.join("\n"));
  assert.match(
    e[0],
    /^bad\.yaml:13: workloads\[0\]\.arrival\.diurnal\.meanPerSec: got 100000, expected .*10,000,000 jobs/,
  );
  assert.match(e[1], /^bad\.yaml:17: workloads\[1\]\.arrival\.bursts: expected .*10,000,000 jobs/);
});

Deno.test("the arrival window is the workload's: startSec, stopSec and maxJobs bound it; without durationSec too", () => {
  // 1e6 a second for 5 s: 5,000,000 jobs.
  accepted(
    "  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1e6}, startSec: 100, stopSec: 105}\n",
  );
  accepted("  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1e308}, maxJobs: 10}\n");
  const open = BASE.replace("durationSec: 2400\n", "");
  accepted(
    "  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1e3}, stopSec: 3600}\n",
    open,
  );
  const e = errors(
    "  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1}, maxJobs: 1e12}\n",
    open,
  );
  assert.equal(e.length, 1, e.join("\n"));
  assert.match(e[0], /^bad\.yaml:9: workloads\[0\]\.maxJobs: got 1000000000000, expected at most 10,000,000/);
});

Deno.test("more tasks over the run than a run can simulate are refused at the instance count", () => {
  const e = errors(
    "  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: 1}, instances: 1000000}\n",
  );
  assert.equal(e.length, 1, e.join("\n"));
  assert.match(
    e[0],
    /^bad\.yaml:10: workloads\[0\]\.instances: got 1000000, expected .*at most 100,000,000 tasks/,
  );
  // An elastic job grows to its maxInstances.
  const g = errors(
    "  - {name: w, respool: /pool, durationSec: 1, arrival: {at: [0]}, elastic: {maxInstances: 1e9, growBy: 1, everySec: 1}}\n",
  );
  assert.ok(
    g.some((x) => x.startsWith("bad.yaml:10: workloads[0].elastic.maxInstances: got 1000000000, ")),
    g.join("\n"),
  );
});

Deno.test("the largest shipped scenario is far within both bounds", async () => {
  const { scenario } = await loadScenarioFile(`${ROOT}/scenarios/peloton-scale.yaml`);
  let jobs = 0, tasks = 0;
  for (const w of scenario.workloads) {
    const x = expectedWork(w, scenario.durationSec);
    jobs += x.jobs;
    tasks += x.tasks;
  }
  assert.ok(jobs * 100 < MAX_EXPECTED_JOBS, `${jobs} jobs`);
  assert.ok(tasks * 10 < MAX_EXPECTED_TASKS, `${tasks} tasks`);
});

Deno.test("a job file's instance count is held to the task bound once the file is read", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // 100,000 instances a job, a job a second over 2,400 s: 240,000,000 tasks.
    const job = await Deno.readTextFile(`${ROOT}/scenarios/jobs/testjob.yaml`);
    await Deno.writeTextFile(
      `${dir}/testjob.yaml`,
      job.replace("instancecount: 10\n", "instancecount: 100000\n"),
    );
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `${BASE}  - {name: w, respool: /pool, jobFile: testjob.yaml, arrival: {ratePerSec: 1}}\n`,
    );
    const e = await loadScenarioFile(`${dir}/s.yaml`).then(() => undefined, (e: Error) => e.message);
    assert.match(
      e ?? "",
      /s\.yaml:10: workloads\[0\]\.jobFile: .*testjob\.yaml: expected at most 100,000,000 tasks/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
