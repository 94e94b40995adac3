/** Shipped scenarios answer the question their opening comment asks: the report shows what it tells readers to read. */
import assert from "node:assert/strict";
import { buildReport, type Report } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { loadScenario, ROOT } from "./testing.ts";

async function report(name: string, checkInvariants = false): Promise<Report> {
  const { scenario, templates } = await loadScenario(`${ROOT}/scenarios/${name}`);
  const sim = await runScenario(scenario, { seed: 1, templates, checkInvariants });
  return buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
}

/** The largest value of a series over samples in [fromSec, toSec) (a null, no value, left out). */
function maxBetween(r: Report, series: (number | null)[], fromSec: number, toSec: number): number {
  let max = -Infinity;
  r.series.t.forEach((t, i) => {
    const v = series[i];
    if (t >= fromSec && t < toSec && v !== null) max = Math.max(max, v);
  });
  return max;
}

Deno.test("add-capacity: doubled Spark load queues work on 400 hosts, and 400 more hosts clear it", async () => {
  const r = await report("add-capacity.yaml");
  const s = r.series;
  assert.ok(maxBetween(r, s.queueDelayP99, 0, 1200) < 5, "one team's load fits");
  assert.ok(maxBetween(r, s.cpuUtil, 1500, 2400) > 0.95, "the doubled load fills the cluster");
  assert.ok(maxBetween(r, s.queueDelayP99, 1500, 2400) > 60, "and work queues for minutes");
  assert.equal(maxBetween(r, s.hostsUp, 2500, 3600), 800);
  assert.ok(maxBetween(r, s.queueDelayP99, 2600, 3600) < 5, "the added hosts clear the backlog");
  // The pending-queue chart shows the backlog: most of it admitted and waiting for a host.
  const waiting = s.t.map((_, i) => s.queuedTasks[i] + s.placingTasks[i]);
  assert.ok(maxBetween(r, s.placingTasks, 2200, 2400) > 1000, "admitted work waits for hosts");
  assert.ok(maxBetween(r, waiting, 2200, 2400) > 1500);
  assert.equal(maxBetween(r, waiting, 2420, 2600), 0, "and none once the hosts are added");
  // The scenario's comment: a small part of the p99 queue delay is waiting for admission (for the entitlement
  // a full cluster caps: /spark's stays far below its limit).
  const q = r.queueDelaySeconds.p99!, a = r.admissionDelaySeconds.p99!;
  assert.ok(q > 250 && q < 350 && a > 10 && a < 30, `admission p99 ${a} s of a queue delay p99 of ${q} s`);
  const spark = r.poolSeries["/spark"];
  assert.ok(maxBetween(r, spark.entitlementCpu, 1700, 2400) <= 12_800, "within the cluster's 12,800 cores");
  assert.ok(maxBetween(r, spark.allocationCpu, 1700, 2400) < 60_000 / 4, "far below /spark's limit");
});

Deno.test("rack-maintenance: how long an SLA-aware drain takes, how many tasks move, how long they wait", async () => {
  // With invariant checks: no service ever had more instances down for the drain than its SLA allows.
  const r = await report("rack-maintenance.yaml", true);
  // Each rack's drain time, in the order the scenario lists its drains.
  const drains = r.events.filter((e) => e.kind === "drain");
  assert.deepEqual(drains.map((e) => [e.detail, e.hosts]), [
    ["maintenance (rack std-rack-3)", 40],
    ["maintenance (rack std-rack-4)", 40],
  ]);
  const seconds = drains.map((e) => e.drainSeconds);
  assert.ok(seconds.every((s) => typeof s === "number"), `both racks drained: ${seconds}`);
  // One instance per service at a time, each back running elsewhere before the next goes: tens of seconds
  // (rather than the fraction of a second the kills take), well within the 15-minute window.
  const longest = Math.max(...(seconds as number[]));
  assert.ok(longest > 10 && longest < 900, `the two racks drained in ${longest} s`);
  const { afterKill, afterLoss } = r.rescheduleDelaySeconds;
  assert.ok(r.preemptions.maintenance > 0 && r.tasks.lost > 0);
  assert.equal(afterKill.count, r.preemptions.maintenance, "every drained task ran again");
  assert.equal(afterLoss.count, r.tasks.lost, "every lost task ran again");
  assert.deepEqual([afterKill.waiting, afterLoss.waiting], [0, 0], "none still waiting at the end");
  assert.ok(afterKill.p99! < afterLoss.p99!, "a drain moves work faster than a loss without warning");
  assert.equal(maxBetween(r, r.series.hostsInMaintenance, 610, 1500), 80, "two racks in maintenance");
  assert.equal(maxBetween(r, r.series.hostsInMaintenance, 1510, 3000), 0);
});

Deno.test("gpu-training: the CPU-only preprocessing stays off the GPU hosts, and the GPU work on them", async () => {
  const r = await report("gpu-training.yaml");
  const { training, inference, preprocess } = r.launchesByHostClass;
  assert.ok(
    preprocess.cpu > 0 && training.gpu > 0 && inference.gpu > 0,
    JSON.stringify(r.launchesByHostClass),
  );
  assert.equal(preprocess.gpu, 0, "GPU hosts are kept for GPU work");
  assert.deepEqual([training.cpu, inference.cpu], [0, 0], "GPU work runs where the GPUs are");
  const launched = Object.values(r.launchesByHostClass).flatMap((c) => Object.values(c));
  assert.equal(launched.reduce((a, b) => a + b, 0), r.tasks.launched, "every launch is on some class");
});
