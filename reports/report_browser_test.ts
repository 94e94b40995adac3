/**
 * Opens the simulator's pages (report, comparison, plan) from file:// in headless Chromium and checks that
 * every chart the page should have is there and drew its lines, with nothing on the console's error side.
 * Needs Chromium at /usr/bin/chromium (or PELOTON_TEST_CHROMIUM); without it the test fails, it does not skip.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { launchChromium } from "../tools/chromium_testing.ts";
import { PLAN_SCENARIO, ROOT, runSim } from "../sim/testing.ts";
import type { PlanOutcome } from "../sim/plan.ts";
import type { Report } from "./report.ts";
import { HANDED_BACK, HELD, PLACING, runsRevocable } from "./html.ts";

/** Series pixels a chart must have to count as drawn: a line across the plot is hundreds. */
const MIN_LINE_PIXELS = 100;

async function sim(...args: string[]): Promise<string> {
  const r = await runSim(args);
  assert.equal(r.code, 0, `sim ${args.join(" ")}:\n${r.err}`);
  return r.out;
}

/** One chart as the browser shows it: its title, legend and how many pixels its canvas holds. */
interface DrawnChart {
  id: string;
  title: string;
  /** Legend labels of the lines (the x series left out). */
  labels: string[];
  hasCanvas: boolean;
  /** Pixels not left transparent: axes, grid, labels and lines. */
  painted: number;
  /** Pixels in the colour of any of the chart's lines (taken from its legend markers). */
  linePixels: number;
}

/** The little of the DOM that `readCharts` uses (the test is type-checked without the DOM library). */
interface Node {
  id: string;
  textContent: string | null;
  width: number;
  height: number;
  querySelector(selector: string): Node | null;
  querySelectorAll(selector: string): Iterable<Node>;
  getContext(
    kind: "2d",
  ): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } };
}

/** Runs in the page: reads each chart's title, legend and canvas pixels. */
function readCharts(): DrawnChart[] {
  const page = globalThis as unknown as {
    document: Node;
    getComputedStyle(node: Node): { borderColor: string };
  };
  return [...page.document.querySelectorAll(".chart")].map((div) => {
    const canvas = div.querySelector("canvas");
    const series = [...div.querySelectorAll(".u-legend .u-series")].slice(1);
    const labels = series.map((s) => s.querySelector(".u-label")?.textContent ?? "");
    const colors = series.map((s) => {
      const marker = s.querySelector(".u-marker");
      const css = marker ? page.getComputedStyle(marker).borderColor : "";
      return (css.match(/\d+/g) ?? []).slice(0, 3).map(Number);
    }).filter((c) => c.length === 3);
    let painted = 0, linePixels = 0;
    if (canvas && canvas.width > 0 && canvas.height > 0) {
      const px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < px.length; i += 4) {
        if (px[i + 3] === 0) continue;
        painted++;
        const near = colors.some(([r, g, b]) =>
          Math.abs(px[i] - r) + Math.abs(px[i + 1] - g) + Math.abs(px[i + 2] - b) <= 40
        );
        if (near) linePixels++;
      }
    }
    return {
      id: div.id,
      title: div.querySelector(".u-title")?.textContent ?? "",
      labels,
      hasCanvas: canvas !== null,
      painted,
      linePixels,
    };
  });
}

/** Opens a page from file:// and reads every chart on it, with the console errors and page errors seen. */
async function openPage(browser: Browser, file: string): Promise<{ charts: DrawnChart[]; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  try {
    await page.goto(`file://${file}`, { waitUntil: "load" });
    const charts = await page.evaluate(readCharts);
    return { charts, errors };
  } finally {
    await page.close();
  }
}

/** A chart a page must have: a title to find it by and the lines its legend must list. */
interface Expected {
  what: string;
  title: RegExp;
  labels: string[];
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** Checks each expected chart is on the page once, and that every chart on the page drew its lines. */
function checkCharts(page: string, charts: DrawnChart[], expected: Expected[]): void {
  const summary = charts.map((c) => `${c.id}: "${c.title}" [${c.labels.join(", ")}]`).join("\n");
  for (const want of expected) {
    const found = charts.filter((c) => want.title.test(c.title));
    assert.equal(found.length, 1, `${page}: one chart of ${want.what} (${want.title}), found:\n${summary}`);
    for (const label of want.labels) {
      assert.ok(found[0].labels.includes(label), `${page}: chart of ${want.what} has no line "${label}"`);
    }
  }
  assert.ok(charts.length >= expected.length, `${page}: ${charts.length} charts`);
  for (const c of charts) {
    assert.ok(c.hasCanvas, `${page}: chart ${c.id} ("${c.title}") has no canvas`);
    assert.ok(c.painted > 0, `${page}: chart ${c.id} ("${c.title}") drew nothing`);
    assert.ok(
      c.linePixels >= MIN_LINE_PIXELS,
      `${page}: chart ${c.id} ("${c.title}") drew ${c.linePixels} pixels of its lines' colours`,
    );
  }
}

/** The charts a run's report page should draw, from what its report holds. */
function expectedReportCharts(report: Report): Expected[] {
  const s = report.series;
  const expected: Expected[] = [
    { what: "utilization per resource", title: /^Utilization/, labels: ["cpu", "memory", "disk", "gpu"] },
    { what: "the pending queue", title: /^Pending queue/, labels: ["queued", PLACING] },
    { what: "queue-delay percentiles", title: /^Queue delay/, labels: ["p50", "p90", "p99"] },
    { what: "launches per second", title: /^Launches per second/, labels: ["launches/s"] },
    { what: "preemptions", title: /preempted/, labels: ["preempted"] },
    { what: "ended tasks", title: /^Tasks lost, killed and failed/, labels: ["lost", "killed", "failed"] },
    {
      what: "placement failures by reason",
      title: /^Failed placement attempts/,
      labels: [...Object.keys(s.placementFailures), HANDED_BACK],
    },
    { what: "fairness", title: /^Fairness/, labels: ["Jain", `Jain, ${HELD}`] },
  ];
  for (const pool of Object.keys(report.poolSeries)) {
    for (const resource of ["cpu", "memory"]) {
      expected.push({
        what: `pool ${pool}'s ${resource}`,
        title: new RegExp(`^Pool ${escapeRe(pool)}: ${resource} entitlement, allocation and demand`),
        labels: ["entitlement", "allocation", HELD, "demand"],
      });
    }
    if (runsRevocable(report.poolSeries[pool])) {
      expected.push({
        what: `pool ${pool}'s revocable cpu`,
        title: new RegExp(`^Pool ${escapeRe(pool)}: slack cpu entitlement, allocation and demand`),
        labels: ["slack entitlement", "slack allocation", `slack ${HELD}`, "slack demand"],
      });
    }
  }
  const slackCharts = expected.filter((e) => e.what.endsWith("revocable cpu"));
  assert.ok(slackCharts.length > 0, "the scenario has a pool running revocable work to chart");
  if (s.slackCpu.some((v) => v > 0) || s.revocableCpu.some((v) => v > 0)) {
    expected.push({ what: "slack", title: /^Slack/, labels: ["slack", "revocable"] });
  }
  if (new Set(s.hostsUp).size > 1) expected.push({ what: "hosts up", title: /^Hosts up/, labels: ["hosts"] });
  return expected;
}

/** The overlaid charts of a comparison: one line per run. */
function expectedComparisonCharts(names: string[], reports: Report[]): Expected[] {
  const titles: [string, RegExp][] = [
    ["cpu utilization", /^cpu utilization/],
    ["memory utilization", /^memory utilization/],
    ["the pending queue", /^pending queue/],
    ["admitted tasks waiting for placement", /^admitted, waiting for placement/],
    ["queue delay p50", /^queue delay p50/],
    ["queue delay p99", /^queue delay p99/],
    ["launches per second", /^launches per second/],
    ["preemptions", /preempted/],
    ["fairness held on hosts", /^fairness \(Jain\) of cpu and gpu held on hosts/],
  ];
  const shared = Object.keys(reports[0].poolSeries).filter((p) => reports.every((r) => p in r.poolSeries));
  for (const pool of shared) {
    titles.push([`pool ${pool}`, new RegExp(`^Pool ${escapeRe(pool)}: cpu allocation`)]);
  }
  return titles.map(([what, title]) => ({ what, title, labels: names }));
}

Deno.test("the report, comparison and plan pages draw every chart in Chromium with no console errors", async (t) => {
  const dir = await Deno.makeTempDir();
  const browser = await launchChromium("open the report pages");
  try {
    // Revocable slack has placement failures with a reason, preemptions, two pools and slack: every kind of chart.
    const scenario = `${ROOT}/scenarios/revocable-slack.yaml`;
    await Deno.writeTextFile(`${dir}/plan-small.yaml`, PLAN_SCENARIO);
    await Promise.all([
      sim(scenario, "--seed", "1", "--out", `${dir}/seed-1`),
      sim(scenario, "--seed", "2", "--out", `${dir}/seed-2`),
      sim(
        "plan",
        `${dir}/plan-small.yaml`,
        "--vary",
        "hosts.std.count=1..20",
        "--target",
        "tasks.unplaced<=0",
        "--workers",
        "2",
        "--out",
        `${dir}/plan`,
      ),
    ]);
    const reports = await Promise.all(
      ["seed-1", "seed-2"].map(async (d) =>
        JSON.parse(await Deno.readTextFile(`${dir}/${d}/report.json`)) as Report
      ),
    );

    await t.step("report.html", async () => {
      const report = reports[0];
      assert.ok(report.placementFailures.total > 0, "the scenario has placement failures to chart");
      assert.ok(report.preemptions.total > 0, "the scenario has preemptions to chart");
      const { charts, errors } = await openPage(browser, `${dir}/seed-1/report.html`);
      assert.deepEqual(errors, [], "report.html: console errors");
      checkCharts("report.html", charts, expectedReportCharts(report));
      const failures = charts.find((c) => c.title.startsWith("Failed placement attempts"))!;
      assert.deepEqual(
        failures.labels.filter((l) => l !== "all reasons" && l !== HANDED_BACK).sort(),
        Object.keys(report.placementFailures.byReason).sort(),
        "one line per placement failure reason",
      );
    });

    await t.step("compare.html", async () => {
      await sim("compare", `${dir}/seed-1`, `${dir}/seed-2`, "--out", `${dir}/cmp`);
      const { charts, errors } = await openPage(browser, `${dir}/cmp/compare.html`);
      assert.deepEqual(errors, [], "compare.html: console errors");
      checkCharts("compare.html", charts, expectedComparisonCharts(["seed-1", "seed-2"], reports));
    });

    await t.step("plan.html", async () => {
      const outcome = JSON.parse(await Deno.readTextFile(`${dir}/plan/plan.json`)) as PlanOutcome;
      assert.ok(outcome.points.length >= 2, "the plan has a curve");
      const { charts, errors } = await openPage(browser, `${dir}/plan/plan.html`);
      assert.deepEqual(errors, [], "plan.html: console errors");
      checkCharts("plan.html", charts, [
        {
          what: "the curve",
          title: /^tasks\.unplaced against hosts\.std\.count/,
          labels: ["tasks.unplaced", "target"],
        },
      ]);
    });
  } finally {
    await browser.close();
    await Deno.remove(dir, { recursive: true });
  }
});
