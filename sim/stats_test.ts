import assert from "node:assert/strict";
import { buildReport, meanFrom } from "../reports/report.ts";
import { createSimulation, runScenario } from "./runner.ts";
import type { ApiReply } from "../core/messages.ts";
import type { MappedTaskStatus } from "../core/messages.ts";
import { mesosTaskId } from "../core/model/records.ts";
import { seededPrng } from "../core/ports/prng.ts";
import { SimCluster, type SimTaskStatus } from "./cluster.ts";
import { EventQueue } from "./event_queue.ts";
import { hostClass, hostsOf } from "./scenario_hosts.ts";
import { headline, jain, SimStats } from "./stats.ts";
import { inlineScenario, loadScenario, PLAN_SCENARIO, ROOT, SLACK_POOLS, slackPools } from "./testing.ts";

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
    // Each a 4-decimal rounding of its own exact average.
    assert.ok(Math.abs(org.heldCpu[i] - (a.heldCpu[i] + b.heldCpu[i])) < 2e-4, `at ${report.series.t[i]} s`);
    assert.equal(org.demandMemMb[i], a.demandMemMb[i] + b.demandMemMb[i]);
  }
  const end = n - 1;
  assert.deepEqual([a.allocationCpu[end], b.allocationCpu[end], b.demandCpu[end]], [10, 22, 18]);
  assert.equal(report.pools["/org"].allocationCpu, 32);
  const { beingKilled, ...preempted } = report.preemptions;
  assert.deepEqual(preempted, { total: 0, running: 0, waiting: 0, slack: 0, maintenance: 0 });
  assert.equal(beingKilled.total, 0, "none being killed at the end");
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
    r.queueDelaySeconds.p50! > 119.9 && r.queueDelaySeconds.p50! <= 120,
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
  assert.ok(r.queueDelaySeconds.max! < 5, `max queue delay ${r.queueDelaySeconds.max} s`);
});

Deno.test("a gang's failure headline keeps why its tasks could not be placed", () => {
  assert.equal(
    headline("gang of 16 could not be placed whole: no host with 8 free GPUs: insufficient gpu on 12 hosts"),
    "gang not placed whole: no host with 8 free GPUs",
  );
  assert.equal(headline("no host with 4 free cpus: insufficient cpu on 3 hosts"), "no host with 4 free cpus");
  // A pinned task's reason keeps why its host would not take it, without the host's name.
  assert.equal(headline("required host h1 is down"), "required host <host> is down");
  assert.equal(
    headline("required host gpu-3: host in maintenance (HOST_STATE_DOWN)"),
    "required host <host>: host in maintenance (HOST_STATE_DOWN)",
  );
  assert.equal(
    headline("required host g1: no host with 4 free cpus: insufficient cpu on 1 hosts"),
    "required host <host>: no host with 4 free cpus",
  );
});

Deno.test("a 'no host fits' headline keeps the stage that rejected the most hosts, without its count", () => {
  assert.equal(
    headline("no host fits: GPU host kept for GPU work on 2 hosts, exclusive host on 1 hosts"),
    "no host fits: GPU host kept for GPU work",
  );
  // The same stage on other counts of hosts is the same headline: the counts group.
  assert.equal(
    headline("no host fits: GPU host kept for GPU work on 48,100 hosts"),
    "no host fits: GPU host kept for GPU work",
  );
  assert.equal(
    headline("no host fits: constraint host_pool=nope failed on 40 hosts"),
    "no host fits: constraint host_pool=nope failed",
  );
  // A constraint's own text may hold the separators; only the count is cut.
  assert.equal(
    headline(
      "no host fits: constraint (rack=a, b and zone=z; y) failed on 3 hosts, host in maintenance on 1 hosts",
    ),
    "no host fits: constraint (rack=a, b and zone=z; y) failed",
  );
  assert.equal(headline("no host fits: no hosts registered"), "no host fits: no hosts registered");
  assert.equal(headline("no host fits"), "no host fits");
  assert.equal(
    headline("gang of 4 could not be placed whole: no host fits: host in maintenance on 12 hosts"),
    "gang not placed whole: no host fits: host in maintenance",
  );
  assert.equal(
    headline(
      "host gpu-3 was reserved for the task but did not free up in time; no host fits: constraint " +
        "host_pool=gpu failed on 7 hosts; no host could be reserved for the task: no host is big enough",
    ),
    "host <host> was reserved for the task but did not free up in time; no host fits: constraint " +
      "host_pool=gpu failed",
  );
  assert.equal(
    headline("no host fits: insufficient cpu on 3 hosts; no host could be reserved for the task: none"),
    "no host fits: insufficient cpu",
  );
});

Deno.test("placement failures by reason name the stage: a constraint no host meets, GPU hosts kept", async () => {
  const scenario = inlineScenario(`
name: kept-out
durationSec: 60
hostClasses:
  - {name: gpu, count: 2, cpu: 8, memoryMb: 32768, diskMb: 100000, gpu: 4}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 16, limit: 16}
      - {kind: memory, reservation: 65536, limit: 65536}
      - {kind: disk, reservation: 200000, limit: 200000}
      - {kind: gpu, reservation: 8, limit: 8}
workloads:
  - {name: cpuonly, respool: /p, arrival: {at: [0]}, instances: 2, durationSec: 30, cpu: 1, memoryMb: 1024}
  - {name: pinned, respool: /p, arrival: {at: [0]}, instances: 2, durationSec: 30, cpu: 1, memoryMb: 1024,
     gpu: 1, hostAttributes: {host_pool: nope}}
settings:
  sampleIntervalSec: 10
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.deepEqual(Object.keys(r.placementFailures.byReason).sort(), [
    "no host fits: GPU host kept for GPU work",
    "no host fits: constraint host_pool=nope failed",
  ], JSON.stringify(r.placementFailures.byReason));
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
  assert.ok(afterKill.max! > 0 && afterKill.p50! <= afterKill.max!);
  // The drained rack's ten hosts are in maintenance from 60 s to 120 s, DOWN (not up) once drained.
  const s = r.series;
  const at = (t: number) => s.t.findIndex((x) => x >= t);
  assert.equal(s.hostsInMaintenance[at(90)], 10);
  assert.equal(s.hostsUp[at(90)], 30);
  assert.equal(s.hostsInMaintenance[at(150)], 0);
  assert.equal(s.hostsUp[at(150)], 40);
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
  assert.ok(afterLoss.max! > 299 && afterLoss.max! <= 300, `max ${afterLoss.max}`);
  assert.ok(afterLoss.p50! < 299, `p50 ${afterLoss.p50}: the 4 that ran again did so before the end`);
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
  // None to measure: no delay at all, not delays of 0.
  assert.deepEqual(r.rescheduleDelaySeconds.afterLoss, {
    p50: null,
    p90: null,
    p99: null,
    max: null,
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
  assert.ok(afterKill.p50! > 300 && afterKill.max! < 500, JSON.stringify(afterKill));
  assert.deepEqual(r.workloads.wa.rescheduleDelaySeconds, { ...afterKill });
  assert.equal(r.workloads.wb.rescheduleDelaySeconds.count, 0);
});

Deno.test("launches count on the class the cluster added each host with, not one read from its name", async () => {
  // `gpu` is a prefix of `gpu-large`; the two `gpu` hosts added at the start are named `node-<n>`.
  const scenario = inlineScenario(`
name: classes
durationSec: 60
hostClasses:
  - {name: gpu, count: 2, cpu: 8, memoryMb: 32768, diskMb: 1000}
  - {name: gpu-large, count: 3, cpu: 8, memoryMb: 32768, diskMb: 1000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 56, limit: 56}
      - {kind: memory, reservation: 229376, limit: 229376}
workloads:
  - {name: small, respool: /p, instances: 20, durationSec: 600, cpu: 1, memoryMb: 1024, hostAttributes: {host_class: gpu}}
  - {name: large, respool: /p, instances: 24, durationSec: 600, cpu: 1, memoryMb: 1024, hostAttributes: {host_class: gpu-large}}
`);
  const sim = createSimulation(scenario, { seed: 1, checkInvariants: true });
  sim.cluster.addHosts(
    [0, 1].map((n) => ({
      hostname: `node-${n}`,
      agentId: `node-${n}-S0`,
      resources: { cpuMilli: 8000, memMb: 32768, diskMb: 1000, gpuMilli: 0 },
      attributes: { host_class: "gpu" },
      portRanges: [[31000, 32000]],
    })),
    "gpu",
  );
  await sim.advanceTo(60_000);
  await sim.close();
  const r = buildReport(scenario, sim, 1, MACHINE);
  // 20 tasks do not fit on the first two gpu hosts' 16 cores: some ran on node-0 or node-1.
  const nodes = [...sim.jobmgr.jobs.values()].flatMap((j) => [...j.tasks.values()])
    .filter((t) => t.hostname?.startsWith("node-"));
  assert.ok(nodes.length >= 4, `${nodes.length} tasks on node-*`);
  assert.equal(r.tasks.launched, 44);
  assert.deepEqual(r.launchesByHostClass, {
    small: { gpu: 20, "gpu-large": 0 },
    large: { gpu: 0, "gpu-large": 24 },
  });
});

/** Two 4-core hosts, one filled by a 4-core task; a daemon arrives at 5 s with an instance per host. */
const DAEMON = `
name: daemon
durationSec: 100
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192}
respools:
  - name: A
    resources:
      - {kind: cpu, reservation: 12, limit: 12}
      - {kind: memory, reservation: 24576, limit: 24576}
workloads:
  - {name: fill, respool: /A, arrival: {at: [0]}, instances: 1, cpu: 4, durationSec: 1000}
  - {name: agent, respool: /A, type: daemon, arrival: {at: [5]}, cpu: 1, memoryMb: 256}
settings:
  sampleIntervalSec: 10
`;

Deno.test("daemon instances count as the job manager creates them, so one that never runs is unplaced and waiting", async () => {
  const scenario = inlineScenario(DAEMON);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.submitted, 3, "the fill task and one agent per host");
  assert.equal(r.tasks.launched, 2);
  assert.equal(r.tasks.unplaced, 1, "the agent pinned to the full host");
  const agent = r.workloads.agent.queueDelaySeconds;
  assert.deepEqual([agent.count, agent.waiting], [2, 1], JSON.stringify(agent));
  // The stuck agent waits from its job's submission at 5 s to the end; the other starts at once.
  assert.ok(agent.max! > 94.9 && agent.max! <= 95, `max ${agent.max}`);
  assert.ok(agent.p50! < 5, `p50 ${agent.p50}`);
});

Deno.test("every instance a daemon job is created with waits from the job's submission, not its enqueue", async () => {
  // Three empty hosts; each hop takes 2 s, so the job manager enqueues the instances 6 s after submission.
  const scenario = inlineScenario(`
name: daemon-start
durationSec: 60
hostClasses:
  - {name: h, count: 3, cpu: 4, memoryMb: 8192}
respools:
  - name: A
    resources:
      - {kind: cpu, reservation: 12, limit: 12}
      - {kind: memory, reservation: 24576, limit: 24576}
workloads:
  - {name: agent, respool: /A, type: daemon, arrival: {at: [5]}, cpu: 1, memoryMb: 256}
settings:
  sampleIntervalSec: 10
  rpcLatencyMs: 2000
  taskStartupSec: 0
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const delays = sim.stats.queueDelaysMs.get("agent")!;
  assert.equal(delays.length, 3);
  assert.ok(delays[0] > 6000, `delays ${delays}`);
  assert.deepEqual(delays, [delays[0], delays[0], delays[0]], "started together, asked for together");
});

Deno.test("a daemon instance for a host that came later waits from the host's arrival", async () => {
  const scenario = inlineScenario(`${DAEMON}events:\n  - {atSec: 50, addHosts: {class: h, count: 1}}\n`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.deepEqual([r.tasks.submitted, r.tasks.launched, r.tasks.unplaced], [4, 3, 1]);
  const agent = r.workloads.agent.queueDelaySeconds;
  assert.deepEqual([agent.count, agent.waiting], [3, 1], JSON.stringify(agent));
  assert.ok(agent.max! > 94.9 && agent.max! <= 95, `max ${agent.max}`);
  // Both agents that ran started within seconds of being asked for: the late host's at about 50 s.
  const started = r.series.queueDelayP99.filter((x) => x !== null);
  assert.ok(started.every((x) => x! < 5), `per-interval delays ${started}`);
});

Deno.test("failed placement attempts count as the engine reports them, hand-backs at the deadline apart", async () => {
  // A 6-core service task on 4-core hosts never fits. It fails its first round at once; the engine hands it
  // back at its 60 s placement deadline and the resource manager queues it again, three times in 200 s.
  const scenario = inlineScenario(`
name: nofit
durationSec: 200
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192}
respools:
  - name: A
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
      - {kind: memory, reservation: 16384, limit: 16384}
workloads:
  - {name: huge, respool: /A, type: stateless, arrival: {at: [0]}, instances: 1, cpu: 6}
settings:
  sampleIntervalSec: 10
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const why = "no host with 6 free cpus";
  assert.deepEqual(r.placementFailures.handedBack, { total: 3, byReason: { [why]: 3 } });
  // Each try: its first failure, then the host manager's refusal to reserve a host for it (no host could ever
  // hold it), which the reason carries after its own headline, then its hand-back at the deadline; the last
  // try ends with the run: 3 + 3 + 3 + 2. Refusals repeated within a try change nothing and count nothing.
  assert.deepEqual([r.placementFailures.total, r.placementFailures.byReason], [11, { [why]: 11 }]);
  const s = r.series;
  assert.equal(
    s.placementFailures[why][0],
    2,
    "the first failure and the refusal show in the first interval",
  );
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  assert.equal(sum(s.placementFailures[why]), 11);
  assert.equal(sum(s.placementHandedBack), 3);
  assert.equal(s.placementHandedBack.length, s.t.length);
});

Deno.test("fairness: Jain's index of allocation against min(want, fair share), a starved pool counting 0", () => {
  const pool = (allocCpu: number, wantCpu: number, fairShareCpu: number) => ({
    allocCpu,
    wantCpu,
    fairShareCpu,
  });
  // Both hold what they should: all they want (100 of a fair 800), or their fair share (800 of 1000).
  assert.equal(jain([pool(100, 100, 800), pool(800, 1000, 800)]), 1);
  // x = 1 and 700 / 800 = 0.875: (1.875)² / (2 · (1 + 0.765625)) = 3.515625 / 3.53125.
  assert.equal(jain([pool(100, 100, 800), pool(700, 1000, 800)]), 0.9956);
  // A pool that wants 1200 and holds nothing beside one holding twice its share: (2 + 0)² / (2 · 4).
  assert.equal(jain([pool(1600, 2000, 800), pool(0, 1200, 800)]), 0.5);
  // Three pools, one starved: x = 1, 1, 0 gives 4 / (3 · 2).
  assert.equal(jain([pool(10, 10, 20), pool(20, 30, 20), pool(0, 5, 20)]), 0.6667);
  // Left out: a pool that wants nothing, and one entitled to nothing.
  assert.equal(jain([pool(800, 1000, 800), pool(0, 0, 800), pool(0, 50, 0)]), 1);
  assert.equal(jain([]), 1, "no pool wants cpu");
  assert.equal(jain([pool(0, 10, 5), pool(0, 10, 5)]), 1, "none holds any: equal, if not served");
});

Deno.test("fairness weighs revocable cpu against the slack entitlement, not the regular one", async () => {
  // /web's services hold all 64 cores they may. /backfill wants revocable cpu only: it runs on the 48
  // cores of slack the services leave unused, all there is, while its regular entitlement (the 32 cores
  // of the cluster nobody claims) is not what revocable work is admitted against. Both hold their due.
  const scenario = inlineScenario(slackPools(false));
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const end = r.series.t.length - 1;
  assert.equal(r.series.slackCpu[end], 48);
  assert.equal(r.series.revocableCpu[end], 48, "backfill runs on all the slack");
  assert.equal(r.series.fairness[end], 1, "each pool holds what it is due");
  // In Jain's terms: regular cpu 64 of min(64, 64); revocable 48 of min(200, 48), its regular 32 unwanted.
  const pool = (allocCpu: number, wantCpu: number, fairShareCpu: number, slack = [0, 0, 0]) => ({
    allocCpu,
    wantCpu,
    fairShareCpu,
    slackAllocCpu: slack[0],
    slackWantCpu: slack[1],
    slackFairShareCpu: slack[2],
  });
  assert.equal(jain([pool(64, 64, 64), pool(0, 0, 32, [48, 200, 48])]), 1);
  // Revocable work holding half the slack it is due beside a pool holding its share: (1 + 0.5)² / (2 · 1.25).
  assert.equal(jain([pool(64, 64, 64), pool(0, 0, 32, [24, 200, 48])]), 0.9);
  // Wanting only revocable cpu when there is no slack: entitled to none, left out.
  assert.equal(jain([pool(64, 64, 64), pool(0, 0, 32, [0, 200, 0])]), 1);
});

/**
 * 8 cores, /A and /B each reserving 4. At 0 s, with no demand yet, each is entitled to its 4: 4 of /A's 6
 * tasks (200 s each) run from 0 s, 2 wait for admission. The 60 s entitlement cycle lends /A 3 of /B's
 * cores (/B wants none): its 2 run from 60 s. /B's 4 (50 s each) arrive at 70 s, entitled to 1 core until
 * the 120 s cycle gives it 4: 1 runs at once (70–120 s), 3 wait for admission. At 120 s the 3 are
 * admitted; 2 run on the cores the first left and /A's 2 spare, and 1 waits for a host until those end at
 * 170 s.
 */
const TINY = `
name: tiny
durationSec: 300
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192, diskMb: 10000}
respools:
  - name: A
    resources:
      - {kind: cpu, reservation: 4, limit: 8}
      - {kind: memory, reservation: 8192, limit: 16384}
  - name: B
    resources:
      - {kind: cpu, reservation: 4, limit: 8}
      - {kind: memory, reservation: 8192, limit: 16384}
workloads:
  - {name: a, respool: /A, arrival: {at: [0]}, instances: 6, cpu: 1, memoryMb: 1024, durationSec: 200}
  - {name: b, respool: /B, arrival: {at: [70]}, instances: 4, cpu: 1, memoryMb: 1024, durationSec: 50}
settings:
  sampleIntervalSec: 10
  taskStartupSec: 0
  rpcLatencyMs: 0
`;

/** The samples from 110 s to 180 s. */
const from110To180 = (xs: number[]) => xs.slice(10, 18);

Deno.test("tasks admitted but not yet placed show as placing, and count in their pool's allocation, not demand", async () => {
  const scenario = inlineScenario(TINY);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const s = r.series;
  assert.deepEqual(from110To180(s.t), [110, 120, 130, 140, 150, 160, 170, 180]);
  assert.deepEqual(from110To180(s.queuedTasks), [3, 3, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(from110To180(s.placingTasks), [0, 0, 1, 1, 1, 1, 1, 0]);
  assert.deepEqual(from110To180(s.runningTasks), [7, 7, 8, 8, 8, 8, 8, 7]);
  const b = r.poolSeries["/B"];
  assert.deepEqual(from110To180(b.demandCpu), [3, 3, 0, 0, 0, 0, 0, 0], "demand: the pending queue");
  assert.deepEqual(from110To180(b.allocationCpu), [1, 1, 3, 3, 3, 3, 3, 1], "admitted, placed or not");
  assert.deepEqual(s.queuedTasks.slice(0, 6), [2, 2, 2, 2, 2, 2], "/A's 2 wait for the 60 s cycle");
  assert.deepEqual(r.poolSeries["/A"].entitlementCpu.slice(4, 6), [4, 7], "its reservation, then 3 lent");
  const { max } = r.workloads.b.queueDelaySeconds;
  assert.ok(max! > 100 && max! < 100.2, `the last b task waits from 70 s to 170 s: ${max}`);
});

Deno.test("held on hosts: a pool's allocation less its tasks waiting for placement, and fairness over it", async () => {
  const scenario = inlineScenario(TINY);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const s = r.series;
  const b = r.poolSeries["/B"];
  assert.deepEqual(from110To180(b.allocationCpu), [1, 1, 3, 3, 3, 3, 3, 1], "admitted");
  // Averages over each interval ending at a sample: a task placed a second into one (the engine's round)
  // counts for the rest of it.
  const tenths = (xs: number[]) => xs.map((x) => Math.round(x * 10) / 10);
  assert.deepEqual(
    tenths(from110To180(b.heldCpu)),
    [1, 1, 1.9, 2, 2, 2, 2, 1.1],
    "on hosts: less the 1 waiting",
  );
  assert.deepEqual(
    tenths(from110To180(b.heldMemMb).map((x) => x / 1024)),
    [1, 1, 1.9, 2, 2, 2, 2, 1.1],
  );
  // From 80 s /B wants 4 and holds 1, on hosts and in allocation; /A, due 4, holds 6:
  // (1.5 + 0.25)² / (2 · (2.25 + 0.0625)).
  assert.deepEqual(s.fairness.slice(7, 12), [0.6622, 0.6622, 0.6622, 0.6622, 0.6622]);
  assert.deepEqual(s.fairnessHeld.slice(7, 12), [0.6622, 0.6622, 0.6622, 0.6622, 0.6622]);
  // From 130 s /B wants 3 and holds 2 on hosts; /A is due the other 5: (1.2 + 2 / 3)² / (2 · (1.44 + 4 / 9)).
  assert.deepEqual(from110To180(s.fairnessHeld).slice(2, 7), [0.9245, 0.9245, 0.9245, 0.9245, 0.9245]);
  // On allocation /B holds all it wants: (1.2 + 1)² / (2 · 2.44).
  assert.deepEqual(from110To180(s.fairness).slice(2, 7), [0.9918, 0.9918, 0.9918, 0.9918, 0.9918]);
  // What hosts hold, summed over the pools, is what the hosts have allocated, over every interval.
  for (let i = 0; i < s.t.length; i++) {
    const held = Object.values(r.poolSeries).reduce((sum, p) => sum + p.heldCpu[i], 0);
    const util = s.cpuUtil[i]!;
    assert.ok(Math.abs(held - util * 8) < 0.001, `at ${s.t[i]} s: ${held} ${util * 8}`);
  }
  // At the end, nothing of /B runs any more.
  assert.deepEqual([r.pools["/B"].heldCpu, r.pools["/B"].allocationCpu], [0, 0]);
  assert.deepEqual([b.heldCpu.at(-1), b.allocationCpu.at(-1)], [0, 0]);
  assert.equal(r.fairnessHeld, meanOf(s.fairnessHeld));
});

const meanOf = (xs: number[]) => Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 10000) / 10000;

Deno.test("elastic sharing: reporting's share is admitted at 670 s but held on hosts only once preemption frees them", async () => {
  const { scenario } = await loadScenario(`${ROOT}/scenarios/elastic-sharing.yaml`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const s = r.series, reporting = r.poolSeries["/reporting"];
  const at = (sec: number) => s.t.indexOf(sec);
  for (let sec = 670; sec <= 700; sec += 10) {
    const i = at(sec);
    assert.deepEqual(
      [reporting.allocationCpu[i], reporting.heldCpu[i], s.placingTasks[i]],
      [800, 0, 800],
      `at ${sec} s its 800 admitted tasks wait for hosts`,
    );
    assert.deepEqual([s.fairness[i], s.fairnessHeld[i]], [0.9, 0.5], `at ${sec} s`);
  }
  // The entitlement cycle at 660 s drops analytics' entitlement, and the preemption check of that moment
  // counts against it: the fourth check, at 705 s, preempts. Held is averaged over each interval:
  // reporting's tasks launch within the one ending at 710 s.
  const firstHeld = s.t.find((_, i) => reporting.heldCpu[i] > 0);
  assert.equal(firstHeld, 710, "reporting holds cores once analytics' preempted tasks are gone");
  assert.equal(reporting.heldCpu[at(720)], 800, "and all its 800 over the next interval");
  assert.equal(s.fairnessHeld[at(710)], 1);
});

Deno.test("a pool's revocable allocation is weighed against its slack entitlement, its regular one against the entitlement", async () => {
  const scenario = inlineScenario(SLACK_POOLS);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const backfill = sim.resmgr.tree.get(sim.poolIds.get("/backfill")!)!;
  const i = r.series.t.indexOf(190);
  const p = r.poolSeries["/backfill"];
  // Before the spike: 24 revocable tasks of 2 cores on the 48 cores of slack, none regular.
  assert.deepEqual(
    [p.allocationCpu[i], p.heldCpu[i], p.demandCpu[i], p.slackAllocationCpu[i], p.slackHeldCpu[i]],
    [0, 0, 0, 48, 48],
  );
  assert.equal(
    p.slackHeldCpu[i],
    r.series.revocableCpu[i],
    "revocable tasks on hosts, as the hosts count them",
  );
  assert.ok(p.slackAllocationCpu[i] <= p.slackEntitlementCpu[i], "within its slack entitlement");
  assert.ok(p.slackDemandCpu[i] > 0, "the rest of its 100 tasks queue for slack");
  const end = r.pools["/backfill"];
  assert.deepEqual(
    [end.allocationCpu, end.demandCpu, end.heldCpu, end.slackAllocationCpu, end.slackDemandCpu],
    [0, 0, 0, backfill.allocation.slack.cpuMilli / 1000, backfill.slackDemand.cpuMilli / 1000],
  );
  assert.deepEqual(
    [end.entitlementCpu, end.slackEntitlementCpu, end.entitlementMemMb, end.slackEntitlementMemMb],
    [
      backfill.nonSlackEntitlement.cpu,
      backfill.slackEntitlement.cpu,
      backfill.nonSlackEntitlement.memory,
      backfill.slackEntitlement.memory,
    ],
    "the entitlements admission weighs each kind against",
  );
  assert.equal(r.pools["/web"].allocationCpu, 64);
  assert.equal(r.pools["/web"].slackAllocationCpu, 0);
});

Deno.test("slack preemptions count in their pool's preempted, so the pools add up to the tasks preempted", async () => {
  const scenario = inlineScenario(SLACK_POOLS);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  // At 200 s the services use 24 of their 64 cores: 40 cores of slack go, and 16 of the 2-core revocable
  // tasks are killed.
  const { beingKilled, ...preempted } = r.preemptions;
  assert.deepEqual(preempted, { total: 16, running: 0, waiting: 0, slack: 16, maintenance: 0 });
  assert.equal(beingKilled.total, 0, "none being killed at the end");
  assert.deepEqual([r.pools["/backfill"].preempted, r.pools["/backfill"].slackPreempted], [16, 16]);
  assert.deepEqual([r.pools["/web"].preempted, r.pools["/web"].slackPreempted], [0, 0]);
  const leaves = ["/web", "/backfill"].reduce((n, p) => n + r.pools[p].preempted, 0);
  assert.equal(leaves, r.tasks.preempted);
});

Deno.test("a launch counts once per task id: a repeated TASK_STAGING does not count again, a new run does", () => {
  const cluster = new SimCluster(new EventQueue(), seededPrng(1));
  cluster.addHosts(hostsOf(hostClass.parse({ name: "std", count: 1, cpu: 8, memoryMb: 8192 })), "std");
  cluster.addHosts(hostsOf(hostClass.parse({ name: "big", count: 1, cpu: 64, memoryMb: 65536 })), "big");
  const stats = new SimStats(cluster, { warmupMs: 0, sampleMs: 10_000 });
  const jobId = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
  stats.submitted(jobId, "w", 2, 0);
  // As the host manager forwards the cluster's statuses: the host's row kept, Peloton's state added.
  const staging = (
    instance: number,
    run: number,
    hostRow: number,
    reason?: string,
  ): SimTaskStatus & MappedTaskStatus => ({
    taskId: mesosTaskId(jobId, instance, run),
    state: "TASK_STAGING",
    hostname: `h${hostRow}`,
    agentId: `h${hostRow}-S0`,
    hostRow,
    timeMs: 0,
    reason,
    pelotonState: "LAUNCHED",
  });
  const send = (...statuses: MappedTaskStatus[]) =>
    stats.observe("jobmgr", { kind: "task-statuses", statuses }, 1_000);
  send(staging(0, 1, 0), staging(1, 1, 1));
  // Reconciliation sends the same statuses again, in the same batch and in a later one.
  send(staging(0, 1, 0, "REASON_RECONCILIATION"), staging(0, 1, 0, "REASON_RECONCILIATION"));
  send(staging(1, 1, 1, "REASON_RECONCILIATION"));
  assert.equal(stats.tasks.launched, 2);
  assert.equal(stats.launchedAfterWarmup, 2);
  assert.deepEqual(stats.launchesByHostClass(), new Map([["w", new Map([["std", 1], ["big", 1]])]]));
  // Instance 0 runs again (run 2) on the big host: a new task id, a new launch; an old run's repeat is not.
  send(staging(0, 2, 1), staging(0, 1, 0, "REASON_RECONCILIATION"), staging(0, 2, 1));
  assert.equal(stats.tasks.launched, 3);
  assert.deepEqual(stats.launchesByHostClass(), new Map([["w", new Map([["std", 1], ["big", 2]])]]));
  // A task of a job no workload submitted (a test's own API call) counts once too.
  const other = { ...staging(0, 1, 0), taskId: mesosTaskId("0b1e3c1a-5d2f-4c8e-9a7b-1f2e3d4c5b6a", 0, 1) };
  send(other, other);
  assert.equal(stats.tasks.launched, 4);
});

// Pool /q may hold 4 cores of a roomy cluster; pool /h may hold 64 cores of a cluster of 8. Each gets 12
// one-core tasks of 60 s at 0 s: /q's wait for admission (its entitlement), /h's for hosts.
const SPLIT = `
name: split
durationSec: 400
hostClasses:
  - {name: roomy, count: 4, cpu: 16, memoryMb: 65536, diskMb: 10000, hostPool: roomy}
  - {name: tight, count: 1, cpu: 8, memoryMb: 32768, diskMb: 10000, hostPool: tight}
respools:
  - name: q
    resources:
      - {kind: cpu, reservation: 4, limit: 4}
      - {kind: memory, reservation: 16384, limit: 16384}
      - {kind: disk, reservation: 1000, limit: 1000}
  - name: h
    resources:
      - {kind: cpu, reservation: 60, limit: 64}
      - {kind: memory, reservation: 100000, limit: 200000}
      - {kind: disk, reservation: 1000, limit: 10000}
workloads:
  - {name: quota, respool: /q, arrival: {at: [0]}, instances: 12, durationSec: 60, cpu: 1, memoryMb: 512,
     hostAttributes: {host_pool: roomy}}
  - {name: hosts, respool: /h, arrival: {at: [0]}, instances: 12, durationSec: 60, cpu: 1, memoryMb: 512,
     hostAttributes: {host_pool: tight}}
settings:
  sampleIntervalSec: 10
`;

Deno.test("admission delay: the part of the queue delay a pool's entitlement holds tasks back, by workload and pool", async () => {
  const scenario = inlineScenario(SPLIT);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const { quota, hosts } = r.workloads;
  // Three waves of 4 tasks each: the last wave waits two runs of 60 s, for admission in /q, for a host in /h.
  assert.ok(quota.queueDelaySeconds.p99! > 119, `quota: queue p99 ${quota.queueDelaySeconds.p99}`);
  assert.ok(hosts.queueDelaySeconds.p99! > 59, `hosts: queue p99 ${hosts.queueDelaySeconds.p99}`);
  assert.ok(
    quota.queueDelaySeconds.p99! - quota.admissionDelaySeconds.p99! < 5,
    `quota: nearly all of it admission (${quota.admissionDelaySeconds.p99} of ${quota.queueDelaySeconds.p99} s)`,
  );
  assert.ok(
    hosts.admissionDelaySeconds.p99! < 1,
    `hosts: admitted at once (${hosts.admissionDelaySeconds.p99} s)`,
  );
  assert.equal(quota.admissionDelaySeconds.count, 12);
  assert.equal(hosts.admissionDelaySeconds.count, 12);
  assert.deepEqual(r.pools["/q"].admissionDelaySeconds, quota.admissionDelaySeconds);
  assert.deepEqual(r.admissionDelaySeconds.count, 24);

  // Cut at 90 s, the last wave of /q is not admitted yet: it counts with its wait so far.
  const early = await runScenario(inlineScenario(SPLIT.replace("durationSec: 400", "durationSec: 90")), {
    seed: 1,
  });
  const cut = buildReport(scenario, early, 1, MACHINE).workloads.quota.admissionDelaySeconds;
  assert.equal(cut.waiting, 4);
  // Asked for a few milliseconds in (the submission's API round trip), still waiting at 90 s.
  assert.ok(cut.max! > 89.9 && cut.max! <= 90, `max ${cut.max}`);
});

/**
 * 10 hosts of 8 cores; every 60 s from 0 to 540 s a job of 40 two-core tasks of 8 s: they hold 80 cores for
 * 8 s of each minute, between the 10 s samples.
 */
const BURSTS = `
name: bursts
durationSec: 600
hostClasses:
  - {name: std, count: 10, cpu: 8, memoryMb: 32768, diskMb: 100000}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 80, limit: 80}
      - {kind: memory, reservation: 327680, limit: 327680}
      - {kind: disk, reservation: 1000000, limit: 1000000}
workloads:
  - {name: cron, respool: /a, arrival: {bursts: {everySec: 60, jobs: 1}}, instances: 40, durationSec: 8,
     cpu: 2, memoryMb: 1024}
settings:
  sampleIntervalSec: 10
  taskStartupSec: 0
`;

Deno.test("utilization and what pools hold are exact time-averages: tasks shorter than a sample interval count", async () => {
  const scenario = inlineScenario(BURSTS);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.equal(r.tasks.launched, 400);
  // 10 bursts × 40 tasks × 2 cores × 8 s over 80 cores × 600 s: 6400 / 48000.
  assert.equal(r.utilization.cpu, 0.1333);
  assert.equal(r.pools["/a"].avgHeldCpu, 10.6667, "the same 6400 core-seconds over 600 s");
  // Each burst holds 80 cores for 8 s of the interval that starts with it: 0.8 of the cpu, 64 cores.
  const s = r.series, a = r.poolSeries["/a"];
  for (let i = 0; i < s.t.length; i++) {
    const burst = s.t[i] % 60 === 10;
    assert.equal(s.cpuUtil[i], burst ? 0.8 : 0, `cpu at ${s.t[i]} s`);
    assert.equal(a.heldCpu[i], burst ? 64 : 0, `held at ${s.t[i]} s`);
    assert.equal(s.memUtil[i], burst ? 0.1 : 0, `memory at ${s.t[i]} s: 40 GB of 320 for 8 s of 10`);
  }
  // No task starts in the intervals between the bursts: their queue delay is no value, not 0.
  assert.deepEqual(s.queueDelayP99.slice(0, 6).map((x) => x === null), [false, true, true, true, true, true]);
});

Deno.test("averages after the warm-up count only the time after it, to the millisecond", async () => {
  // The first burst holds its 80 cores from about 0 s to 8 s: 3 s of it fall after a 5 s warm-up.
  const scenario = inlineScenario(BURSTS.replace("taskStartupSec: 0", "taskStartupSec: 0\n  warmupSec: 5"));
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const expected = (40 * 2 * 3 + 9 * 40 * 2 * 8) / (80 * 595);
  assert.ok(Math.abs(r.utilization.cpu! - expected) < 0.0002, `${r.utilization.cpu}, expected ${expected}`);
  // Sampled series: the sample at the warm-up's end stands for the interval before it, all inside it.
  assert.equal(meanFrom([10, 20, 30], [5, 7, 9], 20), 9);
  assert.equal(meanFrom([10, 20, 30], [5, 7, 9], 15), round((7 * 5 + 9 * 10) / 15));
  assert.equal(meanFrom([10, 20, 30], [5, 7, 9], 0), 7);
});

const round = (x: number) => Math.round(x * 10000) / 10000;

Deno.test("cpu utilization counts revocable tasks' cpu too, with their part given apart", async () => {
  // 64 cores of services (using a quarter of them) and 48 cores of revocable backfill on the slack, of 128.
  const scenario = inlineScenario(slackPools(false));
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const s = r.series, end = s.t.length - 1;
  assert.equal(s.revocableCpu[end], 48);
  assert.equal(s.cpuUtil[end], (64 + 48) / 128, "regular and revocable cpu alike");
  const u = r.utilization as Record<keyof typeof r.utilization, number>;
  // Backfill runs from its first slack estimate on, about 60 s into the 300 s run.
  assert.ok(u.revocableCpu > 0.25 && u.revocableCpu < 0.375, `revocable part ${u.revocableCpu}`);
  assert.ok(u.cpu - u.revocableCpu > 0.49 && u.cpu - u.revocableCpu <= 0.5, `regular part ${u.cpu}`);
});

Deno.test("no job arrives at the run's end, and every submitted task is launched, unplaced or rejected", async () => {
  // Bursts every 60 s over a 600 s run: at 0, 60, … 540, not at 600, when the run ends.
  const scenario = inlineScenario(BURSTS);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  assert.deepEqual([r.jobs.submitted, r.jobs.accepted, r.jobs.unanswered], [10, 10, 0]);
  assert.deepEqual([r.tasks.submitted, r.tasks.launched, r.tasks.unplaced, r.tasks.rejected], [
    400,
    400,
    0,
    0,
  ]);

  // A job half a millisecond before the end has no answer to its create by then (the modelled RPC latency
  // is 1 ms): its tasks never launched, and count as unplaced.
  const late = inlineScenario(
    BURSTS.replace("arrival: {bursts: {everySec: 60, jobs: 1}}", "arrival: {at: [0, 599.9995]}"),
  );
  const cut = buildReport(late, await runScenario(late, { seed: 1 }), 1, MACHINE);
  assert.deepEqual([cut.jobs.submitted, cut.jobs.accepted, cut.jobs.unanswered], [2, 1, 1]);
  const t = cut.tasks;
  assert.deepEqual([t.submitted, t.launched, t.unplaced, t.rejected], [80, 40, 40, 0]);
});

Deno.test("series count tasks lost, killed and failed so far: each steps up at the sample after it happens", async () => {
  const scenario = inlineScenario(`
name: ends
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
  - {name: long, respool: /p, arrival: {at: [0]}, instances: 12, durationSec: 5000, cpu: 1, memoryMb: 512}
  - {name: bad, respool: /p, arrival: {at: [0]}, instances: 2, durationSec: 20, failureRate: 1, cpu: 1, memoryMb: 512}
  - {name: svc, respool: /p, type: stateless, arrival: {at: [0]}, instances: 2, cpu: 1, memoryMb: 512}
events:
  - {atSec: 100, failHosts: {hosts: [h-0, h-1]}}
  - {atSec: 250, drain: {hosts: [h-2, h-3]}, durationSec: 60}
settings:
  sampleIntervalSec: 10
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const s = r.series;
  const at = (t: number) => s.t.findIndex((x) => x >= t);
  assert.ok(r.tasks.lost > 0 && r.tasks.failed >= 2 && r.tasks.killed > 0, JSON.stringify(r.tasks));
  assert.equal(s.lostTasks[at(90)], 0, "nothing lost before the hosts fail");
  assert.equal(s.lostTasks[at(100)], r.tasks.lost, "all lost as the hosts fail at 100 s");
  assert.equal(s.failedTasks[at(10)], 0);
  assert.equal(s.failedTasks[at(30)], 2, "the two failing tasks end at about 21 s");
  assert.equal(s.killedTasks[at(240)], 0, "nothing killed before the drain");
  assert.ok(s.killedTasks[at(320)] > 0, "the drain kills its hosts' tasks");
  for (
    const [key, total] of [["lostTasks", "lost"], ["killedTasks", "killed"], [
      "failedTasks",
      "failed",
    ]] as const
  ) {
    assert.equal(s[key].length, s.t.length, key);
    assert.equal(s[key].at(-1), r.tasks[total], `${key} ends at the run's total`);
    assert.ok(s[key].every((v, i) => i === 0 || v >= s[key][i - 1]), `${key} never goes down`);
  }
});

Deno.test("fairness counts each pool's gpu as a pair of its own beside its cpu, where it wants gpu", () => {
  const pool = (cpu: number[], gpu?: number[]) => ({
    allocCpu: cpu[0],
    wantCpu: cpu[1],
    fairShareCpu: cpu[2],
    ...(gpu ? { allocGpu: gpu[0], wantGpu: gpu[1], fairShareGpu: gpu[2] } : {}),
  });
  // Cpu only, or gpu wanted by none: the cpu index as before.
  assert.equal(jain([pool([100, 100, 800]), pool([700, 1000, 800])]), 0.9956);
  assert.equal(jain([pool([100, 100, 800], [0, 0, 4]), pool([700, 1000, 800], [0, 0, 4])]), 0.9956);
  // Both hold their cpu; one holds 8 GPUs of a fair 4, the other none of the 4 it is due:
  // x = 1, 1, 2, 0 over (pool, kind) pairs: 16 / (4 · 6).
  assert.equal(jain([pool([18, 18, 50], [8, 8, 4]), pool([4, 4, 50], [0, 4, 4])]), 0.6667);
  // Held on hosts: gpu held as it is given, else the allocation.
  const held = { ...pool([18, 18, 50], [8, 8, 4]), heldGpu: 4 };
  assert.equal(jain([held, pool([4, 4, 50], [4, 4, 4])], "held"), 1);
  assert.equal(jain([held, pool([4, 4, 50], [4, 4, 4])]), 0.8929);
});

Deno.test("gpu: pools' gpu entitlement, allocation and demand are series, and fairness sees a pool holding another's GPUs", async () => {
  // 2 hosts of 4 GPUs. /G1 and /G2 reserve 4 each (limit 8). /G1 takes all 8 while /G2 wants none; /G2's 4
  // come at 300 s and are admitted at the next entitlement cycle, then wait for hosts until preemption
  // takes 4 back from /G1 (four checks 15 s apart).
  const scenario = inlineScenario(`
name: gpu-fairness
durationSec: 600
hostClasses:
  - { name: std, count: 8, cpu: 10, memoryMb: 10000, diskMb: 1000, racks: 2 }
  - { name: gpu, count: 2, cpu: 10, memoryMb: 10000, diskMb: 1000, gpu: 4, racks: 1 }
respools:
  - name: G1
    resources: [{kind: cpu, reservation: 50, limit: 100}, {kind: memory, reservation: 50000, limit: 100000}, {kind: gpu, reservation: 4, limit: 8}]
  - name: G2
    resources: [{kind: cpu, reservation: 50, limit: 100}, {kind: memory, reservation: 50000, limit: 100000}, {kind: gpu, reservation: 4, limit: 8}]
workloads:
  - { name: g1gpu, respool: /G1, arrival: {at: [0]}, instances: 8, durationSec: 100000, cpu: 1, memoryMb: 10, gpu: 1, priority: 5 }
  - { name: g1cpu, respool: /G1, arrival: {at: [60]}, instances: 10, durationSec: 100000, cpu: 1, memoryMb: 10, priority: 0 }
  - { name: g2gpu, respool: /G2, arrival: {at: [300]}, instances: 4, durationSec: 100000, cpu: 1, memoryMb: 10, gpu: 1 }
settings:
  sampleIntervalSec: 30
  entitlementPeriodSec: 60
  preemption: { periodSec: 15, sustainedOverAllocationCount: 4 }
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const r = buildReport(scenario, sim, 1, MACHINE);
  const at = (t: number) => r.series.t.indexOf(t);
  const [g1, g2] = ["/G1", "/G2"].map((p) => r.poolSeries[p]);
  const gpu = (
    p: typeof g1,
    t: number,
  ) => [p.entitlementGpu[at(t)], p.allocationGpu[at(t)], p.demandGpu[at(t)]];
  assert.deepEqual(gpu(g1, 270), [8, 8, 0], "/G1 holds all 8, entitled to them while /G2 wants none");
  assert.deepEqual(gpu(g2, 330), [0, 0, 4], "/G2's 4 wait for admission (and the next entitlement cycle)");
  // Fairness weighs the fair share of the moment: /G2's 4 GPUs, of which it holds none, /G1 twice its 4.
  assert.equal(r.series.fairness[at(330)], 0.45, "(1 + 0 + 2 + 0)² / (4 · 5)");
  assert.deepEqual(gpu(g1, 390), [4, 8, 0], "/G1 holds 8, entitled to 4");
  assert.deepEqual(gpu(g2, 390), [4, 4, 0], "/G2's 4 admitted, waiting for hosts");
  assert.equal(r.pools["/G1"].allocationGpu, 4, "preemption took 4 back");
  for (const t of [30, 90, 270]) assert.equal(r.series.fairness[at(t)], 1, `both hold their due at ${t} s`);
  // Pairs (pool, kind) at 390 s: cpu 1 and 1; gpu 8 of a fair 4 (x = 2) and 4 of 4. Held on hosts: /G2's cpu
  // and gpu wait, x = 0: (1 + 0 + 2 + 0)² / (4 · 5).
  assert.equal(r.series.fairness[at(390)], 0.8929, "/G1 holds twice its share of GPUs");
  assert.equal(r.series.fairnessHeld[at(390)], 0.45);
  // Once preemption is done each holds its 4 GPUs (x = 1, 1); /G1's 4 preempted tasks wait again, so it holds
  // 14 of the 18 cores it wants (x = 7 / 9) and /G2 its 4: (3 + 7 / 9)² / (4 · (3 + 49 / 81)).
  assert.equal(r.series.fairness.at(-1), 0.9897);
});
