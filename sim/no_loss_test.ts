import assert from "node:assert/strict";
import { createSimulation, runScenario } from "./runner.ts";
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

Deno.test("a placements reply lost on its way to the job manager is handed over again: the job still ends", async () => {
  const scenario = inlineScenario(`
name: lost-reply
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 32768, diskMb: 100000}
respools:
  - name: batch
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
      - {kind: disk, reservation: 400000, limit: 400000}
      - {kind: gpu, reservation: 0, limit: 0}
workloads:
  - {name: etl, respool: /batch, type: batch, arrival: {at: [0]}, instances: 6, durationSec: 20, cpu: 1, memoryMb: 1024, diskMb: 256}
`);
  const sim = createSimulation(scenario, { seed: 1 });
  // The transport loses the first reply that hands placements over, as a network or a crashed proxy might.
  const send = sim.transport.send.bind(sim.transport);
  let lost = 0;
  sim.transport.send = (to, msg) => {
    if (!lost && msg.kind === "placements" && msg.placements.length) {
      lost = msg.placements.reduce((n, p) => n + p.tasks.length, 0);
      return;
    }
    send(to, msg);
  };
  // The lost reply also ended the job manager's poll: it polls again after `placementPollRetryMs` (30 s),
  // and the resource manager hands the placement over again after `launchingTimeoutMs` (60 s).
  await sim.advanceTo(55_000);
  assert.equal(lost, 6, "the reply lost hands over every task of the job");
  const [job] = [...sim.jobmgr.jobs.values()];
  assert.equal(job.runtime.taskStats.SUCCEEDED ?? 0, 0, "the lost tasks have not run yet");
  assert.ok(job.runtime.state !== "SUCCEEDED");
  await sim.advanceTo(300_000);
  assert.equal(job.runtime.state, "SUCCEEDED", JSON.stringify(job.runtime.taskStats));
  assert.equal(job.runtime.taskStats.SUCCEEDED, 6);
  await sim.close();
});
