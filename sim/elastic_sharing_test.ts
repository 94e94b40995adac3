import assert from "node:assert/strict";
import { buildReport, type Report } from "../reports/report.ts";
import { runScenario, type Simulation } from "./runner.ts";
import type { Scenario } from "./scenario.ts";
import { loadScenario, ROOT } from "./testing.ts";

const FILE = `${ROOT}/scenarios/elastic-sharing.yaml`;
const POOLS = ["/analytics", "/reporting"];

async function run(edit: (s: Scenario) => Scenario = (s) => s, seed = 1) {
  const { scenario } = await loadScenario(FILE);
  const edited = edit(scenario);
  const sim = await runScenario(edited, { seed, checkInvariants: true });
  const report = buildReport(edited, sim, seed, { wallSeconds: 0, peakRssBytes: 0 });
  const contentionSec = edited.workloads.find((w) => w.name === "dashboards")!.arrival;
  assert.ok("at" in contentionSec);
  return { sim, report, contentionSec: contentionSec.at[0], periodSec: edited.settings.entitlementPeriodSec };
}

/** The first sample time from which every later sample has both pools within 5% of their entitlement. */
function convergedAt(report: Report, fromSec: number): number | undefined {
  const t = report.series.t;
  let since: number | undefined;
  for (let i = 0; i < t.length; i++) {
    if (t[i] < fromSec) continue;
    const ok = POOLS.every((p) => {
      const s = report.poolSeries[p];
      return Math.abs(s.heldCpu[i] - s.entitlementCpu[i]) <= 0.05 * s.entitlementCpu[i];
    });
    if (!ok) since = undefined;
    else if (since === undefined) since = t[i];
  }
  return since;
}

/** Tasks on hosts now, by pool path. */
function runningByPool(sim: Simulation): Record<string, number> {
  const pathOf = new Map([...sim.resmgr.tree.all()].map((p) => [p.id, p.path]));
  const out: Record<string, number> = {};
  for (const job of sim.jobmgr.jobs.values()) {
    const path = pathOf.get(job.config.respoolId ?? "") ?? "(no pool)";
    for (const task of job.tasks.values()) if (task.state === "RUNNING") out[path] = (out[path] ?? 0) + 1;
  }
  return out;
}

Deno.test("elastic sharing: a pool borrows the idle cluster, then preemption brings both pools to their entitlement", async () => {
  const { sim, report, contentionSec, periodSec } = await run();
  const at = (sec: number) => report.series.t.indexOf(sec);
  const [a, r] = POOLS.map((p) => report.poolSeries[p]);
  // Before the contention analytics holds the whole cluster, beyond its 800-core reservation.
  const before = at(contentionSec - 10);
  assert.deepEqual([a.allocationCpu[before], a.entitlementCpu[before]], [1600, 1600]);
  assert.deepEqual([r.allocationCpu[before], r.demandCpu[before]], [0, 0]);
  // Within 3 entitlement periods of reporting's demand arriving, both are within 5% of entitlement.
  const converged = convergedAt(report, contentionSec);
  assert.ok(converged !== undefined, "the pools never settled");
  assert.ok(
    converged <= contentionSec + 3 * periodSec,
    `settled at ${converged} s, more than 3 periods after ${contentionSec} s`,
  );
  const end = report.series.t.length - 1;
  assert.deepEqual([a.entitlementCpu[end], r.entitlementCpu[end]], [800, 800], "max-min fair: half each");
  assert.ok(r.demandCpu[end] > 0 && a.demandCpu[end] > 0, "both still want more than their share");
  // Exactly the excess was preempted, all from the borrower, and the cluster really runs the split.
  const { beingKilled, ...preempted } = report.preemptions;
  assert.deepEqual(preempted, { total: 800, running: 800, waiting: 0, slack: 0, maintenance: 0 });
  assert.equal(beingKilled.total, 0, "none being killed at the end");
  assert.deepEqual([report.pools["/analytics"].preempted, report.pools["/reporting"].preempted], [800, 0]);
  assert.deepEqual(runningByPool(sim), { "/analytics": 800, "/reporting": 800 });
  assert.equal(report.series.preemptedTasks[end], 800);
  // Preempted batch tasks are not lost: they wait in the queue as new runs.
  const backfill = sim.jobmgr.jobs.get(sim.submissions.find((s) => s.workload === "backfill")!.jobId)!;
  const rerun = [...backfill.tasks.values()].filter((t) => t.runId > 1);
  assert.equal(rerun.length, 800);
  assert.ok(rerun.every((t) => t.state === "PENDING"), "queued again behind the pool's entitlement");
});

Deno.test("elastic sharing: fairness drops while reporting wants cpu and holds none, before its entitlement is set", async () => {
  const { report, contentionSec, periodSec } = await run();
  const fairness = (sec: number) => report.series.fairness[report.series.t.indexOf(sec)];
  assert.equal(fairness(contentionSec), 1, "analytics alone wants cpu");
  // Until the next entitlement cycle reporting's entitlement is still the 0 it had with no demand, but
  // its fair share is 800: x = 1600 / min(2000, 800) = 2 for analytics, 0 / min(1200, 800) = 0 for
  // reporting, and Jain's index (2 + 0)² / (2 · (4 + 0)) = 0.5.
  for (let sec = contentionSec + 10; sec <= contentionSec + periodSec; sec += 10) {
    assert.equal(report.poolSeries["/reporting"].entitlementCpu[report.series.t.indexOf(sec)], 0);
    assert.equal(fairness(sec), 0.5, `at ${sec} s`);
  }
  // Then reporting is allocated its 800 (admitted, waiting for analytics' preemption): (2 + 1)² / (2 · 5).
  assert.equal(fairness(contentionSec + periodSec + 10), 0.9);
  assert.equal(fairness(report.series.t.at(-1)!), 1, "both hold their share once settled");
});

Deno.test("elastic sharing with Peloton's default preemption (5 checks of 60 s) settles only after 5 minutes", async () => {
  const { report, contentionSec, periodSec } = await run((s) => ({
    ...s,
    settings: {
      ...s.settings,
      preemption: { ...s.settings.preemption, periodSec: 60, sustainedOverAllocationCount: 5 },
    },
  }));
  const converged = convergedAt(report, contentionSec);
  assert.ok(converged !== undefined);
  assert.ok(converged > contentionSec + 5 * periodSec, `settled at ${converged} s`);
  assert.ok(converged <= contentionSec + 7 * periodSec, `settled at ${converged} s`);
  assert.equal(report.preemptions.total, 800);
});
