/** What report.json, the CSV files and report.html's charts and tables say of each pool, regular and slack. */
import assert from "node:assert/strict";
import { runScenario } from "../sim/runner.ts";
import { inlineScenario, openEndedScenario, SLACK_POOLS } from "../sim/testing.ts";
import { poolsCsv, seriesCsv } from "./csv.ts";
import { HELD, renderHtml, reportCharts } from "./html.ts";
import { buildReport, type Report } from "./report.ts";
import { compareReports, comparisonText, renderComparison } from "./compare.ts";

async function slackReport(): Promise<Report> {
  const scenario = inlineScenario(SLACK_POOLS);
  const sim = await runScenario(scenario, { seed: 1 });
  return buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
}

/** The CSV's rows as objects by header name. */
function parseCsv(text: string): Record<string, string>[] {
  const [header, ...rows] = text.trimEnd().split("\n").map((l) => l.split(","));
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

Deno.test("pools.csv has each pool's held and slack series beside entitlement, allocation and demand", async () => {
  const report = await slackReport();
  const rows = parseCsv(poolsCsv(report));
  const header = poolsCsv(report).split("\n")[0].split(",");
  assert.deepEqual(header.slice(0, 8), [
    "t",
    "pool",
    "entitlementCpu",
    "allocationCpu",
    "demandCpu",
    "entitlementMemMb",
    "allocationMemMb",
    "demandMemMb",
  ], "the columns of before keep their places");
  const backfill = rows.find((r) => r.pool === "/backfill" && r.t === "190")!;
  assert.deepEqual(
    [backfill.allocationCpu, backfill.heldCpu, backfill.slackAllocationCpu, backfill.slackHeldCpu],
    ["0", "0", "48", "48"],
  );
  const p = report.poolSeries["/backfill"], i = report.series.t.indexOf(190);
  assert.deepEqual(
    [backfill.slackEntitlementCpu, backfill.slackDemandCpu, backfill.slackAllocationMemMb],
    [String(p.slackEntitlementCpu[i]), String(p.slackDemandCpu[i]), "24576"],
  );
  const series = parseCsv(seriesCsv(report));
  assert.deepEqual(series.map((r) => Number(r.fairnessHeld)), report.series.fairnessHeld);
});

Deno.test("report.html charts what hosts hold per pool, a revocable pool's slack, and fairness over both", async () => {
  const report = await slackReport();
  const charts = reportCharts(report);
  const byId = (id: string) => charts.find((c) => c.id === id);
  const labels = (id: string) => byId(id)?.lines.map((l) => l.label);
  assert.deepEqual(labels("fairness"), ["Jain", `Jain, ${HELD}`]);
  const pools = Object.keys(report.poolSeries);
  assert.deepEqual(pools, ["/web", "/backfill"]);
  for (const i of [0, 1]) {
    assert.deepEqual(labels(`pool-${i}-cpu`), ["entitlement", "allocation", HELD, "demand"]);
    assert.deepEqual(labels(`pool-${i}-memory`), ["entitlement", "allocation", HELD, "demand"]);
  }
  assert.equal(byId("pool-0-slack-cpu"), undefined, "/web runs no revocable work");
  assert.deepEqual(labels("pool-1-slack-cpu"), [
    "slack entitlement",
    "slack allocation",
    `slack ${HELD}`,
    "slack demand",
  ]);
  assert.deepEqual(
    byId("pool-1-slack-cpu")!.lines[1].values,
    report.poolSeries["/backfill"].slackAllocationCpu,
  );

  const html = renderHtml(report, { js: "", css: "" });
  assert.match(html, /<th>held cpu<\/th>/);
  assert.match(html, /<th>slack allocation cpu<\/th>/);
  assert.match(html, /<th>preempted \(of them slack\)<\/th>/);
  const b = report.pools["/backfill"];
  assert.match(
    html,
    new RegExp(
      `<td>/backfill</td><td class="n">${b.entitlementCpu.toLocaleString("en-US")}</td><td class="n">0</td>` +
        `<td class="n">0</td><td class="n">0</td><td class="n">${
          b.slackEntitlementCpu.toLocaleString("en-US")
        }</td><td class="n">${b.slackAllocationCpu}</td>`,
    ),
  );
  assert.match(html, /<td>16 \(16\)<\/td><\/tr>/, "/backfill's 16 slack preemptions");
  assert.match(html, new RegExp(`<td>${report.fairness} / ${report.fairnessHeld}</td>`));
});

Deno.test("an interval in which no task started has no queue delay: null in the JSON, an empty CSV cell, a gap in the chart", async () => {
  const report = await slackReport();
  const s = report.series;
  const none = s.t.findIndex((_, i) => s.queueDelayP99[i] === null);
  const some = s.t.findIndex((_, i) => s.queueDelayP99[i] !== null);
  assert.ok(none >= 0 && some >= 0, JSON.stringify(s.queueDelayP99));
  assert.deepEqual([s.queueDelayP50[none], s.queueDelayP90[none]], [null, null]);
  const rows = parseCsv(seriesCsv(report));
  assert.deepEqual([rows[none].queueDelayP50, rows[none].queueDelayP99], ["", ""]);
  assert.equal(Number(rows[some].queueDelayP99), s.queueDelayP99[some]);
  const delay = reportCharts(report).find((c) => c.id === "delay")!;
  assert.equal(delay.gaps, true, "a null is a gap, not a line drawn across it");
  assert.equal(delay.lines[2].values[none], null);
  assert.match(renderHtml(report, { js: "", css: "" }), /spanGaps: c\.gaps !== true/);
});

/** `early`'s tasks are all asked for at 0 s, inside the 60 s warm-up; `late`'s at 100 s, after it. */
const WARMED = `
name: warmed
durationSec: 200
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 32768, diskMb: 100000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 16, limit: 16}
      - {kind: memory, reservation: 65536, limit: 65536}
      - {kind: disk, reservation: 200000, limit: 200000}
workloads:
  - {name: early, respool: /p, arrival: {at: [0]}, instances: 4, durationSec: 30, cpu: 1, memoryMb: 1024}
  - {name: late, respool: /p, arrival: {at: [100]}, instances: 4, durationSec: 30, cpu: 1, memoryMb: 1024}
settings:
  sampleIntervalSec: 10
  warmupSec: 60
`;

Deno.test("a delay percentile of no samples is null in the JSON and n/a on the page, not 0", async () => {
  const scenario = inlineScenario(WARMED);
  const sim = await runScenario(scenario, { seed: 1 });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  const none = { p50: null, p90: null, p99: null, max: null, count: 0, waiting: 0 };
  const { early, late } = report.workloads;
  assert.deepEqual(early.queueDelaySeconds, none);
  assert.deepEqual(early.admissionDelaySeconds, none);
  assert.deepEqual(report.rescheduleDelaySeconds.afterKill, none, "no run was killed");
  // What was measured after the warm-up keeps its numbers.
  assert.equal(late.queueDelaySeconds.count, 4);
  assert.equal(typeof late.queueDelaySeconds.p99, "number");
  assert.deepEqual(report.queueDelaySeconds, { ...late.queueDelaySeconds });
  const html = renderHtml(report, { js: "", css: "" });
  const cells = (name: string) =>
    [...html.matchAll(new RegExp(`<tr><td>${name}</td>(.*?)</tr>`, "g"))][0][1].match(
      /<td[^>]*>[^<]*<\/td>/g,
    )!
      .map((c) => c.replace(/<[^>]+>/g, ""));
  // p50, p99, admission p99, waiting at end, run-again p99, waiting to run again.
  assert.deepEqual(cells("early").slice(3), ["n/a", "n/a", "n/a", "0", "n/a", "0"]);
  assert.notEqual(cells("late")[4], "n/a");
  assert.match(html, /<td>0 \(0\), n\/a: no delays measured \(after the 60 s warm-up\); 0 \(0\), n\/a: /);
});

Deno.test("series.csv and report.html show tasks lost, killed and failed so far, after the columns of before", async () => {
  const report = await slackReport();
  const s = report.series;
  const header = seriesCsv(report).split("\n")[0].split(",");
  // After the series of before, the placement failure reasons (as many as the run had) last.
  const at = header.indexOf("fairnessHeld");
  assert.deepEqual(header.slice(at, at + 4), ["fairnessHeld", "lostTasks", "killedTasks", "failedTasks"]);
  assert.ok(header.slice(at + 4).every((h) => h.startsWith("placementFailures: ")), header.join(","));
  const rows = parseCsv(seriesCsv(report));
  assert.deepEqual(rows.map((r) => Number(r.killedTasks)), s.killedTasks);
  assert.equal(s.killedTasks.at(-1), report.tasks.killed);
  const chart = reportCharts(report).find((c) => c.id === "ended");
  assert.ok(chart, "a chart of ended tasks");
  assert.match(chart.title, /^Tasks lost, killed and failed/);
  assert.deepEqual(chart.lines, [
    { label: "lost", values: s.lostTasks },
    { label: "killed", values: s.killedTasks },
    { label: "failed", values: s.failedTasks },
  ]);
  // A report from before these series has no such chart, and the page still renders.
  const { lostTasks: _l, killedTasks: _k, failedTasks: _f, ...older } = s;
  const old = { ...report, series: older } as unknown as typeof report;
  assert.equal(reportCharts(old).find((c) => c.id === "ended"), undefined);
});

Deno.test("pools.csv and report.html give each pool's gpu entitlement, allocation and demand, after the columns of before", async () => {
  const scenario = inlineScenario(`
name: gpu-pools
durationSec: 120
hostClasses:
  - { name: std, count: 2, cpu: 10, memoryMb: 10000 }
  - { name: gpu, count: 1, cpu: 10, memoryMb: 10000, gpu: 4 }
respools:
  - { name: ml, resources: [{kind: cpu, reservation: 10, limit: 30}, {kind: memory, reservation: 10000, limit: 30000}, {kind: gpu, reservation: 4, limit: 4}] }
  - { name: web, resources: [{kind: cpu, reservation: 10, limit: 30}, {kind: memory, reservation: 10000, limit: 30000}] }
workloads:
  - { name: train, respool: /ml, arrival: {at: [0]}, instances: 6, durationSec: 1000, cpu: 1, memoryMb: 10, gpu: 1 }
  - { name: serve, respool: /web, arrival: {at: [0]}, instances: 2, durationSec: 1000, cpu: 1, memoryMb: 10 }
settings: { sampleIntervalSec: 30 }
`);
  const sim = await runScenario(scenario, { seed: 1 });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  const csv = poolsCsv(report);
  const header = csv.split("\n")[0].split(",");
  assert.deepEqual(
    header.slice(-3),
    ["entitlementGpu", "allocationGpu", "demandGpu"],
    "new columns come last",
  );
  assert.deepEqual(header.slice(2, 5), ["entitlementCpu", "allocationCpu", "demandCpu"]);
  const ml = parseCsv(csv).find((r) => r.pool === "/ml" && r.t === "120")!;
  assert.deepEqual([ml.entitlementGpu, ml.allocationGpu, ml.demandGpu], ["4", "4", "2"]);
  assert.deepEqual(report.pools["/ml"].allocationGpu, 4);
  const charts = reportCharts(report);
  const gpu = charts.find((c) => c.id === "pool-0-gpu");
  assert.deepEqual(gpu?.lines.map((l) => [l.label, l.values.at(-1)]), [
    ["entitlement", 4],
    ["allocation", 4],
    ["demand", 2],
  ]);
  assert.equal(charts.find((c) => c.id === "pool-1-gpu"), undefined, "/web has no GPU work: no GPU chart");
});

Deno.test("a run that ends inside its warm-up measured nothing: its rates, utilization, fairness and averages are null, n/a", async () => {
  // It ends at about 130 s, inside its 200 s warm-up: no time of it is measured.
  const scenario = openEndedScenario("rpcLatencyMs: 0", "warmupSec: 200");
  const sim = await runScenario(scenario, { seed: 1 });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.ok(report.simulatedSeconds > 120 && report.simulatedSeconds < 200, `${report.simulatedSeconds}`);
  assert.equal(report.launchesPerSec, null);
  assert.deepEqual(report.utilization, {
    cpu: null,
    memory: null,
    disk: null,
    gpu: null,
    revocableCpu: null,
  });
  assert.deepEqual([report.fairness, report.fairnessHeld], [null, null]);
  const p = report.pools["/p"];
  assert.deepEqual(
    [p.avgAllocationCpu, p.avgEntitlementCpu, p.avgDemandCpu, p.avgHeldCpu, p.avgSlackHeldCpu],
    [null, null, null, null, null],
  );
  // Counts of the whole run are still counted.
  assert.equal(report.tasks.launched, 3);
  const html = renderHtml(report, { js: "", css: "" });
  assert.match(html, /<td>Launches per second \(after the 200 s warm-up\)<\/td><td>n\/a<\/td>/);
  assert.match(html, /<td>n\/a \(n\/a\) \/ n\/a \/ n\/a \/ n\/a<\/td>/, "utilization");
  assert.match(html, /<td>n\/a \/ n\/a<\/td>/, "fairness");
  // Compare shows what was not measured as it shows a percentile of no delays: an empty cell, "-".
  const list = [{ name: "x", report }, { name: "y", report }];
  const c = compareReports(list);
  for (const path of ["launchesPerSec", "utilization.cpu", "fairness", "fairnessHeld"]) {
    const row = c.rows.find((r) => r.path === path)!;
    assert.deepEqual(row.values, [null, null], path);
    const line = comparisonText(c).split("\n").find((l) => l.startsWith(`${row.metric} `))!;
    assert.deepEqual(line.slice(row.metric.length).trim().split(/\s+/), ["-", "-"], path);
    assert.ok(
      renderComparison(list, { js: "", css: "" }).includes(
        `<tr><td>${row.metric}</td><td></td><td></td><td></td>`,
      ),
      path,
    );
  }
  assert.deepEqual(c.pools.find((x) => x.metric === "avgHeldCpu")!.values, [null, null]);
});
