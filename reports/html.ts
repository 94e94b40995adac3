/** Renders a report as one self-contained HTML page with uPlot inlined, so it opens offline. */
import type { Report } from "./report.ts";
import { DEFAULT_PLACEMENT_CONFIG } from "../core/placement/engine.ts";
import { type Chart, esc, renderPage, table, type UplotAssets } from "./charts.ts";

export type { UplotAssets };

/** Pools that get charts of their own (the rest are in the JSON); keeps the page light on big trees. */
export const MAX_POOL_CHARTS = 12;

/** The queue chart's line of admitted tasks waiting for a host. */
export const PLACING = "admitted, waiting for placement";

/** A pool chart's line of what hosts hold of its allocation (tasks launched or running). */
export const HELD = "held on hosts";

/** What a pool's entitlement, allocation, held and demand are, as Peloton counts them. */
const POOL_TERMS = " (regular tasks; entitlement: the non-slack one; allocation: admitted tasks, on hosts " +
  `or still waiting for placement; ${HELD}: launched or running, averaged over each interval; demand: the ` +
  "pending queue; the others at each sample)";

/** The same for a pool's GPUs, which the pools' held series do not split out. */
const GPU_TERMS =
  " (regular tasks; entitlement: the non-slack one; allocation: admitted tasks, on hosts or " +
  "still waiting for placement; demand: the pending queue; at each sample)";

/** The same for a pool's revocable tasks, weighed against its slack entitlement. */
const SLACK_TERMS = " (revocable tasks, against the slack entitlement; allocation: admitted; " +
  `${HELD}: launched or running, averaged over each interval; demand: the pending queue)`;

/** The charts of one report, in page order. */
export function reportCharts(report: Report): Chart[] {
  const s = report.series;
  const x = s.t;
  const line = (label: string, values: (number | null)[]) => ({ label, values });
  const charts: Chart[] = [
    {
      id: "util",
      title: "Utilization by resource (the fraction of the hosts up that tasks hold over each interval: " +
        "resource-seconds held over resource-seconds up; cpu counts revocable tasks' too)",
      y: "fraction",
      x,
      lines: [
        line("cpu", s.cpuUtil),
        line("memory", s.memUtil),
        line("disk", s.diskUtil),
        line("gpu", s.gpuUtil),
      ],
    },
    {
      id: "queue",
      title: "Pending queue (tasks waiting for admission) and admitted tasks waiting for placement",
      y: "tasks",
      x,
      // Reports from before the placing series have only the queue.
      lines: [line("queued", s.queuedTasks), ...(s.placingTasks ? [line(PLACING, s.placingTasks)] : [])],
    },
    { id: "running", title: "Running tasks", y: "tasks", x, lines: [line("running", s.runningTasks)] },
    {
      id: "delay",
      title: "Queue delay of tasks that started running in each interval (from being asked for to running; " +
        "a gap: no task started in the interval)",
      y: "seconds",
      x,
      gaps: true,
      points: true,
      lines: [line("p50", s.queueDelayP50), line("p90", s.queueDelayP90), line("p99", s.queueDelayP99)],
    },
    {
      id: "launches",
      title: "Launches per second",
      y: "tasks/s",
      x,
      lines: [line("launches/s", s.launchesPerSec)],
    },
    {
      id: "preempted",
      title: "Tasks preempted (cumulative)",
      y: "tasks",
      x,
      lines: [line("preempted", s.preemptedTasks)],
    },
    // Reports from before these series have only the run's totals.
    ...(s.lostTasks
      ? [{
        id: "ended",
        title:
          "Tasks lost, killed and failed (cumulative; lost: with their host; killed: by preemption, a drain " +
          "or a stop; failed: a non-zero exit)",
        y: "tasks",
        x,
        lines: [line("lost", s.lostTasks), line("killed", s.killedTasks), line("failed", s.failedTasks)],
      }]
      : []),
    failureChart(report),
    {
      id: "fairness",
      title:
        "Fairness: Jain's index of each pool's cpu allocation over min(what it wants, its fair share), " +
        "and of the cpu its tasks hold on hosts (GPUs counted alike, as pairs of their own, where pools want " +
        "them)",
      y: "index",
      x,
      // Reports from before the held series have only the allocation's.
      lines: [line("Jain", s.fairness), ...(s.fairnessHeld ? [line(`Jain, ${HELD}`, s.fairnessHeld)] : [])],
    },
  ];
  if (s.slackCpu.some((v) => v > 0) || s.revocableCpu.some((v) => v > 0)) {
    charts.push({
      id: "slack",
      title:
        "Slack: cpu allocated but unused (at each sample), and the part revocable tasks hold (averaged " +
        "over each interval)",
      y: "cores",
      x,
      lines: [line("slack", s.slackCpu), line("revocable", s.revocableCpu)],
    });
  }
  if (new Set(s.hostsUp).size > 1 || s.hostsInMaintenance.some((v) => v > 0)) {
    charts.push({
      id: "hosts",
      title: "Hosts up, and those of them in maintenance (taking no new work)",
      y: "hosts",
      x,
      lines: [line("up", s.hostsUp), line("in maintenance", s.hostsInMaintenance)],
    });
  }
  Object.keys(report.poolSeries).slice(0, MAX_POOL_CHARTS).forEach((path, i) => {
    const p = report.poolSeries[path];
    // Reports from before the held and slack series have none of them.
    const held = (values: number[] | undefined) => (values ? [line(HELD, values)] : []);
    charts.push({
      id: `pool-${i}-cpu`,
      title: `Pool ${path}: cpu entitlement, allocation and demand${POOL_TERMS}`,
      y: "cores",
      x,
      lines: [
        line("entitlement", p.entitlementCpu),
        line("allocation", p.allocationCpu),
        ...held(p.heldCpu),
        line("demand", p.demandCpu),
      ],
    });
    charts.push({
      id: `pool-${i}-memory`,
      title: `Pool ${path}: memory entitlement, allocation and demand${POOL_TERMS}`,
      y: "MB",
      x,
      lines: [
        line("entitlement", p.entitlementMemMb),
        line("allocation", p.allocationMemMb),
        ...held(p.heldMemMb),
        line("demand", p.demandMemMb),
      ],
    });
    if (usesGpu(p)) {
      charts.push({
        id: `pool-${i}-gpu`,
        title: `Pool ${path}: gpu entitlement, allocation and demand${GPU_TERMS}`,
        y: "GPUs",
        x,
        lines: [
          line("entitlement", p.entitlementGpu),
          line("allocation", p.allocationGpu),
          line("demand", p.demandGpu),
        ],
      });
    }
    if (runsRevocable(p)) {
      charts.push({
        id: `pool-${i}-slack-cpu`,
        title: `Pool ${path}: slack cpu entitlement, allocation and demand${SLACK_TERMS}`,
        y: "cores",
        x,
        lines: [
          line("slack entitlement", p.slackEntitlementCpu),
          line("slack allocation", p.slackAllocationCpu),
          line(`slack ${HELD}`, p.slackHeldCpu),
          line("slack demand", p.slackDemandCpu),
        ],
      });
    }
  });
  return charts;
}

/**
 * Whether a pool had a GPU entitlement, GPUs allocated or GPU work queued at some sample: only then its gpu
 * chart is drawn, so pools (and clusters) without GPUs chart as before. Reports from before the gpu series
 * have none.
 */
export function usesGpu(p: Report["poolSeries"][string]): boolean {
  return [p.entitlementGpu, p.allocationGpu, p.demandGpu].some((xs) => xs?.some((v) => v > 0));
}

/**
 * Whether a pool had revocable tasks admitted or queued at some sample: only then its slack chart is drawn
 * (a pool may have a slack entitlement with no revocable work to use it).
 */
export function runsRevocable(p: Report["poolSeries"][string]): boolean {
  return [p.slackAllocationCpu, p.slackDemandCpu].some((xs) => xs?.some((v) => v > 0));
}

/**
 * Failed placement attempts per interval: the total, each reason, then the tasks handed back at their
 * deadline (reports from before that series have no such line).
 */
function failureChart(report: Report): Chart {
  const s = report.series;
  const reasons = Object.entries(s.placementFailures);
  const total = s.t.map((_, i) => reasons.reduce((a, [, v]) => a + (v[i] ?? 0), 0));
  return {
    id: "failures",
    title: "Failed placement attempts per interval, by reason, as the placement engine reports them " +
      `(a task's first failure, a changed reason at most every ${REASON_INTERVAL_SEC} s, ` +
      "its hand-back at the deadline)",
    y: "tasks",
    x: s.t,
    stepped: true,
    lines: [
      { label: "all reasons", values: total },
      ...reasons.map(([label, values]) => ({ label, values })),
      ...(s.placementHandedBack ? [{ label: HANDED_BACK, values: s.placementHandedBack }] : []),
    ],
  };
}

/** The failure chart's line of tasks handed back unplaced at their placement deadline. */
export const HANDED_BACK = "handed back at deadline";

/** How often the simulator's placement engine reports a task's changed failure reason. */
const REASON_INTERVAL_SEC = DEFAULT_PLACEMENT_CONFIG.reasonIntervalMs / 1000;

/** What the placement failure counts are: the engine reports a task's failures, not every failed round. */
const FAILURES_COUNTED =
  "Counted per task as the placement engine reports failures to the resource manager: " +
  "a task still tried has its reason reported after its first failed round, then again only when the " +
  `reason changed, at most once per ${REASON_INTERVAL_SEC} s; a task handed back unplaced at its placement ` +
  "deadline counts " +
  "once more (the resource manager queues it again). A task that fails round after round for one reason " +
  "counts when it first fails and when it is handed back, not once per round.";

/** What the report leaves out about its run: the scenario's length, when it has one. */
export interface RunInfo {
  durationSeconds?: number;
}

/** A warning that the report covers only the part of the run before it was interrupted; "" for a whole run. */
export function partialBanner(report: Report, run: RunInfo = {}): string {
  if (!report.endedEarly) return "";
  const at = report.simulatedSeconds.toLocaleString("en-US");
  const of = run.durationSeconds === undefined ? "" : ` of ${run.durationSeconds.toLocaleString("en-US")}`;
  return `<p class="partial" style="background:#fff3cd;border:1px solid #e0b400;padding:8px 12px">` +
    `<b>Partial report:</b> the run was interrupted at ${at}${of} simulated seconds; ` +
    `every number and chart below covers only that part of the run.</p>`;
}

/**
 * Jobs nothing could ever start, each with the reason: why an open-ended run stopped with work left, or what
 * a run with a durationSec (`run.durationSeconds`) ended with that its pools could never admit; "" when the
 * run had none (reports from before stuck jobs were reported have no list).
 */
export function stuckBanner(report: Report, run: RunInfo = {}): string {
  const stuck = report.stuckJobs ?? [];
  if (!stuck.length) return "";
  const n = report.jobs.stuck;
  const more = n > stuck.length ? ` The first ${stuck.length} are listed; report.json counts all ${n}.` : "";
  const at = report.simulatedSeconds.toLocaleString("en-US");
  const what = run.durationSeconds === undefined
    ? `<b>Stopped with work left:</b> at ${at} simulated seconds nothing was running or still to come, and ` +
      `${n} ${jobsText(n)} can never start.`
    : `<b>Work that could never start:</b> the run ended at ${at} simulated seconds with ${n} ` +
      `${jobsText(n)} that no pool could ever admit, or queued behind such work.`;
  return `<p class="stuck" style="background:#fde2e1;border:1px solid #d93025;padding:8px 12px">` +
    `${what}${more}</p>` +
    table(
      ["job", "workload", "tasks waiting", "why"],
      stuck.map((j) => [j.jobId, j.workload, j.waitingTasks, j.reason]),
    );
}

const jobsText = (n: number) => (n === 1 ? "job" : "jobs");

/** How long a drain event's hosts took to drain; "" for other events and reports from before it was timed. */
function drained(e: Report["events"][number]): string | number {
  if (e.drainSeconds === undefined) return "";
  if (e.drainSeconds !== null) return e.drainSeconds;
  const held = e.drainPending?.holding[0];
  return held
    ? `not drained by the end: ${
      e.drainPending!.tasks
    } tasks left, most (${held.tasks}) of ${held.workload}, ${held.why}`
    : "not drained by the end";
}

/**
 * The preempted and drained runs still being killed at the end, which count in none of the figures yet
 * ("" when none were, or for a report from before they were counted).
 */
function beingKilledText(k: Report["preemptions"]["beingKilled"] | undefined): string {
  if (!k?.total) return "";
  return ` (being killed at the end, not counted yet: ${k.running} / - / ${k.slack} / ${k.maintenance})`;
}

/** A figure as a table shows it: "n/a" for one nothing measured (a percentile of no delays is null). */
const na = (v: number | null): number | string => v ?? "n/a";
/** A pool's average: "" when the pool has no series (absent), "n/a" when nothing was measured (null). */
const avg = (v: number | null | undefined): number | string => v === undefined ? "" : na(v);

/**
 * Percentiles of delays in seconds as the summary shows them ("1.2 / 3.4 s"); "n/a" for those of no delays,
 * saying what was measured from (`after`: the warm-up), as a 0 would read as no delay at all.
 */
function delays(values: (number | null)[], after: string): string {
  if (values.every((v) => v === null)) return `n/a: no delays measured${after}`;
  return `${values.map((v) => v ?? "n/a").join(" / ")} s`;
}

export function renderHtml(report: Report, assets: UplotAssets, run: RunInfo = {}): string {
  const q = report.queueDelaySeconds, t = report.tasks, u = report.utilization, p = report.preemptions;
  const a = report.admissionDelaySeconds;
  const r = report.rescheduleDelaySeconds;
  // Counts cover the whole run, rates and delays the time after the warm-up: said when the two differ.
  const whole = report.warmupSeconds > 0 ? " (whole run)" : "";
  const after = report.warmupSeconds > 0 ? ` (after the ${report.warmupSeconds} s warm-up)` : "";
  const summary = table(["", ""], [
    ["Scenario", report.scenario],
    ["Seed", String(report.seed)],
    ["Hosts", report.hosts],
    [
      "Simulated",
      `${report.simulatedSeconds.toLocaleString("en-US")} s (warm-up ${report.warmupSeconds} s)` +
      (report.endedEarly ? ", interrupted: partial report" : "") +
      (report.jobs.stuck
        ? run.durationSeconds === undefined
          ? `, stopped: ${report.jobs.stuck} ${jobsText(report.jobs.stuck)} can never start`
          : `, ${report.jobs.stuck} ${jobsText(report.jobs.stuck)} could never start`
        : ""),
    ],
    ["Wall time", `${report.wallSeconds} s, peak RSS ${(report.peakRssBytes / 2 ** 30).toFixed(2)} GiB`],
    [`Tasks submitted / launched / unplaced${whole}`, `${t.submitted} / ${t.launched} / ${t.unplaced}`],
    [`Succeeded / failed / killed / lost${whole}`, `${t.succeeded} / ${t.failed} / ${t.killed} / ${t.lost}`],
    [`Launches per second${after}`, String(na(report.launchesPerSec))],
    [
      "Queue delay p50 / p90 / p99 / max",
      delays([q.p50, q.p90, q.p99, q.max], after) +
      (q.waiting ? ` (${q.waiting} instances still waiting at the end count with their wait so far)` : ""),
    ],
    [
      "Of which waiting for admission (the pool's entitlement: its limit, or a full cluster) p50 / p90 / p99 / max",
      delays([a.p50, a.p90, a.p99, a.max], after) +
      (a.waiting ? ` (${a.waiting} instances not admitted at the end count with their wait so far)` : ""),
    ],
    [
      "Runs again after a kill / a loss: count (still waiting at the end), p50 / p99",
      [r.afterKill, r.afterLoss].map((d) => `${d.count} (${d.waiting}), ${delays([d.p50, d.p99], after)}`)
        .join("; ") + (r.waiting ? "; those still waiting count with their wait so far" : ""),
    ],
    [
      `Utilization cpu (of it revocable) / memory / disk / gpu${after}`,
      `${na(u.cpu)} (${u.revocableCpu === undefined ? "" : na(u.revocableCpu)}) / ${na(u.memory)} / ` +
      `${na(u.disk)} / ${na(u.gpu)}`,
    ],
    [
      "Fairness (Jain) of cpu and gpu allocation (admitted) / held on hosts",
      `${na(report.fairness)} / ${report.fairnessHeld === undefined ? "" : na(report.fairnessHeld)}`,
    ],
    [
      "Preempted: running / waiting / slack / maintenance",
      `${p.running} / ${p.waiting} / ${p.slack} / ${p.maintenance}` + beingKilledText(p.beingKilled),
    ],
    [
      "Failed placement attempts (as reported) / tasks handed back at their deadline",
      `${report.placementFailures.total} / ${report.placementFailures.handedBack?.total ?? ""}`,
    ],
  ]);
  // Slack columns only when some pool had revocable work.
  const slack = Object.values(report.pools).some((s) =>
    (s.slackAllocationCpu ?? 0) > 0 || (s.slackDemandCpu ?? 0) > 0 || (s.avgSlackAllocationCpu ?? 0) > 0 ||
    (s.slackPreempted ?? 0) > 0
  );
  const pools = table(
    [
      "pool",
      "entitlement cpu",
      "allocation cpu",
      "held cpu",
      "demand cpu",
      ...(slack
        ? ["slack entitlement cpu", "slack allocation cpu", "slack held cpu", "slack demand cpu"]
        : []),
      "avg alloc cpu",
      "avg held cpu",
      "avg entitlement cpu",
      ...(slack ? ["avg slack alloc cpu", "avg slack entitlement cpu"] : []),
      "p99 delay s",
      "p99 admission s",
      slack ? "preempted (of them slack)" : "preempted",
    ],
    Object.entries(report.pools).map(([path, s]) => [
      path,
      s.entitlementCpu,
      s.allocationCpu,
      s.heldCpu ?? "",
      s.demandCpu,
      ...(slack ? [s.slackEntitlementCpu, s.slackAllocationCpu, s.slackHeldCpu, s.slackDemandCpu] : []),
      // "" for a pool without series, "n/a" for a run that measured nothing.
      avg(s.avgAllocationCpu),
      avg(s.avgHeldCpu),
      avg(s.avgEntitlementCpu),
      ...(slack ? [avg(s.avgSlackAllocationCpu), avg(s.avgSlackEntitlementCpu)] : []),
      // Only pools a workload submits to have delays: "" for the others, "n/a" for none measured.
      s.queueDelaySeconds ? na(s.queueDelaySeconds.p99) : "",
      s.admissionDelaySeconds ? na(s.admissionDelaySeconds.p99) : "",
      slack ? `${s.preempted} (${s.slackPreempted})` : s.preempted,
    ]),
  );
  const workloads = table(
    [
      "workload",
      "type",
      "pool",
      "jobs",
      "p50 delay s",
      "p99 delay s",
      "p99 admission s",
      "waiting at end",
      "p99 run-again s",
      "waiting to run again at end",
    ],
    Object.entries(report.workloads).map(([name, w]) => [
      name,
      w.type,
      w.respool,
      w.jobs,
      na(w.queueDelaySeconds.p50),
      na(w.queueDelaySeconds.p99),
      na(w.admissionDelaySeconds.p99),
      w.queueDelaySeconds.waiting,
      na(w.rescheduleDelaySeconds.p99),
      w.rescheduleDelaySeconds.waiting,
    ]),
  );
  const classes = [...new Set(Object.values(report.launchesByHostClass).flatMap((c) => Object.keys(c)))];
  const byClass = table(
    ["workload", ...classes],
    Object.entries(report.launchesByHostClass).map(([name, c]) => [name, ...classes.map((k) => c[k] ?? 0)]),
  );
  const events = report.events.length
    ? table(
      ["at s", "event", "hosts", "drained after s", "error"],
      report.events.map((e) => [e.atSec, e.detail, e.hosts ?? "", drained(e), e.error ?? ""]),
    )
    : `<p class="muted">No timed events.</p>`;
  const reasons = Object.entries(report.placementFailures.byReason).slice(0, 10);
  const handedBack = report.placementFailures.handedBack?.byReason ?? {};
  const failures = reasons.length
    ? `<p class="muted">${esc(FAILURES_COUNTED)}</p>` +
      table(
        ["reason", "failed attempts", "of them handed back at the deadline"],
        reasons.map(([why, n]) => [why, n, handedBack[why] ?? 0]),
      )
    : `<p class="muted">No placement attempt failed.</p>`;
  return renderPage(
    `${report.scenario} — simulation report`,
    [
      partialBanner(report, run),
      stuckBanner(report, run),
      `<p>${esc(report.description)}</p>`,
      summary,
      `<h2>Resource pools at the end</h2>${pools}`,
      `<h2>Workloads</h2>${workloads}`,
      `<h2>Where work ran: task launches by host class</h2>${byClass}`,
      `<h2>Timed events</h2>${events}`,
      `<h2>Placement failures</h2>${failures}`,
    ],
    reportCharts(report),
    assets,
  );
}
