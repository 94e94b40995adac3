/** A job as the job manager holds it in memory: its config versions in use, runtime and tasks. */
import type { JobConfig, StatelessJobSpec, TaskConfig } from "../model/config_types.ts";
import type { JobRecord, TaskRecord } from "../model/records.ts";
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
  tasks: Map<number, TaskRecord>;
  /** The v1alpha spec a stateless job was created or replaced with (answers GetJob). */
  spec?: StatelessJobSpec;
}

export function newJobEntry(
  rec: JobRecord,
  tasks: TaskRecord[],
  older: Map<number, JobConfig> = new Map(),
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
    tasks: new Map(tasks.map((t) => [t.instanceId, t])),
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
