/** Reads what the daemons need back after a restart: pools, active jobs with their tasks, config versions and workflows. */
import type { RecoveredJob } from "../core/jobmgr/jobmgr.ts";
import type { JobConfig } from "../core/model/config_types.ts";
import type { RespoolRecord, UpdateRecord } from "../core/model/records.ts";
import type { Store } from "../core/ports/store.ts";

export interface Recovered {
  pools: RespoolRecord[];
  jobs: RecoveredJob[];
  updates: UpdateRecord[];
}

/**
 * Loads every config version an active job's tasks or workflow still refer to; `only` limits it to some
 * jobs (a job manager loading the shards it took over).
 */
export async function loadRecovery(store: Store, only?: (jobId: string) => boolean): Promise<Recovered> {
  const [pools, allActive, allUpdates] = await Promise.all([
    store.respools(),
    store.activeJobs(),
    store.activeUpdates(),
  ]);
  const active = only ? allActive.filter((j) => only(j.jobId)) : allActive;
  const updates = only ? allUpdates.filter((u) => only(u.jobId)) : allUpdates;
  const jobs = await Promise.all(active.map(async (job): Promise<RecoveredJob> => {
    const tasks = await store.getTasks(job.jobId);
    const wanted = new Set<number>();
    for (const t of tasks) {
      wanted.add(t.configVersion);
      if (t.desiredConfigVersion !== undefined) wanted.add(t.desiredConfigVersion);
    }
    for (const u of updates) {
      if (u.jobId !== job.jobId) continue;
      wanted.add(u.jobConfigVersion);
      wanted.add(u.prevJobConfigVersion);
    }
    wanted.delete(job.configVersion);
    const configs = new Map<number, JobConfig>();
    for (const v of wanted) {
      const c = await store.getJobConfig(job.jobId, v);
      if (c) configs.set(v, c);
    }
    return { job, tasks, configs };
  }));
  return { pools, jobs, updates };
}
