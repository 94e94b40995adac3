/** A job's tasks table: its query in the URL, what it asks the API for, and the view it builds from a page. */
import assert from "node:assert/strict";
import type { JobInfoJson, Snapshot, TaskInfoJson, TaskListQuery } from "./api_types.ts";
import { parseRoute } from "./client_app.ts";
import {
  parseTaskListQuery,
  TaskFilter,
  TaskList,
  taskListHash,
  taskListRequest,
  tasksView,
} from "./client_tasks.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const DEFAULT: TaskListQuery = {
  states: [],
  names: [],
  hosts: [],
  sort: "instanceId",
  desc: false,
  page: 1,
  size: 100,
};

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

const view = (snap: Snapshot, q: TaskListQuery, info = job(), filter = new TaskFilter(() => {})) =>
  fake(tasksView(snap, info, q, filter.form));
const rows = (v: FakeElement) => v.select("tr[data-instance]");
const hrefOf = (el: FakeElement | undefined) => el?.getAttribute("href");

Deno.test("the tasks table's query comes from the job's hash; out-of-range values fall back to the defaults", () => {
  assert.deepEqual(parseTaskListQuery(""), DEFAULT);
  assert.deepEqual(parseTaskListQuery("state=pending&sort=host&order=DESC&page=3&size=500"), {
    ...DEFAULT,
    states: ["PENDING"],
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
  const q = { ...DEFAULT, states: ["RUNNING"], sort: "creation_time", desc: true, page: 3, size: 50 };
  const hash = taskListHash("abc-1", q);
  assert.equal(hash, "#/jobs/abc-1?state=RUNNING&sort=creation_time&order=desc&size=50&page=3");
  assert.deepEqual(parseRoute(hash), { view: "job", id: "abc-1", tasks: q });
  assert.equal(taskListHash("abc-1", DEFAULT), "#/jobs/abc-1", "defaults are left out");
});

Deno.test("states, names and hosts are comma lists in the hash: trimmed, without empty or repeated items", () => {
  const q = parseTaskListQuery(
    "state=running,%20pending,,RUNNING&name=%20web-1%20,,web-0,web-1&host=agent-2,",
  );
  assert.deepEqual(q, {
    ...DEFAULT,
    states: ["PENDING", "RUNNING"],
    names: ["web-1", "web-0"],
    hosts: ["agent-2"],
  });
  const hash = taskListHash("abc-1", { ...q, sort: "host", page: 2 });
  assert.equal(hash, "#/jobs/abc-1?state=PENDING,RUNNING&name=web-1,web-0&host=agent-2&sort=host&page=2");
  assert.deepEqual(parseRoute(hash), { view: "job", id: "abc-1", tasks: { ...q, sort: "host", page: 2 } });
  // A name the URL must encode round-trips too.
  const odd = { ...DEFAULT, names: ["a b&c=d"] };
  assert.equal(taskListHash("j1", odd), "#/jobs/j1?name=a+b%26c%3Dd");
  assert.deepEqual(parseRoute(taskListHash("j1", odd)), { view: "job", id: "j1", tasks: odd });
  assert.deepEqual(parseTaskListQuery("state=,&name=%20&host=,%20,"), DEFAULT, "nothing left: no filter");
});

Deno.test("an old link to one state still shows that state, and keeps its hash", () => {
  const old = "#/jobs/j1?state=PENDING&order=desc";
  const route = parseRoute(old);
  assert.deepEqual(route, { view: "job", id: "j1", tasks: { ...DEFAULT, states: ["PENDING"], desc: true } });
  assert.equal(taskListHash("j1", { ...DEFAULT, states: ["PENDING"], desc: true }), old);
  assert.deepEqual(taskListRequest("j1", { ...DEFAULT, states: ["PENDING"] }).spec, {
    taskStates: ["PENDING"],
    pagination: { offset: 0, limit: 100, orderBy: [{ order: "ASC", property: { value: "instanceId" } }] },
  });
});

Deno.test("the table asks TaskManager::Query for one page in its order, with only the filters it has", () => {
  assert.deepEqual(taskListRequest("j1", DEFAULT), {
    jobId: { value: "j1" },
    spec: {
      pagination: { offset: 0, limit: 100, orderBy: [{ order: "ASC", property: { value: "instanceId" } }] },
    },
  });
  const q = {
    states: ["PENDING", "RUNNING"],
    names: ["web-0", "web-3"],
    hosts: ["agent-1"],
    sort: "reason",
    desc: true,
    page: 3,
    size: 50,
  };
  assert.deepEqual(taskListRequest("j1", q), {
    jobId: { value: "j1" },
    spec: {
      taskStates: ["PENDING", "RUNNING"],
      names: ["web-0", "web-3"],
      hosts: ["agent-1"],
      pagination: { offset: 100, limit: 50, orderBy: [{ order: "DESC", property: { value: "reason" } }] },
    },
  });
  assert.deepEqual(Object.keys(taskListRequest("j1", { ...q, states: [], names: [] }).spec as object), [
    "pagination",
    "hosts",
  ]);
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
    "Config version",
    "Host",
    "Started",
    "Completed",
    "Failures",
    "Message",
    "Reason",
    "Events & logs",
  ]);
  const last = view(snapshot({ ...q, page: 100 }, [task(9_999)], 10_000), { ...q, page: 100 });
  assert.equal(last.select("a[data-page=next]").length, 0, "no next page after the last");
  assert.equal(last.select("div.pager-bottom").length, 0);
});

Deno.test("column headers sort through the hash: ascending first, again to reverse, from the first page", () => {
  const q = { ...DEFAULT, states: ["RUNNING"], page: 4 };
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

Deno.test("the state filter: every state the job's tasks are in with its count, All marked when none is chosen", () => {
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

  // Filtered to states no task is in any more: still listed, marked, and the table says why it is empty.
  const gone = { ...DEFAULT, states: ["KILLED", "LOST"] };
  const k = view(snapshot(gone, [], 0), gone);
  const marked = k.select("a[aria-current]");
  assert.deepEqual(marked.map((c) => c.textContent), ["KILLED 0", "LOST 0"]);
  assert.equal(k.select("td.empty")[0].textContent, "No task matches the filter");
  assert.equal(k.select("span.page-of")[0].textContent, "no tasks · page 1 of 1");
});

Deno.test("a state chip adds its state to the ones shown or takes it out, from the first page", () => {
  const stats = { RUNNING: 9_000, PENDING: 990, FAILED: 10 };
  const chips = (q: TaskListQuery) => {
    const v = view(snapshot(q, [task(0)], 10_000, job(stats)), q, job(stats));
    return Object.fromEntries(
      v.select("a.state-chip").map((c) => [c.getAttribute("data-state"), {
        href: hrefOf(c),
        marked: c.getAttribute("aria-current") === "true",
      }]),
    );
  };
  const none = chips({ ...DEFAULT, page: 2 });
  assert.deepEqual(Object.keys(none), ["ALL", "FAILED", "PENDING", "RUNNING"]);
  assert.deepEqual(none.PENDING, { href: "#/jobs/j1?state=PENDING", marked: false });
  assert.deepEqual(none.ALL, { href: "#/jobs/j1", marked: true });

  const one = chips({ ...DEFAULT, states: ["PENDING"], names: ["big"], page: 3 });
  assert.deepEqual(one.RUNNING, { href: "#/jobs/j1?state=PENDING,RUNNING&name=big", marked: false });
  assert.deepEqual(one.FAILED, { href: "#/jobs/j1?state=FAILED,PENDING&name=big", marked: false });
  assert.deepEqual(one.PENDING, { href: "#/jobs/j1?name=big", marked: true }, "the last one out: any state");
  assert.deepEqual(one.ALL, { href: "#/jobs/j1?name=big", marked: false }, "All keeps the name filter");

  const two = chips({ ...DEFAULT, states: ["PENDING", "RUNNING"] });
  assert.deepEqual(two.RUNNING, { href: "#/jobs/j1?state=PENDING", marked: true });
  assert.deepEqual(two.PENDING, { href: "#/jobs/j1?state=RUNNING", marked: true });
  assert.deepEqual(two.FAILED, { href: "#/jobs/j1?state=FAILED,PENDING,RUNNING", marked: false });
  assert.equal(two.ALL.marked, false);
});

Deno.test("the name and host form: the app's one node in the view, showing the URL's filter, applying a new one", () => {
  const applied: [string[], string[]][] = [];
  const filter = new TaskFilter((names, hosts) => applied.push([names, hosts]));
  const form = fake(filter.form);
  const q = { ...DEFAULT, names: ["web-1", "web-2"], hosts: ["agent-1"] };
  const v = view(snapshot(q, [], 0), q, job(), filter);
  assert.equal(v.select("form[id=task-query]")[0], form, "the view places the form it was given, not a copy");
  const [names, hosts] = form.select("input");
  assert.deepEqual([names.id, hosts.id], ["task-names", "task-hosts"]);
  assert.equal(names.getAttribute("type"), "search");
  assert.equal(v.select("td.empty")[0].textContent, "No task matches the filter");

  filter.show(q);
  assert.deepEqual([names.value, hosts.value], ["web-1, web-2", "agent-1"]);
  names.value = " web-3 ,, web-1,web-3";
  hosts.value = "";
  form.fire("submit");
  assert.deepEqual(applied, [[["web-3", "web-1"], []]]);
  const clear = form.select("button.clear")[0];
  assert.equal(clear.getAttribute("type"), "button", "Clear does not submit the form a second time");
  clear.click();
  assert.deepEqual(applied[1], [[], []]);
  assert.deepEqual([names.value, hosts.value], ["", ""]);
});

Deno.test("pending tasks show why they wait; the page size is a link that starts from the first page", () => {
  const why = "resource pool /small: its limit of 1 cpu is used";
  const q = { ...DEFAULT, states: ["PENDING"], page: 2 };
  const v = view(snapshot(q, [task(140, "PENDING", why)], 101), q);
  const cells = rows(v)[0].select("td").map((td) => td.textContent);
  assert.deepEqual(cells, [
    "140",
    "big",
    "PENDING",
    "SUCCEEDED",
    "—",
    "—",
    "—",
    "—",
    "0",
    why,
    "",
    "▸ Events & logs",
  ]);
  assert.deepEqual(v.select("a.size").map(hrefOf), [
    "#/jobs/j1?state=PENDING&size=50",
    "#/jobs/j1?state=PENDING&size=200",
    "#/jobs/j1?state=PENDING&size=500",
    "#/jobs/j1?state=PENDING&size=1000",
  ]);
  assert.equal(v.select("span.current")[0].textContent, "100");
});

Deno.test("each task shows the config version it runs, marked when it is not the job's", () => {
  // After an aborted update to version 5: instance 0 runs it, 1 and 2 still run 2, 3 is being moved to 5.
  const info = { ...job(), runtime: { ...job().runtime, configurationVersion: 5 } };
  const at = (i: number, configVersion: number, desiredConfigVersion = configVersion): TaskInfoJson => {
    const t = task(i);
    return { ...t, runtime: { ...t.runtime, configVersion, desiredConfigVersion } };
  };
  const records = [at(0, 5), at(1, 2), at(2, 2), at(3, 2, 5)];
  const v = view(snapshot(DEFAULT, records, 4, info), DEFAULT, info);
  const header = v.select("th").map((th) => th.textContent).indexOf("Config version");
  assert.ok(header >= 0, "the table has a Config version column");
  const cells = rows(v).map((tr) => tr.select("td")[header]);
  assert.deepEqual(cells.map((td) => td.textContent), ["5", "2", "2", "2 → 5"]);
  assert.deepEqual(cells.map((td) => td.select("span.other-version").length), [0, 1, 1, 1]);
  assert.equal(cells[1].select("span")[0].getAttribute("title"), "Runs config version 2, not the job's 5");
});

Deno.test("a page not loaded yet or that failed to load says so; the filter still shows", () => {
  const q = { ...DEFAULT, page: 2 };
  // The snapshot holds page 1 (the hash just changed): the refresh under way brings page 2.
  const stale = view(snapshot(DEFAULT, [task(0)], 10_000), q);
  assert.equal(rows(stale).length, 0);
  assert.match(stale.textContent, /Loading…/);
  assert.equal(stale.select("a.state-chip").length, 3);
  assert.equal(stale.select("form[id=task-query]").length, 1);
  const failed = view({ job: { info: job(), tasksFor: taskListHash("j1", q) } }, q);
  assert.match(failed.textContent, /Tasks could not be loaded \(see the error above\)/);
  // No task counts yet: the heading counts the instances.
  const none = view(snapshot(DEFAULT, [], 0), DEFAULT, job({}));
  assert.equal(none.select("h3")[0].textContent, "Tasks (10,000)");
  assert.equal(none.select("td.empty")[0].textContent, "No tasks");
});
