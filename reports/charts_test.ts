/** The tables of the report, comparison and plan pages: numbers as precise as report.json has them. */
import assert from "node:assert/strict";
import { formatNumber, table } from "./charts.ts";
import { renderPlan } from "./plan_html.ts";

Deno.test("table cells keep every digit of a number, grouped", () => {
  // toLocaleString's default kept 3 fraction digits: 0.0397 and 0.0496 read 0.04 and 0.05, 0.9996 read 1.
  const cases: [number, string][] = [
    [0.0397, "0.0397"],
    [0.9996, "0.9996"],
    [1.0004, "1.0004"],
    [1234567, "1,234,567"],
    [12345.6789, "12,345.6789"],
    [-0.00012, "-0.00012"],
    [0, "0"],
    [1e-25, "1e-25"],
  ];
  for (const [v, shown] of cases) {
    assert.equal(formatNumber(v), shown, String(v));
    assert.equal(
      table(["x"], [[v]]),
      `<table><tr><th>x</th></tr><tr><td class="n">${shown}</td></tr></table>`,
    );
  }
});

Deno.test("plan.html shows varied values and metrics as plan.json has them", () => {
  const page = renderPlan({
    scenario: "s.yaml",
    vary: "workloads.w.arrival.ratePerSec",
    range: { lo: 0.0397, hi: 0.0496 },
    target: "queueDelaySeconds.p99<=60",
    seed: 1,
    answer: 0.0496,
    resolution: 0.0099,
    points: [
      { value: 0.0397, metric: 59.9996, met: true, wallSeconds: 1.25 },
      { value: 0.0496, metric: 60.0004, met: false, wallSeconds: 1.5 },
    ],
    rounds: 1,
    note: "n",
  }, { js: "", css: "" });
  for (const shown of ["0.0397", "0.0496", "59.9996", "60.0004"]) {
    assert.ok(page.includes(`<td class="n">${shown}</td>`), `plan.html shows ${shown}`);
  }
});
