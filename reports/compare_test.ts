/** The comparison table: the numbers a scenario's question needs are rows of it, in every form it takes. */
import assert from "node:assert/strict";
import { buildReport, type Report } from "./report.ts";
import {
  compareDrains,
  compareReports,
  comparisonText,
  renderComparison,
  reportProblems,
} from "./compare.ts";
import { formatNumber } from "./charts.ts";
import { runScenario } from "../sim/runner.ts";
import { inlineScenario, rackScenario } from "../sim/testing.ts";

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
  "preemptions.beingKilled.total",
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
  // A reschedule count includes the instances still waiting to run again: its label says so, and the
  // waiting row is a part of it, not more runs beside it.
  assert.ok(b.rescheduleDelaySeconds.count >= b.rescheduleDelaySeconds.waiting);
  const label = (path: string) => c.rows.find((r) => r.path === path)!.metric;
  assert.deepEqual(
    ["", ".afterKill", ".afterLoss"].map((split) => [
      label(`rescheduleDelaySeconds${split}.count`),
      label(`rescheduleDelaySeconds${split}.waiting`),
    ]),
    [
      ["run again: ran again or waiting to", "run again: of them, waiting at end"],
      ["after a kill: ran again or waiting to", "after a kill: of them, waiting at end"],
      ["after a loss: ran again or waiting to", "after a loss: of them, waiting at end"],
    ],
  );
});

/** `rackScenario` with 24 instances unless told. */
const drains = (events: string, instances = 24, sla?: number) => rackScenario(events, { instances, sla });

const RACK_0 = "  - {atSec: 60, drain: {rack: std-rack-0}, durationSec: 120}";
const RACK_1 = "  - {atSec: 150, drain: {rack: std-rack-1}, durationSec: 60}";
const drainSeconds = (r: Report) => r.events.filter((e) => e.kind === "drain").map((e) => e.drainSeconds);

Deno.test("compare lists each drain event with every run's drain time, — where a run has no such event", async () => {
  const held = await report(drains(RACK_0, 24, 1));
  const free = await report(drains(RACK_0));
  // 48 instances fill all 12 hosts: the one the SLA lets go has nowhere to run, so the rack never drains.
  const stuck = await report(drains(RACK_0, 48, 1));
  // Another rack drained later, and not the first.
  const other = await report(drains(RACK_1));
  const [slow] = drainSeconds(held), [fast] = drainSeconds(free);
  assert.ok(
    typeof slow === "number" && typeof fast === "number" && slow > fast,
    `${slow} s against ${fast} s`,
  );
  assert.deepEqual(drainSeconds(stuck), [null]);
  const [late] = drainSeconds(other);
  assert.ok(typeof late === "number", String(late));

  const list = [held, free, stuck, other].map((report, i) => ({
    name: ["held", "free", "stuck", "other"][i],
    report,
  }));
  const c = compareReports(list);
  assert.deepEqual(c.drains, [
    {
      event: "drain rack std-rack-0 at 60 s",
      atSec: 60,
      target: "rack std-rack-0",
      drainSeconds: [slow, fast, null, null],
      status: ["drained", "drained", "not drained", "no such event"],
      tasksLeft: [null, null, 15, null],
    },
    {
      event: "drain rack std-rack-1 at 150 s",
      atSec: 150,
      target: "rack std-rack-1",
      drainSeconds: [null, null, null, late],
      status: ["no such event", "no such event", "no such event", "drained"],
      tasksLeft: [null, null, null, null],
    },
  ]);

  const text = comparisonText(c).split("\n");
  const cells = (label: string) =>
    text.find((l) => l.startsWith(`${label} `))?.slice(label.length).trim().split(/\s{2,}/);
  assert.deepEqual(cells("drain: s until no task left"), ["held", "free", "stuck", "other"]);
  const fmt = formatNumber;
  assert.deepEqual(cells("drain rack std-rack-0 at 60 s"), [
    fmt(slow),
    fmt(fast),
    "not drained, 15 tasks left",
    "—",
  ]);
  assert.deepEqual(cells("drain rack std-rack-1 at 150 s"), ["—", "—", "—", fmt(late)]);

  const html = renderComparison(list, { js: "", css: "" });
  assert.match(
    html,
    /<h2>Drains \(seconds from the start of the maintenance until its last host had no task left\)<\/h2>/,
  );
  const n = (x: number) => `<td class="n">${fmt(x)}</td>`;
  assert.ok(
    html.includes(
      `<tr><td>drain rack std-rack-0 at 60 s</td>${n(slow)}${
        n(fast)
      }<td>not drained, 15 tasks left</td><td>—</td></tr>`,
    ),
    "compare.html: rack 0's drain in each run",
  );
  assert.ok(
    html.includes(`<tr><td>drain rack std-rack-1 at 150 s</td><td>—</td><td>—</td><td>—</td>${n(late)}</tr>`),
    "compare.html: rack 1's drain in the last run only",
  );
});

Deno.test("compare without drain events has no drains, in compare.json, the terminal or compare.html", async () => {
  const lost = await report(drains("  - {atSec: 60, loseRack: std-rack-0, recoverAfterSec: 60}"));
  const list = [{ name: "a", report: lost }, { name: "b", report: lost }];
  const c = compareReports(list);
  assert.ok(!("drains" in c), "compare.json has no drains");
  assert.doesNotMatch(comparisonText(c), /drain:|drain rack/);
  assert.doesNotMatch(renderComparison(list, { js: "", css: "" }), /Drains|drain event/);
});

Deno.test("compare matches a run's nth drain of a target at a time; one a run lacks does not shift the others", () => {
  const at = (atSec: number, rack: string, drainSeconds?: number | null) => ({
    atSec,
    kind: "drain",
    detail: `maintenance (rack ${rack})`,
    hosts: 4,
    ...(drainSeconds === undefined ? {} : { drainSeconds }),
  });
  const a = { events: [at(60, "r0", 5), at(60, "r0", 7), at(90, "r1", 2)] } as unknown as Report;
  // An earlier drain of another rack, one drain of r0 instead of two, and a report from before drains were timed.
  const b = { events: [at(30, "r2", 1), at(60, "r0", 6), at(90, "r1")] } as unknown as Report;
  const rows = compareDrains([{ name: "a", report: a }, { name: "b", report: b }]);
  assert.deepEqual(rows.map((r) => [r.event, r.drainSeconds, r.status]), [
    ["drain rack r2 at 30 s", [null, 1], ["no such event", "drained"]],
    ["drain rack r0 at 60 s", [5, 6], ["drained", "drained"]],
    ["drain rack r0 at 60 s (#2)", [7, null], ["drained", "no such event"]],
    ["drain rack r1 at 90 s", [2, null], ["drained", "not timed"]],
  ]);
});

Deno.test("compare shows a delay nothing measured (null) as an empty cell and '-', not as 0", async () => {
  // No run is killed or lost: the reschedule delays have no samples, their percentiles null.
  const quiet = await report(MOVES.replace(/^events:\n( {2}- .*\n)+/m, ""));
  assert.equal(quiet.rescheduleDelaySeconds.count, 0);
  const list = [{ name: "a", report: quiet }, { name: "b", report: quiet }];
  const c = compareReports(list);
  const row = c.rows.find((r) => r.path === "rescheduleDelaySeconds.p99")!;
  assert.deepEqual([row.values, row.change], [[null, null], [null, null]]);
  const line = comparisonText(c).split("\n").find((l) => l.startsWith(`${row.metric} `))!;
  assert.deepEqual(line.slice(row.metric.length).trim().split(/\s+/), ["-", "-"]);
  const html = renderComparison(list, { js: "", css: "" });
  assert.ok(html.includes(`<tr><td>${row.metric}</td><td></td><td></td><td></td></tr>`), "empty cells");
  // A count is a number still: 0 runs ran again.
  assert.deepEqual(c.rows.find((r) => r.path === "rescheduleDelaySeconds.count")!.values, [0, 0]);
});

Deno.test("compare.html shows every digit the terminal does: values 3 decimals would make equal stay apart", async () => {
  const a = await report(MOVES);
  const b: Report = { ...a, utilization: { ...a.utilization, cpu: 0.9996 } };
  const c: Report = { ...a, utilization: { ...a.utilization, cpu: 1.0004 }, launchesPerSec: 12345.6789 };
  const list = [{ name: "b", report: b }, { name: "c", report: c }];
  const html = renderComparison(list, { js: "", css: "" });
  const cmp = compareReports(list);
  const text = comparisonText(cmp).split("\n");
  const terminal = (label: string) => text.find((l) => l.startsWith(`${label} `))!.slice(label.length).trim();
  // 0.9996 read "1" beside a change of +0.1% (and 1.0004 read "1" too).
  assert.ok(
    html.includes(
      `<tr><td>utilization cpu</td><td class="n">0.9996</td><td class="n">1.0004</td><td>+0.1%</td></tr>`,
    ),
    "compare.html: utilization cpu as the terminal has it",
  );
  assert.deepEqual(terminal("utilization cpu").split(/\s+/), ["0.9996", "1.0004"]);
  assert.ok(html.includes(`<td class="n">12,345.6789</td>`), "grouped, with all its fraction digits");
});

Deno.test("a report compare cannot read is named by each field it lacks or that has another type", async () => {
  const good = await report(MOVES);
  assert.deepEqual(reportProblems(good), []);
  assert.deepEqual(reportProblems(JSON.parse(JSON.stringify(good))), [], "as read back from report.json");
  // An older report lacks fields compare shows as blanks: it is still one.
  const { jobs: _j, events: _e, endedEarly: _x, fairnessHeld: _f, ...older } = good;
  assert.deepEqual(reportProblems(older), []);
  // The shape the CLI used to check alone: it passed, then renderComparison threw on simulatedSeconds.
  assert.deepEqual(reportProblems({ tasks: {}, pools: {}, series: {}, poolSeries: {} }), [
    'no "scenario", "description", "seed", "simulatedSeconds", "series.t"',
  ]);
  assert.deepEqual(reportProblems([]), ["it is an array, expected an object"]);
  const bad = {
    ...good,
    simulatedSeconds: "300",
    tasks: { ...good.tasks, launched: "8" },
    jobs: { ...good.jobs, stuck: null },
    pools: { ...good.pools, "/p": 3 },
    series: { ...good.series, t: "0,10" },
    events: [{ atSec: 60, kind: "drain", detail: 5 }],
  };
  assert.deepEqual(reportProblems(bad), [
    '"simulatedSeconds" is a string, expected a number',
    '"jobs.stuck" is null, expected a number',
    '"tasks.launched" is a string, expected a number',
    '"series.t" is a string, expected an array of numbers',
    '"pools./p" is a number, expected an object',
    '"events[0].detail" is a number, expected a string',
  ]);
});
