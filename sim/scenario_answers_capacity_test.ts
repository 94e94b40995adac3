/**
 * add-capacity.yaml answers the question its opening comment asks (a file of its own: its hour of a saturated
 * cluster is the longest of the scenario answers, and runs beside the others).
 */
import assert from "node:assert/strict";
import { maxBetween, scenarioReport as report } from "./testing.ts";

Deno.test("add-capacity: doubled Spark load queues work on 400 hosts, and 400 more hosts clear it", async () => {
  const r = await report("add-capacity.yaml");
  const s = r.series;
  assert.ok(maxBetween(r, s.queueDelayP99, 0, 1200) < 5, "one team's load fits");
  assert.ok(maxBetween(r, s.cpuUtil, 1500, 2400) > 0.95, "the doubled load fills the cluster");
  assert.ok(maxBetween(r, s.queueDelayP99, 1500, 2400) > 60, "and work queues for minutes");
  assert.equal(maxBetween(r, s.hostsUp, 2500, 3600), 800);
  assert.ok(maxBetween(r, s.queueDelayP99, 2600, 3600) < 5, "the added hosts clear the backlog");
  // The pending-queue chart shows the backlog: most of it admitted and waiting for a host.
  const waiting = s.t.map((_, i) => s.queuedTasks[i] + s.placingTasks[i]);
  assert.ok(maxBetween(r, s.placingTasks, 2200, 2400) > 1000, "admitted work waits for hosts");
  assert.ok(maxBetween(r, waiting, 2200, 2400) > 1500);
  assert.equal(maxBetween(r, waiting, 2420, 2600), 0, "and none once the hosts are added");
  // The scenario's comment: a small part of the p99 queue delay is waiting for admission (for the entitlement
  // a full cluster caps: /spark's stays far below its limit).
  const q = r.queueDelaySeconds.p99!, a = r.admissionDelaySeconds.p99!;
  assert.ok(q > 250 && q < 350 && a > 10 && a < 30, `admission p99 ${a} s of a queue delay p99 of ${q} s`);
  const spark = r.poolSeries["/spark"];
  assert.ok(maxBetween(r, spark.entitlementCpu, 1700, 2400) <= 12_800, "within the cluster's 12,800 cores");
  assert.ok(maxBetween(r, spark.allocationCpu, 1700, 2400) < 60_000 / 4, "far below /spark's limit");
});
