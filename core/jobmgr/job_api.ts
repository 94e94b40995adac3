/** Peloton's v0 job and task APIs (`peloton.api.job.JobManager`, `peloton.api.task.TaskManager`), and the router to the others. */
import type { ApiReply, ApiRequest } from "../messages.ts";
import type { JobConfig } from "../model/config_types.ts";
import { parseJobConfig } from "../model/load.ts";
import { isTerminalJobState } from "../model/states.ts";
import { randomUuid } from "../ports/prng.ts";
import {
  type Body,
  eventJson,
  idValue,
  instancesOf,
  jobConfigJson,
  jobInfoJson,
  type JobView,
  Reply,
  taskInfoJson,
} from "./api_json.ts";
import { InstanceMap, type JobEntry } from "./job_entry.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE, StatelessApi } from "./stateless_api.ts";
import { TaskConfigs } from "./task_build.ts";
import { UPDATE_SERVICE, UpdateApi } from "./update_api.ts";
import { VOLUME_SERVICE, VolumeApi } from "./volume_api.ts";
import { DEFAULT_UPDATE_CONFIG } from "./workflow.ts";

export const JOB_SERVICE = "peloton.api.job.JobManager";
export const TASK_SERVICE = "peloton.api.task.TaskManager";
const RESPOOL_GET = "peloton.api.respool.ResourceManager::GetResourcePool";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export { jobConfigJson, jobInfoJson };

/** Peloton's in-body error shape: `{error: {<kind>: {message}}}`. */
export const bodyError = (kind: string, message: string, extra: Body = {}): Body => ({
  error: { [kind]: { message, ...extra } },
});

export class JobApi {
  readonly #updates: UpdateApi;
  readonly #volumes: VolumeApi;
  readonly #stateless: StatelessApi;

  constructor(readonly jm: JobManager) {
    this.#updates = new UpdateApi(this);
    this.#volumes = new VolumeApi(this);
    this.#stateless = new StatelessApi(this);
  }

  handle(req: ApiRequest): void {
    const sep = req.procedure.indexOf("::");
    const service = req.procedure.slice(0, sep), method = req.procedure.slice(sep + 2);
    const body = (req.body ?? {}) as Body;
    const r = new Reply(this.jm.deps.transport, req);
    if (service === UPDATE_SERVICE) return this.#updates.handle(method, body, r);
    if (service === VOLUME_SERVICE) return this.#volumes.handle(method, body, r);
    if (service === STATELESS_SERVICE) return this.#stateless.handle(method, body, r);
    const key = `${service === JOB_SERVICE ? "job" : service === TASK_SERVICE ? "task" : service}.${method}`;
    switch (key) {
      case "job.Create":
        return this.#create(r, body);
      case "job.Get":
        return this.withJob(
          r,
          idValue(body.id),
          (j) => r.ok({ jobInfo: jobInfoJson(j), config: jobConfigJson(j.config) }),
        );
      case "job.Query":
        return this.#query(r, body);
      case "job.Delete":
        return this.#delete(r, body);
      case "job.Update":
        return this.#update(r, body);
      case "job.Restart":
      case "job.Start":
      case "job.Stop":
        // With a batch size these are rolling workflows; without, they act on every instance at once.
        if (Number(body.batchSize ?? 0) > 0) {
          return this.#workflow(r, method.toUpperCase() as "RESTART" | "START" | "STOP", body);
        }
        return this.#tasks(r, method, body);
      case "task.Stop":
      case "task.Start":
      case "task.Restart":
        return this.#tasks(r, method, body);
      case "task.List":
        return this.withJob(r, idValue(body.jobId), (j) => this.#list(r, j, body), true);
      case "task.Get":
        return this.withJob(
          r,
          idValue(body.jobId),
          (j) => this.#getTask(r, j, Number(body.instanceId ?? 0)),
          true,
        );
      case "task.GetPodEvents":
        return this.#events(r, body);
      case "task.BrowseSandbox":
        return this.withJob(
          r,
          idValue(body.jobId),
          (j) => this.#sandbox(r, j, Number(body.instanceId ?? 0)),
          true,
        );
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

  /** Checks the pool is a leaf at the resource manager, then runs `then`. */
  checkPool(r: Reply, respoolId: string | undefined, then: () => void): void {
    if (!respoolId) return r.ok(bodyError("invalidConfig", "config.respoolID: expected a resource pool id"));
    const { self, resmgr } = this.jm.deps;
    this.jm.call<ApiReply>(
      resmgr,
      (reqId) => ({
        kind: "api",
        reqId,
        replyTo: self,
        procedure: RESPOOL_GET,
        body: { id: { value: respoolId } },
      }),
      (reply) => {
        const info = (reply.body as Body | undefined)?.poolinfo as Body | undefined;
        if (!info) {
          return r.ok(bodyError("invalidConfig", `config.respoolID: resource pool ${respoolId} not found`));
        }
        if ((info.children as unknown[]).length > 0) {
          return r.ok(
            bodyError("invalidConfig", `config.respoolID: resource pool ${respoolId} is not a leaf pool`),
          );
        }
        then();
      },
    );
  }

  #create(r: Reply, body: Body): void {
    const parsed = this.parseConfig(body.config);
    if (!parsed.ok) return r.ok(bodyError("invalidConfig", parsed.errors.map((e) => e.message).join("; ")));
    const given = idValue(body.id);
    if (given !== undefined && !UUID.test(given)) {
      return r.ok(bodyError("invalidJobId", `id: got "${given}", expected a UUID`));
    }
    const config = parsed.value;
    const jobId = given ?? randomUuid(this.jm.deps.prng);
    const warnings = parsed.warnings.map((w) => w.message);
    this.checkPool(r, config.respoolId, () => this.createChecked(r, jobId, config, warnings));
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
    startBatch = 0,
  ): void {
    const exists = () =>
      r.ok(bodyError("alreadyExists", `job ${jobId} already exists`, { id: { value: jobId } }));
    if (this.jm.jobs.has(jobId)) return exists();
    this.jm.createJob(jobId, config, (err) => {
      if (err?.name === "StaleWriteError") return exists();
      if (err) return r.error("internal", `storing job ${jobId}: ${err.message}`);
      if (ok) return ok();
      r.ok({ jobId: { value: jobId }, warnings: warnings.length ? warnings : undefined });
    }, startBatch);
  }

  #query(r: Reply, body: Body): void {
    const spec = (body.spec ?? {}) as Body;
    const pagination = (spec.pagination ?? {}) as Body;
    this.jm.deps.store.queryJobs({
      states: Array.isArray(spec.jobStates) ? (spec.jobStates as string[]) : undefined,
      respoolId: idValue(spec.respool) ?? idValue(spec.respoolID),
      owner: typeof spec.owner === "string" ? spec.owner : undefined,
      name: typeof spec.name === "string" ? spec.name : undefined,
      labels: Array.isArray(spec.labels) ? (spec.labels as { key: string; value: string }[]) : undefined,
      limit: Number(pagination.limit ?? 100),
    }).then((records) => {
      const jobs = records.map((rec) => this.jm.jobs.get(rec.jobId) ?? rec);
      r.ok({ records: jobs.map(jobInfoJson), pagination: { total: jobs.length } });
    }, (err) => r.error("internal", String(err)));
  }

  /** Only finished jobs can be deleted (Peloton: "Job is not in a terminal state"). */
  #delete(r: Reply, body: Body): void {
    const jobId = idValue(body.id);
    this.withJob(r, jobId, (j) => {
      if (!isTerminalJobState(j.runtime.state)) {
        return r.error("failed-precondition", "Job is not in a terminal state");
      }
      this.jm.jobs.delete(j.jobId);
      this.jm.deps.store.write([{ kind: "job.delete", jobId: j.jobId }], (err) => {
        if (err) return r.error("internal", `deleting job ${j.jobId}: ${err.message}`);
        r.ok({});
      });
    });
  }

  /**
   * Resizes a job (Spark-style elastic jobs): instances are added or removed; added ones go through
   * admission like any other. Everything else in the config must stay as it is.
   */
  #update(r: Reply, body: Body): void {
    this.withLiveJob(r, idValue(body.id), (job) => this.#resize(r, job, body));
  }

  #resize(r: Reply, job: JobEntry, body: Body): void {
    const raw = { ...(body.config as Body ?? {}) };
    const given = (raw.changeLog as Body | undefined)?.version ??
      (raw.changelog as Body | undefined)?.version;
    if (given !== undefined && Number(given) !== job.configVersion) {
      return r.error(
        "invalid-argument",
        `config.changeLog.version: got ${given}, expected the current version ${job.configVersion}`,
      );
    }
    raw.respoolID ??= { value: job.config.respoolId };
    const parsed = this.parseConfig(raw);
    if (!parsed.ok) return r.ok(bodyError("invalidConfig", parsed.errors.map((e) => e.message).join("; ")));
    const next = parsed.value;
    const problem = elasticChange(job.config, next);
    if (problem) return r.error("invalid-argument", problem);
    const oldCount = job.config.instanceCount;
    const v = this.jm.addConfigVersion(job, next);
    for (let i = oldCount; i < next.instanceCount; i++) this.jm.addInstanceAt(job, i, v);
    for (const t of job.tasks.values()) {
      if (t.instanceId < next.instanceCount || t.goalState === "DELETED") continue;
      t.goalState = "DELETED";
      this.jm.putTask(t);
      this.jm.taskEngine.enqueue(t);
    }
    this.jm.flush();
    r.ok({
      id: { value: job.jobId },
      message: `job ${job.jobId} now has ${next.instanceCount} instances`,
      configVersion: v,
    });
  }

  #workflow(r: Reply, type: "RESTART" | "START" | "STOP", body: Body): void {
    this.withLiveJob(r, idValue(body.id), (job) => this.#startWorkflow(r, job, type, body));
  }

  #startWorkflow(r: Reply, job: JobEntry, type: "RESTART" | "START" | "STOP", body: Body): void {
    const version = body.resourceVersion ?? body.configurationVersion;
    if (version !== undefined && Number(version) !== job.configVersion) {
      return r.error("aborted", `resourceVersion: got ${version}, expected ${job.configVersion}`);
    }
    const u = this.jm.workflows.create(job, {
      type,
      config: { ...DEFAULT_UPDATE_CONFIG, batchSize: Number(body.batchSize ?? 0) },
      instances: instancesOf(body.ranges, job.config.instanceCount),
    });
    this.jm.flush();
    r.ok({ updateID: { value: u.updateId }, resourceVersion: job.configVersion });
  }

  #tasks(r: Reply, method: string, body: Body): void {
    this.withLiveJob(r, idValue(body.jobId ?? body.id), (job) => this.#taskAction(r, job, method, body));
  }

  #taskAction(r: Reply, job: JobEntry, method: string, body: Body): void {
    const instances = instancesOf(body.ranges, job.runtime.nextInstanceId ?? job.config.instanceCount);
    const invalid = (instances ?? []).filter((i) => !job.tasks.has(i));
    if (method === "Stop") {
      if (!instances) this.jm.workflows.abortActive(job);
      return r.ok({ stoppedInstanceIds: this.jm.stopTasks(job, instances), invalidInstanceIds: invalid });
    }
    if (method === "Start") {
      return r.ok({ startedInstanceIds: this.jm.startTasks(job, instances), invalidInstanceIds: invalid });
    }
    const restarted: number[] = [];
    for (const i of instances ?? [...job.tasks.keys()]) {
      const t = job.tasks.get(i);
      if (!t || t.goalState === "DELETED") continue;
      t.desiredRunId = t.runId + 1;
      this.jm.putTask(t);
      this.jm.taskEngine.enqueue(t);
      restarted.push(i);
    }
    this.jm.flush();
    r.ok({ restartedInstanceIds: restarted, invalidInstanceIds: invalid });
  }

  #list(r: Reply, job: JobView, body: Body): void {
    const range = body.range as Body | undefined;
    const from = Number(range?.from ?? 0), to = Number(range?.to ?? Infinity);
    const value: Record<string, Body> = {};
    const configs = new Map<number, TaskConfigs>();
    for (const t of job.tasks?.values() ?? []) {
      if (t.instanceId < from || t.instanceId >= to) continue;
      value[t.instanceId] = taskInfoJson(
        job.jobId,
        this.#configOf(job, t.configVersion, configs).get(t.instanceId),
        t,
      );
    }
    r.ok({ result: { value } });
  }

  #getTask(r: Reply, job: JobView, instanceId: number): void {
    const task = job.tasks?.get(instanceId);
    if (!task) {
      return r.ok({ outOfRange: { jobId: { value: job.jobId }, instanceCount: job.config.instanceCount } });
    }
    const tc = this.#configOf(job, task.configVersion, new Map()).get(instanceId);
    const current = taskInfoJson(job.jobId, tc, task);
    const previous = (task.history ?? []).slice().reverse().map((run) =>
      taskInfoJson(job.jobId, tc, { ...task, ...run, history: undefined })
    );
    r.ok({ result: [current, ...previous] });
  }

  /** Task configs of a version, from memory when the job is active. */
  #configOf(job: JobView, v: number, cache: Map<number, TaskConfigs>): TaskConfigs {
    const live = this.jm.jobs.get(job.jobId);
    if (live) return (live.versions.get(v) ?? live.versions.get(live.configVersion)!).tasks;
    let c = cache.get(v);
    if (!c) cache.set(v, c = new TaskConfigs(job.config));
    return c;
  }

  #events(r: Reply, body: Body): void {
    const jobId = idValue(body.jobId);
    if (!jobId) return r.error("invalid-argument", "jobId: expected a job id");
    this.jm.deps.store.getTaskEvents(jobId, Number(body.instanceId ?? 0)).then(
      (events) => r.ok({ result: events.map(eventJson).reverse() }),
      (err) => r.error("internal", String(err)),
    );
  }

  #sandbox(r: Reply, job: JobView, instanceId: number): void {
    const task = job.tasks?.get(instanceId);
    if (!task || !task.agentId) {
      return r.error("not-found", `task ${job.jobId}-${instanceId} has not been launched on any host`);
    }
    r.ok({
      hostname: task.hostname,
      agentId: { value: task.agentId },
      taskId: { value: `${task.jobId}-${task.instanceId}-${task.runId}` },
      paths: ["stdout", "stderr"],
    });
  }

  /**
   * Runs `fn`, which changes the job, with the job in memory: a job only the store holds (it ended
   * before a restart) is loaded first, so calls act the same before and after a restart.
   */
  withLiveJob(r: Reply, jobId: string | undefined, fn: (job: JobEntry) => void): void {
    if (!jobId) return r.error("invalid-argument", "id: expected a job id");
    const inMemory = this.jm.jobs.get(jobId);
    if (inMemory) return fn(inMemory);
    this.jm.loadJob(jobId, (job, err) => {
      if (err) return r.error("internal", `loading job ${jobId}: ${err.message}`);
      if (!job) return r.error("not-found", `job ${jobId} not found`);
      fn(job);
    });
  }

  /** Runs `fn` with the job from memory, or from the store for jobs no longer held. */
  withJob(r: Reply, jobId: string | undefined, fn: (j: JobView) => void, withTasks = false): void {
    if (!jobId) return r.error("invalid-argument", "id: expected a job id");
    const inMemory = this.jm.jobs.get(jobId);
    if (inMemory) return fn(inMemory);
    const store = this.jm.deps.store;
    Promise.all([store.getJob(jobId), withTasks ? store.getTasks(jobId) : Promise.resolve(undefined)]).then(
      ([job, tasks]) => {
        if (!job) return r.error("not-found", `job ${jobId} not found`);
        fn({ ...job, tasks: tasks && new InstanceMap(tasks.map((t) => [t.instanceId, t])) });
      },
      (err) => r.error("internal", String(err)),
    );
  }
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
    if (JSON.stringify(before[f]) !== JSON.stringify(after[f])) {
      return `config.${
        f === "respoolId" ? "respoolID" : f
      }: a job update may change only instanceCount and new instances' configs`;
    }
  }
  for (const [i, tc] of Object.entries(before.instanceConfig)) {
    if (
      Number(i) < after.instanceCount &&
      JSON.stringify(tc) !== JSON.stringify(after.instanceConfig[Number(i)])
    ) {
      return `config.instanceConfig.${i}: an existing instance's config cannot change in a job update`;
    }
  }
  if (after.instanceCount < 1) return `config.instanceCount: got ${after.instanceCount}, expected at least 1`;
  return undefined;
}
