/**
 * Preemptions count when their runs end killed, as `tasks.killed` counts them: every figure of a report
 * agrees, also when a run ends with kills still on their way.
 */
import assert from "node:assert/strict";
import { renderHtml } from "../reports/html.ts";
import { buildReport, type Report } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario, rackScenario, slackPools } from "./testing.ts";

async function run(yaml: string): Promise<Report> {
  const s = inlineScenario(yaml);
  const sim = await runScenario(s, { seed: 1, checkInvariants: true });
  const report = buildReport(s, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  // Waiting victims are sent back at once: the resource manager's count is the report's.
  assert.equal(report.preemptions.waiting, sim.resmgr.preempted.waiting);
  await sim.close();
  return report;
}

/**
 * In these runs nothing else kills: every killed run was preempted (or drained), and the pools, the series
 * and the totals say so alike.
 */
function assertAgree(r: Report): void {
  const p = r.preemptions;
  assert.equal(r.tasks.preempted, p.running + p.waiting + p.slack);
  assert.equal(p.total, r.tasks.preempted + p.maintenance);
  assert.equal(r.tasks.killed, p.running + p.slack + p.maintenance, "every killed run is a preemption");
  const leaves = Object.entries(r.pools).filter(([path]) => path.lastIndexOf("/") === 0);
  assert.equal(leaves.reduce((n, [, pool]) => n + pool.preempted, 0), r.tasks.preempted, "the pools add up");
  assert.equal(leaves.reduce((n, [, pool]) => n + pool.slackPreempted, 0), p.slack);
  assert.equal(r.series.preemptedTasks.at(-1), r.tasks.preempted);
  assert.equal(r.series.killedTasks.at(-1), r.tasks.killed);
}

/** Two 8-core hosts; /a borrows /b's half until /b's work comes at 30 s, and 8 of /a's tasks are preempted. */
const borrow = (durationSec: number, wa = "") =>
  `name: borrow
durationSec: ${durationSec}
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 32768, diskMb: 100000}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 8, limit: 16}
      - {kind: memory, reservation: 16384, limit: 65536}
  - name: b
    resources:
      - {kind: cpu, reservation: 8, limit: 16}
      - {kind: memory, reservation: 16384, limit: 65536}
workloads:
  - {name: wa, respool: /a, arrival: {at: [0]}, instances: 16, durationSec: 3600, cpu: 1, memoryMb: 1024${wa}}
  - {name: wb, respool: /b, arrival: {at: [30]}, instances: 8, durationSec: 3600, cpu: 1, memoryMb: 1024}
settings: {sampleIntervalSec: 10, entitlementPeriodSec: 10, preemption: {periodSec: 15, sustainedOverAllocationCount: 1}}
`;

Deno.test("revocable tasks whose slack kill has not come back by the end count as preempted nowhere yet", async () => {
  // The spike at 200 s: the agents kill 16 revocable tasks at the slack estimate of 210 s, their statuses
  // 100 ms later, after the run's end.
  const early = await run(slackPools(true).replace("durationSec: 300", "durationSec: 210"));
  assertAgree(early);
  assert.equal(early.preemptions.slack, 0);
  assert.deepEqual(early.preemptions.beingKilled, { total: 16, running: 0, slack: 16, maintenance: 0 });
  const late = await run(slackPools(true).replace("durationSec: 300", "durationSec: 211"));
  assertAgree(late);
  assert.equal(late.preemptions.slack, 16);
  assert.equal(late.preemptions.beingKilled.total, 0);
  assert.equal(late.pools["/backfill"].slackPreempted, 16);
});

Deno.test("tasks a drain is killing as the run ends count in preemptions.maintenance once they are killed", async () => {
  const drain = (durationSec: number) =>
    rackScenario("  - {atSec: 100, drain: {rack: std-rack-1}}", { durationSec, instances: 12 });
  const early = await run(drain(100.05));
  assertAgree(early);
  assert.equal(early.preemptions.maintenance, 0);
  assert.deepEqual(early.preemptions.beingKilled, { total: 4, running: 0, slack: 0, maintenance: 4 });
  assert.match(
    renderHtml(early, { js: "", css: "" }),
    /being killed at the end, not counted yet: 0 \/ - \/ 0 \/ 4/,
  );
  assert.equal(
    early.events[0].drainPending?.holding[0].why,
    "being killed: the drain ends when the kill does",
  );
  const late = await run(drain(100.2));
  assertAgree(late);
  assert.equal(late.preemptions.maintenance, 4, "the rack's 4 hosts held one instance each");
  assert.equal(late.preemptions.beingKilled.total, 0);
});

Deno.test("running tasks preempted for entitlement count once killed; waiting ones as they are sent back", async () => {
  // The preemption of 45 s picks 8 of /a's running tasks; the job manager kills them, their kill statuses
  // come after the end.
  const early = await run(borrow(45.1));
  assertAgree(early);
  assert.deepEqual([early.preemptions.running, early.pools["/a"].preempted], [0, 0]);
  assert.deepEqual(early.preemptions.beingKilled, { total: 8, running: 8, slack: 0, maintenance: 0 });
  const late = await run(borrow(50));
  assertAgree(late);
  assert.deepEqual([late.preemptions.running, late.pools["/a"].preempted], [8, 8]);
  assert.equal(late.preemptions.beingKilled.total, 0);
  // At most 6 a host: 12 of /a's tasks run, 4 wait for a host; the preemption sends those 4 back at once.
  const waiting = await run(borrow(45.1, ", maxPerHost: 6"));
  assertAgree(waiting);
  assert.deepEqual([waiting.preemptions.running, waiting.preemptions.waiting], [0, 4]);
  assert.equal(waiting.pools["/a"].preempted, 4);
  assert.equal(waiting.preemptions.beingKilled.running, 4);
});
