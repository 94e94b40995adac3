/** In-memory Store for the simulator and tests: Maps, the stores' version rule, `done` called through `defer`. */
import {
  AdminLockRows,
  compareJobs,
  HostPoolRows,
  isActiveJob,
  type JobOrder,
  type JobPage,
  type JobQuery,
  nameContains,
  SecretRows,
  StaleWriteError,
  type Store,
  type StoredHostPools,
  type StoreWrite,
  type WorkflowEventsQuery,
  workflowSteps,
} from "../core/ports/store.ts";
import type { JobConfig } from "../core/model/config_types.ts";
import {
  type AdminLockRecord,
  type HostMaintenanceRecord,
  isTerminalUpdateState,
  type JobRecord,
  type RespoolRecord,
  type SecretRecord,
  type TaskEventRecord,
  type TaskRecord,
  type UpdateRecord,
  type VolumeRecord,
  type WorkflowEventRecord,
} from "../core/model/records.ts";
import { isTerminalJobState } from "../core/model/states.ts";

export { StaleWriteError };

/** What a store holds for the keys a batch puts; `undefined` when it holds no such row. */
export interface StoredVersions {
  job(jobId: string): number | undefined;
  task(jobId: string, instanceId: number): number | undefined;
  /** With the update's job, since a `job.delete` earlier in the batch takes the job's updates along. */
  update(updateId: string): { version: number; jobId: string } | undefined;
}

/**
 * Applies the version rule to a batch in order, given the stored versions, and returns the first stale
 * write's error. Earlier writes of the same batch count: a batch may put a task twice, delete a task or a
 * job (and with it its tasks and updates) and create it again.
 */
export function findStaleWrite(
  batch: readonly StoreWrite[],
  stored: StoredVersions,
): StaleWriteError | undefined {
  // Versions written earlier in this batch; null once deleted by it.
  const jobs = new Map<string, number | null>();
  const tasks = new Map<string, Map<number, number | null>>();
  const updates = new Map<string, { version: number; jobId: string } | null>();
  const deletedJobs = new Set<string>();
  for (const w of batch) {
    if (w.kind === "job.delete") {
      jobs.set(w.jobId, null);
      deletedJobs.add(w.jobId);
      tasks.delete(w.jobId);
      for (const [id, u] of updates) if (u?.jobId === w.jobId) updates.set(id, null);
    } else if (w.kind === "job.put") {
      const { jobId, runtime: { version } } = w.job;
      const before = jobs.has(jobId) ? jobs.get(jobId) : stored.job(jobId);
      if (before != null && version <= before) return new StaleWriteError("job", jobId, before, version);
      jobs.set(jobId, version);
    } else if (w.kind === "task.delete") {
      let written = tasks.get(w.jobId);
      if (!written) tasks.set(w.jobId, written = new Map());
      written.set(w.instanceId, null);
    } else if (w.kind === "task.put") {
      const { jobId, instanceId, version } = w.task;
      let written = tasks.get(jobId);
      // A job deleted earlier in the batch took its stored tasks along.
      const before = written?.has(instanceId)
        ? written.get(instanceId)
        : deletedJobs.has(jobId)
        ? undefined
        : stored.task(jobId, instanceId);
      if (before != null && version <= before) {
        return new StaleWriteError("task", `${jobId}/${instanceId}`, before, version);
      }
      if (!written) tasks.set(jobId, written = new Map());
      written.set(instanceId, version);
    } else if (w.kind === "update.put") {
      const { updateId, jobId, version } = w.update;
      let before = updates.has(updateId) ? updates.get(updateId) : stored.update(updateId);
      // Only a row not written by this batch can have been taken along by its job's deletion here.
      if (before && !updates.has(updateId) && deletedJobs.has(before.jobId)) before = undefined;
      if (before && version <= before.version) {
        return new StaleWriteError("update", updateId, before.version, version);
      }
      updates.set(updateId, { version, jobId });
    }
  }
  return undefined;
}

/** Whether a job matches every filter of a query (labels: all given labels present). */
export function jobMatches(job: JobRecord, q: JobQuery): boolean {
  if (q.states?.length && !q.states.includes(job.runtime.state)) return false;
  if (q.respoolId !== undefined && (job.config.respoolId ?? "") !== q.respoolId) return false;
  if (q.owner !== undefined && (job.config.owningTeam ?? "") !== q.owner) return false;
  if (q.name !== undefined && !nameContains(job.config.name, q.name)) return false;
  return (q.labels ?? []).every((l) =>
    (job.config.labels ?? []).some((j) => j.key === l.key && j.value === l.value)
  );
}

/** The page `q.offset`/`q.limit` asks for of `found` (already filtered and sorted), and its total. */
export function jobPage(found: JobRecord[], q: JobQuery): JobPage {
  const from = q.offset ?? 0;
  const jobs = found.slice(from, q.limit === undefined ? undefined : from + q.limit);
  return { jobs, total: found.length };
}

/** The order `activeJobs` lists them in (ties by job id, ascending). */
const OLDEST_FIRST: JobOrder[] = [{ property: "creation_time", desc: false }];

export interface MemoryStoreOptions {
  /** Keep task events; the simulator at 50,000 hosts turns this off to save memory. Default true. */
  keepEvents?: boolean;
  /**
   * Keep the records a batch carries instead of copies. Only for writers that hand over snapshots they
   * never change afterwards, as the job manager does (it writes `{ ...task }` and replaces, never mutates,
   * nested values): the simulator saves two copies per task state change. Reads still return copies.
   */
  adoptWrites?: boolean;
  /**
   * Drop the tasks and events of a job once it is stored in a terminal state, keeping the job (as
   * Peloton's archiver cleans finished jobs out of its database): reads of their tasks then find none.
   * For simulations of millions of tasks; off by default.
   */
  archiveFinishedTasks?: boolean;
}

export class MemoryStore implements Store {
  readonly #defer: (fn: () => void) => void;
  readonly #keepEvents: boolean;
  readonly #adopt: boolean;
  readonly #archive: boolean;
  readonly #jobs = new Map<string, JobRecord>();
  readonly #tasks = new Map<string, JobTasks>();
  /** `#tasks` of recently written jobs, by `cacheSlot` of the job id. */
  readonly #cachedJobIds: (string | undefined)[] = new Array(JOB_CACHE_SIZE).fill(undefined);
  readonly #cachedJobTasks: (JobTasks | undefined)[] = new Array(JOB_CACHE_SIZE).fill(undefined);
  readonly #events = new Map<string, Map<number, TaskEventRecord[]>>();
  readonly #respools = new Map<string, RespoolRecord>();
  readonly #respoolIdByPath = new Map<string, string>();
  /** Job id → config version → config. */
  readonly #configs = new Map<string, Map<number, JobConfig>>();
  readonly #updates = new Map<string, UpdateRecord>();
  /** Job id → workflow id → its instance events, oldest first. */
  readonly #workflowEvents = new Map<string, Map<string, WorkflowEventRecord[]>>();
  readonly #volumes = new Map<string, VolumeRecord>();
  readonly #maintenance = new Map<string, HostMaintenanceRecord>();
  readonly #hostPools = new HostPoolRows();
  readonly #adminLocks = new AdminLockRows();
  /** Kept when a finished job's tasks are archived: the job, and its secrets, stay. */
  readonly #secrets = new SecretRows();
  /** What a plain batch changed, as (container, key, value before) triples, to undo it if a write is stale. */
  readonly #undo: unknown[] = [];
  #issued = 0;
  #completed = 0;
  #flushWaiters: { target: number; resolve: () => void }[] = [];
  #closed = false;

  constructor(defer: (fn: () => void) => void, options: MemoryStoreOptions = {}) {
    this.#defer = defer;
    this.#keepEvents = options.keepEvents ?? true;
    this.#adopt = options.adoptWrites ?? false;
    this.#archive = options.archiveFinishedTasks ?? false;
  }

  write(batch: StoreWrite[], done?: (err?: Error) => void): void {
    let err: Error | undefined;
    if (this.#closed) err = new Error("Cannot write to the store: it is closed");
    else if ((err = this.#applyPlain(batch)) === NOT_PLAIN) {
      err = findStaleWrite(batch, {
        job: (id) => this.#jobs.get(id)?.runtime.version,
        task: (id, i) => this.#tasks.get(id)?.record(i)?.version,
        update: (id) => this.#updates.get(id),
      }) ?? this.#findPathClash(batch);
      // Checking the whole batch before touching anything is what makes it atomic here.
      if (!err) { for (const w of batch) this.#apply(w); }
    }
    this.#issued++;
    this.#defer(() => {
      this.#completed++;
      try {
        if (done) done(err);
        else if (err) console.error("Store write failed with no done callback:", err);
      } finally {
        this.#wakeFlushWaiters();
      }
    });
  }

  /**
   * Jobs, tasks, configs, events and volumes only (what the job manager writes as tasks move): applied in
   * one pass, each write checked against what the store holds by then, and undone if one is stale. The
   * same rule as `findStaleWrite` without a map per batch (the simulator writes tens of thousands a second).
   * A batch with other kinds of writes is undone too, and NOT_PLAIN returned: it takes the general path,
   * which checks the whole batch before applying any of it (as for `secret.put`: a job's create or update).
   */
  #applyPlain(batch: readonly StoreWrite[]): Error | undefined {
    const undo = this.#undo;
    undo.length = 0;
    let err: Error | undefined;
    for (const w of batch) {
      if (w.kind === "task.put") {
        const { jobId, instanceId, version } = w.task;
        const tasks = this.#jobTasks(jobId);
        const stored = tasks.version(instanceId);
        if (stored !== undefined && version <= stored) {
          err = new StaleWriteError("task", `${jobId}/${instanceId}`, stored, version);
          break;
        }
        undo.push(tasks, instanceId, tasks.record(instanceId));
        tasks.put(instanceId, this.#adopt ? w.task : copyTask(w.task));
      } else if (w.kind === "job.put") {
        const jobId = w.job.jobId, before = this.#jobs.get(jobId);
        if (before && w.job.runtime.version <= before.runtime.version) {
          err = new StaleWriteError("job", jobId, before.runtime.version, w.job.runtime.version);
          break;
        }
        undo.push(this.#jobs, jobId, before);
        // A finished job's tasks and events are archived with it, and come back if the batch is undone.
        if (this.#archive && isTerminalJobState(w.job.runtime.state)) {
          undo.push(this.#tasks, jobId, this.#tasks.get(jobId), this.#events, jobId, this.#events.get(jobId));
        }
        this.#apply(w);
      } else if (w.kind === "volume.put") {
        undo.push(this.#volumes, w.volume.volumeId, this.#volumes.get(w.volume.volumeId));
        this.#apply(w);
      } else if (w.kind === "job.config") {
        const versions = this.#configs.get(w.jobId);
        if (!versions?.has(w.version)) undo.push(this.#configs, w.jobId, versions && new Map(versions));
        this.#apply(w);
      } else if (w.kind === "task.event") {
        if (this.#keepEvents) undo.push(EVENT, w.event, undefined);
        this.#apply(w);
      } else {
        err = NOT_PLAIN;
        break;
      }
    }
    if (err) {
      for (let i = undo.length - 3; i >= 0; i -= 3) {
        const [where, key, before] = [undo[i], undo[i + 1], undo[i + 2]];
        if (where === EVENT) {
          const e = key as TaskEventRecord;
          this.#events.get(e.jobId)?.get(e.instanceId)?.pop();
        } else if (where instanceof JobTasks) where.put(key as number, before as TaskRecord | undefined);
        else {
          if (where === this.#tasks) this.#forgetJobTasks(key as string);
          if (before === undefined) (where as Map<unknown, unknown>).delete(key);
          else (where as Map<unknown, unknown>).set(key, before);
        }
      }
    }
    undo.length = 0;
    return err;
  }

  /** Every stored job, without copying (the simulator's reports read them). */
  jobRecords(): IterableIterator<JobRecord> {
    return this.#jobs.values();
  }

  getJob(jobId: string): Promise<JobRecord | undefined> {
    const job = this.#jobs.get(jobId);
    return Promise.resolve(job && structuredClone(job));
  }

  queryJobs(query: JobQuery): Promise<JobPage> {
    const found = [...this.#jobs.values()].filter((j) => jobMatches(j, query))
      .sort(compareJobs(query.order ?? []));
    const page = jobPage(found, query);
    return Promise.resolve({ jobs: page.jobs.map((j) => structuredClone(j)), total: page.total });
  }

  activeJobs(): Promise<JobRecord[]> {
    const active = [...this.#jobs.values()].filter((j) =>
      isActiveJob(j, (has) => {
        let work = false;
        this.#tasks.get(j.jobId)?.each((t) => (work ||= has(t)));
        return work;
      })
    );
    return Promise.resolve(active.sort(compareJobs(OLDEST_FIRST)).map((j) => structuredClone(j)));
  }

  getTasks(jobId: string): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    this.#tasks.get(jobId)?.each((t) => out.push(copyTask(t)));
    return Promise.resolve(out);
  }

  getTask(jobId: string, instanceId: number): Promise<TaskRecord | undefined> {
    const task = this.#tasks.get(jobId)?.record(instanceId);
    return Promise.resolve(task && copyTask(task));
  }

  getTaskEvents(jobId: string, instanceId: number): Promise<TaskEventRecord[]> {
    const events = this.#events.get(jobId)?.get(instanceId) ?? [];
    return Promise.resolve(events.map((e) => ({ ...e })));
  }

  respools(): Promise<RespoolRecord[]> {
    const pools = [...this.#respools.values()].sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    return Promise.resolve(pools.map((p) => structuredClone(p)));
  }

  getJobConfig(jobId: string, version: number): Promise<JobConfig | undefined> {
    const c = this.#configs.get(jobId)?.get(version);
    return Promise.resolve(c && structuredClone(c));
  }

  getUpdate(updateId: string): Promise<UpdateRecord | undefined> {
    const u = this.#updates.get(updateId);
    return Promise.resolve(u && structuredClone(u));
  }

  listUpdates(jobId: string): Promise<UpdateRecord[]> {
    const list = [...this.#updates.values()].filter((u) => u.jobId === jobId).sort(updatesNewestFirst);
    return Promise.resolve(list.map((u) => structuredClone(u)));
  }

  activeUpdates(): Promise<UpdateRecord[]> {
    const list = [...this.#updates.values()].filter((u) => !isTerminalUpdateState(u.state));
    return Promise.resolve(list.sort(updatesNewestFirst).reverse().map((u) => structuredClone(u)));
  }

  getWorkflowEvents(
    jobId: string,
    workflowId: string,
    { instanceId, limit }: WorkflowEventsQuery = {},
  ): Promise<WorkflowEventRecord[]> {
    const events = this.#workflowEvents.get(jobId)?.get(workflowId) ?? [];
    const mine = instanceId === undefined ? events : events.filter((e) => e.instanceId === instanceId);
    return Promise.resolve(workflowSteps(mine, limit).map((e) => ({ ...e })));
  }

  listVolumes(jobId: string): Promise<VolumeRecord[]> {
    const list = [...this.#volumes.values()].filter((v) => v.jobId === jobId);
    return Promise.resolve(list.sort(volumesByInstance).map((v) => ({ ...v })));
  }

  getSecrets(jobId: string): Promise<SecretRecord[]> {
    return Promise.resolve(this.#secrets.read(jobId));
  }

  getVolume(volumeId: string): Promise<VolumeRecord | undefined> {
    const v = this.#volumes.get(volumeId);
    return Promise.resolve(v && { ...v });
  }

  hostMaintenance(): Promise<HostMaintenanceRecord[]> {
    const list = [...this.#maintenance.values()].sort((a, b) =>
      a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0
    );
    return Promise.resolve(list.map((m) => ({ ...m })));
  }
  hostPools(): Promise<StoredHostPools> {
    return Promise.resolve(this.#hostPools.read());
  }
  adminLocks(): Promise<AdminLockRecord[]> {
    return Promise.resolve(this.#adminLocks.read());
  }

  /**
   * Writes land at once; this waits until as many `done` calls have run as batches were written before it,
   * which is every earlier batch's as long as `defer` runs callbacks in the order it was given them.
   */
  flush(): Promise<void> {
    if (this.#completed >= this.#issued) return Promise.resolve();
    return new Promise((resolve) => this.#flushWaiters.push({ target: this.#issued, resolve }));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  #apply(w: StoreWrite): void {
    switch (w.kind) {
      case "job.put":
        this.#jobs.set(w.job.jobId, this.#adopt ? w.job : structuredClone(w.job));
        if (this.#archive && isTerminalJobState(w.job.runtime.state)) {
          this.#dropTasks(w.job.jobId);
          this.#events.delete(w.job.jobId);
        }
        break;
      case "job.delete":
        this.#jobs.delete(w.jobId);
        this.#dropTasks(w.jobId);
        this.#events.delete(w.jobId);
        this.#configs.delete(w.jobId);
        for (const [id, u] of [...this.#updates]) if (u.jobId === w.jobId) this.#updates.delete(id);
        for (const [id, v] of [...this.#volumes]) if (v.jobId === w.jobId) this.#volumes.delete(id);
        this.#workflowEvents.delete(w.jobId);
        this.#secrets.apply(w);
        break;
      case "job.config": {
        let versions = this.#configs.get(w.jobId);
        if (!versions) this.#configs.set(w.jobId, versions = new Map());
        // Versions are immutable: the first config written for one stays.
        if (!versions.has(w.version)) {
          versions.set(w.version, this.#adopt ? w.config : structuredClone(w.config));
        }
        break;
      }
      case "task.delete":
        this.#deleteTask(w.jobId, w.instanceId);
        break;
      case "update.put":
        this.#updates.set(w.update.updateId, this.#adopt ? w.update : structuredClone(w.update));
        break;
      case "workflow.event": {
        const { jobId, workflowId } = w.event;
        let byWorkflow = this.#workflowEvents.get(jobId);
        if (!byWorkflow) this.#workflowEvents.set(jobId, byWorkflow = new Map());
        let events = byWorkflow.get(workflowId);
        if (!events) byWorkflow.set(workflowId, events = []);
        events.push({ ...w.event });
        break;
      }
      case "workflow.events.delete":
        this.#workflowEvents.get(w.jobId)?.delete(w.workflowId);
        break;
      case "secret.put":
        this.#secrets.apply(w);
        break;
      case "volume.put":
        this.#volumes.set(w.volume.volumeId, { ...w.volume });
        break;
      case "volume.delete":
        this.#volumes.delete(w.volumeId);
        break;
      case "maintenance.put":
        this.#maintenance.set(w.maintenance.hostname, { ...w.maintenance });
        break;
      case "maintenance.delete":
        this.#maintenance.delete(w.hostname);
        break;
      case "hostpool.put":
      case "hostpool.delete":
      case "hostpool.assign":
        this.#hostPools.apply(w);
        break;
      case "admin.lock":
      case "admin.unlock":
        this.#adminLocks.apply(w);
        break;
      case "task.put": {
        this.#jobTasks(w.task.jobId).put(w.task.instanceId, this.#adopt ? w.task : copyTask(w.task));
        break;
      }
      case "task.event": {
        if (!this.#keepEvents) break;
        const { jobId, instanceId } = w.event;
        let byInstance = this.#events.get(jobId);
        if (!byInstance) this.#events.set(jobId, byInstance = new Map());
        let events = byInstance.get(instanceId);
        if (!events) byInstance.set(instanceId, events = []);
        events.push(this.#adopt ? w.event : { ...w.event });
        break;
      }
      case "task.events.delete": {
        const byInstance = this.#events.get(w.jobId);
        const events = byInstance?.get(w.instanceId);
        if (events) byInstance!.set(w.instanceId, events.filter((e) => e.runId > w.runId));
        break;
      }
      case "respool.put": {
        const old = this.#respools.get(w.pool.id);
        if (old) this.#respoolIdByPath.delete(old.path);
        this.#respools.set(w.pool.id, structuredClone(w.pool));
        this.#respoolIdByPath.set(w.pool.path, w.pool.id);
        break;
      }
      case "respool.delete": {
        const old = this.#respools.get(w.id);
        if (old) this.#respoolIdByPath.delete(old.path);
        this.#respools.delete(w.id);
        break;
      }
    }
  }

  /** A job's tasks, made if it has none; found through a small cache first (a batch touches few jobs). */
  #jobTasks(jobId: string): JobTasks {
    const at = cacheSlot(jobId);
    if (this.#cachedJobIds[at] === jobId) return this.#cachedJobTasks[at]!;
    let tasks = this.#tasks.get(jobId);
    if (!tasks) this.#tasks.set(jobId, tasks = new JobTasks());
    this.#cachedJobIds[at] = jobId;
    this.#cachedJobTasks[at] = tasks;
    return tasks;
  }

  #forgetJobTasks(jobId: string): void {
    const at = cacheSlot(jobId);
    if (this.#cachedJobIds[at] === jobId) this.#cachedJobIds[at] = this.#cachedJobTasks[at] = undefined;
  }

  #dropTasks(jobId: string): void {
    this.#tasks.delete(jobId);
    this.#forgetJobTasks(jobId);
  }

  #deleteTask(jobId: string, instanceId: number): void {
    const tasks = this.#tasks.get(jobId);
    if (tasks?.record(instanceId)) tasks.put(instanceId, undefined);
  }

  /** Pool paths are unique, as the SQL stores' unique index makes them; checked with the batch's own moves. */
  #findPathClash(batch: readonly StoreWrite[]): Error | undefined {
    const ownerOf = new Map<string, string | null>(); // path → pool id, as this batch leaves it
    const pathOf = new Map<string, string | null>(); // pool id → path, as this batch leaves it
    const free = (id: string) => {
      const old = pathOf.has(id) ? pathOf.get(id) : this.#respools.get(id)?.path;
      if (old != null) ownerOf.set(old, null);
      pathOf.set(id, null);
    };
    for (const w of batch) {
      if (w.kind === "respool.delete") free(w.id);
      if (w.kind !== "respool.put") continue;
      const { id, path } = w.pool;
      const owner = ownerOf.has(path) ? ownerOf.get(path) : this.#respoolIdByPath.get(path);
      if (owner != null && owner !== id) {
        return new Error(`Cannot put respool ${id}: path ${path} already belongs to respool ${owner}`);
      }
      free(id);
      ownerOf.set(path, id);
      pathOf.set(id, path);
    }
    return undefined;
  }

  #wakeFlushWaiters(): void {
    if (this.#flushWaiters.length === 0) return;
    const ready = this.#flushWaiters.filter((w) => w.target <= this.#completed);
    this.#flushWaiters = this.#flushWaiters.filter((w) => w.target > this.#completed);
    for (const w of ready) w.resolve();
  }
}

/**
 * A job's tasks by instance id (Peloton's instance ids are dense from 0), with holes or undefined where it
 * has none: an array costs a fraction of a Map per task, and lists in instance order without sorting.
 * Each record's version sits beside it, so checking a put reads one place and not the stored record.
 */
class JobTasks {
  /** Record of instance i at 2i, its version at 2i + 1. */
  readonly #entries: (TaskRecord | number | undefined)[] = [];

  record(instanceId: number): TaskRecord | undefined {
    return this.#entries[2 * instanceId] as TaskRecord | undefined;
  }

  version(instanceId: number): number | undefined {
    return this.#entries[2 * instanceId + 1] as number | undefined;
  }

  put(instanceId: number, task: TaskRecord | undefined): void {
    this.#entries[2 * instanceId] = task;
    this.#entries[2 * instanceId + 1] = task?.version;
  }

  /** Calls `fn` with each record in instance order. */
  each(fn: (task: TaskRecord) => void): void {
    const entries = this.#entries;
    for (let i = 0; i < entries.length; i += 2) if (entries[i]) fn(entries[i] as TaskRecord);
  }
}

const JOB_CACHE_SIZE = 1024;

/** Where a job id sits in the job cache: a few of its characters (job ids are UUIDs, random at both ends). */
function cacheSlot(jobId: string): number {
  const n = jobId.length;
  const h = ((jobId.charCodeAt(0) * 31 + jobId.charCodeAt(1)) * 31 + jobId.charCodeAt(n - 1)) * 31 +
    jobId.charCodeAt(n - 2) + n;
  // Characters past the end are NaN, and NaN & x is 0.
  return h & (JOB_CACHE_SIZE - 1);
}

/** What `#applyPlain` returns for a batch it cannot take. */
const NOT_PLAIN = new Error("not a plain batch");

/** Marks an undo entry as a task event appended to its instance's list. */
const EVENT = Symbol("event");

/** Newest first, ties by update id descending; both stores list a job's updates in this order. */
function updatesNewestFirst(a: UpdateRecord, b: UpdateRecord): number {
  const byTime = b.creationTimeMs - a.creationTimeMs;
  return byTime !== 0 ? byTime : a.updateId < b.updateId ? 1 : a.updateId > b.updateId ? -1 : 0;
}

/** By instance, ties by volume id; both stores list a job's volumes in this order. */
function volumesByInstance(a: VolumeRecord, b: VolumeRecord): number {
  const byInstance = a.instanceId - b.instanceId;
  return byInstance !== 0 ? byInstance : a.volumeId < b.volumeId ? -1 : a.volumeId > b.volumeId ? 1 : 0;
}

/**
 * Copies a task so that callers mutating their record (or one read back) cannot change the stored one.
 * Hand-written rather than structuredClone because the simulator writes tasks on its hot path; `ports`
 * and `history` are TaskRecord's only nested fields.
 */
function copyTask(t: TaskRecord): TaskRecord {
  const copy = { ...t };
  if (t.ports) copy.ports = { ...t.ports };
  if (t.history) copy.history = t.history.map((r) => ({ ...r }));
  return copy;
}
