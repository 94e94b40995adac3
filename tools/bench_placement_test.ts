import assert from "node:assert/strict";
import { runBench } from "./bench_placement.ts";

const small = {
  hosts: 600,
  tasks: 1500,
  seed: 3,
  round: 400,
  overcommit: 1.25,
  baseline: true,
  inProcess: false,
};

Deno.test("bench-placement: a saturated small cluster, no host over-committed, close to full-scan best fit", async () => {
  // One round in flight: on 600 hosts a 400-task round leases most of the hosts with room, so a round
  // overlapping it finds them held, and nothing retries in the benchmark (the 50,000-host runs overlap).
  const r = await runBench({ ...small, workers: 0, pipeline: 1 });
  assert.equal(r.placed + r.failed, r.tasks);
  assert.ok(r.failed > 0, "the workload saturates the cluster");
  assert.equal(r.overcommittedHosts, 0);
  assert.ok(r.placedBestFit! > 0);
  assert.ok(r.placed >= 0.95 * r.placedBestFit!, `placed ${r.placed} vs best fit ${r.placedBestFit}`);
  for (
    const key of [
      "hosts",
      "tasks",
      "placed",
      "workers",
      "seconds",
      "placementsPerSec",
      "placedBestFit",
      "peakRssBytes",
    ]
  ) {
    assert.ok(key in r, key);
  }
});

Deno.test("bench-placement: the same seed and worker count give the same placements, in workers or not", async () => {
  const a = await runBench({ ...small, workers: 2, baseline: false });
  const b = await runBench({ ...small, workers: 2, baseline: false, inProcess: true });
  assert.deepEqual([a.placed, a.failed, a.rounds], [b.placed, b.failed, b.rounds]);
  assert.deepEqual(a.topFailureReasons, b.topFailureReasons);
});
