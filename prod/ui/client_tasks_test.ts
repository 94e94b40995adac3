/** A job's tasks table: its query in the URL, what it asks the API for, and the view it builds from a page. */
import assert from "node:assert/strict";
import type { JobInfoJson, Snapshot, TaskInfoJson, TaskListQuery } from "./api_types.ts";
import { parseRoute } from "./client_app.ts";
import { parseTaskListQuery, TaskList, taskListHash, taskListRequest, tasksView } from "./client_tasks.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const DEFAULT: TaskListQuery = { state: "", sort: "instanceId", desc: false, page: 1, size: 100 };

const job = (taskStats: Record<string, number> = { RUNNING: 9_990, PENDING: 10 }): JobInfoJson => ({
  id: { value: "j1" },
  config: { name: "big", type: "BATCH", instanceCount: 10_000 },
  runtime: { state: "RUNNING", goalState: "SUCCEEDED", taskStats },
});

function task(instanceId: number, state = "RUNNING", message?: string): TaskInfoJson {
  return {
    instanceId,
    config: { name: "big" },
    runtime: {
      state,
      goalState: "SUCCEEDED",
      host: state === "RUNNING" ? `agent-${instanceId % 3}` : undefined,
      startTime: state === "RUNNING" ? "2024-05-01T10:00:00Z" : undefined,
      message,
    },
  };
}

/** A snapshot holding `records` as the page for `q`, out of `total` matching tasks. */
function snapshot(q: TaskListQuery, records: TaskInfoJson[], total: number, info = job()): Snapshot {
  return {
    job: {
      info,
      tasks: { records, pagination: { offset: (q.page - 1) * q.size, limit: q.size, total } },
      tasksFor: taskListHash("j1", q),
    },
  };
}

const view = (snap: Snapshot, q: TaskListQuery, info = job()) => fake(tasksView(snap, info, q));
const rows = (v: FakeElement) => v.select("tr[data-instance]");
const hrefOf = (el: FakeElement | undefined) => el?.getAttribute("href");

Deno.test("the tasks table's query comes from the job's hash; out-of-range values fall back to the defaults", () => {
  assert.deepEqual(parseTaskListQuery(""), DEFAULT);
  assert.deepEqual(parseTaskListQuery("state=pending&sort=host&order=DESC&page=3&size=500"), {
    state: "PENDING",
    sort: "host",
    desc: true,
    page: 3,
    size: 500,
  });
  assert.deepEqual(
    parseTaskListQuery("sort=goal&order=sideways&page=0&size=5000"),
    DEFAULT,
    "Goal is not a sortable column",
  );
  assert.equal(parseTaskListQuery("page=2.5").page, 1);
  assert.equal(TaskList.DEFAULT_SIZE, 100);

  assert.deepEqual(parseRoute("#/jobs/abc-1"), { view: "job", id: "abc-1", tasks: DEFAULT });
  const q = { state: "RUNNING", sort: "creation_time", desc: true, page: 3, size: 50 };
  const hash = taskListHash("abc-1", q);
  assert.equal(hash, "#/jobs/abc-1?state=RUNNING&sort=creation_time&order=desc&size=50&page=3");
  assert.deepEqual(parseRoute(hash), { view: "job", id: "abc-1", tasks: q });
  assert.equal(taskListHash("abc-1", DEFAULT), "#/jobs/abc-1", "defaults are left out");
});

Deno.test("the table asks TaskManager::Query for one page in its order, of its state only if it has one", () => {
  assert.deepEqual(taskListRequest("j1", DEFAULT), {
    jobId: { value: "j1" },
    spec: {
      pagination: { offset: 0, limit: 100, orderBy: [{ order: "ASC", property: { value: "instanceId" } }] },
    },
  });
  const q = { state: "PENDING", sort: "reason", desc: true, page: 3, size: 50 };
  assert.deepEqual(taskListRequest("j1", q), {
    jobId: { value: "j1" },
    spec: {
      taskStates: ["PENDING"],
      pagination: { offset: 100, limit: 50, orderBy: [{ order: "DESC", property: { value: "reason" } }] },
    },
  });
});

Deno.test("a page of a big job: its rows in the API's order, where it is among them, links to the others", () => {
  const q = { ...DEFAULT, page: 2 };
  const records = Array.from({ length: 100 }, (_, i) => task(100 + i));
  const v = view(snapshot(q, records, 10_000), q);
  assert.equal(v.id, "tasks");
  assert.equal(v.select("h3")[0].textContent, "Tasks (10,000)");
  assert.deepEqual(
    rows(v).map((r) => r.getAttribute("data-instance")),
    records.map((t) => String(t.instanceId)),
  );
  const pager = v.select("div.pager-top")[0];
  assert.equal(pager.select("span.page-of")[0].textContent, "tasks 101–200 of 10,000 · page 2 of 100");
  const link = (rel: string) => hrefOf(pager.select(`a[data-page=${rel}]`)[0]);
  assert.equal(link("previous"), "#/jobs/j1");
  assert.equal(link("next"), "#/jobs/j1?page=3");
  assert.equal(link("last"), "#/jobs/j1?page=100");
  assert.equal(v.select("div.pager-bottom").length, 1, "a long page has the links below it too");
  // The existing columns, in their order.
  assert.deepEqual(v.select("th").map((th) => th.textContent.replace(/ [▲▼]$/, "")), [
    "Instance",
    "Name",
    "State",
    "Goal",
    "Host",
    "Started",
    "Completed",
    "Failures",
    "Message",
    "Reason",
  ]);
  const last = view(snapshot({ ...q, page: 100 }, [task(9_999)], 10_000), { ...q, page: 100 });
  assert.equal(last.select("a[data-page=next]").length, 0, "no next page after the last");
  assert.equal(last.select("div.pager-bottom").length, 0);
});

Deno.test("column headers sort through the hash: ascending first, again to reverse, from the first page", () => {
  const q = { ...DEFAULT, state: "RUNNING", page: 4 };
  const v = view(snapshot(q, [task(0)], 9_990), q);
  const header = (prop: string) => v.select(`th[data-sort=${prop}]`)[0];
  assert.deepEqual(v.select("th[data-sort]").map((th) => th.getAttribute("data-sort")), [
    "instanceId",
    "name",
    "state",
    "host",
    "creation_time",
    "message",
    "reason",
  ]);
  assert.equal(header("instanceId").getAttribute("aria-sort"), "ascending");
  assert.equal(header("instanceId").textContent, "Instance ▲");
  assert.equal(header("host").getAttribute("aria-sort"), undefined);
  assert.equal(hrefOf(header("instanceId").select("a")[0]), "#/jobs/j1?state=RUNNING&order=desc");
  assert.equal(hrefOf(header("host").select("a")[0]), "#/jobs/j1?state=RUNNING&sort=host");
  assert.equal(hrefOf(header("creation_time").select("a")[0]), "#/jobs/j1?state=RUNNING&sort=creation_time");

  const desc = { ...DEFAULT, sort: "host", desc: true };
  const d = view(snapshot(desc, [task(2)], 10_000), desc);
  const host = d.select("th[data-sort=host]")[0];
  assert.equal(host.getAttribute("aria-sort"), "descending");
  assert.equal(host.textContent, "Host ▼");
  assert.equal(hrefOf(host.select("a")[0]), "#/jobs/j1?sort=host", "again: ascending");
  assert.equal(d.select("th[aria-sort]").length, 1);
});

Deno.test("the state filter: every state the job's tasks are in with its count, the one shown marked", () => {
  const q = { ...DEFAULT, sort: "host", page: 3 };
  const v = view(snapshot(q, [task(0)], 10_000), q);
  const chips = v.select("a.state-chip");
  assert.deepEqual(chips.map((c) => c.textContent), ["All 10,000", "PENDING 10", "RUNNING 9,990"]);
  assert.deepEqual(chips.map(hrefOf), [
    "#/jobs/j1?sort=host",
    "#/jobs/j1?state=PENDING&sort=host",
    "#/jobs/j1?state=RUNNING&sort=host",
  ]);
  assert.deepEqual(chips.map((c) => c.getAttribute("aria-current")), ["true", undefined, undefined]);

  // Filtered to a state no task is in any more: still listed, marked, and the table says why it is empty.
  const killed = { ...DEFAULT, state: "KILLED" };
  const k = view(snapshot(killed, [], 0), killed);
  const marked = k.select("a[aria-current]");
  assert.deepEqual(marked.map((c) => c.textContent), ["KILLED 0"]);
  assert.equal(k.select("td.empty")[0].textContent, "No task is KILLED");
  assert.equal(k.select("span.page-of")[0].textContent, "no tasks · page 1 of 1");
});

Deno.test("pending tasks show why they wait; the page size is a link that starts from the first page", () => {
  const why = "resource pool /small: its limit of 1 cpu is used";
  const q = { ...DEFAULT, state: "PENDING", page: 2 };
  const v = view(snapshot(q, [task(140, "PENDING", why)], 101), q);
  const cells = rows(v)[0].select("td").map((td) => td.textContent);
  assert.deepEqual(cells, ["140", "big", "PENDING", "SUCCEEDED", "—", "—", "—", "0", why, ""]);
  assert.deepEqual(v.select("a.size").map(hrefOf), [
    "#/jobs/j1?state=PENDING&size=50",
    "#/jobs/j1?state=PENDING&size=200",
    "#/jobs/j1?state=PENDING&size=500",
    "#/jobs/j1?state=PENDING&size=1000",
  ]);
  assert.equal(v.select("span.current")[0].textContent, "100");
});

Deno.test("a page not loaded yet or that failed to load says so; the filter still shows", () => {
  const q = { ...DEFAULT, page: 2 };
  // The snapshot holds page 1 (the hash just changed): the refresh under way brings page 2.
  const stale = view(snapshot(DEFAULT, [task(0)], 10_000), q);
  assert.equal(rows(stale).length, 0);
  assert.match(stale.textContent, /Loading…/);
  assert.equal(stale.select("a.state-chip").length, 3);
  const failed = view({ job: { info: job(), tasksFor: taskListHash("j1", q) } }, q);
  assert.match(failed.textContent, /Tasks could not be loaded \(see the error above\)/);
  // No task counts yet: the heading counts the instances.
  const none = view(snapshot(DEFAULT, [], 0), DEFAULT, job({}));
  assert.equal(none.select("h3")[0].textContent, "Tasks (10,000)");
  assert.equal(none.select("td.empty")[0].textContent, "No tasks");
});
