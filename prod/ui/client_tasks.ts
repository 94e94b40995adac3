/**
 * Browser code of the web UI, part 3c: a job's tasks table. The API filters, sorts and pages it
 * (`TaskManager::Query` with Peloton's `spec.taskStates`, `spec.names`, `spec.hosts` and
 * `spec.pagination {offset, limit, orderBy}`), so a job of 10,000 instances loads and draws one page per
 * refresh. The table's query lives in the URL hash
 * (`#/jobs/ID?state=PENDING,RUNNING&host=agent-1&sort=host&order=desc&page=2`), so a link reproduces the
 * view. Pages, states and sorts are links, which a refresh keeps (the view is rebuilt every few seconds);
 * the name and host filter is the one form, which the app builds once so a refresh keeps what is typed in it.
 * Each row opens to its task's events and sandbox logs (client_task_details.ts).
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type { JobInfoJson, RowToggle, Snapshot, TaskInfoJson, TaskListQuery } from "./api_types.ts";
import {
  badge,
  count,
  h,
  pagerView,
  type Paging,
  scrolling,
  stateTone,
  timeView,
  type UiChild,
  type UiElement,
  wholeParam,
} from "./client_dom.ts";
import { taskDetailsRow } from "./client_task_details.ts";

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
    ["Config version"],
    ["Host", "host"],
    ["Started", "creation_time"],
    ["Completed"],
    ["Failures"],
    ["Message", "message"],
    ["Reason", "reason"],
    ["Events & logs"],
  ];
  static readonly DEFAULT_SORT = "instanceId";
}

/**
 * The items of a comma-separated list (a URL parameter, a filter input), trimmed, without empty or repeated
 * ones. A comma always separates: a name holding one cannot be asked for.
 */
export function commaList(text: string): string[] {
  return [...new Set(text.split(",").map((s) => s.trim()).filter((s) => s))];
}

/** The table's query from the hash's `?...` part; values out of range fall back to the defaults. */
export function parseTaskListQuery(search: string): TaskListQuery {
  const p = new URLSearchParams(search);
  const sort = p.get("sort") ?? "";
  return {
    // `state=PENDING`, as links had it when the table showed one state at a time, is a list of one.
    states: commaList((p.get("state") ?? "").toUpperCase()).sort(),
    names: commaList(p.get("name") ?? ""),
    hosts: commaList(p.get("host") ?? ""),
    sort: TaskList.COLUMNS.some(([, prop]) => prop === sort) ? sort : TaskList.DEFAULT_SORT,
    desc: (p.get("order") ?? "").toLowerCase() === "desc",
    page: wholeParam(p, "page", TaskList.MAX_PAGE, 1),
    size: wholeParam(p, "size", TaskList.MAX_SIZE, TaskList.DEFAULT_SIZE),
  };
}

/** The hash of job `jobId`'s view with its tasks table showing `q`; defaults are left out. */
export function taskListHash(jobId: string, q: TaskListQuery): string {
  const p = new URLSearchParams();
  if (q.states.length) p.set("state", q.states.join(","));
  if (q.names.length) p.set("name", q.names.join(","));
  if (q.hosts.length) p.set("host", q.hosts.join(","));
  if (q.sort !== TaskList.DEFAULT_SORT) p.set("sort", q.sort);
  if (q.desc) p.set("order", "desc");
  if (q.size !== TaskList.DEFAULT_SIZE) p.set("size", String(q.size));
  if (q.page > 1) p.set("page", String(q.page));
  // Commas only separate items (see commaList), so they can stay readable.
  const search = p.toString().replaceAll("%2C", ",");
  return `#/jobs/${encodeURIComponent(jobId)}${search ? `?${search}` : ""}`;
}

/**
 * The `TaskManager::Query` body for `q`: its states, names and hosts (the API matches names and hosts
 * exactly), its order, and its page as an offset and a limit.
 */
export function taskListRequest(jobId: string, q: TaskListQuery): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    pagination: {
      offset: (q.page - 1) * q.size,
      limit: q.size,
      // The API breaks ties by instance id, ascending.
      orderBy: [{ order: q.desc ? "DESC" : "ASC", property: { value: q.sort } }],
    },
  };
  if (q.states.length) spec.taskStates = q.states;
  if (q.names.length) spec.names = q.names;
  if (q.hosts.length) spec.hosts = q.hosts;
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

/** `states` with `state` added, or taken out if it is in; sorted, as a query keeps them. */
export function toggleState(states: string[], state: string): string[] {
  return states.includes(state) ? states.filter((s) => s !== state) : [...states, state].sort();
}

/**
 * "All 150 · PENDING 140 · RUNNING 10": the states the job's tasks are in (its runtime's counts). "All"
 * links to the table of every task, each state to the table with that state added to the ones shown or
 * taken out of them; the chosen ones are marked, and listed even when none are left in them.
 */
export function taskStateFilter(jobId: string, q: TaskListQuery, stats: Record<string, number>): UiElement {
  const all = Object.values(stats).reduce((a, n) => a + n, 0);
  const listed = new Set([...Object.keys(stats).filter((s) => stats[s] > 0), ...q.states]);
  const chip = (label: string, state: string, n: number, states: string[], chosen: boolean) =>
    h(
      "a",
      {
        href: taskListHash(jobId, { ...q, states, page: 1 }),
        class: `state-chip ${state ? stateTone(state) : "all"}`,
        "data-state": state || "ALL",
        "aria-current": chosen ? "true" : undefined,
      },
      `${label} ${count(n)}`,
    );
  return h(
    "div",
    {
      class: "task-filter",
      role: "group",
      "aria-label": "States of the tasks shown (a state's link adds or removes it)",
    },
    h("span", { class: "muted" }, "States:"),
    chip("All", "", all, [], !q.states.length),
    ...[...listed].sort().map((s) =>
      chip(s, s, stats[s] ?? 0, toggleState(q.states, s), q.states.includes(s))
    ),
  );
}

/**
 * The name and host filter: two inputs of comma-separated exact names, Apply and Clear. The view is rebuilt
 * on every refresh, which would wipe what the operator is typing, so the app builds this form once and every
 * render places that same node (`keepingFocus` gives it back its focus and caret); its inputs take
 * the URL's filter only when the hash changes (`show`).
 */
export class TaskFilter {
  readonly form: UiElement;
  readonly #names: UiElement;
  readonly #hosts: UiElement;

  /** `apply` gets the names and hosts asked for; Clear asks for none. */
  constructor(apply: (names: string[], hosts: string[]) => void) {
    const input = (id: string, label: string, placeholder: string) =>
      h("input", {
        id,
        type: "search",
        "aria-label": label,
        placeholder,
        autocomplete: "off",
        spellcheck: "false",
      });
    this.#names = input("task-names", "Task names", "Task names (exact, comma-separated)");
    this.#hosts = input("task-hosts", "Hosts", "Hosts (exact, comma-separated)");
    const submit = () => apply(commaList(this.#names.value), commaList(this.#hosts.value));
    const clear = () => {
      this.show({ names: [], hosts: [] });
      submit();
    };
    this.form = h(
      "form",
      {
        id: "task-query",
        role: "search",
        "aria-label": "Filter tasks by name and host",
        onsubmit: (e) => {
          e.preventDefault();
          submit();
        },
      },
      this.#names,
      this.#hosts,
      h("button", { type: "submit" }, "Apply"),
      h("button", { type: "button", class: "clear", onclick: clear }, "Clear"),
    );
  }

  /** Puts `q`'s names and hosts into the inputs (at start, and after the hash changed, e.g. by Back). */
  show(q: Pick<TaskListQuery, "names" | "hosts">): void {
    this.#names.value = q.names.join(", ");
    this.#hosts.value = q.hosts.join(", ");
  }
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

/**
 * The job config version a task runs, "2 → 5" while it is being moved to another; marked when it is not the
 * job's own (`jobVersion`), whose config the job's page shows: after an aborted or rolled-back update most
 * instances may still run an older one.
 */
export function configVersionView(t: TaskInfoJson, jobVersion: number | undefined): UiElement | string {
  const { configVersion: v, desiredConfigVersion: to } = t.runtime;
  if (v === undefined) return "—";
  const other = jobVersion !== undefined && v !== jobVersion;
  return h(
    "span",
    {
      class: other ? "config-version other-version" : "config-version",
      "data-version": v,
      title: other ? `Runs config version ${v}, not the job's ${jobVersion}` : undefined,
    },
    to !== undefined && to !== v ? `${v} → ${to}` : String(v),
  );
}

/** A task's row, and below it its events and logs when the operator opened it (`details`). */
function taskRows(t: TaskInfoJson, snap: Snapshot, details: RowToggle): UiElement[] {
  const i = t.instanceId, open = details.open.has(i);
  const toggle = h("button", {
    type: "button",
    class: "details-toggle",
    id: `task-details-${i}`,
    "aria-expanded": String(open),
    "aria-label": `Events & logs of instance ${i}`,
    "data-instance": i,
    onclick: () => details.toggle(i),
  }, `${open ? "▾" : "▸"} Events & logs`);
  const cells: UiChild[] = [
    i,
    h("span", { class: "long" }, t.config.name ?? ""),
    badge(t.runtime.state),
    t.runtime.goalState,
    configVersionView(t, snap.job?.info?.runtime.configurationVersion),
    t.runtime.host ?? "—",
    timeView(t.runtime.startTime),
    timeView(t.runtime.completionTime),
    t.runtime.failureCount ?? 0,
    t.runtime.message ?? "",
    t.runtime.reason ?? "",
    toggle,
  ];
  const row = h("tr", { "data-instance": i }, ...cells.map((c) => h("td", {}, c)));
  if (!open) return [row];
  return [row, taskDetailsRow(i, snap.job?.taskDetails?.[i], TaskList.COLUMNS.length)];
}

/**
 * The job's tasks table for `q`: its filters (`filter` is the name and host form the app keeps, see
 * TaskFilter), its pages, and one page of rows as the API sorted them; `details` says which tasks show their
 * events and logs.
 */
export function tasksView(
  snap: Snapshot,
  info: JobInfoJson,
  q: TaskListQuery,
  filter: UiElement,
  details: RowToggle = { open: new Set(), toggle: () => {} },
): UiElement {
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
    const rows = page.records.flatMap((t) => taskRows(t, snap, details));
    const filtered = q.states.length > 0 || q.names.length > 0 || q.hosts.length > 0;
    const empty = total === 0
      ? (filtered ? "No task matches the filter" : "No tasks")
      : "No tasks on this page";
    parts.push(
      pagerView(taskPaging(jobId, q, total), "top"),
      scrolling(h(
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
      )),
      page.records.length > 20 ? pagerView(taskPaging(jobId, q, total), "bottom") : null,
    );
  }
  return h(
    "section",
    { id: "tasks" },
    h("h3", {}, `Tasks (${count(all)})`),
    h("div", { class: "task-controls" }, taskStateFilter(jobId, q, stats), taskSizeChooser(jobId, q)),
    filter,
    ...parts,
  );
}

export const TASK_CODE = [
  TaskList,
  commaList,
  parseTaskListQuery,
  taskListHash,
  taskListRequest,
  taskPaging,
  toggleState,
  taskStateFilter,
  TaskFilter,
  taskSizeChooser,
  taskHeader,
  configVersionView,
  taskRows,
  tasksView,
];
