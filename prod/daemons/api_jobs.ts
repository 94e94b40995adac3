/** Which job an API call is about, so separate job managers can send it to the job's owner. */
import type { Store } from "../../core/ports/store.ts";

type Body = Record<string, unknown>;

export interface JobCall {
  /** The job the call names, when it names one. */
  jobId?: string;
  /** A create without an id: the receiving job manager picks one in a shard it owns. */
  create?: "id" | "jobId";
  /** Reads can be answered by any job manager (from the store for jobs it does not drive). */
  read: boolean;
}

const READ = /^(Get|List|Query|Browse|Lookup)/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

function idValue(v: unknown): string | undefined {
  if (typeof v === "string") return v || undefined;
  if (v && typeof v === "object" && typeof (v as Body).value === "string") return (v as Body).value as string;
  return undefined;
}

/** Reads the job id out of a job manager call (`service::Method`); updates and volumes are looked up. */
export async function jobCallOf(procedure: string, body: Body, store: Store): Promise<JobCall> {
  const sep = procedure.indexOf("::");
  const service = procedure.slice(0, sep), method = procedure.slice(sep + 2);
  // A cache is one job manager's memory: asked of the job's owner, not of whichever answers reads.
  const read = READ.test(method) && !method.endsWith("Cache");
  switch (service) {
    case "peloton.api.job.JobManager": {
      const jobId = idValue(body.id);
      return { jobId, read, create: method === "Create" && !jobId ? "id" : undefined };
    }
    case "peloton.api.v1alpha.job.stateless.svc.JobService": {
      const jobId = idValue(body.jobId);
      return { jobId, read, create: method === "CreateJob" && !jobId ? "jobId" : undefined };
    }
    case "peloton.api.v1alpha.pod.svc.PodService": {
      const pod = idValue(body.podName);
      return { jobId: pod ? UUID.exec(pod)?.[0].toLowerCase() : undefined, read };
    }
    case "peloton.api.v0.update.svc.UpdateService": {
      const jobId = idValue(body.jobId ?? body.jobID);
      if (jobId) return { jobId, read };
      const updateId = idValue(body.updateId);
      return { jobId: updateId ? (await store.getUpdate(updateId))?.jobId : undefined, read };
    }
    case "peloton.api.v0.volume.svc.VolumeService": {
      const jobId = idValue(body.jobId);
      if (jobId) return { jobId, read };
      const volumeId = idValue(body.id);
      return { jobId: volumeId ? (await store.getVolume(volumeId))?.jobId : undefined, read };
    }
    case "peloton.api.v1alpha.watch.svc.WatchService": {
      // Only a job's owner sees its changes: a pod watch naming a job goes there. A watch of every job's pods
      // or of stateless jobs sees the jobs of the job manager that receives it; a Cancel goes to the watch's
      // job manager by its id (`watchHolder`).
      const filter = body.podFilter as Body | undefined;
      return { jobId: method === "Watch" && filter ? idValue(filter.jobId) : undefined, read: false };
    }
    case "peloton.private.jobmgr.JobManagerService":
      // Each job manager's own cache: a call naming a job goes to its owner, even a Get; the others
      // (GetThrottledPods, QueryJobCache) are answered by the job manager that receives them.
      return { jobId: idValue(body.jobId), read: false };
    default:
      return { jobId: idValue(body.jobId ?? body.id), read };
  }
}

/**
 * The job manager holding a watch, from the id in a WatchService Cancel: the job manager makes watch ids
 * `<kind>-<n>@<its address>` (`pod-3@jobmgr@1a2b3c4d`), and the address names its process.
 */
export function watchHolder(body: Body): string | undefined {
  const id = body.watchId;
  if (typeof id !== "string") return undefined;
  const at = id.indexOf("@");
  return at < 0 ? undefined : id.slice(at + 1);
}
