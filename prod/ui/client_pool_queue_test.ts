/** The pools view's queues: which pools may open theirs, what the page asks for, and the gangs it shows in line. */
import assert from "node:assert/strict";
import type { JobInfoJson, PendingTasksJson, RespoolInfoJson, RowToggle, Snapshot } from "./api_types.ts";
import { poolsView } from "./client_cluster.ts";
import { gangJobs, pendingTasksRequest, PoolQueue, queuesToLoad } from "./client_pool_queue.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const JOB_A = "1b2c3d4e-aaaa-4bbb-8ccc-000000000001";
const JOB_B = "9f8e7d6c-aaaa-4bbb-8ccc-000000000002";

/** A pool under `parent` (none for the root) queueing `cpuDemand` cores. */
function pool(
  id: string,
  path: string,
  parent?: string,
  children: string[] = [],
  cpuDemand = 0,
): RespoolInfoJson {
  return {
    id: { value: id },
    path: { value: path },
    parent: parent ? { value: parent } : undefined,
    children: children.map((value) => ({ value })),
    config: { name: path.split("/").pop() || "root", resources: [] },
    usage: [{ kind: "cpu", allocation: 8, entitlement: 8, demand: cpuDemand }],
  };
}

/** The root; /batch (a parent with queued demand) over /batch/wide (a leaf queueing) and /batch/idle (a leaf not). */
const POOLS = [
  pool("root", "/", undefined, ["batch"]),
  pool("batch", "/batch", "root", ["wide", "idle"], 8),
  pool("wide", "/batch/wide", "batch", [], 8),
  pool("idle", "/batch/idle", "batch"),
];

const job = (id: string, name: string): JobInfoJson => ({
  id: { value: id },
  config: { name, type: "BATCH", instanceCount: 10 },
  runtime: { state: "PENDING", goalState: "SUCCEEDED" },
});

/** Two queues, each in admission order; a gang of job A's instances given out of order, and one of two jobs. */
const QUEUED: PendingTasksJson = {
  pendingGangsByQueue: {
    "non-preemptible": {
      pendingGangs: [
        { taskIDs: [`${JOB_A}-7`, `${JOB_A}-3`, `${JOB_A}-4`] },
        { taskIDs: [`${JOB_B}-0`] },
        { taskIDs: [`${JOB_B}-1`, `${JOB_A}-9`, `${JOB_B}-2`] },
      ],
    },
    revocable: { pendingGangs: [{ taskIDs: [`${JOB_B}-5`] }] },
  },
};

function toggles(open: string[] = []): RowToggle<string> & { toggled: string[] } {
  const toggled: string[] = [];
  return { open: new Set(open), toggle: (id) => toggled.push(id), toggled };
}

function view(open: string[], poolQueues: Snapshot["poolQueues"] = {}, t = toggles(open)): FakeElement {
  const snap: Snapshot = {
    pools: POOLS,
    poolQueues,
    activeJobs: { records: [job(JOB_A, "wide-a")], pagination: { offset: 0, limit: 1, total: 1 } },
  };
  return fake(poolsView(snap, t));
}

const texts = (els: FakeElement[]) => els.map((el) => el.textContent);

Deno.test("the page asks GetPendingTasks for the first 20 gangs a queue and one more, of the opened leaf pools only", () => {
  assert.equal(PoolQueue.MAX_GANGS, 20);
  // The 21st says whether more wait than are shown: the API does not count a queue.
  assert.deepEqual(pendingTasksRequest("wide"), { respoolID: { value: "wide" }, limit: 21 });
  // The root and a parent pool are refused by the API (not leaves); a pool gone since it was opened is skipped.
  const open = new Set(["root", "batch", "wide", "idle", "gone"]);
  assert.deepEqual(queuesToLoad(POOLS, open).map((p) => p.path.value), ["/batch/wide", "/batch/idle"]);
  assert.deepEqual(queuesToLoad(POOLS, new Set()), []);
});

Deno.test("a leaf pool with queued demand has a button that opens its queue, by pool id", () => {
  const t = toggles();
  const v = view([], {}, t);
  const buttons = v.select("button.queue-toggle");
  assert.deepEqual(
    buttons.map((b) => b.getAttribute("data-pool")),
    ["/batch/wide"],
    "not the parent, not /idle",
  );
  assert.equal(buttons[0].textContent, "▸ Show queue");
  assert.equal(buttons[0].getAttribute("aria-expanded"), "false");
  // The button sits in the pool's own cell.
  const cell = v.select("tr[data-pool=/batch/wide]")[0].select("td.pool")[0];
  assert.equal(cell.select("button.queue-toggle").length, 1);
  buttons[0].click();
  assert.deepEqual(t.toggled, ["wide"]);
  assert.equal(v.select("tr.pool-queue").length, 0, "no queue is shown before one is opened");

  // Opened, it closes; an opened queue that has emptied keeps its button. (Siblings come by name.)
  const t2 = toggles(["wide", "idle"]);
  const opened = view(["wide", "idle"], { wide: QUEUED, idle: {} }, t2);
  const shown = opened.select("button.queue-toggle");
  assert.deepEqual(
    shown.map((b) => [b.getAttribute("data-pool"), b.textContent, b.getAttribute("aria-expanded")]),
    [["/batch/idle", "▾ Hide queue", "true"], ["/batch/wide", "▾ Hide queue", "true"]],
  );
  shown[1].click();
  assert.deepEqual(t2.toggled, ["wide"]);
});

Deno.test("an opened queue lists its gangs in admission order, each gang's tasks by job with a link to it", () => {
  const v = view(["wide"], { wide: QUEUED });
  const row = v.select("tr.pool-queue[data-queue-of=/batch/wide]");
  assert.equal(row.length, 1, "one row under the pool's resources");
  // In the pool's tbody, after its four resource rows, across the whole table.
  const group = v.select("tbody.pool-group").find((g) => g.select("tr.pool-queue").length)!;
  assert.deepEqual(
    group.children.map((tr) => typeof tr === "string" ? tr : tr.getAttribute("data-kind") ?? tr.className),
    ["cpu", "memory", "disk", "gpu", "pool-queue"],
  );
  assert.equal(row[0].select("td")[0].getAttribute("colspan"), "9");

  const queues = row[0].select("div.queue");
  assert.deepEqual(queues.map((q) => q.getAttribute("data-queue")), ["non-preemptible", "revocable"]);
  assert.deepEqual(texts(row[0].select("div.queue-name")), [
    "non-preemptible queue · 3 gangs in line",
    "revocable queue · 1 gang in line",
  ]);
  const gangs = queues[0].select("tr.gang");
  assert.deepEqual(gangs.map((g) => g.getAttribute("data-position")), ["1", "2", "3"]);
  assert.deepEqual(gangs.map((g) => texts(g.select("td"))), [
    ["1", "job 1b2c3d4e… (wide-a) instances 3, 4, 7"],
    ["2", "job 9f8e7d6c… instance 0"],
    ["3", "job 9f8e7d6c… instances 1, 2; job 1b2c3d4e… (wide-a) instance 9"],
  ]);
  const links = gangs[2].select("a.queue-job");
  assert.deepEqual(links.map((a) => a.getAttribute("href")), [`#/jobs/${JOB_B}`, `#/jobs/${JOB_A}`]);
  assert.deepEqual(links.map((a) => a.getAttribute("title")), [JOB_B, JOB_A], "the whole id on hover");
  assert.deepEqual(gangs[2].select("span.gang-job").map((s) => s.getAttribute("data-job")), [JOB_B, JOB_A]);
  assert.equal(v.select("tr.pool-queue").length, 1, "only the opened pool shows its queue");
});

Deno.test("an opened queue says it is loading, failed to load, is empty, or shows only the first 20 gangs", () => {
  const message = (loaded: Snapshot["poolQueues"]) =>
    view(["wide"], loaded).select("tr.pool-queue")[0].textContent;
  assert.equal(message({}), "Loading the queue…");
  assert.equal(message({ wide: null }), "The queue could not be loaded (see the error above).");
  assert.equal(message({ wide: {} }), "Nothing is queued in /batch/wide.");
  assert.equal(message({ wide: { pendingGangsByQueue: {} } }), "Nothing is queued in /batch/wide.");
  const queued = (n: number): PendingTasksJson => ({
    pendingGangsByQueue: {
      pending: { pendingGangs: Array.from({ length: n }, (_, i) => ({ taskIDs: [`${JOB_A}-${i}`] })) },
    },
  });
  // Twenty in line and no more: all of them, counted.
  const all = view(["wide"], { wide: queued(20) });
  assert.equal(all.select("div.queue-name")[0].textContent, "pending queue · 20 gangs in line");
  assert.equal(all.select("tr.gang").length, 20);
  // More than twenty (the 21st asked for came): the first twenty, saying so.
  const v = view(["wide"], { wide: queued(21) });
  assert.equal(
    v.select("div.queue-name")[0].textContent,
    "pending queue · more than 20 gangs in line (the first 20 shown)",
  );
  assert.equal(v.select("tr.gang").length, 20);
  // The root is never a leaf: an id of it in the opened set shows nothing.
  assert.equal(view(["root", "batch"], { root: QUEUED }).select("tr.pool-queue").length, 0);
});

Deno.test("a gang's task ids split at the last dash: the job id keeps its own dashes", () => {
  assert.deepEqual(gangJobs({ taskIDs: [`${JOB_A}-12`, `${JOB_A}-2`, `${JOB_B}-0`] }), [
    { jobId: JOB_A, instances: [2, 12] },
    { jobId: JOB_B, instances: [0] },
  ]);
  assert.deepEqual(gangJobs({ taskIDs: ["odd", "job-x"] }), [
    { jobId: "odd", instances: [] },
    { jobId: "job-x", instances: [] },
  ]);
  assert.deepEqual(gangJobs({}), []);
});

Deno.test("each resource row shows its allocation, entitlement and demand from the pool's `usage`", () => {
  // respool.proto's ResourcePoolInfo names the list `usage`, as the API answers it.
  const rows = view([]).select("tr[data-pool=/batch/wide]");
  const row = rows.find((r) => r.getAttribute("data-kind") === "cpu")!;
  // Allocation, slack, entitlement, demand: the last four cells.
  assert.deepEqual(texts(row.select("td")).slice(-4), ["8", "—", "8", "8"]);
});
