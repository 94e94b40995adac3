/** Timed scenario events on small clusters: failures, rack loss, drains, capacity changes and pool updates. */
import assert from "node:assert/strict";
import { renderHtml } from "../reports/html.ts";
import { buildReport, type Report } from "../reports/report.ts";
import { createSimulation, runScenario, type Simulation } from "./runner.ts";
import { inlineScenario, rackScenario } from "./testing.ts";

/** `rackScenario`: 48 one-core services that never end, and `extra` workloads. */
const scenario = (events: string, extra = "") => rackScenario(events, { extra });

async function run(yaml: string, seed = 1) {
  const s = inlineScenario(yaml);
  const sim = await runScenario(s, { seed, checkInvariants: true });
  return { sim, report: buildReport(s, sim, seed, { wallSeconds: 0, peakRssBytes: 0 }) };
}

/** Running tasks per rack now. */
function perRack(sim: Simulation): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of sim.hostmgr.hosts) {
    if (h.lost) continue;
    const rack = h.info.attributes.rack;
    out[rack] = (out[rack] ?? 0) + h.tasks.size;
  }
  return out;
}

const running = (sim: Simulation) =>
  [...sim.jobmgr.jobs.values()].flatMap((j) => [...j.tasks.values()]).filter((t) => t.state === "RUNNING");

Deno.test("a lost rack's tasks run again on the other racks; the rack comes back empty and takes work again", async () => {
  const { sim, report } = await run(scenario("  - {atSec: 60, loseRack: std-rack-1, recoverAfterSec: 60}"));
  // 48 tasks at most 4 per host on 12 hosts: each rack of 4 hosts held 16.
  assert.equal(report.tasks.lost, 16, "every task of the rack was lost");
  assert.equal(running(sim).length, 48, "all 48 run again");
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts]), [[60, "loseRack", 4], [
    120,
    "recover",
    4,
  ]]);
  const up = report.series.hostsUp;
  assert.equal(up[report.series.t.indexOf(70)], 8);
  assert.equal(up[report.series.t.indexOf(130)], 12);
});

Deno.test("draining a rack moves its tasks elsewhere (HOST_MAINTENANCE preemption); the hosts come back after", async () => {
  const { sim, report } = await run(
    scenario("  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 120}"),
  );
  assert.equal(report.preemptions.maintenance, 16);
  assert.equal(report.tasks.lost, 0, "drained, not lost");
  assert.equal(running(sim).length, 48);
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts, e.error]), [
    [60, "drain", 4, undefined],
    [180, "maintenanceDone", 4, undefined],
  ]);
  for (const h of sim.hostmgr.hosts) assert.equal(h.state, "HOST_STATE_UP", h.info.hostname);
  // While drained the rack runs nothing: the other 8 hosts hold 32 of the 48, the rest wait for the rack.
  const mid = await runUntil(
    scenario("  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 120}"),
    150_000,
  );
  assert.equal(perRack(mid)["std-rack-0"], 0);
  await mid.close();
});

Deno.test("a drain shorter than its tasks take to move completes each host once it is drained, not before", async () => {
  const yaml = scenario("  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 0.05}");
  // At its end the rack still has tasks to move: Peloton completes only drained hosts.
  const early = await runUntil(yaml, 60_100);
  const draining = early.hostmgr.hosts.filter((h) => h.state === "HOST_STATE_DRAINING");
  assert.ok(draining.length > 0, "the rack is still draining when its maintenance ends");
  assert.ok(draining.every((h) => h.tasks.size > 0));
  await early.close();

  const { sim, report } = await run(yaml);
  assert.equal(report.preemptions.maintenance, 16, "every task of the rack moved off");
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts, e.error]), [
    [60, "drain", 4, undefined],
    [60.05, "maintenanceDone", 4, undefined],
  ]);
  assert.match(report.events[1].detail, /still draining, completed once drained/);
  for (const h of sim.hostmgr.hosts) assert.equal(h.state, "HOST_STATE_UP", h.info.hostname);
  assert.equal(running(sim).length, 48);
});

async function runUntil(yaml: string, ms: number): Promise<Simulation> {
  const sim = createSimulation(inlineScenario(yaml), { seed: 1, checkInvariants: true });
  await sim.advanceTo(ms);
  return sim;
}

Deno.test("failed hosts lose their tasks, which run again elsewhere; removed hosts never come back", async () => {
  const { sim, report } = await run(scenario(`  - {atSec: 60, failHosts: {class: std, count: 2}}
  - {atSec: 90, removeHosts: {class: std, fraction: 0.25}}
  - {atSec: 120, addHosts: {class: std, count: 6}}`));
  // A quarter of the 12 hosts, the 2 down ones among them, rounded: 3 (with seed 1 all 3 up).
  assert.deepEqual(report.events.map((e) => [e.kind, e.hosts]), [["failHosts", 2], ["removeHosts", 3], [
    "addHosts",
    6,
  ]]);
  assert.equal(report.hosts, 15, "12 registered, 6 added, 3 removed for good");
  assert.equal(report.series.hostsUp.at(-1), 13);
  assert.ok(sim.hostmgr.host("std-17"), "new hosts continue the class's numbering");
  assert.equal(running(sim).length, 48);
});

Deno.test("a removal takes hosts that are down too: removed before their recovery, they never come back", async () => {
  // std-0 fails, rack std-rack-1 (std-1, std-4, std-7, std-10) is lost; both are removed while down.
  const { sim, report } = await run(
    scenario(`  - {atSec: 60, failHosts: {hosts: [std-0]}, recoverAfterSec: 60}
  - {atSec: 60, loseRack: std-rack-1, recoverAfterSec: 60}
  - {atSec: 90, removeHosts: {hosts: [std-0]}}
  - {atSec: 90, removeHosts: {rack: std-rack-1}}`),
  );
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts]), [
    [60, "failHosts", 1],
    [60, "loseRack", 4],
    [90, "removeHosts", 1],
    [90, "removeHosts", 4],
    [120, "recover", 0],
    [120, "recover", 0],
  ]);
  assert.match(report.events[4].detail, /1 removed meanwhile stay gone/);
  for (const name of ["std-0", "std-1", "std-4", "std-7", "std-10"]) {
    assert.equal(sim.cluster.host(name)!.up, false, `${name} stays gone`);
  }
  assert.equal(report.series.hostsUp.at(-1), 7);

  // count goes by host order over the hosts not removed, down or up: std-0 (down) and std-1.
  const counted = await run(scenario(`  - {atSec: 60, failHosts: {hosts: [std-0]}, recoverAfterSec: 60}
  - {atSec: 90, removeHosts: {class: std, count: 2}}`));
  assert.deepEqual(counted.report.events.map((e) => [e.kind, e.hosts, e.detail]), [
    ["failHosts", 1, "hosts failed (1 named)"],
    ["removeHosts", 2, "hosts removed (class std, at most 2), 1 of them down already"],
    ["recover", 0, "hosts failed (1 named): back (1 removed meanwhile stay gone)"],
  ]);
  assert.deepEqual(
    ["std-0", "std-1", "std-2"].map((n) => counted.sim.cluster.host(n)!.up),
    [false, false, true],
  );
  assert.equal(counted.report.series.hostsUp.at(-1), 10);
});

Deno.test("a host held down by a failure and a lost rack comes back only when the last of them recovers", async () => {
  // std-0 fails until 120 s; its rack std-rack-0 (std-0, std-3, std-6, std-9) is lost from 90 s to 210 s.
  const yaml = scenario(`  - {atSec: 60, failHosts: {hosts: [std-0]}, recoverAfterSec: 60}
  - {atSec: 90, loseRack: std-rack-0, recoverAfterSec: 120}`);
  const { sim, report } = await run(yaml);
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts, e.detail]), [
    [60, "failHosts", 1, "hosts failed (1 named)"],
    [90, "loseRack", 3, "rack std-rack-0 lost, 1 of its hosts down already"],
    [120, "recover", 0, "hosts failed (1 named): back (1 still down for another failure)"],
    [210, "recover", 4, "rack std-rack-0 lost: back"],
  ]);
  const up = (t: number) => report.series.hostsUp[report.series.t.indexOf(t)];
  assert.deepEqual([up(70), up(100), up(130), up(200), up(220)], [11, 8, 8, 8, 12]);
  assert.equal(sim.cluster.host("std-0")!.up, true);
  const mid = await runUntil(yaml, 150_000);
  assert.equal(mid.cluster.host("std-0")!.up, false, "std-0 stays down while its rack is lost");
  assert.equal(perRack(mid)["std-rack-0"] ?? 0, 0, "the lost rack takes no work");
  await mid.close();
});

Deno.test("a drain's end and a failure's recovery count only the hosts up again, not those the other holds down", async () => {
  // std-rack-0 is drained from 60 s to 120 s and fails from 90 s to 150 s; std-rack-1 is drained from 160 s
  // to 220 s and lost from 180 s to 200 s.
  const { report } = await run(scenario(`  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 60}
  - {atSec: 90, failHosts: {rack: std-rack-0}, recoverAfterSec: 60}
  - {atSec: 160, drain: {rack: std-rack-1}, durationSec: 60}
  - {atSec: 180, loseRack: std-rack-1, recoverAfterSec: 20}`));
  assert.deepEqual(
    report.events.filter((e) => e.kind !== "drain").map((e) => [e.atSec, e.kind, e.hosts, e.detail]),
    [
      [90, "failHosts", 4, "hosts failed (rack std-rack-0)"],
      [120, "maintenanceDone", 0, "none up again (4 still down for a failure)"],
      [150, "recover", 4, "hosts failed (rack std-rack-0): back"],
      [180, "loseRack", 4, "rack std-rack-1 lost"],
      [200, "recover", 0, "rack std-rack-1 lost: back (4 still in maintenance)"],
      [220, "maintenanceDone", 4, "hosts up again"],
    ],
  );
  // What the records say, the hosts did.
  const up = (t: number) => report.series.hostsUp[report.series.t.indexOf(t)];
  assert.deepEqual([up(110), up(130), up(160), up(210), up(230)], [8, 8, 12, 8, 12]);
});

/** A host's maintenance state in the host manager. */
const stateOf = (sim: Simulation, name: string) => sim.hostmgr.host(name)!.state;

Deno.test("a drain's end brings back only its hosts not removed meanwhile: those stay gone", async () => {
  const { sim, report } = await run(
    scenario(`  - {atSec: 60, drain: {hosts: [std-0, std-1]}, durationSec: 100}
  - {atSec: 90, removeHosts: {hosts: [std-0]}}`),
  );
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts, e.detail]), [
    [60, "drain", 2, "maintenance (2 named)"],
    [90, "removeHosts", 1, "hosts removed (1 named)"],
    [160, "maintenanceDone", 1, "hosts up again (1 removed meanwhile stay gone)"],
  ]);
  assert.equal(stateOf(sim, "std-1"), "HOST_STATE_UP");
  assert.equal(sim.cluster.host("std-0")!.up, false);
  assert.equal(report.series.hostsUp.at(-1), 11);

  const alone = await run(scenario(`  - {atSec: 60, drain: {hosts: [std-0]}, durationSec: 100}
  - {atSec: 90, removeHosts: {hosts: [std-0]}}`));
  assert.deepEqual(alone.report.events.at(-1), {
    atSec: 160,
    kind: "maintenanceDone",
    detail: "none of its own in maintenance to bring back (1 removed meanwhile stay gone)",
    hosts: 0,
  });
});

Deno.test("a drain overlapping an earlier one's hosts puts the others into maintenance and leaves those to it", async () => {
  // std-rack-0 is std-0, std-3, std-6, std-9: DRAINED when the second drain, of std-0 … std-5, starts.
  const yaml = scenario(`  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 200}
  - {atSec: 100, drain: {class: std, count: 6}, durationSec: 100}`);
  const { sim, report } = await run(yaml);
  assert.deepEqual(
    report.events.map((e) => [e.atSec, e.kind, e.hosts, e.alreadyInMaintenance, e.error]),
    [
      [60, "drain", 4, undefined, undefined],
      [100, "drain", 4, 2, undefined],
      [200, "maintenanceDone", 4, undefined, undefined],
      [260, "maintenanceDone", 4, undefined, undefined],
    ],
  );
  // Its own four hosts drained: timed on them alone.
  const [, second] = drainSeconds(report);
  assert.ok(typeof second === "number" && second > 0 && second < 1, `drained in ${second} s`);
  for (const h of sim.hostmgr.hosts) assert.equal(h.state, "HOST_STATE_UP", h.info.hostname);
  const mid = await runUntil(yaml, 150_000);
  assert.deepEqual(
    ["std-0", "std-1", "std-2", "std-3", "std-4", "std-5", "std-7"].map((n) => stateOf(mid, n)),
    [...Array(6).fill("HOST_STATE_DOWN"), "HOST_STATE_UP"],
  );
  await mid.close();
});

Deno.test("a drain's end completes only the hosts it put into maintenance, not another drain's", async () => {
  // std-0 is the rack drain's (until 1,060 s); the second drain picks std-0 and std-1, and puts only std-1
  // into maintenance.
  const yaml = slaScenario(
    `  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 1000}
  - {atSec: 100, drain: {class: std, count: 2}, durationSec: 30}`,
    24,
    undefined,
    1200,
  );
  const at = await runUntil(yaml, 200_000);
  assert.equal(stateOf(at, "std-1"), "HOST_STATE_UP", "its own host is back");
  assert.equal(stateOf(at, "std-0"), "HOST_STATE_DOWN", "the rack drain's host stays in maintenance");
  assert.deepEqual(at.events.map((e) => [e.atSec, e.kind, e.hosts, e.alreadyInMaintenance]), [
    [60, "drain", 4, undefined],
    [100, "drain", 1, 1],
    [130, "maintenanceDone", 1, undefined],
  ]);
  await at.close();
  const { report } = await run(yaml);
  assert.equal(report.events.at(-1)!.atSec, 1060);
  assert.equal(report.events.at(-1)!.hosts, 4);

  // A drain the host manager refuses puts no host into maintenance: its end completes none, here not the
  // host an operator put into maintenance before it.
  const refusedYaml = scenario("  - {atSec: 60, drain: {hosts: [std-1]}, durationSec: 30}");
  const refused = createSimulation(inlineScenario(refusedYaml), { seed: 1, checkInvariants: true });
  await refused.advanceTo(30_000);
  const started = refused.api("peloton.api.v0.host.svc.HostService::StartMaintenance", {
    hostnames: ["std-1"],
  });
  await refused.advanceTo(59_000);
  assert.equal((await started).error, undefined);
  assert.equal(stateOf(refused, "std-1"), "HOST_STATE_DOWN");
  await refused.advanceTo(120_000);
  assert.match(refused.events[0].error ?? "", /already in maintenance/);
  assert.deepEqual(refused.events.map((e) => [e.kind, e.hosts, e.detail]), [
    ["drain", 1, "maintenance (1 named)"],
    ["maintenanceDone", 0, "none of its own in maintenance to bring back"],
  ]);
  assert.equal(stateOf(refused, "std-1"), "HOST_STATE_DOWN", "still the operator's maintenance");
  await refused.close();
});

Deno.test("a pool update changes the pool's entitlement at its time", async () => {
  const { report } = await run(
    scenario(`  - atSec: 100
    updatePool:
      path: /svc
      resources:
        - {kind: cpu, reservation: 24, limit: 24}
        - {kind: memory, reservation: 393216, limit: 393216}
        - {kind: disk, reservation: 1200000, limit: 1200000}`),
  );
  assert.equal(report.events[0].error, undefined);
  const ent = report.poolSeries["/svc"].entitlementCpu;
  const t = report.series.t;
  assert.equal(ent[t.indexOf(90)], 96);
  assert.equal(ent[t.indexOf(200)], 24, "the limit caps the entitlement after the next calculation");
});

Deno.test("the same events and seed give the same report", async () => {
  const yaml = scenario(`  - {atSec: 30, failHosts: {class: std, fraction: 0.5}, recoverAfterSec: 30}
  - {atSec: 100, drain: {rack: std-rack-2}, durationSec: 50}`);
  const a = await run(yaml, 5), b = await run(yaml, 5);
  assert.equal(JSON.stringify(a.report), JSON.stringify(b.report));
});

Deno.test("events run in time order whatever their list order: hosts of a class added later in the list", async () => {
  const { sim, report } = await run(scenario(`  - {atSec: 100, addHosts: {class: big, count: 2}}
  - {atSec: 10, addHostClass: {name: big, count: 1, cpu: 16, memoryMb: 65536, diskMb: 100000}}`));
  assert.deepEqual(report.events.map((e) => [e.atSec, e.kind, e.hosts]), [[10, "addHostClass", 1], [
    100,
    "addHosts",
    2,
  ]]);
  assert.equal(report.hosts, 15, "12 registered, 1 with the class, 2 more");
  assert.ok(sim.hostmgr.host("big-2"), "the added hosts continue the new class's numbering");
});

/** /org (8 cores) over /org/a and /org/b (4 reserved each), both with more work than their share. */
function poolUpdates(events: string): string {
  const kinds = (cpu: number, limit: number) =>
    `[{kind: cpu, reservation: ${cpu}, limit: ${limit}}, {kind: memory, reservation: 8192, limit: 16384}]`;
  return `name: pool-updates
durationSec: 100
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192}
respools:
  - name: org
    resources: [{kind: cpu, reservation: 8, limit: 8}, {kind: memory, reservation: 16384, limit: 16384}]
    children:
      - {name: a, resources: ${kinds(4, 8)}}
      - {name: b, resources: ${kinds(4, 8)}}
workloads:
  - {name: wa, respool: /org/a, instances: 8, durationSec: 5000, memoryMb: 512}
  - {name: wb, respool: /org/b, instances: 8, durationSec: 5000, memoryMb: 512}
events:
${events.replaceAll("$A2", kinds(2, 8)).replaceAll("$B6", kinds(6, 8))}
settings: {preemption: {enabled: false}, entitlementPeriodSec: 10}
`;
}

const cpuOf = (sim: Simulation, path: string) =>
  sim.resmgr.tree.lookup(path)!.config.resources.find((r) => r.kind === "cpu")!.reservation;

Deno.test("a rejected pool update stays rejected: a later update of the same pool does not carry it in", async () => {
  const yaml = poolUpdates(`  - {atSec: 10, updatePool: {path: /org/b, resources: $B6, force: true}}
  - {atSec: 20, updatePool: {path: /org/a, resources: $A2}}
  - {atSec: 30, updatePool: {path: /org/b, owningteam: newteam}}`);
  // The scenario's checks refuse an update the respool API would refuse: unforce it past them.
  const s = inlineScenario(yaml);
  delete s.events[0].updatePool!.force;
  const sim = await runScenario(s, { seed: 1, checkInvariants: true });
  const report = buildReport(s, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  // 4 + 6 reserved under a parent of 8: refused, and the event says so.
  assert.match(report.events[0].error ?? "", /reservation/);
  assert.deepEqual(report.events.map((e) => e.detail), [
    "pool /org/b not updated: the respool API refused it",
    "pool /org/a updated",
    "pool /org/b updated",
  ]);
  assert.deepEqual(report.events.slice(1).map((e) => e.error), [undefined, undefined]);
  assert.equal(cpuOf(sim, "/org/b"), 4, "the rejected reservation never reached the pool");
  assert.equal(sim.resmgr.tree.lookup("/org/b")!.config.owningTeam, "newteam");
  // Reservations 2 and 4, the 2 cores left split by equal shares: 3 and 5.
  const t = report.series.t.indexOf(90);
  assert.deepEqual(
    [report.poolSeries["/org/a"].entitlementCpu[t], report.poolSeries["/org/b"].entitlementCpu[t]],
    [3, 5],
  );
});

Deno.test("updates of one pool at the same time apply one after the other, each onto the one before", async () => {
  const { sim, report } = await run(
    poolUpdates(`  - {atSec: 10, updatePool: {path: /org/a, owningteam: first}}
  - {atSec: 10, updatePool: {path: /org/a, resources: $A2}}`),
  );
  assert.deepEqual(report.events.map((e) => e.error), [undefined, undefined]);
  assert.equal(
    sim.resmgr.tree.lookup("/org/a")!.config.owningTeam,
    "first",
    "the second kept the first's change",
  );
  assert.equal(cpuOf(sim, "/org/a"), 2);
});

/** `rackScenario` with the instances, SLA and length given. */
const slaScenario = (events: string, instances: number, sla?: number, durationSec = 300) =>
  rackScenario(events, { instances, sla, durationSec });

const RACK_0 = "  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 120}";
const drainSeconds = (r: Report) => r.events.filter((e) => e.kind === "drain").map((e) => e.drainSeconds);

Deno.test("a drain's report says how long its hosts took to drain; a service's SLA makes it take longer", async () => {
  const free = await run(slaScenario(RACK_0, 24));
  const held = await run(slaScenario(RACK_0, 24, 1));
  assert.equal(held.sim.jobmgr.jobs.values().next().value!.config.sla.maximumUnavailableInstances, 1);
  for (const { report } of [free, held]) {
    assert.ok(report.preemptions.maintenance > 1, "the rack held more than one instance");
    assert.equal(report.tasks.lost, 0);
    // The other events have no drain time.
    assert.deepEqual(report.events.map((e) => [e.kind, e.drainSeconds === undefined]), [
      ["drain", false],
      ["maintenanceDone", true],
    ]);
  }
  const [fast] = drainSeconds(free.report), [slow] = drainSeconds(held.report);
  assert.ok(
    typeof fast === "number" && fast > 0 && fast < 1,
    `all at once: killed within a second (${fast})`,
  );
  // One at a time: each waits for the one before to run again elsewhere (a second to start, at least).
  const moved = held.report.preemptions.maintenance;
  assert.ok(typeof slow === "number" && slow > moved - 1, `${moved} one after another took ${slow} s`);
  // Timed to the millisecond the host manager saw the rack's last task end.
  for (const [sla, seconds] of [[undefined, fast], [1, slow]] as const) {
    const endMs = 60_000 + seconds * 1000;
    const before = await runUntil(slaScenario(RACK_0, 24, sla), endMs - 1);
    const after = await runUntil(slaScenario(RACK_0, 24, sla), endMs);
    assert.ok(perRack(before)["std-rack-0"] > 0 && perRack(after)["std-rack-0"] === 0, `drained at ${endMs}`);
    await Promise.all([before.close(), after.close()]);
  }
});

Deno.test("a drain that never ends reports null, one of hosts without tasks next to no time; report.html shows both", async () => {
  // 48 instances at most 4 per host fill all 12 hosts: a drained one has nowhere to go, so with a limit of 1
  // the rack's other instances wait for it for good, and the rack never drains.
  const stuck = await run(slaScenario(RACK_0, 48, 1));
  assert.deepEqual(drainSeconds(stuck.report), [null]);
  // The report says what holds it: the rack's instances wait on the SLA for the one that has nowhere to go.
  assert.deepEqual(stuck.report.events[0].drainPending, {
    hosts: 4,
    tasks: 15,
    holding: [{
      workload: "web",
      jobs: 1,
      tasks: 15,
      why:
        "held by the job's SLA (sla.maximumUnavailableInstances 1): its instances already unavailable are not " +
        "back (1 PLACING)",
    }],
  });
  // Only the one instance the SLA let go counts as drained, not those the resource manager asked for.
  assert.equal(stuck.report.preemptions.maintenance, 1);
  const runs = [...stuck.sim.jobmgr.jobs.values()].flatMap((j) => [...j.tasks.values()]).map((t) => t.runId);
  assert.equal(runs.filter((r) => r > 1).length, 1, "one instance was drained; it waits for a host");
  const draining = stuck.sim.hostmgr.hosts.filter((h) => h.state === "HOST_STATE_DRAINING");
  assert.ok(draining.length > 0 && draining.every((h) => h.info.attributes.rack === "std-rack-0"));
  // The run ends while the rack drains one at a time.
  const cut = await run(slaScenario(RACK_0, 24, 1, 63));
  assert.deepEqual(drainSeconds(cut.report), [null]);
  // report.html lists it with the other events.
  const html = renderHtml(cut.report, { js: "", css: "" });
  assert.match(html, /<th>drained after s<\/th>/);
  assert.match(
    html,
    new RegExp(
      '<td>maintenance \\(rack std-rack-0\\)</td><td class="n">4</td><td>not drained by the end: 5 tasks ' +
        "left, most \\(5\\) of web, held by the job's SLA \\(sla\\.maximumUnavailableInstances 1\\): its " +
        "instances already unavailable are not back \\(1 LAUNCHED\\)</td>",
    ),
  );
  // A host added after the work was placed has none: it is DRAINED as soon as its maintenance starts.
  const empty = await run(slaScenario(
    "  - {atSec: 30, addHosts: {class: std, count: 1}}\n  - {atSec: 60, drain: {hosts: [std-12]}}",
    24,
    1,
  ));
  assert.equal(empty.report.events[1].hosts, 1);
  assert.deepEqual(drainSeconds(empty.report), [0.001], "the maintenance call's way to the host manager");
  assert.match(
    renderHtml(empty.report, { js: "", css: "" }),
    /<td>\+1 std hosts<\/td><td class="n">1<\/td><td><\/td>.*<td>maintenance \(1 named\)<\/td><td class="n">1<\/td><td class="n">0\.001<\/td>/,
  );
});

Deno.test("each workload draws from its own stream: an event that changes scheduling leaves what is submitted the same", async () => {
  const batch =
    "  - {name: etl, respool: /svc, type: batch, arrival: {ratePerSec: 0.2}, instances: {uniform: [1, 8]}, " +
    "durationSec: {exponential: 60}, cpu: 0.5, memoryMb: 512}";
  const calm = await run(scenario("  []", batch));
  const hit = await run(scenario("  - {atSec: 60, loseRack: std-rack-1, recoverAfterSec: 60}", batch));
  assert.ok(hit.report.tasks.lost > 0, "the lost rack changed what ran where, and when");
  const submitted = (r: Awaited<ReturnType<typeof run>>) =>
    r.sim.submissions.map((s) => [s.workload, s.jobId, s.instances, JSON.stringify(s.config)]);
  assert.ok(submitted(calm).length > 40);
  assert.deepEqual(submitted(hit), submitted(calm));

  // Each run of a task draws its outcome from a stream of its own: a first run that finished in both runs
  // ran as long in both, however differently the two clusters scheduled it.
  const ranFor = async (r: Awaited<ReturnType<typeof run>>) => {
    const out = new Map<string, number>();
    for (const { jobId } of r.sim.submissions) {
      for (const t of await r.sim.store.getTasks(jobId)) {
        if (t.runId !== 1 || t.state !== "SUCCEEDED") continue;
        out.set(`${jobId}-${t.instanceId}`, t.completionTimeMs! - t.startTimeMs!);
      }
    }
    return out;
  };
  const [a, b] = [await ranFor(calm), await ranFor(hit)];
  const both = [...a.keys()].filter((k) => b.has(k));
  assert.ok(both.length > 100, `${both.length} first runs finished in both`);
  const starts = (r: Awaited<ReturnType<typeof run>>, k: string) => r.sim.store.getTask(...jobInstance(k));
  let movedStart = 0;
  for (const k of both) {
    assert.equal(b.get(k), a.get(k), `${k} ran as long in both`);
    if ((await starts(calm, k))!.startTimeMs !== (await starts(hit, k))!.startTimeMs) movedStart++;
  }
  assert.ok(movedStart > 0, "some started at other times in the two runs");
});

function jobInstance(key: string): [string, number] {
  const at = key.lastIndexOf("-");
  return [key.slice(0, at), Number(key.slice(at + 1))];
}

Deno.test("events due before the pools are made (over the modelled RPC latency) run at once, in time order", async () => {
  // Pools take two round trips each to create: at 300 ms a round trip, the run is past 1 s before the first
  // event could run. It stopped with "event scheduled in the past".
  const yaml = scenario(
    "  - {atSec: 1, addHosts: {class: std, count: 2}}\n  - {atSec: 0, failHosts: {class: std, count: 1}}",
  ).replace("settings: {sampleIntervalSec: 10}", "settings: {sampleIntervalSec: 10, rpcLatencyMs: 300}");
  const { sim, report } = await run(yaml);
  assert.deepEqual(report.events.map((e) => [e.kind, e.hosts, e.error]), [
    ["failHosts", 1, undefined],
    ["addHosts", 2, undefined],
  ]);
  assert.equal(sim.hostmgr.hosts.length, 14);
});

Deno.test("the report's hosts is the cluster's size at the end: added hosts count, removed ones do not, down ones do", async () => {
  // 12 hosts; std-0 removed for good, std-1 failed and std-2 drained (neither back by the end), 2 added.
  const { report } = await run(scenario(`  - {atSec: 30, removeHosts: {hosts: [std-0]}}
  - {atSec: 40, failHosts: {hosts: [std-1]}}
  - {atSec: 50, drain: {hosts: [std-2]}}
  - {atSec: 60, addHosts: {class: std, count: 2}}`));
  assert.equal(report.hosts, 13);
  assert.equal(report.series.hostsUp.at(-1), 11, "the failed host and the drained one are not up");
});
