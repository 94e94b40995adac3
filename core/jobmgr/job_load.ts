/** Reads one job back from the store as recovery would (a job that ended before a restart, named by a call). */
import type { JobConfig } from "../model/config_types.ts";
import { isTerminalUpdateState, type UpdateRecord } from "../model/records.ts";
import type { Store } from "../ports/store.ts";
import type { RecoveredJob } from "./jobmgr.ts";

export interface StoredJob {
  record: RecoveredJob;
  /** The job's workflows still in progress. */
  updates: UpdateRecord[];
}

/** The job, its tasks, the config versions they and its workflows use, and its active workflows. */
export async function readStoredJob(store: Store, jobId: string): Promise<StoredJob | undefined> {
  const [job, tasks, allUpdates] = await Promise.all([
    store.getJob(jobId),
    store.getTasks(jobId),
    store.listUpdates(jobId),
  ]);
  if (!job) return undefined;
  const updates = allUpdates.filter((u) => !isTerminalUpdateState(u.state));
  const wanted = new Set<number>();
  for (const t of tasks) {
    wanted.add(t.configVersion);
    if (t.desiredConfigVersion !== undefined) wanted.add(t.desiredConfigVersion);
  }
  for (const u of updates) wanted.add(u.jobConfigVersion), wanted.add(u.prevJobConfigVersion);
  wanted.delete(job.configVersion);
  const configs = new Map<number, JobConfig>();
  const versions = [...wanted];
  const found = await Promise.all(versions.map((v) => store.getJobConfig(jobId, v)));
  versions.forEach((v, i) => found[i] && configs.set(v, found[i]!));
  return { record: { job, tasks, configs }, updates };
}
