/** A job as the job manager holds it in memory: its config versions in use, runtime and tasks. */
import type { JobConfig, TaskConfig } from "../model/config_types.ts";
import type { JobRecord, SecretRecord, TaskRecord } from "../model/records.ts";
import { isTerminalTaskState } from "../model/states.ts";
import { TaskConfigs } from "./task_build.ts";

export interface ConfigVersion {
  config: JobConfig;
  tasks: TaskConfigs;
}

export interface JobEntry {
  jobId: string;
  /** The latest config and its version; tasks may still run older versions during an update. */
  config: JobConfig;
  configVersion: number;
  /** Every config version a task of this job runs or should run. */
  versions: Map<number, ConfigVersion>;
  runtime: JobRecord["runtime"];
  tasks: InstanceMap<TaskRecord>;
  /** The job's secrets with their data, written into every task it launches (see secrets.ts). */
  secrets: SecretRecord[];
}

export function newJobEntry(
  rec: JobRecord,
  tasks: TaskRecord[],
  older: Map<number, JobConfig> = new Map(),
  secrets: SecretRecord[] = [],
): JobEntry {
  const versions = new Map<number, ConfigVersion>([[rec.configVersion, version(rec.config)]]);
  for (const [v, config] of older) if (!versions.has(v)) versions.set(v, version(config));
  return {
    jobId: rec.jobId,
    config: rec.config,
    configVersion: rec.configVersion,
    versions,
    // Counted from the tasks: the stored runtime is written when the job's state changes, not on every
    // task transition, so its counts can be behind the tasks after a restart.
    runtime: { ...rec.runtime, taskStats: countStates(tasks) },
    tasks: new InstanceMap(tasks.map((t) => [t.instanceId, t])),
    secrets,
  };
}

function countStates(tasks: TaskRecord[]): JobRecord["runtime"]["taskStats"] {
  const stats: JobRecord["runtime"]["taskStats"] = {};
  for (const t of tasks) stats[t.state] = (stats[t.state] ?? 0) + 1;
  return stats;
}

export function version(config: JobConfig): ConfigVersion {
  return { config, tasks: new TaskConfigs(config) };
}

/** The task config a task's current run uses. */
export function taskConfigOf(
  job: JobEntry,
  task: TaskRecord,
  which: "current" | "desired" = "current",
): TaskConfig {
  const v = which === "desired" ? (task.desiredConfigVersion ?? task.configVersion) : task.configVersion;
  const cv = job.versions.get(v) ?? job.versions.get(job.configVersion)!;
  return cv.tasks.get(task.instanceId);
}

export function jobConfigOf(job: JobEntry, v: number): JobConfig {
  return (job.versions.get(v) ?? job.versions.get(job.configVersion)!).config;
}

/** Tasks started and not yet ended (for `maximumRunningInstances`). */
export function activeCount(job: JobEntry): number {
  let n = 0;
  for (const t of job.tasks.values()) if (t.state !== "INITIALIZED" && !isTerminalTaskState(t.state)) n++;
  return n;
}

export function snapshot(job: JobEntry): JobRecord {
  return {
    jobId: job.jobId,
    config: job.config,
    configVersion: job.configVersion,
    runtime: { ...job.runtime, taskStats: { ...job.runtime.taskStats } },
  };
}

/**
 * A task is its own key in the task engine: no string to build and hash on every enqueue. A record
 * replaced by a new one for the same instance may still be queued; its evaluation then does nothing.
 */
export const taskKey = (t: TaskRecord): TaskRecord => t;

/**
 * A job's tasks by instance id, in an array indexed by instance: instance ids are dense (0 to the
 * instance count, daemon jobs adding one per host), so a lookup is one index with no hashing, and a job of
 * a million tasks holds one array instead of a hash table. Iterates in instance order. A `Map`'s methods,
 * as far as the job manager uses them.
 */
export class InstanceMap<T> {
  #slots: (T | undefined)[] = [];
  #size = 0;

  constructor(entries: Iterable<readonly [number, T]> = []) {
    for (const [i, v] of entries) this.set(i, v);
  }

  get size(): number {
    return this.#size;
  }

  get(instanceId: number): T | undefined {
    return this.#slots[instanceId];
  }

  has(instanceId: number): boolean {
    return this.#slots[instanceId] !== undefined;
  }

  set(instanceId: number, value: T): this {
    if (!Number.isInteger(instanceId) || instanceId < 0) {
      throw new RangeError(`instance id must be a non-negative integer, got ${instanceId}`);
    }
    const slots = this.#slots;
    // Grown one slot at a time, so the array stays packed (a write past its end would leave holes).
    while (slots.length < instanceId) slots.push(undefined);
    if (slots[instanceId] === undefined) this.#size++;
    slots[instanceId] = value;
    return this;
  }

  delete(instanceId: number): boolean {
    if (this.#slots[instanceId] === undefined) return false;
    this.#slots[instanceId] = undefined;
    this.#size--;
    return true;
  }

  *keys(): IterableIterator<number> {
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) if (slots[i] !== undefined) yield i;
  }

  *values(): IterableIterator<T> {
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const v = slots[i];
      if (v !== undefined) yield v;
    }
  }

  *entries(): IterableIterator<[number, T]> {
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const v = slots[i];
      if (v !== undefined) yield [i, v];
    }
  }

  [Symbol.iterator](): IterableIterator<[number, T]> {
    return this.entries();
  }
}
