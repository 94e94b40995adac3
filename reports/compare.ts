/** Compares reports side by side: headline numbers (with changes against the first), drain times, overlaid charts. */
import type { Report } from "./report.ts";
import { type Chart, esc, renderPage, table, type UplotAssets } from "./charts.ts";

/** A report and the name it goes by in the comparison (its directory). */
export interface Named {
  name: string;
  report: Report;
}

/** Headline numbers compared, as (label, path in the report). */
export const COMPARED: [string, string][] = [
  ["hosts", "hosts"],
  ["simulated s", "simulatedSeconds"],
  ["tasks submitted", "tasks.submitted"],
  ["tasks launched", "tasks.launched"],
  ["tasks succeeded", "tasks.succeeded"],
  ["tasks failed", "tasks.failed"],
  ["tasks killed", "tasks.killed"],
  ["tasks lost", "tasks.lost"],
  ["tasks preempted", "tasks.preempted"],
  ["tasks drained for maintenance", "preemptions.maintenance"],
  // Preempted or drained runs whose kill status had not come back by the end: in none of the counts above.
  ["preempted or drained: being killed at end", "preemptions.beingKilled.total"],
  ["tasks unplaced", "tasks.unplaced"],
  ["launches/s", "launchesPerSec"],
  ["queue delay p50 s", "queueDelaySeconds.p50"],
  ["queue delay p90 s", "queueDelaySeconds.p90"],
  ["queue delay p99 s", "queueDelaySeconds.p99"],
  ["queue: waiting at end", "queueDelaySeconds.waiting"],
  ["admission delay p50 s", "admissionDelaySeconds.p50"],
  ["admission delay p90 s", "admissionDelaySeconds.p90"],
  ["admission delay p99 s", "admissionDelaySeconds.p99"],
  ["admission: waiting at end", "admissionDelaySeconds.waiting"],
  // Killed or lost runs whose instances ran again or wait to at the end (those count with their wait so
  // far; the waiting row is a part of the count), and how long they waited to run again.
  ["run again: ran again or waiting to", "rescheduleDelaySeconds.count"],
  ["run again: of them, waiting at end", "rescheduleDelaySeconds.waiting"],
  ["run again: delay p50 s", "rescheduleDelaySeconds.p50"],
  ["run again: delay p99 s", "rescheduleDelaySeconds.p99"],
  ["after a kill: ran again or waiting to", "rescheduleDelaySeconds.afterKill.count"],
  ["after a kill: of them, waiting at end", "rescheduleDelaySeconds.afterKill.waiting"],
  ["after a kill: delay p50 s", "rescheduleDelaySeconds.afterKill.p50"],
  ["after a kill: delay p99 s", "rescheduleDelaySeconds.afterKill.p99"],
  ["after a loss: ran again or waiting to", "rescheduleDelaySeconds.afterLoss.count"],
  ["after a loss: of them, waiting at end", "rescheduleDelaySeconds.afterLoss.waiting"],
  ["after a loss: delay p50 s", "rescheduleDelaySeconds.afterLoss.p50"],
  ["after a loss: delay p99 s", "rescheduleDelaySeconds.afterLoss.p99"],
  ["utilization cpu", "utilization.cpu"],
  ["utilization memory", "utilization.memory"],
  ["utilization gpu", "utilization.gpu"],
  // Of utilization cpu, the part revocable tasks hold (reports from before it have none).
  ["utilization cpu, revocable", "utilization.revocableCpu"],
  ["fairness (Jain)", "fairness"],
  ["fairness held on hosts (Jain)", "fairnessHeld"],
  // Reports from before hand-backs were counted apart counted only them, as the total.
  ["failed placement attempts", "placementFailures.total"],
  ["tasks handed back unplaced", "placementFailures.handedBack.total"],
  ["wall s", "wallSeconds"],
  ["peak RSS GiB", "peakRssBytes"],
];

/** Series overlaid, one chart each, one line per report. */
const OVERLAID: [keyof Report["series"], string, string][] = [
  ["cpuUtil", "cpu utilization (allocated fraction)", "fraction"],
  ["memUtil", "memory utilization (allocated fraction)", "fraction"],
  ["queuedTasks", "pending queue (waiting for admission)", "tasks"],
  ["placingTasks", "admitted, waiting for placement", "tasks"],
  ["runningTasks", "running tasks", "tasks"],
  ["queueDelayP99", "queue delay p99 per interval", "seconds"],
  ["queueDelayP50", "queue delay p50 per interval", "seconds"],
  ["launchesPerSec", "launches per second", "tasks/s"],
  ["preemptedTasks", "tasks preempted (cumulative)", "tasks"],
  ["fairness", "fairness (Jain)", "index"],
  ["fairnessHeld", "fairness (Jain) of cpu and gpu held on hosts", "index"],
];

/**
 * A headline number of a report; undefined for a field the report lacks (one from an older version) or did
 * not measure (null: a percentile of no delays), which the tables show as an empty cell ("-" in the
 * terminal), not as 0.
 */
function valueAt(report: unknown, path: string): number | undefined {
  let cur: unknown = report;
  for (const k of path.split(".")) {
    cur = cur && typeof cur === "object" ? (cur as Record<string, unknown>)[k] : undefined;
  }
  return typeof cur === "number" ? cur : undefined;
}

/** What a value is, as a problem names it: "a string", "null", "an array". */
function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v);

/** The pool fields the pools table reads. */
const POOL_COMPARED = ["avgAllocationCpu", "avgHeldCpu", "avgEntitlementCpu", "preempted"] as const;

/**
 * Why `x` is no report compare can read, one line per field it reads that is missing or of another type
 * (empty: it is one). Fields a report from an older version may lack are checked only when present; a
 * headline number that is not a number (nor null, a delay nothing measured) is refused, not shown as blank.
 */
export function reportProblems(x: unknown): string[] {
  if (!isRecord(x)) return [`it is ${kindOf(x)}, expected an object`];
  const missing: string[] = [], wrong: string[] = [], checked = new Set<string>();
  const check = (path: string, v: unknown, ok: boolean, expected: string, optional = false) => {
    if (checked.has(path)) return;
    checked.add(path);
    if (v === undefined && !optional) missing.push(`"${path}"`);
    else if (v !== undefined && !ok) wrong.push(`"${path}" is ${kindOf(v)}, expected ${expected}`);
  };
  const numbers = (v: unknown) => Array.isArray(v) && v.every((n) => n === null || typeof n === "number");
  for (const k of ["scenario", "description"]) check(k, x[k], typeof x[k] === "string", "a string");
  for (const k of ["seed", "simulatedSeconds"]) check(k, x[k], typeof x[k] === "number", "a number");
  for (const k of ["tasks", "pools", "series", "poolSeries"]) check(k, x[k], isRecord(x[k]), "an object");
  check("endedEarly", x.endedEarly, typeof x.endedEarly === "boolean", "true or false", true);
  check("jobs", x.jobs, isRecord(x.jobs), "an object", true);
  const stuck = isRecord(x.jobs) ? x.jobs.stuck : undefined;
  check("jobs.stuck", stuck, typeof stuck === "number", "a number", true);
  for (const [, path] of COMPARED) {
    const v = path.split(".").reduce<unknown>((cur, k) => (isRecord(cur) ? cur[k] : undefined), x);
    check(path, v, v === null || typeof v === "number", "a number", true);
  }
  const series = isRecord(x.series) ? x.series : {};
  check("series.t", series.t, numbers(series.t), "an array of numbers", !isRecord(x.series));
  for (const [key] of OVERLAID) {
    check(`series.${key}`, series[key], numbers(series[key]), "an array of numbers", true);
  }
  for (const [name, pool] of Object.entries(isRecord(x.pools) ? x.pools : {})) {
    const p = isRecord(pool) ? pool : {};
    check(`pools.${name}`, pool, isRecord(pool), "an object");
    for (const k of POOL_COMPARED) {
      check(`pools.${name}.${k}`, p[k], p[k] === null || typeof p[k] === "number", "a number", true);
    }
  }
  for (const [name, pool] of Object.entries(isRecord(x.poolSeries) ? x.poolSeries : {})) {
    const a = isRecord(pool) ? pool.allocationCpu : undefined;
    check(`poolSeries.${name}`, pool, isRecord(pool), "an object");
    check(`poolSeries.${name}.allocationCpu`, a, numbers(a), "an array of numbers", true);
  }
  check("events", x.events, Array.isArray(x.events), "an array", true);
  if (Array.isArray(x.events)) wrong.push(...eventProblems(x.events));
  return [...(missing.length ? [`no ${missing.join(", ")}`] : []), ...wrong];
}

/** The drain events' fields compare reads, each event named by its place in `events`. */
function eventProblems(events: unknown[]): string[] {
  return events.flatMap((e, i) => {
    if (!isRecord(e)) return [`"events[${i}]" is ${kindOf(e)}, expected an object`];
    if (e.kind !== "drain") return [];
    const problems: [string, boolean, string][] = [
      ["atSec", typeof e.atSec === "number", "a number"],
      ["detail", typeof e.detail === "string", "a string"],
      [
        "drainSeconds",
        e.drainSeconds === undefined || e.drainSeconds === null ||
        typeof e.drainSeconds === "number",
        "a number or null",
      ],
      [
        "drainPending",
        e.drainPending === undefined || e.drainPending === null ||
        (isRecord(e.drainPending) && typeof e.drainPending.tasks === "number"),
        "an object with tasks",
      ],
    ];
    return problems.filter(([, ok]) => !ok).map(([k, , expected]) =>
      `"events[${i}].${k}" is ${kindOf(e[k])}, expected ${expected}`
    );
  });
}

export interface Comparison {
  names: string[];
  /** Per report: its run was interrupted, so its numbers cover only `simulatedSeconds` of it. */
  endedEarly: boolean[];
  rows: { metric: string; path: string; values: (number | null)[]; change: (number | null)[] }[];
  pools: { pool: string; metric: string; values: (number | null)[] }[];
  /** The drain events of the runs and how long each took; absent when no run has one. */
  drains?: DrainRow[];
}

/**
 * What a run says of a drain event: drained after `drainSeconds`; not drained by the end of the run; no such
 * event in the run; or a report from before drains were timed.
 */
export type DrainStatus = "drained" | "not drained" | "no such event" | "not timed";

/** One drain event across the runs: the same target drained at the same time, matched in order. */
export interface DrainRow {
  /** "drain rack std-rack-3 at 600 s". */
  event: string;
  atSec: number;
  /** The hosts drained, as the event names them ("rack std-rack-3", "2 named"). */
  target: string;
  /** Per report: seconds from the start of the maintenance until its last host had no task left. */
  drainSeconds: (number | null)[];
  status: DrainStatus[];
  /** Per report: tasks still on the drain's hosts at the end of a run it did not drain in (else null). */
  tasksLeft: (number | null)[];
}

/** The table: each headline number per report, and its relative change against the first report. */
export function compareReports(list: Named[]): Comparison {
  const rows = COMPARED.map(([metric, path]) => {
    const values = list.map(({ report }) => {
      const v = valueAt(report, path);
      return v === undefined ? null : path === "peakRssBytes" ? round(v / 2 ** 30, 3) : v;
    });
    const base = values[0];
    const change = values.map((
      v,
    ) => (v === null || base === null || base === 0 ? null : round((v - base) / base, 4)));
    return { metric, path, values, change };
  });
  const poolNames = [...new Set(list.flatMap(({ report }) => Object.keys(report.pools)))].sort();
  const pools = poolNames.flatMap((pool) =>
    POOL_COMPARED.map((metric) => ({
      pool,
      metric,
      values: list.map(({ report }) => report.pools[pool]?.[metric] ?? null),
    }))
  );
  const drains = compareDrains(list);
  return {
    names: list.map((n) => n.name),
    endedEarly: list.map(({ report }) => report.endedEarly === true),
    rows,
    pools,
    ...(drains.length ? { drains } : {}),
  };
}

/**
 * The drain events of every run, in time order. A run's nth drain of a target at a time matches the other
 * runs' nth drain of that target at that time, so a run with a drain the others lack does not shift theirs.
 */
export function compareDrains(list: Named[]): DrainRow[] {
  const rows = new Map<string, { row: DrainRow; n: number }>();
  list.forEach(({ report }, i) => {
    const seen = new Map<string, number>();
    // Reports from before events were recorded have none.
    for (const e of (report.events ?? []).filter((e) => e.kind === "drain")) {
      const target = e.detail.match(/^maintenance \((.*)\)$/)?.[1] ?? e.detail;
      const same = `${e.atSec}\u0000${target}`;
      const n = seen.get(same) ?? 0;
      seen.set(same, n + 1);
      const key = `${same}\u0000${n}`;
      let entry = rows.get(key);
      if (!entry) {
        const event = `drain ${target} at ${e.atSec.toLocaleString("en-US")} s${n ? ` (#${n + 1})` : ""}`;
        const row: DrainRow = {
          event,
          atSec: e.atSec,
          target,
          drainSeconds: list.map(() => null),
          status: list.map(() => "no such event"),
          tasksLeft: list.map(() => null),
        };
        entry = { row, n };
        rows.set(key, entry);
      }
      entry.row.drainSeconds[i] = e.drainSeconds ?? null;
      entry.row.tasksLeft[i] = e.drainPending?.tasks ?? null;
      entry.row.status[i] = e.drainSeconds === undefined
        ? "not timed"
        : e.drainSeconds === null
        ? "not drained"
        : "drained";
    }
  });
  return [...rows.values()].sort((a, b) => a.row.atSec - b.row.atSec || a.n - b.n).map((x) => x.row);
}

/** A run's drain time as the tables show it. */
function drainCell(row: DrainRow, i: number): number | string {
  const status = row.status[i];
  if (status === "drained") return row.drainSeconds[i]!;
  const left = row.tasksLeft[i];
  if (status === "not drained" && left != null) return `not drained, ${left} tasks left`;
  return status === "no such event" ? "\u2014" : status;
}

/** One overlaid chart per series, on the union of the reports' sample times. */
export function comparisonCharts(list: Named[]): Chart[] {
  const x = [...new Set(list.flatMap(({ report }) => report.series.t))].sort((a, b) => a - b);
  // A series a report from an older version lacks leaves gaps.
  const aligned = (r: Report, values: number[] | undefined) => {
    const at = new Map(r.series.t.map((t, i) => [t, values?.[i]]));
    return x.map((t) => at.get(t) ?? null);
  };
  const charts: Chart[] = OVERLAID.map(([key, title, y]) => ({
    id: `cmp-${key}`,
    title,
    y,
    x,
    lines: list.map(({ name, report }) => ({
      label: name,
      values: aligned(report, report.series[key] as number[] | undefined),
    })),
  }));
  const shared = Object.keys(list[0].report.poolSeries).filter((p) =>
    list.every(({ report }) => p in report.poolSeries)
  );
  shared.slice(0, 8).forEach((pool, i) => {
    charts.push({
      id: `cmp-pool-${i}`,
      title: `Pool ${pool}: cpu allocation`,
      y: "cores",
      x,
      lines: list.map(({ name, report }) => ({
        label: name,
        values: aligned(report, report.poolSeries[pool].allocationCpu),
      })),
    });
  });
  return charts;
}

/** How a report's run ended, for the page's list of runs. */
function ending({ report }: Named): string {
  const at = report.simulatedSeconds.toLocaleString("en-US");
  if (report.endedEarly) return `partial: interrupted at ${at} simulated s`;
  const stuck = report.jobs?.stuck;
  return stuck
    ? `stopped at ${at} simulated s: ${stuck} ${stuck === 1 ? "job" : "jobs"} can never start`
    : "complete";
}

export function renderComparison(list: Named[], assets: UplotAssets): string {
  const c = compareReports(list);
  const pct = (x: number | null) => (x === null ? "" : `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`);
  const shown = c.names.map((n, i) => (c.endedEarly[i] ? `${n} (partial)` : n));
  const partial = list.filter(({ report }) => report.endedEarly);
  const banner = partial.length
    ? `<p class="partial" style="background:#fff3cd;border:1px solid #e0b400;padding:8px 12px">` +
      `<b>Partial ${partial.length === 1 ? "report" : "reports"}:</b> ${
        esc(partial.map((x) => `${x.name} (${ending(x)})`).join(", "))
      }. ${partial.length === 1 ? "Its" : "Their"} numbers cover only the part of the run before the ` +
      `interruption, so they do not compare like for like with a whole run.</p>`
    : "";
  const headline = table(
    ["metric", ...shown, ...shown.slice(1).map((n) => `${n} vs ${shown[0]}`)],
    c.rows.map((r) => [r.metric, ...r.values.map((v) => v ?? ""), ...r.change.slice(1).map(pct)]),
  );
  const pools = table(
    ["pool", "metric", ...shown],
    c.pools.map((p) => [p.pool, p.metric, ...p.values.map((v) => v ?? "")]),
  );
  const drains = c.drains
    ? `<h2>Drains (seconds from the start of the maintenance until its last host had no task left)</h2>${
      table(
        ["drain event", ...shown],
        c.drains.map((d) => [d.event, ...shown.map((_, i) => drainCell(d, i))]),
      )
    }`
    : "";
  const scenarios = table(
    ["report", "scenario", "seed", "run", "description"],
    list.map((x) => [x.name, x.report.scenario, String(x.report.seed), ending(x), x.report.description]),
  );
  return renderPage(
    `Comparison of ${list.length} runs`,
    [
      banner,
      scenarios,
      `<h2>Headline numbers</h2>${headline}`,
      `<h2>Pools (time-averages after warm-up)</h2>${pools}`,
      drains,
    ],
    comparisonCharts(list),
    assets,
  );
}

/** The table as text, for the terminal; a partial report's name is starred and explained below. */
export function comparisonText(c: Comparison): string {
  const partial = (i: number) => c.endedEarly[i];
  const names = c.names.map((n, i) => (partial(i) ? `${n}*` : n));
  const drains = c.drains ?? [];
  const drainsHeader = "drain: s until no task left";
  const widths = [
    Math.max(6, ...c.rows.map((r) => r.metric.length), ...drains.map((d) => d.event.length)),
    ...names.map((n) => Math.max(12, n.length)),
  ];
  if (drains.length) widths[0] = Math.max(widths[0], drainsHeader.length);
  const line = (cells: string[]) =>
    cells.map((s, i) => (i === 0 ? s.padEnd(widths[0]) : s.padStart(widths[i]))).join("  ");
  const fmt = (
    v: number | null,
  ) => (v === null ? "-" : Number.isInteger(v) ? v.toLocaleString("en-US") : String(v));
  const simulated = c.rows.find((r) => r.path === "simulatedSeconds");
  const notes = c.names.flatMap((n, i) =>
    partial(i)
      ? [
        `* ${n}: partial report, the run was interrupted at ${fmt(simulated?.values[i] ?? null)} simulated s`,
      ]
      : []
  );
  const drainLines = drains.length
    ? [
      "",
      line([drainsHeader, ...names]),
      ...drains.map((d) =>
        line([
          d.event,
          ...names.map((_, i) => {
            const v = drainCell(d, i);
            return typeof v === "number" ? fmt(v) : v;
          }),
        ])
      ),
    ]
    : [];
  return [
    line(["metric", ...names]),
    ...c.rows.map((r) => line([r.metric, ...r.values.map(fmt)])),
    ...drainLines,
    ...notes,
  ].join("\n");
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
