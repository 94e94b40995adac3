/** Tests of plan targets: the report fields a target may name, checked against a real run's report. */
import assert from "node:assert/strict";
import { plan, type PlanTarget, reportNames, TARGET_FIELDS, targetField, valueAt } from "./plan.ts";
import { runVariant } from "./plan_worker.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { PLAN_SCENARIO } from "./testing.ts";

/** Every number in `x` by path, a map's keys replaced by the placeholder TARGET_FIELDS uses. */
function numberPaths(x: unknown, path: string[] = []): string[] {
  if (typeof x === "number") return [path.join(".")];
  if (!x || typeof x !== "object" || Array.isArray(x)) return [];
  const at = path.join(".");
  const placeholder = {
    pools: "<pool>",
    workloads: "<workload>",
    "jobs.byState": "<state>",
    launchesByHostClass: "<workload>",
    "launchesByHostClass.<workload>": "<class>",
  }[at] ?? (at === "placementFailures.byReason" ? "<reason>" : undefined);
  return Object.entries(x).flatMap(([k, v]) => numberPaths(v, [...path, placeholder ?? k]));
}

/**
 * A task no host can take (no host has its attribute): its placement fails once placement gives up on it
 * (a batch task after 500 s), so the run's report has a failure reason.
 */
const UNPLACEABLE =
  `  - { name: gpu, respool: /p, type: BATCH, arrival: { at: [0] }, instances: 1, durationSec: 60, cpu: 1,
      memoryMb: 1024, hostAttributes: { host_pool: gpu } }
`;

async function planFile(extra = ""): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  const yaml = extra
    ? PLAN_SCENARIO.replace("durationSec: 120", "durationSec: 900").replace("settings:", `${extra}settings:`)
    : PLAN_SCENARIO;
  await Deno.writeTextFile(file, yaml);
  return file;
}

Deno.test("TARGET_FIELDS are exactly the numbers of a report a plan worker sends back", async () => {
  const file = await planFile(UNPLACEABLE);
  try {
    // 9 hosts for 40 tasks and one no host takes: failure reasons, waiting instances, job states.
    const r = await runVariant({ file, path: "hosts.std.count", value: 9, seed: 1 });
    assert.ok(r.ok, r.ok ? "" : r.error);
    const report = r.report;
    assert.ok(Object.keys(report.placementFailures.byReason).length > 0, "a failure reason to map");
    assert.ok(Object.keys(report.jobs.byState).length > 0, "a job state to map");
    const found = [...new Set(numberPaths(report))].sort();
    assert.deepEqual(found, [...TARGET_FIELDS].sort());
    // The map keys the parser checks names against are the report's.
    const names = reportNames((await loadScenarioFile(file)).scenario);
    assert.deepEqual(names.pools, Object.keys(report.pools));
    assert.deepEqual(names.workloads, Object.keys(report.workloads));
    assert.deepEqual(names.workloads, Object.keys(report.launchesByHostClass));
    assert.deepEqual(names.hostClasses, Object.keys(report.launchesByHostClass.w));
    assert.deepEqual(
      names.poolsWithWorkloads,
      Object.keys(report.pools).filter((p) => report.pools[p].queueDelaySeconds),
    );
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("targetField finds names with dashes, dots and slashes, and refuses unknown ones by name", () => {
  const names = {
    workloads: ["spark-ml", "a.b", "a"],
    pools: ["/services", "/services/web", "/idle"],
    poolsWithWorkloads: ["/services", "/services/web"],
    hostClasses: ["std", "gpu-a100"],
  };
  const keys = (field: string) => targetField(field, names).keys;
  assert.deepEqual(targetField("launchesByHostClass.spark-ml.gpu-a100", names), {
    keys: ["launchesByHostClass", "spark-ml", "gpu-a100"],
    zeroIfMissing: true,
  });
  assert.deepEqual(keys("queueDelaySeconds.p99"), ["queueDelaySeconds", "p99"]);
  assert.deepEqual(keys("workloads.spark-ml.queueDelaySeconds.p99"), [
    "workloads",
    "spark-ml",
    "queueDelaySeconds",
    "p99",
  ]);
  assert.deepEqual(keys("workloads.a.b.jobs"), ["workloads", "a.b", "jobs"]);
  assert.deepEqual(keys("workloads.a.jobs"), ["workloads", "a", "jobs"]);
  assert.deepEqual(keys("pools./services/web.queueDelaySeconds.waiting"), [
    "pools",
    "/services/web",
    "queueDelaySeconds",
    "waiting",
  ]);
  assert.deepEqual(keys("pools./idle.preempted"), ["pools", "/idle", "preempted"]);
  assert.deepEqual(targetField("placementFailures.byReason.no host with 4 free GPUs", names), {
    keys: ["placementFailures", "byReason", "no host with 4 free GPUs"],
    zeroIfMissing: true,
  });
  assert.deepEqual(targetField("jobs.byState.SUCCEEDED", names).zeroIfMissing, true);
  const refused: [string, RegExp][] = [
    [
      "queueDelaySeconds.p999",
      /: the report has no field queueDelaySeconds\.p999; expected one of queueDelaySeconds\.p50, /,
    ],
    ["workloads.web.jobs", /the scenario has no workload "web" \(spark-ml, a\.b, a\)$/],
    ["pools./batch.preempted", /the scenario has no pool "\/batch" \(\/services, \/services\/web, \/idle\)$/],
    ["launchesByHostClass.web.std", /the scenario has no workload "web" \(spark-ml, a\.b, a\)$/],
    [
      "launchesByHostClass.a.big",
      /: the report has no field launchesByHostClass\.a\.big; expected one of launchesByHostClass\.<workload>\.<class>$/,
    ],
    ["pools./idle.queueDelaySeconds.p99", /no workload submits to pool \/idle or its children$/],
    [
      "workloads.a.nope",
      /: the report has no field workloads\.a\.nope; expected one of workloads\.<workload>\.jobs, /,
    ],
    ["jobs.byState.DONE", /: the report has no field jobs\.byState\.DONE/],
    ["tasks", /: the report has no field tasks; expected one of tasks\.submitted, /],
    ["series.t", /: the report has no field series\.t; expected a number under one of seed, hosts, /],
  ];
  for (const [field, message] of refused) assert.throws(() => targetField(field, names), message, field);
});

Deno.test("valueAt reads a count a map left out as 0, and a missing optional field as an error", () => {
  const target = (path: string): PlanTarget => ({
    path,
    op: "<=",
    value: 0,
    text: `${path}<=0`,
    ...targetField(path, { workloads: [], pools: ["/p"], poolsWithWorkloads: [], hostClasses: [] }),
  });
  const report = { jobs: { byState: { RUNNING: 3 } }, pools: { "/p": { preempted: 2 } } };
  assert.equal(valueAt(report, target("jobs.byState.RUNNING")), 3);
  assert.equal(valueAt(report, target("jobs.byState.FAILED")), 0);
  assert.equal(valueAt(report, target("pools./p.preempted")), 2);
  assert.throws(
    () => valueAt(report, target("pools./p.avgAllocationCpu")),
    /no number at pools\.\/p\.avgAllocationCpu/,
  );
});

Deno.test("plan meets a per-workload and a per-pool target", async () => {
  const file = await planFile();
  try {
    const names = reportNames((await loadScenarioFile(file)).scenario);
    // Waiting instances at the end are the unplaced ones: max(0, 40 - 4 × hosts), none from 10 hosts on.
    for (
      const target of ["workloads.w.queueDelaySeconds.waiting<=0", "pools./p.queueDelaySeconds.waiting<=0"]
    ) {
      const o = await plan({
        file,
        vary: "hosts.std.count=1..20",
        target,
        names,
        seed: 1,
        workers: 2,
        run: (jobs) => Promise.all(jobs.map(runVariant)),
      });
      assert.equal(o.answer, 10, target);
      for (const p of o.points) {
        assert.equal(p.metric, Math.max(0, 40 - 4 * p.value), `${target} at ${p.value}`);
      }
    }
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("plan refuses a target the report does not have before running anything", async () => {
  const names = { workloads: ["w"], pools: ["/p"], poolsWithWorkloads: ["/p"], hostClasses: ["std"] };
  const ran: number[] = [];
  for (const target of ["queueDelaySeconds.p999<=60", "workloads.nope.jobs>=1", "pools./p.nope<=1"]) {
    await assert.rejects(
      plan({
        file: "never-read.yaml",
        vary: "hosts.std.count=1..20",
        target,
        names,
        seed: 1,
        workers: 2,
        run: (jobs) => {
          ran.push(...jobs.map((j) => j.value));
          return Promise.resolve([]);
        },
      }),
      new RegExp(`--target ${target.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}: the report has no field`),
    );
  }
  assert.deepEqual(ran, [], "no variant ran");
});
