import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { createSimulation, runScenario } from "./runner.ts";
import type { ApiReply } from "../core/messages.ts";
import { headline } from "./stats.ts";
import { inlineScenario, PLAN_SCENARIO } from "./testing.ts";

const TREE = `
name: tree
durationSec: 120
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 32768, diskMb: 10000}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
      - name: b
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
workloads:
  - {name: wa, respool: /org/a, arrival: {at: [0]}, instances: 10, durationSec: 600, cpu: 1, memoryMb: 1024}
  - {name: wb, respool: /org/b, arrival: {at: [30]}, instances: 40, durationSec: 600, cpu: 1, memoryMb: 1024}
`;

Deno.test("pool series: parents first, aligned with time, a parent's allocation and demand sum its leaves", async () => {
  const scenario = inlineScenario(TREE);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(Object.keys(report.poolSeries), ["/org", "/org/a", "/org/b"]);
  const [org, a, b] = ["/org", "/org/a", "/org/b"].map((p) => report.poolSeries[p]);
  const n = report.series.t.length;
  for (const s of [org, a, b]) assert.equal(s.allocationCpu.length, n);
  for (let i = 0; i < n; i++) {
    assert.equal(org.allocationCpu[i], a.allocationCpu[i] + b.allocationCpu[i]);
    assert.equal(org.demandMemMb[i], a.demandMemMb[i] + b.demandMemMb[i]);
  }
  const end = n - 1;
  assert.deepEqual([a.allocationCpu[end], b.allocationCpu[end], b.demandCpu[end]], [10, 22, 18]);
  assert.equal(report.pools["/org"].allocationCpu, 32);
  assert.deepEqual(report.preemptions, { total: 0, running: 0, waiting: 0, slack: 0, maintenance: 0 });
});

const MACHINE = { wallSeconds: 0, peakRssBytes: 0 };

Deno.test("queue delay counts instances still waiting at the end with their wait so far", async () => {
  // 40 one-core tasks at t=0 on two 4-core hosts: 8 run at once, 32 wait the whole 120 s.
  const scenario = inlineScenario(PLAN_SCENARIO);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.unplaced, 32);
  assert.equal(r.queueDelaySeconds.waiting, 32);
  // Submitted a few milliseconds in (the API call's modelled latency), waiting until the end at 120 s.
  assert.ok(
    r.queueDelaySeconds.p50 > 119.9 && r.queueDelaySeconds.p50 <= 120,
    `p50 ${r.queueDelaySeconds.p50}`,
  );
  assert.equal(r.queueDelaySeconds.max, r.queueDelaySeconds.p50);
  assert.deepEqual(r.workloads.w.queueDelaySeconds, r.queueDelaySeconds);
  assert.deepEqual(r.pools["/p"].queueDelaySeconds, r.queueDelaySeconds);
  assert.equal(r.jobs.unanswered, 0);
});

Deno.test("an elastic job's added instances wait from when they were asked for, not from the job's submission", async () => {
  const scenario = inlineScenario(`
name: elastic-idle
durationSec: 120
hostClasses:
  - {name: std, count: 20, cpu: 32, memoryMb: 131072, diskMb: 100000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 640, limit: 640}
      - {kind: memory, reservation: 2621440, limit: 2621440}
workloads:
  - name: spark
    respool: /p
    arrival: {at: [0]}
    instances: 10
    durationSec: 600
    cpu: 1
    memoryMb: 1024
    elastic: {maxInstances: 60, growBy: 10, everySec: 10}
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.submitted, 60, "every growth step counts its instances once");
  assert.equal(r.tasks.launched, 60);
  assert.equal(r.queueDelaySeconds.waiting, 0);
  // On an idle cluster every executor starts within a couple of seconds of being asked for; measured from
  // the job's submission, the last step's would have waited 50 s.
  assert.ok(r.queueDelaySeconds.max < 5, `max queue delay ${r.queueDelaySeconds.max} s`);
});

Deno.test("a gang's failure headline keeps why its tasks could not be placed", () => {
  assert.equal(
    headline("gang of 16 could not be placed whole: no host with 8 free GPUs: insufficient gpu on 12 hosts"),
    "gang not placed whole: no host with 8 free GPUs",
  );
  assert.equal(headline("no host with 4 free cpus: insufficient cpu on 3 hosts"), "no host with 4 free cpus");
  assert.equal(headline("required host h1 is down"), "required host unavailable");
});

Deno.test("a failure headline leaves out the host a reason names, so each host is not a reason of its own", () => {
  const reserved = (host: string) =>
    headline(
      `host ${host} was reserved for the task but did not free up in time; ` +
        "no host with 16 free cpus: insufficient cpu on 40 hosts",
    );
  assert.equal(
    reserved("std-17"),
    "host <host> was reserved for the task but did not free up in time; no host with 16 free cpus",
  );
  assert.equal(reserved("gpu-3"), reserved("std-17"));
  assert.equal(
    headline("host std-1 was reserved for the task but did not free up in time; host std-9 lost: agent gone"),
    "host <host> was reserved for the task but did not free up in time; host <host> lost",
  );
  assert.equal(
    headline("gang of 4 could not be placed whole: host h-2 no longer fits the task"),
    "gang not placed whole: host <host> no longer fits the task",
  );
  assert.equal(
    headline("no host with 4 free cpus; 3 hosts draining"),
    "no host with 4 free cpus; 3 hosts draining",
  );
});

Deno.test("reschedule delays: moved work is timed from its run's end to its next run, by how the run ended", async () => {
  const scenario = inlineScenario(`
name: moves
durationSec: 400
hostClasses:
  - {name: std, count: 40, cpu: 8, memoryMb: 32768, diskMb: 100000, racks: 4}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 320, limit: 320}
      - {kind: memory, reservation: 1310720, limit: 1310720}
workloads:
  - {name: svc, respool: /p, type: stateless, arrival: {at: [0]}, instances: 80, cpu: 1, memoryMb: 1024}
events:
  - {atSec: 60, drain: {rack: std-rack-1}, durationSec: 60}
  - {atSec: 200, loseRack: std-rack-2, recoverAfterSec: 100}
settings:
  sampleIntervalSec: 10
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const { afterKill, afterLoss } = r.rescheduleDelaySeconds;
  assert.equal(afterKill.count, r.preemptions.maintenance, "every drained task ran again");
  assert.equal(afterLoss.count, r.tasks.lost, "every lost task ran again");
  assert.ok(afterKill.count > 0 && afterLoss.count > 0, JSON.stringify(r.rescheduleDelaySeconds));
  assert.equal(r.rescheduleDelaySeconds.count, afterKill.count + afterLoss.count);
  assert.deepEqual(r.workloads.svc.rescheduleDelaySeconds.count, r.rescheduleDelaySeconds.count);
  assert.ok(afterKill.max > 0 && afterKill.p50 <= afterKill.max);
  // The drained rack's ten hosts are in maintenance from 60 s to 120 s, and up all along.
  const s = r.series;
  const at = (t: number) => s.t.findIndex((x) => x >= t);
  assert.equal(s.hostsInMaintenance[at(90)], 10);
  assert.equal(s.hostsUp[at(90)], 40);
  assert.equal(s.hostsInMaintenance[at(150)], 0);
  assert.equal(s.hostsUp[at(250)], 30, "the lost rack is down");
});

/**
 * 4 hosts of 4 cores full with 16 long one-core tasks; h-0 and h-1 fail at 100 s, h-0 is back (empty) at
 * 200 s: 4 of the 8 lost tasks run again there, 4 wait to the end at 400 s.
 */
const LOSS = `
name: loss
durationSec: 400
hostClasses:
  - {name: h, count: 4, cpu: 4, memoryMb: 8192, diskMb: 1000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 16, limit: 16}
      - {kind: memory, reservation: 32768, limit: 32768}
      - {kind: disk, reservation: 4000, limit: 4000}
workloads:
  - {name: long, respool: /p, arrival: {at: [0]}, instances: 16, durationSec: 5000, cpu: 1, memoryMb: 512}
events:
  - {atSec: 100, failHosts: {hosts: [h-0]}, recoverAfterSec: 100}
  - {atSec: 100, failHosts: {hosts: [h-1]}}
settings:
  sampleIntervalSec: 10
`;

Deno.test("reschedule delays count lost work still waiting to run again at the end, with its wait so far", async () => {
  const scenario = inlineScenario(LOSS);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const { afterKill, afterLoss } = r.rescheduleDelaySeconds;
  assert.equal(r.tasks.lost, 8);
  assert.equal(afterLoss.count, 8, "every lost run counts, run again or not");
  assert.equal(afterLoss.waiting, 4, "the 4 that found no room");
  // Lost at 100 s, still waiting at the end at 400 s.
  assert.ok(afterLoss.max > 299 && afterLoss.max <= 300, `max ${afterLoss.max}`);
  assert.ok(afterLoss.p50 < 299, `p50 ${afterLoss.p50}: the 4 that ran again did so before the end`);
  assert.deepEqual([afterKill.count, afterKill.waiting], [0, 0]);
  const { afterKill: _k, afterLoss: _l, ...overall } = r.rescheduleDelaySeconds;
  assert.deepEqual(overall, afterLoss);
  assert.deepEqual(r.workloads.long.rescheduleDelaySeconds, afterLoss);
});

Deno.test("reschedule delays leave out killed or lost work the user stopped: it is not to run again", async () => {
  const scenario = inlineScenario(LOSS.replace(", recoverAfterSec: 100", ""));
  const sim = createSimulation(scenario, { seed: 1, checkInvariants: true });
  await sim.advanceTo(150_000);
  const [jobId] = sim.jobmgr.jobs.keys();
  const lost = [...sim.jobmgr.jobs.get(jobId)!.tasks.values()].filter((t) => t.state !== "RUNNING");
  assert.equal(lost.length, 8);
  const ranges = lost.map((t) => ({ from: t.instanceId, to: t.instanceId + 1 }));
  let stopped: ApiReply | undefined;
  sim.api("peloton.api.task.TaskManager::Stop", { jobId: { value: jobId }, ranges }).then((x) => stopped = x);
  await sim.advanceTo(400_000);
  assert.ok(stopped && !stopped.error, JSON.stringify(stopped));
  await sim.close();
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.lost, 8);
  assert.deepEqual(r.rescheduleDelaySeconds.afterLoss, {
    p50: 0,
    p90: 0,
    p99: 0,
    max: 0,
    count: 0,
    waiting: 0,
  });
});

Deno.test("reschedule delays count preempted work still waiting to run again at the end", async () => {
  // Pool a borrows the whole 8-core host; b's demand at 100 s takes back its 4 cores for good.
  const scenario = inlineScenario(`
name: preempt
durationSec: 600
hostClasses:
  - {name: h, count: 1, cpu: 8, memoryMb: 65536, diskMb: 1000}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 4, limit: 8}
      - {kind: memory, reservation: 32768, limit: 65536}
  - name: b
    resources:
      - {kind: cpu, reservation: 4, limit: 8}
      - {kind: memory, reservation: 32768, limit: 65536}
workloads:
  - {name: wa, respool: /a, arrival: {at: [0]}, instances: 8, durationSec: 5000, cpu: 1, memoryMb: 1024}
  - {name: wb, respool: /b, arrival: {at: [100]}, instances: 4, durationSec: 5000, cpu: 1, memoryMb: 1024}
settings:
  sampleIntervalSec: 10
  entitlementPeriodSec: 10
  preemption: {periodSec: 10, sustainedOverAllocationCount: 2}
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const { afterKill } = r.rescheduleDelaySeconds;
  assert.equal(r.preemptions.running, 4);
  assert.deepEqual([afterKill.count, afterKill.waiting], [4, 4], JSON.stringify(afterKill));
  assert.ok(afterKill.p50 > 300 && afterKill.max < 500, JSON.stringify(afterKill));
  assert.deepEqual(r.workloads.wa.rescheduleDelaySeconds, { ...afterKill });
  assert.equal(r.workloads.wb.rescheduleDelaySeconds.count, 0);
});
