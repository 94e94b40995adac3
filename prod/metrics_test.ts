/** Prometheus text format: counters, gauges read at scrape time, histograms with buckets. */
import assert from "node:assert/strict";
import { PromMetrics } from "./metrics.ts";

Deno.test("metrics render in Prometheus's text format", () => {
  const m = new PromMetrics({ daemon: "jobmgr" });
  m.counter("placement_tasks_placed_total").inc(3);
  let depth = 0;
  m.collect(() => m.gauge("queue_depth", { pool: '/a"b' }).set(depth));
  const h = m.histogram("api_seconds", { procedure: "X::Y" });
  h.observe(0.004);
  h.observe(2);
  depth = 7;
  const text = m.render();
  assert.match(
    text,
    /^# TYPE placement_tasks_placed_total counter\nplacement_tasks_placed_total\{daemon="jobmgr"\} 3$/m,
  );
  assert.match(text, /^queue_depth\{daemon="jobmgr",pool="\/a\\"b"\} 7$/m);
  assert.match(text, /^api_seconds_bucket\{daemon="jobmgr",procedure="X::Y",le="0.005"\} 1$/m);
  assert.match(text, /^api_seconds_bucket\{daemon="jobmgr",procedure="X::Y",le="\+Inf"\} 2$/m);
  assert.match(text, /^api_seconds_count\{daemon="jobmgr",procedure="X::Y"\} 2$/m);
});
