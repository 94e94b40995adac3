/** Shipped scenarios answer the question their opening comment asks: the report shows what it tells readers to read. */
import assert from "node:assert/strict";
import { maxBetween, scenarioReport as report } from "./testing.ts";

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
