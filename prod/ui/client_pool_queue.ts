/**
 * Browser code of the web UI, part 4b: a leaf pool's queues, opened in the pools view. The resource manager's
 * `GetPendingTasks` lists each queue's first gangs in the order they are admitted; the view numbers them and
 * groups each gang's tasks by job, so an operator sees where a job stands in line.
 * Runs in the browser (see client_dom.ts for the rules).
 */
import type { PendingGangJson, PendingTasksJson, RespoolInfoJson, RowToggle } from "./api_types.ts";
import { count, h, type UiElement } from "./client_dom.ts";

/** How much of a pool's queues the page asks for. */
export class PoolQueue {
  /** Gangs asked for per queue on each refresh: the head of the line, not all of a long one. */
  static readonly MAX_GANGS = 20;
}

/** A leaf pool (not the root) whose usage counts queued demand: the pools whose queues may be opened. */
export function hasQueuedDemand(p: RespoolInfoJson): boolean {
  return isLeafPool(p) && (p.usage ?? []).some((u) => (u.demand ?? 0) > 0);
}

export function isLeafPool(p: RespoolInfoJson): boolean {
  return !p.children.length && p.path.value !== "/";
}

/** The pools whose queues to load: the opened ones that are still leaf pools (GetPendingTasks refuses others). */
export function queuesToLoad(pools: RespoolInfoJson[], open: ReadonlySet<string>): RespoolInfoJson[] {
  return pools.filter((p) => open.has(p.id.value) && isLeafPool(p));
}

/**
 * The `GetPendingTasks` body for a pool: the first MAX_GANGS gangs of each of its queues, and one more, which
 * tells whether more wait than are shown (the API does not count a queue).
 */
export function pendingTasksRequest(poolId: string): Record<string, unknown> {
  return { respoolID: { value: poolId }, limit: PoolQueue.MAX_GANGS + 1 };
}

/** A gang's tasks by job: jobs in the order their first task comes, each job's instances ascending. */
export function gangJobs(gang: PendingGangJson): { jobId: string; instances: number[] }[] {
  const byJob = new Map<string, number[]>();
  for (const id of gang.taskIDs ?? []) {
    // `<jobId>-<instanceId>`: the job id (a UUID) has dashes of its own, the instance id comes after the last.
    // An id of another shape is shown whole, as a job without instances.
    const cut = id.lastIndexOf("-"), tail = id.slice(cut + 1);
    const ok = cut > 0 && /^\d+$/.test(tail);
    const jobId = ok ? id.slice(0, cut) : id;
    const list = byJob.get(jobId) ?? [];
    if (ok) list.push(Number(tail));
    byJob.set(jobId, list);
  }
  return [...byJob].map(([jobId, instances]) => ({ jobId, instances: instances.sort((a, b) => a - b) }));
}

/** A job id short enough for a line of many: its first 8 characters. */
export function shortJobId(jobId: string): string {
  return jobId.length > 9 ? `${jobId.slice(0, 8)}…` : jobId;
}

/** One job's tasks in a gang: "job 1b2c3d4e… (name) instances 3, 4, 7", the id linking to the job's page. */
export function gangJobView(g: { jobId: string; instances: number[] }, name: string | undefined): UiElement {
  const n = g.instances.length;
  return h(
    "span",
    { class: "gang-job", "data-job": g.jobId },
    "job ",
    h(
      "a",
      { href: `#/jobs/${encodeURIComponent(g.jobId)}`, class: "queue-job", title: g.jobId },
      shortJobId(g.jobId),
    ),
    name ? h("span", { class: "muted" }, ` (${name})`) : null,
    n ? ` ${n === 1 ? "instance" : "instances"} ` : null,
    n ? h("span", { class: "instances" }, g.instances.join(", ")) : null,
  );
}

/**
 * One queue's gangs, numbered from the one admitted next: the first MAX_GANGS of them; `gangs` holding more
 * says more wait (the API gives no count of a queue).
 */
export function queueView(queue: string, loaded: PendingGangJson[], names: Map<string, string>): UiElement {
  const { MAX_GANGS } = PoolQueue;
  const more = loaded.length > MAX_GANGS;
  const gangs = loaded.slice(0, MAX_GANGS), n = gangs.length;
  return h(
    "div",
    { class: "queue", "data-queue": queue },
    h(
      "div",
      { class: "queue-name" },
      h("strong", {}, `${queue} queue`),
      more
        ? ` · more than ${count(MAX_GANGS)} gangs in line`
        : ` · ${count(n)} ${n === 1 ? "gang" : "gangs"} in line`,
      more ? h("span", { class: "muted" }, ` (the first ${MAX_GANGS} shown)`) : null,
    ),
    h(
      "table",
      { class: "gangs" },
      h("thead", {}, h("tr", {}, h("th", {}, "Position"), h("th", {}, "Tasks"))),
      h(
        "tbody",
        {},
        ...gangs.map((g, i) =>
          h(
            "tr",
            { class: "gang", "data-position": i + 1 },
            h("td", { class: "position" }, i + 1),
            h(
              "td",
              {},
              ...gangJobs(g).flatMap((j, k) => [k ? "; " : null, gangJobView(j, names.get(j.jobId))]),
            ),
          )
        ),
      ),
    ),
  );
}

/**
 * An opened pool's row under its resources, across the pools table's `columns`: each of its queues in the
 * order they are admitted from, or why there is none to show (`loaded` is undefined until the first load, null
 * when the load failed). `names` are the job names known (the active jobs loaded), by job id.
 */
export function poolQueueRow(
  pool: RespoolInfoJson,
  loaded: PendingTasksJson | null | undefined,
  names: Map<string, string>,
  columns: number,
): UiElement {
  const queues = Object.entries(loaded?.pendingGangsByQueue ?? {}).filter(([, q]) => q.pendingGangs?.length);
  const body = loaded === undefined
    ? [h("p", { class: "muted" }, "Loading the queue…")]
    : loaded === null
    ? [h("p", { class: "muted" }, "The queue could not be loaded (see the error above).")]
    : queues.length
    ? queues.map(([queue, q]) => queueView(queue, q.pendingGangs ?? [], names))
    : [h("p", { class: "muted" }, `Nothing is queued in ${pool.path.value}.`)];
  return h(
    "tr",
    { class: "pool-queue", "data-queue-of": pool.path.value },
    h("td", { colspan: columns }, ...body),
  );
}

/** The button that opens or closes a pool's queue. */
export function queueToggle(pool: RespoolInfoJson, toggle: RowToggle<string>): UiElement {
  const open = toggle.open.has(pool.id.value);
  return h("button", {
    type: "button",
    class: "queue-toggle",
    "aria-expanded": String(open),
    "data-pool": pool.path.value,
    onclick: () => toggle.toggle(pool.id.value),
  }, `${open ? "▾ Hide" : "▸ Show"} queue`);
}

export const POOL_QUEUE_CODE = [
  PoolQueue,
  hasQueuedDemand,
  isLeafPool,
  queuesToLoad,
  pendingTasksRequest,
  gangJobs,
  shortJobId,
  gangJobView,
  queueView,
  poolQueueRow,
  queueToggle,
];
