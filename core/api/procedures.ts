/** Public API routing: Peloton procedure names, their aliases, and the daemon that serves each. */

export type Daemon = "jobmgr" | "resmgr" | "hostmgr";

/** Services by canonical wire name (Peloton serves the three v0 services under un-versioned names). */
export const SERVICES: Record<string, Daemon> = {
  "peloton.api.job.JobManager": "jobmgr",
  "peloton.api.task.TaskManager": "jobmgr",
  "peloton.api.v0.update.svc.UpdateService": "jobmgr",
  "peloton.api.v0.volume.svc.VolumeService": "jobmgr",
  "peloton.api.v1alpha.job.stateless.svc.JobService": "jobmgr",
  "peloton.api.v1alpha.pod.svc.PodService": "jobmgr",
  "peloton.api.v1alpha.admin.svc.AdminService": "jobmgr",
  // Watch streams its answers (core/messages.ts `WatchEvent`); Cancel ends a stream.
  "peloton.api.v1alpha.watch.svc.WatchService": "jobmgr",
  // Private in Peloton: each job manager's cache (throttled pods, jobs held, instance availability).
  "peloton.private.jobmgr.JobManagerService": "jobmgr",
  "peloton.api.respool.ResourceManager": "resmgr",
  // Private in Peloton; its GetActiveTasks and GetPendingTasks back `resmgr tasks active|pending`.
  "peloton.private.resmgr.ResourceManagerService": "resmgr",
  "peloton.api.v0.host.svc.HostService": "hostmgr",
};

/** `peloton.api.v0.job.JobManager` → `peloton.api.job.JobManager` (`scripts/patch-v0-api-rpc.sh`). */
const VERSIONED: Record<string, string> = {
  "peloton.api.v0.job.JobManager": "peloton.api.job.JobManager",
  "peloton.api.v0.task.TaskManager": "peloton.api.task.TaskManager",
  "peloton.api.v0.respool.ResourceManager": "peloton.api.respool.ResourceManager",
};

/** Short service names the seeds' curl example uses (`Rpc-Procedure: JobManager.Get`). */
const SHORT: Record<string, string> = {
  JobManager: "peloton.api.job.JobManager",
  TaskManager: "peloton.api.task.TaskManager",
  ResourceManager: "peloton.api.respool.ResourceManager",
  UpdateService: "peloton.api.v0.update.svc.UpdateService",
  VolumeService: "peloton.api.v0.volume.svc.VolumeService",
  HostService: "peloton.api.v0.host.svc.HostService",
  JobService: "peloton.api.v1alpha.job.stateless.svc.JobService",
  PodService: "peloton.api.v1alpha.pod.svc.PodService",
  AdminService: "peloton.api.v1alpha.admin.svc.AdminService",
  WatchService: "peloton.api.v1alpha.watch.svc.WatchService",
  ResourceManagerService: "peloton.private.resmgr.ResourceManagerService",
  JobManagerService: "peloton.private.jobmgr.JobManagerService",
};

export interface Route {
  /** Canonical `service::Method`. */
  procedure: string;
  daemon: Daemon;
}

/**
 * Resolves `Rpc-Procedure` (`peloton.api.job.JobManager::Create`, a versioned name, or the seeds'
 * `JobManager.Get` with `Rpc-Service: peloton-jobmgr`) to a canonical procedure and its daemon.
 */
export function routeProcedure(procedure: string): Route | undefined {
  let service: string, method: string;
  const sep = procedure.indexOf("::");
  if (sep > 0) {
    service = procedure.slice(0, sep);
    method = procedure.slice(sep + 2);
  } else {
    const dot = procedure.lastIndexOf(".");
    if (dot <= 0) return undefined;
    service = procedure.slice(0, dot);
    method = procedure.slice(dot + 1);
  }
  service = VERSIONED[service] ?? SHORT[service] ?? service;
  const daemon = SERVICES[service];
  if (!daemon || !/^[A-Za-z]+$/.test(method)) return undefined;
  return { procedure: `${service}::${method}`, daemon };
}
