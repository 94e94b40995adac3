import assert from "node:assert/strict";
import { buildReport, withoutMachineFields } from "../reports/report.ts";
import { DEFAULT_RESERVATION, PELOTON_POLICIES } from "../core/placement/policy.ts";
import { runScenario, type Simulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

/** Twenty 32-core hosts kept busy by a stream of 1-core batch tasks; one 32-core task arrives at 30 s. */
const BUSY = `
name: busy
durationSec: 420
settings: {recordTaskEvents: true}
hostClasses:
  - {name: std, count: 20, cpu: 32, memoryMb: 131072, diskMb: 100000, racks: 4}
respools:
  - name: batch
    resources:
      - {kind: cpu, reservation: 100000, limit: 100000}
      - {kind: memory, reservation: 100000000, limit: 100000000}
      - {kind: disk, reservation: 100000000, limit: 100000000}
workloads:
  - {name: small, respool: /batch, arrival: {ratePerSec: 1}, instances: 32, durationSec: {uniform: [20, 60]}, cpu: 1, memoryMb: 1024}
  - {name: large, respool: /batch, arrival: {at: [30]}, instances: 1, durationSec: 60, cpu: 32, memoryMb: 4096}
`;

function largeTask(sim: Simulation) {
  const job = [...sim.jobmgr.jobs.values()].find((j) => j.config.name.startsWith("large"))!;
  return [...job.tasks.values()][0];
}

Deno.test("a 32-core task in a cluster busy with small tasks is placed on a host reserved for it", async () => {
  const sim = await runScenario(inlineScenario(BUSY), { seed: 4, checkInvariants: true });
  const small = sim.stats.tasks.launched;
  assert.ok(small > 3000, `the small tasks kept the cluster busy (${small} launched)`);
  const task = largeTask(sim);
  assert.ok(
    ["RUNNING", "SUCCEEDED"].includes(task.state),
    `the large task is ${task.state}: ${task.message}`,
  );
});

Deno.test("a reservation that times out does not give the task up: it goes on and is placed before its deadline", async () => {
  // 50 s is shorter than a busy host takes to drain (its 1-core tasks run up to 60 s): the first one times out.
  const sim = await runScenario(inlineScenario(BUSY), {
    seed: 4,
    checkInvariants: true,
    placementConfig: { reservation: { ...DEFAULT_RESERVATION, timeoutMs: 50_000 } },
  });
  const task = largeTask(sim);
  assert.ok(
    ["RUNNING", "SUCCEEDED"].includes(task.state),
    `the large task is ${task.state}: ${task.message}`,
  );
  const events = await sim.store.getTaskEvents(task.jobId, task.instanceId);
  const timedOut = events.filter((e) => e.message?.includes("did not free up in time"));
  assert.ok(timedOut.length >= 1, "a reservation timed out");
  assert.ok(timedOut.every((e) => e.state === "PLACING"), "still placing after it, never handed back");
  assert.equal(events.filter((e) => e.state === "READY").length, 1, "dequeued once");
  // Each host is counted under one reason at most: a reason never counts more hosts than the cluster has.
  for (const e of events) {
    const counted = [...(e.message ?? "").matchAll(/ on ([\d,]+) hosts/g)]
      .reduce((n, m) => n + Number(m[1].replaceAll(",", "")), 0);
    assert.ok(counted <= 20, `${counted} hosts counted in a 20-host cluster: ${e.message}`);
  }
});

Deno.test("without host reservation the same 32-core task starves, and says why", async () => {
  const sim = await runScenario(inlineScenario(BUSY), {
    seed: 4,
    checkInvariants: true,
    // A shorter batch deadline hands the task back (with its reason) within the run.
    placementConfig: {
      reservation: null,
      policies: { ...PELOTON_POLICIES, BATCH: { ...PELOTON_POLICIES.BATCH, maxDurationMs: 100_000 } },
    },
  });
  const task = largeTask(sim);
  assert.ok(!["RUNNING", "SUCCEEDED"].includes(task.state), `the large task is ${task.state}`);
  // Handed back at its deadline, it went READY with the reason the job manager shows as its message.
  const events = await sim.store.getTaskEvents(task.jobId, task.instanceId);
  const ready = events.filter((e) => e.state === "READY" && e.message);
  assert.ok(ready.length >= 1, "the reason reached the job manager");
  assert.match(ready[0].message!, /^no host with 32 free cpus: insufficient cpu on 20 hosts$/);
});

const MEDIUM = `
name: medium
durationSec: 240
hostClasses:
  - {name: std, count: 300, cpu: 16, memoryMb: 65536, diskMb: 100000, racks: 20}
  - {name: gpu, count: 12, cpu: 32, memoryMb: 131072, diskMb: 100000, gpu: 4}
respools:
  - name: batch
    resources:
      - {kind: cpu, reservation: 4000, limit: 5184}
      - {kind: memory, reservation: 16000000, limit: 40000000}
      - {kind: disk, reservation: 20000000, limit: 60000000}
      - {kind: gpu, reservation: 48, limit: 48}
workloads:
  - {name: etl, respool: /batch, arrival: {ratePerSec: 1}, instances: {uniform: [5, 60]}, durationSec: {exponential: 60}, cpu: 1, memoryMb: 2048, failureRate: 0.02}
  - {name: train, respool: /batch, arrival: {ratePerSec: 0.05}, instances: 4, durationSec: 120, cpu: 4, memoryMb: 8192, gpu: 2}
`;

Deno.test("placement in Deno workers gives the same run as the same partitions in process", async () => {
  const scenario = inlineScenario(MEDIUM);
  const report = async (workers: boolean) => {
    const sim = await runScenario(scenario, {
      seed: 9,
      checkInvariants: true,
      placementPartitions: 2,
      placementWorkers: workers,
    });
    return JSON.stringify(
      withoutMachineFields(buildReport(scenario, sim, 9, { wallSeconds: 0, peakRssBytes: 0 })),
    );
  };
  const inProcess = await report(false);
  assert.ok(JSON.parse(inProcess).tasks.launched > 500);
  assert.equal(await report(true), inProcess);
  assert.equal(await report(true), inProcess, "and again");
});

/** One batch job of 50 one-core tasks, at most one per host, on 200 idle 32-core hosts. */
const ONE_PER_HOST = `
name: one-per-host
durationSec: 120
hostClasses:
  - {name: std, count: 200, cpu: 32, memoryMb: 131072, diskMb: 100000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 6400, limit: 6400}
      - {kind: memory, reservation: 26214400, limit: 26214400}
      - {kind: disk, reservation: 20000000, limit: 20000000}
workloads:
  - {name: spread, respool: /p, type: batch, arrival: {at: [1]}, instances: 50, durationSec: 100, cpu: 1, memoryMb: 1024, maxPerHost: 1}
`;

Deno.test("a batch job limited to one task per host is placed in one round: hosts are leased for the limit", async () => {
  // The host manager leased hosts by the room their cpu gives (32 tasks each): two hosts for 50 tasks, of
  // which the limit let two run, and the job took a minute and more to place.
  const sim = await runScenario(inlineScenario(ONE_PER_HOST), { seed: 1, checkInvariants: true });
  const r = buildReport(sim.scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.equal(r.tasks.launched, 50);
  assert.ok(r.queueDelaySeconds.p99! < 3, `p99 queue delay ${r.queueDelaySeconds.p99} s`);
  const hosts = new Set(
    [...sim.jobmgr.jobs.values()].flatMap((j) => [...j.tasks.values()].map((t) => t.hostname)),
  );
  assert.equal(hosts.size, 50, "one per host");
});
