/** Utilization as resource-seconds held over resource-seconds up, when the capacity changes meanwhile. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";
import { averagesBetween, CPU, emptyAreas, GPU, MEM, REVOCABLE_CPU, UsageMeter } from "./usage_meter.ts";

const cores = (n: number) => ({ cpuMilli: n * 1000, memMb: n * 1024, diskMb: 0, gpuMilli: 0 });
const HOUR = 3_600_000;

Deno.test("utilization over an interval is what tasks held over what the hosts had, both integrated", () => {
  const m = new UsageMeter();
  m.hostCapacity(0, cores(100), 1);
  m.hold(0, cores(50), false, -1, 1);
  // A warm-up's end: the average after it starts from this reading.
  const warm = m.areas(HOUR / 2);
  // An hour at half of 100 cores, then an hour at all of 300 (revocable tasks take the last 100).
  m.hostCapacity(HOUR, cores(200), 1);
  m.hold(HOUR, cores(150), false, -1, 1);
  m.hold(HOUR, cores(100), true, -1, 1);
  const start = emptyAreas(0), mid = m.areas(HOUR), end = m.areas(2 * HOUR);
  const all = averagesBetween(start, end);
  // 350 of 400 core-hours: not 0.75, the mean of the two hours' fractions.
  assert.equal(all.ratio[CPU], 0.875);
  assert.equal(all.ratio[MEM], 0.875);
  assert.equal(all.ratio[REVOCABLE_CPU], 100 / 400, "revocable cpu over the cpu up");
  assert.equal(all.ratio[GPU], null, "no GPU up: no fraction of it, not an idle 0");
  assert.equal(all.revocableCpu, 50_000, "an average of 50 cores, in milli-cores");
  // Each hour alone is its own fraction, and the time after the warm-up its own.
  assert.equal(averagesBetween(start, mid).ratio[CPU], 0.5);
  assert.equal(averagesBetween(mid, end).ratio[CPU], 1);
  assert.equal(averagesBetween(warm, end).ratio[CPU], (25 + 300) / (50 + 300));
});

/** 2 hosts of 4 cores, 4 one-core tasks all run long; 6 more hosts come at 45 s. */
const GROWN = `
name: grown
durationSec: 100
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192, diskMb: 1000}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
      - {kind: memory, reservation: 16384, limit: 16384}
      - {kind: disk, reservation: 2000, limit: 2000}
workloads:
  - {name: long, respool: /a, arrival: {at: [0]}, instances: 4, durationSec: 5000, cpu: 1, memoryMb: 512}
events:
  - {atSec: 45, addHosts: {class: h, count: 6}}
settings:
  sampleIntervalSec: 10
  taskStartupSec: 0
`;

Deno.test("a run whose capacity grows reports utilization that agrees with what its pools held", async () => {
  for (const warmupSec of [0, 25]) {
    const scenario = inlineScenario(
      GROWN.replace("taskStartupSec: 0", `taskStartupSec: 0\n  warmupSec: ${warmupSec}`),
    );
    const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
    const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    const s = r.series;
    assert.deepEqual([s.hostsUp[0], s.hostsUp.at(-1)], [2, 8]);
    // The cores up after the warm-up, on average: 8 until 45 s, 32 after.
    const measured = 100 - warmupSec;
    const up = (8 * (45 - warmupSec) + 32 * 55) / measured;
    const held = r.pools["/a"].avgHeldCpu!;
    assert.ok(held > 3.99 && held <= 4, `the 4 tasks held 4 cores: ${held}`);
    assert.ok(
      Math.abs(r.utilization.cpu! - held / up) < 0.0002,
      `warm-up ${warmupSec} s: utilization ${r.utilization.cpu}, held ${held} of ${up} cores up`,
    );
    // The mean of the moment's fractions would read higher: half of 8 cores, then an eighth of 32.
    const meanOfFractions = (0.5 * (45 - warmupSec) + 0.125 * 55) / measured;
    assert.ok(r.utilization.cpu! < meanOfFractions - 0.05, `${r.utilization.cpu} vs ${meanOfFractions}`);
    // The interval the hosts came in: 4 cores held of 8 for about 5 s and of 32 for about 5.
    const at50 = s.cpuUtil[s.t.indexOf(50)]!;
    assert.ok(Math.abs(at50 - 40 / 200) < 0.01, `40 to 50 s: ${at50}`);
  }
});

/**
 * 3 hosts of 2 cores; a 2-instance service (one down for maintenance at a time) and a 20 s batch task; h-0
 * and h-1 go into open-ended maintenance at 50 s and are empty, DOWN, about 0.1 s later.
 */
const DRAINED = `
name: drained
durationSec: 300
hostClasses:
  - {name: h, count: 3, cpu: 2, memoryMb: 2048}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 4, limit: 100}
      - {kind: memory, reservation: 4096, limit: 409600}
workloads:
  - {name: svc, respool: /p, type: stateless, arrival: {at: [0]}, instances: 2, cpu: 2, memoryMb: 1024,
     maxUnavailableInstances: 1, preemptible: false}
  - {name: blk, respool: /p, arrival: {at: [1]}, instances: 1, durationSec: 20, cpu: 2, memoryMb: 1024}
events:
  - {atSec: 50, drain: {hosts: [h-0, h-1]}}
settings:
  rpcLatencyMs: 0
  taskStartupSec: 0
  sampleIntervalSec: 10
`;

Deno.test("hosts DOWN for maintenance leave the capacity utilization is over, as failed hosts do", async () => {
  const scenario = inlineScenario(DRAINED);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  const s = r.series;
  const at = (t: number) => s.t.indexOf(t);
  // Both drained hosts are DOWN from about 50.1 s: one host of 2 cores is up, the other two in maintenance.
  assert.deepEqual([s.hostsUp[at(40)], s.hostsUp[at(60)], s.hostsUp.at(-1)], [3, 1, 1]);
  assert.deepEqual([s.hostsInMaintenance[at(40)], s.hostsInMaintenance[at(60)]], [0, 2]);
  // By hand: 6 cores up until about 50.1 s and 2 after (800.4 core-seconds), about 739.4 held.
  assert.ok(Math.abs(r.utilization.cpu! - 739.4 / 800.4) < 0.001, `utilization ${r.utilization.cpu}`);
  // From 60 s on, the one host up is full: each interval is 1, not a third.
  assert.equal(s.cpuUtil[at(100)], 1);
  // And it agrees with what the pool held over the average cpu up.
  const upCores = (6 * 50.1 + 2 * (300 - 50.1)) / 300;
  const held = r.pools["/p"].avgHeldCpu!;
  assert.ok(
    Math.abs(r.utilization.cpu! - held / upCores) < 0.001,
    `${r.utilization.cpu} vs ${held / upCores}`,
  );
});

Deno.test("an interval with no host up has no utilization (a gap), and a cluster without GPUs no GPU one", async () => {
  // The one host fails at 30 s and comes back at 60 s: nothing is up from 30 to 60 s.
  const scenario = inlineScenario(`
name: gap
durationSec: 100
hostClasses:
  - {name: h, count: 1, cpu: 4, memoryMb: 8192, diskMb: 1000}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 4, limit: 4}
      - {kind: memory, reservation: 8192, limit: 8192}
      - {kind: disk, reservation: 1000, limit: 1000}
workloads:
  - {name: long, respool: /a, arrival: {at: [0]}, instances: 2, durationSec: 5000, cpu: 1, memoryMb: 512}
events:
  - {atSec: 30, failHosts: {hosts: [h-0]}, recoverAfterSec: 30}
settings:
  sampleIntervalSec: 10
  taskStartupSec: 0
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  const s = r.series;
  const at = (t: number) => s.t.indexOf(t);
  assert.deepEqual([s.cpuUtil[at(50)], s.memUtil[at(50)], s.diskUtil[at(50)]], [null, null, null]);
  assert.equal(s.cpuUtil[at(20)], 0.5, "two of four cores held while the host was up");
  assert.ok(s.gpuUtil.every((v) => v === null), "no GPU in the cluster");
  assert.equal(r.utilization.gpu, null);
  assert.ok(r.utilization.cpu! > 0 && r.utilization.cpu! <= 0.5, `${r.utilization.cpu}`);
});
