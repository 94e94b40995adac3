/** Tests of what-if edits by path: names with dots, and which fields take whole numbers only. */
import assert from "node:assert/strict";
import { applyOverride, checkOverridePath, isWholeNumberField } from "./overrides.ts";
import { inlineScenario, PLAN_SCENARIO } from "./testing.ts";

/** PLAN_SCENARIO with host classes `m5.xlarge`, `a` and `a.b`, and workloads `spark.etl` (at a rate) and `w`. */
const DOTTED = inlineScenario(
  PLAN_SCENARIO
    .replace(
      "  - { name: std, count: 2, cpu: 4, memoryMb: 16384, diskMb: 100000 }",
      [
        "  - { name: m5.xlarge, count: 2, cpu: 4, memoryMb: 16384, diskMb: 100000 }",
        "  - { name: a, count: 3, cpu: 4, memoryMb: 16384, diskMb: 100000 }",
        "  - { name: a.b, count: 4, cpu: 4, memoryMb: 16384, diskMb: 100000 }",
      ].join("\n"),
    )
    .replace(
      "settings:",
      "  - { name: spark.etl, respool: /p, type: BATCH, arrival: { ratePerSec: 0.05 }, instances: 2, " +
        "durationSec: 60, cpu: 1, memoryMb: 1024 }\nsettings:",
    ),
);

Deno.test("applyOverride finds host classes and workloads whose names hold dots, the longest name first", () => {
  const count = (s: ReturnType<typeof applyOverride>, name: string) =>
    s.hostClasses.find((c) => c.name === name)!.count;
  const m5 = applyOverride(DOTTED, "hosts.m5.xlarge.count", 10);
  assert.equal(count(m5, "m5.xlarge"), 10);
  // Of "a" and "a.b", hosts.a.b.count is a.b's count; hosts.a.count is a's.
  const ab = applyOverride(DOTTED, "hosts.a.b.count", 9);
  assert.deepEqual([count(ab, "a"), count(ab, "a.b")], [3, 9]);
  const a = applyOverride(DOTTED, "hosts.a.count", 7);
  assert.deepEqual([count(a, "a"), count(a, "a.b")], [7, 4]);
  const etl = applyOverride(DOTTED, "workloads.spark.etl.arrival.ratePerSec", 0.5);
  assert.deepEqual(etl.workloads.find((w) => w.name === "spark.etl")!.arrival, { ratePerSec: 0.5 });
});

Deno.test("checkOverridePath names every name it tried when no class or workload matches", () => {
  assert.throws(
    () => checkOverridePath(DOTTED, "hosts.m5.large.count"),
    new Error('--vary hosts.m5.large.count: no host class "m5" or "m5.large" (m5.xlarge, a, a.b)'),
  );
  assert.throws(
    () => checkOverridePath(DOTTED, "workloads.spark.count"),
    new Error('--vary workloads.spark.count: no workload "spark" (w, spark.etl)'),
  );
  assert.throws(
    () => checkOverridePath(DOTTED, "hosts.m5.xlarge"),
    new Error('--vary hosts.m5.xlarge: expected a field after "hosts.m5.xlarge"'),
  );
  assert.throws(
    () => checkOverridePath(DOTTED, "hosts"),
    new Error("--vary hosts: expected hosts.<host class>.<field>, the host class one of m5.xlarge, a, a.b"),
  );
});

Deno.test("isWholeNumberField goes by the scenario format's type of the field, not by the value", () => {
  const whole = [
    "hosts.m5.xlarge.count",
    "hosts.a.racks",
    "workloads.w.instances",
    "workloads.w.priority",
    "workloads.w.ports",
    "workloads.spark.etl.maxJobs",
  ];
  const fractional = [
    "hosts.m5.xlarge.cpu",
    "workloads.spark.etl.arrival.ratePerSec",
    "workloads.w.cpu",
    "workloads.w.failureRate",
    "settings.rpcLatencyMs",
    "settings.warmupSec",
    "durationSec",
  ];
  for (const near of [0, 1, 40]) {
    for (const path of whole) {
      assert.equal(isWholeNumberField(DOTTED, path, near), true, `${path} near ${near}`);
    }
    for (const path of fractional) {
      assert.equal(isWholeNumberField(DOTTED, path, near), false, `${path} near ${near}`);
    }
  }
  // A distribution's bound of instances is whole too, as its union checks it.
  const drawn = inlineScenario(PLAN_SCENARIO.replace("instances: 40", "instances: { uniform: [1, 40] }"));
  assert.equal(isWholeNumberField(drawn, "workloads.w.instances.uniform.1", 1), true);
});
