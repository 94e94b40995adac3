/** Peloton's v0 volume API (`peloton.api.v0.volume.svc.VolumeService`): persistent volumes of stateful jobs. */
import type { JobConfig, PersistentVolumeConfig } from "../model/config_types.ts";
import type { TaskRecord, VolumeRecord } from "../model/records.ts";
import { isTerminalTaskState } from "../model/states.ts";
import { mergeTaskConfig } from "../model/task_merge.ts";
import type { Store } from "../ports/store.ts";
import { type Body, jobIdOf, type Reply, valueMessage, volumeJson } from "./api_json.ts";
import type { JobApi } from "./job_api.ts";
import { type JobEntry, taskConfigOf } from "./job_entry.ts";
import { TaskConfigs } from "./task_build.ts";

export const VOLUME_SERVICE = "peloton.api.v0.volume.svc.VolumeService";

export class VolumeApi {
  constructor(private readonly api: JobApi) {}

  handle(method: string, body: Body, r: Reply): void {
    const store = this.api.jm.deps.store;
    switch (method) {
      case "ListVolumes": {
        const jobId = jobIdOf(body.jobId, "jobId");
        if (jobId instanceof Error) return r.error("invalid-argument", jobId.message);
        return void store.listVolumes(jobId).then((vs) => this.#asMounted(jobId, vs)).then(
          (vs) => r.ok({ volumes: Object.fromEntries(vs.map((v) => [v.volumeId, volumeJson(v)])) }),
          (err) => r.storeError(err),
        );
      }
      case "GetVolume": {
        const id = volumeIdOf(body);
        if (id instanceof Error) return r.error("invalid-argument", id.message);
        return void store.getVolume(id).then((v) => v && this.#asMounted(v.jobId, [v]).then(([m]) => m)).then(
          (v) => (v ? r.ok({ result: volumeJson(v) }) : r.error("not-found", `volume ${id} not found`)),
          (err) => r.storeError(err),
        );
      }
      case "DeleteVolume":
        return this.#delete(body, r);
      default:
        return r.error("unimplemented", `procedure ${VOLUME_SERVICE}::${method} is not implemented`);
    }
  }

  /**
   * A job's volumes as their instances mount them now. A volume's record is written once, when it is
   * made; an update may since have changed its container path or size, and each run mounts the volume as
   * the config of that run says (`buildLaunchSpec`), so that config, not the record, says what is in use.
   */
  async #asMounted(jobId: string, vs: VolumeRecord[]): Promise<VolumeRecord[]> {
    if (!vs.length) return vs;
    const mounted = await mountedVolumes(this.api.jm.jobs.get(jobId), jobId, this.api.jm.deps.store);
    return vs.map((v) => {
      const now = mounted.get(v.volumeId);
      return now ? { ...v, containerPath: now.containerPath, sizeMb: now.sizeMB } : v;
    });
  }

  /**
   * Deletes a volume whose task is not running; the task is no longer pinned to the host, so its
   * next run may go anywhere (with a fresh volume). A job only the store holds (it ended before a
   * restart) is loaded first, as other calls that change a job do, so its task is unpinned too.
   */
  #delete(body: Body, r: Reply): void {
    const id = volumeIdOf(body);
    if (id instanceof Error) return r.error("invalid-argument", id.message);
    const jm = this.api.jm;
    jm.deps.store.getVolume(id).then((v) => {
      if (!v) return r.error("not-found", `volume ${id} not found`);
      const live = jm.jobs.get(v.jobId);
      if (live) return this.#deleteOf(v, live, r);
      // A volume can outlive its job: with the job gone there is no task to unpin.
      jm.loadJob(v.jobId, (job, err) => {
        if (err) return r.storeError(err, `loading job ${v.jobId}`);
        this.#deleteOf(v, job, r);
      });
    }, (err) => r.storeError(err));
  }

  /**
   * Once the delete is stored, the host manager has the volume destroyed on its host (Peloton's hostmgr
   * DESTROYs a deleted volume), so that its data is gone: the task's next run, whatever host it gets, starts
   * with an empty volume. A delete that could not be stored destroys nothing.
   */
  #deleteOf(v: VolumeRecord, job: JobEntry | undefined, r: Reply): void {
    const jm = this.api.jm;
    const id = v.volumeId;
    const task = job?.tasks.get(v.instanceId);
    if (task && task.volumeId === id && !isTerminalTaskState(task.state) && task.state !== "INITIALIZED") {
      return r.error(
        "failed-precondition",
        `volume ${id} is in use by task ${v.jobId}-${v.instanceId} (${task.state}); stop it first`,
      );
    }
    if (task && task.volumeId === id) {
      task.volumeId = undefined;
      task.requiredHost = undefined;
      jm.putTask(task);
    }
    jm.write({ kind: "volume.delete", volumeId: id });
    jm.flush((err) => {
      if (err) return r.storeError(err, `storing the delete of volume ${id}`);
      jm.deps.transport.send(jm.deps.hostmgr, {
        kind: "destroy-volumes",
        volumes: [{ volumeId: id, hostname: v.hostname }],
      });
      r.ok({});
    });
  }
}

/**
 * The volume config each of a job's volumes is mounted with, by volume id: that of the newest run of its
 * instance that was launched (`mountingVersion`), so a run still waiting for a host (an update's, which its
 * host may not have room for) does not say a size no run has had. A job memory does not hold (it ended before
 * a restart) is read from the store.
 */
async function mountedVolumes(
  job: JobEntry | undefined,
  jobId: string,
  store: Pick<Store, "getTasks" | "getJobConfig">,
): Promise<Map<string, PersistentVolumeConfig>> {
  const mounted = new Map<string, PersistentVolumeConfig>();
  if (job) {
    for (const t of job.tasks.values()) {
      const v = t.volumeId ? mountingVersion(t) : undefined;
      const volume = v === undefined ? undefined : job.versions.get(v)?.tasks.get(t.instanceId).volume;
      if (volume) mounted.set(t.volumeId!, volume);
    }
    return mounted;
  }
  const tasks = (await store.getTasks(jobId)).filter((t) => t.volumeId);
  const versions = [...new Set(tasks.map(mountingVersion).filter((v) => v !== undefined))];
  const configs = new Map(
    await Promise.all(versions.map(async (v) => [v, await store.getJobConfig(jobId, v)] as const)),
  );
  for (const t of tasks) {
    const v = mountingVersion(t);
    const config = v === undefined ? undefined : configs.get(v);
    const volume = config && mergeTaskConfig(config, t.instanceId).volume;
    if (volume) mounted.set(t.volumeId!, volume);
  }
  return mounted;
}

/**
 * The config version of the task's newest run that was launched (given a host), which is the run that mounts
 * its volume now or last did: the current run once placed, else the newest such run of its history. Undefined
 * when none is known (its volume's record says how it was made).
 */
export function mountingVersion(task: TaskRecord): number | undefined {
  if (task.hostname !== undefined) return task.configVersion;
  const history = task.history ?? [];
  for (let k = history.length - 1; k >= 0; k--) {
    const run = history[k];
    if (run.hostname !== undefined && run.configVersion !== undefined) return run.configVersion;
  }
  return undefined;
}

/**
 * Why a new config may not replace the job's on a backend that keeps volumes as created (Mesos: a volume is
 * matched whole, at the container path and size it was made with; the minicluster can change both): a
 * change of `volume.containerPath` or `volume.sizeMB` for an instance whose volume exists. `prefix` names the
 * request's field (`jobConfig`, `spec`).
 */
export function volumeChangeRefusal(job: JobEntry, next: JobConfig, prefix: string): string | undefined {
  const configs = new TaskConfigs(next);
  for (const task of job.tasks.values()) {
    if (!task.volumeId || task.instanceId >= next.instanceCount) continue;
    const was = taskConfigOf(job, task).volume;
    const now = configs.get(task.instanceId).volume;
    if (!was) continue;
    const field = now?.containerPath !== was.containerPath
      ? { name: "containerPath", was: was.containerPath, now: now?.containerPath }
      : now.sizeMB !== was.sizeMB
      ? { name: "sizeMB", was: was.sizeMB, now: now.sizeMB }
      : undefined;
    if (!field) continue;
    return `${prefix}.defaultConfig.volume.${field.name}: cannot change ${JSON.stringify(field.was)} to ` +
      `${JSON.stringify(field.now ?? null)} while instance ${task.instanceId} has persistent volume ` +
      `${task.volumeId}: Mesos keeps a volume as it was created (its container path and size), so the task ` +
      "would not find it; delete the volume first (volume delete) to have a new one made";
  }
  return undefined;
}

/** A request's volume `id` (`{value}`, Peloton's VolumeID message), or an Error naming it when missing or malformed. */
function volumeIdOf(body: Body): string | Error {
  const id = valueMessage(body.id, "id", "a volume id");
  return id === undefined || id === "" ? new Error("id: missing, expected a volume id") : id;
}
