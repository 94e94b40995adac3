/**
 * What the resource manager holds, for operators: Peloton's private `ResourceManagerService`
 * GetActiveTasks (its tasks by state, filtered by job, pool and state), GetPendingTasks (a leaf pool's
 * queued gangs, each queue in admission order) and GetOrphanTasks (tasks it holds that nothing will end),
 * served through the public API as Peloton's `resmgr tasks active|pending|orphan` CLI calls them. The
 * service's other methods are messages between the daemons here, not API calls.
 */
import type { ApiRequest } from "../messages.ts";
import { parseMesosTaskId } from "../model/records.ts";
import { toLimits } from "../model/resources.ts";
import { TASK_STATES, type TaskState } from "../model/states.ts";
import { MAX_UINT32 } from "../model/_schema_kit.ts";
import type { ResourceManager } from "./resmgr.ts";
import type { QueueKind, RespoolNode } from "./respool_node.ts";
import { stateName } from "./task_table.ts";
import { UUID } from "../model/got_text.ts";

export const RESMGR_SERVICE = "peloton.private.resmgr.ResourceManagerService";

type Body = Record<string, unknown>;
type Result = { body: Body } | {
  error: { code: "invalid-argument" | "not-found" | "unimplemented"; message: string };
};

/** Peloton's names of a pool's queues (`respool.QueueType.String()`), in the order it lists them. */
const QUEUE_NAMES: [QueueKind, string][] = [
  ["pending", "pending"],
  ["nonPreemptible", "non-preemptible"],
  ["controller", "controller"],
  ["revocable", "revocable"],
];

/** Gangs listed per queue when the request gives no limit (the default of Peloton's CLI). */
export const DEFAULT_PENDING_LIMIT = 100;

export function inspectTasks(rm: ResourceManager, req: ApiRequest): Result {
  const method = req.procedure.slice(req.procedure.indexOf("::") + 2);
  const body = (req.body ?? {}) as Body;
  if (method === "GetActiveTasks") return activeTasks(rm, body);
  if (method === "GetPendingTasks") return pendingTasks(rm, body);
  if (method === "GetOrphanTasks") return orphanTasks(rm, body);
  return { error: { code: "unimplemented", message: `procedure ${req.procedure} is not implemented` } };
}

/**
 * A request's uint32 `limit` (a number, or a decimal string as proto3 JSON writes numbers), absent as 0; a
 * larger or other value is undefined.
 */
function uint32Limit(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 0 && n <= MAX_UINT32 ? n : undefined;
}

/** A pool named by its id or its path (`/DefaultResPool`), as `respoolID` or `respoolID.value`. */
function poolOf(rm: ResourceManager, v: unknown): RespoolNode | string {
  const name = typeof v === "object" && v !== null ? (v as Body).value : v;
  if (typeof name !== "string" || !name) {
    return `respoolID: got ${JSON.stringify(v)}, expected a resource pool id or path`;
  }
  return (name.startsWith("/") ? rm.tree.lookup(name) : rm.tree.get(name)) ??
    `resource pool ${name} not found`;
}

/**
 * GetActiveTasks: every task the resource manager holds (PENDING until it ends), grouped by state as
 * `tasksByState: {STATE: {taskEntry: [...]}}`, each entry with its pool's path and its latest placement
 * failure as `reason`. `limit` (ours; Peloton's has none) caps the entries, `total` counts every match.
 */
function activeTasks(rm: ResourceManager, body: Body): Result {
  const jobId = body.jobID ?? "";
  // Empty is every job; anything else that is no job's id would list nothing, as if the job had no tasks.
  if (typeof jobId !== "string" || (jobId !== "" && !UUID.test(jobId))) {
    return invalid(`jobID: got ${JSON.stringify(jobId)}, expected a job id`);
  }
  let pool: RespoolNode | undefined;
  if (body.respoolID !== undefined && body.respoolID !== "") {
    const p = poolOf(rm, body.respoolID);
    if (typeof p === "string") return p.endsWith("not found") ? notFound(p) : invalid(p);
    pool = p;
  }
  const states = new Set<number>();
  if (body.states !== undefined) {
    if (!Array.isArray(body.states)) return invalid("states: expected a list of task states");
    for (const s of body.states) {
      if (typeof s !== "string" || !(s in TASK_STATES)) {
        return invalid(
          `states: got ${JSON.stringify(s)}, expected task states such as PENDING, READY, RUNNING`,
        );
      }
      states.add(TASK_STATES[s as TaskState]);
    }
  }
  const limit = uint32Limit(body.limit);
  if (limit === undefined) {
    return invalid(
      `limit: got ${JSON.stringify(body.limit)}, expected a whole number from 0 to ${MAX_UINT32} (0 for all)`,
    );
  }
  const t = rm.tasks, prefix = jobId ? `${jobId}-` : "";
  const byState: Record<string, { taskEntry: Body[] }> = {};
  let total = 0, listed = 0;
  for (let row = 0; row < t.pool.length; row++) {
    const node = t.pool[row];
    if (node === null || node === undefined) continue;
    if (pool && node !== pool) continue;
    if (states.size && !states.has(t.state[row])) continue;
    const taskId = t.taskId[row];
    if (prefix && !(taskId.startsWith(prefix) && isInstanceOf(taskId, prefix.length))) continue;
    total++;
    if (limit && listed >= limit) continue;
    listed++;
    const state = stateName(t.state[row]);
    const entry: Body = {
      taskID: taskId,
      taskState: state,
      respool: node.path,
      reason: t.lastFailure(row) ?? "",
    };
    (byState[state] ??= { taskEntry: [] }).taskEntry.push(entry);
  }
  for (const list of Object.values(byState)) list.taskEntry.sort((a, b) => compareIds(a.taskID, b.taskID));
  return { body: { tasksByState: byState, total } };
}

/**
 * GetPendingTasks: a leaf pool's queued gangs, the first `limit` of each queue in the order they are admitted,
 * as `pendingGangsByQueue: {pending: {pendingGangs: [{taskIDs}]}, ...}` with Peloton's task ids
 * (`<jobId>-<instanceId>`); empty queues are left out, as Peloton leaves them.
 */
function pendingTasks(rm: ResourceManager, body: Body): Result {
  if (body.respoolID === undefined) return invalid("respoolID: expected a resource pool id or path");
  const pool = poolOf(rm, body.respoolID);
  if (typeof pool === "string") return pool.endsWith("not found") ? notFound(pool) : invalid(pool);
  if (!pool.isLeaf) return invalid(`respoolID: resource pool ${pool.path} is not a leaf pool`);
  const limit = uint32Limit(body.limit);
  if (limit === undefined) {
    return invalid(
      `limit: got ${JSON.stringify(body.limit)}, expected a whole number of gangs from 0 to ${MAX_UINT32}`,
    );
  }
  const most = limit || DEFAULT_PENDING_LIMIT;
  const byQueue: Record<string, { pendingGangs: { taskIDs: string[] }[] }> = {};
  for (const [kind, name] of QUEUE_NAMES) {
    const gangs: { taskIDs: string[] }[] = [];
    for (const gang of pool.queue(kind)) {
      if (gangs.length >= most) break;
      // A gang whose tasks all went while it was queued waits to be skipped at admission: not pending.
      if (!gang.rows.length) continue;
      gangs.push({ taskIDs: gang.rows.map((row) => pelotonTaskId(gang.table.taskId[row])) });
    }
    if (gangs.length) byQueue[name] = { pendingGangs: gangs };
  }
  return { body: { pendingGangsByQueue: byQueue } };
}

/**
 * GetOrphanTasks: tasks the resource manager holds, and may count in a pool's allocation, that no daemon is
 * going to end, as `orphanTasks: [...]` in task id order, each with Peloton's `resmgr.Task` fields (`id`,
 * `jobId`, `taskId`, `resource`, `hostname` when known) and ours: `state`, `respool`, `held` (counted in the
 * pool's allocation), `kind` and `reason`. `respoolID` (a path or id; a pool above leaves takes in its
 * subtree) narrows the list.
 *
 * Peloton's orphan is the run a task's new run replaced in its tracker (keyed by `<jobId>-<instanceId>`)
 * before the old run's end arrived: kept aside, still allocated, until that end comes. Here the table is
 * keyed by run (`<jobId>-<instanceId>-<runId>`), so the old run simply stays beside the new one: a row with
 * a later run of the same instance also held is Peloton's orphan (`SUPERSEDED`). The job manager enqueues
 * a new run only after the old one's end, which reaches the resource manager too, so such a row means that
 * end was lost. The other task nothing here moves on is one still LAUNCHING after its placement was handed
 * to the job manager for the last time (`LAUNCH_ABANDONED`, see `launchingResends`): only a status from the
 * host manager or an end from the job manager frees it.
 */
function orphanTasks(rm: ResourceManager, body: Body): Result {
  let pool: RespoolNode | undefined;
  if (body.respoolID !== undefined && body.respoolID !== "") {
    const p = poolOf(rm, body.respoolID);
    if (typeof p === "string") return p.endsWith("not found") ? notFound(p) : invalid(p);
    pool = p;
  }
  const t = rm.tasks;
  // The latest run held of each instance, over every pool: a newer run may sit in another pool.
  const newest = new Map<string, number>();
  for (let row = 0; row < t.pool.length; row++) {
    if (!t.pool[row]) continue;
    const id = parseMesosTaskId(t.taskId[row]);
    if (!id) continue;
    const key = pelotonTaskId(t.taskId[row]);
    if ((newest.get(key) ?? -1) < id.runId) newest.set(key, id.runId);
  }
  const orphans: Body[] = [];
  for (let row = 0; row < t.pool.length; row++) {
    const node = t.pool[row];
    if (!node || (pool && !within(node, pool))) continue;
    const taskId = t.taskId[row], id = parseMesosTaskId(taskId);
    const later = id ? newest.get(pelotonTaskId(taskId))! : -1;
    const abandoned = rm.launchAbandoned(row);
    if (!id || (later <= id.runId && !abandoned)) continue;
    const entry: Body = {
      id: { value: pelotonTaskId(taskId) },
      jobId: { value: id.jobId },
      taskId: { value: taskId },
      resource: toLimits(t.resources[row]!),
      state: stateName(t.state[row]),
      respool: node.path,
      held: node.active.has(t, row),
    };
    if (later > id.runId) {
      entry.kind = "SUPERSEDED";
      entry.reason =
        `run ${later} of the instance is held too; this run's end has not reached the resource manager`;
    } else {
      entry.kind = "LAUNCH_ABANDONED";
      entry.hostname = abandoned!.hostname;
      entry.reason = `placed on ${abandoned!.hostname} and handed to the job manager ${abandoned!.sent} ` +
        "times, with no status from the host manager since";
    }
    orphans.push(entry);
  }
  orphans.sort((a, b) => compareIds((a.taskId as Body).value, (b.taskId as Body).value));
  return { body: { orphanTasks: orphans } };
}

/** Whether `node` is `pool` or under it. */
function within(node: RespoolNode, pool: RespoolNode): boolean {
  for (let n: RespoolNode | undefined = node; n; n = n.parent) if (n === pool) return true;
  return false;
}

/** `<jobId>-<instanceId>-<runId>` → `<jobId>-<instanceId>`. */
function pelotonTaskId(mesosTaskId: string): string {
  return mesosTaskId.slice(0, mesosTaskId.lastIndexOf("-"));
}

/** The id continues the job's prefix with `<instance>-<run>`, so job `a` does not match job `a-b`'s tasks. */
function isInstanceOf(taskId: string, from: number): boolean {
  const rest = taskId.slice(from);
  return /^\d+-\d+$/.test(rest);
}

/** Job id, then instance and run as numbers. */
function compareIds(a: unknown, b: unknown): number {
  const [x, y] = [String(a), String(b)];
  const cut = (id: string) => {
    const run = id.lastIndexOf("-"), inst = id.lastIndexOf("-", run - 1);
    return [id.slice(0, inst), Number(id.slice(inst + 1, run)), Number(id.slice(run + 1))] as const;
  };
  const [ja, ia, ra] = cut(x), [jb, ib, rb] = cut(y);
  return ja < jb ? -1 : ja > jb ? 1 : ia - ib || ra - rb;
}

const invalid = (message: string): Result => ({ error: { code: "invalid-argument", message } });
const notFound = (message: string): Result => ({ error: { code: "not-found", message } });
