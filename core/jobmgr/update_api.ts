/** Peloton's v0 update API (`peloton.api.v0.update.svc.UpdateService`): rolling updates of service jobs. */
import { parseUpdateConfig } from "../model/load.ts";
import type { UpdateRecord } from "../model/records.ts";
import {
  type Body,
  jobIdAt,
  jobIdOf,
  opaqueDataOf,
  type Reply,
  updateInfoJson,
  valueMessage,
} from "./api_json.ts";
import { bodyError, type JobApi, STALE_VERSION_MESSAGE } from "./job_api.ts";
import { flagOf } from "./query_spec.ts";
import type { JobEntry } from "./job_entry.ts";
import { volumeChangeRefusal } from "./volume_api.ts";
import { DEFAULT_UPDATE_CONFIG, overwriteRefusal, startTasksRefusal } from "./workflow.ts";

export const UPDATE_SERVICE = "peloton.api.v0.update.svc.UpdateService";

export class UpdateApi {
  constructor(private readonly api: JobApi) {}

  handle(method: string, body: Body, r: Reply): void {
    switch (method) {
      case "CreateUpdate":
        return this.#create(body, r);
      case "GetUpdate":
        return this.#get(body, r);
      case "GetUpdateCache":
        return this.#cache(body, r);
      case "ListUpdates":
        return this.#list(body, r);
      case "PauseUpdate":
      case "ResumeUpdate":
      case "AbortUpdate":
      case "RollbackUpdate":
        return this.#control(method, body, r);
      default:
        return r.error("unimplemented", `procedure ${UPDATE_SERVICE}::${method} is not implemented`);
    }
  }

  /**
   * Creates an update of a service job to a new config. The request names the config version it was
   * made against: a stale version is refused, so two operators cannot overwrite each other.
   */
  #create(body: Body, r: Reply): void {
    this.api.withLiveJob(r, jobIdOf(body.jobId, "jobId"), (job) => this.#createFor(job, body, r));
  }

  #createFor(job: JobEntry, body: Body, r: Reply): void {
    const jm = this.api.jm;
    if (job.config.type === "BATCH") {
      return r.error(
        "invalid-argument",
        "jobId: updates are for SERVICE and DAEMON jobs; resize a batch job with JobManager.Update",
      );
    }
    const raw = (body.jobConfig ?? {}) as Body;
    const changeLog = (raw.changeLog ?? raw.changelog) as Body | undefined | null;
    if (changeLog === undefined || changeLog === null) {
      return r.error(
        "invalid-argument",
        `jobConfig.changeLog: missing, expected the current configuration version ${job.configVersion}`,
      );
    }
    // A version not given reads as 0, as protobuf has it, and is as stale as any other but the current one.
    if (Number(changeLog.version ?? 0) !== job.configVersion) {
      return r.error("invalid-argument", STALE_VERSION_MESSAGE);
    }
    const parsed = this.api.parseConfig({
      ...raw,
      respoolID: raw.respoolID ?? { value: job.config.respoolId },
    });
    if (!parsed.ok) return r.ok(bodyError("invalidConfig", parsed.errors.map((e) => e.message).join("; ")));
    const next = parsed.value;
    if (next.type !== job.config.type) {
      return r.error("invalid-argument", `jobConfig.type: cannot change ${job.config.type} to ${next.type}`);
    }
    if (next.respoolId !== job.config.respoolId) {
      return r.error(
        "invalid-argument",
        "jobConfig.respoolID: cannot move a job to another pool in an update",
      );
    }
    const volume = jm.fixedVolumes ? volumeChangeRefusal(job, next, "jobConfig") : undefined;
    if (volume) return r.error("invalid-argument", volume);
    const uc = body.updateConfig === undefined
      ? { ok: true as const, value: DEFAULT_UPDATE_CONFIG }
      : parseUpdateConfig(body.updateConfig, "updateConfig");
    if (!uc.ok) return r.error("invalid-argument", uc.errors.map((e) => e.message).join("; "));
    const refused = startTasksRefusal(job, uc.value);
    if (refused) return r.error("aborted", `updateConfig.startTasks: ${refused}`);
    const overwrite = overwriteRefusal(jm.workflows, job, "UPDATE");
    if (overwrite) return r.error("invalid-argument", overwrite);
    const opaque = opaqueDataOf(body);
    if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
    const tooLarge = jm.tooLargeToStore(job, { config: next, opaqueData: opaque });
    if (tooLarge) return r.storeError(tooLarge, `updating job ${job.jobId}`);
    const u = jm.workflows.create(job, {
      type: "UPDATE",
      config: uc.value,
      jobConfig: next,
      opaqueData: opaque,
    });
    this.api.whenDurable(r, `update ${u.updateId} of job ${job.jobId}`, { updateID: { value: u.updateId } });
  }

  /**
   * GetUpdate: the update's UpdateInfo; with `statusOnly`, as Peloton's handler answers it from the update's
   * progress alone, only its id and status (`numTasksDone`, `numTasksRemaining`, `numTasksFailed`, `state`).
   */
  #get(body: Body, r: Reply): void {
    const statusOnly = flagOf(body.statusOnly, "statusOnly");
    if (!statusOnly.ok) return r.error("invalid-argument", statusOnly.message);
    this.#withUpdate(body, r, (u) => {
      const info = updateInfoJson(u);
      if (!statusOnly.value) return r.ok({ updateInfo: info });
      const { instancesCurrent: _, ...status } = info.status as Body;
      r.ok({ updateInfo: { updateId: info.updateId, status } });
    });
  }

  /**
   * GetUpdateCache (Peloton's debug call): the update as this job manager holds it in memory, its cache, in
   * Peloton's GetUpdateCacheResponse: the job, the state, and the instances it takes (`instancesTotal`),
   * has done, is at, adds, updates and failed. An update not held (one that ended, of a job another job
   * manager drives) is not-found, as Peloton's "update not found" for a workflow not in its cache.
   */
  #cache(body: Body, r: Reply): void {
    const id = updateIdOf(body);
    if (id instanceof Error) return r.error("invalid-argument", id.message);
    const u = this.api.jm.updates.get(id);
    if (!u) return r.error("not-found", `update ${id} not found in cache`);
    const total = [...u.instancesAdded, ...u.instancesUpdated, ...u.instancesRemoved];
    r.ok({
      jobId: { value: u.jobId },
      state: u.state,
      instancesTotal: total.sort((a, b) => a - b),
      instancesDone: u.instancesDone,
      instancesCurrent: u.instancesCurrent,
      instancesAdded: u.instancesAdded,
      instancesUpdated: u.instancesUpdated,
      instancesFailed: u.instancesFailed,
    });
  }

  #list(body: Body, r: Reply): void {
    const jobId = jobIdAt(body, "jobID", "jobId");
    if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
    this.api.jm.deps.store.listUpdates(jobId).then((stored) => {
      const live = [...this.api.jm.updates.values()].filter((u) => u.jobId === jobId);
      const byId = new Map(stored.map((u) => [u.updateId, u]));
      for (const u of live) byId.set(u.updateId, u);
      const list = [...byId.values()].sort((a, b) => b.creationTimeMs - a.creationTimeMs);
      r.ok({ updateInfo: list.map(updateInfoJson) });
    }, (err) => r.storeError(err));
  }

  #control(method: string, body: Body, r: Reply): void {
    const id = updateIdOf(body);
    if (id instanceof Error) return r.error("invalid-argument", id.message);
    // Every abort here stops the update and leaves its instances as they are, soft or not: `softAbort` is
    // read so that a malformed one is refused rather than the abort made anyway.
    const soft = flagOf(body.softAbort, "softAbort");
    if (!soft.ok) return r.error("invalid-argument", soft.message);
    const u = this.api.jm.updates.get(id);
    if (!u) {
      return this.#withUpdate(
        body,
        r,
        (done) => r.error("failed-precondition", `update ${id} is ${done.state}`),
      );
    }
    const wf = this.api.jm.workflows;
    const opaque = opaqueDataOf(body);
    if (opaque instanceof Error) return r.error("invalid-argument", opaque.message);
    if (method === "PauseUpdate") wf.pause(u, opaque);
    else if (method === "ResumeUpdate") wf.resume(u, opaque);
    else if (method === "AbortUpdate") wf.abort(u, opaque);
    else {
      if (u.type !== "UPDATE") {
        return r.error("invalid-argument", `update ${id} is a ${u.type}, not an UPDATE`);
      }
      wf.rollback(u);
    }
    this.api.whenDurable(r, `${method} of update ${u.updateId}`, {});
  }

  #withUpdate(body: Body, r: Reply, fn: (u: UpdateRecord) => void): void {
    const id = updateIdOf(body);
    if (id instanceof Error) return r.error("invalid-argument", id.message);
    const live = this.api.jm.updates.get(id);
    if (live) return fn(live);
    this.api.jm.deps.store.getUpdate(id).then(
      (u) => (u ? fn(u) : r.error("not-found", `update ${id} not found`)),
      (err) => r.storeError(err),
    );
  }
}

/** A request's `updateId` (`{value}`, Peloton's UpdateID message), or an Error naming it when missing or malformed. */
function updateIdOf(body: Body): string | Error {
  const id = valueMessage(body.updateId, "updateId", "an update id");
  return id === undefined || id === "" ? new Error("updateId: missing, expected an update id") : id;
}
