/** Peloton's v1alpha stateless job API (`peloton.api.v1alpha.job.stateless.svc.JobService`). */
import type { UpdateConfig } from "../model/config_types.ts";
import type { UpdateRecord } from "../model/records.ts";
import { parseStatelessSpec, parseUpdateConfig } from "../model/load.ts";
import { statelessSpecToJobConfig } from "../model/stateless_spec.ts";
import { isTerminalJobState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import {
  type Body,
  entityVersion,
  idValue,
  instancesOf,
  type JobView,
  type Reply,
  time,
  updateInfoJson,
  workflowInfoJson,
  workflowStatusJson,
} from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import type { JobEntry } from "./job_entry.ts";
import { DEFAULT_UPDATE_CONFIG } from "./workflow.ts";

export const STATELESS_SERVICE = "peloton.api.v1alpha.job.stateless.svc.JobService";

/** v1alpha `stateless.JobStatus`; `workflowId` (ours) names the workflow in progress. */
function statusJson(j: JobView, workflow?: UpdateRecord): Body {
  const rt = j.runtime;
  return {
    state: `JOB_STATE_${rt.state}`,
    desiredState: `JOB_STATE_${rt.goalState}`,
    creationTime: time(rt.creationTimeMs),
    podStats: Object.fromEntries(Object.entries(rt.taskStats).map(([s, n]) => [`POD_STATE_${s}`, n])),
    version: { value: entityVersion(j) },
    workflowId: rt.updateId ? { value: rt.updateId } : undefined,
    workflowStatus: workflow ? workflowStatusJson(j, workflow) : undefined,
  };
}

export class StatelessApi {
  constructor(private readonly api: JobApi) {}

  handle(method: string, body: Body, r: Reply): void {
    switch (method) {
      case "CreateJob":
        return this.#create(body, r);
      case "GetJob":
        return this.api.withJob(r, idValue(body.jobId), (j) => this.#get(j, r));
      case "ReplaceJob":
        return this.#active(body, r, (job) => this.#replace(job, body, r));
      case "RestartJob":
        return this.#active(body, r, (job) => {
          const rs = (body.restartSpec ?? {}) as Body;
          const u = this.api.jm.workflows.create(job, {
            type: "RESTART",
            config: {
              ...DEFAULT_UPDATE_CONFIG,
              batchSize: Number(rs.batchSize ?? body.batchSize ?? 0),
              inPlace: rs.inPlace === true,
            },
            instances: instancesOf(
              rs.ranges ?? body.ranges,
              job.runtime.nextInstanceId ?? job.config.instanceCount,
            ),
          });
          this.#done(r, job, u.updateId);
        });
      case "PauseJobWorkflow":
      case "ResumeJobWorkflow":
      case "AbortJobWorkflow":
        return this.#active(body, r, (job) => {
          const wf = this.api.jm.workflows;
          const u = wf.active(job);
          // Peloton answers "no workflow found" (NotFound) rather than doing nothing.
          if (!u) return r.error("not-found", `job ${job.jobId} has no active workflow`);
          if (method === "PauseJobWorkflow") wf.pause(u);
          else if (method === "ResumeJobWorkflow") wf.resume(u);
          else wf.abort(u);
          // Peloton's entity version moves with each workflow action, so a stale client is refused after.
          job.runtime.workflowVersion = (job.runtime.workflowVersion ?? 0) + 1;
          this.api.jm.markDirty(job, true);
          this.#done(r, job);
        });
      case "StartJob":
        return this.#active(body, r, (job) => (this.api.jm.startTasks(job), this.#done(r, job)));
      case "StopJob":
        return this.#active(body, r, (job) => {
          this.api.jm.workflows.abortActive(job);
          this.api.jm.stopTasks(job);
          this.#done(r, job);
        });
      case "DeleteJob":
        return this.#delete(body, r);
      case "ListJobWorkflows":
        return this.#workflows(body, r);
      default:
        return r.error("unimplemented", `procedure ${STATELESS_SERVICE}::${method} is not implemented`);
    }
  }

  /**
   * Spec and status, with the job's current workflow or else its last one: Peloton keeps the id of the
   * last workflow in the job's runtime after it ends, so GetJob tells how it ended.
   */
  #get(j: JobView, r: Reply): void {
    const reply = (u?: UpdateRecord) =>
      r.ok({
        jobInfo: { jobId: { value: j.jobId }, spec: this.#spec(j), status: statusJson(j, u) },
        workflowInfo: u ? workflowInfoJson(j, u) : undefined,
      });
    const live = j.runtime.updateId ? this.api.jm.updates.get(j.runtime.updateId) : undefined;
    if (live) return reply(live);
    this.api.jm.deps.store.listUpdates(j.jobId).then(
      (stored) => reply(stored.sort((a, b) => b.creationTimeMs - a.creationTimeMs)[0]),
      (err) => r.error("internal", String(err)),
    );
  }

  #spec(j: JobView): unknown {
    return this.api.jm.jobs.get(j.jobId)?.spec ??
      { name: j.config.name, instanceCount: j.config.instanceCount };
  }

  #create(body: Body, r: Reply): void {
    const parsed = parseStatelessSpec(body.spec, "spec");
    if (!parsed.ok) return r.error("invalid-argument", parsed.errors.map((e) => e.message).join("; "));
    const spec = parsed.value;
    const config = statelessSpecToJobConfig(spec);
    const given = idValue(body.jobId);
    const jobId = given ?? randomUuid(this.api.jm.deps.prng);
    const batch = Number(((body.createSpec ?? {}) as Body).batchSize ?? 0);
    this.api.checkPool(r, config.respoolId, () => {
      this.api.createChecked(r, jobId, config, [], () => {
        const job = this.api.jm.jobs.get(jobId)!;
        job.spec = spec;
        r.ok({ jobId: { value: jobId }, version: { value: entityVersion(job) } });
      }, batch);
    });
  }

  /** A rolling update to a new spec (`ReplaceJob`), at the entity version the caller saw. */
  #replace(job: JobEntry, body: Body, r: Reply): void {
    const parsed = parseStatelessSpec(body.spec, "spec");
    if (!parsed.ok) return r.error("invalid-argument", parsed.errors.map((e) => e.message).join("; "));
    const next = statelessSpecToJobConfig(parsed.value);
    next.respoolId ??= job.config.respoolId;
    if (next.respoolId !== job.config.respoolId) {
      return r.error("invalid-argument", "spec.respoolId: cannot move a job to another pool");
    }
    let config: UpdateConfig = DEFAULT_UPDATE_CONFIG;
    if (body.updateSpec !== undefined) {
      const uc = parseUpdateConfig(body.updateSpec, "updateSpec");
      if (!uc.ok) return r.error("invalid-argument", uc.errors.map((e) => e.message).join("; "));
      config = uc.value;
    }
    const u = this.api.jm.workflows.create(job, { type: "UPDATE", config, jobConfig: next });
    job.spec = parsed.value;
    this.#done(r, job, u.updateId);
  }

  #delete(body: Body, r: Reply): void {
    this.#active(body, r, (job) => {
      if (!isTerminalJobState(job.runtime.state) && body.force !== true) {
        return r.error(
          "failed-precondition",
          "Job is not in a terminal state; stop it first or delete with force",
        );
      }
      this.api.jm.workflows.abortActive(job);
      this.api.jm.stopTasks(job);
      this.api.jm.jobs.delete(job.jobId);
      this.api.jm.deps.store.write([{ kind: "job.delete", jobId: job.jobId }], (err) => {
        if (err) return r.error("internal", `deleting job ${job.jobId}: ${err.message}`);
        r.ok({});
      });
    });
  }

  #workflows(body: Body, r: Reply): void {
    const jobId = idValue(body.jobId);
    if (!jobId) return r.error("invalid-argument", "jobId: expected a job id");
    this.api.jm.deps.store.listUpdates(jobId).then((stored) => {
      const byId = new Map(stored.map((u) => [u.updateId, u]));
      for (const u of this.api.jm.updates.values()) if (u.jobId === jobId) byId.set(u.updateId, u);
      r.ok({
        workflowInfos: [...byId.values()].sort((a, b) => b.creationTimeMs - a.creationTimeMs).map(
          updateInfoJson,
        ),
      });
    }, (err) => r.error("internal", String(err)));
  }

  /** An active job at the entity version the caller gives (v1alpha's optimistic concurrency). */
  #active(body: Body, r: Reply, fn: (job: JobEntry) => void): void {
    this.api.withLiveJob(r, idValue(body.jobId), (job) => this.#atVersion(body, r, job, fn));
  }

  #atVersion(body: Body, r: Reply, job: JobEntry, fn: (job: JobEntry) => void): void {
    const given = idValue(body.version);
    if (given !== undefined && given !== entityVersion(job)) {
      return r.error(
        "aborted",
        `unexpected entity version: got ${given}, the job is at ${entityVersion(job)}`,
      );
    }
    fn(job);
  }

  #done(r: Reply, job: JobEntry, workflowId?: string): void {
    this.api.jm.flush();
    r.ok({
      version: { value: entityVersion(job) },
      ...(workflowId ? { workflowId: { value: workflowId } } : {}),
    });
  }
}
