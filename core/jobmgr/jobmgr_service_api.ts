/**
 * Peloton's private job manager API (`peloton.private.jobmgr.JobManagerService`,
 * `pkg/jobmgr/jobsvc/private/handler.go`): what one job manager holds in memory, its cache. Calls that name
 * no job (GetThrottledPods, QueryJobCache) answer for the job manager that receives them.
 */
import type { Label } from "../model/config_types.ts";
import { type Body, hasLabels, instancesText, labelList, type Reply } from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import type { JobEntry } from "./job_entry.ts";
import { wholeNumber } from "./query_spec.ts";
import { availability } from "./sla_drain.ts";
import type { StatelessApi } from "./stateless_api.ts";
import { isThrottled } from "./task_actions.ts";

export const JOBMGR_SERVICE = "peloton.private.jobmgr.JobManagerService";

/** QueryJobCache's `spec` (Peloton's `CacheQuerySpec`): labels a job must all have, and its exact name. */
export interface CacheQuery {
  labels: Label[];
  /** Empty matches every name. */
  name: string;
}

export class JobmgrServiceApi {
  constructor(private readonly api: JobApi, private readonly stateless: StatelessApi) {}

  handle(method: string, body: Body, r: Reply): void {
    switch (method) {
      case "GetThrottledPods":
        return r.ok({ throttledPods: throttledPods(this.api.jm.jobs.values()) });
      // The same calls as the v1alpha JobService's.
      case "RefreshJob":
        return this.stateless.refreshJob(body, r);
      case "GetJobCache":
        return this.stateless.getJobCache(body, r);
      case "QueryJobCache": {
        const spec = parseCacheQuery(body.spec);
        if (typeof spec === "string") return r.error("invalid-argument", spec);
        return r.ok({ result: queryJobCache(this.api.jm.jobs.values(), spec) });
      }
      case "GetInstanceAvailabilityInfoForJob":
        return this.#availability(body, r);
      default:
        return r.error("unimplemented", `procedure ${JOBMGR_SERVICE}::${method} is not implemented`);
    }
  }

  /**
   * Each listed instance's availability (all of the job's when none is listed), as SLA-aware maintenance
   * counts it. The job is looked up in memory only, as Peloton's cache: its owner is asked.
   */
  #availability(body: Body, r: Reply): void {
    const ids = instanceIds(body.instances);
    if (typeof ids === "string") return r.error("invalid-argument", ids);
    this.api.withCachedJob(r, "jobId", body.jobId, (job) => this.#availabilityOf(job, ids, r));
  }

  #availabilityOf(job: JobEntry, ids: number[], r: Reply): void {
    const missing = ids.filter((i) => !job.tasks.has(i));
    if (missing.length) {
      const which = missing.length === 1 ? `instance ${missing[0]}` : `instances ${missing.join(", ")}`;
      return r.error(
        "invalid-argument",
        `instances: job ${job.jobId} has no ${which}; it has ${instancesText([...job.tasks.keys()])}`,
      );
    }
    const instanceAvailabilityMap: Record<string, string> = {};
    for (const i of ids.length ? ids : [...job.tasks.keys()].sort((a, b) => a - b)) {
      instanceAvailabilityMap[i] = availability(job.tasks.get(i)!);
    }
    r.ok({ instanceAvailabilityMap });
  }
}

/** The pods (`<jobId>-<instanceId>`) whose restart is throttled after failures, by job id and instance. */
export function throttledPods(jobs: Iterable<JobEntry>): { value: string }[] {
  const pods: { value: string }[] = [];
  for (const job of [...jobs].sort(byJobId)) {
    const ids = [...job.tasks.keys()].sort((a, b) => a - b);
    for (const i of ids) if (isThrottled(job.tasks.get(i)!)) pods.push({ value: `${job.jobId}-${i}` });
  }
  return pods;
}

/**
 * The jobs whose labels include every label of the query and whose name is the query's (exact and
 * case-sensitive, as Peloton's `nameMatch`; empty matches all), by job id.
 */
export function queryJobCache(
  jobs: Iterable<JobEntry>,
  q: CacheQuery,
): { jobId: { value: string }; name: string }[] {
  return [...jobs]
    .filter((j) => !q.name || j.config.name === q.name)
    .filter((j) => hasLabels(j.config.labels, q.labels))
    .sort(byJobId)
    .map((j) => ({ jobId: { value: j.jobId }, name: j.config.name }));
}

const byJobId = (a: JobEntry, b: JobEntry) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);

/**
 * QueryJobCache's `spec`, or why it is refused. Absent fields are proto3's defaults (no labels, any name;
 * a label without a value has the empty one).
 */
export function parseCacheQuery(raw: unknown): CacheQuery | string {
  if (raw === undefined || raw === null) return { labels: [], name: "" };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return `spec: got ${JSON.stringify(raw)}, expected an object with labels and name`;
  }
  const spec = raw as Body;
  const name = spec.name ?? "";
  if (typeof name !== "string") return `spec.name: got ${JSON.stringify(name)}, expected a job name`;
  const labels = labelList(spec.labels, "spec.labels");
  if (typeof labels === "string") return labels;
  return { labels, name };
}

/** `instances` of GetInstanceAvailabilityInfoForJob: distinct whole numbers in the order given, or why not. */
function instanceIds(raw: unknown): number[] | string {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return `instances: got ${JSON.stringify(raw)}, expected a list of instance ids`;
  const ids = new Set<number>();
  for (const [i, v] of raw.entries()) {
    const id = v === null ? undefined : wholeNumber(v);
    if (id === undefined) {
      return `instances[${i}]: got ${JSON.stringify(v)}, expected an instance id (a whole number)`;
    }
    ids.add(id);
  }
  return [...ids];
}
