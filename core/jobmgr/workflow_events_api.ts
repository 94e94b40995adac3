/**
 * v1alpha JobService's workflow events: GetWorkflowEvents (one instance's steps in the job's current or
 * last workflow) and the instance events ListJobWorkflows adds to each workflow, both newest first as
 * Peloton's store reads them (`pod_workflow_events`, clustered by descending create time).
 */
import { mesosTaskId, type UpdateRecord, type WorkflowEventRecord } from "../model/records.ts";
import { type Body, instancesText, jobIdOf, type JobView, type Reply } from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import { wholeNumber } from "./query_spec.ts";
import { workflowEventJson } from "./v1alpha_json.ts";

/** A uint32 field of a request (a number, or a decimal string as proto3 JSON allows); absent is 0. */
export function uint32Field(body: Body, field: string, what: string): number | string {
  const v = body[field];
  const n = wholeNumber(v);
  if (n === undefined || n > 0xffff_ffff) {
    return `${field}: got ${JSON.stringify(v)}, expected ${what} (a whole number from 0 to 4294967295)`;
  }
  return n;
}

/**
 * The job's workflow in progress, else its newest one (Peloton keeps the last workflow's id in the job's
 * runtime after it ends; ours clears it, and the newest stored workflow is that one).
 */
export async function lastWorkflow(api: JobApi, j: JobView): Promise<UpdateRecord | undefined> {
  const live = j.runtime.updateId ? api.jm.updates.get(j.runtime.updateId) : undefined;
  if (live) return live;
  const stored = await api.jm.deps.store.listUpdates(j.jobId);
  return stored.sort((a, b) => b.creationTimeMs - a.creationTimeMs)[0];
}

/**
 * Steps as the store reads them (oldest first), newest first. The store keeps a run of one state as its
 * newest event (Peloton's `convertToWorkflowEvents`) and the newest `limit` of each instance, so that a
 * large workflow's events are not all read for a few of each.
 */
function newestFirst(steps: WorkflowEventRecord[], u: UpdateRecord): Body[] {
  // A rolling create's events are stored with its kind (START) and reported as an UPDATE's.
  return steps.reverse().map((e) => workflowEventJson({ ...e, create: u.create }));
}

/**
 * GetWorkflowEvents {jobId, instanceId, limit}: the instance's events in the job's current workflow, or its
 * last one, newest first, the newest `limit` of them (0: all). A job id that is not a UUID, or a malformed
 * instance id or limit, is refused (InvalidArgument, naming the field), an unknown job or one that never
 * had a workflow is NotFound (Peloton answers the latter Unavailable, which here means "try again": a
 * workflow will not appear by waiting). An instance the workflow never took has no events; one the job does
 * not have (never had, or removed) and the workflow recorded nothing of is OutOfRange, saying which, as
 * `task events` is answered (a shrink's removed instances keep the events of the workflow that removed them).
 */
export function getWorkflowEvents(api: JobApi, body: Body, r: Reply): void {
  const jobId = jobIdOf(body.jobId, "jobId");
  if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
  const instanceId = uint32Field(body, "instanceId", "an instance id");
  if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
  const limit = uint32Field(body, "limit", "how many events to return, 0 for all");
  if (typeof limit === "string") return r.error("invalid-argument", limit);
  api.withJob(r, jobId, (j) => {
    lastWorkflow(api, j).then(async (u) => {
      if (!u) return r.error("not-found", `job ${jobId} has no workflow`);
      const steps = await api.jm.deps.store.getWorkflowEvents(jobId, u.updateId, { instanceId, limit });
      if (!steps.length) {
        const missing = await missingInstance(api, j, instanceId);
        if (missing) return r.error("out-of-range", missing);
      }
      r.ok({ events: newestFirst(steps, u) });
    }).catch((err) => r.storeError(err, `reading the workflow events of job ${jobId}`));
  });
}

/**
 * Why the job has no instance `instanceId`, in the words of JobApi's `#missingInstance` (TaskManager::Get,
 * which `task events` asks when it finds no events): an id it never had, or one it had and removed. Undefined
 * when the job has it. The job's tasks are read from the store only for a job not in memory.
 */
async function missingInstance(api: JobApi, j: JobView, instanceId: number): Promise<string | undefined> {
  const store = api.jm.deps.store;
  if (j.tasks ? j.tasks.has(instanceId) : await store.getTask(j.jobId, instanceId)) return undefined;
  const ids = j.tasks ? [...j.tasks.keys()] : (await store.getTasks(j.jobId)).map((t) => t.instanceId);
  const never = `instance ${instanceId} is out of range: job ${j.jobId} has ${instancesText(ids)}`;
  if (instanceId >= (j.runtime.nextInstanceId ?? j.config.instanceCount)) return never;
  const events = await store.getTaskEvents(j.jobId, instanceId);
  const last = events.at(-1);
  if (!last) return never;
  const host = events.findLast((e) => e.hostname)?.hostname;
  const why = j.config.type === "DAEMON"
    ? `when its host${host ? ` ${host}` : ""} left the daemon job's hosts (down, in maintenance, or no ` +
      "longer matching its constraint)"
    : `when the job shrank to ${instancesText(ids)}`;
  const run = mesosTaskId(j.jobId, instanceId, last.runId);
  return `instance ${instanceId} of job ${j.jobId} was removed ${why}; its last run, ${run}, ended ${last.state}`;
}

/**
 * A workflow's `instance_events` (ListJobWorkflows with `instanceEvents`): each instance it adds, removes
 * or updates, and any other it recorded events for (a rollback narrows those lists), in instance order,
 * with its events newest first, the newest `limit` of them (0: all).
 */
export async function instanceEventsOf(api: JobApi, u: UpdateRecord, limit: number): Promise<Body[]> {
  const steps = await api.jm.deps.store.getWorkflowEvents(u.jobId, u.updateId, { limit });
  const byInstance = new Map<number, WorkflowEventRecord[]>();
  for (const i of [...u.instancesAdded, ...u.instancesRemoved, ...u.instancesUpdated]) byInstance.set(i, []);
  for (const e of steps) {
    const list = byInstance.get(e.instanceId);
    if (list) list.push(e);
    else byInstance.set(e.instanceId, [e]);
  }
  return [...byInstance.keys()].sort((a, b) => a - b).map((instanceId) => ({
    instanceId,
    events: newestFirst(byInstance.get(instanceId)!, u),
  }));
}
