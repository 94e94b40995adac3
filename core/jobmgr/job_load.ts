/** Reads jobs back from the store as the job manager holds them: after a restart, or when a call names one. */
import type { JobConfig } from "../model/config_types.ts";
import { isTerminalUpdateState, type JobRecord, type UpdateRecord } from "../model/records.ts";
import type { Store } from "../ports/store.ts";
import type { RecoveredJob } from "./jobmgr.ts";
import { mountingVersion } from "./volume_api.ts";

export interface StoredJob {
  record: RecoveredJob;
  /** The job's workflows still in progress. */
  updates: UpdateRecord[];
}

/**
 * The jobs a restarted job manager loads: the store's active ones (`isActiveJob`), and any other with a
 * workflow in progress (`updates`, the store's active updates): an update of a stopped service, paused or
 * starting its pods, still has work although its job has ended.
 */
export async function jobsToRecover(store: Store, updates: UpdateRecord[]): Promise<JobRecord[]> {
  const active = await store.activeJobs();
  const loaded = new Set(active.map((j) => j.jobId));
  const ended = [...new Set(updates.map((u) => u.jobId))].filter((id) => !loaded.has(id));
  const withWorkflow = await Promise.all(ended.map((id) => store.getJob(id)));
  return [...active, ...withWorkflow.filter((j) => j !== undefined)];
}

/**
 * A stored job with its tasks and every older config version they or its active workflows (`updates`,
 * which may hold other jobs' too) still use.
 */
export async function recoveredJob(
  store: Store,
  job: JobRecord,
  updates: UpdateRecord[],
): Promise<RecoveredJob> {
  const [tasks, secrets] = await Promise.all([store.getTasks(job.jobId), store.getSecrets(job.jobId)]);
  const wanted = new Set<number>();
  for (const t of tasks) {
    wanted.add(t.configVersion);
    if (t.desiredConfigVersion !== undefined) wanted.add(t.desiredConfigVersion);
    // A volume's instance waiting to be placed: the version of the run that last mounted its volume, what it
    // is listed with and what an update it cannot fit sends it back to.
    const mounting = t.volumeId ? mountingVersion(t) : undefined;
    if (mounting !== undefined) wanted.add(mounting);
  }
  for (const u of updates) {
    if (u.jobId !== job.jobId) continue;
    wanted.add(u.jobConfigVersion);
    wanted.add(u.prevJobConfigVersion);
  }
  wanted.delete(job.configVersion);
  const configs = new Map<number, JobConfig>();
  const versions = [...wanted];
  const found = await Promise.all(versions.map((v) => store.getJobConfig(job.jobId, v)));
  versions.forEach((v, i) => found[i] && configs.set(v, found[i]!));
  return { job, tasks, configs, secrets };
}

/** One job as recovery would load it (a job that ended before a restart, named by a call), or undefined. */
export async function readStoredJob(store: Store, jobId: string): Promise<StoredJob | undefined> {
  const [job, allUpdates] = await Promise.all([store.getJob(jobId), store.listUpdates(jobId)]);
  if (!job) return undefined;
  const updates = allUpdates.filter((u) => !isTerminalUpdateState(u.state));
  return { record: await recoveredJob(store, job, updates), updates };
}
