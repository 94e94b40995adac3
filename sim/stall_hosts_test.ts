/** A run with a durationSec lists, among the jobs that could never start, the work no host could ever take. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { summaryLine } from "./main.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { inlineScenario } from "./testing.ts";

Deno.test("tasks too big for every host, or whose constraint no host meets, could never start", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Three minicluster-sized hosts; the pool admits big and cons, then has no room left for synth.
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 120
hostClasses:
  - {name: std, count: 3, cpu: 4, memoryMb: 8192, diskMb: 20480}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 12, limit: 12}
      - {kind: memory, reservation: 6144, limit: 6144}
workloads:
  - {name: big, respool: /p, jobFile: big.yaml}
  - {name: cons, respool: /p, arrival: {at: [1]}, jobFile: cons.yaml}
  - {name: synth, respool: /p, arrival: {at: [2]}, cpu: 8, memoryMb: 100, durationSec: 10}
  - {name: ok, respool: /p, arrival: {at: [3]}, cpu: 1, memoryMb: 100, durationSec: 10}
`,
    );
    const job = (name: string, cpu: number, constraint = "") =>
      `name: ${name}\ninstanceCount: 1\ndefaultConfig:\n  resource: {cpuLimit: ${cpu}, memLimitMb: 100}\n` +
      `  command: {value: "sleep 10"}\n${constraint}`;
    await Deno.writeTextFile(`${dir}/big.yaml`, job("big", 8));
    await Deno.writeTextFile(
      `${dir}/cons.yaml`,
      job(
        "cons",
        1,
        "  constraint: {type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, condition: EQUAL, " +
          "label: {key: hostname, value: agent-1}, requirement: 1}}\n",
      ),
    );
    const { scenario, templates } = await loadScenarioFile(`${dir}/s.yaml`);
    const sim = await runScenario(scenario, { seed: 1, templates, checkInvariants: true });
    assert.deepEqual(sim.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), [
      ["big", 1, "admitted, but no placement can take it: needs cpu 8, no host has more than 4"],
      ["cons", 1, "admitted, but no placement can take it: no host meets its constraint hostname=agent-1"],
      // Its pool's queue holds it behind what big and cons hold, but it could never start anyway.
      ["synth", 1, "waits for admission, but no placement can take it: needs cpu 8, no host has more than 4"],
    ]);
    const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    assert.equal(report.jobs.stuck, 3);
    assert.match(summaryLine(report, dir, scenario.durationSec), /\(3 jobs could never start\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hosts kept for other work, or none with every resource at once, take nothing: its gang waits whole", async () => {
  const sim = await runScenario(
    inlineScenario(`
name: kept
durationSec: 120
hostClasses:
  - {name: gpu, count: 2, cpu: 8, memoryMb: 16384, gpu: 2}
  - {name: std, count: 1, cpu: 4, memoryMb: 8192}
  - {name: wide, count: 1, cpu: 2, memoryMb: 32768}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 22, limit: 22}
      - {kind: memory, reservation: 73728, limit: 73728}
      - {kind: gpu, reservation: 4, limit: 4}
workloads:
  - {name: ok, respool: /p, cpu: 1, memoryMb: 100, durationSec: 10}
  - {name: cpu6, respool: /p, cpu: 6, memoryMb: 100, durationSec: 10}
  - {name: at-once, respool: /p, cpu: 3, memoryMb: 10000, durationSec: 10}
  - {name: gpu3, respool: /p, cpu: 1, memoryMb: 100, gpu: 3, durationSec: 10}
  - {name: gang, respool: /p, instances: 3, gang: true, cpu: 1, memoryMb: 100, durationSec: 10,
     hostAttributes: {host_class: gpu}}
  - {name: spread, respool: /p, instances: 2, maxPerHost: 1, cpu: 1, memoryMb: 100, durationSec: 10,
     hostAttributes: {rack: none}}
`),
    { seed: 1, checkInvariants: true },
  );
  const kept = " (GPU hosts are kept for GPU work)";
  assert.deepEqual(sim.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    [
      "cpu6",
      1,
      `admitted, but no placement can take it: needs cpu 6, no host it may use has more than 4${kept}`,
    ],
    [
      "at-once",
      1,
      `admitted, but no placement can take it: needs cpu 3, memory MB 10000, which no host it may use has at once${kept}`,
    ],
    ["gpu3", 1, "admitted, but no placement can take it: needs gpu 3, no host has more than 2"],
    [
      "gang",
      3,
      "admitted, but no placement can take its gang of 3 tasks: instance 0: no host it may use meets its " +
      `constraint host_class=gpu${kept}`,
    ],
    // Its per-host limit (a TASK label constraint) is no host's to meet: its host attributes are.
    [
      "spread",
      2,
      `admitted, but no placement can take it: no host it may use meets its constraint rack=none${kept}`,
    ],
  ]);
  assert.equal(sim.stats.tasks.launched, 1, "only ok's task ran");
});

Deno.test("a gang needing more hosts at once than can take its members could never start, nor what waits behind it", async () => {
  const sim = await runScenario(
    inlineScenario(`
name: hosts
durationSec: 120
hostClasses:
  - {name: gpu, count: 3, cpu: 16, memoryMb: 16384, gpu: 8}
  - {name: std, count: 1, cpu: 4, memoryMb: 8192}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 52, limit: 52}
      - {kind: memory, reservation: 57344, limit: 57344}
      - {kind: gpu, reservation: 24, limit: 24}
  - name: q
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
      - {kind: memory, reservation: 1024, limit: 1024}
workloads:
  - {name: odd, respool: /p, instances: 4, gang: true, cpu: 1, memoryMb: 100, gpu: 6, durationSec: 10}
  - {name: later, respool: /p, arrival: {at: [1]}, cpu: 1, memoryMb: 100, gpu: 2, durationSec: 10}
  - {name: cpu3, respool: /q, instances: 2, gang: true, cpu: 3, memoryMb: 100, durationSec: 10}
`),
    { seed: 1, checkInvariants: true },
  );
  assert.deepEqual(sim.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    [
      "odd",
      4,
      "admitted, but no placement can take its gang of 4 tasks: needs cpu 1, memory MB 100, gpu 6 for each " +
      "of its 4 tasks, but only 3 hosts could ever take one",
    ],
    [
      "cpu3",
      2,
      "admitted, but no placement can take its gang of 2 tasks: needs cpu 3, memory MB 100 for each of its " +
      "2 tasks, but only 1 host it may use could ever take one (GPU hosts are kept for GPU work)",
    ],
    ["later", 1, "waits in pool /p's queue behind admitted work that can never be placed"],
  ]);
  assert.equal(sim.stats.tasks.launched, 0);
});

Deno.test("a gang whose members spread over enough hosts, or share one, is placed", async () => {
  const sim = await runScenario(
    inlineScenario(`
name: spread
durationSec: 120
hostClasses:
  - {name: gpu, count: 2, cpu: 16, memoryMb: 16384, gpu: 8}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 32768, limit: 32768}
      - {kind: gpu, reservation: 16, limit: 16}
workloads:
  - {name: spread, respool: /p, instances: 2, gang: true, cpu: 1, memoryMb: 100, gpu: 6, durationSec: 10}
  - {name: shared, respool: /p, arrival: {at: [20]}, instances: 4, gang: true, cpu: 1, memoryMb: 100, gpu: 4,
     durationSec: 10}
`),
    { seed: 1, checkInvariants: true },
  );
  assert.deepEqual(sim.stuck, []);
  assert.equal(sim.stats.tasks.succeeded, 6);
});
