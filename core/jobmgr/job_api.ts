/** Peloton's v0 job and task APIs (`peloton.api.job.JobManager`, `peloton.api.task.TaskManager`), and the router to the others. */
import type { AdmissionWaits, ApiErrorCode, ApiReply, ApiRequest } from "../messages.ts";
import type { JobConfig, TaskConfig, UpdateConfig } from "../model/config_types.ts";
import { parseJobConfig } from "../model/load.ts";
import type { Resources } from "../model/resources.ts";
import {
  mesosTaskId,
  parseMesosTaskId,
  pastRun,
  type SecretRecord,
  type TaskEventRecord,
  type TaskRecord,
} from "../model/records.ts";
import { isTerminalJobState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import {
  type Body,
  eventJson,
  idsText,
  idValue,
  inRange,
  type InstanceRange,
  instanceRangesOf,
  instancesOf,
  instancesText,
  jobConfigJson,
  jobIdAt,
  jobIdOf,
  jobInfoJson,
  jobRuntimeJson,
  jobSummaryJson,
  type JobView,
  outOfRangeOf,
  queriedJobInfoJson,
  rangeOf,
  Reply,
  requestedJobId,
  sentJobId,
  taskInfoJson,
  taskRuntimeJson,
  uint32Of,
  valueMessage,
  workflowSpecOf,
} from "./api_json.ts";
import { InstanceMap, type JobEntry } from "./job_entry.ts";
import {
  createdSecrets,
  parseSecrets,
  type SecretInput,
  secretsConfigProblem,
  secretsJson,
  updatedSecrets,
} from "./secrets.ts";
import { type JobPage, noJobs, parseQuerySpec, runJobQuery } from "./job_query.ts";
import type { JobManager } from "./jobmgr.ts";
import { JOBMGR_SERVICE, JobmgrServiceApi } from "./jobmgr_service_api.ts";
import { POD_SERVICE, PodApi } from "./pod_api.ts";
import { STATELESS_SERVICE, StatelessApi } from "./stateless_api.ts";
import { gangSize, isPreemptible, isRevocable, TaskConfigs, taskResources } from "./task_build.ts";
import { flagOf, wholeNumber } from "./query_spec.ts";
import { parseTaskQuerySpec, runTaskQuery, type TaskQuerySpec } from "./task_query.ts";
import { UPDATE_SERVICE, UpdateApi } from "./update_api.ts";
import { VOLUME_SERVICE, VolumeApi } from "./volume_api.ts";
import { DEFAULT_UPDATE_CONFIG, differs, overwriteRefusal, stopRefusal } from "./workflow.ts";
import { WATCH_SERVICE, Watches } from "./watch.ts";

export const JOB_SERVICE = "peloton.api.job.JobManager";
export const TASK_SERVICE = "peloton.api.task.TaskManager";
const RESPOOL_GET = "peloton.api.respool.ResourceManager::GetResourcePool";
const RESPOOL_LOOKUP = "peloton.api.respool.ResourceManager::LookupResourcePoolID";
const RESPOOL_WAITS = "peloton.api.respool.ResourceManager::GetAdmissionWaits";

/** How long `task list` and `task get` wait for the resource manager to say why PENDING tasks wait. */
export const WAITS_TIMEOUT_MS = 2_000;

/** How many runs GetPodEvents walks back when its `limit` is 0 or unset (Peloton's handler: 10). */
export const DEFAULT_EVENT_RUNS = 10;

export { jobConfigJson, jobInfoJson };

/**
 * Peloton's answer (invalid-argument) to a change made against a configuration version that is no longer
 * the job's (pkg/jobmgr/cached/job.go validateConfig): its Go CLI and Python client re-read the job and
 * retry on exactly this code and message, so it is worded as Peloton words it.
 */
export const STALE_VERSION_MESSAGE = "invalid job configuration version";

/**
 * `STALE_VERSION_MESSAGE` with the version given and the job's current one, to retry at (as v1alpha's
 * "unexpected entity version" names it): the code and leading text stay Peloton's.
 */
export function staleVersionMessage(given: unknown, current: number): string {
  const shown = typeof given === "object" ? JSON.stringify(given) : String(given);
  return `${STALE_VERSION_MESSAGE}: got ${shown}, the job is at ${current}`;
}

/** Peloton's in-body error shape: `{error: {<kind>: {message}}}`. */
export const bodyError = (kind: string, message: string, extra: Body = {}): Body => ({
  error: { [kind]: { message, ...extra } },
});

/**
 * A job id as a request gave it: the id, or why it is refused (`jobIdOf`), which the `with...Job` helpers
 * answer as an InvalidArgument before anything is looked up.
 */
export type JobIdArg = string | Error;

/** Answers an unknown job with Peloton's `notFound` {id, message} as a field of the response itself. */
const notFoundIn = (r: Reply) => (jobId: string) =>
  r.ok({ notFound: { id: { value: jobId }, message: `job ${jobId} not found` } });

/** Answers an unknown job with Peloton's `notFound` in the response's `error`. */
const notFoundInError = (r: Reply) => (jobId: string) =>
  r.ok(bodyError("notFound", `job ${jobId} not found`, { id: { value: jobId } }));

/**
 * Why JobManager's Restart|Start|Stop refuses a job: a batch job, with Peloton's InvalidArgument message
 * (`<TYPE> supported only for service jobs`, pkg/jobmgr/jobsvc/handler.go `createNonUpdateWorkflow`) and
 * the job named. A DAEMON job (ours; Peloton refused them) runs its workflows as a service does.
 */
const batchRefusal = (type: "RESTART" | "START" | "STOP") => (j: JobView): string | undefined =>
  j.config.type === "BATCH"
    ? `${type} supported only for service jobs: job ${j.jobId} is a BATCH job`
    : undefined;

/** Which API's error shapes a shared check answers in. */
export type ApiShape = "v0" | "v1alpha";

export class JobApi {
  readonly #updates: UpdateApi;
  readonly #volumes: VolumeApi;
  readonly #stateless: StatelessApi;
  /** Open WatchService streams, which the job manager tells of every pod and job change. */
  readonly watches: Watches;
  readonly #pods: PodApi;
  readonly #private: JobmgrServiceApi;
  /**
   * The key of the pool claim made by the lookup whose `then` is running (`checkPool`), for the create it
   * goes on to (`createChecked`).
   */
  #claimInHand: string | undefined;

  constructor(readonly jm: JobManager) {
    this.#updates = new UpdateApi(this);
    this.#volumes = new VolumeApi(this);
    this.#stateless = new StatelessApi(this);
    this.watches = new Watches(jm.deps.transport, jm.deps.self, (j) => this.#stateless.summary(j));
    this.#pods = new PodApi(this);
    this.#private = new JobmgrServiceApi(this, this.#stateless);
  }

  handle(req: ApiRequest): void {
    const sep = req.procedure.indexOf("::");
    const service = req.procedure.slice(0, sep), method = req.procedure.slice(sep + 2);
    const body = (req.body ?? {}) as Body;
    const r = new Reply(this.jm.deps.transport, req);
    if (service === UPDATE_SERVICE) return this.#updates.handle(method, body, r);
    if (service === VOLUME_SERVICE) return this.#volumes.handle(method, body, r);
    if (service === STATELESS_SERVICE) return this.#stateless.handle(method, body, r);
    if (service === WATCH_SERVICE) return this.watches.handle(method, body, r, req);
    if (service === POD_SERVICE) return this.#pods.handle(method, body, r);
    if (service === JOBMGR_SERVICE) return this.#private.handle(method, body, r);
    const key = `${service === JOB_SERVICE ? "job" : service === TASK_SERVICE ? "task" : service}.${method}`;
    switch (key) {
      case "job.Create":
        return this.#create(r, body);
      case "job.Get":
        // Peloton answers an unknown job in the body (`GetResponse.Error.notFound`), not as an RPC error.
        return this.withJob(
          r,
          jobIdOf(body.id, "id"),
          (j) =>
            this.withSecrets(
              r,
              j,
              (secrets) =>
                r.ok({
                  jobInfo: jobInfoJson(j),
                  config: jobConfigJson(j.config),
                  secrets: secretsJson(secrets),
                }),
            ),
          false,
          notFoundInError(r),
        );
      case "job.Query":
        return this.#query(r, body);
      // Peloton's debug calls: the job manager's memory and goal-state engines, and the store's active jobs.
      case "job.Refresh":
        return this.refreshJob(r, "id", body.id);
      case "job.GetCache":
        return this.withCachedJob(r, "id", body.id, (j) => r.ok(jobCacheJson(j)));
      case "job.GetActiveJobs":
        return this.#activeJobs(r);
      case "job.Delete":
        return this.#delete(r, body);
      case "job.Update":
        return this.#update(r, body);
      case "job.Restart":
      case "job.Start":
      case "job.Stop": {
        const type = method.toUpperCase() as "RESTART" | "START" | "STOP";
        // Always a workflow, as Peloton's jobsvc makes one (`createNonUpdateWorkflow`): the batch size in
        // `restartConfig`, `startConfig` or `stopConfig` (a bare `batchSize` is taken too), every instance at
        // once without one; the answer names it (`updateID`). TaskManager's Stop|Start|Restart act at once.
        const spec = workflowSpecOf(body, `${method.toLowerCase()}Config`);
        if (typeof spec === "string") return r.error("invalid-argument", spec);
        const ranges = instanceRangesOf(body.ranges);
        if (typeof ranges === "string") return r.error("invalid-argument", ranges);
        const field = body.resourceVersion !== undefined ? "resourceVersion" : "configurationVersion";
        const raw = body.resourceVersion ?? body.configurationVersion;
        const version = raw === undefined || raw === null ? undefined : wholeNumber(raw);
        if (raw !== undefined && raw !== null && version === undefined) {
          return r.error("invalid-argument", `${field}: got ${JSON.stringify(raw)}, expected a whole number`);
        }
        return this.withServiceJob(
          r,
          jobIdAt(body, "id", "jobId"),
          type,
          (job) => {
            // Peloton's jobsvc makes the workflow with a config of this version, refused as stale.
            if (version !== undefined && version !== job.configVersion) {
              return r.error("invalid-argument", STALE_VERSION_MESSAGE);
            }
            return this.#startWorkflow(r, job, type, ranges, spec.batchSize);
          },
        );
      }
      // Peloton answers an unknown job in the body: Stop's and Start's `error.notFound`, Restart's own
      // `notFound` (JobManager's Stop|Start|Restart, above, answer it as an error).
      case "task.Stop":
      case "task.Start":
        return this.#tasks(r, method, body, notFoundInError(r));
      case "task.Restart":
        return this.#tasks(r, method, body, notFoundIn(r));
      // Peloton answers an unknown job in the body: List's and Get's own `notFound`, BrowseSandbox's
      // `error.notFound`.
      case "task.List": {
        const range = rangeOf(body);
        if (typeof range === "string") return r.error("invalid-argument", range);
        return this.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (j) => this.#list(r, j, range),
          true,
          notFoundIn(r),
        );
      }
      case "task.Get": {
        const instanceId = uint32Of(body.instanceId, "instanceId");
        if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
        return this.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (j) => this.#getTask(r, j, instanceId),
          true,
          notFoundIn(r),
        );
      }
      case "task.GetPodEvents":
        return this.#events(r, body);
      // Peloton answers an unknown job in the body's `error.notFound`.
      case "task.Query": {
        const spec = parseTaskQuerySpec(body.spec);
        if (!spec.ok) return r.error("invalid-argument", spec.message);
        return this.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (j) => this.#queryTasks(r, j, spec.value),
          true,
          notFoundInError(r),
        );
      }
      case "task.GetCache": {
        const instanceId = uint32Of(body.instanceId, "instanceId");
        if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
        return this.withCachedJob(r, "jobId", body.jobId, (job) => {
          const task = job.tasks.get(instanceId);
          if (!task) return r.error("not-found", `task ${job.jobId}-${instanceId} not found in cache`);
          const tc = this.configOf(job, task.configVersion).get(instanceId);
          r.ok({ runtime: taskRuntimeJson(task), labels: tc.labels ?? [] });
        });
      }
      case "task.Refresh":
        return this.#refresh(r, body);
      case "task.DeletePodEvents":
        return this.#deleteEvents(r, body);
      case "task.BrowseSandbox": {
        const instanceId = uint32Of(body.instanceId, "instanceId");
        if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
        return this.withJob(
          r,
          jobIdOf(body.jobId, "jobId"),
          (j) => this.#sandbox(r, j, instanceId, idValue(body.taskId)),
          true,
          notFoundInError(r),
        );
      }
      default:
        return r.error("unimplemented", `procedure ${req.procedure} is not implemented`);
    }
  }

  /** Parses a config from an API body; the respool id may come as `respoolID: {value}`. */
  parseConfig(raw: unknown): ReturnType<typeof parseJobConfig> {
    if (raw && typeof raw === "object") {
      const r = { ...(raw as Body) };
      const respool = idValue(r.respoolID ?? r.respoolId ?? r.respoolid);
      delete r.respoolID, delete r.respoolid, delete r.changeLog, delete r.changelog;
      r.respoolId = respool;
      return parseJobConfig(r, "config");
    }
    return parseJobConfig(raw, "config");
  }

  /**
   * Checks the pool is a leaf at the resource manager, then runs `then` (a create: `createChecked`). The
   * lookup claims the pool (`ApiRequest.poolClaim`), for the job if it is named (else the create names it):
   * the resource manager refuses to delete the pool until the job's tasks are in it, so a create answered
   * cannot end in a pool deleted meanwhile, and a delete answered makes the create fail pool-not-found.
   */
  checkPool(
    r: Reply,
    respoolId: string | undefined,
    then: () => void,
    api: ApiShape = "v0",
    jobId?: string,
  ): void {
    // v0 answers a bad config in the body (`invalidConfig`, naming the job); v1alpha with an error
    // (InvalidArgument).
    const id = jobId === undefined ? {} : { id: { value: jobId } };
    const refuse = api === "v0"
      ? (what: string) => r.ok(bodyError("invalidConfig", `config.respoolID: ${what}`, id))
      : (what: string) => r.error("invalid-argument", `spec.respoolId: ${what}`);
    if (!respoolId) return refuse("expected a resource pool id");
    let key: string | undefined;
    const claim = (reqId: number) => {
      // Each lookup's claim is its own: a second create of one job id (refused as a duplicate) releases its
      // claim alone, never the one of the create that goes on.
      key = `${this.jm.deps.self} request ${reqId}`;
      return jobId === undefined ? { key } : { key, jobId };
    };
    this.#resmgrApi(RESPOOL_GET, { id: { value: respoolId } }, (reply) => {
      // The resource manager did not answer (a timeout, a leader change): its error, not a bad config.
      if (reply.error) {
        const field = api === "v0" ? "config.respoolID" : "spec.respoolId";
        return r.error(
          reply.error.code,
          `${field}: cannot check resource pool ${respoolId}: ${reply.error.message}`,
        );
      }
      const info = (reply.body as Body | undefined)?.poolinfo as Body | undefined;
      if (!info) return refuse(`resource pool ${respoolId} not found`);
      if ((info.children as unknown[]).length > 0) {
        return refuse(`resource pool ${respoolId} is not a leaf pool`);
      }
      this.#claimInHand = key;
      try {
        then();
      } finally {
        // A `then` that made no create (or none that took the claim) leaves it to expire.
        this.#claimInHand = undefined;
      }
    }, claim);
  }

  /**
   * Resolves a pool path to its id at the resource manager; `done` gets the id, or the error's message and
   * what it is: `notFound` or `invalidPath` (the lookup's answer), or the call's own error code (the
   * resource manager did not answer).
   */
  lookupPool(path: string, done: (id: string | undefined, error?: string, kind?: string) => void): void {
    this.#resmgrApi(RESPOOL_LOOKUP, { path: { value: path } }, (reply) => {
      const b = (reply.body ?? {}) as Body;
      const id = idValue(b.id);
      if (id) return done(id);
      if (reply.error) return done(undefined, reply.error.message, reply.error.code);
      const [kind, err] = Object.entries((b.error ?? {}) as Record<string, Body>)[0] ?? [];
      done(
        undefined,
        (err?.message as string | undefined) ?? `resource pool ${path} not found`,
        kind ?? "notFound",
      );
    });
  }

  /** Calls one of the resource manager's pool procedures (a lookup for a create claims the pool). */
  #resmgrApi(
    procedure: string,
    body: Body,
    onReply: (reply: ApiReply) => void,
    poolClaim?: (reqId: number) => ApiRequest["poolClaim"],
  ): number {
    const { self, resmgr } = this.jm.deps;
    return this.jm.call<ApiReply>(
      resmgr,
      (reqId) =>
        poolClaim === undefined
          ? { kind: "api", reqId, replyTo: self, procedure, body }
          : { kind: "api", reqId, replyTo: self, procedure, body, poolClaim: poolClaim(reqId) },
      onReply,
    );
  }

  /**
   * v0 Create, checked in Peloton's order: the id asked for, then the config. A refused config names the
   * job's id (job.proto's InvalidJobConfig), the one asked for or the one made for it, as Peloton's does.
   */
  #create(r: Reply, body: Body): void {
    const given = requestedJobId(body.id, "id");
    if (given instanceof Error) {
      return r.ok(bodyError("invalidJobId", given.message, { id: sentJobId(body.id) }));
    }
    const parsed = this.parseConfig(body.config);
    const newJobId = () => given ?? randomUuid(this.jm.deps.prng);
    if (!parsed.ok) {
      const message = parsed.errors.map((e) => e.message).join("; ");
      return r.ok(bodyError("invalidConfig", message, { id: { value: newJobId() } }));
    }
    const config = parsed.value;
    const secrets = this.parseJobSecrets(r, body.secrets, config);
    if (!secrets) return;
    const jobId = newJobId();
    const warnings = parsed.warnings.map((w) => w.message);
    const records = createdSecrets(jobId, secrets, this.jm.now(), () => randomUuid(this.jm.deps.prng));
    this.checkPool(
      r,
      config.respoolId,
      () => this.createChecked(r, jobId, config, warnings, undefined, undefined, "v0", records),
      "v0",
      jobId,
    );
  }

  /** Runs `fn` with a job's secrets: at once for a job driven here, else once read from the store. */
  withSecrets(r: Reply, j: JobView | JobEntry, fn: (secrets: SecretRecord[]) => void): void {
    const held = this.jm.jobs.get(j.jobId);
    if (held) return fn(held.secrets);
    this.jm.deps.store.getSecrets(j.jobId).then(
      fn,
      (err) => r.storeError(err, `reading job ${j.jobId}'s secrets`),
    );
  }

  /** A Create's or Update's `secrets`, or undefined once the call is answered with what is wrong. */
  parseJobSecrets(r: Reply, raw: unknown, config: JobConfig): SecretInput[] | undefined {
    const parsed = parseSecrets(raw);
    if (!parsed.ok) return void r.error("invalid-argument", parsed.message);
    const problem = parsed.value.length ? secretsConfigProblem(config) : undefined;
    if (problem) return void r.error("invalid-argument", problem);
    return parsed.value;
  }

  /**
   * Creates the job. A job id already in the store (even of a finished job no longer in memory)
   * makes the store reject the write as stale, which answers "already exists" without a read.
   */
  createChecked(
    r: Reply,
    jobId: string,
    config: JobConfig,
    warnings: string[],
    ok?: () => void,
    start?: { config: UpdateConfig; opaqueData?: string },
    api: ApiShape = "v0",
    secrets: SecretRecord[] = [],
  ): void {
    // v0 answers in the body (`alreadyExists`); v1alpha with an error (AlreadyExists).
    const exists = () =>
      api === "v0"
        ? r.ok(bodyError("alreadyExists", `job ${jobId} already exists`, { id: { value: jobId } }))
        : r.error("already-exists", `jobId: job ${jobId} already exists`);
    // The pool lookup's claim, made for this job (v0) or for a job it did not know yet (v1alpha's CreateJob
    // looks its pool up before naming the job here): the job's from now on, ended by its tasks' enqueue, or
    // released if the create fails.
    const claim = this.#claimInHand;
    this.#claimInHand = undefined;
    const { transport, resmgr } = this.jm.deps;
    const release = () =>
      claim !== undefined && transport.send(resmgr, { kind: "release-pool-claim", key: claim });
    if (claim !== undefined) transport.send(resmgr, { kind: "name-pool-claim", key: claim, jobId });
    if (this.jm.stillDeleting(jobId)) {
      release();
      const why = `job ${jobId} is still being deleted: its tasks are being killed, and the job cannot be ` +
        "created again until they ended";
      return api === "v0"
        ? r.ok(bodyError("alreadyExists", why, { id: { value: jobId } }))
        : r.error("already-exists", `jobId: ${why}`);
    }
    if (this.jm.jobs.has(jobId)) {
      release();
      return exists();
    }
    this.jm.createJob(
      jobId,
      config,
      (err) => {
        if (err) release();
        if (err?.name === "StaleWriteError") return exists();
        if (err) return r.storeError(err, `storing job ${jobId}`);
        if (ok) return ok();
        r.ok({ jobId: { value: jobId }, warnings: warnings.length ? warnings : undefined });
      },
      start,
      secrets,
    );
  }

  /**
   * Peloton's Query: job summaries in `results`, and the whole JobInfos in `records` too unless the request
   * says `summaryOnly`, with the spec it read echoed; paged by `spec.pagination` (see `runJobQuery`).
   */
  #query(r: Reply, body: Body): void {
    const parsed = parseQuerySpec(body.spec);
    if (!parsed.ok) return r.error("invalid-argument", parsed.message);
    const pool = valueMessage(body.respoolID, "respoolID", "a resource pool id");
    if (pool instanceof Error) return r.error("invalid-argument", pool.message);
    const summaryOnly = flagOf(body.summaryOnly, "summaryOnly");
    if (!summaryOnly.ok) return r.error("invalid-argument", summaryOnly.message);
    const spec = (body.spec ?? {}) as Body;
    const answer = ({ jobs, pagination }: JobPage) =>
      r.ok({
        records: summaryOnly.value ? undefined : jobs.map(queriedJobInfoJson),
        results: jobs.map(jobSummaryJson),
        pagination,
        // Peloton echoes the QuerySpec it decoded: the fields it knows, not whatever else was sent.
        spec: parsed.value.echo,
      });
    const run = (respoolId: string | undefined) =>
      runJobQuery(this.jm.deps.store, parsed.value, respoolId, (id) => this.jm.jobs.get(id), this.jm.now())
        .then(
          answer,
          (err) => r.storeError(err),
        );
    // Both checked to be `{value}` messages (the spec's by `parseQuerySpec`).
    const ids = idValue(spec.respoolID) ?? pool;
    const path = idValue(spec.respool);
    // `spec.respool` is a ResourcePoolPath: the pool at that path. A value that is no path (a path starts
    // with "/") is taken as a pool id, as this project's CLI sent one there.
    if (!path || !path.startsWith("/")) return void run(path || ids);
    this.lookupPool(path, (id, error, kind) => {
      if (id) return void run(id);
      // No pool there: no job is in it, as an unknown pool id matches none.
      if (kind === "notFound") return answer(noJobs(parsed.value));
      if (kind === "invalidPath") return r.error("invalid-argument", `spec.respool: ${error}`);
      r.error(kind as ApiErrorCode, `spec.respool: cannot look up resource pool ${path}: ${error}`);
    });
  }

  /** Only finished jobs can be deleted (Peloton: "Job is not in a terminal state"). */
  #delete(r: Reply, body: Body): void {
    this.withJob(r, jobIdOf(body.id, "id"), (j) => {
      if (!isTerminalJobState(j.runtime.state)) {
        return r.error("failed-precondition", "Job is not in a terminal state");
      }
      this.jm.deleteJob(j.jobId, (err) => {
        if (err) return r.storeError(err, `deleting job ${j.jobId}`);
        r.ok({});
      });
    });
  }

  /**
   * Resizes a batch job (Spark-style elastic jobs): instances are added or removed; added ones go through
   * admission like any other. Everything else in the config must stay as it is.
   */
  #update(r: Reply, body: Body): void {
    this.withLiveJob(r, jobIdOf(body.id, "id"), (job) => this.#resize(r, job, body));
  }

  #resize(r: Reply, job: JobEntry, body: Body): void {
    // Peloton's Update refuses other jobs ("job update is only supported for batch jobs"): a resize here
    // would bypass a service's rolling updates and fight a daemon's host-driven instances.
    if (job.config.type !== "BATCH") {
      return r.error(
        "invalid-argument",
        `type: job ${job.jobId} is ${job.config.type}, expected BATCH: JobManager.Update resizes batch jobs ` +
          "only; a service changes through a rolling update (UpdateService.CreateUpdate, " +
          "JobService.ReplaceJob), a daemon's instances follow its hosts",
      );
    }
    const raw = { ...(body.config as Body ?? {}) };
    const given = (raw.changeLog as Body | undefined)?.version ??
      (raw.changelog as Body | undefined)?.version;
    if (given !== undefined && Number(given) !== job.configVersion) {
      return r.error("invalid-argument", staleVersionMessage(given, job.configVersion));
    }
    raw.respoolID ??= { value: job.config.respoolId };
    const parsed = this.parseConfig(raw);
    if (!parsed.ok) {
      // job.proto's UpdateResponse names the job in its InvalidJobConfig too.
      const message = parsed.errors.map((e) => e.message).join("; ");
      return r.ok(bodyError("invalidConfig", message, { id: { value: job.jobId } }));
    }
    const next = parsed.value;
    const problem = elasticChange(job.config, next);
    if (problem) return r.error("invalid-argument", problem);
    const wanted = this.parseJobSecrets(r, body.secrets, next);
    if (!wanted) return;
    const newId = () => randomUuid(this.jm.deps.prng);
    const secrets = updatedSecrets(job.jobId, job.secrets, wanted, this.jm.now(), newId);
    if (!secrets.ok) return r.error("invalid-argument", secrets.message);
    const tooLarge = this.jm.tooLargeToStore(job, {
      config: next,
      writes: secrets.changed.map((secret) => ({ kind: "secret.put", secret })),
    });
    if (tooLarge) return r.storeError(tooLarge, `updating job ${job.jobId}`);
    // New and changed secrets are stored with the resize, and every launch from now on writes them.
    for (const secret of secrets.changed) this.jm.write({ kind: "secret.put", secret });
    job.secrets = secrets.all;
    const oldCount = job.config.instanceCount;
    const v = this.jm.addConfigVersion(job, next);
    for (let i = oldCount; i < next.instanceCount; i++) this.jm.addInstanceAt(job, i, v);
    const removed: number[] = [];
    for (const t of job.tasks.values()) {
      if (t.instanceId < next.instanceCount || t.goalState === "DELETED") continue;
      t.goalState = "DELETED";
      this.jm.putTask(t);
      this.jm.taskEngine.enqueue(t);
      removed.push(t.instanceId);
    }
    removed.sort((a, b) => a - b);
    // Shrinking stops instances (Peloton refused it): the answer says which, so the caller sees it happen.
    const stopping = removed.length
      ? `; stopping instance${removed.length === 1 ? "" : "s"} ${idsText(removed)}, past the new count`
      : "";
    this.whenDurable(r, `the resize of job ${job.jobId}`, {
      id: { value: job.jobId },
      message: `job ${job.jobId} now has ${next.instanceCount} instance${
        next.instanceCount === 1 ? "" : "s"
      }${stopping}`,
      configVersion: v,
      instancesRemoved: removed.length ? removed : undefined,
    });
  }

  #startWorkflow(
    r: Reply,
    job: JobEntry,
    type: "RESTART" | "START" | "STOP",
    ranges: InstanceRange[],
    batchSize: number,
  ): void {
    // Peloton's jobsvc drops instances past the end; we refuse, as task Stop|Start|Restart do, so that a
    // range never does less than it names without saying so. JobManager's Restart|Start|Stop answers have
    // no error field: it is an RPC error.
    const outOfRange = outOfRangeOf(job, ranges);
    if (outOfRange) return r.error("out-of-range", String(outOfRange.message));
    const overwrite = overwriteRefusal(this.jm.workflows, job, type);
    if (overwrite) return r.error("invalid-argument", overwrite);
    const u = this.jm.workflows.create(job, {
      type,
      config: { ...DEFAULT_UPDATE_CONFIG, batchSize },
      instances: instancesOf(ranges, job.runtime.nextInstanceId ?? job.config.instanceCount),
    });
    this.whenDurable(r, `the ${type} workflow of job ${job.jobId}`, {
      updateID: { value: u.updateId },
      resourceVersion: job.configVersion,
    });
  }

  #tasks(r: Reply, method: string, body: Body, missing?: (jobId: string) => void): void {
    const ranges = instanceRangesOf(body.ranges);
    if (typeof ranges === "string") return r.error("invalid-argument", ranges);
    this.withLiveJob(
      r,
      jobIdAt(body, "jobId", "id"),
      (job) => this.#taskAction(r, job, method, ranges),
      missing,
    );
  }

  #taskAction(r: Reply, job: JobEntry, method: string, ranges: InstanceRange[]): void {
    const bound = job.runtime.nextInstanceId ?? job.config.instanceCount;
    const outOfRange = outOfRangeOf(job, ranges);
    // Peloton's InstanceIdOutOfRange, in Stop's and Start's error or as Restart's own field; nothing is done.
    if (outOfRange) return r.ok(method === "Restart" ? { outOfRange } : { error: { outOfRange } });
    const instances = instancesOf(ranges, bound);
    // Below the bound but not in the job: removed instances (a daemon's host left, the job shrank).
    const invalid = (instances ?? []).filter((i) => !job.tasks.has(i));
    const what = `the ${method.toLowerCase()} of job ${job.jobId}`;
    if (method === "Stop") {
      if (!instances) {
        // Stopping every instance is stopping the job: refused as StopJob is, while an update starts its pods.
        const refusal = stopRefusal(this.jm.workflows, job);
        if (refusal) return r.error("aborted", refusal);
        this.jm.workflows.abortActive(job);
      }
      const stopped = this.jm.stopTasks(job, instances);
      return this.whenDurable(r, what, { stoppedInstanceIds: stopped, invalidInstanceIds: invalid });
    }
    if (method === "Start") {
      const started = this.jm.startTasks(job, instances);
      return this.whenDurable(r, what, { startedInstanceIds: started, invalidInstanceIds: invalid });
    }
    const restarted = this.jm.restartTasks(job, instances);
    this.whenDurable(r, what, { restartedInstanceIds: restarted, invalidInstanceIds: invalid });
  }

  /**
   * Answers `body` once the writes the call made are stored, so that what it reports done survives a
   * restart; if they failed, answers with the error instead and claims nothing.
   */
  whenDurable(r: Reply, what: string, body: Body): void {
    this.jm.flush((err) => err ? r.storeError(err, `storing ${what}`) : r.ok(body));
  }

  #list(r: Reply, job: JobView, range: InstanceRange): void {
    const value: Record<string, Body> = {};
    const configs = new Map<number, TaskConfigs>();
    const pending: [Body, TaskConfig][] = [];
    for (const t of job.tasks?.values() ?? []) {
      if (!inRange(range, t.instanceId)) continue;
      const tc = this.#configOf(job, t.configVersion, configs).get(t.instanceId);
      value[t.instanceId] = taskInfoJson(job.jobId, tc, t);
      if (t.state === "PENDING" && !t.message) pending.push([value[t.instanceId], tc]);
    }
    this.#explainPending(job, pending, () => r.ok({ result: { value } }));
  }

  /**
   * Peloton's task Query: the job's tasks in the states, with the task names and on the hosts the spec lists
   * (each list, when given, must match), in its order, a page of them (10 by default, as Peloton's store),
   * with the total that matched; PENDING tasks say why they wait, as in `task list`.
   */
  #queryTasks(r: Reply, job: JobView, spec: TaskQuerySpec): void {
    const configs = new Map<number, TaskConfigs>();
    const configOf = (t: TaskRecord) => this.#configOf(job, t.configVersion, configs).get(t.instanceId);
    const { page, total } = runTaskQuery(job.tasks?.values() ?? [], spec, configOf);
    const pending: [Body, TaskConfig][] = [];
    const records = page.map((t) => {
      const tc = configOf(t);
      const info = taskInfoJson(job.jobId, tc, t);
      if (t.state === "PENDING" && !t.message) pending.push([info, tc]);
      return info;
    });
    this.#explainPending(
      job,
      pending,
      () => r.ok({ records, pagination: { offset: spec.offset, limit: spec.limit, total } }),
    );
  }

  /**
   * Peloton's task Refresh: the tasks of a range (all by default; one past the end is cut to the job's
   * instances) run their goal-state actions again, and the job its own. The store and the job manager's
   * memory agree here, so nothing is reloaded; a job held by no one is loaded to be driven.
   */
  #refresh(r: Reply, body: Body): void {
    const range = rangeOf(body);
    if (typeof range === "string") return r.error("invalid-argument", range);
    this.withLiveJob(r, jobIdOf(body.jobId, "jobId"), (job) => {
      const tasks = [...job.tasks.values()].filter((t) => inRange(range, t.instanceId));
      if (!tasks.length) {
        const which = range.to === undefined ? `from ${range.from}` : `in [${range.from}, ${range.to})`;
        return r.error("not-found", `job ${job.jobId} has no tasks ${which}`);
      }
      for (const t of tasks) this.jm.taskEngine.enqueue(t);
      this.jm.jobEngine.enqueue(job);
      r.ok({});
    });
  }

  /**
   * Peloton's DeletePodEvents: the events of an instance's runs up to `runId` (to bound their growth),
   * answered once the delete is stored. An instance the job never had, or a run after the instance's
   * current one, is refused and nothing is deleted: Peloton deleted every run up to the one named, so a run
   * that never was took the current run's events with it.
   */
  #deleteEvents(r: Reply, body: Body): void {
    const instanceId = uint32Of(body.instanceId, "instanceId"), runId = wholeNumber(body.runId);
    if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
    if (runId === undefined || runId < 1) {
      return r.error(
        "invalid-argument",
        `runId: got ${JSON.stringify(body.runId ?? null)}, expected a run number (1 or more)`,
      );
    }
    this.withLiveJob(r, jobIdOf(body.jobId, "jobId"), (job) => {
      const bound = job.runtime.nextInstanceId ?? job.config.instanceCount;
      if (instanceId >= bound) {
        return r.error(
          "invalid-argument",
          `instanceId: got ${instanceId}, expected an instance of job ${job.jobId} (below ${bound})`,
        );
      }
      const current = job.tasks.get(instanceId)?.runId;
      if (current !== undefined && runId > current) {
        return r.error(
          "invalid-argument",
          `runId: got ${runId}, expected a run of task ${job.jobId}-${instanceId} up to its current run, ` +
            `${current}`,
        );
      }
      this.jm.write({ kind: "task.events.delete", jobId: job.jobId, instanceId, runId });
      this.whenDurable(r, `DeletePodEvents of task ${job.jobId}-${instanceId}`, {});
    });
  }

  #getTask(r: Reply, job: JobView, instanceId: number): void {
    const task = job.tasks?.get(instanceId);
    if (!task) return this.#missingInstance(r, job, instanceId);
    const tc = this.#configOf(job, task.configVersion, new Map()).get(instanceId);
    const current = taskInfoJson(job.jobId, tc, task);
    // Each earlier run with its own config when it is known, and none of the current run's fields.
    const previous = (task.history ?? []).slice().reverse().map((run) =>
      taskInfoJson(
        job.jobId,
        this.configAt(job, run.configVersion)?.get(instanceId) ?? tc,
        pastRun(task, run),
      )
    );
    // Peloton's GetResponse: `result` the current run, `results` "all active and completed tasks" of it.
    const pending: [Body, TaskConfig][] = task.state === "PENDING" && !task.message ? [[current, tc]] : [];
    this.#explainPending(job, pending, () => r.ok({ result: current, results: [current, ...previous] }));
  }

  /**
   * A PENDING task waits for its pool to admit it. Ours, not Peloton's (which did not say why): the resource
   * manager's reason (`GetAdmissionWaits`) becomes the message of those tasks that have none of their own.
   * It is the pool's state at this moment, so it is shown, not stored. `answer` runs once: with the
   * reasons, or without them if the resource manager does not answer within `WAITS_TIMEOUT_MS`.
   */
  #explainPending(job: JobView, pending: [info: Body, tc: TaskConfig][], answer: () => void): void {
    const respoolId = job.config.respoolId;
    if (!pending.length || !respoolId) return answer();
    let done = false;
    const finish = (waits?: AdmissionWaits) => {
      if (done) return;
      done = true;
      this.jm.deps.clock.cancelTimer(timer);
      try {
        // A body of another shape (a resource manager of another version) is no reason, not a failed call.
        const known = waits?.limit && waits.queues && typeof waits.preemption === "boolean";
        // No queue holds it: with launches locked down it may be placed already, its launch held back.
        const locked = this.jm.locks.has("Launch") ? LAUNCH_LOCKED : undefined;
        for (const [info, tc] of pending) {
          const revocable = isRevocable(job.config, tc);
          const message = (known
            ? waitFor(waits!, {
              jobId: job.jobId,
              resources: taskResources(tc),
              revocable,
              // The resource manager's controller gang is one controller task alone.
              controller: tc.controller === true &&
                gangSize(job.config, info.instanceId as number, revocable) === 1,
              preemptible: isPreemptible(job.config, tc),
            })
            : undefined) ?? locked;
          if (message) (info.runtime as Body).message = message;
        }
      } finally {
        answer();
      }
    };
    let reqId = 0;
    const timer = this.jm.deps.clock.setTimer(WAITS_TIMEOUT_MS, () => {
      this.jm.cancelCall(reqId);
      finish();
    });
    reqId = this.#resmgrApi(RESPOOL_WAITS, { id: { value: respoolId } }, (reply) => {
      const waits = (reply.body as Body | undefined)?.waits as AdmissionWaits | undefined;
      finish(reply.error ? undefined : waits);
    });
  }

  /**
   * Peloton's `outOfRange` for an instance the job does not have, with a message that tells apart an id it
   * never had from one it had and removed (a daemon's host left, the job shrank): instance ids of such
   * jobs are not 0 to instanceCount-1, so the count alone cannot say. A removed instance's events stay
   * in the store.
   */
  #missingInstance(r: Reply, job: JobView, instanceId: number): void {
    const ids = [...(job.tasks?.keys() ?? [])];
    const answer = (message: string) =>
      r.ok({
        outOfRange: { jobId: { value: job.jobId }, instanceCount: job.config.instanceCount, message },
      });
    const never = () =>
      answer(`instance ${instanceId} is out of range: job ${job.jobId} has ${instancesText(ids)}`);
    if (instanceId >= (job.runtime.nextInstanceId ?? job.config.instanceCount)) return never();
    this.jm.deps.store.getTaskEvents(job.jobId, instanceId).then((events) => {
      const last = events.at(-1);
      if (!last) return never();
      const host = events.findLast((e) => e.hostname)?.hostname;
      const why = job.config.type === "DAEMON"
        ? `when its host${host ? ` ${host}` : ""} left the daemon job's hosts (down, in maintenance, or no ` +
          "longer matching its constraint)"
        : `when the job shrank to ${instancesText(ids)}`;
      const run = mesosTaskId(job.jobId, instanceId, last.runId);
      answer(
        `instance ${instanceId} of job ${job.jobId} was removed ${why}; its last run, ${run}, ended ${last.state}`,
      );
    }, (err) => r.storeError(err));
  }

  /** The task configs of the job's config version `v` (the current one if that is gone). */
  configOf(job: JobView, v: number): TaskConfigs {
    return this.#configOf(job, v, new Map());
  }

  /** The task configs of exactly config version `v`, or undefined when it is not at hand. */
  configAt(job: JobView, v: number | undefined): TaskConfigs | undefined {
    if (v === undefined) return undefined;
    const live = this.jm.jobs.get(job.jobId);
    if (live) return live.versions.get(v)?.tasks;
    return v === job.configVersion ? this.#configOf(job, v, new Map()) : undefined;
  }

  /** Task configs of a version, from memory when the job is active. */
  #configOf(job: JobView, v: number, cache: Map<number, TaskConfigs>): TaskConfigs {
    const live = this.jm.jobs.get(job.jobId);
    if (live) return (live.versions.get(v) ?? live.versions.get(live.configVersion)!).tasks;
    let c = cache.get(v);
    if (!c) cache.set(v, c = new TaskConfigs(job.config));
    return c;
  }

  /**
   * Peloton's GetPodEvents (`pkg/jobmgr/tasksvc/handler.go`): a run's events, newest first, then those of
   * the runs before it, `limit` runs in all (Peloton's default, 10, when 0 or unset). The walk starts at
   * the latest run, or at the one `runId` names (a Mesos task id `JOB-INSTANCE-RUN`; Peloton then returns
   * that run alone, whatever the limit), and stops early at run 1 or at a run with no events
   * (DeletePodEvents removed them), where Peloton's chain of previous task ids ends.
   */
  #events(r: Reply, body: Body): void {
    const jobId = jobIdOf(body.jobId, "jobId");
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    const instanceId = uint32Of(body.instanceId, "instanceId");
    if (typeof instanceId === "string") return r.error("invalid-argument", instanceId);
    // A uint64 in Peloton: any whole number this API can hold exactly.
    const limit = wholeNumber(body.limit);
    if (limit === undefined) {
      return r.error(
        "invalid-argument",
        `limit: got ${JSON.stringify(body.limit)}, expected a whole number of runs from 0 to ` +
          `${Number.MAX_SAFE_INTEGER} (0 for the default, 10)`,
      );
    }
    // Empty names no run, as in Peloton. A run of another task is refused: Peloton would read its number
    // alone and answer this task's run of that number.
    const runText = body.runId === undefined || body.runId === null ? "" : idValue(body.runId);
    let runId: number | undefined;
    if (runText !== "") {
      const id = runText === undefined ? undefined : parseMesosTaskId(runText);
      if (!id || id.jobId !== jobId || id.instanceId !== instanceId) {
        const name = `${jobId}-${instanceId}`;
        return r.error(
          "invalid-argument",
          `runId: got ${JSON.stringify(body.runId)}, expected a run of ${name}: ${name}-RUN`,
        );
      }
      runId = id.runId;
    }
    const runs = runId !== undefined ? 1 : limit || DEFAULT_EVENT_RUNS;
    this.jm.deps.store.getTaskEvents(jobId, instanceId).then(
      (events) => r.ok({ result: runsBack(events, runId, runs).map(eventJson) }),
      (err) => r.storeError(err),
    );
  }

  /**
   * Where a run's sandbox is: the current run's, or with `taskId` (Peloton's BrowseSandboxRequest.taskId,
   * a Mesos task id `JOB-INSTANCE-RUN`) an earlier run's, from the task's history. As Peloton's
   * (`getSandboxPathInfo`), a run that cannot be found (an instance the job does not have, a run the task
   * never had) is answered in the body's `error.outOfRange` {jobId, instanceCount}, and a run never placed
   * on a host in its `error.notRunning`; each with a message saying which. A `taskId` of another task is a
   * malformed request.
   */
  #sandbox(r: Reply, job: JobView, instanceId: number, taskId?: string): void {
    const task = job.tasks?.get(instanceId);
    const name = `${job.jobId}-${instanceId}`;
    const outOfRange = (message: string) =>
      r.ok({
        error: {
          outOfRange: { jobId: { value: job.jobId }, instanceCount: job.config.instanceCount, message },
        },
      });
    let run: { runId: number; hostname?: string; agentId?: string } | undefined = task;
    if (taskId !== undefined) {
      const id = parseMesosTaskId(taskId);
      if (!id || id.jobId !== job.jobId || id.instanceId !== instanceId) {
        return r.error("invalid-argument", `taskId: got "${taskId}", expected a run of ${name}: ${name}-RUN`);
      }
      run = task?.runId === id.runId ? task : task?.history?.find((h) => h.runId === id.runId);
      if (!run) {
        const runs = [...(task?.history ?? []), ...(task ? [task] : [])].map((h) => h.runId);
        return outOfRange(`task ${name} has no run ${id.runId}; its runs: ${runs.join(", ") || "none"}`);
      }
    }
    if (!task && taskId === undefined) {
      const ids = [...(job.tasks?.keys() ?? [])];
      return outOfRange(`instance ${instanceId} is out of range: job ${job.jobId} has ${instancesText(ids)}`);
    }
    if (!run?.hostname) {
      return r.ok({ error: { notRunning: { message: notLaunchedMessage(name, task, taskId) } } });
    }
    r.ok({
      hostname: run.hostname,
      // Runs recorded before history kept agent ids have only their host; the sandbox is still looked up.
      agentId: run.agentId ? { value: run.agentId } : undefined,
      taskId: { value: mesosTaskId(job.jobId, instanceId, run.runId) },
      paths: ["stdout", "stderr"],
    });
  }

  /**
   * Runs `fn` with the job the request names in `field` as this job manager holds it in memory, its cache
   * (Peloton's GetCache calls): a job it does not drive is answered not-found, never loaded for this.
   */
  withCachedJob(r: Reply, field: string, raw: unknown, fn: (job: JobEntry) => void): void {
    const jobId = jobIdOf(raw, field);
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    const job = this.jm.jobs.get(jobId);
    if (!job) return r.error("not-found", `job ${jobId} not found in cache`);
    fn(job);
  }

  /**
   * Peloton's Refresh (v0 JobManager; RefreshJob of the v1alpha JobService and the private
   * JobManagerService): the goal-state actions of the job the request names in `field`, and of each of its
   * tasks, run again. A job only the store holds is loaded first, as Peloton reloads it into its cache; one
   * in memory is not read again, as every change the job manager makes is written through from memory, so
   * the store is never ahead of it.
   */
  refreshJob(r: Reply, field: string, raw: unknown): void {
    this.withLiveJob(r, jobIdOf(raw, field), (job) => {
      this.jm.jobEngine.enqueue(job);
      for (const t of job.tasks.values()) this.jm.taskEngine.enqueue(t);
      r.ok({});
    });
  }

  /**
   * Peloton's GetActiveJobs: the ids of the active jobs (Peloton's `active_jobs`: not ended, or ended with
   * work left, such as a stopped job started again; `isActiveJob`), oldest first. Read from the
   * store, as Peloton's is: with several job managers each holds only its shards' jobs, while the store is
   * shared, so whichever job manager is asked lists them all.
   */
  #activeJobs(r: Reply): void {
    this.jm.deps.store.activeJobs().then(
      (jobs) => r.ok({ ids: jobs.map((j) => ({ value: j.jobId })) }),
      (err) => r.storeError(err, `reading the active jobs`),
    );
  }

  /**
   * Runs `fn`, which changes the job, with the job in memory: a job only the store holds (it ended
   * before a restart) is loaded first, so calls act the same before and after a restart. An unknown job is
   * answered by `missing`, or else as a not-found error.
   */
  withLiveJob(
    r: Reply,
    jobId: JobIdArg,
    fn: (job: JobEntry) => void,
    missing = (id: string) => r.error("not-found", `job ${id} not found`),
  ): void {
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    const inMemory = this.jm.jobs.get(jobId);
    if (inMemory) return fn(inMemory);
    this.jm.loadJob(jobId, (job, err) => {
      if (err) return r.storeError(err, `loading job ${jobId}`);
      if (!job) return missing(jobId);
      fn(job);
    });
  }

  /**
   * Runs `fn` with the live job unless `refusal` gives a reason not to, which is answered as an
   * InvalidArgument; the job is looked at before it is loaded, so a refused call changes nothing.
   */
  withLiveJobUnless(
    r: Reply,
    jobId: JobIdArg,
    refusal: (j: JobView) => string | undefined,
    fn: (job: JobEntry) => void,
  ): void {
    this.withJob(r, jobId, (j) => {
      const why = refusal(j);
      if (why !== undefined) return r.error("invalid-argument", why);
      this.withLiveJob(r, j.jobId, fn);
    });
  }

  /** Runs `fn` with the live job if it is not a batch job (see `batchRefusal`). */
  withServiceJob(
    r: Reply,
    jobId: JobIdArg,
    type: "RESTART" | "START" | "STOP",
    fn: (job: JobEntry) => void,
  ): void {
    this.withLiveJobUnless(r, jobId, batchRefusal(type), fn);
  }

  /**
   * Runs `fn` with the job from memory, or from the store for jobs no longer held; an unknown job is
   * answered by `missing`, or else as a not-found error.
   */
  withJob(
    r: Reply,
    jobId: JobIdArg,
    fn: (j: JobView) => void,
    withTasks = false,
    missing = (id: string) => r.error("not-found", `job ${id} not found`),
  ): void {
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    const inMemory = this.jm.jobs.get(jobId);
    if (inMemory) return fn(inMemory);
    const store = this.jm.deps.store;
    Promise.all([store.getJob(jobId), withTasks ? store.getTasks(jobId) : Promise.resolve(undefined)]).then(
      ([job, tasks]) => {
        if (!job) return missing(jobId);
        fn({ ...job, tasks: tasks && new InstanceMap(tasks.map((t) => [t.instanceId, t])) });
      },
      (err) => r.storeError(err),
    );
  }
}

/**
 * The events of run `from` (the latest when undefined) and of the runs before it, `runs` runs at most,
 * newest first; `events` oldest first. Runs are numbered one after another, so the run before run N is N-1
 * (Peloton's `prevTaskId`): the walk ends after run 1, or at a run without events, as a missing row ends
 * Peloton's.
 */
function runsBack(events: TaskEventRecord[], from: number | undefined, runs: number): TaskEventRecord[] {
  const byRun = new Map<number, TaskEventRecord[]>();
  let latest = 0;
  for (const e of events) {
    let list = byRun.get(e.runId);
    if (!list) byRun.set(e.runId, list = []);
    list.push(e);
    if (e.runId > latest) latest = e.runId;
  }
  const out: TaskEventRecord[] = [];
  for (let run = from ?? latest, n = 0; run >= 1 && n < runs; run--, n++) {
    const list = byRun.get(run);
    if (!list) break;
    for (let i = list.length - 1; i >= 0; i--) out.push(list[i]);
  }
  return out;
}

/**
 * Peloton's GetCacheResponse: the job's runtime as held in memory, and of its config the fields Peloton's
 * job cache keeps (changeLog, SLA, respoolID, type, instanceCount); `job get` shows the whole config.
 */
function jobCacheJson(j: JobEntry): Body {
  const c = jobConfigJson(j.config, j.configVersion);
  return {
    config: {
      changeLog: c.changeLog,
      sla: c.sla,
      respoolID: c.respoolID,
      type: c.type,
      instanceCount: c.instanceCount,
    },
    runtime: jobRuntimeJson(j),
  };
}

/**
 * Why a run has no sandbox to browse: it was never launched. For the current run of a task whose earlier
 * runs were (its host in maintenance, say), the latest of those is named, so that it can be asked for.
 */
function notLaunchedMessage(name: string, task: TaskRecord | undefined, taskId?: string): string {
  const launched = taskId === undefined ? task?.history?.findLast((h) => h.hostname) : undefined;
  if (!task || !launched) return `task ${taskId ?? name} has not been launched on any host`;
  const { jobId, instanceId } = task;
  const current = mesosTaskId(jobId, instanceId, task.runId);
  const latest = mesosTaskId(jobId, instanceId, launched.runId);
  return `task ${name}: its current run ${current} has not been launched yet; its latest launched run is ` +
    `${latest}, on ${launched.hostname} (taskId ${latest} browses its sandbox)`;
}

/**
 * What a resize may change: the instance count and the configs of instances it adds. Peloton's
 * `ValidateUpdatedConfig` allowed only growth; we allow shrinking too (Spark dynamic allocation).
 */
export function elasticChange(before: JobConfig, after: JobConfig): string | undefined {
  const fields = [
    "name",
    "type",
    "respoolId",
    "owningTeam",
    "ldapGroups",
    "labels",
    "sla",
    "defaultConfig",
  ] as const;
  for (const f of fields) {
    if (differs(before[f], after[f])) {
      return `config.${
        f === "respoolId" ? "respoolID" : f
      }: a job update may change only instanceCount and new instances' configs`;
    }
  }
  for (const [i, tc] of Object.entries(before.instanceConfig)) {
    if (
      Number(i) < after.instanceCount &&
      differs(tc, after.instanceConfig[Number(i)])
    ) {
      return `config.instanceConfig.${i}: an existing instance's config cannot change in a job update`;
    }
  }
  if (after.instanceCount < 1) return `config.instanceCount: got ${after.instanceCount}, expected at least 1`;
  return undefined;
}

/**
 * What a PENDING task no pool queue holds says while launches are locked down: the resource manager may
 * have placed it already, and the job manager takes no placement until the lockdown is lifted.
 */
const LAUNCH_LOCKED = "launches are locked down (AdminService Lockdown: Launch): the task may be placed " +
  "already, and is launched once 'peloton admin unlock Launch' lifts it";

/**
 * Why a PENDING task waits, from its pool's waits: more than the pool's limit (a non-revocable task never
 * will be admitted, whatever frees up), else why the first gang of each queue the task may be in waits:
 * every task's `pending` queue, and the queue of its kind Peloton's admission moves it to when it is
 * refused at the head; undefined when none of them is held.
 */
function waitFor(
  waits: AdmissionWaits,
  task: {
    jobId: string;
    resources: Resources;
    revocable: boolean;
    controller: boolean;
    preemptible: boolean;
  },
): string | undefined {
  if (!task.revocable) {
    const r = task.resources, l = waits.limit;
    const asks = { cpu: r.cpuMilli / 1000, memory: r.memMb, disk: r.diskMb, gpu: r.gpuMilli / 1000 };
    const over = (["cpu", "memory", "disk", "gpu"] as const).filter((k) => asks[k] > l[k]);
    if (over.length) {
      const what = over.map((k) => `${k} ${amount(k, asks[k])} (its limit: ${amount(k, l[k])})`).join(", ");
      return `the task asks for more than resource pool ${waits.path} may ever hold: ${what}; ` +
        "it will not be admitted unless the pool's limit is raised";
    }
  }
  // The side queue admission moves the task to when it is refused at the head of `pending`
  // (`sideQueueFor`): one at most.
  const side = !task.preemptible && waits.preemption
    ? "nonPreemptible"
    : task.controller
    ? "controller"
    : task.revocable
    ? "revocable"
    : undefined;
  const lines = (["pending", side] as const).map((kind) => kind && queueWait(waits, kind, task.jobId))
    .filter((w): w is string => !!w);
  return lines.length ? [...new Set(lines)].join("; ") : undefined;
}

const QUEUE_NAMES = {
  pending: "pending",
  nonPreemptible: "non-preemptible",
  controller: "controller",
  revocable: "revocable",
} as const;

/**
 * What a queue's wait means to a task of job `jobId`: the reason as is when it is about the task's own job
 * (or the resource manager did not say whose gang it is about); said to be another job's gang that the task
 * is behind, when it is; nothing when that gang is only passed over (it holds no one up).
 */
function queueWait(waits: AdmissionWaits, kind: keyof typeof QUEUE_NAMES, jobId: string): string | undefined {
  const reason = waits.queues[kind];
  const head = waits.heads?.[kind];
  if (!reason || !head || head.jobId === jobId) return reason;
  if (head.passedOver) return undefined;
  const whose = head.tasks > 1 ? `gang of ${head.tasks} tasks` : "task";
  const queue = `resource pool ${waits.path}'s ${QUEUE_NAMES[kind]} queue`;
  return `behind job ${head.jobId}'s ${whose} at the head of ${queue}, which waits: ${reason}`;
}

/** Cores and GPUs to three decimals, MB as integers with the unit. */
function amount(kind: string, v: number): string {
  return kind === "memory" || kind === "disk" ? `${Math.round(v)} MB` : String(Math.round(v * 1000) / 1000);
}
