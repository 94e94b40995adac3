import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { headline } from "./stats.ts";
import { inlineScenario, PLAN_SCENARIO } from "./testing.ts";

const TREE = `
name: tree
durationSec: 120
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 32768, diskMb: 10000}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
      - name: b
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
workloads:
  - {name: wa, respool: /org/a, arrival: {at: [0]}, instances: 10, durationSec: 600, cpu: 1, memoryMb: 1024}
  - {name: wb, respool: /org/b, arrival: {at: [30]}, instances: 40, durationSec: 600, cpu: 1, memoryMb: 1024}
`;

Deno.test("pool series: parents first, aligned with time, a parent's allocation and demand sum its leaves", async () => {
  const scenario = inlineScenario(TREE);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(Object.keys(report.poolSeries), ["/org", "/org/a", "/org/b"]);
  const [org, a, b] = ["/org", "/org/a", "/org/b"].map((p) => report.poolSeries[p]);
  const n = report.series.t.length;
  for (const s of [org, a, b]) assert.equal(s.allocationCpu.length, n);
  for (let i = 0; i < n; i++) {
    assert.equal(org.allocationCpu[i], a.allocationCpu[i] + b.allocationCpu[i]);
    assert.equal(org.demandMemMb[i], a.demandMemMb[i] + b.demandMemMb[i]);
  }
  const end = n - 1;
  assert.deepEqual([a.allocationCpu[end], b.allocationCpu[end], b.demandCpu[end]], [10, 22, 18]);
  assert.equal(report.pools["/org"].allocationCpu, 32);
  assert.deepEqual(report.preemptions, { total: 0, running: 0, waiting: 0, slack: 0, maintenance: 0 });
});

const MACHINE = { wallSeconds: 0, peakRssBytes: 0 };

Deno.test("queue delay counts instances still waiting at the end with their wait so far", async () => {
  // 40 one-core tasks at t=0 on two 4-core hosts: 8 run at once, 32 wait the whole 120 s.
  const scenario = inlineScenario(PLAN_SCENARIO);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.unplaced, 32);
  assert.equal(r.queueDelaySeconds.waiting, 32);
  // Submitted a few milliseconds in (the API call's modelled latency), waiting until the end at 120 s.
  assert.ok(
    r.queueDelaySeconds.p50 > 119.9 && r.queueDelaySeconds.p50 <= 120,
    `p50 ${r.queueDelaySeconds.p50}`,
  );
  assert.equal(r.queueDelaySeconds.max, r.queueDelaySeconds.p50);
  assert.deepEqual(r.workloads.w.queueDelaySeconds, r.queueDelaySeconds);
  assert.deepEqual(r.pools["/p"].queueDelaySeconds, r.queueDelaySeconds);
  assert.equal(r.jobs.unanswered, 0);
});

Deno.test("an elastic job's added instances wait from when they were asked for, not from the job's submission", async () => {
  const scenario = inlineScenario(`
name: elastic-idle
durationSec: 120
hostClasses:
  - {name: std, count: 20, cpu: 32, memoryMb: 131072, diskMb: 100000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 640, limit: 640}
      - {kind: memory, reservation: 2621440, limit: 2621440}
workloads:
  - name: spark
    respool: /p
    arrival: {at: [0]}
    instances: 10
    durationSec: 600
    cpu: 1
    memoryMb: 1024
    elastic: {maxInstances: 60, growBy: 10, everySec: 10}
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.submitted, 60, "every growth step counts its instances once");
  assert.equal(r.tasks.launched, 60);
  assert.equal(r.queueDelaySeconds.waiting, 0);
  // On an idle cluster every executor starts within a couple of seconds of being asked for; measured from
  // the job's submission, the last step's would have waited 50 s.
  assert.ok(r.queueDelaySeconds.max < 5, `max queue delay ${r.queueDelaySeconds.max} s`);
});

Deno.test("a gang's failure headline keeps why its tasks could not be placed", () => {
  assert.equal(
    headline("gang of 16 could not be placed whole: no host with 8 free GPUs: insufficient gpu on 12 hosts"),
    "gang not placed whole: no host with 8 free GPUs",
  );
  assert.equal(headline("no host with 4 free cpus: insufficient cpu on 3 hosts"), "no host with 4 free cpus");
  assert.equal(headline("required host h1 is down"), "required host unavailable");
});

Deno.test("reschedule delays: moved work is timed from its run's end to its next run, by how the run ended", async () => {
  const scenario = inlineScenario(`
name: moves
durationSec: 400
hostClasses:
  - {name: std, count: 40, cpu: 8, memoryMb: 32768, diskMb: 100000, racks: 4}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 320, limit: 320}
      - {kind: memory, reservation: 1310720, limit: 1310720}
workloads:
  - {name: svc, respool: /p, type: stateless, arrival: {at: [0]}, instances: 80, cpu: 1, memoryMb: 1024}
events:
  - {atSec: 60, drain: {rack: std-rack-1}, durationSec: 60}
  - {atSec: 200, loseRack: std-rack-2, recoverAfterSec: 100}
settings:
  sampleIntervalSec: 10
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const { afterKill, afterLoss } = r.rescheduleDelaySeconds;
  assert.equal(afterKill.count, r.preemptions.maintenance, "every drained task ran again");
  assert.equal(afterLoss.count, r.tasks.lost, "every lost task ran again");
  assert.ok(afterKill.count > 0 && afterLoss.count > 0, JSON.stringify(r.rescheduleDelaySeconds));
  assert.equal(r.rescheduleDelaySeconds.count, afterKill.count + afterLoss.count);
  assert.deepEqual(r.workloads.svc.rescheduleDelaySeconds.count, r.rescheduleDelaySeconds.count);
  assert.ok(afterKill.max > 0 && afterKill.p50 <= afterKill.max);
  // The drained rack's ten hosts are in maintenance from 60 s to 120 s, and up all along.
  const s = r.series;
  const at = (t: number) => s.t.findIndex((x) => x >= t);
  assert.equal(s.hostsInMaintenance[at(90)], 10);
  assert.equal(s.hostsUp[at(90)], 40);
  assert.equal(s.hostsInMaintenance[at(150)], 0);
  assert.equal(s.hostsUp[at(250)], 30, "the lost rack is down");
});
