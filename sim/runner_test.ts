import assert from "node:assert/strict";
import { renderHtml } from "../reports/html.ts";
import { buildReport, withoutMachineFields } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario, loadScenario, openEndedScenario, ROOT, simulate } from "./testing.ts";
import { parseTaskEvents } from "./trace.ts";

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
    rejected: 0,
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

/**
 * Two hosts of 4 cores: one job runs and ends; one asks for more cpu than any host has, one for an attribute
 * no host carries, and a gang more cpu than the whole cluster (its pool can never admit it).
 */
const NEVER_PLACED = `
name: never-placed
hostClasses:
  - { name: std, count: 2, cpu: 4, memoryMb: 8192, diskMb: 10000 }
respools:
  - name: p
    resources:
      - { kind: cpu, reservation: 8, limit: 8 }
      - { kind: memory, reservation: 16384, limit: 16384 }
      - { kind: disk, reservation: 0, limit: 20000 }
      - { kind: gpu, reservation: 0, limit: 0 }
workloads:
  - { name: ok, respool: /p, arrival: { at: [0] }, instances: 2, durationSec: 5, cpu: 1 }
  - { name: huge, respool: /p, arrival: { at: [1] }, instances: 1, durationSec: 5, cpu: 6 }
  - { name: gpu-only, respool: /p, arrival: { at: [2] }, instances: 1, durationSec: 5, cpu: 1,
      hostAttributes: { host_pool: gpu } }
  - { name: wide-gang, respool: /p, arrival: { at: [3] }, instances: 3, durationSec: 5, cpu: 3, gang: true }
`;

Deno.test("an open-ended run whose jobs can never be placed stops, naming each job and why", async () => {
  const scenario = inlineScenario(NEVER_PLACED);
  // Two simulated hours is far past the point where nothing can change; the old runner never stopped.
  const sim = await runScenario(scenario, {
    seed: 1,
    checkInvariants: true,
    onSample: (ms) => ms > 7_200_000,
  });
  assert.equal(sim.endedEarly, false, "the run stopped on its own, it was not cut off");
  const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.ok(r.simulatedSeconds < 1200, `stopped at ${r.simulatedSeconds}s`);
  assert.equal(r.endedEarly, false);
  assert.equal(r.jobs.stuck, 3);
  assert.equal(r.jobs.byState.SUCCEEDED, 1);
  assert.equal(r.tasks.succeeded, 2);
  assert.equal(r.tasks.unplaced, 5);
  const why = Object.fromEntries(r.stuckJobs.map((j) => [j.workload, j]));
  assert.deepEqual(Object.keys(why).sort(), ["gpu-only", "huge", "wide-gang"]);
  assert.equal(why["wide-gang"].waitingTasks, 3);
  // The gang needs 9 cores and the cluster has 8: its pool's entitlement never reaches that.
  assert.match(why.huge.reason, /^placement: no host with 6 free cpus/);
  assert.match(why["gpu-only"].reason, /^placement: .*constraint host_pool=gpu failed on 2 hosts/);
  assert.match(
    why["wide-gang"].reason,
    /^pool \/p cannot admit its gang of 3 tasks: needs cpu 9, entitled to 8/,
  );
});

Deno.test("a run with a durationSec runs to it and lists the jobs no pool could ever admit; an interrupted one none", async () => {
  const timed = inlineScenario(`durationSec: 1500\n${NEVER_PLACED}`);
  const full = await runScenario(timed, { seed: 1, checkInvariants: true });
  assert.equal(full.queue.now, 1_500_000, "a run with a durationSec runs to it");
  // The gang its pool could never admit, as the open-ended run finds it, and the tasks no host of the
  // cluster at the end could ever take.
  assert.deepEqual(full.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    ["huge", 1, "admitted, but no placement can take it: needs cpu 6, no host has more than 4"],
    ["gpu-only", 1, "admitted, but no placement can take it: no host meets its constraint host_pool=gpu"],
    ["wide-gang", 3, "pool /p can never admit its gang of 3 tasks: needs cpu 9, its limit is 8"],
  ]);
  const timedReport = buildReport(timed, full, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.equal(timedReport.jobs.stuck, 3);
  assert.deepEqual(timedReport.stuckJobs, full.stuck);
  const open = inlineScenario(NEVER_PLACED);
  const cut = await runScenario(open, { seed: 1, onSample: (ms) => ms >= 100_000 });
  assert.equal(cut.endedEarly, true);
  assert.equal(cut.queue.now, 100_000);
  assert.deepEqual(cut.stuck, [], "an interrupted run is partial, not stuck");
  const r = buildReport(open, cut, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.equal(r.jobs.stuck, 0);
  assert.deepEqual(r.stuckJobs, []);
});

Deno.test("an open-ended run with nothing to submit ends instead of running forever", async () => {
  // The trace's one job comes at 5 s, before the replayed window starts at 1000 s: nothing is submitted.
  const scenario = inlineScenario(`
name: empty-window
hostClasses:
  - { name: std, count: 1, cpu: 4, memoryMb: 8192, diskMb: 10000 }
respools:
  - { name: p, resources: [{ kind: cpu, reservation: 4, limit: 4 }] }
workloads:
  - { name: g, respool: /p, trace: { file: t.csv, hostClass: std, startSec: 1000 } }
`);
  const traces = { g: parseTaskEvents("5000000,,1,0,,0,u,1,2,0.1,0.1,0,0", "t.csv") };
  const sim = await runScenario(scenario, { seed: 1, traces, onSample: (ms) => ms > 3_600_000 });
  assert.equal(sim.endedEarly, false);
  assert.ok(sim.queue.now <= 60_000, `stopped at ${sim.queue.now} ms`);
  assert.deepEqual([sim.submissions.length, sim.stuck.length], [0, 0]);
});

Deno.test("a run ending between sample times samples its last, shorter interval, and averages weigh it by length", async () => {
  // 8 one-core tasks fill both 4-core hosts from 61 s to the end at 100 s; samples every 60 s.
  const scenario = inlineScenario(`
name: tail
durationSec: 100
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192}
respools:
  - name: A
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
      - {kind: memory, reservation: 16384, limit: 16384}
workloads:
  - {name: late, respool: /A, arrival: {at: [61]}, instances: 8, cpu: 1, durationSec: 1000}
settings:
  sampleIntervalSec: 60
  taskStartupSec: 0
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(r.series.t, [60, 100]);
  // The tasks launch at 61 s and a few milliseconds (the messages' modelled latency): the second interval
  // is full for all but those 39 s and a bit of its 40.
  const [first, last] = r.series.cpuUtil as number[];
  assert.equal(first, 0);
  assert.ok(last > 0.97 && last < 0.975, `last interval ${last}`);
  assert.deepEqual(r.series.runningTasks, [0, 8]);
  // 0 for the first 60 s, the same for the last 40 s: weighed by time, not the plain mean of the two.
  assert.ok(Math.abs(r.utilization.cpu! - (last * 40) / 100) < 0.0001, `${r.utilization.cpu}`);
  assert.equal(r.pools["/A"].avgAllocationCpu, 3.2);
  assert.equal(r.series.launchesPerSec[1], 8 / 40, "launches over the 40 s the interval lasted");
});

Deno.test("a run with a durationSec reports a gang its pool can never admit, and the work queued behind it", async () => {
  // 6 eight-GPU tasks in one gang: 48 GPUs, on a cluster of 32. Gangs of 2 follow, which would fit.
  const scenario = (gpuLimit: number) =>
    inlineScenario(`
name: big-gang
durationSec: 900
hostClasses:
  - {name: gpu, count: 4, cpu: 64, memoryMb: 524288, diskMb: 100000, gpu: 8}
respools:
  - name: ml
    resources:
      - {kind: cpu, reservation: 256, limit: 256}
      - {kind: memory, reservation: 2097152, limit: 2097152}
      - {kind: gpu, reservation: 32, limit: ${gpuLimit}}
workloads:
  - {name: big, respool: /ml, arrival: {at: [0]}, instances: 6, gang: true, durationSec: 300, cpu: 8,
     memoryMb: 8192, gpu: 8}
  - {name: small, respool: /ml, arrival: {at: [10, 20]}, instances: 2, gang: true, durationSec: 300, cpu: 8,
     memoryMb: 8192, gpu: 8}
settings: {sampleIntervalSec: 10}
`);
  const run = async (gpuLimit: number) => {
    const s = scenario(gpuLimit);
    const sim = await runScenario(s, { seed: 1, checkInvariants: true });
    return buildReport(s, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  };
  // Over the pool's limit (32): passed over at admission, so the small gangs behind it run.
  const overLimit = await run(32);
  assert.equal(overLimit.simulatedSeconds, 900);
  assert.equal(overLimit.placementFailures.total, 0, "never admitted, so never tried");
  assert.deepEqual(overLimit.stuckJobs.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    ["big", 6, "pool /ml can never admit its gang of 6 tasks: needs gpu 48, its limit is 32"],
  ]);
  assert.equal(overLimit.tasks.succeeded, 4, "both small gangs ran");
  // Within a limit of 64 but more than the cluster has: it holds the pool's queue (more hosts would let
  // it in), and the pending queue admits in order.
  const overCluster = await run(64);
  assert.equal(overCluster.jobs.stuck, 3);
  assert.deepEqual(overCluster.stuckJobs.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    ["big", 6, "pool /ml can never admit its gang of 6 tasks: needs gpu 48, the cluster has 32"],
    ["small", 2, "waits in pool /ml's queue behind work the pool can never admit"],
    ["small", 2, "waits in pool /ml's queue behind work the pool can never admit"],
  ]);
  const html = renderHtml(overCluster, { js: "", css: "" }, { durationSeconds: 900 });
  assert.match(html, /Work that could never start:<\/b> the run ended at 900 simulated seconds with 3 jobs/);
});

Deno.test("an open-ended run ends when its last job ends, whatever the sample interval", async () => {
  const { scenario, templates } = await loadScenario(`${ROOT}/scenarios/testjob.yaml`);
  const run = async (sampleIntervalSec: number) => {
    const s = { ...scenario, settings: { ...scenario.settings, sampleIntervalSec } };
    const sim = await runScenario(s, { seed: 1, templates, checkInvariants: true });
    const jobs = [...sim.jobmgr.jobs.values()];
    const lastEndMs = Math.max(...jobs.map((j) => j.runtime.completionTimeMs ?? Infinity));
    return { r: buildReport(s, sim, 1, { wallSeconds: 0, peakRssBytes: 0 }), lastEndMs };
  };
  const [one, ten] = [await run(1), await run(10)];
  // The work takes about 3 s: the run stops at the last job's end, not at the next sample time (4 s, 10 s).
  assert.ok(one.lastEndMs > 2000 && one.lastEndMs < 4000, `the last job ended at ${one.lastEndMs} ms`);
  assert.equal(one.r.simulatedSeconds * 1000, one.lastEndMs);
  assert.equal(ten.r.simulatedSeconds, one.r.simulatedSeconds);
  // The figures are the work's: the same with samples every second or every ten.
  assert.deepEqual(
    [ten.r.utilization, ten.r.launchesPerSec, ten.r.tasks],
    [one.r.utilization, one.r.launchesPerSec, one.r.tasks],
  );
  // A last sample is taken at the end, between sample times.
  assert.deepEqual(ten.r.series.t, [one.r.simulatedSeconds]);
  assert.equal(one.r.series.t.at(-1), one.r.simulatedSeconds);
});

Deno.test("an open-ended run ends once the daemons have the last statuses: nothing is allocated or held at the end", async () => {
  for (const latency of ["rpcLatencyMs: 0", "rpcLatencyMs: 1", "rpcLatencyMs: 50"]) {
    const scenario = openEndedScenario(latency);
    const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
    const r = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
    assert.ok(r.simulatedSeconds > 130 && r.simulatedSeconds < 132, `${latency}: ${r.simulatedSeconds}`);
    const p = r.pools["/p"];
    assert.deepEqual(
      [p.allocationCpu, p.heldCpu, p.allocationMemMb, p.demandCpu],
      [0, 0, 0, 0],
      `${latency}: the pool at the end`,
    );
    const s = r.poolSeries["/p"];
    assert.deepEqual([s.allocationCpu.at(-1), r.series.runningTasks.at(-1)], [0, 0], latency);
    assert.equal(r.series.t.at(-1), r.simulatedSeconds, "the last sample is at the end");
    // What was measured is the work's: b held the host's 4 cores for its 30 s.
    assert.equal(r.tasks.succeeded, 3);
  }
});
