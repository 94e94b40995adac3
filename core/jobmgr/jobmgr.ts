/** The job manager daemon: job and task lifecycle, driven by goal-state engines over Peloton's tables. */
import { GoalStateEngine } from "../goalstate/engine.ts";
import {
  availability,
  holdMessage,
  holdReason,
  maintenanceLimit,
  SLA_HOLD_TEXT,
  SlaDrains,
  unavailableCount,
} from "./sla_drain.ts";
import {
  ADMIN_SERVICE,
  apiLockKind,
  LOCK_COMPONENTS,
  type LockComponent,
  lockComponents,
} from "./lockdown.ts";
import type {
  ApiErrorCode,
  ApiReply,
  Gang,
  HostPlacement,
  MappedTaskStatus,
  Message,
  Preemption,
  ReplyMessage,
  RmStateChange,
  RmTask,
} from "../messages.ts";
import type { JobConfig, UpdateConfig } from "../model/config_types.ts";
import {
  isTerminalUpdateState,
  type JobRecord,
  mesosTaskId,
  parseMesosTaskId,
  type SecretRecord,
  taskEventOf,
  type TaskRecord,
  type UpdateRecord,
} from "../model/records.ts";
import { isTerminalJobState, isTerminalTaskState, TASK_STATES, type TaskState } from "../model/states.ts";
import type { Clock, TimerId } from "../ports/clock.ts";
import type { LaunchSpec } from "../ports/host_backend.ts";
import type { Counter, Metrics } from "../ports/metrics.ts";
import type { Prng } from "../ports/prng.ts";
import { type Store, storeFailure, type StoreWrite } from "../ports/store.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";
import { PendingCalls } from "../rpc.ts";
import { DaemonHosts } from "./daemon_jobs.ts";
import { JobApi } from "./job_api.ts";
import { readStoredJob } from "./job_load.ts";
import { type JobEntry, newJobEntry, snapshot, taskConfigOf, taskKey, version } from "./job_entry.ts";
import { type JobAction, jobActions } from "./job_rules.ts";
import { defaultJobGoal, defaultTaskGoal, deriveJobState } from "./job_state.ts";
import { retriesLeft, TaskActions } from "./task_actions.ts";
import { awaitsWorkflow, taskActions } from "./task_rules.ts";
import { buildLaunchSpec, buildRmTask, gangAwaits, killGraceMs } from "./task_build.ts";
import { notStartedMessage, type UpdateAction, updateActions, Workflows } from "./workflow.ts";

export interface JobmgrConfig {
  /** Long-poll timeout of GetPlacements (Peloton's `get_placements_timeout_ms`). */
  placementPollTimeoutMs: number;
  /** Tasks per GetPlacements reply. */
  placementPollLimit: number;
  /**
   * A GetPlacements not answered within this is taken for lost (its request or its reply) and polled
   * again, so that one lost message does not stop launches for good. A late answer is still carried out.
   */
  placementPollRetryMs: number;
  /** System failures (lost hosts, launch errors) get at least this many attempts. */
  maxSystemFailureAttempts: number;
  /**
   * Whether every state change is stored as a task event, and every workflow step as a workflow event (the
   * 50,000-host simulator turns it off).
   */
  recordEvents: boolean;
  /** A task LAUNCHED or STARTING this long without progress is killed and run again (Peloton: 180 min). */
  launchTimeoutMs: number;
  /**
   * A task still being killed this long after its kill's grace period is killed again (no grace left), and
   * again every as long: the kill, or the backend's answer to it, may have been lost on the way.
   */
  killResendMs: number;
  /** Service restarts after failures wait initial × 2^(failures−1), capped (Peloton: 30 s, 60 min). */
  initialTaskBackoffMs: number;
  maxTaskBackoffMs: number;
  /** A service run that stayed up this long clears its failure count (restart throttling starts over). */
  failureResetMs: number;
  /** Goal-state engines: workers and retry backoff (Peloton: 1000 / 50 / 100 workers, 10 s, 60 min). */
  taskWorkers: number;
  jobWorkers: number;
  updateWorkers: number;
  failureRetryDelayMs: number;
  maxRetryDelayMs: number;
  /**
   * Forget a job once it and all its tasks ended (Peloton's JobUntrack): it lives on in the store, where
   * the API reads it. Off by default; the simulator turns it on for hour-long runs of millions of tasks.
   */
  untrackTerminalJobs?: boolean;
  /**
   * The backend keeps persistent volumes as they were created (Mesos matches a volume whole, at its container
   * path and size): an update, replace or patch changing an existing volume's `containerPath` or `sizeMB` is
   * refused. Set by the production wiring for `--backend mesos`; off for the minicluster, which can change them.
   */
  fixedVolumes?: boolean;
}

/** Runs of an instance whose events are kept (Peloton's `_defaultPodEventsToConstraint`). */
export const KEPT_EVENT_RUNS = 100;

export const DEFAULT_JOBMGR_CONFIG: JobmgrConfig = {
  placementPollTimeoutMs: 100,
  placementPollLimit: 1000,
  placementPollRetryMs: 30_000,
  maxSystemFailureAttempts: 4,
  recordEvents: true,
  launchTimeoutMs: 180 * 60_000,
  killResendMs: 60_000,
  initialTaskBackoffMs: 30_000,
  maxTaskBackoffMs: 60 * 60_000,
  failureResetMs: 10 * 60_000,
  taskWorkers: 1000,
  jobWorkers: 50,
  updateWorkers: 100,
  failureRetryDelayMs: 10_000,
  maxRetryDelayMs: 60 * 60_000,
};

export interface JobmgrDeps {
  clock: Clock;
  transport: Transport;
  store: Store;
  prng: Prng;
  metrics: Metrics;
  self: Address;
  resmgr: Address;
  hostmgr: Address;
  /**
   * Several job managers share the resource manager (production's separate daemons): tasks are enqueued
   * with this one as their owner, so their placements and changes come back here alone.
   */
  tagOwner?: boolean;
  /**
   * Told of a failed batch of this job manager's writes. Its memory is then ahead of the store, with no
   * way to take the writes back, so production ends the process (as Peloton's daemons exit on a store
   * error): a supervisor restarts it and recovery reloads what the store holds. Without it, a failed
   * batch no caller waits on is left to the store's own handling of writes without a `done`.
   */
  onLostWrite?: (err: Error) => void;
}

export type { JobEntry };

/** States before launch, in the order a task moves through them. */
export const PRE_LAUNCH_RANK: Partial<Record<TaskState, number>> = {
  INITIALIZED: 0,
  PENDING: 1,
  READY: 2,
  PLACING: 3,
  PLACED: 4,
};

/** What the message of a gang member held back for the rest of its gang begins with. */
const GANG_WAIT_TEXT = "waiting for the rest of its gang";

/** What a transition may set besides the state. */
export type TransitionFields = Partial<
  Pick<TaskRecord, "hostname" | "agentId" | "ports" | "message" | "reason" | "exitCode" | "healthy">
>;

/** Mesos's reason when an agent's QoS controller kills a revocable task because its slack shrank. */
export const SLACK_PREEMPTED_REASON = "REASON_CONTAINER_PREEMPTED";

/** Reasons Mesos gives for failures that are the system's fault, not the task's. */
export const SYSTEM_FAILURE_REASONS = new Set([
  "REASON_CONTAINER_LAUNCH_FAILED",
  "REASON_INVALID_OFFERS",
  "REASON_AGENT_REMOVED",
  "REASON_AGENT_RESTARTED",
  "REASON_AGENT_DISCONNECTED",
]);

/**
 * What a Mesos TaskStatus's reason reads as when it sets none: its enum's 0. A command executor's non-zero
 * exit sends no reason, so its FAILED run says this one, as in Peloton.
 */
export const UNSET_MESOS_REASON = "REASON_COMMAND_EXECUTOR_FAILED";

/**
 * The reason a task's run records from a status: Peloton's status handler reads the Mesos reason (so an
 * unset one as `UNSET_MESOS_REASON`) for FAILED and LOST alone, and records none for the other states; here
 * a reason the backend gives is kept for those too, as it tells why (a kill's, a reconciliation's).
 */
function statusReason(s: MappedTaskStatus): string | undefined {
  if (s.reason) return s.reason;
  return s.pelotonState === "FAILED" || s.pelotonState === "LOST" ? UNSET_MESOS_REASON : undefined;
}

/**
 * Reasons a task is LOST only because the scheduler, the master or its agent restarted (the backend's
 * reconciliation no longer knows it): run again at once, never counted as the task's failure. A failure
 * that reconciliation merely reports again (TASK_FAILED, "Latest task state") still counts.
 */
export const RESTART_LOSS_REASONS = new Set([
  "REASON_RECONCILIATION",
  "REASON_AGENT_RESTARTED",
  "REASON_AGENT_REREGISTERED",
  "REASON_AGENT_DISCONNECTED",
  "REASON_MASTER_DISCONNECTED",
  // The master removed the framework and killed its tasks; the backend subscribed anew as a new framework.
  "REASON_FRAMEWORK_REMOVED",
]);

/**
 * Reasons a task is LOST because its host's machine went down for maintenance: Mesos's for an agent the
 * operator removed (`/machine/down` removes the machine's agents; the minicluster gives it too). Not the
 * task's failure: run again at once, never counted. An agent lost without maintenance is
 * REASON_AGENT_REMOVED, a system failure that counts.
 */
export const MAINTENANCE_LOSS_REASONS = new Set(["REASON_AGENT_REMOVED_BY_OPERATOR"]);

/**
 * The host manager's own LOST for a task still on a host whose agent left (REASON_AGENT_REMOVED, whatever
 * the cause) says the backend's reason: this one when the backend took the machine down for maintenance.
 */
const MACHINE_DOWN_LOSS = / lost: machine down for maintenance$/;

/** Whether a LOST status is its host's maintenance, not the task's failure (see `MAINTENANCE_LOSS_REASONS`). */
export function isMaintenanceLoss(s: { reason?: string; message?: string }): boolean {
  if (s.reason === undefined) return false;
  return MAINTENANCE_LOSS_REASONS.has(s.reason) ||
    (s.reason === "REASON_AGENT_REMOVED" && MACHINE_DOWN_LOSS.test(s.message ?? ""));
}

export interface RecoveredJob {
  job: JobRecord;
  tasks: TaskRecord[];
  /** Older config versions the tasks still use. */
  configs?: Map<number, JobConfig>;
  secrets?: SecretRecord[];
}

export class JobManager implements Receiver {
  readonly jobs = new Map<string, JobEntry>();
  /** Active workflows by id. */
  readonly updates = new Map<string, UpdateRecord>();
  readonly daemonHosts = new DaemonHosts();
  /** The host manager's last full inventory said its backend keeps volumes as created. */
  #backendFixedVolumes = false;

  /**
   * An existing volume's path and size may not change: the wiring says so (`config.fixedVolumes`), or the
   * host manager did (its backend, in its full host inventory), so a job manager started on its own knows too.
   */
  get fixedVolumes(): boolean {
    return this.config.fixedVolumes === true || this.#backendFixedVolumes;
  }
  readonly taskEngine: GoalStateEngine<TaskRecord, import("./task_rules.ts").TaskAction, TaskRecord>;
  readonly jobEngine: GoalStateEngine<JobEntry, JobAction>;
  readonly updateEngine: GoalStateEngine<UpdateRecord, UpdateAction>;
  readonly workflows: Workflows;
  readonly #calls = new PendingCalls<ReplyMessage | ApiReply>();
  readonly #api: JobApi;
  readonly #actions: TaskActions;
  #writes: StoreWrite[] = [];
  /** Tasks changed since the last flush (written then, once each however often they changed). */
  readonly #dirtyTasks = new Set<TaskRecord>();
  #dirty = new Set<JobEntry>();
  /** Jobs whose runtime must be stored even if their derived state did not change (goal, counts). */
  #forced = new Set<JobEntry>();
  #gangs: RmTask[] = [];
  /** When jobs that had ended, and are not terminal for now, ended (`#refreshJobState`). */
  readonly #endedBefore = new WeakMap<JobEntry, number>();
  /**
   * Gang members held back until the rest of their gang is ready to go with them (`#gangReady`), by job
   * and instance: a gang is sent whole, never in parts (a preempted gang's members come back one by one).
   */
  readonly #heldGangs = new Map<string, Map<number, RmTask>>();
  #drops: string[] = [];
  /** Drains held back for the SLA, to tell the resource manager (which asks again later). */
  #heldDrains: string[] = [];
  #kills: { taskId: string; gracePeriodMs: number; hostname?: string }[] = [];
  /** Launches of this turn: sent once the turn's writes (their tasks LAUNCHING) are stored. */
  #launches: Extract<Message, { kind: "launch-tasks" }>[] = [];
  /** Volumes of instances removed this turn: destroyed on their hosts once the turn's writes are stored. */
  #destroys: { jobId: string; volumeId: string; hostname: string }[] = [];
  /**
   * First runs of stateful tasks not yet heard of from the backend (Mesos task id → the volume placed for
   * it): their volume is made with the launch, so one dropped before the backend launched it made none.
   */
  readonly #volumeFirstRuns = new Map<string, string>();
  /** Runs whose launch failed before the backend launched them, their volume never made: no failure. */
  readonly #neverLaunched = new Set<string>();
  #running = false;
  /** A graceful stop began: nothing more is launched (`stopLaunching`). */
  #launchesStopped = false;
  /** Bumped when the placement poll starts over (a new resource manager); replies to older polls stop there. */
  #pollGen = 0;
  /** The current poll's retry timer. */
  #pollTimer: TimerId | undefined;
  /** Jobs another job manager drives now: whatever is still collected for them is dropped. */
  readonly #released = new Set<string>();
  /**
   * Tasks recovered launched (`#resume`) whose state this process has not seen yet: undefined until
   * reconciliation answers, then when it confirmed them RUNNING. Their stored `stateSinceMs` is the crashed
   * process's word, which reconciliation may contradict (LOST): updates do not count it. Each leaves at its
   * next transition, so the map is empty in a run that never recovered (a transition checks its size only).
   */
  readonly #recovered = new Map<TaskRecord, number | undefined>();
  /** Host maintenance drains held back by their jobs' SLA (`sla.maximumUnavailableInstances`). */
  readonly #drains = new SlaDrains();
  /** Running tasks killed to drain hosts in maintenance (not those the SLA still holds back). */
  maintenanceEvictions = 0;
  /**
   * Jobs deleted with force whose runs were still being killed: the Mesos ids of those runs not ended yet,
   * and until when to wait for them at most. Such a job cannot be created again meanwhile, as Peloton says
   * of a forced delete ("the job cannot be re-created (with same uuid) till the delete is complete"): its new
   * runs would take the old runs' task ids, and the old runs' ends would be taken for theirs.
   */
  readonly #deleting = new Map<string, { runs: Set<string>; untilMs: number }>();
  /** Components locked down (AdminService), and what the locks hold back meanwhile. */
  readonly locks = new Set<LockComponent>();
  /**
   * Counts Lockdown and RemoveLockdown calls, and those not stored yet: a daemon that takes up the lockdown
   * other job managers stored compares the store with memory only when neither moved during its read.
   */
  lockCalls = 0;
  lockWritesInFlight = 0;
  #heldPlacements: Extract<ReplyMessage, { kind: "placements" }>[] = [];
  /** `peloton_jobmgr_task_transitions_total` by the state entered (its number), looked up once per state. */
  readonly #transitions: (Counter | undefined)[] = [];

  constructor(readonly deps: JobmgrDeps, readonly config: JobmgrConfig = DEFAULT_JOBMGR_CONFIG) {
    const engine = (workers: number) => ({
      workers,
      failureRetryDelayMs: config.failureRetryDelayMs,
      maxRetryDelayMs: config.maxRetryDelayMs,
    });
    this.#actions = new TaskActions(this);
    this.taskEngine = new GoalStateEngine(deps.clock, engine(config.taskWorkers), {
      keyOf: taskKey,
      actionsFor: taskActions,
      actions: this.#actions.table(),
      afterDispatch: () => this.flush(),
    });
    this.workflows = new Workflows(this);
    this.jobEngine = new GoalStateEngine(deps.clock, engine(config.jobWorkers), {
      keyOf: (j) => j.jobId,
      actionsFor: jobActions,
      actions: {
        evaluate_sla: (job, done) => done(this.#evaluateSla(job)),
        reconcile_daemon: (job, done) => done(this.daemonHosts.reconcile(this, job)),
        kill_tasks: (job, done) => done(void this.stopTasks(job)),
      },
      afterDispatch: () => this.flush(),
    });
    this.updateEngine = new GoalStateEngine(deps.clock, engine(config.updateWorkers), {
      keyOf: (u) => u.updateId,
      actionsFor: updateActions,
      actions: this.workflows.table(),
      afterDispatch: () => this.flush(),
    });
    this.#api = new JobApi(this);
  }

  now(): number {
    return this.deps.clock.now();
  }

  /** Loads active jobs, their tasks and workflows from the store's records (before `start`). */
  recover(records: RecoveredJob[], updates: UpdateRecord[] = []): void {
    for (const { job, tasks, configs, secrets } of records) {
      this.jobs.set(job.jobId, newJobEntry(job, tasks, configs, secrets));
    }
    for (const u of updates) if (this.jobs.has(u.jobId)) this.updates.set(u.updateId, u);
  }

  start(): void {
    this.#running = true;
    this.#resume([...this.jobs.values()], [...this.updates.values()]);
    this.#pollPlacements();
  }

  /** Takes jobs over while running (a shard another job manager held): loads and resumes them. */
  adopt(records: RecoveredJob[], updates: UpdateRecord[] = []): void {
    const fresh = records.filter((r) => !this.jobs.has(r.job.jobId));
    const ids = new Set(fresh.map((r) => r.job.jobId));
    for (const id of ids) this.#released.delete(id);
    const mine = updates.filter((u) => ids.has(u.jobId));
    this.recover(fresh, mine);
    this.#resume(fresh.map((r) => this.jobs.get(r.job.jobId)!), mine);
  }

  /**
   * Loads a job the store holds but memory does not (it ended before a restart, which recovers only
   * active jobs) so a call that changes it acts as it would have before; `done` gets the job, or nothing
   * when the store has no such job.
   */
  loadJob(jobId: string, done: (job: JobEntry | undefined, err?: Error) => void): void {
    readStoredJob(this.deps.store, jobId).then((stored) => {
      if (stored && !this.jobs.has(jobId)) this.adopt([stored.record], stored.updates);
      done(this.jobs.get(jobId));
      this.flush();
    }, (err) => done(undefined, err instanceof Error ? err : new Error(String(err))));
  }

  /**
   * Stops driving jobs another job manager is to take over: they are forgotten, and writes, gangs and
   * kills still collected for them are dropped. The caller waits for the store to flush before handing over.
   */
  release(jobIds: Iterable<string>): void {
    for (const id of jobIds) {
      const job = this.jobs.get(id);
      if (!job) continue;
      this.#released.add(id);
      this.jobs.delete(id);
      this.#drains.forget(job);
      this.#api.watches.released(id);
      for (const t of job.tasks.values()) this.taskEngine.delete(taskKey(t));
      this.jobEngine.delete(id);
      for (const [uid, u] of this.updates) {
        if (u.jobId !== id) continue;
        this.updates.delete(uid);
        this.updateEngine.delete(uid);
      }
      this.#dirty.delete(job);
      this.#forced.delete(job);
    }
  }

  /**
   * A graceful stop begins: nothing more is launched, before any slow step of the stop. The placement poll
   * ends; placements that still come are left to the next start, which queues their tasks again; launches
   * waiting for their LAUNCHING writes are not sent (the next start finds those runs unknown, so lost, and
   * runs them anew). Statuses are still taken and stored: tasks running go on ending meanwhile.
   */
  stopLaunching(): void {
    this.#launchesStopped = true;
    this.#pollGen++;
    if (this.#pollTimer !== undefined) this.deps.clock.cancelTimer(this.#pollTimer);
    this.#pollTimer = undefined;
  }

  stop(): void {
    this.#running = false;
    this.#api.watches.stopAll();
    if (this.#pollTimer !== undefined) this.deps.clock.cancelTimer(this.#pollTimer);
    this.#pollTimer = undefined;
    this.taskEngine.stop();
    this.jobEngine.stop();
    this.updateEngine.stop();
  }

  receive(msg: Message): void {
    switch (msg.kind) {
      case "task-statuses": {
        this.#onStatuses(msg.statuses);
        const token = msg.ackToken;
        if (token === undefined) break;
        // The backend may acknowledge these updates only once their effects are durable; a failed write is
        // not acknowledged, so the backend sends the updates again.
        return this.flush((err) => {
          if (!err) {
            this.deps.transport.send(this.deps.hostmgr, { kind: "statuses-processed", ackToken: token });
          }
        });
      }
      case "host-inventory":
        if (msg.full) this.#backendFixedVolumes = msg.fixedVolumes === true;
        this.daemonHosts.update(msg);
        if (this.#drains.size) this.#drains.hostsChanged(new Set(msg.hosts.map((h) => h.hostname)));
        for (const job of this.jobs.values()) if (job.config.type === "DAEMON") this.jobEngine.enqueue(job);
        break;
      case "peer-changed":
        if (msg.role === "resmgr") this.#resyncResmgr();
        else if (msg.role === "hostmgr") this.#resyncHostmgr();
        break;
      case "placements":
        if (!this.#calls.resolve(msg)) this.#onPlacements(msg);
        break;
      case "gangs":
      case "hosts-acquired":
      case "api-reply":
        this.#calls.resolve(msg);
        break;
      case "api": {
        if (msg.procedure.startsWith(`${ADMIN_SERVICE}::`)) {
          this.#admin(msg);
          break;
        }
        const locked = this.locks.size ? apiLockKind(msg.procedure) : undefined;
        if (locked && this.locks.has(locked)) {
          // Peloton's API lock middleware answers Internal, with these words.
          const message = `All ${locked.toLowerCase()} APIs are locked down`;
          this.deps.transport.send(msg.replyTo, {
            kind: "api-reply",
            reqId: msg.reqId,
            error: { code: "internal", message },
          });
          break;
        }
        this.#api.handle(msg);
        break;
      }
      default:
        return;
    }
    this.flush();
  }

  /** Puts back the lockdown stored before a restart (before `start`), or takes up one stored by a peer. */
  applyLocks(components: LockComponent[]): void {
    for (const c of LOCK_COMPONENTS) this.#setLocked(c, components.includes(c));
    this.flush();
  }

  /** AdminService Lockdown and RemoveLockdown: applied at once, answered once stored. */
  #admin(req: Extract<Message, { kind: "api" }>): void {
    const method = req.procedure.slice(req.procedure.indexOf("::") + 2);
    const reply = (res: { body: unknown } | { error: { code: ApiErrorCode; message: string } }) =>
      this.deps.transport.send(req.replyTo, { kind: "api-reply", reqId: req.reqId, ...res });
    if (method !== "Lockdown" && method !== "RemoveLockdown") {
      return reply({
        error: { code: "unimplemented", message: `procedure ${req.procedure} is not implemented` },
      });
    }
    const components = lockComponents((req.body as Record<string, unknown> | undefined)?.components);
    if (typeof components === "string") {
      return reply({ error: { code: "invalid-argument", message: components } });
    }
    const lock = method === "Lockdown", before = [...this.locks], now = this.now();
    this.lockCalls++;
    this.lockWritesInFlight++;
    for (const c of components) this.#setLocked(c, lock);
    const writes: StoreWrite[] = components.map((component) =>
      lock ? { kind: "admin.lock", lock: { component, lockedMs: now } } : { kind: "admin.unlock", component }
    );
    this.deps.store.write(writes, (err) => {
      this.lockWritesInFlight--;
      if (!err) return reply({ body: { successes: components, failures: [] } });
      // The store does not have it: memory goes back to what the store has.
      this.applyLocks(before);
      reply({ error: storeFailure(err, "storing the lockdown") });
    });
    this.flush();
  }

  #setLocked(c: LockComponent, on: boolean): void {
    if (this.locks.has(c) === on) return;
    if (on) this.locks.add(c);
    else this.locks.delete(c);
    if (c === "GoalStateEngine") {
      for (const e of [this.taskEngine, this.jobEngine, this.updateEngine]) on ? e.pause() : e.resume();
    } else if (c === "Launch" && !on) {
      const held = this.#heldPlacements;
      this.#heldPlacements = [];
      for (const reply of held) this.#onPlacements(reply);
      this.#pollGen++;
      this.#pollPlacements();
    }
  }

  /** Sends a request that expects a reply to this daemon. */
  call<R extends ReplyMessage | ApiReply>(
    to: Address,
    make: (reqId: number) => Message,
    onReply: (reply: R) => void,
  ): number {
    const reqId = this.#calls.register((r) => {
      onReply(r as R);
      this.flush();
    });
    this.deps.transport.send(to, make(reqId));
    return reqId;
  }

  /** Gives up on a call: its reply, should it come, is dropped. */
  cancelCall(reqId: number): void {
    this.#calls.cancel(reqId);
  }

  // -------------------------------------------------------------------------------------------
  // Jobs

  /** Registers a new job and its tasks; `onDurable` runs once the job is stored, then tasks start. */
  createJob(
    jobId: string,
    config: JobConfig,
    onDurable: (err?: Error) => void,
    start?: { config: UpdateConfig; opaqueData?: string },
    secrets: SecretRecord[] = [],
  ): JobEntry {
    const now = this.now();
    const count = config.type === "DAEMON" ? 0 : config.instanceCount;
    const tasks: TaskRecord[] = [];
    for (let i = 0; i < count; i++) tasks.push(this.newTask(jobId, i, defaultTaskGoal(config.type), 1));
    const job = newJobEntry(
      {
        jobId,
        config: config.type === "DAEMON" ? { ...config, instanceCount: 0 } : config,
        configVersion: 1,
        runtime: {
          state: "INITIALIZED",
          goalState: defaultJobGoal(config.type),
          creationTimeMs: now,
          taskStats: count ? { INITIALIZED: count } : {},
          nextInstanceId: count,
          desiredStateVersion: 1,
          workflowVersion: 0,
          version: 1,
        },
      },
      tasks,
      undefined,
      secrets,
    );
    this.jobs.set(jobId, job);
    // v1alpha CreateSpec: instances start as a START workflow (in batches, paused at first, with its retry
    // and failure limits). It is stored in the job's own batch, so a create answered as done cannot come back
    // from a crash without its rolling start.
    const rolling = start
      ? this.workflows.prepare(job, { type: "START", create: true, ...start })
      : undefined;
    // Until the rolling start takes them, its instances say so, and wait for it whatever evaluates them.
    if (rolling) {
      const waiting = notStartedMessage(rolling);
      for (const t of tasks) t.message = waiting;
    }
    const batch: StoreWrite[] = [
      { kind: "job.put", job: snapshot(job) },
      { kind: "job.config", jobId, version: 1, config: job.config },
    ];
    for (const t of tasks) batch.push({ kind: "task.put", task: { ...t } });
    for (const secret of secrets) batch.push({ kind: "secret.put", secret });
    if (rolling) batch.push(this.workflows.stamp(rolling), ...this.workflows.createdEvents(rolling));
    this.deps.store.write(batch, (err) => {
      if (err) {
        this.jobs.delete(jobId);
        if (rolling) this.updates.delete(rolling.updateId);
        return onDurable(err);
      }
      if (rolling) this.updateEngine.enqueue(rolling);
      else for (const t of job.tasks.values()) this.taskEngine.enqueue(t);
      onDurable();
      this.jobEngine.enqueue(job);
      this.markDirty(job);
      this.flush();
    });
    return job;
  }

  /**
   * Deletes a job from the store; `done` runs once that is durable, or with the error. Writes collected
   * for it go first, and it leaves memory at once, so that nothing writes it back meanwhile; if the delete
   * fails it comes back (the store still holds it) and its engines take it up again.
   */
  deleteJob(jobId: string, done: (err?: Error) => void): void {
    if (this.jobs.has(jobId)) return this.#deleteJob(jobId, [], done);
    // Memory does not hold it (it ended before a restart): the store knows its volumes, and nothing
    // here makes new ones for it meanwhile.
    this.deps.store.listVolumes(jobId).then(
      (vs) => this.#deleteJob(jobId, vs.map((v) => ({ volumeId: v.volumeId, hostname: v.hostname })), done),
      (err) => done(err instanceof Error ? err : new Error(String(err))),
    );
  }

  #deleteJob(
    jobId: string,
    stored: { volumeId: string; hostname: string }[],
    done: (err?: Error) => void,
  ): void {
    this.flush();
    const job = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    if (job) this.#drains.forget(job);
    // Its volumes go with it: their records with the job's, their data on their hosts once that is stored.
    const held = [...job?.tasks.values() ?? []].flatMap((t) =>
      t.volumeId && t.requiredHost ? [{ volumeId: t.volumeId, hostname: t.requiredHost }] : []
    );
    const volumes = [...held, ...stored.filter((v) => !held.some((h) => h.volumeId === v.volumeId))];
    this.deps.store.write([{ kind: "job.delete", jobId }], (err) => {
      if (!err && volumes.length) {
        this.deps.transport.send(this.deps.hostmgr, { kind: "destroy-volumes", volumes });
      }
      if (!err) this.deps.transport.send(this.deps.hostmgr, { kind: "remove-sandboxes", jobIds: [jobId] });
      if (err && job && !this.jobs.has(jobId)) {
        this.jobs.set(jobId, job);
        for (const t of job.tasks.values()) this.taskEngine.enqueue(t);
        for (const u of this.updates.values()) if (u.jobId === jobId) this.updateEngine.enqueue(u);
        this.jobEngine.enqueue(job);
        this.markDirty(job);
      }
      done(err);
      this.flush();
    });
  }

  /** A run of a job deleted with force ended: once all have, the job may be created again. */
  #deletedRunEnded(taskId: string): void {
    const jobId = parseMesosTaskId(taskId)?.jobId;
    const d = jobId === undefined ? undefined : this.#deleting.get(jobId);
    if (!d || !d.runs.delete(taskId) || d.runs.size) return;
    this.#deleting.delete(jobId!);
  }

  newTask(jobId: string, instanceId: number, goal: TaskState, configVersion: number): TaskRecord {
    // The fields every run fills in are there from the start (undefined until then), so a task keeps its
    // shape through its states instead of growing a property store field by field.
    return {
      jobId,
      instanceId,
      runId: 1,
      state: "INITIALIZED",
      goalState: goal,
      stateSinceMs: this.now(),
      healthy: undefined,
      hostname: undefined,
      agentId: undefined,
      ports: undefined,
      startTimeMs: undefined,
      completionTimeMs: undefined,
      exitCode: undefined,
      message: undefined,
      reason: undefined,
      failureCount: 0,
      configVersion,
      version: 1,
    };
  }

  /** Adds instances to a job (grown jobs, daemon hosts); they start through the task engine. */
  addInstances(job: JobEntry, count: number, pin?: (t: TaskRecord) => void): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (let i = 0; i < count; i++) {
      const id = job.runtime.nextInstanceId ?? job.tasks.size;
      job.runtime.nextInstanceId = id + 1;
      const t = this.newTask(job.jobId, id, defaultTaskGoal(job.config.type), job.configVersion);
      t.version = 0;
      pin?.(t);
      job.tasks.set(id, t);
      job.runtime.taskStats.INITIALIZED = (job.runtime.taskStats.INITIALIZED ?? 0) + 1;
      this.putTask(t);
      this.taskEngine.enqueue(t);
      out.push(t);
    }
    if (job.config.type === "DAEMON") job.config = { ...job.config, instanceCount: job.tasks.size };
    this.markDirty(job, true);
    return out;
  }

  /**
   * Adds (or brings back) instance `id` running config `configVersion` (an update adding instances,
   * a rollback restoring removed ones). `stopped`: it is added KILLED, to stay so (a stopped job grows, as
   * Peloton's `addInstancesInUpdate` adds to a job whose goal is KILLED); a later start runs it.
   */
  addInstanceAt(job: JobEntry, id: number, configVersion: number, stopped = false): TaskRecord {
    const goal = stopped ? "KILLED" : defaultTaskGoal(job.config.type);
    const existing = job.tasks.get(id);
    if (existing) {
      existing.goalState = goal;
      existing.desiredConfigVersion = configVersion;
      existing.desiredHost = undefined;
      this.putTask(existing);
      this.taskEngine.enqueue(existing);
      return existing;
    }
    const t = this.newTask(job.jobId, id, goal, configVersion);
    if (stopped) t.state = "KILLED";
    t.version = 0;
    const lastRun = job.runtime.removedRuns?.[id];
    if (lastRun !== undefined) {
      // The instance was removed before: its Mesos task ids up to `lastRun` are taken.
      t.runId = lastRun + 1;
      const { [id]: _, ...removedRuns } = job.runtime.removedRuns!;
      job.runtime.removedRuns = removedRuns;
    }
    job.tasks.set(id, t);
    job.runtime.nextInstanceId = Math.max(job.runtime.nextInstanceId ?? 0, id + 1);
    job.runtime.taskStats[t.state] = (job.runtime.taskStats[t.state] ?? 0) + 1;
    this.putTask(t);
    this.taskEngine.enqueue(t);
    this.markDirty(job, true);
    return t;
  }

  /**
   * Why the store would refuse a change to a job for its size (its next config version and job row, a
   * workflow's opaque data, other writes), or undefined: checked before the change is applied, since a
   * write this job manager cannot take back that then fails ends the process.
   */
  tooLargeToStore(
    job: JobEntry,
    change: { config?: JobConfig; opaqueData?: string; writes?: StoreWrite[] },
  ): Error | undefined {
    const { config = job.config, opaqueData, writes = [] } = change;
    const batch: StoreWrite[] = [{ kind: "job.put", job: { ...snapshot(job), config } }, ...writes];
    if (change.config) {
      batch.push({ kind: "job.config", jobId: job.jobId, version: job.configVersion + 1, config });
    }
    if (opaqueData !== undefined) {
      const update = { updateId: "", jobId: job.jobId, opaqueData } as UpdateRecord;
      batch.push({ kind: "update.put", update });
    }
    return this.deps.store.tooLarge?.(batch);
  }

  /** Sets a new job config version (elastic resize, updates); returns the version number. */
  addConfigVersion(job: JobEntry, config: JobConfig): number {
    const v = job.configVersion + 1;
    job.versions.set(v, version(config));
    job.config = config;
    job.configVersion = v;
    this.#writes.push({ kind: "job.config", jobId: job.jobId, version: v, config });
    this.markDirty(job, true);
    return v;
  }

  /**
   * Stops a job's tasks (all, or the given instances); returns the instances it acted on. The new goals
   * are written at the caller's flush, which an API call waits on before it answers.
   */
  stopTasks(job: JobEntry, instances?: number[]): number[] {
    const acted: number[] = [];
    const targets = instances ? instances.map((i) => job.tasks.get(i)) : [...job.tasks.values()];
    if (!instances) {
      job.runtime.goalState = "KILLED";
      job.runtime.desiredStateVersion = (job.runtime.desiredStateVersion ?? 1) + 1;
      if (!isTerminalJobState(job.runtime.state)) job.runtime.state = "KILLING";
      this.markDirty(job, true);
    }
    for (const task of targets) {
      if (!task || task.goalState === "DELETED") continue;
      // A task stop leaves alone a task that has ended with nothing left to run (succeeded, out of retries):
      // its goal made KILLED, a later start would run it again. One that ended and would run again (a retry
      // due, a service's restart) is stopped, and said to be.
      const ended = isTerminalTaskState(task.state);
      if (instances && ended && !this.#hasWork(task)) continue;
      // A stop ends an in-place update's host hint (Peloton's stop clears DesiredHost): a later start or move
      // of the task would otherwise wait for a host that may be gone.
      if (task.goalState !== "KILLED" || task.desiredHost !== undefined) {
        task.goalState = "KILLED";
        task.desiredHost = undefined;
        // Stored with the job's goal in the same batch: a stop answered as done survives a restart before
        // the kill, and a restart before the stop actions run still stops.
        this.putTask(task);
        // Stopped, it is no longer unavailable (Peloton's getInstanceAvailability: KILLED): a drain its being
        // down held goes now, not when something else about the job changes.
        if (this.#drains.size) this.#drains.changed(job);
      }
      if (ended) {
        if (instances) acted.push(task.instanceId);
        continue;
      }
      acted.push(task.instanceId);
      this.taskEngine.enqueue(task);
    }
    return acted;
  }

  /**
   * The job's goal back to its type's default (a stopped job started again); written at the next flush. A job
   * still being stopped is no longer KILLING (Peloton's Start sets it PENDING): its state is derived anew as
   * its tasks run again. Its own goal-state actions run again: a daemon covers the hosts that came or went
   * while it was stopped.
   */
  restoreJobGoal(job: JobEntry): void {
    job.runtime.goalState = defaultJobGoal(job.config.type);
    job.runtime.desiredStateVersion = (job.runtime.desiredStateVersion ?? 1) + 1;
    if (job.runtime.state === "KILLING") job.runtime.state = "PENDING";
    this.markDirty(job, true);
    this.jobEngine.enqueue(job);
  }

  /**
   * Starts stopped tasks again (all, or the given instances); written at the caller's flush. A stopped job's
   * goal comes back with any of its tasks, as Peloton's TaskManager.Start sets it: left KILLED, the job's own
   * goal-state actions would stop them again (and a daemon would not follow its hosts).
   */
  startTasks(job: JobEntry, instances?: number[]): number[] {
    const acted: number[] = [];
    const goal = defaultTaskGoal(job.config.type);
    if (!instances || job.runtime.goalState === "KILLED") this.restoreJobGoal(job);
    for (const i of instances ?? [...job.tasks.keys()]) {
      const task = job.tasks.get(i);
      if (!task || task.goalState === "DELETED") continue;
      if (task.goalState === goal && task.state !== "INITIALIZED") continue;
      task.goalState = goal;
      task.failureCount = 0;
      // A stopped task comes back as a new run; so does one still being killed (Peloton's Start regenerates
      // the task's run): the kill's end then starts the new run rather than count as the task's failure.
      if (isTerminalTaskState(task.state) || task.state === "KILLING" || task.state === "PREEMPTING") {
        task.desiredRunId = task.runId + 1;
      }
      // An instance a rolling create or update left unstarted is started now.
      if (awaitsWorkflow(task)) task.message = undefined;
      acted.push(i);
      this.putTask(task);
      this.taskEngine.enqueue(task);
    }
    return acted;
  }

  /**
   * Runs tasks again under a new run id (all, or the given instances; deleted ones are left alone); written at
   * the caller's flush. Returns the instances restarted.
   */
  restartTasks(job: JobEntry, instances?: number[]): number[] {
    const restarted: number[] = [];
    for (const i of instances ?? [...job.tasks.keys()]) {
      const t = job.tasks.get(i);
      if (!t || t.goalState === "DELETED") continue;
      t.desiredRunId = t.runId + 1;
      this.putTask(t);
      this.taskEngine.enqueue(t);
      restarted.push(i);
    }
    return restarted;
  }

  /**
   * Whether work is left for the task, stored with it so that recovery loads its job even once the job has
   * ended: a run not ended, one asked for (a restart, an update), or an ended run its goal has run again
   * (a service's, a preempted task's, a batch task's failure within its retries), as the task goal-state
   * table does.
   */
  #hasWork(task: TaskRecord): boolean {
    if (!isTerminalTaskState(task.state) || (task.desiredRunId ?? 0) > task.runId) return true;
    const goal = task.goalState;
    if (goal === "KILLED" || goal === "DELETED") return false;
    if (task.desiredConfigVersion !== undefined && task.desiredConfigVersion !== task.configVersion) {
      return true;
    }
    if (goal === "RUNNING" || goal === "PREEMPTING") return true;
    if (goal !== "SUCCEEDED" || task.state === "SUCCEEDED") return false;
    const job = this.jobs.get(task.jobId);
    return job !== undefined && retriesLeft(job, task, this.config.maxSystemFailureAttempts);
  }

  /** Marks a job's runtime for re-derivation (and storing) at the next flush. */
  markDirty(job: JobEntry, force = false): void {
    this.#dirty.add(job);
    if (force) this.#forced.add(job);
  }

  /**
   * Issues the batches, writes and job-state updates collected while handling one input. `onDurable` runs
   * once they are stored, or with the error that stopped them (at once when there is nothing to write).
   */
  flush(onDurable?: (err?: Error) => void): void {
    if (this.#drains.size) this.#recheckDrains();
    // First, so the messages of gang members held back are stored with this batch.
    if (this.#gangs.length || this.#heldGangs.size) this.#sendGangs();
    // One snapshot per changed task: the states it went through meanwhile all end in this batch.
    for (const task of this.#dirtyTasks) {
      this.#writes.push({ kind: "task.put", task: { ...task, hasWork: this.#hasWork(task) } });
    }
    this.#dirtyTasks.clear();
    for (const job of this.#dirty) this.#refreshJobState(job, this.#forced.has(job));
    this.#dirty.clear();
    this.#forced.clear();
    if (this.#released.size) this.#dropReleased();
    if (this.#drops.length) {
      this.deps.transport.send(this.deps.resmgr, { kind: "drop-tasks", taskIds: this.#drops });
      this.#drops = [];
    }
    if (this.#heldDrains.length) {
      this.deps.transport.send(this.deps.resmgr, { kind: "drains-held", taskIds: this.#heldDrains });
      this.#heldDrains = [];
    }
    // Locked down, kills wait here until unlocked.
    if (this.#kills.length && !this.locks.has("Kill")) {
      this.deps.transport.send(this.deps.hostmgr, { kind: "kill-tasks", tasks: this.#kills });
      this.#kills = [];
    }
    // A task is launched only once it is stored LAUNCHING, as Peloton writes LAUNCHED first: a launch that
    // ran while its write was lost would, after a restart, launch the same run id again (a duplicate).
    const launches = this.#launches;
    this.#launches = [];
    // Their deletes are among this turn's writes, so a destroy never goes out for a volume still listed.
    const destroys = this.#destroys.map(({ volumeId, hostname }) => ({ volumeId, hostname }));
    this.#destroys = [];
    if (this.#writes.length) {
      const lost = this.deps.onLostWrite;
      this.deps.store.write(
        this.#writes,
        onDurable || lost || launches.length || destroys.length
          ? (err) => {
            onDurable?.(err);
            if (err) return lost?.(err);
            this.#sendLaunches(launches);
            if (destroys.length) {
              this.deps.transport.send(this.deps.hostmgr, { kind: "destroy-volumes", volumes: destroys });
            }
          }
          : undefined,
      );
      this.#writes = [];
    } else {
      // Placements left with nothing to launch: their leases go back at once.
      this.#sendLaunches(launches);
      // Nothing new to store, but what this answers may rest on writes still in flight (a second stop
      // while the first one's writes are out): an empty batch is done once every earlier one is.
      if (onDurable) this.deps.store.write([], onDurable);
    }
  }

  #sendLaunches(launches: Extract<Message, { kind: "launch-tasks" }>[]): void {
    // Their writes may be stored after a stop began, which launches nothing more (`stopLaunching`).
    if (this.#launchesStopped) return;
    for (const m of launches) this.deps.transport.send(this.deps.hostmgr, m);
  }

  /** Actions that were running when their job was released may still collect work for it. */
  #dropReleased(): void {
    const kept = (jobId: string) => !this.#released.has(jobId);
    // A volume delete names no job: it goes with its destroy, which does.
    const dropped = new Set(this.#destroys.filter((d) => !kept(d.jobId)).map((d) => d.volumeId));
    this.#destroys = this.#destroys.filter((d) => kept(d.jobId));
    this.#writes = this.#writes.filter((w) => {
      if (w.kind === "volume.delete") return !dropped.has(w.volumeId);
      const id = writeJobId(w);
      return id === undefined || kept(id);
    });
    this.#gangs = this.#gangs.filter((t) => kept(t.jobId));
    for (const jobId of this.#heldGangs.keys()) if (!kept(jobId)) this.#heldGangs.delete(jobId);
    this.#kills = this.#kills.filter((k) => kept(parseMesosTaskId(k.taskId)?.jobId ?? ""));
    this.#drops = this.#drops.filter((id) => kept(parseMesosTaskId(id)?.jobId ?? ""));
  }

  // -------------------------------------------------------------------------------------------
  // Task operations used by the goal-state actions

  /** Queues a task for the resource manager (PENDING); gang members are sent together at flush. */
  enqueueTask(job: JobEntry, task: TaskRecord): void {
    const rm = buildRmTask(job, task, taskConfigOf(job, task));
    this.transition(job, task, "PENDING", this.now(), {});
    this.#gangs.push(rm);
  }

  /** Drops a not-yet-launched task at the resource manager. */
  dropTask(task: TaskRecord): void {
    this.#drops.push(mesosTaskId(task.jobId, task.instanceId, task.runId));
  }

  /**
   * Kills the launched runs of a job just deleted with force, and holds its id until they ended (or their
   * kill grace and a minute more passed: an end that never comes does not hold it for good).
   */
  killDeleted(job: JobEntry, tasks: TaskRecord[]): void {
    const now = this.now();
    for (const [id, d] of this.#deleting) if (d.untilMs <= now) this.#deleting.delete(id);
    let graceMs = 0;
    const runs = new Set<string>();
    for (const t of tasks) {
      graceMs = Math.max(graceMs, killGraceMs(taskConfigOf(job, t)));
      runs.add(mesosTaskId(t.jobId, t.instanceId, t.runId));
      this.killTask(job, t);
    }
    if (runs.size) this.#deleting.set(job.jobId, { runs, untilMs: now + graceMs + 60_000 });
  }

  /** Whether a job deleted with force still has runs being killed (`killDeleted`): it cannot be created yet. */
  stillDeleting(jobId: string): boolean {
    const d = this.#deleting.get(jobId);
    if (d && d.untilMs <= this.now()) this.#deleting.delete(jobId);
    return this.#deleting.has(jobId);
  }

  /** Kills a launched task with its grace period (or the given one). */
  killTask(job: JobEntry, task: TaskRecord, gracePeriodMs = killGraceMs(taskConfigOf(job, task))): void {
    this.#kills.push({
      taskId: mesosTaskId(task.jobId, task.instanceId, task.runId),
      gracePeriodMs,
      hostname: task.hostname,
    });
  }

  /** Kills a task already being killed, with the rest of the grace period its kill started with. */
  #killAgain(job: JobEntry, task: TaskRecord): void {
    const graceMs = killGraceMs(taskConfigOf(job, task));
    const elapsedMs = Math.max(0, this.now() - (task.stateSinceMs ?? this.now()));
    this.killTask(job, task, Math.max(0, graceMs - elapsedMs));
  }

  /** When a task KILLING (or PREEMPTING) since `stateSinceMs` is due its next kill (`kill_resend`). */
  killDeadline(job: JobEntry, task: TaskRecord): number {
    const first = this.killLateAt(job, task), now = this.now();
    if (now < first) return first;
    return first + (Math.floor((now - first) / this.config.killResendMs) + 1) * this.config.killResendMs;
  }

  /** From when a task KILLING (or PREEMPTING) since `stateSinceMs` is late: its first kill is sent again. */
  killLateAt(job: JobEntry, task: TaskRecord): number {
    return (task.stateSinceMs ?? this.now()) + killGraceMs(taskConfigOf(job, task)) +
      this.config.killResendMs;
  }

  killOrphan(taskId: string, hostname?: string): void {
    this.#kills.push(hostname ? { taskId, gracePeriodMs: 0, hostname } : { taskId, gracePeriodMs: 0 });
  }

  /** Starts a new run of a task: the old run goes to history, the new one runs the desired config. */
  newRun(job: JobEntry, task: TaskRecord): void {
    const now = this.now();
    if (task.state !== "INITIALIZED") {
      task.history = [...(task.history ?? []), {
        runId: task.runId,
        state: task.state,
        hostname: task.hostname,
        agentId: task.agentId,
        startTimeMs: task.startTimeMs,
        completionTimeMs: task.completionTimeMs,
        exitCode: task.exitCode,
        message: task.message,
        reason: task.reason,
        configVersion: task.configVersion,
        goalState: task.goalState,
      }];
      task.runId++;
    }
    if (task.desiredRunId !== undefined && task.desiredRunId > task.runId) task.runId = task.desiredRunId;
    task.desiredRunId = undefined;
    if (this.config.recordEvents && task.runId > KEPT_EVENT_RUNS) {
      // The events of an instance's newest runs are kept, as Peloton's archiver (`deletePodEvents`) keeps
      // 100: a service in a crash loop, or updated for years, would otherwise add to them for ever.
      const { jobId, instanceId } = task;
      this.#writes.push({
        kind: "task.events.delete",
        jobId,
        instanceId,
        runId: task.runId - KEPT_EVENT_RUNS,
      });
    }
    if (task.desiredConfigVersion !== undefined) task.configVersion = task.desiredConfigVersion;
    task.desiredConfigVersion = undefined;
    task.startTimeMs = task.completionTimeMs = task.exitCode = undefined;
    task.hostname =
      task.agentId =
      task.ports =
      task.healthy =
      task.terminationReason =
        undefined;
    this.transition(job, task, "INITIALIZED", now, {});
    this.taskEngine.enqueue(task);
  }

  /** Removes an instance for good (a job shrank, a daemon's host left). */
  deleteTask(job: JobEntry, task: TaskRecord): void {
    if (job.tasks.get(task.instanceId) !== task) return;
    job.tasks.delete(task.instanceId);
    const stats = job.runtime.taskStats;
    stats[task.state] = Math.max(0, (stats[task.state] ?? 1) - 1);
    if (job.config.type === "DAEMON") job.config = { ...job.config, instanceCount: job.tasks.size };
    else {
      // The instance may be added back (the job grows again, a rollback): its runs so far are not reused.
      const lastRun = Math.max(task.runId, task.desiredRunId ?? 0);
      job.runtime.removedRuns = { ...job.runtime.removedRuns, [task.instanceId]: lastRun };
    }
    this.#dirtyTasks.delete(task);
    this.#writes.push({ kind: "task.delete", jobId: job.jobId, instanceId: task.instanceId });
    this.#releaseVolume(job, task);
    this.markDirty(job, true);
    this.#taskChanged(job, task);
  }

  /**
   * A removed instance's volume goes with it, as a deleted job's do: its record now, its data on its host
   * once that is stored. An instance added back later is a new one and gets a new volume (a new id, so
   * that a destroy lost on its way can never bring the old data back).
   */
  #releaseVolume(job: JobEntry, task: TaskRecord): void {
    if (!task.volumeId) return;
    this.#writes.push({ kind: "volume.delete", volumeId: task.volumeId });
    if (task.requiredHost) {
      this.#destroys.push({ jobId: job.jobId, volumeId: task.volumeId, hostname: task.requiredHost });
    }
  }

  /** Bumps the task's version; its snapshot is written at the next flush. */
  putTask(task: TaskRecord): void {
    task.version++;
    this.#dirtyTasks.add(task);
  }

  write(w: StoreWrite): void {
    this.#writes.push(w);
  }

  #transitionCounter(state: TaskState): Counter {
    const n = TASK_STATES[state];
    return this.#transitions[n] ??= this.deps.metrics.counter("peloton_jobmgr_task_transitions_total", {
      state,
    });
  }

  transition(job: JobEntry, task: TaskRecord, state: TaskState, timeMs: number, f: TransitionFields): void {
    if (this.#recovered.size) this.#recovered.delete(task);
    const stats = job.runtime.taskStats;
    stats[task.state] = Math.max(0, (stats[task.state] ?? 1) - 1);
    stats[state] = (stats[state] ?? 0) + 1;
    task.state = state;
    task.stateSinceMs = timeMs;
    this.#transitionCounter(state).inc();
    if (f.hostname !== undefined) task.hostname = f.hostname;
    if (f.agentId !== undefined) task.agentId = f.agentId;
    if (f.ports !== undefined) task.ports = f.ports;
    if (f.healthy !== undefined) task.healthy = f.healthy;
    task.message = f.message;
    task.reason = f.reason;
    if (f.exitCode !== undefined) task.exitCode = f.exitCode;
    if (state === "RUNNING" && task.startTimeMs === undefined) task.startTimeMs = timeMs;
    if (isTerminalTaskState(state)) task.completionTimeMs = timeMs;
    // Evaluated again once its kill should have ended it (`kill_resend`).
    if (state === "KILLING" || state === "PREEMPTING") {
      this.taskEngine.enqueue(task, this.killDeadline(job, task));
    }
    this.putTask(task);
    if (this.config.recordEvents) {
      this.#writes.push({ kind: "task.event", event: taskEventOf(task, timeMs) });
    }
    this.markDirty(job);
    this.#taskChanged(job, task);
  }

  /**
   * Since when this process knows the task has been in its state: `stateSinceMs`, except for a task recovered
   * launched, which counts from when reconciliation confirmed it RUNNING (undefined until then).
   */
  knownSinceMs(task: TaskRecord): number | undefined {
    return this.#recovered.has(task) ? this.#recovered.get(task) : task.stateSinceMs ?? 0;
  }

  /** A recovered task reconciliation reports RUNNING: its run counts from now; its workflow looks again. */
  #confirmRecovered(job: JobEntry, task: TaskRecord, timeMs: number): void {
    if (!this.#recovered.has(task) || this.#recovered.get(task) !== undefined) return;
    this.#recovered.set(task, timeMs);
    this.#taskChanged(job, task);
  }

  /**
   * The job's workflow looks again when the task is one it waits for (a new reason can fail it:
   * `pinnedWithoutRoom`). One no workflow waits for (none runs, or it ended before the task's run was placed)
   * that its volume's host has no room for at a config it was moved to goes back to the config of its last
   * placed run (`Workflows.backIfNoRoom`), rather than wait for good.
   */
  #lookAgain(job: JobEntry, task: TaskRecord): void {
    const u = job.runtime.updateId ? this.updates.get(job.runtime.updateId) : undefined;
    if (u && this.workflows.watches(u, task.instanceId)) this.updateEngine.enqueue(u);
    // Every task change comes here: only a volume-pinned one is looked at further.
    else if (
      task.requiredHost !== undefined && task.volumeId !== undefined &&
      job.tasks.get(task.instanceId) === task
    ) {
      this.workflows.backIfNoRoom(job, task);
    }
  }

  /** Workflows and job rules that watch tasks learn about the change. */
  #taskChanged(job: JobEntry, task: TaskRecord): void {
    if (this.#drains.size) this.#drains.changed(job);
    if (this.#api.watches.size) this.#api.watches.podChanged(job, task);
    this.#lookAgain(job, task);
    if (isTerminalTaskState(task.state) && job.config.sla.maximumRunningInstances > 0) {
      this.jobEngine.enqueue(job);
    }
  }

  /** Finds the task a Mesos task id names; `stale` when the id is of an older run. */
  find(taskId: string, allowStale = false): { job: JobEntry; task: TaskRecord; stale?: boolean } | undefined {
    // Every status and placement comes through here: the id is split in place, not parsed into an object.
    const runAt = taskId.lastIndexOf("-");
    const instanceAt = runAt > 0 ? taskId.lastIndexOf("-", runAt - 1) : -1;
    if (instanceAt < 1) return undefined;
    const runId = Number(taskId.slice(runAt + 1)), instanceId = Number(taskId.slice(instanceAt + 1, runAt));
    if (runAt === instanceAt + 1 || runAt === taskId.length - 1) return undefined;
    if (!Number.isInteger(runId) || !Number.isInteger(instanceId)) return undefined;
    const job = this.jobs.get(taskId.slice(0, instanceAt));
    const task = job?.tasks.get(instanceId);
    if (!job || !task) return undefined;
    if (task.runId !== runId) return allowStale ? { job, task, stale: true } : undefined;
    return { job, task };
  }

  // -------------------------------------------------------------------------------------------
  // Inputs from the resource manager and the host manager

  #pollPlacements(): void {
    if (!this.#running || this.#launchesStopped || this.locks.has("Launch")) return;
    const gen = this.#pollGen;
    if (this.#pollTimer !== undefined) this.deps.clock.cancelTimer(this.#pollTimer);
    this.#pollTimer = this.deps.clock.setTimer(this.config.placementPollRetryMs, () => {
      this.#pollTimer = undefined;
      if (gen !== this.#pollGen) return;
      this.#pollGen++;
      this.#pollPlacements();
    });
    this.call<Extract<ReplyMessage, { kind: "placements" }>>(
      this.deps.resmgr,
      (reqId) => ({
        kind: "get-placements",
        reqId,
        replyTo: this.deps.self,
        limit: this.config.placementPollLimit,
        timeoutMs: this.config.placementPollTimeoutMs,
      }),
      (reply) => {
        this.#onPlacements(reply);
        if (gen === this.#pollGen) this.#pollPlacements();
      },
    );
  }

  /**
   * What the resource manager handed over in one `placements` reply. It has marked those tasks LAUNCHING
   * and will not send them again, so a reply to a poll no one waits for any more (delivered twice, or
   * answering a poll sent again to a new leader) is still carried out; only the next poll hangs on the call.
   */
  #onPlacements(reply: Extract<ReplyMessage, { kind: "placements" }>): void {
    if (this.#launchesStopped) {
      // A stop began: what was placed waits for the next start, which queues it again.
      this.#onRmChanges(reply.changes);
      return;
    }
    // A poll answered after Launch was locked down: launched once it is lifted.
    if (this.locks.has("Launch") && reply.placements.length) {
      this.#heldPlacements.push({ ...reply, changes: [], preemptions: [] });
      reply = { ...reply, placements: [] };
    }
    this.#onRmChanges(reply.changes);
    for (const p of reply.placements) this.#launch(p);
    if (reply.preemptions?.length) this.#preempt(reply.preemptions);
  }

  #onRmChanges(changes: RmStateChange[]): void {
    for (const c of changes) {
      const found = this.find(c.taskId);
      if (!found) continue;
      const { job, task } = found;
      if (!(task.state in PRE_LAUNCH_RANK) || task.state === "INITIALIZED" || task.goalState === "KILLED") {
        continue;
      }
      if (!(c.state in PRE_LAUNCH_RANK) && c.state !== "KILLED") continue;
      if (c.state === "KILLED") {
        task.goalState = "KILLED";
        this.transition(job, task, "KILLED", c.timeMs, {
          reason: "REASON_ENQUEUE_FAILED",
          message: c.reason,
        });
      } else if (c.state !== task.state) {
        this.transition(job, task, c.state, c.timeMs, c.reason ? { message: c.reason } : {});
      } else if (c.reason && c.reason !== task.message) this.#explain(task, c.reason, c.timeMs);
    }
  }

  /**
   * A new reason for a task still in its state (placement keeps failing): shown and kept as an event. A
   * reason can fail the task's run in its workflow, or send it back to its last placed config (`#lookAgain`).
   */
  #explain(task: TaskRecord, message: string, timeMs: number): void {
    task.message = message;
    this.putTask(task);
    const job = this.jobs.get(task.jobId);
    if (job) this.#lookAgain(job, task);
    if (!this.config.recordEvents) return;
    this.#writes.push({ kind: "task.event", event: taskEventOf(task, timeMs) });
  }

  /** Launches the tasks of one placement; a placement with nothing left to launch returns its lease. */
  #launch(p: HostPlacement): void {
    const now = this.now();
    const specs: LaunchSpec[] = [];
    for (const pt of p.tasks) {
      const found = this.find(pt.taskId);
      if (!found) continue;
      const { job, task } = found;
      if (!(task.state in PRE_LAUNCH_RANK) || task.goalState !== defaultTaskGoal(job.config.type)) continue;
      const tc = taskConfigOf(job, task);
      this.transition(job, task, "LAUNCHING", now, {
        hostname: p.hostname,
        agentId: p.agentId,
        ports: pt.ports,
      });
      if (tc.volume && this.#actions.volumePlaced(job, task, tc.volume, p.hostname)) {
        this.#volumeFirstRuns.set(pt.taskId, task.volumeId!);
      }
      specs.push(buildLaunchSpec(job, task, tc, p, pt.ports, pt.taskId));
    }
    this.#launches.push({
      kind: "launch-tasks",
      leaseId: p.leaseId,
      hostname: p.hostname,
      tasks: specs,
      ...(p.parts !== undefined ? { parts: p.parts } : {}),
    });
  }

  /**
   * Evicts running tasks the resource manager wants back: killed with their grace period, then run
   * again (a preempted batch task goes back to the queue), or left KILLED with `killOnPreempt`.
   * Tasks not yet launched are the resource manager's to move back to PENDING.
   */
  #preempt(list: Preemption[]): void {
    /** Each job's unavailable instances, counted once per batch and kept up to date as it drains. */
    let unavailable: Map<JobEntry, number> | undefined;
    for (const p of list) {
      const found = this.find(p.taskId);
      if (!found) continue;
      const { job, task } = found;
      if (task.state in PRE_LAUNCH_RANK || isTerminalTaskState(task.state) || task.state === "KILLING") {
        continue;
      }
      if (task.state === "PREEMPTING") {
        // Chosen again after the resource manager's preempting timeout: the kill may have been lost.
        this.killTask(job, task);
        continue;
      }
      if (task.goalState !== defaultTaskGoal(job.config.type)) continue;
      const limit = p.reason === "PREEMPTION_REASON_HOST_MAINTENANCE" ? maintenanceLimit(job) : 0;
      if (limit > 0 && availability(task) === "AVAILABLE") {
        unavailable ??= new Map();
        const down = unavailable.get(job) ?? unavailableCount(job);
        if (down >= limit) {
          this.#holdDrain(job, task, p.taskId);
          continue;
        }
        unavailable.set(job, down + 1);
      }
      this.#evict(job, task, p.reason);
    }
  }

  /** Kills a running task for the resource manager: run again elsewhere unless its policy kills it for good. */
  #evict(job: JobEntry, task: TaskRecord, reason: Preemption["reason"]): void {
    const tc = taskConfigOf(job, task);
    task.goalState = tc.preemptionPolicy?.killOnPreempt ? "KILLED" : "PREEMPTING";
    const maintenance = reason === "PREEMPTION_REASON_HOST_MAINTENANCE";
    task.terminationReason = maintenance ? "KILLED_HOST_MAINTENANCE" : "PREEMPTED_RESOURCES";
    if (maintenance) this.maintenanceEvictions++;
    this.#drains.forgetTask(job, task);
    this.transition(job, task, "PREEMPTING", this.now(), { reason, message: "Task preempted" });
    this.killTask(job, task);
  }

  /**
   * A drain the job's SLA holds back: the task runs on until one of its job's instances is back, saying
   * why from this flush's recheck on (`#sayHeld`).
   */
  #holdDrain(job: JobEntry, task: TaskRecord, taskId: string): void {
    this.#drains.hold(job, task, { taskId, hostname: task.hostname ?? "" });
    this.#heldDrains.push(taskId);
  }

  /**
   * Says why a job's held drains wait: which instances are down and, for one pinned to a host in
   * maintenance, that it comes back only with that host (else a drain that never ends shows no cause).
   */
  #sayHeld(job: JobEntry, still: { task: TaskRecord; w: { hostname: string } }[], limit: number): void {
    const reason = holdReason(job, limit, (h) => this.daemonHosts.stateOf(h));
    for (const { task, w } of still) {
      const message = holdMessage(w.hostname, reason);
      if (task.message !== message) this.#explain(task, message, this.now());
    }
  }

  /**
   * Drains the SLA held back that it allows now; drops those whose run ended or whose host is back UP (a
   * task still running there no longer says it waits to be drained).
   */
  #recheckDrains(): void {
    this.#drains.recheck(
      (_job, task, w) => {
        if (
          !task || task.state !== "RUNNING" || task.goalState !== "RUNNING" ||
          mesosTaskId(task.jobId, task.instanceId, task.runId) !== w.taskId
        ) return true;
        if (this.daemonHosts.stateOf(w.hostname) !== "HOST_STATE_UP") return false;
        if (task.message?.includes(SLA_HOLD_TEXT)) this.#explain(task, "", this.now());
        return true;
      },
      (job, task) => this.#evict(job, task, "PREEMPTION_REASON_HOST_MAINTENANCE"),
      (job, still, limit) => this.#sayHeld(job, still, limit),
    );
  }

  #onStatuses(statuses: MappedTaskStatus[]): void {
    for (const s of statuses) {
      const found = this.find(s.taskId, true);
      let state = s.pelotonState, message = s.message;
      if (!found || found.stale) {
        if (!isTerminalTaskState(state)) this.killOrphan(s.taskId, s.hostname);
        else if (!found && this.#deleting.size) this.#deletedRunEnded(s.taskId);
        continue;
      }
      const { job, task } = found;
      if (this.#volumeFirstRuns.size) this.#volumeNotMade(task, s);
      if (isTerminalTaskState(task.state)) {
        // A run recorded ended that is alive (a stop's kill overtook its launch and was answered "unknown",
        // or it was written off lost and came back): an orphan, killed as Peloton's task event handler does.
        // One kill per such status; an ended run's end told again (a reconciliation echo) is left alone.
        if (!isTerminalTaskState(state)) this.killOrphan(s.taskId, s.hostname);
        continue;
      }
      if (task.state === "RUNNING" && state === "RUNNING") this.#confirmRecovered(job, task, s.timeMs);
      if ((task.state === "KILLING" || task.state === "PREEMPTING") && !isTerminalTaskState(state)) continue;
      if (state === "LOST" && task.goalState === "KILLED") {
        // Being stopped when it was lost (its agent went away, or this scheduler restarted and reconciliation
        // no longer knows it): it ended as the operator asked, KILLED, as Peloton records it; so does its job.
        state = "KILLED";
        message = `Stopped task LOST event: ${s.message ?? ""}`;
      }
      const healthy = s.healthy === undefined ? undefined : s.healthy ? "HEALTHY" : "UNHEALTHY";
      if (state === task.state) {
        // Same state: only a health change (or a reconciliation echo) to record.
        if (
          state === "RUNNING" && s.reason !== "REASON_RECONCILIATION" && task.startTimeMs !== undefined &&
          s.timeMs < task.startTimeMs
        ) {
          // A task adopted after a restart counts from when reconciliation confirmed it, until its agent's
          // own RUNNING (sent again, as it was never acknowledged) tells when it really started.
          task.startTimeMs = s.timeMs;
          this.putTask(task);
        }
        if (healthy && healthy !== task.healthy) {
          task.healthy = healthy;
          this.putTask(task);
          this.#taskChanged(job, task);
        }
        continue;
      }
      const tc = taskConfigOf(job, task);
      const health = healthy ??
        (state === "RUNNING" ? (tc.healthCheck?.enabled ? "HEALTH_UNKNOWN" : "DISABLED") : undefined);
      this.transition(job, task, state, s.timeMs, {
        hostname: s.hostname || undefined,
        agentId: s.agentId || undefined,
        message,
        reason: statusReason(s),
        exitCode: s.exitCode,
        healthy: health,
      });
      if (isTerminalTaskState(state)) this.#onEnded(job, task, s);
      else if (state === "LAUNCHED" || state === "STARTING") {
        this.taskEngine.enqueue(task, s.timeMs + this.config.launchTimeoutMs);
      } else if (state === "RUNNING" && job.config.sla.maxRunningTime > 0) {
        this.taskEngine.enqueue(task, task.startTimeMs! + job.config.sla.maxRunningTime * 1000);
      } else if (state === "RUNNING") {
        // Running ends the launch timeout (Peloton re-evaluates the task, which drops that deadline);
        // a million running tasks would otherwise each keep one queued for three hours. Not a stop asked
        // for while the task was starting (a job stop, a restart, an update, a removal): its evaluation may
        // still be queued, and dropped with the timeout the task would run on, its goal unmet and nothing
        // left to evaluate it again.
        if (taskActions(task).includes("stop")) this.taskEngine.enqueue(task);
        else this.taskEngine.delete(taskKey(task));
      }
    }
  }

  /**
   * A stateful task's first run dropped before the backend launched it (LOST, REASON_INVALID_OFFERS, while
   * LAUNCHING: no offer of the host could make its volume, say only other volumes' reservations were free):
   * the volume was never made, so its record goes (no destroy: there is nothing to destroy) and the task is
   * pinned to that host no longer. The next run is placed afresh, and the lost run is not the task's failure.
   */
  #volumeNotMade(task: TaskRecord, s: MappedTaskStatus): void {
    const volumeId = this.#volumeFirstRuns.get(s.taskId);
    if (volumeId === undefined) return;
    this.#volumeFirstRuns.delete(s.taskId);
    if (
      s.pelotonState !== "LOST" || s.reason !== "REASON_INVALID_OFFERS" || task.state !== "LAUNCHING" ||
      task.volumeId !== volumeId || mesosTaskId(task.jobId, task.instanceId, task.runId) !== s.taskId
    ) return;
    this.write({ kind: "volume.delete", volumeId });
    task.volumeId = undefined;
    task.requiredHost = undefined;
    this.#neverLaunched.add(s.taskId);
  }

  /** Counts failures (the task's own, and system ones separately) and lets the table decide. */
  #onEnded(job: JobEntry, task: TaskRecord, s: MappedTaskStatus): void {
    if (this.#neverLaunched.delete(s.taskId) && task.state === "LOST") {
      this.newRun(job, task);
      return;
    }
    const goal = task.goalState;
    if (
      s.reason === SLACK_PREEMPTED_REASON && goal !== "KILLED" && goal !== "DELETED" && goal !== "PREEMPTING"
    ) {
      // The agent's QoS controller took a revocable task's slack back: a preemption, not a failure.
      task.goalState = taskConfigOf(job, task).preemptionPolicy?.killOnPreempt ? "KILLED" : "PREEMPTING";
      task.terminationReason = "PREEMPTED_RESOURCES";
    }
    const expected = task.goalState === "KILLED" || task.goalState === "DELETED" ||
      task.goalState === "PREEMPTING" ||
      (task.desiredConfigVersion !== undefined && task.desiredConfigVersion !== task.configVersion) ||
      (task.desiredRunId !== undefined && task.desiredRunId !== task.runId);
    if (
      !expected && task.state === "LOST" &&
      ((s.reason !== undefined && RESTART_LOSS_REASONS.has(s.reason)) || isMaintenanceLoss(s))
    ) {
      // Not the task's failure: a new run now, before the job's state is derived, so the job never looks
      // FAILED and the restart throttling never sees it. The lost run stays in the task's history. (A task
      // pinned to the host, by its volume, waits for the host to be back.)
      this.newRun(job, task);
      return;
    }
    if (!expected && task.state !== "SUCCEEDED") {
      const ranLong = task.startTimeMs !== undefined &&
        s.timeMs - task.startTimeMs >= this.config.failureResetMs;
      if (task.goalState === "RUNNING" && ranLong) task.failureCount = 0;
      task.failureCount++;
      if (task.state === "LOST" || (s.reason !== undefined && SYSTEM_FAILURE_REASONS.has(s.reason))) {
        task.terminationReason = "SYSTEM_FAILURE";
      }
    }
    this.taskEngine.enqueue(task);
  }

  /**
   * Sends the tasks enqueued since the last flush: each alone, but the members of a job's gang (its
   * instances below `minimumRunningInstances`, `gangSize`) as one gang, and only once every other member
   * still to run is among them. Members that come back one by one (a preempted gang's, killed together
   * and ending apart; a failed member retried while the others run) are held back until then, whatever
   * flush they came in, so the resource manager never admits a gang in parts. A gang with fewer members
   * left to run than its size (the others succeeded, were stopped or removed, or ran out of retries) goes
   * as the members it has. Held members are looked at again when their job changed (a member ended, was
   * stopped); one no longer PENDING on its run is let go.
   */
  #sendGangs(): void {
    const singles: Gang[] = [];
    const touched = new Set<string>();
    for (const rm of this.#gangs) {
      if (this.#released.has(rm.jobId)) continue;
      if (rm.minInstances > 1) {
        let held = this.#heldGangs.get(rm.jobId);
        if (!held) this.#heldGangs.set(rm.jobId, held = new Map());
        held.set(rm.instanceId, rm);
        touched.add(rm.jobId);
      } else singles.push({ tasks: [rm] });
    }
    this.#gangs = [];
    if (this.#heldGangs.size > touched.size) {
      for (const job of this.#dirty) if (this.#heldGangs.has(job.jobId)) touched.add(job.jobId);
    }
    // Multi-task gangs first, as Peloton's ConvertToResMgrGangs orders them.
    const gangs: Gang[] = [];
    for (const jobId of touched) {
      const gang = this.#gangReady(jobId);
      if (gang) gangs.push(gang);
    }
    if (singles.length) gangs.push(...singles);
    if (!gangs.length) return;
    this.deps.transport.send(
      this.deps.resmgr,
      this.deps.tagOwner
        ? { kind: "enqueue-gangs", gangs, owner: this.deps.self }
        : { kind: "enqueue-gangs", gangs },
    );
  }

  /**
   * The job's held gang members as one gang if none of its other members is still awaited (`gangAwaits`),
   * and no longer held; else undefined, each held member saying what it waits for.
   */
  #gangReady(jobId: string): Gang | undefined {
    const held = this.#heldGangs.get(jobId)!;
    const job = this.jobs.get(jobId);
    if (job) {
      for (const [instanceId, rm] of held) {
        const task = job.tasks.get(instanceId);
        // Stopped, deleted or run again since it was held: that run is not to be sent.
        if (task?.state !== "PENDING" || mesosTaskId(jobId, instanceId, task.runId) !== rm.taskId) {
          held.delete(instanceId);
        }
      }
    }
    if (!job || !held.size) {
      this.#heldGangs.delete(jobId);
      return undefined;
    }
    const awaited: number[] = [];
    const min = job.config.sla.minimumRunningInstances;
    for (let i = 0; i < min; i++) {
      const task = held.has(i) ? undefined : job.tasks.get(i);
      const retries = () => retriesLeft(job, task!, this.config.maxSystemFailureAttempts);
      if (task && gangAwaits(task, taskActions(task), retries)) awaited.push(i);
    }
    if (awaited.length) {
      const what = awaited.length === 1
        ? `instance ${awaited[0]} is still to run again`
        : `instances ${awaited.join(", ")} are still to run again`;
      // "waiting for the rest of its gang (minimumRunningInstances 3), admitted whole: instance 2 still ..."
      const message = `${GANG_WAIT_TEXT} (minimumRunningInstances ${min}), admitted whole: ${what}`;
      for (const instanceId of held.keys()) {
        const task = job.tasks.get(instanceId)!;
        if (task.message !== message) {
          task.message = message;
          this.putTask(task);
        }
      }
      return undefined;
    }
    this.#heldGangs.delete(jobId);
    const tasks = [...held.values()].sort((a, b) => a.instanceId - b.instanceId);
    for (const rm of tasks) {
      const task = job.tasks.get(rm.instanceId)!;
      // Its wait is the resource manager's to explain now.
      if (task.message?.startsWith(GANG_WAIT_TEXT)) {
        task.message = undefined;
        this.putTask(task);
      }
    }
    return { tasks };
  }

  /** Starts INITIALIZED tasks up to `maximumRunningInstances` (Peloton's `evaluate_sla`). */
  #evaluateSla(job: JobEntry): undefined {
    for (const t of job.tasks.values()) if (t.state === "INITIALIZED") this.taskEngine.enqueue(t);
    return undefined;
  }

  #refreshJobState(job: JobEntry, force: boolean): void {
    const rt = job.runtime;
    // Most jobs have no controller task: ask their configs before touching instance 0 (a cache miss on
    // every refresh of a large job otherwise).
    let controllerState: TaskState | undefined;
    if (mayHaveController(job)) {
      const controller = job.tasks.get(0);
      if (controller && taskConfigOf(job, controller).controller) controllerState = controller.state;
    }
    const next = deriveJobState({
      type: job.config.type,
      instanceCount: job.config.type === "DAEMON" ? job.tasks.size : job.config.instanceCount,
      current: rt.state,
      goal: rt.goalState,
      stats: rt.taskStats,
      controllerState,
    });
    // A job that is not terminal has not completed, whatever it looked like before (a recovered job).
    const staleCompletion = !isTerminalJobState(next) && rt.completionTimeMs !== undefined;
    if (staleCompletion) {
      this.#endedBefore.set(job, rt.completionTimeMs!);
      rt.completionTimeMs = undefined;
    }
    if (next === rt.state && !force && !staleCompletion) return;
    const now = this.now();
    if (rt.startTimeMs === undefined && (next === "RUNNING" || isTerminalJobState(next))) {
      // Peloton's job start time is when its first task started running: a job whose tasks ran and ended
      // within one batch of statuses goes from PENDING to its end without ever being RUNNING here.
      rt.startTimeMs = next === "RUNNING" ? now : firstStart(job);
    }
    if (isTerminalJobState(next) && !isTerminalJobState(rt.state)) {
      // A job briefly not terminal (shrunk after it ended, its removed instances being deleted) ends again
      // when it ended, not when it was shrunk (the archiver's clock, query order), unless a task ended since.
      const before = this.#endedBefore.get(job);
      this.#endedBefore.delete(job);
      const last = before === undefined ? undefined : lastCompletion(job);
      rt.completionTimeMs = before !== undefined && (last === undefined || last <= before) ? before : now;
    }
    rt.state = next;
    rt.version++;
    this.#writes.push({ kind: "job.put", job: snapshot(job) });
    if (this.#api.watches.size) this.#api.watches.jobChanged(job);
    // Not a job whose goal is still to run (a service or daemon whose instances all ended for now): it follows
    // its goal again (restarts, hosts coming back) and would be lost to memory.
    if (
      this.config.untrackTerminalJobs && isTerminalJobState(next) && isTerminalJobState(rt.goalState) &&
      !rt.updateId && allEnded(rt.taskStats)
    ) {
      this.jobs.delete(job.jobId);
      this.#drains.forget(job);
      for (const t of job.tasks.values()) this.taskEngine.delete(taskKey(t));
      this.jobEngine.delete(job.jobId);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Recovery

  /**
   * Resumes recovered (or adopted) jobs: unlaunched tasks are enqueued again, launched ones are
   * registered with the host manager (which reconciles them with the backend) and with the resource
   * manager; workflows in progress continue.
   */
  #resume(jobs: JobEntry[], updates: UpdateRecord[]): void {
    const reconcile: LaunchSpec[] = [];
    const track: { task: RmTask; state: TaskState }[] = [];
    const held = awaitingRollingStart(updates);
    for (const job of jobs) {
      for (const task of job.tasks.values()) {
        // Instances a rolling start has yet to reach wait for it, as they did before the restart.
        if (task.state === "INITIALIZED" && held.get(job.jobId)?.has(task.instanceId)) continue;
        if (isTerminalTaskState(task.state)) {
          this.taskEngine.enqueue(task);
          continue;
        }
        if (task.state in PRE_LAUNCH_RANK) {
          // The resource manager lost its queues with the restart: start from the top.
          if (task.state !== "INITIALIZED") this.transition(job, task, "INITIALIZED", this.now(), {});
        } else {
          reconcile.push(this.#launchedSpec(job, task));
          track.push({ task: buildRmTask(job, task, taskConfigOf(job, task)), state: task.state });
          this.#recovered.set(task, undefined);
          // The kill may have died with the process that sent it, and no goal-state row re-sends one: sent
          // again (after the reconcile, at the flush) with what is left of the grace period it started with.
          if (task.state === "KILLING" || task.state === "PREEMPTING") this.#killAgain(job, task);
        }
        this.taskEngine.enqueue(task);
      }
      this.markDirty(job);
      this.jobEngine.enqueue(job);
    }
    for (const u of updates) this.updateEngine.enqueue(u);
    this.#sendTrack(track);
    if (reconcile.length) {
      this.deps.transport.send(this.deps.hostmgr, { kind: "reconcile-tasks", tasks: reconcile });
    }
    this.flush();
  }

  #launchedSpec(job: JobEntry, task: TaskRecord): LaunchSpec {
    const lease = { leaseId: "", hostname: task.hostname ?? "", agentId: task.agentId ?? "", tasks: [] };
    return buildLaunchSpec(job, task, taskConfigOf(job, task), lease, task.ports ?? {});
  }

  #sendTrack(track: { task: RmTask; state: TaskState }[]): void {
    if (!track.length) return;
    this.deps.transport.send(
      this.deps.resmgr,
      this.deps.tagOwner
        ? { kind: "track-tasks", tasks: track, owner: this.deps.self }
        : { kind: "track-tasks", tasks: track },
    );
  }

  /**
   * A new resource manager holds nothing: tasks waiting for placement are queued again (same run), launched
   * ones registered so their allocation counts, and the placement poll starts over with it.
   */
  #resyncResmgr(): void {
    const now = this.now();
    const track: { task: RmTask; state: TaskState }[] = [];
    for (const job of this.jobs.values()) {
      const goal = defaultTaskGoal(job.config.type);
      for (const task of job.tasks.values()) {
        if (isTerminalTaskState(task.state) || task.state === "INITIALIZED") continue;
        const tc = taskConfigOf(job, task);
        if (!(task.state in PRE_LAUNCH_RANK)) {
          track.push({ task: buildRmTask(job, task, tc), state: task.state });
        } else if (task.goalState === goal) {
          this.#gangs.push(buildRmTask(job, task, tc));
          if (task.state !== "PENDING") this.transition(job, task, "PENDING", now, {});
        }
      }
    }
    this.#sendTrack(track);
    this.#pollGen++;
    this.#pollPlacements();
  }

  /**
   * A new host manager knows no tasks: every launched one is registered and reconciled again. A kill the
   * old one had not carried out may have died with it, as on the job manager's own restart: tasks still
   * KILLING or PREEMPTING are killed again (after the reconcile), with what is left of their grace period.
   */
  #resyncHostmgr(): void {
    const reconcile: LaunchSpec[] = [];
    const killing: [JobEntry, TaskRecord][] = [];
    for (const job of this.jobs.values()) {
      for (const task of job.tasks.values()) {
        if (isTerminalTaskState(task.state) || task.state in PRE_LAUNCH_RANK) continue;
        reconcile.push(this.#launchedSpec(job, task));
        if (task.state === "KILLING" || task.state === "PREEMPTING") killing.push([job, task]);
      }
    }
    if (reconcile.length) {
      this.deps.transport.send(this.deps.hostmgr, { kind: "reconcile-tasks", tasks: reconcile });
    }
    for (const [job, task] of killing) this.#killAgain(job, task);
    if (killing.length) this.flush();
  }
}

/** By job, the instances the START workflows in progress (a rolling create) have not taken up yet. */
function awaitingRollingStart(updates: UpdateRecord[]): Map<string, Set<number>> {
  const held = new Map<string, Set<number>>();
  for (const u of updates) {
    if (u.type !== "START" || isTerminalUpdateState(u.state)) continue;
    const taken = new Set([...u.instancesDone, ...u.instancesCurrent, ...u.instancesFailed]);
    held.set(u.jobId, new Set(u.instancesUpdated.filter((i) => !taken.has(i))));
  }
  return held;
}

/** Whether any config version of a job makes instance 0 a controller. */
function mayHaveController(job: JobEntry): boolean {
  for (const v of job.versions.values()) if (v.tasks.controller0) return true;
  return false;
}

/** Whether every task counted in a job's stats is in a terminal state. */
function allEnded(stats: Partial<Record<TaskState, number>>): boolean {
  for (const s in stats) if (stats[s as TaskState]! > 0 && !isTerminalTaskState(s as TaskState)) return false;
  return true;
}

/** The job a write belongs to (none for pools). */
function writeJobId(w: StoreWrite): string | undefined {
  switch (w.kind) {
    case "job.put":
      return w.job.jobId;
    case "task.put":
      return w.task.jobId;
    case "task.event":
      return w.event.jobId;
    case "update.put":
      return w.update.jobId;
    case "workflow.event":
      return w.event.jobId;
    case "volume.put":
      return w.volume.jobId;
    case "secret.put":
      return w.secret.jobId;
    case "job.delete":
    case "job.config":
    case "task.delete":
    case "task.events.delete":
    case "workflow.events.delete":
      return w.jobId;
    default:
      return undefined;
  }
}

/** When the job's first task started running (its current runs), or undefined if none did. */
/** When the job's last task ended, if one did. */
function lastCompletion(job: JobEntry): number | undefined {
  let last: number | undefined;
  for (const t of job.tasks.values()) {
    if (t.completionTimeMs !== undefined && (last === undefined || t.completionTimeMs > last)) {
      last = t.completionTimeMs;
    }
  }
  return last;
}

function firstStart(job: JobEntry): number | undefined {
  let first: number | undefined;
  for (const t of job.tasks.values()) {
    if (t.startTimeMs !== undefined && (first === undefined || t.startTimeMs < first)) first = t.startTimeMs;
  }
  return first;
}
