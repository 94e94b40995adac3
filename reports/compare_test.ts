/** The comparison table: the numbers a scenario's question needs are rows of it, in every form it takes. */
import assert from "node:assert/strict";
import { buildReport, type Report } from "./report.ts";
import { compareReports, comparisonText, renderComparison } from "./compare.ts";
import { runScenario } from "../sim/runner.ts";
import { inlineScenario } from "../sim/testing.ts";

/**
 * 8 one-core tasks fill two 4-core hosts; a third comes at 30 s. h-0 is drained from 60 s to 90 s (its
 * tasks move to h-2), and h-1 is lost for good at 120 s (its tasks run again on h-0).
 */
const MOVES = `
name: moves
durationSec: 300
hostClasses:
  - {name: h, count: 2, cpu: 4, memoryMb: 8192, diskMb: 1000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 12, limit: 12}
      - {kind: memory, reservation: 24576, limit: 24576}
      - {kind: disk, reservation: 3000, limit: 3000}
workloads:
  - {name: long, respool: /p, arrival: {at: [0]}, instances: 8, durationSec: 5000, cpu: 1, memoryMb: 512}
events:
  - {atSec: 30, addHosts: {class: h, count: 1}}
  - {atSec: 60, drain: {hosts: [h-0]}, durationSec: 30}
  - {atSec: 120, failHosts: {hosts: [h-1]}}
settings:
  sampleIntervalSec: 10
`;

async function report(yaml: string): Promise<Report> {
  const scenario = inlineScenario(yaml);
  const sim = await runScenario(scenario, { seed: 1 });
  return buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
}

/** What a maintenance question reads: tasks killed and lost, drained ones, and how long moved work waited. */
const MOVED_WORK = [
  "tasks.killed",
  "tasks.lost",
  "preemptions.maintenance",
  "queueDelaySeconds.waiting",
  ...["", ".afterKill", ".afterLoss"].flatMap((split) =>
    ["count", "waiting", "p50", "p99"].map((k) => `rescheduleDelaySeconds${split}.${k}`)
  ),
];

Deno.test("compare has rows for killed, lost and drained tasks and for reschedule delays with the waiting", async () => {
  const a = await report(MOVES);
  // Without the third host, the drained tasks wait for h-0 to come back and the lost ones to the end.
  const b = await report(MOVES.replace("  - {atSec: 30, addHosts: {class: h, count: 1}}\n", ""));
  assert.ok(a.preemptions.maintenance > 0 && a.tasks.lost > 0, JSON.stringify(a.tasks));
  assert.deepEqual([a.rescheduleDelaySeconds.waiting, b.rescheduleDelaySeconds.waiting], [0, 4]);
  const list = [{ name: "added", report: a }, { name: "same", report: b }];
  const c = compareReports(list);
  const text = comparisonText(c);
  const html = renderComparison(list, { js: "", css: "" });
  for (const path of MOVED_WORK) {
    const row = c.rows.find((r) => r.path === path);
    assert.ok(row, `no row for ${path}`);
    const at = (r: Report) => path.split(".").reduce((x: unknown, k) => (x as Record<string, unknown>)[k], r);
    assert.deepEqual(row.values, [at(a), at(b)], path);
    assert.match(text, new RegExp(`^${row.metric} `, "m"), `terminal row ${row.metric}`);
    assert.ok(html.includes(`<tr><td>${row.metric}</td>`), `compare.html row ${row.metric}`);
  }
  assert.equal(new Set(c.rows.map((r) => r.metric)).size, c.rows.length, "labels tell rows apart");
});
