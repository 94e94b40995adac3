import assert from "node:assert/strict";
import { buildReport, withoutMachineFields } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario, ROOT, simulate } from "./testing.ts";

Deno.test("Peloton's example batch job runs to SUCCEEDED in the simulator; a failing one ends FAILED", async () => {
  const sim = await simulate(`${ROOT}/scenarios/testjob.yaml`, 1);
  const byName = new Map([...sim.jobmgr.jobs.values()].map((j) => [j.config.name.replace(/-\d+$/, ""), j]));
  const ok = byName.get("TestPelotonJob_123")!;
  assert.equal(ok.runtime.state, "SUCCEEDED");
  assert.deepEqual(ok.runtime.taskStats.SUCCEEDED, 10);
  for (const t of ok.tasks.values()) assert.equal(t.state, "SUCCEEDED");
  // The controller (instance 0) sleeps 2 s, the rest 1 s: it finishes last.
  assert.ok(ok.tasks.get(0)!.completionTimeMs! > ok.tasks.get(1)!.completionTimeMs!);
  const bad = byName.get("FailingJob")!;
  assert.equal(bad.runtime.state, "FAILED");
  for (const t of bad.tasks.values()) {
    assert.equal(t.state, "FAILED");
    assert.equal(t.exitCode, 3);
  }
  assert.deepEqual(sim.stats.tasks, {
    submitted: 12,
    launched: 12,
    succeeded: 10,
    failed: 2,
    killed: 0,
    lost: 0,
    preempted: 0,
    unplaced: 0,
  });
});

Deno.test("every task walks INITIALIZED → PENDING → READY → PLACING → PLACED → LAUNCHING → LAUNCHED → RUNNING → SUCCEEDED", async () => {
  const sim = await simulate(`${ROOT}/scenarios/testjob.yaml`, 2);
  const job = [...sim.jobmgr.jobs.values()].find((j) => j.config.name.startsWith("TestPelotonJob"))!;
  for (let i = 0; i < job.config.instanceCount; i++) {
    const events = await sim.store.getTaskEvents(job.jobId, i);
    assert.deepEqual(events.map((e) => e.state), [
      "PENDING",
      "READY",
      "PLACING",
      "PLACED",
      "LAUNCHING",
      "LAUNCHED",
      "RUNNING",
      "SUCCEEDED",
    ]);
  }
});

const MEDIUM = `
name: medium
durationSec: 300
hostClasses:
  - {name: std, count: 500, cpu: 16, memoryMb: 65536, diskMb: 100000, racks: 20}
  - {name: gpu, count: 20, cpu: 32, memoryMb: 131072, diskMb: 100000, gpu: 4}
respools:
  - name: batch
    resources:
      - {kind: cpu, reservation: 4000, limit: 8640}
      - {kind: memory, reservation: 16000000, limit: 40000000}
      - {kind: disk, reservation: 20000000, limit: 60000000}
      - {kind: gpu, reservation: 40, limit: 80}
workloads:
  - {name: etl, respool: /batch, arrival: {ratePerSec: 1}, instances: {uniform: [5, 60]}, durationSec: {exponential: 60}, cpu: 1, memoryMb: 2048, failureRate: 0.02}
  - {name: train, respool: /batch, arrival: {ratePerSec: 0.05}, instances: 4, durationSec: 120, cpu: 4, memoryMb: 8192, gpu: 2}
`;

Deno.test("the same scenario and seed give the same report, apart from what measures the machine", async () => {
  const scenario = inlineScenario(MEDIUM);
  const report = async (seed: number) => {
    const sim = await runScenario(scenario, { seed, checkInvariants: true });
    return buildReport(scenario, sim, seed, { wallSeconds: Math.random(), peakRssBytes: Math.random() });
  };
  const a = await report(7), b = await report(7), c = await report(8);
  assert.ok(a.tasks.launched > 1000, `expected real work, launched ${a.tasks.launched}`);
  assert.ok(a.tasks.failed > 0 && a.tasks.succeeded > 0);
  assert.equal(JSON.stringify(withoutMachineFields(a)), JSON.stringify(withoutMachineFields(b)));
  assert.notEqual(JSON.stringify(withoutMachineFields(a)), JSON.stringify(withoutMachineFields(c)));
});

Deno.test("GPU hosts are kept for GPU work", async () => {
  const sim = await runScenario(inlineScenario(MEDIUM), { seed: 3, checkInvariants: true });
  for (const h of sim.hostmgr.hosts) {
    if (h.info.resources.gpuMilli === 0) continue;
    for (const t of h.tasks.values()) {
      assert.ok(t.resources.gpuMilli > 0, `non-GPU task on GPU host ${h.info.hostname}`);
    }
  }
});
