/** Peloton's preemption ranker (`preemption/ranker.go`): which of a pool's tasks to evict, in order. */
import { addInto, type Resources, zero } from "../model/resources.ts";
import { PREEMPTIBLE, REVOCABLE } from "./allocation.ts";
import type { RespoolNode } from "./respool_node.ts";
import { LAUNCHING, PLACED, PLACING, READY, RUNNING, type TaskTable } from "./task_table.ts";
import { TASK_STATES } from "../model/states.ts";
import { RESOURCE_EPSILON as EPSILON, type Scalar } from "./scalar.ts";

/** States a victim may be in, in the order they are taken (`taskStatesPreemptionOrder`); -1: never. */
const STATE_ORDER = new Int8Array(32).fill(-1);
STATE_ORDER[READY] = 0;
STATE_ORDER[PLACING] = 1;
STATE_ORDER[RUNNING] = 2;

/**
 * States a gang member is admitted and not yet on its way out in: its gang's victims when the gang is
 * preempted (PLACED and after too, unlike a task alone, so no member is left running without the others).
 */
const HELD = new Uint8Array(32);
for (const s of [READY, PLACING, PLACED, LAUNCHING, TASK_STATES.LAUNCHED, TASK_STATES.STARTING, RUNNING]) {
  HELD[s] = 1;
}

/**
 * A gang as one victim (ours; Peloton ranked and took its tasks one by one, splitting gangs): every member
 * still held goes, and what they hold in the pool counts toward what is freed. It ranks as one task: in the
 * latest state of its members (one RUNNING member makes it a running gang), at its priority (its job's;
 * the highest of its members, were they to differ), started when its last member started (the gang has run
 * whole since then: the most recently whole goes first, losing the least work).
 */
export interface GangVictim {
  rows: number[];
  state: number;
  priority: number;
  startedMs: number;
  /** What its members hold in the pool being preempted. */
  resources: Resources;
}

/**
 * `statePriorityRuntimeRanker`: READY, then PLACING, then RUNNING; within a state lower priority first;
 * among RUNNING tasks of equal priority the most recently started first. Ties keep the input order. A row
 * in `gangs` stands for its gang, ranked as the gang.
 */
export function compareVictims(
  t: TaskTable,
  a: number,
  b: number,
  gangs?: ReadonlyMap<number, GangVictim>,
): number {
  const ga = gangs?.get(a), gb = gangs?.get(b);
  const sa = ga ? ga.state : STATE_ORDER[t.state[a]], sb = gb ? gb.state : STATE_ORDER[t.state[b]];
  if (sa !== sb) return sa - sb;
  const p = (ga ? ga.priority : t.priority[a]) - (gb ? gb.priority : t.priority[b]);
  if (p !== 0) return p;
  if (sa !== STATE_ORDER[RUNNING]) return 0;
  return (gb ? gb.startedMs : startedOrZero(t, b)) - (ga ? ga.startedMs : startedOrZero(t, a));
}

function startedOrZero(t: TaskTable, row: number): number {
  const ms = t.startedMs[row];
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * `GetTasksToEvict`: revocable tasks ranked and filtered against `slackToFree` first, then preemptible
 * non-revocable tasks against `nonSlackToFree`. Non-preemptible tasks are never candidates, nor tasks
 * in other states (PLACED, LAUNCHING, PREEMPTING...). A gang is one candidate (`GangVictim`) if one of
 * its members is READY, PLACING or RUNNING and none of those held is non-preemptible; taking it takes all
 * of them. Takes and returns rows of `t` (`active`: the rows of one pool).
 */
export function tasksToEvict(
  t: TaskTable,
  active: Iterable<number>,
  slackToFree: Scalar,
  nonSlackToFree: Scalar,
): number[] {
  const revocable: number[] = [], nonRevocable: number[] = [];
  let gangs: Map<number, GangVictim> | undefined;
  let seen: Set<ReadonlySet<number>> | undefined;
  for (const row of active) {
    const members = t.gangOf(row);
    if (members) {
      seen ??= new Set();
      if (seen.has(members)) continue;
      seen.add(members);
      const gang = gangVictim(t, members, t.pool[row]!);
      if (!gang) continue;
      (gangs ??= new Map()).set(gang.rows[0], gang);
      // Gang members are never revocable (`TaskTable.gangOf`).
      nonRevocable.push(gang.rows[0]);
      continue;
    }
    const flags = t.flags[row];
    if (!(flags & PREEMPTIBLE) || STATE_ORDER[t.state[row]] < 0) continue;
    (flags & REVOCABLE ? revocable : nonRevocable).push(row);
  }
  const compare = (a: number, b: number) => compareVictims(t, a, b, gangs);
  revocable.sort(compare);
  nonRevocable.sort(compare);
  return [...filterTasks(t, slackToFree, revocable), ...filterTasks(t, nonSlackToFree, nonRevocable, gangs)];
}

/**
 * The gang of `members` as one victim of `pool`: its members held (`HELD`), in any pool (all go together),
 * with what those in `pool` hold. Undefined when it may not be preempted: a held member is
 * non-preemptible (a gang is preempted whole or not at all), or none is in a state a task alone is taken
 * in (READY, PLACING, RUNNING: a gang still being placed on hosts or launched is left alone, as such tasks
 * are).
 */
export function gangVictim(
  t: TaskTable,
  members: ReadonlySet<number>,
  pool: RespoolNode,
): GangVictim | undefined {
  const rows: number[] = [];
  const resources = zero();
  let state = -1, priority = -Infinity, startedMs = 0;
  for (const row of members) {
    if (!HELD[t.state[row]]) continue;
    if (!(t.flags[row] & PREEMPTIBLE)) return undefined;
    rows.push(row);
    state = Math.max(state, STATE_ORDER[t.state[row]]);
    priority = Math.max(priority, t.priority[row]);
    startedMs = Math.max(startedMs, startedOrZero(t, row));
    if (t.pool[row] === pool) addInto(resources, t.resources[row]!);
  }
  if (state < 0) return undefined;
  return { rows, state, priority, startedMs, resources };
}

/**
 * Peloton's `filterTasks`: walks the ranked list until nothing is left to free, skipping a task that
 * frees nothing still needed. Peloton compares with the original amount; we compare with what is still
 * to free, so a task that helps only a dimension already covered is not taken (fewer evictions). A row in
 * `gangs` stands for its gang: all it holds counts, and all its members are taken.
 */
export function filterTasks(
  t: TaskTable,
  toFree: Scalar,
  ranked: number[],
  gangs?: ReadonlyMap<number, GangVictim>,
): number[] {
  const left = { cpu: toFree.cpu, memory: toFree.memory, disk: toFree.disk, gpu: toFree.gpu };
  const out: number[] = [];
  for (const row of ranked) {
    if (isNothing(left)) break;
    const gang = gangs?.get(row);
    const r = gang ? gang.resources : t.resources[row]!;
    if (!helps(left, r)) continue;
    if (gang) out.push(...gang.rows);
    else out.push(row);
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
