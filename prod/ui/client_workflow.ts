/**
 * Browser code of the web UI, part 3c: each instance's progress in a job's current or last workflow, from
 * v1alpha JobService's `ListJobWorkflows` with `instanceEvents` (each instance's steps, newest first). The
 * counts cover every instance; the table draws at most `InstanceProgress.MAX_ROWS` of them, and a row opens
 * to its steps. Runs in the browser (see client_dom.ts for the rules).
 */
import type { JobInfoJson, RowToggle, UpdateInfoJson, WorkflowInfoJson } from "./api_types.ts";
import { badge, h, scrolling, statsLine, timeView, type UiElement } from "./client_dom.ts";

/** How much of a workflow's instance progress the page asks for and draws. */
export class InstanceProgress {
  /** Instance rows drawn at most: a job of thousands stays usable; the counts still cover all of them. */
  static readonly MAX_ROWS = 200;
  /** Steps asked for per instance, at most: a whole rolling update with a retry or a rollback. */
  static readonly MAX_STEPS = 10;
  /** ...and at least: the state an instance is in and the one before it. */
  static readonly MIN_STEPS = 2;
  /** Steps asked for in all, about, per refresh: a job of many instances gets fewer steps of each. */
  static readonly STEPS_BUDGET = 10_000;
  /** Failed instances named above the table at most. */
  static readonly MAX_FAILED_NAMED = 50;
}

/** One instance in a workflow: its latest state (without `WORKFLOW_STATE_`), when it got there, its steps. */
export interface InstanceRow {
  instanceId: number;
  /** Undefined when no step was recorded for it. */
  state?: string;
  at?: string;
  /** Newest first. */
  steps: { state: string; type: string; at?: string }[];
}

/** The rows to draw of a workflow's instances, and what the counts above them say of all of them. */
export interface InstanceTable {
  rows: InstanceRow[];
  total: number;
  /** Instances by latest state. */
  counts: Record<string, number>;
  /** Every failed instance, in instance order. */
  failed: number[];
  /** True when there are more instances than rows: failed and in-flight ones are drawn first. */
  capped: boolean;
}

/** Steps per instance to ask for, so that a job of `instanceCount` gets about STEPS_BUDGET in all. */
export function instanceStepsLimit(instanceCount: number): number {
  const { MAX_STEPS, MIN_STEPS, STEPS_BUDGET } = InstanceProgress;
  const share = Math.floor(STEPS_BUDGET / Math.max(1, instanceCount || 0));
  return Math.max(MIN_STEPS, Math.min(MAX_STEPS, share));
}

/** The `ListJobWorkflows` body: the newest workflow only (the current or last one), with its steps. */
export function instanceProgressRequest(jobId: string, instanceCount: number): Record<string, unknown> {
  return {
    jobId: { value: jobId },
    updatesLimit: 1,
    instanceEvents: true,
    instanceEventsLimit: instanceStepsLimit(instanceCount),
  };
}

export function workflowStateLabel(state: string | undefined): string {
  return String(state ?? "UNKNOWN").replace(/^WORKFLOW_STATE_/, "");
}

/** A workflow type by name; the API writes START and STOP as their enum numbers. */
export function workflowTypeLabel(type: string | number | undefined): string {
  if (typeof type === "number") {
    return ["UNKNOWN", "UPDATE", "RESTART", "START", "STOP"][type] ?? String(type);
  }
  return (type ?? "").replace(/^WORKFLOW_TYPE_/, "");
}

/** Failed instances first, then the ones a workflow is taking, then the rest. */
export function attentionRank(state: string | undefined): number {
  if (state === "FAILED") return 0;
  return state === "ROLLING_FORWARD" || state === "ROLLING_BACKWARD" ? 1 : 2;
}

/**
 * The workflow's instances as rows: in instance order when all fit in `maxRows`; else the first `maxRows`
 * by attention (failed, then in flight, then the rest, each in instance order).
 */
export function instanceTable(w: WorkflowInfoJson, maxRows = InstanceProgress.MAX_ROWS): InstanceTable {
  const all: InstanceRow[] = (w.instanceEvents ?? []).map((i) => {
    const steps = (i.events ?? []).map((e) => ({
      state: workflowStateLabel(e.state),
      type: workflowTypeLabel(e.type),
      at: e.timestamp,
    }));
    return { instanceId: i.instanceId ?? 0, state: steps[0]?.state, at: steps[0]?.at, steps };
  }).sort((a, b) => a.instanceId - b.instanceId);
  const counts: Record<string, number> = {};
  for (const r of all) if (r.state) counts[r.state] = (counts[r.state] ?? 0) + 1;
  const capped = all.length > maxRows;
  const rows = capped
    ? all.slice().sort((a, b) =>
      attentionRank(a.state) - attentionRank(b.state) || a.instanceId - b.instanceId
    )
      .slice(0, maxRows)
    : all;
  const failed = all.filter((r) => r.state === "FAILED").map((r) => r.instanceId);
  return { rows, total: all.length, counts, failed, capped };
}

/** An instance's row, and below it its steps when the operator opened it. */
export function instanceRows(r: InstanceRow, toggle: RowToggle, stepsLimit: number): UiElement[] {
  const open = toggle.open.has(r.instanceId);
  const n = r.steps.length;
  const row = h(
    "tr",
    { class: r.state === "FAILED" ? "instance failed" : "instance", "data-instance": r.instanceId },
    h("td", {}, r.instanceId),
    h("td", {}, r.state ? badge(r.state) : h("span", { class: "muted" }, "no steps recorded")),
    h("td", {}, timeView(r.at)),
    h(
      "td",
      {},
      n
        ? h("button", {
          type: "button",
          class: "steps-toggle",
          "aria-expanded": String(open),
          "data-instance": r.instanceId,
          onclick: () => toggle.toggle(r.instanceId),
        }, `${open ? "▾" : "▸"} ${n} step${n === 1 ? "" : "s"}`)
        : "—",
    ),
  );
  if (!open || !n) return [row];
  const steps = h(
    "ol",
    { class: "steps-list" },
    ...r.steps.map((s) =>
      h(
        "li",
        { "data-state": s.state },
        badge(s.state),
        " ",
        timeView(s.at),
        h("span", { class: "muted" }, ` ${s.type}`),
      )
    ),
  );
  const more = n >= stepsLimit
    ? h("div", { class: "muted note" }, `The newest ${stepsLimit} steps; older ones are not loaded.`)
    : null;
  return [
    row,
    h("tr", { class: "steps", "data-steps-of": r.instanceId }, h("td", { colspan: 4 }, steps, more)),
  ];
}

/** The workflow's own states, oldest first, each with when it entered it; null when it has none. */
export function workflowHistory(w: WorkflowInfoJson): UiElement | null {
  const events = (w.events ?? []).slice().reverse();
  if (!events.length) return null;
  const steps = events.flatMap((e, i) =>
    [
      i ? h("span", { class: "muted" }, " → ") : null,
      h("span", { class: "history-step" }, badge(workflowStateLabel(e.state)), " ", timeView(e.timestamp)),
    ].filter((x): x is UiElement => x !== null)
  );
  return h("p", { class: "workflow-history", id: "workflow-history" }, "History: ", ...steps);
}

/**
 * A job's instances in its current or last workflow: counts by state, the failed ones named, and a row per
 * instance. Nothing for a job without workflows; when the workflows failed to load, workflowView says so.
 */
export function instanceProgressView(
  info: JobInfoJson,
  updates: UpdateInfoJson[] | undefined,
  workflows: WorkflowInfoJson[] | undefined,
  toggle: RowToggle,
): UiElement | undefined {
  if (!updates?.length) return undefined;
  const section = (...children: (UiElement | null)[]) =>
    h("section", { id: "instance-progress" }, h("h3", {}, "Instances in the workflow"), ...children);
  if (!workflows) {
    return section(
      h("p", { class: "muted" }, "Instance progress could not be loaded (see the error above)."),
    );
  }
  const w = workflows[0];
  if (!w) return section(h("p", { class: "muted" }, "The job's workflow was not found."));
  const t = instanceTable(w);
  const { MAX_FAILED_NAMED } = InstanceProgress;
  const failedNote = t.failed.length
    ? h(
      "p",
      { class: "failed-note", id: "failed-instances" },
      `${t.failed.length} instance${t.failed.length === 1 ? "" : "s"} failed: `,
      t.failed.slice(0, MAX_FAILED_NAMED).join(", "),
      t.failed.length > MAX_FAILED_NAMED ? ` and ${t.failed.length - MAX_FAILED_NAMED} more` : "",
    )
    : null;
  const capNote = t.capped
    ? h(
      "p",
      { class: "muted note", id: "instances-capped" },
      `Showing ${t.rows.length} of ${t.total} instances: failed ones first, then those in progress, then ` +
        `the rest by instance id. The counts above cover all ${t.total}.`,
    )
    : null;
  const limit = instanceStepsLimit(info.config.instanceCount);
  const body = t.rows.length
    ? t.rows.flatMap((r) => instanceRows(r, toggle, limit))
    : [h("tr", {}, h("td", { colspan: 4, class: "empty" }, "No instances in this workflow"))];
  return section(
    h(
      "p",
      { class: "workflow-line", "data-workflow-id": w.workflowId?.value ?? "" },
      "Workflow ",
      h("code", {}, w.workflowId?.value ?? "—"),
      ` (${workflowTypeLabel(w.status.type)})`,
      badge(workflowStateLabel(w.status.state)),
      Object.keys(t.counts).length ? h("span", { class: "muted" }, "· instances by state:") : null,
      Object.keys(t.counts).length ? statsLine(t.counts) : null,
    ),
    workflowHistory(w),
    failedNote,
    capNote,
    scrolling(h(
      "table",
      { class: "instances" },
      h(
        "thead",
        {},
        h("tr", {}, ...["Instance", "Workflow state", "Since", "Steps"].map((c) => h("th", {}, c))),
      ),
      h("tbody", {}, ...body),
    )),
  );
}

export const WORKFLOW_CODE = [
  InstanceProgress,
  instanceStepsLimit,
  instanceProgressRequest,
  workflowStateLabel,
  workflowTypeLabel,
  attentionRank,
  instanceTable,
  instanceRows,
  workflowHistory,
  instanceProgressView,
];
