/**
 * Workflows: rolling updates, restarts, starts and stops over a job's instances in batches, following
 * Peloton's UpdateService semantics (`pkg/jobmgr/goalstate/update*.go`, `cached/workflow_strategy.go`).
 *
 * An instance of the current batch is *done* when its task runs the target: HEALTHY if it has a health
 * check, else RUNNING without a break for the update's `minRunningSeconds` (default 10 s; Peloton counts
 * any RUNNING, so a command that crashes on start passed for updated). It is *failed* once runs at the
 * target used up `maxInstanceAttempts` (its failure count starts from 0 when the workflow takes it).
 * `maxFailureInstances` failed instances end the workflow before another batch starts: FAILED, or rolled
 * back with `rollbackOnFailure`. Each batch takes the instances left in Peloton's order: additions, then
 * changes with the instances down first (`byAvailability`), then removals. Instances a rolling create (or
 * an update that took over from it) has not reached are not started by anything else (`NOT_STARTED`).
 *
 * Each step on an instance is recorded as a workflow event, as Peloton's cached update writes them
 * (`pkg/jobmgr/cached/update.go`): INITIALIZED (PAUSED when it starts paused) for every instance when the
 * workflow is created; ROLLING_FORWARD (ROLLING_BACKWARD) when the instance is taken; ROLLING_BACKWARD for
 * every instance of a rollback when it starts; SUCCEEDED or FAILED when the instance is done or out of attempts; and PAUSED,
 * the resumed state, ABORTED or FAILED for the instances in flight when the workflow is paused, resumed,
 * aborted or fails. Only a job's newest `MAX_WORKFLOWS_WITH_EVENTS` workflows keep their events.
 */
import type { Action } from "../goalstate/engine.ts";
import type { JobConfig, UpdateConfig } from "../model/config_types.ts";
import {
  isTerminalUpdateState,
  type TaskRecord,
  type UpdateRecord,
  type UpdateState,
  type WorkflowEventRecord,
  type WorkflowType,
} from "../model/records.ts";
import { isTerminalJobState, isTerminalTaskState } from "../model/states.ts";
import { DEFAULT_MIN_RUNNING_SECONDS } from "../model/update_config.ts";
import { requiredHostLacksRoom } from "../placement/reasons.ts";
import { randomUuid } from "../ports/prng.ts";
import type { StoreWrite } from "../ports/store.ts";
import { jobConfigOf, type JobEntry } from "./job_entry.ts";
import type { JobManager } from "./jobmgr.ts";
import { defaultTaskGoal } from "./job_state.ts";
import { type Availability, availability } from "./sla_drain.ts";
import type { TaskConfigs } from "./task_build.ts";
import { awaitsWorkflow, NOT_STARTED } from "./task_rules.ts";
import { mountingVersion } from "./volume_api.ts";

export type UpdateAction = "start" | "run" | "progress" | "clear";

/**
 * `UPDATE_TABLE[state]`: a paused workflow records the instances under way that finish but takes no new
 * ones (Peloton's PAUSED → write_progress); a finished one is cleared from its job.
 */
export const UPDATE_TABLE: Record<UpdateState, readonly UpdateAction[]> = {
  INITIALIZED: ["start"],
  ROLLING_FORWARD: ["run"],
  ROLLING_BACKWARD: ["run"],
  PAUSED: ["progress"],
  SUCCEEDED: ["clear"],
  ABORTED: ["clear"],
  FAILED: ["clear"],
  ROLLED_BACK: ["clear"],
};

export function updateActions(u: UpdateRecord): readonly UpdateAction[] {
  return UPDATE_TABLE[u.state];
}

/**
 * How many of a job's workflows keep their instance events: a new one past it deletes the oldest one's (as
 * Peloton bounds a job's updates, deleting older ones with their events; the workflow records stay here).
 */
export const MAX_WORKFLOWS_WITH_EVENTS = 10;

/**
 * States a workflow's record keeps of its own history: its first and its newest. A workflow paused and
 * resumed again and again would otherwise grow its record (stored whole on every write) without bound.
 */
export const MAX_WORKFLOW_STATES = 64;

export const DEFAULT_UPDATE_CONFIG: UpdateConfig = {
  batchSize: 0,
  batchPercentage: 0,
  stopBeforeUpdate: false,
  startPaused: false,
  rollbackOnFailure: false,
  maxInstanceAttempts: 0,
  maxFailureInstances: 0,
  inPlace: false,
  startTasks: false,
  minRunningSeconds: DEFAULT_MIN_RUNNING_SECONDS,
};

/**
 * Where one instance of the current batch stands: finished either way, removed from the job before it got
 * there, still on its way, or up and to count as done at `settlesAtMs` if it stays up until then.
 */
type Verdict = "done" | "failed" | "removed" | "pending" | { settlesAtMs: number };

export interface WorkflowRequest {
  type: WorkflowType;
  config: UpdateConfig;
  /** UPDATE: the new job config (already validated). */
  jobConfig?: JobConfig;
  /** RESTART / START / STOP: the instances (default all). */
  instances?: number[];
  opaqueData?: string;
  /** START: the job's rolling create (see `UpdateRecord.create`). */
  create?: boolean;
}

/** Whether two task configs differ (instances whose config did not change are not touched). */
export function differs(a: unknown, b: unknown): boolean {
  return !sameValue(a, b);
}

/**
 * Deep equality of JSON-shaped values, whatever the order of an object's keys (a merge patch or another
 * client writes them in its own order) and counting an absent key as undefined, as JSON does.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((x, i) => sameValue(x, other[i]));
  }
  const x = a as Record<string, unknown>, y = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) if (!sameValue(x[k], y[k])) return false;
  return true;
}

/**
 * What an update to `next` does to a job's instances (Peloton's `GetInstancesToProcessForUpdate`): adds the
 * instances up to its count, removes those past it, and updates each instance whose own config (that of the
 * version it runs, not the job's latest: an aborted update leaves instances on several) differs from the
 * new one, or which is still to move to another version. `configsOf` gives a version's configs, when known.
 */
export function planReplace(
  tasks: readonly TaskRecord[],
  next: { instanceCount: number },
  after: TaskConfigs,
  configsOf: (version: number) => TaskConfigs | undefined,
): { added: number[]; removed: number[]; updated: number[] } {
  const live = tasks.filter((t) => t.goalState !== "DELETED").sort((a, b) => a.instanceId - b.instanceId);
  const added: number[] = [], removed: number[] = [], updated: number[] = [];
  for (let i = live.length; i < next.instanceCount; i++) added.push(i);
  for (const t of live) {
    const i = t.instanceId;
    if (i >= next.instanceCount) removed.push(i);
    else if (changedBy(t, after, configsOf)) updated.push(i);
  }
  return { added, removed, updated };
}

/**
 * What an update to a new config does to a daemon's instances: a daemon has one instance per matching host,
 * not a count, and its instance ids are not 0 to the count (each host that came got the next id). Each
 * instance whose config differs is updated; none is added or removed by count. Hosts the new config no
 * longer matches lose their instances, and hosts it newly matches get one, by the daemon's own following of
 * its hosts (`DaemonHosts.reconcile`), which the caller runs first.
 */
export function planDaemonReplace(
  tasks: Iterable<TaskRecord>,
  after: TaskConfigs,
  configsOf: (version: number) => TaskConfigs | undefined,
): number[] {
  const updated: number[] = [];
  for (const t of tasks) {
    if (t.goalState !== "DELETED" && changedBy(t, after, configsOf)) updated.push(t.instanceId);
  }
  return updated.sort((a, b) => a - b);
}

/** Whether the new task configs change the instance: its own config differs, or it is still to move. */
function changedBy(
  t: TaskRecord,
  after: TaskConfigs,
  configsOf: (version: number) => TaskConfigs | undefined,
): boolean {
  return (t.desiredConfigVersion !== undefined && t.desiredConfigVersion !== t.configVersion) ||
    differs(configsOf(t.configVersion)?.get(t.instanceId), after.get(t.instanceId));
}

/**
 * Whether the task's run waits for a placement its required host has no room for: an instance pinned to its
 * volume's host (the one host it may run on) whose latest placement attempt found too little cpu, memory,
 * disk or GPUs free there (the resource manager's reason, `required host H: insufficient disk`). Not a host
 * that is away, lost or in maintenance: that one comes back with room for the run.
 */
export function pinnedWithoutRoom(task: TaskRecord): boolean {
  const host = task.requiredHost;
  if (host === undefined || task.volumeId === undefined || task.message === undefined) return false;
  if (task.state !== "PENDING" && task.state !== "READY" && task.state !== "PLACING") return false;
  return requiredHostLacksRoom(task.message, host);
}

/**
 * The message of an instance a workflow holds back (see `NOT_STARTED`): while the workflow may still reach
 * it, or, once the workflow `ended` (aborted, failed, rolled back) without reaching it, what starts it.
 */
export function notStartedMessage(u: UpdateRecord, ended?: UpdateState): string {
  const which = `the job's ${u.create ? "create" : u.type.toLowerCase()} workflow ${u.updateId}`;
  if (ended === undefined) return `${NOT_STARTED}${which} has not reached it yet`;
  const how = ended === "FAILED"
    ? "failed"
    : ended === "ROLLED_BACK" || ended === "ROLLING_BACKWARD"
    ? "was rolled back"
    : "was aborted";
  return `${NOT_STARTED}${which} ${how}; start or update the job to run it`;
}

/** Where each availability goes in `byAvailability`'s order; an instance with no task goes with DELETED. */
const AVAILABILITY_RANK: Record<Availability, number> = {
  UNAVAILABLE: 0,
  KILLED: 1,
  DELETED: 2,
  AVAILABLE: 3,
};

/**
 * Peloton's `sortInstancesByAvailability` order of the instances a workflow changes: unavailable ones first
 * (down already: changing them costs nothing more), then stopped ones, then those gone (no task, or being
 * deleted: Peloton's invalid ones), and those up last, so that a batch takes as few running instances down as
 * it can. Ties go by instance id.
 */
export function byAvailability(job: JobEntry, instances: readonly number[]): number[] {
  const buckets: number[][] = [[], [], [], []];
  for (const i of [...instances].sort((a, b) => a - b)) {
    const task = job.tasks.get(i);
    buckets[task ? AVAILABILITY_RANK[availability(task)] : AVAILABILITY_RANK.DELETED].push(i);
  }
  return buckets.flat();
}

/**
 * Why a new workflow of `type` cannot take over from the job's workflow in progress, if it cannot: only an
 * update replaces an update (which is then aborted); any other pair is refused, as Peloton's
 * `validateWorkflowOverwrite` refuses it, rather than silently abort a rolling update or restart.
 */
export function overwriteRefusal(wf: Workflows, job: JobEntry, type: WorkflowType): string | undefined {
  const active = wf.active(job);
  if (!active || ((active.type === "UPDATE" || active.create) && type === "UPDATE")) return undefined;
  // A rolling create is an UPDATE to its callers (v1alpha's WorkflowType), as Peloton's RollingCreate is.
  const kind = active.create ? "UPDATE" : active.type;
  return `workflow ${type} cannot overwrite workflow ${kind} (${active.updateId}, ${active.state}) of ` +
    `job ${job.jobId}: abort it first`;
}

/**
 * Why the whole job cannot be stopped now, if it cannot: an update that starts its pods (`startTasks`) is
 * rolling (Peloton's StopJob refuses it: "job has active update with start_pods set, cannot stop the job
 * now"). The v0 stop of every instance is held to the same, so that no stop silently aborts such an update;
 * a paused one does not hold the stop back. Undefined when it can.
 */
export function stopRefusal(wf: Workflows, job: JobEntry): string | undefined {
  const u = wf.active(job);
  if (!u?.config.startTasks || (u.state !== "ROLLING_FORWARD" && u.state !== "ROLLING_BACKWARD")) {
    return undefined;
  }
  return `job ${job.jobId} has active update with start_pods set, cannot stop the job now: update ` +
    `${u.updateId} (${u.state}) is starting its pods; pause or abort it first`;
}

/**
 * Why a workflow that starts stopped instances (`startTasks`) cannot begin now: the job is being stopped
 * (its goal ended, its state not yet), as Peloton refuses it ("job is being terminated, cannot update with
 * start_pods set now"). Undefined when it can.
 */
export function startTasksRefusal(job: JobEntry, config: UpdateConfig): string | undefined {
  if (!config.startTasks) return undefined;
  if (!isTerminalJobState(job.runtime.goalState) || isTerminalJobState(job.runtime.state)) return undefined;
  return `job ${job.jobId} is being terminated (${job.runtime.state}), cannot update with start_pods set now`;
}

export class Workflows {
  constructor(private readonly jm: JobManager) {}

  table(): Record<UpdateAction, Action<UpdateRecord>> {
    const act = (fn: (u: UpdateRecord, job: JobEntry) => void): Action<UpdateRecord> => (u, done) => {
      const job = this.jm.jobs.get(u.jobId);
      if (job && this.jm.updates.get(u.updateId) === u) fn(u, job);
      done();
    };
    return {
      start: act((u, job) => {
        this.#moveUnchanged(u, job);
        this.#set(u, "ROLLING_FORWARD");
        this.#run(u, job);
      }),
      run: act((u, job) => this.#run(u, job)),
      progress: act((u, job) => {
        if (this.#account(u, job)) this.#put(u);
        this.#recheck(u, job);
      }),
      clear: act((u, job) => {
        if (job.runtime.updateId === u.updateId) {
          job.runtime.updateId = undefined;
          this.jm.markDirty(job, true);
        }
        this.jm.updates.delete(u.updateId);
      }),
    };
  }

  /**
   * Starts a workflow on a job; an update in progress is aborted first when this is an update too (Peloton's
   * overwrite). Other overwrites the callers refuse beforehand (`overwriteRefusal`).
   */
  create(job: JobEntry, req: WorkflowRequest): UpdateRecord {
    const u = this.prepare(job, req);
    this.jm.markDirty(job, true);
    this.jm.write(this.stamp(u));
    for (const w of this.createdEvents(u)) this.jm.write(w);
    this.jm.updateEngine.enqueue(u);
    return u;
  }

  /**
   * A workflow held by its job but neither stored nor started: the caller stores `stamp(u)` and
   * `createdEvents(u)` (a job create, in its own batch) and enqueues it in the update engine once that is
   * durable.
   */
  prepare(job: JobEntry, req: WorkflowRequest): UpdateRecord {
    // A rolling create an update takes over from: the instances it had not started yet start with the update
    // (they say so; those of a create stored before they did are found from the create).
    const create = this.active(job);
    const unstarted = new Set(create?.create ? this.#remaining(create, job) : []);
    this.abortActive(job);
    const now = this.jm.now();
    const prevVersion = job.configVersion;
    const liveIds = [...job.tasks.values()].filter((t) => t.goalState !== "DELETED").map((t) => t.instanceId);
    const added: number[] = [], removed: number[] = [];
    let updated: number[] = [];
    let target = prevVersion;
    if (req.type === "UPDATE") {
      const daemon = job.config.type === "DAEMON";
      // A daemon's instance count is its hosts', whatever the new config says (a file without one is not
      // "no instances").
      const next = daemon ? { ...req.jobConfig!, instanceCount: job.tasks.size } : req.jobConfig!;
      target = this.jm.addConfigVersion(job, next);
      const after = job.versions.get(target)!;
      const configsOf = (v: number) => job.versions.get(v)?.tasks;
      if (daemon) {
        this.#followHosts(job);
        updated = planDaemonReplace(job.tasks.values(), after.tasks, configsOf);
      } else {
        const plan = planReplace([...job.tasks.values()], next, after.tasks, configsOf);
        added.push(...plan.added);
        removed.push(...plan.removed);
        updated = plan.updated;
      }
      // Instances a rolling create (or an earlier workflow) left unstarted start with this update, in its turn.
      const planned = new Set([...added, ...removed, ...updated]);
      const goal = defaultTaskGoal(job.config.type);
      const left = [...job.tasks.values()].filter((t) =>
        (awaitsWorkflow(t) || unstarted.has(t.instanceId)) && t.goalState === goal &&
        !planned.has(t.instanceId)
      ).map((t) => t.instanceId);
      if (left.length) updated = [...updated, ...left].sort((a, b) => a - b);
    } else {
      updated = (req.instances ?? liveIds).filter((i) => job.tasks.has(i));
      // A restart, start or stop runs the job's current config under a new version (Peloton's handlers make
      // the workflow `WithConfig` a copy of it): the instances it takes run the job's spec, not the config
      // they had (an aborted update leaves some on an older one). Not a rolling create, at version 1.
      if (!req.create) target = this.jm.addConfigVersion(job, { ...job.config });
    }
    const u: UpdateRecord = {
      updateId: randomUuid(this.jm.deps.prng),
      jobId: job.jobId,
      type: req.type,
      config: req.config,
      state: req.config.startPaused ? "PAUSED" : "INITIALIZED",
      // Peloton's `(*update).Create`: PAUSED from INITIALIZED, so that resumed it starts as any other.
      prevState: req.config.startPaused ? "INITIALIZED" : undefined,
      jobConfigVersion: target,
      prevJobConfigVersion: prevVersion,
      instancesAdded: added,
      instancesUpdated: updated,
      instancesRemoved: removed,
      instancesDone: [],
      instancesFailed: [],
      instancesCurrent: [],
      creationTimeMs: now,
      updateTimeMs: now,
      opaqueData: req.opaqueData,
      ...(req.create ? { create: true } : {}),
      states: [{ state: req.config.startPaused ? "PAUSED" : "INITIALIZED", timeMs: now }],
      version: 0,
    };
    // A restart, or an update that starts stopped instances, brings a stopped job's goal back (Peloton's
    // `updateJobRuntime`): the instances it starts would otherwise run under a job that is to stay stopped.
    if ((req.type === "RESTART" || req.config.startTasks) && job.runtime.goalState === "KILLED") {
      this.jm.restoreJobGoal(job);
    }
    this.jm.updates.set(u.updateId, u);
    job.runtime.updateId = u.updateId;
    job.runtime.workflowVersion = (job.runtime.workflowVersion ?? 0) + 1;
    if (this.jm.config.recordEvents) this.#keepEventsOf(job, u.updateId);
    // The instances held back that this workflow takes wait for it now (a create's are new: its job's create
    // stores them).
    if (!u.create) this.#holdUnstarted(u, job, this.#remaining(u, job));
    return u;
  }

  /**
   * Says, in the message of each of `instances` still held back (see `NOT_STARTED`), what it waits for now:
   * the workflow, or, once it `ended` without reaching it, a start or another update.
   */
  #holdUnstarted(u: UpdateRecord, job: JobEntry, instances: readonly number[], ended?: UpdateState): void {
    const message = notStartedMessage(u, ended);
    for (const i of instances) {
      const task = job.tasks.get(i);
      if (!task || !awaitsWorkflow(task) || task.message === message) continue;
      task.message = message;
      this.jm.putTask(task);
    }
  }

  /**
   * A daemon whose config changed follows its hosts at once, as the new config has them (its constraint may
   * match other hosts): instances on hosts it no longer matches are removed, hosts it newly matches get one.
   * Not a stopped daemon, which follows them again once started.
   */
  #followHosts(job: JobEntry): void {
    if (job.runtime.goalState === "RUNNING") this.jm.daemonHosts.reconcile(this.jm, job);
  }

  /** The INITIALIZED (or PAUSED) event of each of a new workflow's instances, to store with it. */
  createdEvents(u: UpdateRecord): StoreWrite[] {
    return this.#eventWrites(u, [...u.instancesAdded, ...u.instancesUpdated, ...u.instancesRemoved], u.state);
  }

  /** Counts a new workflow among the job's newest with events; the oldest past the bound lose theirs. */
  #keepEventsOf(job: JobEntry, workflowId: string): void {
    const kept = [...job.runtime.workflowsWithEvents ?? [], workflowId];
    for (const old of kept.splice(0, Math.max(0, kept.length - MAX_WORKFLOWS_WITH_EVENTS))) {
      this.jm.write({ kind: "workflow.events.delete", jobId: job.jobId, workflowId: old });
    }
    job.runtime.workflowsWithEvents = kept;
  }

  /** The job's workflow in progress, if it has one. */
  active(job: JobEntry): UpdateRecord | undefined {
    const u = job.runtime.updateId ? this.jm.updates.get(job.runtime.updateId) : undefined;
    return u && !isTerminalUpdateState(u.state) ? u : undefined;
  }

  /**
   * Ends the job's workflow in progress as ABORTED: when a new one replaces it, and when the whole job
   * is stopped (its instances are to stay stopped, so a restart or update would wait for them forever).
   */
  abortActive(job: JobEntry): void {
    const u = this.active(job);
    if (u) this.abort(u);
  }

  /**
   * Pauses the workflow. `opaqueData`, when given, replaces the caller's data kept with it, as Peloton's
   * Pause, Resume and Abort do when they change the workflow (a pause of a paused one changes nothing).
   */
  pause(u: UpdateRecord, opaqueData?: string): void {
    if (u.state !== "ROLLING_FORWARD" && u.state !== "ROLLING_BACKWARD" && u.state !== "INITIALIZED") return;
    if (opaqueData !== undefined) u.opaqueData = opaqueData;
    // Paused before it started, it starts when resumed (INITIALIZED: `start` moves the instances it leaves).
    u.prevState = u.state;
    this.#set(u, "PAUSED");
    this.#events(u, u.instancesCurrent, "PAUSED");
  }

  resume(u: UpdateRecord, opaqueData?: string): void {
    if (u.state !== "PAUSED") return;
    if (opaqueData !== undefined) u.opaqueData = opaqueData;
    this.#set(u, u.prevState ?? "ROLLING_FORWARD");
    this.#events(u, u.instancesCurrent, u.state);
    this.jm.updateEngine.enqueue(u);
  }

  /** Stops the workflow where it is: instances keep whatever config they run. */
  abort(u: UpdateRecord, opaqueData?: string): void {
    if (isTerminalUpdateState(u.state)) return;
    if (opaqueData !== undefined) u.opaqueData = opaqueData;
    this.#complete(u, this.jm.jobs.get(u.jobId), "ABORTED");
  }

  /** Rolls an update back to the config it came from (also what `rollbackOnFailure` does). */
  rollback(u: UpdateRecord): void {
    const job = this.jm.jobs.get(u.jobId);
    if (!job || u.type !== "UPDATE" || isTerminalUpdateState(u.state) || u.state === "ROLLING_BACKWARD") {
      return;
    }
    // What `stopBeforeUpdate` stopped and no batch took is still on the old config: it runs again as it was.
    this.#restartStoppedFirst(u, job);
    // Instances held back that it did not reach stay so: the rollback does not start them.
    this.#holdUnstarted(u, job, this.#remaining(u, job), "ROLLING_BACKWARD");
    const touched = [...new Set([...u.instancesDone, ...u.instancesCurrent, ...u.instancesFailed])];
    const daemon = job.config.type === "DAEMON";
    const before = jobConfigOf(job, u.prevJobConfigVersion);
    const previous = daemon ? { ...before, instanceCount: job.tasks.size } : before;
    const target = this.jm.addConfigVersion(job, previous);
    // What the update removed: the instances past its config's count. Others it lists removed were removed
    // from the job meanwhile (`#removedMeanwhile`), not by the update, and do not come back.
    const count = jobConfigOf(job, u.jobConfigVersion).instanceCount;
    const wasAdded = new Set(u.instancesAdded);
    const wasRemoved = new Set(u.instancesRemoved.filter((i) => i >= count));
    if (daemon) {
      // Every instance not on the old config goes back to it: those the update changed, and those that
      // hosts it newly matched got meanwhile; its hosts are the old config's again.
      this.#followHosts(job);
      const after = job.versions.get(target)!.tasks;
      u.instancesUpdated = planDaemonReplace(job.tasks.values(), after, (v) => job.versions.get(v)?.tasks);
      u.instancesAdded = u.instancesRemoved = [];
    } else {
      // What the update added goes away, what it removed comes back, what it changed changes back.
      u.instancesRemoved = touched.filter((i) => wasAdded.has(i));
      u.instancesAdded = touched.filter((i) => wasRemoved.has(i));
      // An instance that already runs the old spec (one `#backIfNoRoom` sent back) is moved to the rollback's
      // version without a restart (`#moveUnchanged`), as Peloton's rollback plans against the old config.
      const after = job.versions.get(target)!.tasks;
      const configsOf = (v: number) => job.versions.get(v)?.tasks;
      u.instancesUpdated = touched.filter((i) => {
        const task = job.tasks.get(i);
        return !wasAdded.has(i) && !wasRemoved.has(i) && task !== undefined &&
          changedBy(task, after, configsOf);
      });
    }
    u.instancesDone = [];
    u.instancesFailed = [];
    u.instancesCurrent = [];
    // It now goes from the version it abandons to the copy of the old one, as Peloton's RollbackWorkflow
    // stores it (PrevJobConfigVersion: the version being rolled back); nothing reads the old one after this.
    u.prevJobConfigVersion = u.jobConfigVersion;
    u.jobConfigVersion = target;
    this.#set(u, "ROLLING_BACKWARD");
    // Every instance to roll back, before it is taken (Peloton's Rollback writes them all at once).
    const listed = new Set([...u.instancesAdded, ...u.instancesUpdated, ...u.instancesRemoved]);
    this.#events(u, daemon ? u.instancesUpdated : touched.filter((i) => listed.has(i)), "ROLLING_BACKWARD");
    this.#moveUnchanged(u, job);
    this.jm.updateEngine.enqueue(u);
  }

  /** One step: account finished instances, decide failure or completion, start the next batch. */
  #run(u: UpdateRecord, job: JobEntry): void {
    if (
      u.config.stopBeforeUpdate && u.type === "UPDATE" && u.state === "ROLLING_FORWARD" && !u.stopFirst?.done
    ) {
      if (!this.#stopFirst(u, job)) return;
    }
    let changed = this.#account(u, job);
    changed = this.#dropRemoved(u, job) || changed;
    const maxFail = u.config.maxFailureInstances;
    if (maxFail > 0 && u.instancesFailed.length >= maxFail) {
      if (u.config.rollbackOnFailure && u.type === "UPDATE" && u.state === "ROLLING_FORWARD") {
        return this.rollback(u);
      }
      return this.#complete(u, job, "FAILED");
    }
    const remaining = this.#remaining(u, job);
    if (!remaining.length && !u.instancesCurrent.length) {
      return this.#complete(u, job, u.state === "ROLLING_BACKWARD" ? "ROLLED_BACK" : "SUCCEEDED");
    }
    const total = u.instancesAdded.length + u.instancesUpdated.length + u.instancesRemoved.length;
    const batch = u.config.batchPercentage > 0
      ? Math.max(1, Math.ceil((total * u.config.batchPercentage) / 100))
      : u.config.batchSize || total;
    for (const i of remaining.slice(0, Math.max(0, batch - u.instancesCurrent.length))) {
      this.#begin(u, job, i);
      u.instancesCurrent.push(i);
      changed = true;
    }
    if (changed) this.#put(u);
    this.#recheck(u, job);
  }

  /** Moves the instances under way that finished to done or failed; true if any did. */
  #account(u: UpdateRecord, job: JobEntry): boolean {
    let changed = false;
    for (const i of [...u.instancesCurrent]) {
      const verdict = this.#instanceVerdict(u, job, i);
      if (verdict === "pending" || typeof verdict === "object") continue;
      u.instancesCurrent = u.instancesCurrent.filter((x) => x !== i);
      if (verdict === "removed") this.#removedMeanwhile(u, i);
      else (verdict === "done" ? u.instancesDone : u.instancesFailed).push(i);
      if (verdict === "failed") this.#backIfNoRoom(u, job, i);
      this.#events(u, [i], verdict === "failed" ? "FAILED" : "SUCCEEDED");
      changed = true;
    }
    return changed;
  }

  /** The instances not yet taken that were removed from the job meanwhile (`#removedMeanwhile`); true if any. */
  #dropRemoved(u: UpdateRecord, job: JobEntry): boolean {
    const seen = new Set([...u.instancesDone, ...u.instancesFailed, ...u.instancesCurrent]);
    // Added instances are made when taken; updated ones are the job's from the start.
    const gone = u.instancesUpdated.filter((i) => !seen.has(i) && !job.tasks.has(i));
    for (const i of gone) this.#removedMeanwhile(u, i);
    this.#events(u, gone, "SUCCEEDED");
    return gone.length > 0;
  }

  /**
   * An instance removed from the job while the workflow had it to do (a daemon's host drained or left, a
   * batch job shrank), before the workflow brought it up as it wants: it was not updated, restarted or
   * started, so it is listed removed instead, its removal done, as an update's own removals are once their
   * instance is gone. The instances listed added or updated stay the job's, and done, failed and
   * remaining still add up to the instances listed.
   */
  #removedMeanwhile(u: UpdateRecord, i: number): void {
    u.instancesUpdated = u.instancesUpdated.filter((x) => x !== i);
    u.instancesAdded = u.instancesAdded.filter((x) => x !== i);
    if (!u.instancesRemoved.includes(i)) {
      u.instancesRemoved = [...u.instancesRemoved, i].sort((a, b) => a - b);
    }
    u.instancesDone.push(i);
  }

  /**
   * `stopBeforeUpdate`: every instance the update changes or removes is stopped before any starts on the new
   * config, so old and new never run side by side. True once all have ended; the job manager evaluates the
   * workflow again as each one does.
   */
  #stopFirst(u: UpdateRecord, job: JobEntry): boolean {
    if (!u.stopFirst) {
      const instances: number[] = [];
      for (const i of [...u.instancesUpdated, ...u.instancesRemoved]) {
        const task = job.tasks.get(i);
        // Already stopped (by an operator) or going away: nothing to stop, nor to start again after.
        if (!task || task.goalState === "KILLED" || task.goalState === "DELETED") continue;
        task.goalState = "KILLED";
        this.jm.putTask(task);
        this.jm.taskEngine.enqueue(task);
        instances.push(i);
      }
      u.stopFirst = { instances, done: false };
      this.#put(u);
    }
    const running = u.stopFirst.instances.some((i) => {
      const task = job.tasks.get(i);
      return task !== undefined && !isTerminalTaskState(task.state);
    });
    if (running) return false;
    u.stopFirst.done = true;
    this.#put(u);
    return true;
  }

  /** Whether a change to instance `i` can move the workflow on (an instance of its batch, or one it stops). */
  watches(u: UpdateRecord, i: number): boolean {
    return u.instancesCurrent.includes(i) ||
      (u.stopFirst?.done === false && u.stopFirst.instances.includes(i));
  }

  /**
   * The instances `stopBeforeUpdate` stopped and no batch has started yet run again, on the config they had:
   * the workflow ends (aborted, failed) or rolls back without them.
   */
  #restartStoppedFirst(u: UpdateRecord, job: JobEntry | undefined): void {
    if (!u.stopFirst || !job) return;
    const begun = new Set([...u.instancesDone, ...u.instancesFailed, ...u.instancesCurrent]);
    const left = u.stopFirst.instances.filter((i) =>
      !begun.has(i) && job.tasks.get(i)?.goalState === "KILLED"
    );
    u.stopFirst = undefined;
    if (left.length) this.jm.startTasks(job, left);
  }

  /**
   * Evaluates the workflow again when an instance of the batch can finish without a task changing:
   * at once if one already has (it was where it should be when taken), else when the first settles.
   */
  #recheck(u: UpdateRecord, job: JobEntry): void {
    let atMs = Infinity;
    for (const i of u.instancesCurrent) {
      const verdict = this.#instanceVerdict(u, job, i);
      if (verdict === "pending") continue;
      atMs = Math.min(atMs, typeof verdict === "object" ? verdict.settlesAtMs : this.jm.now());
    }
    if (atMs < Infinity) this.jm.updateEngine.enqueue(u, atMs);
  }

  /**
   * Instances not yet taken, in Peloton's order (`getInstancesForUpdateRun`): additions, updates (the
   * unavailable ones first: `byAvailability`, as they are now), removals.
   */
  #remaining(u: UpdateRecord, job: JobEntry): number[] {
    const seen = new Set([...u.instancesDone, ...u.instancesFailed, ...u.instancesCurrent]);
    const left = (list: number[]) => list.filter((i) => !seen.has(i));
    return [
      ...left(u.instancesAdded),
      ...byAvailability(job, left(u.instancesUpdated)),
      ...left(u.instancesRemoved),
    ];
  }

  #begin(u: UpdateRecord, job: JobEntry, i: number): void {
    // ROLLING_BACKWARD again in a rollback, which recorded it for each of its instances when it started: the
    // reads keep the newer of the two, when the instance was taken (as Peloton's reads of its progress writes).
    this.#events(u, [i], u.state);
    const task = job.tasks.get(i);
    if (u.instancesRemoved.includes(i)) {
      if (task) {
        task.goalState = "DELETED";
        this.jm.putTask(task);
        this.jm.taskEngine.enqueue(task);
      }
      return;
    }
    if (u.instancesAdded.includes(i) && (!task || task.goalState === "DELETED")) {
      // A stopped job's new instances are added stopped ("an update leaves stopped pods stopped").
      this.jm.addInstanceAt(job, i, u.jobConfigVersion, job.runtime.goalState === "KILLED");
      return;
    }
    if (!task) return;
    switch (u.type) {
      case "UPDATE":
        task.desiredConfigVersion = u.jobConfigVersion;
        // `startTasks` (v1alpha `startPods`): a stopped instance starts again, on the new config; so does one
        // `stopBeforeUpdate` stopped.
        if (task.goalState === "KILLED" && (u.config.startTasks || u.stopFirst?.instances.includes(i))) {
          task.goalState = defaultTaskGoal(job.config.type);
        }
        break;
      case "RESTART":
        // A new run on the workflow's version (Peloton's restart strategy sets DesiredConfigVersion).
        task.desiredConfigVersion = u.jobConfigVersion;
        task.desiredRunId = task.runId + 1;
        u.targetRuns = { ...u.targetRuns, [i]: task.runId + 1 };
        // Peloton's restart sets the default goal: a stopped instance runs again rather than wait for ever.
        if (task.goalState === "KILLED") task.goalState = defaultTaskGoal(job.config.type);
        break;
      case "START":
      case "STOP":
        // Peloton's start and stop strategies set both versions, whatever the task does: one started runs
        // the workflow's version, one stopped starts on it later. Better than Peloton's here: a run that
        // ended, or is ending, and that a start runs anew keeps the version it ran (its history, and the
        // volume it mounted, say what it ran: `mountingVersion`); its new run takes the workflow's.
        if (u.type === "START" && (isTerminalTaskState(task.state) || task.state === "KILLING")) {
          if (task.configVersion !== u.jobConfigVersion) task.desiredConfigVersion = u.jobConfigVersion;
          else task.desiredConfigVersion = undefined;
          this.jm.putTask(task);
        } else this.#moveTo(task, u.jobConfigVersion);
        if (u.type === "START") this.jm.startTasks(job, [i]);
        else this.jm.stopTasks(job, [i]);
        return;
    }
    // Attempts count runs at the target only (Peloton: "failure count due to old version should be reset").
    task.failureCount = 0;
    // In place: the task is to run again on its host. Otherwise any host does (Peloton clears DesiredHost
    // unless InPlace): a hint an earlier in-place update left would hold the task's later moves.
    task.desiredHost = u.config.inPlace && task.hostname ? task.hostname : undefined;
    this.jm.putTask(task);
    this.jm.taskEngine.enqueue(task);
  }

  /**
   * Peloton's `handleUnchangedInstancesInUpdate`, when a workflow starts and when an update rolls back: every
   * instance the workflow does not list (added, updated or removed) whose spec is the workflow's is at its
   * config version from now on, without a restart. One pass over the job;
   * the tasks moved are stored with the job manager's next batch of writes.
   */
  #moveUnchanged(u: UpdateRecord, job: JobEntry): void {
    const listed = new Set([...u.instancesAdded, ...u.instancesUpdated, ...u.instancesRemoved]);
    const after = job.versions.get(u.jobConfigVersion)?.tasks;
    if (!after) return;
    const configsOf = (v: number) => job.versions.get(v)?.tasks;
    for (const task of job.tasks.values()) {
      // Better than Peloton's here: an instance a restart of some others leaves on an older spec (an aborted
      // update's) keeps its version, which says what it runs, rather than take one whose spec it does not.
      if (listed.has(task.instanceId) || task.goalState === "DELETED" || changedBy(task, after, configsOf)) {
        continue;
      }
      this.#moveTo(task, u.jobConfigVersion);
    }
  }

  /** Sets both the config version of the task and its desired one (none pending) to `version`. */
  #moveTo(task: TaskRecord, version: number): void {
    if (task.configVersion === version && (task.desiredConfigVersion ?? version) === version) return;
    const pending = task.desiredConfigVersion !== undefined &&
      task.desiredConfigVersion !== task.configVersion;
    task.configVersion = version;
    task.desiredConfigVersion = undefined;
    this.jm.putTask(task);
    // A change it was to be stopped or started again for is gone: its goal-state actions are others now.
    if (pending) this.jm.taskEngine.enqueue(task);
  }

  /** Done: running the target (and healthy if checked). Failed: out of attempts (`maxInstanceAttempts`). */
  #instanceVerdict(u: UpdateRecord, job: JobEntry, i: number): Verdict {
    const task = job.tasks.get(i);
    if (u.instancesRemoved.includes(i)) return !task ? "done" : "pending";
    // Removed since the workflow took it (a batch job shrank, a daemon's host left): nothing is left to
    // restart, start, stop or update, and nothing brings it back, so waiting for it would never end; and it
    // was not brought up as the workflow wants, so it is not done as an instance the workflow changed.
    if (!task) return "removed";
    const attempts = u.config.maxInstanceAttempts;
    if (attempts > 0 && task.failureCount >= attempts) return "failed";
    switch (u.type) {
      case "STOP":
        return isTerminalTaskState(task.state) ? "done" : "pending";
      // A run its volume's host has no room for (see UPDATE, below) fails a restart or start as it does an
      // update, rather than hold it for ever.
      case "START":
        return pinnedWithoutRoom(task) ? "failed" : this.#up(u, job, task);
      case "RESTART":
        if (task.runId < (u.targetRuns?.[i] ?? 0)) return "pending";
        return pinnedWithoutRoom(task) ? "failed" : this.#up(u, job, task);
      case "UPDATE": {
        // Stopped and staying so: updated once it is to start on the target, whatever config its ended run
        // had (Peloton's update strategy); a later start runs the target.
        if (isTerminalTaskState(task.state) && task.goalState === "KILLED") {
          return (task.desiredConfigVersion ?? task.configVersion) === u.jobConfigVersion
            ? "done"
            : "pending";
        }
        if (task.configVersion !== u.jobConfigVersion || task.desiredConfigVersion !== undefined) {
          return "pending";
        }
        // Its volume's host cannot hold the new config (a bigger volume, more cpu or memory than is free
        // there): the update cannot bring it up, and it can run nowhere else. A failed instance (Peloton's
        // `maxFailureInstances` and `rollbackOnFailure` apply), which runs again on what it ran.
        if (pinnedWithoutRoom(task)) return "failed";
        return this.#up(u, job, task);
      }
    }
  }

  /**
   * Whether the task's run is up: finished for a batch task; HEALTHY when it has a health check; without
   * one, RUNNING for `minRunningSeconds` (until then it settles, and a crash meanwhile is a failed run).
   */
  #up(u: UpdateRecord, job: JobEntry, task: TaskRecord): Verdict {
    if (job.config.type === "BATCH" && task.state === "SUCCEEDED") return "done";
    if (task.state !== "RUNNING") return "pending";
    // Recovered RUNNING and not yet confirmed by reconciliation: what the crashed process stored may be gone.
    const sinceMs = this.jm.knownSinceMs(task);
    if (sinceMs === undefined) return "pending";
    if (task.healthy !== undefined && task.healthy !== "DISABLED") {
      return task.healthy === "HEALTHY" ? "done" : "pending";
    }
    const settleMs = (u.config.minRunningSeconds ?? DEFAULT_MIN_RUNNING_SECONDS) * 1000;
    const settlesAtMs = sinceMs + settleMs;
    return this.jm.now() >= settlesAtMs ? "done" : { settlesAtMs };
  }

  #complete(u: UpdateRecord, job: JobEntry | undefined, state: UpdateState): void {
    this.#restartStoppedFirst(u, job);
    // An instance in flight that its volume's host has no room for at the target (the workflow ends before it
    // was counted failed: an abort) runs again on what it ran rather than wait for room for good.
    if (job) {
      for (const i of u.instancesCurrent) this.#backIfNoRoom(u, job, i);
      // Instances held back for it that it never reached stay so (an ended rolling create's are not started
      // by a refresh or a restart either), and say why.
      this.#holdUnstarted(u, job, this.#remaining(u, job), state);
    }
    u.completionTimeMs = this.jm.now();
    this.#set(u, state);
    // Instances in flight when it ends (aborted, failed) end with it.
    this.#events(u, u.instancesCurrent, state);
    if (job && job.runtime.updateId === u.updateId) {
      job.runtime.updateId = undefined;
      this.jm.markDirty(job, true);
    }
    this.jm.updates.delete(u.updateId);
  }

  /**
   * An instance of a workflow (an update, a rollback, a restart, a start) whose run waits on its volume's
   * host, which has no room for it: sent back as `backIfNoRoom` does, to the version it ran before the
   * workflow took it (else the workflow's previous one). The job's config is the workflow's still; a later
   * workflow takes the instance again, as it takes one an aborted update left behind.
   */
  #backIfNoRoom(u: UpdateRecord, job: JobEntry, i: number): void {
    const task = job.tasks.get(i);
    if (task) this.backIfNoRoom(job, task, u.prevJobConfigVersion);
  }

  /**
   * A volume-pinned instance whose run waits for its host, which has no room for it (`pinnedWithoutRoom`),
   * at a config version other than that of the run that last mounted its volume (`mountingVersion`): it goes
   * back to that version, so it runs again on its volume (its host keeps room for that) rather than stay down
   * for good. Whatever moved it: a workflow that counted it failed, one that ended (aborted) while the run
   * was on its way, or one gone before the host's answer came (the job manager asks, `JobManager`'s
   * `#explain`). `fallback`: the version to go to when no run of it is known to have been placed. Cannot
   * loop: the run it goes back to is at the version of its last placed run, so should that not fit either,
   * it waits for room there. True if it was sent back.
   */
  backIfNoRoom(job: JobEntry, task: TaskRecord, fallback?: number): boolean {
    if (task.goalState === "KILLED" || task.goalState === "DELETED" || !pinnedWithoutRoom(task)) return false;
    if (task.desiredConfigVersion !== undefined && task.desiredConfigVersion !== task.configVersion) {
      return false;
    }
    const back = mountingVersion(task) ?? fallback;
    if (back === undefined || back === task.configVersion || !job.versions.has(back)) return false;
    task.desiredConfigVersion = back;
    this.jm.putTask(task);
    this.jm.taskEngine.enqueue(task);
    return true;
  }

  #set(u: UpdateRecord, state: UpdateState): void {
    if (u.state === state) return;
    u.state = state;
    const states = [...u.states ?? [], { state, timeMs: this.jm.now() }];
    u.states = states.length > MAX_WORKFLOW_STATES
      ? [states[0], ...states.slice(states.length - MAX_WORKFLOW_STATES + 1)]
      : states;
    this.#put(u);
  }

  #put(u: UpdateRecord): void {
    this.jm.write(this.stamp(u));
  }

  /** Records a step of the workflow on instances, written at the job manager's next flush. */
  #events(u: UpdateRecord, instances: readonly number[], state: UpdateState): void {
    for (const w of this.#eventWrites(u, instances, state)) this.jm.write(w);
  }

  #eventWrites(u: UpdateRecord, instances: readonly number[], state: UpdateState): StoreWrite[] {
    if (!this.jm.config.recordEvents) return [];
    const timeMs = this.jm.now();
    return instances.map((instanceId) => {
      const event: WorkflowEventRecord = {
        jobId: u.jobId,
        workflowId: u.updateId,
        instanceId,
        type: u.type,
        state,
        timeMs,
      };
      return { kind: "workflow.event", event };
    });
  }

  /** A new version of the workflow's record, as the write that stores it. */
  stamp(u: UpdateRecord): StoreWrite {
    u.updateTimeMs = this.jm.now();
    u.version++;
    return { kind: "update.put", update: structuredClone(u) };
  }
}
