/** Peloton's preemption ranker (`preemption/ranker.go`): which of a pool's tasks to evict, in order. */
import type { Resources } from "../model/resources.ts";
import type { TaskState } from "../model/states.ts";
import type { RmTaskEntry } from "./rm_task.ts";
import { RESOURCE_EPSILON as EPSILON, type Scalar } from "./scalar.ts";

/** States a victim may be in, in the order they are taken (`taskStatesPreemptionOrder`). */
const STATE_ORDER: Partial<Record<TaskState, number>> = { READY: 0, PLACING: 1, RUNNING: 2 };

/**
 * `statePriorityRuntimeRanker`: READY, then PLACING, then RUNNING; within a state lower priority first;
 * among RUNNING tasks of equal priority the most recently started first. Ties keep the input order.
 */
export function compareVictims(a: RmTaskEntry, b: RmTaskEntry): number {
  const s = STATE_ORDER[a.state]! - STATE_ORDER[b.state]!;
  if (s !== 0) return s;
  const p = a.task.priority - b.task.priority;
  if (p !== 0) return p;
  if (a.state !== "RUNNING") return 0;
  return (b.startedMs ?? 0) - (a.startedMs ?? 0);
}

/**
 * `GetTasksToEvict`: revocable tasks ranked and filtered against `slackToFree` first, then preemptible
 * non-revocable tasks against `nonSlackToFree`. Non-preemptible tasks are never candidates, nor tasks
 * in other states (PLACED, LAUNCHING, PREEMPTING...).
 */
export function tasksToEvict(
  active: Iterable<RmTaskEntry>,
  slackToFree: Scalar,
  nonSlackToFree: Scalar,
): RmTaskEntry[] {
  const revocable: RmTaskEntry[] = [], nonRevocable: RmTaskEntry[] = [];
  for (const e of active) {
    if (!e.task.preemptible || STATE_ORDER[e.state] === undefined) continue;
    (e.task.revocable ? revocable : nonRevocable).push(e);
  }
  revocable.sort(compareVictims);
  nonRevocable.sort(compareVictims);
  return [...filterTasks(slackToFree, revocable), ...filterTasks(nonSlackToFree, nonRevocable)];
}

/**
 * Peloton's `filterTasks`: walks the ranked list until nothing is left to free, skipping a task that
 * frees nothing still needed. Peloton compares with the original amount; we compare with what is still
 * to free, so a task that helps only a dimension already covered is not taken (fewer evictions).
 */
export function filterTasks(toFree: Scalar, ranked: RmTaskEntry[]): RmTaskEntry[] {
  const left = { cpu: toFree.cpu, memory: toFree.memory, disk: toFree.disk, gpu: toFree.gpu };
  const out: RmTaskEntry[] = [];
  for (const e of ranked) {
    if (isNothing(left)) break;
    const r = e.task.resources;
    if (!helps(left, r)) continue;
    out.push(e);
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
