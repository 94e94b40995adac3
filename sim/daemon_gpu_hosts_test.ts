/** A daemon covers every UP host, GPU hosts kept for GPU work included. */
import assert from "node:assert/strict";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

const SCENARIO = `
name: daemon-gpu
durationSec: 120
hostClasses:
  - { name: std, count: 4, cpu: 4, memoryMb: 16384, diskMb: 100000, racks: 1 }
  - { name: gpu, count: 2, cpu: 8, memoryMb: 32768, diskMb: 100000, gpu: 2, racks: 1 }
respools:
  - name: sys
    resources:
      - { kind: cpu, reservation: 32, limit: 32 }
      - { kind: memory, reservation: 131072, limit: 131072 }
      - { kind: disk, reservation: 0, limit: 1000000 }
      - { kind: gpu, reservation: 0, limit: 4 }
workloads:
  - name: logs
    respool: /sys
    type: daemon
    arrival: { at: [0] }
    cpu: 1
    memoryMb: 1024
settings:
  sampleIntervalSec: 10
  warmupSec: 0
`;

Deno.test("a daemon without GPUs runs on the GPU hosts too: one instance on each of the 6 hosts", async () => {
  const sim = await runScenario(inlineScenario(SCENARIO), { seed: 1, checkInvariants: true });
  const byClass = Object.fromEntries(sim.stats.launchesByHostClass().get("logs") ?? []);
  assert.deepEqual(byClass, { std: 4, gpu: 2 });
  assert.equal(sim.stats.unplaced(() => true), 0);
  await sim.close();
});
