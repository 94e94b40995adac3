/**
 * Browser code of the web UI, part 3c: a job's tasks table. The API filters, sorts and pages it
 * (`TaskManager::Query` with Peloton's `spec.taskStates` and `spec.pagination {offset, limit, orderBy}`),
 * so a job of 10,000 instances loads and draws one page per refresh. The table's query lives in the URL hash
 * (`#/jobs/ID?state=PENDING&sort=host&order=desc&page=2`): pages, filters and sorts are links, which a
 * refresh keeps (the view is rebuilt every few seconds, so its controls are links, not form fields it
 * would reset), and a link reproduces the view.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type { JobInfoJson, Snapshot, TaskInfoJson, TaskListQuery } from "./api_types.ts";
import {
  badge,
  count,
  h,
  pagerView,
  type Paging,
  stateTone,
  type UiChild,
  type UiElement,
  when,
  wholeParam,
} from "./client_dom.ts";

/** The table's page sizes and sortable columns. */
export class TaskList {
  /** Sizes the table offers; `size=` in the URL may ask for any other up to MAX_SIZE. */
  static readonly SIZES = [50, 100, 200, 500, 1000];
  static readonly DEFAULT_SIZE = 100;
  static readonly MAX_SIZE = 1000;
  static readonly MAX_PAGE = 1_000_000;
  /** Each column and the task order property it sorts by (Peloton's `creation_time` is the run's start). */
  static readonly COLUMNS: readonly [string, string?][] = [
    ["Instance", "instanceId"],
    ["Name", "name"],
    ["State", "state"],
    ["Goal"],
    ["Host", "host"],
    ["Started", "creation_time"],
    ["Completed"],
    ["Failures"],
    ["Message", "message"],
    ["Reason", "reason"],
  ];
  static readonly DEFAULT_SORT = "instanceId";
}

/** The table's query from the hash's `?...` part; values out of range fall back to the defaults. */
export function parseTaskListQuery(search: string): TaskListQuery {
  const p = new URLSearchParams(search);
  const sort = p.get("sort") ?? "";
  return {
    state: (p.get("state") ?? "").trim().toUpperCase(),
    sort: TaskList.COLUMNS.some(([, prop]) => prop === sort) ? sort : TaskList.DEFAULT_SORT,
    desc: (p.get("order") ?? "").toLowerCase() === "desc",
    page: wholeParam(p, "page", TaskList.MAX_PAGE, 1),
    size: wholeParam(p, "size", TaskList.MAX_SIZE, TaskList.DEFAULT_SIZE),
  };
}

/** The hash of job `jobId`'s view with its tasks table showing `q`; defaults are left out. */
export function taskListHash(jobId: string, q: TaskListQuery): string {
  const p = new URLSearchParams();
  if (q.state) p.set("state", q.state);
  if (q.sort !== TaskList.DEFAULT_SORT) p.set("sort", q.sort);
  if (q.desc) p.set("order", "desc");
  if (q.size !== TaskList.DEFAULT_SIZE) p.set("size", String(q.size));
  if (q.page > 1) p.set("page", String(q.page));
  const search = p.toString();
  return `#/jobs/${encodeURIComponent(jobId)}${search ? `?${search}` : ""}`;
}

/** The `TaskManager::Query` body for `q`: its state, its order, and its page as an offset and a limit. */
export function taskListRequest(jobId: string, q: TaskListQuery): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    pagination: {
      offset: (q.page - 1) * q.size,
      limit: q.size,
      // The API breaks ties by instance id, ascending.
      orderBy: [{ order: q.desc ? "DESC" : "ASC", property: { value: q.sort } }],
    },
  };
  if (q.state) spec.taskStates = [q.state];
  return { jobId: { value: jobId }, spec };
}

/** The table's pages: `pagerView` with links that keep `q`'s filter, order and size. */
export function taskPaging(jobId: string, q: TaskListQuery, total: number): Paging {
  return {
    page: q.page,
    size: q.size,
    total,
    noun: "tasks",
    hashOf: (page) => taskListHash(jobId, { ...q, page }),
  };
}

/**
 * "All 150 · PENDING 140 · RUNNING 10": the states the job's tasks are in (its runtime's counts), each a
 * link to the table of those tasks; the one shown is marked, and listed even when none are left in it.
 */
export function taskStateFilter(jobId: string, q: TaskListQuery, stats: Record<string, number>): UiElement {
  const all = Object.values(stats).reduce((a, n) => a + n, 0);
  const states = Object.keys(stats).filter((s) => stats[s] > 0);
  if (q.state && !states.includes(q.state)) states.push(q.state);
  const chip = (label: string, state: string, n: number) =>
    h(
      "a",
      {
        href: taskListHash(jobId, { ...q, state, page: 1 }),
        class: `state-chip ${state ? stateTone(state) : "all"}`,
        "data-state": state || "ALL",
        "aria-current": state === q.state ? "true" : undefined,
      },
      `${label} ${count(n)}`,
    );
  return h(
    "div",
    { class: "task-filter", role: "group", "aria-label": "Show tasks in state" },
    h("span", { class: "muted" }, "State:"),
    chip("All", "", all),
    ...states.sort().map((s) => chip(s, s, stats[s] ?? 0)),
  );
}

/** Links to the other page sizes; a new size starts from the first page. */
export function taskSizeChooser(jobId: string, q: TaskListQuery): UiElement {
  const sizes = TaskList.SIZES.includes(q.size)
    ? TaskList.SIZES
    : [...TaskList.SIZES, q.size].sort((a, b) => a - b);
  return h(
    "span",
    { class: "task-sizes" },
    h("span", { class: "muted" }, "Rows a page:"),
    ...sizes.map((n) =>
      n === q.size
        ? h("span", { class: "size current", "aria-current": "true" }, n)
        : h("a", { href: taskListHash(jobId, { ...q, size: n, page: 1 }), class: "size", "data-size": n }, n)
    ),
  );
}

/** A column header: a sortable one links to its order (ascending first, then the reverse). */
export function taskHeader(jobId: string, q: TaskListQuery, label: string, property?: string): UiElement {
  if (!property) return h("th", {}, label);
  const active = q.sort === property;
  const next = { ...q, sort: property, desc: active && !q.desc, page: 1 };
  return h(
    "th",
    { "data-sort": property, "aria-sort": active ? (q.desc ? "descending" : "ascending") : undefined },
    h(
      "a",
      { href: taskListHash(jobId, next), class: "sort-link", title: `Sort by ${label.toLowerCase()}` },
      label,
      active ? h("span", { class: "sort-arrow", "aria-hidden": "true" }, q.desc ? " ▼" : " ▲") : null,
    ),
  );
}

function taskRow(t: TaskInfoJson): UiElement {
  const cells: UiChild[] = [
    t.instanceId,
    t.config.name ?? "",
    badge(t.runtime.state),
    t.runtime.goalState,
    t.runtime.host ?? "—",
    when(t.runtime.startTime),
    when(t.runtime.completionTime),
    t.runtime.failureCount ?? 0,
    t.runtime.message ?? "",
    t.runtime.reason ?? "",
  ];
  return h("tr", { "data-instance": t.instanceId }, ...cells.map((c) => h("td", {}, c)));
}

/** The job's tasks table for `q`: its filter, its pages, and one page of rows as the API sorted them. */
export function tasksView(snap: Snapshot, info: JobInfoJson, q: TaskListQuery): UiElement {
  const jobId = info.id.value;
  const stats = info.runtime.taskStats ?? {};
  const all = Object.values(stats).reduce((a, n) => a + n, 0) || info.config.instanceCount;
  const parts: UiChild[] = [];
  if (snap.job?.tasksFor !== taskListHash(jobId, q)) {
    // The hash just changed: the refresh under way brings this page.
    parts.push(h("p", { class: "muted" }, "Loading…"));
  } else if (!snap.job.tasks) {
    parts.push(h("p", { class: "muted" }, "Tasks could not be loaded (see the error above)."));
  } else {
    const page = snap.job.tasks, total = page.pagination.total;
    const rows = page.records.map(taskRow);
    const empty = total === 0 ? (q.state ? `No task is ${q.state}` : "No tasks") : "No tasks on this page";
    parts.push(
      pagerView(taskPaging(jobId, q, total), "top"),
      h(
        "table",
        { class: "tasks" },
        h("thead", {}, h("tr", {}, ...TaskList.COLUMNS.map(([l, p]) => taskHeader(jobId, q, l, p)))),
        h(
          "tbody",
          {},
          ...(rows.length
            ? rows
            : [h("tr", {}, h("td", { colspan: TaskList.COLUMNS.length, class: "empty" }, empty))]),
        ),
      ),
      rows.length > 20 ? pagerView(taskPaging(jobId, q, total), "bottom") : null,
    );
  }
  return h(
    "section",
    { id: "tasks" },
    h("h3", {}, `Tasks (${count(all)})`),
    h("div", { class: "task-controls" }, taskStateFilter(jobId, q, stats), taskSizeChooser(jobId, q)),
    ...parts,
  );
}

export const TASK_CODE = [
  TaskList,
  parseTaskListQuery,
  taskListHash,
  taskListRequest,
  taskPaging,
  taskStateFilter,
  taskSizeChooser,
  taskHeader,
  taskRow,
  tasksView,
];
