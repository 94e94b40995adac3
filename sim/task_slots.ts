/** The simulated cluster's live tasks as rows of typed columns, reused as tasks come and go. */
import type { Resources } from "../core/model/resources.ts";
import { MESOS_TO_TASK_STATE, type MesosTaskState } from "../core/model/states.ts";
import { grownColumn as grow } from "../core/model/columns.ts";

/** Mesos task states by code; the cluster and its pending statuses keep codes, statuses carry names. */
export const STATE_NAMES = Object.keys(MESOS_TO_TASK_STATE) as MesosTaskState[];
const code = (s: MesosTaskState) => STATE_NAMES.indexOf(s);
export const STAGING = code("TASK_STAGING");
export const RUNNING = code("TASK_RUNNING");
export const FINISHED = code("TASK_FINISHED");
export const FAILED = code("TASK_FAILED");
export const KILLED = code("TASK_KILLED");
export const LOST = code("TASK_LOST");
export const ERROR = code("TASK_ERROR");

const TERMINAL = new Uint8Array(STATE_NAMES.length);
for (const c of [FINISHED, FAILED, KILLED, LOST, ERROR]) TERMINAL[c] = 1;

export function isTerminalCode(state: number): boolean {
  return TERMINAL[state] === 1;
}

/** A level every task of a group multiplies its cpu use by (a workload's traffic); events change it. */
export interface UsageGroup {
  level: number;
}

/** `healthy` before the task's first health-check result. */
export const HEALTH_UNKNOWN = -1;
/** No task (end of a host's list, a status about an unknown task, an id not found). */
export const NO_TASK = -1;
/** `find` on every host. */
export const ANY_HOST = -1;

/**
 * One row per task run on a host, until it ends (the launch spec itself is not kept: a million of them
 * would not fit; neither would a million task objects the collector has to trace).
 *
 * A row's generation only grows: a kill bumps it so the pending statuses of the killed run are ignored,
 * and freeing the row bumps it again, so statuses of an ended run never apply to the next task in it.
 *
 * Each host's tasks form a list in launch order, threaded through `next`/`prev`, and an open-addressing
 * table in typed arrays finds a task by id and host: no Map per host and no per-task entry objects.
 */
export class TaskSlots {
  taskId: string[] = [];
  /** Index of the task's host in the cluster's host list. */
  host = new Int32Array(1024);
  generation = new Int32Array(1024);
  state = new Uint8Array(1024);
  /** Latest health-check result (1 healthy, 0 not, HEALTH_UNKNOWN), repeated by reconciliation. */
  healthy = new Int8Array(1024);
  /**
   * Counted in its host's cpu accounting (until it ends, is killed or its host is lost): 0 no, else the
   * cluster's mark (whether the usage meter counts it too).
   */
  accounted = new Uint8Array(1024);
  revocable = new Uint8Array(1024);
  /** Modelled cpu use (milli-cores) and the fraction of its limit it comes from. */
  usedCpu = new Float64Array(1024);
  usageFraction = new Float64Array(1024);
  /** The usage meter's index of the pool the task's job runs in, or -1 (`SimCluster.setPool`). */
  pool = new Int32Array(1024);
  resources: (Resources | null)[] = [];
  usageGroup: (UsageGroup | null)[] = [];
  /** The next task on the same host, in launch order. */
  next = new Int32Array(1024);
  #prev = new Int32Array(1024);
  /** Where the row sits in `#table`, to delete it without hashing its id again. */
  #pos = new Int32Array(1024);
  #rows = 0;
  #free: number[] = [];
  /** First and last task of each host. */
  #head = new Int32Array(64).fill(NO_TASK);
  #tail = new Int32Array(64).fill(NO_TASK);
  /** Pairs (id hash, row + 1), 0 meaning empty, probed linearly; at most half full. */
  #table = new Int32Array(2 * 4096);
  #mask = 4096 - 1;
  #live = 0;

  /** First task of a host, or NO_TASK; walk on with `next`. */
  first(host: number): number {
    return host < this.#head.length ? this.#head[host] : NO_TASK;
  }

  /** The task with this id on `host` (ANY_HOST: on the host of lowest index that has one), or NO_TASK. */
  find(taskId: string, host: number, h: number = taskIdHash(taskId)): number {
    const table = this.#table, mask = this.#mask;
    let found = NO_TASK;
    for (let i = h & mask;; i = (i + 1) & mask) {
      const row = table[2 * i + 1] - 1;
      if (row < 0) return found;
      if (table[2 * i] !== h || this.taskId[row] !== taskId) continue;
      if (host !== ANY_HOST) {
        if (this.host[row] === host) return row;
      } else if (found === NO_TASK || this.host[row] < this.host[found]) found = row;
    }
  }

  /** A new task on `host`; `idHash` is `taskIdHash(taskId)`. */
  add(
    taskId: string,
    idHash: number,
    host: number,
    resources: Resources,
    revocable: boolean,
    usageFraction: number,
    usageGroup: UsageGroup | undefined,
    pool = -1,
  ): number {
    const slot = this.#free.length ? this.#free.pop()! : this.#newRow();
    this.taskId[slot] = taskId;
    this.host[slot] = host;
    this.state[slot] = STAGING;
    this.healthy[slot] = HEALTH_UNKNOWN;
    this.accounted[slot] = 0;
    this.revocable[slot] = revocable ? 1 : 0;
    this.usedCpu[slot] = 0;
    this.usageFraction[slot] = usageFraction;
    this.pool[slot] = pool;
    this.resources[slot] = resources;
    this.usageGroup[slot] = usageGroup ?? null;
    this.#link(slot, host);
    this.#insert(slot, idHash);
    return slot;
  }

  /** The run ended: its row goes back for reuse, and its pending statuses no longer apply. */
  remove(slot: number): void {
    this.#unlink(slot);
    this.#delete(this.#pos[slot]);
    this.generation[slot]++;
    this.taskId[slot] = "";
    this.resources[slot] = null;
    this.usageGroup[slot] = null;
    this.#free.push(slot);
  }

  #link(slot: number, host: number): void {
    if (host >= this.#head.length) {
      const n = Math.max(host + 1, this.#head.length * 2);
      this.#head = grow(this.#head, n, NO_TASK);
      this.#tail = grow(this.#tail, n, NO_TASK);
    }
    const last = this.#tail[host];
    this.#prev[slot] = last;
    this.next[slot] = NO_TASK;
    if (last === NO_TASK) this.#head[host] = slot;
    else this.next[last] = slot;
    this.#tail[host] = slot;
  }

  #unlink(slot: number): void {
    const host = this.host[slot], prev = this.#prev[slot], next = this.next[slot];
    if (prev === NO_TASK) this.#head[host] = next;
    else this.next[prev] = next;
    if (next === NO_TASK) this.#tail[host] = prev;
    else this.#prev[next] = prev;
  }

  #insert(slot: number, h: number): void {
    if (2 * (this.#live + 1) > this.#mask + 1) this.#rehash();
    const table = this.#table, mask = this.#mask;
    let i = h & mask;
    while (table[2 * i + 1] !== 0) i = (i + 1) & mask;
    table[2 * i] = h;
    table[2 * i + 1] = slot + 1;
    this.#pos[slot] = i;
    this.#live++;
  }

  /** Empties a table position, moving later entries of its probe run back so no lookup stops early. */
  #delete(i: number): void {
    const table = this.#table, mask = this.#mask;
    this.#live--;
    for (let j = (i + 1) & mask;; j = (j + 1) & mask) {
      const row = table[2 * j + 1] - 1;
      if (row < 0) break;
      const home = table[2 * j] & mask;
      // The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
      if (i <= j ? home > i && home <= j : home > i || home <= j) continue;
      table[2 * i] = table[2 * j];
      table[2 * i + 1] = row + 1;
      this.#pos[row] = i;
      i = j;
    }
    table[2 * i] = 0;
    table[2 * i + 1] = 0;
  }

  #rehash(): void {
    const old = this.#table;
    this.#table = new Int32Array(old.length * 2);
    this.#mask = old.length - 1;
    this.#live = 0;
    for (let i = 1; i < old.length; i += 2) {
      if (old[i] !== 0) this.#insert(old[i] - 1, old[i - 1]);
    }
  }

  #newRow(): number {
    if (this.#rows === this.host.length) {
      this.host = grow(this.host);
      this.generation = grow(this.generation);
      this.state = grow(this.state);
      this.healthy = grow(this.healthy);
      this.accounted = grow(this.accounted);
      this.revocable = grow(this.revocable);
      this.usedCpu = grow(this.usedCpu);
      this.usageFraction = grow(this.usageFraction);
      this.pool = grow(this.pool);
      this.next = grow(this.next);
      this.#prev = grow(this.#prev);
      this.#pos = grow(this.#pos);
    }
    return this.#rows++;
  }
}

/** FNV-1a of a task id, spread so that ids differing only in their last digits land apart. */
export function taskIdHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}
