/** Revocable tasks on slack: agents report allocated-but-unused cpu, and kill the newest revocable tasks when it shrinks. */
import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { createSimulation, runScenario, type Simulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

/** 4 hosts of 16 cores; services use a quarter of the 8 cores they ask for; a revocable batch job of 20 two-core tasks. */
const SLACK = `name: slack
durationSec: 400
hostClasses:
  - {name: std, count: 4, cpu: 16, memoryMb: 65536, diskMb: 100000}
respools:
  - name: svc
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
      - {kind: disk, reservation: 200000, limit: 200000}
  - name: batch
    slacklimit: {maxpercent: 100}
    resources:
      - {kind: cpu, reservation: 0, limit: 64}
      - {kind: memory, reservation: 131072, limit: 131072}
      - {kind: disk, reservation: 200000, limit: 200000}
workloads:
  - {name: web, respool: /svc, type: stateless, arrival: {at: [0]}, instances: 4, cpu: 8, memoryMb: 4096, maxPerHost: 1, cpuUsage: 0.25}
  - {name: backfill, respool: /batch, arrival: {at: [40]}, instances: 20, cpu: 2, memoryMb: 1024, revocable: true}
events:
  - {atSec: 200, usage: {workload: web, level: 3}}
settings: {sampleIntervalSec: 10, slackIntervalSec: 15}
`;

const tasksOf = (sim: Simulation, workload: string) => {
  const id = sim.submissions.find((s) => s.workload === workload)!.jobId;
  return [...sim.jobmgr.jobs.get(id)!.tasks.values()];
};

Deno.test("agents report the services' unused cpu as slack, and revocable tasks run on it, not on free cpu", async () => {
  const sim = createSimulation(inlineScenario(SLACK), { seed: 1, checkInvariants: true });
  await sim.advanceTo(150_000);
  // Each host: a service of 8 cores using 2 → 6 cores of slack; 3 two-core revocable tasks fit on it.
  for (const h of sim.hostmgr.hosts) {
    assert.equal(h.slack.cpuMilli, 6000, h.info.hostname);
  }
  assert.equal(sim.hostmgr.clusterCapacity().slack.cpuMilli, 24_000);
  const backfill = tasksOf(sim, "backfill");
  assert.equal(backfill.filter((t) => t.state === "RUNNING").length, 12, "3 per host on 6 slack cores");
  assert.ok(
    backfill.every((t) =>
      t.state === "RUNNING" || t.state === "PENDING" || t.state === "READY" || t.state === "PLACING"
    ),
  );
  // Regular free cpu (8 cores a host) is not for revocable work.
  for (const h of sim.hostmgr.hosts) assert.equal(h.free.cpuMilli, 8000);
  await sim.close();
});

Deno.test("when service traffic triples, slack shrinks and the newest revocable tasks are killed first, then run again", async () => {
  const sim = createSimulation(inlineScenario(SLACK), { seed: 1, checkInvariants: true });
  await sim.advanceTo(199_000);
  const before = new Map(
    tasksOf(sim, "backfill").filter((t) => t.state === "RUNNING").map((t) => [t.instanceId, t.startTimeMs!]),
  );
  await sim.advanceTo(260_000);
  // Services now use 6 of 8 cores: 2 cores of slack a host, room for one revocable task.
  for (const h of sim.hostmgr.hosts) assert.equal(h.slack.cpuMilli, 2000);
  assert.equal(sim.cluster.slackKills, 8, "two of three on each host");
  const backfill = tasksOf(sim, "backfill");
  const survivors = backfill.filter((t) => t.state === "RUNNING" && t.runId === 1);
  assert.equal(survivors.length, 4);
  // On every host the one left is the one that started first there.
  for (const t of survivors) {
    const sameHost = backfill.filter((o) => o.hostname === t.hostname && o !== t && before.has(o.instanceId));
    for (const o of sameHost) assert.ok(before.get(t.instanceId)! <= before.get(o.instanceId)!);
  }
  // The killed ones were preempted, not failed: they wait to run again as new runs.
  const killed = backfill.filter((t) => t.runId === 2);
  assert.equal(killed.length, 8);
  assert.ok(killed.every((t) => t.failureCount === 0 && t.goalState === "SUCCEEDED"));
  assert.ok(killed.every((t) => t.history?.[0].reason === "REASON_CONTAINER_PREEMPTED"));
  await sim.close();
});

Deno.test("the report counts slack preemptions and charts slack and revocable cpu", async () => {
  const s = inlineScenario(SLACK);
  const sim = await runScenario(s, { seed: 1, checkInvariants: true });
  const r = buildReport(s, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.equal(r.preemptions.slack, 8);
  assert.equal(r.tasks.preempted, 8);
  const at = (sec: number) => r.series.t.indexOf(sec);
  assert.deepEqual([r.series.slackCpu[at(150)], r.series.revocableCpu[at(150)]], [24, 24]);
  assert.deepEqual([r.series.slackCpu[at(300)], r.series.revocableCpu[at(300)]], [8, 8]);
});
