import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

Deno.test("a gang its pool can never admit takes no entitlement: the other pool's tasks run on, unpreempted", async () => {
  const scenario = inlineScenario(`
name: never-admitted
durationSec: 900
hostClasses: [{ name: std, count: 10, cpu: 10, memoryMb: 100000, diskMb: 100000, racks: 2 }]
respools:
  - { name: A, resources: [{kind: cpu, reservation: 50, limit: 100}, {kind: memory, reservation: 500000, limit: 1000000}] }
  - { name: B, resources: [{kind: cpu, reservation: 50, limit: 100}, {kind: memory, reservation: 500000, limit: 1000000}] }
workloads:
  - { name: wb, respool: /B, arrival: {at: [0]}, instances: 100, durationSec: 5000, cpu: 1, memoryMb: 100 }
  - { name: huge, respool: /A, arrival: {at: [300]}, instances: 101, gang: true, durationSec: 100, cpu: 1, memoryMb: 100 }
settings: { preemption: { periodSec: 15, sustainedOverAllocationCount: 4 } }
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const [a, b] = ["/A", "/B"].map((p) => sim.resmgr.tree.lookup(p)!);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [0, 100]);
  assert.deepEqual([a.preempted, b.preempted], [0, 0]);
  assert.equal(a.demand.cpuMilli, 101_000, "still queued, and still its demand where queued work is listed");
  assert.deepEqual(sim.stuck.map((j) => j.workload), ["huge"]);
});

Deno.test("a pool whose only work it can never admit is not counted as starved in the fairness index", async () => {
  // B may use at most 60 of the 100 cores: Peloton's calculator hands the 40 left over to A, whose only work
  // is a gang over A's limit. A wants nothing it could ever get, so it is not a starved pool.
  const scenario = inlineScenario(`
name: never-admitted-fairness
durationSec: 600
hostClasses: [{ name: std, count: 10, cpu: 10, memoryMb: 100000, diskMb: 100000, racks: 2 }]
respools:
  - { name: A, resources: [{kind: cpu, reservation: 20, limit: 50}, {kind: memory, reservation: 500000, limit: 1000000}] }
  - { name: B, resources: [{kind: cpu, reservation: 20, limit: 60}, {kind: memory, reservation: 500000, limit: 1000000}] }
workloads:
  - { name: wb, respool: /B, arrival: {at: [0]}, instances: 60, durationSec: 5000, cpu: 1, memoryMb: 100 }
  - { name: huge, respool: /A, arrival: {at: [100]}, instances: 51, gang: true, durationSec: 100, cpu: 1, memoryMb: 100 }
settings: { sampleIntervalSec: 10 }
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const a = sim.resmgr.tree.lookup("/A")!;
  assert.ok(a.entitlement.cpu > 0, `A is handed leftover capacity (${a.entitlement.cpu} cores)`);
  const r = buildReport(sim.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.equal(r.fairness, 1, "B holds all it wants; A wants nothing it could hold");
});

Deno.test("revocable work a pool can never admit (over its slack limit) is not counted as starved in the fairness index", async () => {
  // /W's 60 non-preemptible tasks use half their cpu, lending 30 cores of slack. /R's revocable tasks ask
  // for 200 MB each, over its slack limit (10% of its 1000 MB reservation): never admitted, they are no
  // want /R could be fair to, as regular work over /R's limit is not (the same with `revocable: false`
  // and a 100 MB memory limit reads 1).
  const scenario = inlineScenario(`
name: never-admitted-slack-fairness
durationSec: 300
hostClasses: [{ name: std, count: 10, cpu: 10, memoryMb: 10000, diskMb: 1000, racks: 2 }]
respools:
  - { name: W, resources: [{kind: cpu, reservation: 60, limit: 100}, {kind: memory, reservation: 60000, limit: 100000}] }
  - name: R
    slackLimit: { maxPercent: 10 }
    resources: [{kind: cpu, reservation: 0, limit: 100}, {kind: memory, reservation: 1000, limit: 100000}]
workloads:
  - { name: w, respool: /W, type: stateless, arrival: {at: [0]}, instances: 60, cpu: 1, memoryMb: 100, priority: 10, preemptible: false, cpuUsage: 0.5 }
  - { name: r, respool: /R, arrival: {at: [30]}, instances: 10, durationSec: 100000, cpu: 1, memoryMb: 200, revocable: true }
settings: { sampleIntervalSec: 30, entitlementPeriodSec: 60 }
`);
  const sim = await runScenario(scenario, { seed: 1 });
  assert.deepEqual(sim.stuck.map((j) => j.workload), ["r"], "never admitted");
  assert.ok(sim.resmgr.tree.lookup("/R")!.slackEntitlement.cpu > 0, "slack is there for /R's cpu");
  const r = buildReport(sim.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(r.series.fairness, r.series.t.map(() => 1), "only /W counts, and it holds all it wants");
  assert.equal(r.fairness, 1);
  assert.equal(r.fairnessHeld, 1);
});
