/** Peloton's v1alpha stateless job API (`peloton.api.v1alpha.job.stateless.svc.JobService`). */

import type { ApiErrorCode } from "../messages.ts";
import type { JobConfig, UpdateConfig } from "../model/config_types.ts";
import type { SecretRecord, TaskRecord, UpdateRecord } from "../model/records.ts";
import { parseStatelessSpec, parseUpdateConfig } from "../model/load.ts";
import { statelessSpecToJobConfig } from "../model/stateless_spec.ts";
import { isTerminalJobState, isTerminalTaskState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import {
  type Body,
  entityVersion,
  gotText,
  idValue,
  inRange,
  instanceIdRanges,
  type InstanceRange,
  instanceRangesOf,
  instancesOf,
  jobIdOf,
  type JobView,
  opaqueDataOf,
  outOfRangeOf,
  parseConfigVersion,
  rangeOf,
  type Reply,
  requestedJobId,
  summaryOwner,
  uint32Of,
  valueMessage,
  workflowSpecOf,
} from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import type { JobEntry } from "./job_entry.ts";
import { createdSecrets, secretsJson, updatedSecrets } from "./secrets.ts";
import { PRE_LAUNCH_RANK } from "./jobmgr.ts";
import { TaskConfigs } from "./task_build.ts";
import { volumeChangeRefusal } from "./volume_api.ts";
import { compareTasks, parseTaskOrder, type TaskOrder } from "./task_query.ts";
import { flagOf, listOf, messageOf } from "./query_spec.ts";
import { parseQuerySpec, runJobQuery } from "./job_query.ts";
import { podSpecOf, podStatusJson } from "./pod_api.ts";
import {
  POD_STATE_NUMBERS,
  podStateName,
  slaSpecJson,
  specJson,
  statusJson,
  workflowInfoJson,
  workflowStatusJson,
} from "./v1alpha_json.ts";

/**
 * The v1alpha pod state names a query may give: all but POD_STATE_INVALID (no pod is in it). These alone
 * (or their numbers) are taken, as protobuf's JSON decoding takes them: v0's task state names (`RUNNING`)
 * are not v1alpha's, and a client sending them would be refused by Peloton.
 */
const QUERY_POD_STATES: ReadonlySet<string> = new Set(
  POD_STATE_NUMBERS.map(podStateName).filter((s) => s !== "POD_STATE_INVALID"),
);

/** A query's pod state (`POD_STATE_RUNNING` or its number) as v0's task state name; undefined if it is none. */
function podStateOf(s: unknown): string | undefined {
  const name = typeof s === "number" ? `POD_STATE_${POD_STATE_NUMBERS[s]}` : s;
  return typeof name === "string" && QUERY_POD_STATES.has(name) ? name.slice("POD_STATE_".length) : undefined;
}
import {
  DEFAULT_UPDATE_CONFIG,
  overwriteRefusal,
  planReplace,
  startTasksRefusal,
  stopRefusal,
} from "./workflow.ts";
import { getWorkflowEvents, instanceEventsOf, lastWorkflow, uint32Field } from "./workflow_events_api.ts";

export const STATELESS_SERVICE = "peloton.api.v1alpha.job.stateless.svc.JobService";

export class StatelessApi {
  constructor(private readonly api: JobApi) {}

  handle(method: string, body: Body, r: Reply): void {
    switch (method) {
      case "CreateJob":
        return this.#create(body, r);
      case "GetJob":
        return this.#getJob(body, r);
      case "ReplaceJob":
        return this.#respec(body, r, (job) => this.#replace(job, body, r));
      case "PatchJob":
        // Peloton defines PatchJob but answers "not supported yet"; here it is a ReplaceJob of the job's
        // spec with the request's fields merged in (see `#patch`).
        return this.#respec(body, r, (job) => this.#patch(job, body, r));
      case "RestartJob":
        return this.#restart(body, r);
      case "PauseJobWorkflow":
      case "ResumeJobWorkflow":
      case "AbortJobWorkflow":
        return this.#active(body, r, (job) => {
          const wf = this.api.jm.workflows;
          const u = wf.active(job);
          // Peloton answers "no workflow found" (NotFound) rather than doing nothing.
          if (!u) return r.error("not-found", `job ${job.jobId} has no active workflow`);
          const opaque = opaqueDataOf(body);
          if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
          if (method === "PauseJobWorkflow") wf.pause(u, opaque);
          else if (method === "ResumeJobWorkflow") wf.resume(u, opaque);
          else wf.abort(u, opaque);
          // Peloton's entity version moves with each workflow action, so a stale client is refused after.
          job.runtime.workflowVersion = (job.runtime.workflowVersion ?? 0) + 1;
          this.api.jm.markDirty(job, true);
          this.#done(r, job, method);
        });
      case "StartJob":
        return this.#service(
          body,
          r,
          "START",
          (job) => (this.api.jm.startTasks(job), this.#done(r, job, method)),
        );
      case "StopJob":
        return this.#service(body, r, "STOP", (job) => {
          // An update starting the job's pods is under way: Peloton refuses to stop the job against it.
          const refusal = stopRefusal(this.api.jm.workflows, job);
          if (refusal) return r.error("aborted", refusal);
          this.api.jm.workflows.abortActive(job);
          this.api.jm.stopTasks(job);
          this.#done(r, job, method);
        });
      case "DeleteJob":
        return this.#delete(body, r);
      case "ListJobWorkflows":
        return this.#workflows(body, r);
      case "GetWorkflowEvents":
        return getWorkflowEvents(this.api, body, r);
      case "ListJobs":
        return this.#listJobs(r);
      case "QueryJobs":
        return this.#queryJobs(body, r);
      case "GetJobCache":
        return this.getJobCache(body, r);
      case "RefreshJob":
        return this.refreshJob(body, r);
      case "GetJobIDFromJobName":
        return this.#jobIdsByName(body, r);
      case "GetReplaceJobDiff":
        // A read: the job is looked at where it is (memory or store), never loaded to be driven here.
        return this.api.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (job) => this.#replaceDiff(job, body, r),
          true,
        );
      case "ListPods": {
        const range = rangeOf(body);
        if (typeof range === "string") return r.error("invalid-argument", range);
        return this.api.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (job) => this.#listPods(r, job, range),
          true,
        );
      }
      case "QueryPods": {
        const query = parsePodQuery(body);
        if (typeof query === "string") return r.error("invalid-argument", query);
        return this.api.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (job) => this.#queryPods(r, job, query),
          true,
        );
      }
      default:
        return r.error("unimplemented", `procedure ${STATELESS_SERVICE}::${method} is not implemented`);
    }
  }

  /**
   * RestartJob: a rolling restart of the pods of `restartSpec.ranges` (all when none; a bare `ranges` is
   * taken too), `restartSpec.batchSize` at a time (all at once when 0). A bad spec is refused before the job
   * is looked at, and instances past the job's end are refused naming them: nothing is done.
   */
  #restart(body: Body, r: Reply): void {
    const spec = workflowSpecOf(body, "restartSpec");
    if (typeof spec === "string") return r.error("invalid-argument", spec);
    const given = (body.restartSpec as Body | undefined)?.ranges;
    const ranges = given === undefined || given === null
      ? instanceRangesOf(body.ranges)
      : instanceRangesOf(given, "restartSpec.ranges");
    if (typeof ranges === "string") return r.error("invalid-argument", ranges);
    const opaque = opaqueDataOf(body);
    if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
    this.#service(body, r, "RESTART", (job) => {
      const outOfRange = outOfRangeOf(job, ranges);
      if (outOfRange) return r.error("out-of-range", String(outOfRange.message));
      const overwrite = overwriteRefusal(this.api.jm.workflows, job, "RESTART");
      if (overwrite) return r.error("invalid-argument", overwrite);
      const u = this.api.jm.workflows.create(job, {
        type: "RESTART",
        opaqueData: opaque,
        config: { ...DEFAULT_UPDATE_CONFIG, ...spec },
        instances: instancesOf(ranges, job.runtime.nextInstanceId ?? job.config.instanceCount),
      });
      this.#done(r, job, "RestartJob", u.updateId);
    });
  }

  /**
   * GetJobCache (here and in the private JobManagerService): the job's spec and status as this job manager
   * holds them in memory, as Peloton's cache; a job it does not drive is not loaded for this.
   */
  getJobCache(body: Body, r: Reply): void {
    this.api.withCachedJob(r, "jobId", body.jobId, (j) => {
      const workflow = j.runtime.updateId ? this.api.jm.updates.get(j.runtime.updateId) : undefined;
      r.ok({ spec: specJson(j), status: statusJson(j, workflow) });
    });
  }

  /** RefreshJob (here and in the private JobManagerService), as the v0 JobManager's Refresh. */
  refreshJob(body: Body, r: Reply): void {
    this.api.refreshJob(r, "jobId", body.jobId);
  }

  /** GetJobIDFromJobName: the ids of the jobs named exactly `jobName`, newest first; NotFound when none is. */
  #jobIdsByName(body: Body, r: Reply): void {
    const name = body.jobName;
    if (typeof name !== "string" || !name) return r.error("invalid-argument", "jobName: expected a job name");
    // The store matches a part of the name in any case; the exact name is kept.
    this.api.jm.deps.store.queryJobs({ name }).then((page) => {
      const ids = page.jobs.filter((j) => j.config.name === name).map((j) => ({ value: j.jobId }));
      if (!ids.length) return r.error("not-found", `no job is named ${JSON.stringify(name)}`);
      r.ok({ jobId: ids });
    }, (err) => r.storeError(err));
  }

  /**
   * ListPods: every pod of the job, or those of `range` [from, to), as `PodSummary`s in instance order. A
   * stream of one-pod messages in Peloton; one answer here, as JSON over HTTP has no streams.
   */
  #listPods(r: Reply, job: JobView, range: InstanceRange): void {
    const pods = [...job.tasks?.values() ?? []]
      .filter((t) => inRange(range, t.instanceId))
      .sort((a, b) => a.instanceId - b.instanceId)
      .map((t) => ({ podName: { value: `${job.jobId}-${t.instanceId}` }, status: podStatusJson(t) }));
    r.ok({ pods });
  }

  /**
   * QueryPods: the job's pods in the states, names and hosts the spec lists (each list, when given, must
   * match), a page at a time (`pagination` or the spec's, offset 0 and 100 pods by default), in the page's
   * `orderBy` (Peloton's task order, `task_query.ts`; instance order by default), as `PodInfo`s (status only
   * with `summaryOnly`), with the total that matched.
   */
  #queryPods(r: Reply, job: JobView, q: PodQuery): void {
    const { states, names, hosts, offset, limit } = q;
    const prefix = job.jobId.toLowerCase();
    const nameOf = (t: TaskRecord) => this.api.configOf(job, t.configVersion).get(t.instanceId).name ?? "";
    const matched = [...job.tasks?.values() ?? []].filter((t) =>
      (!states.size || states.has(podStateName(t.state))) &&
      (!names.size || names.has(`${prefix}-${t.instanceId}`)) &&
      (!hosts.size || (t.hostname !== undefined && hosts.has(t.hostname)))
    ).sort(compareTasks(q.order, nameOf));
    const summaryOnly = q.summaryOnly;
    const pods = matched.slice(offset, offset + limit).map((t) => {
      const status = podStatusJson(t);
      if (summaryOnly) return { status };
      const tc = this.api.configOf(job, t.configVersion).get(t.instanceId);
      return { spec: podSpecOf(job, tc, t.instanceId), status };
    });
    r.ok({ pods, pagination: { offset, limit, total: matched.length } });
  }

  /**
   * GetJob as Peloton's handler answers it: with `summaryOnly` the job's summary alone (`summary`), else
   * with a `version` only the spec of that config version (`jobInfo` without status), else spec and status.
   * A malformed version is refused before the job is looked up, and nothing is loaded or changed.
   */
  #getJob(body: Body, r: Reply): void {
    const jobId = jobIdOf(body.jobId, "jobId");
    const summaryOnly = flagOf(body.summaryOnly, "summaryOnly");
    if (!summaryOnly.ok) return r.error("invalid-argument", summaryOnly.message);
    if (summaryOnly.value) {
      return this.api.withJob(r, jobId, (j) => {
        this.summaries([j]).then(([summary]) => r.ok({ summary }), (err) => r.storeError(err));
      });
    }
    if (body.version === undefined || body.version === null) {
      return this.api.withJob(r, jobId, (j) => this.#get(j, r));
    }
    const parsed = parseConfigVersion(body.version);
    if (!parsed.ok) return r.error("invalid-argument", parsed.message);
    this.api.withJob(r, jobId, (j) => this.#getSpecAt(j, parsed.value, r));
  }

  /** `jobInfo` with the spec of one config version: from memory if the job holds it, else from the store. */
  #getSpecAt(j: JobView, version: number, r: Reply): void {
    const reply = (config: JobConfig | undefined) => {
      if (!config) {
        return r.error("not-found", `version: job ${j.jobId} has no config version ${version}`);
      }
      r.ok({
        jobInfo: { jobId: { value: j.jobId }, spec: specJson({ ...j, config, configVersion: version }) },
      });
    };
    if (version === j.configVersion) return reply(j.config);
    const held = this.api.jm.jobs.get(j.jobId)?.versions.get(version);
    if (held) return reply(held.config);
    this.api.jm.deps.store.getJobConfig(j.jobId, version).then(
      reply,
      (err) => r.storeError(err, `reading config version ${version} of job ${j.jobId}`),
    );
  }

  /**
   * Spec and status, with the job's current workflow or else its last one: Peloton keeps the id of the
   * last workflow in the job's runtime after it ends, so GetJob tells how it ended.
   */
  #get(j: JobView, r: Reply): void {
    const reply = (u: UpdateRecord | undefined, secrets: SecretRecord[]) =>
      r.ok({
        jobInfo: { jobId: { value: j.jobId }, spec: specJson(j), status: statusJson(j, u) },
        workflowInfo: u ? workflowInfoJson(j, u) : undefined,
        secrets: secretsJson(secrets, "v1alpha"),
      });
    lastWorkflow(this.api, j).then(
      (u) => this.api.withSecrets(r, j, (secrets) => reply(u, secrets)),
      (err) => r.storeError(err),
    );
  }

  #create(body: Body, r: Reply): void {
    // As v0's Create: a job id must be a UUID, as Peloton's handlers require.
    const given = requestedJobId(body.jobId, "jobId");
    if (given instanceof Error) return r.error("invalid-argument", given.message);
    const parsed = parseStatelessSpec(body.spec, "spec");
    if (!parsed.ok) return r.error("invalid-argument", parsed.errors.map((e) => e.message).join("; "));
    const config = statelessSpecToJobConfig(parsed.value);
    const secrets = this.api.parseJobSecrets(r, body.secrets, config);
    if (!secrets) return;
    const jobId = given ?? randomUuid(this.api.jm.deps.prng);
    // Peloton's CreateJob always starts the job through `RollingCreate`, an UPDATE workflow whose config is
    // the CreateSpec's (batchSize, maxInstanceRetries, maxTolerableInstanceFailures, startPaused), as
    // ConvertCreateSpecToUpdateConfig makes it: without one, or with batch size 0, it takes every pod at once.
    const opaque = opaqueDataOf(body);
    if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
    let createSpec: Partial<UpdateConfig> = {};
    if (body.createSpec !== undefined && body.createSpec !== null) {
      const uc = parseUpdateConfig(body.createSpec, "createSpec");
      if (!uc.ok) return r.error("invalid-argument", uc.errors.map((e) => e.message).join("; "));
      createSpec = uc.value;
    }
    const { batchSize = 0, maxInstanceAttempts = 0, maxFailureInstances = 0, startPaused = false } =
      createSpec;
    const start = {
      config: { ...DEFAULT_UPDATE_CONFIG, batchSize, maxInstanceAttempts, maxFailureInstances, startPaused },
      opaqueData: opaque,
    };
    const records = createdSecrets(
      jobId,
      secrets,
      this.api.jm.now(),
      () => randomUuid(this.api.jm.deps.prng),
    );
    this.api.checkPool(r, config.respoolId, () => {
      this.api.createChecked(
        r,
        jobId,
        config,
        [],
        () => {
          const job = this.api.jm.jobs.get(jobId)!;
          r.ok({ jobId: { value: jobId }, version: { value: entityVersion(job) } });
        },
        start,
        "v1alpha",
        records,
      );
    }, "v1alpha");
  }

  /**
   * GetReplaceJobDiff: what a ReplaceJob with this spec would do, changing nothing, refused as ReplaceJob
   * would refuse it (another job type, another pool, a stale entity version): the instances it would add,
   * remove, update and leave as they are, as instance ranges (`to` inclusive, as Peloton's answer).
   */
  #replaceDiff(job: JobView, body: Body, r: Reply): void {
    if (job.config.type !== "SERVICE") {
      return r.error(
        "invalid-argument",
        `job type is immutable: job ${job.jobId} is a ${job.config.type} job, and a stateless spec makes a ` +
          "SERVICE job",
      );
    }
    const refused = versionRefusal(body, job);
    if (refused) return r.error(refused.code, refused.message);
    const next = this.#nextConfig(job, body, r);
    if (!next) return;
    const tasks = [...job.tasks?.values() ?? []];
    const plan = planReplace(tasks, next, new TaskConfigs(next), (v) => this.api.configAt(job, v));
    const unchanged = tasks.filter((t) =>
      t.goalState !== "DELETED" && t.instanceId < next.instanceCount && !plan.updated.includes(t.instanceId)
    ).map((t) => t.instanceId);
    r.ok({
      instancesAdded: instanceIdRanges(plan.added),
      instancesRemoved: instanceIdRanges(plan.removed),
      instancesUpdated: instanceIdRanges(plan.updated),
      instancesUnchanged: instanceIdRanges(unchanged),
    });
  }

  /** The job config a replace's spec makes, in the job's pool; undefined once a refusal is answered. */
  #nextConfig(job: JobView, body: Body, r: Reply): JobConfig | undefined {
    const parsed = parseStatelessSpec(body.spec, "spec");
    if (!parsed.ok) {
      r.error("invalid-argument", parsed.errors.map((e) => e.message).join("; "));
      return undefined;
    }
    const next = statelessSpecToJobConfig(parsed.value);
    next.respoolId ??= job.config.respoolId;
    if (next.respoolId !== job.config.respoolId) {
      r.error("invalid-argument", "spec.respoolId: cannot move a job to another pool");
      return undefined;
    }
    return next;
  }

  /** A rolling update to a new spec (`ReplaceJob`), at the entity version the caller saw. */
  #replace(job: JobEntry, body: Body, r: Reply): void {
    const next = this.#nextConfig(job, body, r);
    if (!next) return;
    const volume = this.api.jm.fixedVolumes ? volumeChangeRefusal(job, next, "spec") : undefined;
    if (volume) return r.error("invalid-argument", volume);
    let config: UpdateConfig = DEFAULT_UPDATE_CONFIG;
    if (body.updateSpec !== undefined) {
      const uc = parseUpdateConfig(body.updateSpec, "updateSpec");
      if (!uc.ok) return r.error("invalid-argument", uc.errors.map((e) => e.message).join("; "));
      config = uc.value;
    }
    const refused = startTasksRefusal(job, config);
    if (refused) return r.error("aborted", `updateSpec.startPods: ${refused}`);
    const overwrite = overwriteRefusal(this.api.jm.workflows, job, "UPDATE");
    if (overwrite) return r.error("invalid-argument", overwrite);
    const opaque = opaqueDataOf(body);
    if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
    // Without `secrets` the job keeps its own (a rollback or a patch cannot send their data back, which no
    // read answers); with them, every one of the job's must be named, as a v0 Update must.
    const wanted = body.secrets === undefined
      ? job.secrets.map((s) => ({ secretId: s.secretId, path: s.path, data: s.data }))
      : this.api.parseJobSecrets(r, body.secrets, next);
    if (!wanted) return;
    const newId = () => randomUuid(this.api.jm.deps.prng);
    const secrets = updatedSecrets(job.jobId, job.secrets, wanted, this.api.jm.now(), newId);
    if (!secrets.ok) return r.error("invalid-argument", secrets.message);
    const tooLarge = this.api.jm.tooLargeToStore(job, {
      config: next,
      opaqueData: opaque,
      writes: secrets.changed.map((secret) => ({ kind: "secret.put", secret })),
    });
    if (tooLarge) return r.storeError(tooLarge, `replacing job ${job.jobId}'s spec`);
    // Stored with the workflow; the instances it replaces, and any launch after, write the new data.
    for (const secret of secrets.changed) this.api.jm.write({ kind: "secret.put", secret });
    job.secrets = secrets.all;
    const u = this.api.jm.workflows.create(job, {
      type: "UPDATE",
      config,
      jobConfig: next,
      opaqueData: opaque,
    });
    this.#done(r, job, "ReplaceJob", u.updateId);
  }

  /**
   * A new spec for a job at the entity version the caller saw (ReplaceJob, PatchJob). A spec makes a SERVICE
   * job, and Peloton refuses a replace that changes the job's type ("job type is immutable",
   * pkg/jobmgr/jobsvc/stateless/handler.go `validateJobConfigUpdate`).
   */
  #respec(body: Body, r: Reply, fn: (job: JobEntry) => void): void {
    this.api.withLiveJobUnless(
      r,
      jobIdOf(body.jobId, "jobId"),
      (j) =>
        j.config.type === "SERVICE"
          ? undefined
          : `job type is immutable: job ${j.jobId} is a ${j.config.type} job, and a stateless spec makes ` +
            "a SERVICE job",
      (job) => this.#atVersion(body, r, job, fn),
    );
  }

  /**
   * PatchJob: a rolling update to the job's current spec with `spec` merged into it as a JSON merge patch
   * (RFC 7386): an object's fields are merged one by one, anything else (a list, such as `containers`, or
   * a value) replaces what was there, and null removes a field. `updateSpec` and `secrets` are ReplaceJob's.
   */
  #patch(job: JobEntry, body: Body, r: Reply): void {
    const patch = body.spec;
    if (typeof patch !== "object" || patch === null || Array.isArray(patch)) {
      return r.error(
        "invalid-argument",
        `spec: ${gotText(patch)}, expected the JobSpec fields to change`,
      );
    }
    const { revision: _, ...current } = specJson(job);
    this.#replace(job, { ...body, spec: mergePatch(current, patch) }, r);
  }

  #delete(body: Body, r: Reply): void {
    const force = flagOf(body.force, "force");
    if (!force.ok) return r.error("invalid-argument", force.message);
    this.#active(body, r, (job) => {
      if (!isTerminalJobState(job.runtime.state) && !force.value) {
        return r.error(
          "failed-precondition",
          "Job is not in a terminal state; stop it first or delete with force",
        );
      }
      this.api.jm.workflows.abortActive(job);
      this.api.jm.stopTasks(job);
      // The stop's writes go before the delete (so that none of them puts the job back), and stay if the
      // delete fails: the job is then stopped, as a delete with force starts by doing.
      this.api.jm.deleteJob(job.jobId, (err) => {
        if (err) return r.storeError(err, `deleting job ${job.jobId}`);
        // Deleted, the job's stop actions no longer run: its tasks are killed (or dropped from the resource
        // manager's queue) here. A delete that failed leaves the job to its engines, which stop it.
        const jm = this.api.jm;
        const launched: TaskRecord[] = [];
        for (const t of job.tasks.values()) {
          if (isTerminalTaskState(t.state) || t.state === "INITIALIZED") continue;
          if (t.state in PRE_LAUNCH_RANK) jm.dropTask(t);
          else launched.push(t);
        }
        jm.killDeleted(job, launched);
        jm.flush();
        r.ok({});
      });
    });
  }

  /**
   * Every job's summary. Peloton streams ListJobsResponse messages of one summary each; over JSON-HTTP the
   * stream is one reply, `{jobs: [JobSummary]}`, newest job first.
   */
  #listJobs(r: Reply): void {
    this.api.jm.deps.store.queryJobs({}).then(
      ({ jobs }) => this.summaries(jobs.map((j) => this.api.jm.jobs.get(j.jobId) ?? j)),
    ).then((jobs) => r.ok({ jobs }), (err) => r.storeError(err));
  }

  /**
   * v1alpha QueryJobs: the same QuerySpec as v0's Query (states as `JOB_STATE_*`, orders `ORDER_BY_ASC` or
   * `ORDER_BY_DESC` as well as v0's names), its `respool` a pool path looked up at the resource manager, as
   * Peloton does; answers summaries in `records`, the page and the spec.
   */
  #queryJobs(body: Body, r: Reply): void {
    const parsed = parseQuerySpec(body.spec, "spec", "v1alpha");
    if (!parsed.ok) return r.error("invalid-argument", parsed.message);
    const spec = (body.spec ?? {}) as Body;
    // The spec echoed is the one read (`JobQuerySpec.echo`), as Peloton echoes the QuerySpec it decoded.
    const echo = parsed.value.echo;
    const { jm } = this.api;
    const run = (respoolId: string | undefined) =>
      runJobQuery(jm.deps.store, parsed.value, respoolId, (id) => jm.jobs.get(id), jm.now()).then(
        async ({ jobs, pagination }) => ({ records: await this.summaries(jobs), pagination, spec: echo }),
      ).then((reply) => r.ok(reply), (err) => r.storeError(err));
    const path = idValue(spec.respool);
    if (!path) return void run(undefined);
    this.api.lookupPool(path, (id, error) => {
      if (!id) return r.error("not-found", `spec.respool: ${error}`);
      run(id);
    });
  }

  /**
   * The jobs' v1alpha summaries (API reads: GetJob with `summaryOnly`, ListJobs, QueryJobs), each with its
   * job's workflow in progress or else its last one, as GetJob shows it: Peloton keeps the last workflow's
   * id in the job's runtime after it ends and loads it for summaries. An ended one is read from the store.
   */
  summaries(jobs: JobView[]): Promise<Body[]> {
    return Promise.all(jobs.map(async (j) => summaryJson(j, await this.#workflowOf(j))));
  }

  /**
   * One job's summary as of now, for a watch: at once when the job has a workflow in progress or never had
   * one; else a promise of it with its last workflow, read once every write made so far is stored (the
   * change being sent may be that workflow's end, whose write is still on its way). A failed read leaves the
   * workflow out rather than the change.
   */
  summary(j: JobView): Body | Promise<Body> {
    const live = this.#liveWorkflow(j);
    const summary = summaryJson(j, live);
    if (live || !j.runtime.workflowVersion) return summary;
    // The summary is the job as it is now, which changes on while its workflow is read.
    const now: JobView = { ...j, runtime: { ...j.runtime } };
    const store = this.api.jm.deps.store;
    // Started after the current turn, so after the writes this turn hands to the store.
    return Promise.resolve()
      .then(() => new Promise<void>((resolve) => store.write([], () => resolve())))
      .then(() => lastWorkflow(this.api, now))
      .then((u) => {
        if (u) (summary.status as Body).workflowStatus = workflowStatusJson(now, u);
        return summary;
      }, () => summary);
  }

  /** The job's workflow in progress, as this job manager holds it. */
  #liveWorkflow(j: JobView): UpdateRecord | undefined {
    return j.runtime.updateId ? this.api.jm.updates.get(j.runtime.updateId) : undefined;
  }

  /** The job's workflow in progress, else its last one (none read for a job that never had one). */
  #workflowOf(j: JobView): Promise<UpdateRecord | undefined> | UpdateRecord | undefined {
    const live = this.#liveWorkflow(j);
    return live || !j.runtime.workflowVersion ? live : lastWorkflow(this.api, j);
  }

  /**
   * Every workflow of the job, newest first, as v1alpha `WorkflowInfo`s (`ListJobWorkflows`), each with its
   * `workflowId` (ours: Peloton's WorkflowInfo has no id); `updatesLimit` keeps the newest so many. With
   * `instanceEvents`, each has its instances' events, the newest `instanceEventsLimit` of each (0: all).
   */
  #workflows(body: Body, r: Reply): void {
    const jobId = jobIdOf(body.jobId, "jobId");
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    const eventsLimit = uint32Field(body, "instanceEventsLimit", "how many events to return per instance");
    if (typeof eventsLimit === "string") return r.error("invalid-argument", eventsLimit);
    const limit = uint32Field(body, "updatesLimit", "how many of the newest workflows to return");
    if (typeof limit === "string") return r.error("invalid-argument", limit);
    const withEvents = flagOf(body.instanceEvents, "instanceEvents");
    if (!withEvents.ok) return r.error("invalid-argument", withEvents.message);
    this.api.withJob(r, jobId, (j) => {
      this.api.jm.deps.store.listUpdates(jobId).then(async (stored) => {
        const byId = new Map(stored.map((u) => [u.updateId, u]));
        for (const u of this.api.jm.updates.values()) if (u.jobId === jobId) byId.set(u.updateId, u);
        const newest = [...byId.values()].sort((a, b) => b.creationTimeMs - a.creationTimeMs);
        const listed = limit > 0 ? newest.slice(0, limit) : newest;
        const instanceEvents = withEvents.value
          ? await Promise.all(
            listed.map((u) => instanceEventsOf(this.api, u, eventsLimit)),
          )
          : undefined;
        r.ok({
          workflowInfos: listed.map((u, i) => ({
            workflowId: { value: u.updateId },
            ...workflowInfoJson(j, u),
            ...(instanceEvents ? { instanceEvents: instanceEvents[i] } : {}),
          })),
        });
      }).catch((err) => r.storeError(err));
    });
  }

  /** An active job at the entity version the caller gives (v1alpha's optimistic concurrency). */
  #active(body: Body, r: Reply, fn: (job: JobEntry) => void): void {
    this.api.withLiveJob(r, jobIdOf(body.jobId, "jobId"), (job) => this.#atVersion(body, r, job, fn));
  }

  /**
   * As `#active`, for a service job only. Peloton's v0 JobManager refuses Restart|Start|Stop of a batch job
   * (InvalidArgument, `<TYPE> supported only for service jobs`); its v1alpha handler, the API of stateless
   * jobs, does not look. Here RestartJob, StartJob and StopJob refuse a batch job the v0 way, before anything
   * is loaded or changed; a batch job is stopped and started with TaskManager's Stop and Start.
   */
  #service(body: Body, r: Reply, type: "RESTART" | "START" | "STOP", fn: (job: JobEntry) => void): void {
    this.api.withServiceJob(
      r,
      jobIdOf(body.jobId, "jobId"),
      type,
      (job) => this.#atVersion(body, r, job, fn),
    );
  }

  #atVersion(body: Body, r: Reply, job: JobEntry, fn: (job: JobEntry) => void): void {
    const refused = versionRefusal(body, job);
    if (refused) return r.error(refused.code, refused.message);
    fn(job);
  }

  /** Answers once the call's writes are stored (an error if they failed), with the version they made. */
  #done(r: Reply, job: JobEntry, method: string, workflowId?: string): void {
    this.api.whenDurable(r, `${method} of job ${job.jobId}`, {
      version: { value: entityVersion(job) },
      ...(workflowId ? { workflowId: { value: workflowId } } : {}),
    });
  }
}

/**
 * Why a write at the request's `version` is refused, if it is: Peloton compares the job's entity version with
 * `req.GetVersion().GetValue()`, so a request without one (an empty value) never matches and is refused as a
 * stale one is (Aborted, "unexpected entity version"). Both name the job's current version, to retry at. A
 * version that is not an EntityVersion message (`{value}`), or whose value is not of its form, is a mistake
 * in the request, not a stale version: InvalidArgument, as Peloton's "entityVersion has wrong format".
 */
export function versionRefusal(
  body: Body,
  job: JobView,
): { code: ApiErrorCode; message: string } | undefined {
  const given = valueMessage(body.version, "version", "an entity version");
  if (given instanceof Error) return { code: "invalid-argument", message: given.message };
  const current = entityVersion(job);
  if (given === current) return undefined;
  if (given === undefined || given === "") {
    return {
      code: "aborted",
      message:
        "unexpected entity version: version: missing, expected the job's entity version, the job is at " +
        current,
    };
  }
  if (!ENTITY_VERSION.test(given)) {
    return {
      code: "invalid-argument",
      message: `version: entityVersion has wrong format: got ${JSON.stringify(given)}, expected an entity ` +
        `version "<configVersion>-<desiredStateVersion>-<workflowVersion>" of whole numbers, such as the ` +
        `job's ${current}`,
    };
  }
  return { code: "aborted", message: `unexpected entity version: got ${given}, the job is at ${current}` };
}

/** An entity version's form: three whole numbers, `-`-separated, as Peloton's ParseJobEntityVersion reads it. */
const ENTITY_VERSION = /^\d+-\d+-\d+$/;

/** RFC 7386 JSON merge patch: `patch`'s object fields merged into `target`'s, null removing one. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const out: Body = typeof target === "object" && target !== null && !Array.isArray(target)
    ? { ...target as Body }
    : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** A QueryPods request as read: the spec's filters (pod names lower-cased), the page and its order. */
interface PodQuery {
  states: Set<string>;
  names: Set<string>;
  hosts: Set<string>;
  offset: number;
  limit: number;
  order: TaskOrder[];
  summaryOnly: boolean;
}

/**
 * A QueryPods request's spec and page (`pagination` or the spec's; offset 0 and 100 pods by default), or
 * why it is refused: a field of the wrong type is named with its value, as a job query's is.
 */
function parsePodQuery(body: Body): PodQuery | string {
  const spec = messageOf(body.spec, "spec");
  if (!spec.ok) return spec.message;
  const lists: Record<string, unknown[]> = {};
  for (const field of ["podStates", "names", "hosts"]) {
    const list = listOf(spec.value[field], `spec.${field}`);
    if (!list.ok) return list.message;
    lists[field] = list.value;
  }
  const stateNames = lists.podStates.map(podStateOf);
  const unknown = stateNames.findIndex((s) => s === undefined);
  if (unknown >= 0) {
    const got = JSON.stringify(lists.podStates[unknown]);
    const names = [...QUERY_POD_STATES].join(", ");
    return `spec.podStates[${unknown}]: got ${got}, expected v1alpha pod states (or their numbers): ${names}`;
  }
  const names: string[] = [];
  for (const [i, n] of lists.names.entries()) {
    const name = valueMessage(n, `spec.names[${i}]`, "a pod name");
    if (name instanceof Error) return name.message;
    if (name === undefined) return `spec.names[${i}]: got null, expected a pod name`;
    names.push(name.toLowerCase());
  }
  const badHost = lists.hosts.findIndex((h) => typeof h !== "string");
  if (badHost >= 0) {
    return `spec.hosts[${badHost}]: got ${JSON.stringify(lists.hosts[badHost])}, expected a string`;
  }
  const where = body.pagination === undefined || body.pagination === null ? "spec.pagination" : "pagination";
  const page = messageOf(body.pagination ?? spec.value.pagination, where);
  if (!page.ok) return page.message;
  const offset = uint32Of(page.value.offset, `${where}.offset`);
  if (typeof offset === "string") return offset;
  const limit = uint32Of(page.value.limit, `${where}.limit`);
  if (typeof limit === "string") return limit;
  const order = parseTaskOrder(page.value.orderBy, `${where}.orderBy`);
  if (!order.ok) return order.message;
  const summaryOnly = flagOf(body.summaryOnly, "summaryOnly");
  if (!summaryOnly.ok) return summaryOnly.message;
  return {
    states: new Set((stateNames as string[]).map(podStateName)),
    names: new Set(names),
    hosts: new Set(lists.hosts as string[]),
    offset,
    limit: limit || 100,
    order: order.value,
    summaryOnly: summaryOnly.value,
  };
}

/**
 * v1alpha `stateless.JobSummary` (`ConvertJobSummary`), with `workflow` (the job's current or last) in its
 * status and the job's SLA as a v1alpha SlaSpec.
 */
function summaryJson(j: JobView, workflow: UpdateRecord | undefined): Body {
  const c = j.config;
  return {
    jobId: { value: j.jobId },
    name: c.name,
    owner: summaryOwner(c),
    owningTeam: c.owningTeam,
    labels: c.labels,
    instanceCount: c.instanceCount,
    respoolId: c.respoolId ? { value: c.respoolId } : undefined,
    status: statusJson(j, workflow),
    sla: slaSpecJson(c.sla),
  };
}
