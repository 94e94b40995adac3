/** Peloton's preemption ranker (`preemption/ranker.go`): which of a pool's tasks to evict, in order. */
import type { Resources } from "../model/resources.ts";
import { PREEMPTIBLE, REVOCABLE } from "./allocation.ts";
import { PLACING, READY, RUNNING, type TaskTable } from "./task_table.ts";
import { RESOURCE_EPSILON as EPSILON, type Scalar } from "./scalar.ts";

/** States a victim may be in, in the order they are taken (`taskStatesPreemptionOrder`); -1: never. */
const STATE_ORDER = new Int8Array(32).fill(-1);
STATE_ORDER[READY] = 0;
STATE_ORDER[PLACING] = 1;
STATE_ORDER[RUNNING] = 2;

/**
 * `statePriorityRuntimeRanker`: READY, then PLACING, then RUNNING; within a state lower priority first;
 * among RUNNING tasks of equal priority the most recently started first. Ties keep the input order.
 */
export function compareVictims(t: TaskTable, a: number, b: number): number {
  const s = STATE_ORDER[t.state[a]] - STATE_ORDER[t.state[b]];
  if (s !== 0) return s;
  const p = t.priority[a] - t.priority[b];
  if (p !== 0) return p;
  if (t.state[a] !== RUNNING) return 0;
  return startedOrZero(t, b) - startedOrZero(t, a);
}

function startedOrZero(t: TaskTable, row: number): number {
  const ms = t.startedMs[row];
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * `GetTasksToEvict`: revocable tasks ranked and filtered against `slackToFree` first, then preemptible
 * non-revocable tasks against `nonSlackToFree`. Non-preemptible tasks are never candidates, nor tasks
 * in other states (PLACED, LAUNCHING, PREEMPTING...). Takes and returns rows of `t`.
 */
export function tasksToEvict(
  t: TaskTable,
  active: Iterable<number>,
  slackToFree: Scalar,
  nonSlackToFree: Scalar,
): number[] {
  const revocable: number[] = [], nonRevocable: number[] = [];
  for (const row of active) {
    const flags = t.flags[row];
    if (!(flags & PREEMPTIBLE) || STATE_ORDER[t.state[row]] < 0) continue;
    (flags & REVOCABLE ? revocable : nonRevocable).push(row);
  }
  const compare = (a: number, b: number) => compareVictims(t, a, b);
  revocable.sort(compare);
  nonRevocable.sort(compare);
  return [...filterTasks(t, slackToFree, revocable), ...filterTasks(t, nonSlackToFree, nonRevocable)];
}

/**
 * Peloton's `filterTasks`: walks the ranked list until nothing is left to free, skipping a task that
 * frees nothing still needed. Peloton compares with the original amount; we compare with what is still
 * to free, so a task that helps only a dimension already covered is not taken (fewer evictions).
 */
export function filterTasks(t: TaskTable, toFree: Scalar, ranked: number[]): number[] {
  const left = { cpu: toFree.cpu, memory: toFree.memory, disk: toFree.disk, gpu: toFree.gpu };
  const out: number[] = [];
  for (const row of ranked) {
    if (isNothing(left)) break;
    const r = t.resources[row]!;
    if (!helps(left, r)) continue;
    out.push(row);
    left.cpu = minus(left.cpu, r.cpuMilli / 1000);
    left.memory = minus(left.memory, r.memMb);
    left.disk = minus(left.disk, r.diskMb);
    left.gpu = minus(left.gpu, r.gpuMilli / 1000);
  }
  return out;
}

/** Whether subtracting `r` changes `left` (Peloton's `Subtract` then `Equal`). */
function helps(left: Scalar, r: Resources): boolean {
  return (left.cpu > 0 && r.cpuMilli > 0) || (left.memory > 0 && r.memMb > 0) ||
    (left.disk > 0 && r.diskMb > 0) || (left.gpu > 0 && r.gpuMilli > 0);
}

/** One kind of Peloton's `Subtract`: clamped at zero, and below the epsilon is zero. */
function minus(from: number, value: number): number {
  if (from < value) return 0;
  const d = from - value;
  return d < EPSILON ? 0 : d;
}

function isNothing(s: Scalar): boolean {
  return s.cpu === 0 && s.memory === 0 && s.disk === 0 && s.gpu === 0;
}
