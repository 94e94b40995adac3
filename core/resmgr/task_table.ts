/** The resource manager's tasks as rows of typed columns, one row per task from enqueue until it ends. */
import type { RmTask } from "../messages.ts";
import type { Resources } from "../model/resources.ts";
import { grownColumn } from "../model/columns.ts";
import { TASK_STATES, type TaskState } from "../model/states.ts";
import type { Address } from "../ports/transport.ts";
import { taskFlags } from "./allocation.ts";
import type { QueuedGang } from "./queued_gang.ts";
import type { RespoolNode } from "./respool_node.ts";

/** Rows keep Peloton's wire numbers of task states; these are the ones the resource manager acts on. */
export const { PENDING, READY, PLACING, PLACED, LAUNCHING, RUNNING, PREEMPTING } = TASK_STATES;

const NAMES: TaskState[] = [];
for (const name of Object.keys(TASK_STATES) as TaskState[]) NAMES[TASK_STATES[name]] = name;

export function stateName(code: number): TaskState {
  return NAMES[code];
}

/** No row: `rowOf` of an unknown task, the ends of a pool's active list. */
export const NONE = -1;

const INITIAL_ROWS = 1024;

/**
 * Rows are reused as tasks come and go, so a million running tasks are a million rows of a few arrays
 * rather than a million objects the collector traces and, when batch tasks end after minutes, sweeps.
 * A row's generation grows each time it is freed: a queue or batch that kept a row number together with
 * its generation recognises a task that has gone since (and a row taken by another task).
 */
export class TaskTable {
  readonly #rowOf = new Map<string, number>();
  #rows = 0;
  readonly #free: number[] = [];
  /** Sparse: only production runs several job managers, and few tasks fail placement. */
  readonly #owner = new Map<number, Address>();
  readonly #lastFailure = new Map<number, string>();
  /**
   * Gang members (tasks sent with `minInstances > 1`, never revocable) by job, and each member's set: a gang
   * is one victim to the preemptor, from admission until its tasks end. Sparse: most tasks are in no gang.
   */
  readonly #gangsByJob = new Map<string, GangRows>();
  readonly #gangOf = new Map<number, GangRows>();

  readonly taskId: string[] = [];
  /** The task as the job manager sent it, until it is placed; retries and preemptions requeue it. */
  readonly task: (RmTask | null)[] = [];
  /**
   * The gang the task is queued or ready in. A task moved out (preempted back to PENDING, retried) gets a
   * new gang, so an older gang still listing the row skips it.
   */
  readonly gang: (QueuedGang | null)[] = [];
  readonly pool: (RespoolNode | null)[] = [];
  /** What the task counts for in its pool's allocation (the `RmTask`'s, kept past the task). */
  readonly resources: (Resources | null)[] = [];
  state = new Uint8Array(INITIAL_ROWS);
  /** `allocation.ts`'s REVOCABLE, PREEMPTIBLE and CONTROLLER bits. */
  flags = new Uint8Array(INITIAL_ROWS);
  priority = new Float64Array(INITIAL_ROWS);
  /** When the task first reported RUNNING (NaN before): the ranker takes the most recently started first. */
  startedMs = new Float64Array(INITIAL_ROWS);
  /** When the task was enqueued (NaN for one tracked as it was, after a restart): its queue delay's start. */
  enqueuedMs = new Float64Array(INITIAL_ROWS);
  /** Dequeues to placement so far; a PLACING timeout or answer belongs to one attempt. */
  attempts = new Int32Array(INITIAL_ROWS);
  /**
   * The attempt still out with a placement engine when the task was preempted back to PENDING (NONE if
   * none): its answer (placement or failure) is dropped rather than taken for a later attempt.
   */
  staleAttempt = new Int32Array(INITIAL_ROWS);
  /** Neighbours in the pool's list of admitted tasks (`ActiveList`). */
  prev = new Int32Array(INITIAL_ROWS);
  next = new Int32Array(INITIAL_ROWS);
  generation = new Int32Array(INITIAL_ROWS);

  /** Tasks known. */
  get size(): number {
    return this.#rowOf.size;
  }

  rowOf(taskId: string): number {
    return this.#rowOf.get(taskId) ?? NONE;
  }

  /** A row for `task`, under its id (the caller has dropped any earlier task of that id). */
  add(task: RmTask, pool: RespoolNode, state: number, owner: Address | undefined): number {
    const row = this.#free.length ? this.#free.pop()! : this.#newRow();
    this.taskId[row] = task.taskId;
    this.task[row] = task;
    this.gang[row] = null;
    this.pool[row] = pool;
    this.resources[row] = task.resources;
    this.state[row] = state;
    this.flags[row] = taskFlags(task);
    this.priority[row] = task.priority;
    this.startedMs[row] = NaN;
    this.enqueuedMs[row] = NaN;
    this.attempts[row] = 0;
    this.staleAttempt[row] = NONE;
    this.prev[row] = NONE;
    this.next[row] = NONE;
    if (owner !== undefined) this.#owner.set(row, owner);
    if (task.minInstances > 1 && !task.revocable) this.#joinGang(row, task.jobId);
    this.#rowOf.set(task.taskId, row);
    return row;
  }

  /** The task is gone: its id is forgotten and its row freed for the next task. */
  remove(row: number): void {
    this.#rowOf.delete(this.taskId[row]);
    this.taskId[row] = "";
    this.task[row] = null;
    this.gang[row] = null;
    this.pool[row] = null;
    this.resources[row] = null;
    this.generation[row]++;
    if (this.#owner.size) this.#owner.delete(row);
    if (this.#lastFailure.size) this.#lastFailure.delete(row);
    if (this.#gangOf.size) this.#leaveGang(row);
    this.#free.push(row);
  }

  /**
   * The rows of the gang the task in `row` belongs to, itself included: every task of its job the table
   * holds that was sent as a gang member (a job has one gang: its instances below `minimumRunningInstances`),
   * whatever its run and state. Undefined for a task in no gang. Read-only to the caller.
   */
  gangOf(row: number): ReadonlySet<number> | undefined {
    return this.#gangOf.size ? this.#gangOf.get(row) : undefined;
  }

  #joinGang(row: number, jobId: string): void {
    let members = this.#gangsByJob.get(jobId);
    if (!members) this.#gangsByJob.set(jobId, members = new GangRows(jobId));
    members.add(row);
    this.#gangOf.set(row, members);
  }

  #leaveGang(row: number): void {
    const members = this.#gangOf.get(row);
    if (!members) return;
    this.#gangOf.delete(row);
    members.delete(row);
    if (!members.size) this.#gangsByJob.delete(members.jobId);
  }

  /** Whether `row` still holds the task it held at `generation`. */
  holds(row: number, generation: number): boolean {
    return this.generation[row] === generation;
  }

  /** The job manager driving the task, when several run (production); undefined: any job manager. */
  owner(row: number): Address | undefined {
    return this.#owner.size ? this.#owner.get(row) : undefined;
  }

  setOwner(row: number, owner: Address): void {
    this.#owner.set(row, owner);
  }

  /** The task's job manager is gone: any job manager may hear of it until one takes its job over. */
  clearOwner(row: number): void {
    if (this.#owner.size) this.#owner.delete(row);
  }

  /** Why the last placement attempt failed, shown by `task list`. */
  lastFailure(row: number): string | undefined {
    return this.#lastFailure.size ? this.#lastFailure.get(row) : undefined;
  }

  setLastFailure(row: number, reason: string): void {
    this.#lastFailure.set(row, reason);
  }

  /** A read-only look at one task, for tests and metrics; undefined when the task is unknown. */
  get(taskId: string): TaskView | undefined {
    const row = this.rowOf(taskId);
    return row === NONE ? undefined : new TaskView(this, row);
  }

  *values(): IterableIterator<TaskView> {
    for (const row of this.#rowOf.values()) yield new TaskView(this, row);
  }

  *[Symbol.iterator](): IterableIterator<[string, TaskView]> {
    for (const [id, row] of this.#rowOf) yield [id, new TaskView(this, row)];
  }

  #newRow(): number {
    const row = this.#rows++;
    // By half: at a million rows, doubling would leave up to 40 MB of columns unused.
    if (row === this.state.length) this.#grow(row + (row >> 1));
    this.taskId.push("");
    this.task.push(null);
    this.gang.push(null);
    this.pool.push(null);
    this.resources.push(null);
    return row;
  }

  #grow(rows: number): void {
    this.state = grownColumn(this.state, rows);
    this.flags = grownColumn(this.flags, rows);
    this.priority = grownColumn(this.priority, rows);
    this.startedMs = grownColumn(this.startedMs, rows);
    this.enqueuedMs = grownColumn(this.enqueuedMs, rows);
    this.attempts = grownColumn(this.attempts, rows);
    this.staleAttempt = grownColumn(this.staleAttempt, rows);
    this.prev = grownColumn(this.prev, rows);
    this.next = grownColumn(this.next, rows);
    this.generation = grownColumn(this.generation, rows);
  }
}

/** The rows of one job's gang members. */
class GangRows extends Set<number> {
  constructor(readonly jobId: string) {
    super();
  }
}

/** One task's row as it is when read; it reads nothing once the task is gone. */
export class TaskView {
  readonly #table: TaskTable;
  readonly #row: number;
  readonly #generation: number;

  constructor(table: TaskTable, row: number) {
    this.#table = table;
    this.#row = row;
    this.#generation = table.generation[row];
  }

  #at(): number {
    if (!this.#table.holds(this.#row, this.#generation)) throw new Error("Cannot read a task that has ended");
    return this.#row;
  }

  get taskId(): string {
    return this.#table.taskId[this.#at()];
  }

  get state(): TaskState {
    return stateName(this.#table.state[this.#at()]);
  }

  get pool(): RespoolNode {
    return this.#table.pool[this.#at()]!;
  }

  get placementAttempts(): number {
    return this.#table.attempts[this.#at()];
  }

  get startedMs(): number | undefined {
    const ms = this.#table.startedMs[this.#at()];
    return Number.isNaN(ms) ? undefined : ms;
  }

  get lastFailure(): string | undefined {
    return this.#table.lastFailure(this.#at());
  }

  get owner(): Address | undefined {
    return this.#table.owner(this.#at());
  }
}
