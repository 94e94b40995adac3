/**
 * Task queries: v0 `TaskManager.Query`'s `QuerySpec` (states, names, hosts, a page and its order) and the
 * order of v1alpha `QueryPods`, as Peloton's task store answers them (`pkg/storage/cassandra/store.go`
 * `QueryTasks` and `Less`).
 */
import type { TaskConfig } from "../model/config_types.ts";
import type { TaskRecord } from "../model/records.ts";
import { TASK_STATES, type TaskState } from "../model/states.ts";
import { messageOf, type OrderBy, type Parsed, parseOrderBy } from "./query_spec.ts";
import { uint32Of } from "./api_json.ts";

/** The properties Peloton sorts tasks by. */
export const TASK_ORDER_PROPERTIES = [
  "creation_time",
  "host",
  "instanceId",
  "message",
  "name",
  "reason",
  "state",
] as const;
export type TaskOrderProperty = typeof TASK_ORDER_PROPERTIES[number];

export type TaskOrder = OrderBy<TaskOrderProperty>;

/** Tasks a v0 query returns when its `pagination.limit` is 0 or absent (Peloton's `_defaultQueryLimit`). */
export const DEFAULT_TASK_QUERY_LIMIT = 10;

export interface TaskQuerySpec {
  states: Set<TaskState>;
  names: Set<string>;
  hosts: Set<string>;
  offset: number;
  /** As asked (0 when absent): the response repeats it, as Peloton's does. */
  limit: number;
  order: TaskOrder[];
}

/** A task query's `pagination.orderBy` (see `parseOrderBy`), each property one of Peloton's. */
export function parseTaskOrder(raw: unknown, where: string): Parsed<TaskOrder[]> {
  return parseOrderBy(raw, where, TASK_ORDER_PROPERTIES);
}

/** A v0 task state as a query names it: `RUNNING` or its number. */
function taskState(s: unknown): TaskState | undefined {
  if (typeof s === "number") {
    return (Object.keys(TASK_STATES) as TaskState[]).find((k) => TASK_STATES[k] === s);
  }
  const name = String(s).toUpperCase();
  return name in TASK_STATES ? name as TaskState : undefined;
}

/** Reads a v0 task `QuerySpec`; a bad field is named with the value and what was expected. */
export function parseTaskQuerySpec(raw: unknown, where = "spec"): Parsed<TaskQuerySpec> {
  const fail = (field: string, got: unknown, expected: string): Parsed<TaskQuerySpec> => ({
    ok: false,
    message: `${where}.${field}: got ${JSON.stringify(got)}, expected ${expected}`,
  });
  const given = messageOf(raw, where);
  if (!given.ok) return given;
  const spec = given.value;
  const lists: Record<"taskStates" | "names" | "hosts", unknown[]> = { taskStates: [], names: [], hosts: [] };
  for (const field of ["taskStates", "names", "hosts"] as const) {
    const v = spec[field];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) return fail(field, v, "a list");
    lists[field] = v;
  }
  const states = new Set<TaskState>();
  for (const [i, s] of lists.taskStates.entries()) {
    const state = taskState(s);
    if (!state) return fail(`taskStates[${i}]`, s, `one of ${Object.keys(TASK_STATES).join(", ")}`);
    states.add(state);
  }
  for (const field of ["names", "hosts"] as const) {
    const bad = lists[field].findIndex((x) => typeof x !== "string");
    if (bad >= 0) return fail(`${field}[${bad}]`, lists[field][bad], "a string");
  }
  const paged = messageOf(spec.pagination, `${where}.pagination`);
  if (!paged.ok) return paged;
  const page = paged.value;
  // uint32s in Peloton's PaginationSpec: a larger number is refused saying so.
  const offset = uint32Of(page.offset, `${where}.pagination.offset`);
  if (typeof offset === "string") return { ok: false, message: offset };
  const limit = uint32Of(page.limit, `${where}.pagination.limit`);
  if (typeof limit === "string") return { ok: false, message: limit };
  const order = parseTaskOrder(page.orderBy, `${where}.pagination.orderBy`);
  if (!order.ok) return order;
  return {
    ok: true,
    value: {
      states,
      names: new Set(lists.names as string[]),
      hosts: new Set(lists.hosts as string[]),
      offset,
      limit,
      order: order.value,
    },
  };
}

/**
 * Peloton's task order: each property in turn until two tasks differ, then instance id ascending. Tasks
 * without a start time (`creation_time` is the run's start) come after those with one in ascending order,
 * before them in descending order, as Peloton's `Less` has it.
 */
export function compareTasks(
  order: readonly TaskOrder[],
  nameOf: (t: TaskRecord) => string,
): (a: TaskRecord, b: TaskRecord) => number {
  return (a, b) => {
    for (const { property, desc } of order) {
      let c = 0;
      if (property === "creation_time") {
        const x = a.startTimeMs, y = b.startTimeMs;
        if (x === undefined || y === undefined) {
          if (x !== undefined) return desc ? 1 : -1;
          if (y !== undefined) return desc ? -1 : 1;
          continue;
        }
        c = x - y;
      } else if (property === "instanceId") c = a.instanceId - b.instanceId;
      else if (property === "state") c = TASK_STATES[a.state] - TASK_STATES[b.state];
      else {
        const x = property === "name" ? nameOf(a) : (property === "host" ? a.hostname : a[property]) ?? "";
        const y = property === "name" ? nameOf(b) : (property === "host" ? b.hostname : b[property]) ?? "";
        c = x < y ? -1 : x > y ? 1 : 0;
      }
      if (c !== 0) return desc ? -c : c;
    }
    return a.instanceId - b.instanceId;
  };
}

/**
 * The tasks a v0 query matches, in its order, and the page it asks for (`limit` 0 is
 * `DEFAULT_TASK_QUERY_LIMIT`); `total` counts every match.
 */
export function runTaskQuery(
  tasks: Iterable<TaskRecord>,
  q: TaskQuerySpec,
  configOf: (t: TaskRecord) => TaskConfig,
): { page: TaskRecord[]; total: number } {
  const nameOf = (t: TaskRecord) => configOf(t).name ?? "";
  const matched = [...tasks].filter((t) =>
    (!q.states.size || q.states.has(t.state)) &&
    (!q.names.size || q.names.has(nameOf(t))) &&
    (!q.hosts.size || (t.hostname !== undefined && q.hosts.has(t.hostname)))
  ).sort(compareTasks(q.order, nameOf));
  const limit = q.limit || DEFAULT_TASK_QUERY_LIMIT;
  return { page: matched.slice(q.offset, q.offset + limit), total: matched.length };
}
