/**
 * Reads what the daemons need back after a restart: pools, active jobs with their tasks, config versions,
 * workflows, hosts in maintenance, host pools and the job managers' lockdown.
 */
import type { RecoveredJob } from "../core/jobmgr/jobmgr.ts";
import { jobsToRecover, recoveredJob } from "../core/jobmgr/job_load.ts";
import type {
  AdminLockRecord,
  HostMaintenanceRecord,
  RespoolRecord,
  UpdateRecord,
} from "../core/model/records.ts";
import type { Store, StoredHostPools } from "../core/ports/store.ts";

export interface Recovered {
  pools: RespoolRecord[];
  jobs: RecoveredJob[];
  updates: UpdateRecord[];
  maintenance: HostMaintenanceRecord[];
  hostPools: StoredHostPools;
  adminLocks: AdminLockRecord[];
}

/**
 * Loads every config version an active job's tasks or workflow still refer to; `only` limits it to some
 * jobs (a job manager loading the shards it took over).
 */
export async function loadRecovery(store: Store, only?: (jobId: string) => boolean): Promise<Recovered> {
  const [pools, allUpdates, maintenance, hostPools, adminLocks] = await Promise.all([
    store.respools(),
    store.activeUpdates(),
    store.hostMaintenance(),
    store.hostPools(),
    store.adminLocks(),
  ]);
  const updates = only ? allUpdates.filter((u) => only(u.jobId)) : allUpdates;
  const all = await jobsToRecover(store, updates);
  const active = only ? all.filter((j) => only(j.jobId)) : all;
  const jobs = await Promise.all(active.map((job) => recoveredJob(store, job, updates)));
  return { pools, jobs, updates, maintenance, hostPools, adminLocks };
}
