import assert from "node:assert/strict";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

// Services and batch work competing for the same hosts, with nothing failing: every task the cluster
// reports lost here would be the scheduler's own doing (a launch on a lease that was already used up).
const BUSY = `
name: busy
durationSec: 240
hostClasses:
  - {name: std, count: 60, cpu: 8, memoryMb: 32768, diskMb: 100000, racks: 6}
respools:
  - name: web
    resources:
      - {kind: cpu, reservation: 200, limit: 480}
      - {kind: memory, reservation: 800000, limit: 2000000}
      - {kind: disk, reservation: 3000000, limit: 6000000}
      - {kind: gpu, reservation: 0, limit: 0}
  - name: batch
    resources:
      - {kind: cpu, reservation: 200, limit: 480}
      - {kind: memory, reservation: 800000, limit: 2000000}
      - {kind: disk, reservation: 3000000, limit: 6000000}
      - {kind: gpu, reservation: 0, limit: 0}
workloads:
  - {name: web, respool: /web, type: stateless, arrival: {ratePerSec: 0.2}, instances: {uniform: [2, 12]}, cpu: 1, memoryMb: 1024, diskMb: 512, preemptible: false}
  - {name: etl, respool: /batch, type: batch, arrival: {ratePerSec: 1}, instances: {uniform: [2, 20]}, durationSec: {exponential: 30}, cpu: 0.5, memoryMb: 1024, diskMb: 256}
`;

Deno.test("with nothing failing, no task is lost: services held for a second round never launch on a used lease", async () => {
  for (const seed of [1, 2, 3]) {
    const sim = await runScenario(inlineScenario(BUSY), { seed, checkInvariants: true });
    assert.ok(sim.stats.tasks.launched > 1000, `seed ${seed}: the scenario keeps the hosts busy`);
    assert.equal(sim.stats.tasks.lost, 0, `seed ${seed}: tasks lost (rerun with --seed ${seed})`);
  }
});
