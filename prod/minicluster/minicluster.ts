/** The minicluster: a HostBackend of local agents that run command tasks as real processes. */
import type {
  BackendEvent,
  HostBackend,
  HostInfo,
  LaunchSpec,
  TaskStatus,
  VolumeRef,
} from "../../core/ports/host_backend.ts";
import type { Resources } from "../../core/model/resources.ts";
import type { MesosTaskState } from "../../core/model/states.ts";
import { healthCheckProblem } from "../../core/ports/health_check.ts";
import { launchReservation, ReservationReports } from "../../core/hostmgr/volume_holds.ts";
import {
  Agent,
  type AgentOptions,
  type Ending,
  isSafeId,
  removeVolumeDir,
  sandboxPath,
  volumePath,
} from "./agent.ts";
import { createSpawner, type Spawner, type SpawnerKind } from "./spawner.ts";
import { removeLeftSecrets, secretsProblem } from "./secrets.ts";
import { openSandboxFile } from "./sandbox_file.ts";
import { type DataDirOwnership, takeOverDataDir } from "./data_dir_owner.ts";
import { AgentIdMap } from "./agent_ids.ts";
import { DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS } from "./disk_quota.ts";
import { DEFAULT_GC_DISK_HEADROOM, filesystemUsage, gcMaxAgeMs } from "./disk_usage.ts";
import { VolumeReservationBook } from "./volume_reservations.ts";

export type { AgentOptions } from "./agent.ts";

/** What every agent gets unless its own options say otherwise. */
export interface AgentDefaults {
  resources: Resources;
  attributes: Record<string, string>;
  portRange: [number, number];
  /** How often a running task's sandbox is measured against its disk (`AgentOptions`). */
  containerDiskWatchIntervalMs: number;
}

export interface MiniclusterOptions {
  /**
   * Root of the agents' sandboxes: `<dataDir>/agents/<agentId>/tasks/<taskId>/`, and of their volumes. The
   * minicluster holds it until stopped; the constructor throws `DataDirInUseError` while another live
   * process holds it. Each host's agent id is kept there (`agent_ids.json`), so a host gets its own
   * directory back after a restart, whatever order its agent is added in.
   */
  dataDir: string;
  /** A number of default agents, or one (partial) option set per agent. */
  agents: number | Partial<AgentOptions>[];
  defaults?: Partial<AgentDefaults>;
  /**
   * The longest SIGTERM-to-SIGKILL grace `stop()` gives a live task: each gets its own kill grace period up
   * to this (default `MAX_STOP_GRACE_MS`), so a stop ends in bounded time.
   */
  stopGracePeriodMs?: number;
  /** Terminal tasks remembered for reconciliation, oldest forgotten first (Mesos keeps 1000 per framework). */
  maxCompletedTasks?: number;
  now?: () => number;
  /**
   * Start task processes from a worker thread (production): through libc's posix_spawn where it can be
   * used, else through `setsid`. Default: in this thread's event loop.
   */
  spawnInWorker?: boolean;
  /** A particular spawner (tests); overrides `spawnInWorker`. */
  spawner?: SpawnerKind;
  /**
   * How long the sandbox of a run that ended is kept before it is removed (Mesos's agent `--gc_delay`);
   * default `DEFAULT_SANDBOX_GC_DELAY_MS`. A deleted job's go at once (`removeSandboxes`). It is the most
   * a sandbox is kept: the fuller the disk, the sooner (`gcDiskHeadroom`).
   */
  sandboxGcDelayMs?: number;
  /**
   * Mesos's `--gc_disk_headroom` (0 to 1, default `DEFAULT_GC_DISK_HEADROOM`): an ended run's sandbox is
   * kept `sandboxGcDelayMs × max(0, 1 - headroom - disk usage)`, so on a disk fuller than `1 - headroom`
   * it goes at the next look.
   */
  gcDiskHeadroom?: number;
  /**
   * How often the file system holding `dataDir` is looked at (`df`), and ended runs' sandboxes removed as
   * its usage says (Mesos's `--disk_watch_interval`, a minute there); default
   * `DEFAULT_DISK_WATCH_INTERVAL_MS`.
   */
  diskWatchIntervalMs?: number;
}

/** A week, Mesos's default `--gc_delay`. */
export const DEFAULT_SANDBOX_GC_DELAY_MS = 7 * 24 * 3600 * 1000;

/** How often the minicluster looks how full its disk is (Mesos's `--disk_watch_interval` is a minute). */
export const DEFAULT_DISK_WATCH_INTERVAL_MS = 5_000;

export type LogFile = "stdout" | "stderr";

/** The default cap on a task's kill grace period when the minicluster stops (README: **Run the scheduler**). */
export const MAX_STOP_GRACE_MS = 30_000;

const DEFAULTS: AgentDefaults = {
  resources: { cpuMilli: 4000, memMb: 8192, diskMb: 20480, gpuMilli: 0 },
  attributes: { host_pool: "shared" },
  portRange: [31000, 32000],
  containerDiskWatchIntervalMs: DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS,
};

const TERMINAL: ReadonlySet<MesosTaskState> = new Set<MesosTaskState>([
  "TASK_FINISHED",
  "TASK_FAILED",
  "TASK_KILLED",
  "TASK_LOST",
  "TASK_ERROR",
  "TASK_DROPPED",
  "TASK_GONE",
  "TASK_GONE_BY_OPERATOR",
  "TASK_UNKNOWN",
]);

export function isTerminalMesosState(state: MesosTaskState): boolean {
  return TERMINAL.has(state);
}

export class Minicluster implements HostBackend {
  readonly dataDir: string;
  readonly #defaults: AgentDefaults;
  readonly #now: () => number;
  readonly #stopGracePeriodMs: number;
  readonly #maxCompletedTasks: number;
  readonly #agents = new Map<string, Agent>();
  /**
   * Agents whose machine is down for maintenance, by host name: out of the cluster until `machineUp`, with
   * the shutdown of their tasks, which the way back up waits for.
   */
  readonly #down = new Map<string, { agent: Agent; shutDown: Promise<void> }>();
  /** Every agent ever added, so tasks of removed agents can still name their host. */
  readonly #hosts = new Map<string, HostInfo>();
  /** Latest status of every task the agents reported on. */
  readonly #tasks = new Map<string, TaskStatus>();
  /** Terminal task ids in the order they ended, for forgetting the oldest. */
  readonly #completed = new Set<string>();
  /**
   * Tasks whose kill came before their launch (the host manager sends a launch once the job manager stored
   * it, and a stop's kill may overtake it), answered "unknown": their launch, should it come, ends killed
   * and runs nothing (each time it comes). Oldest forgotten first, as many as `maxCompletedTasks`.
   */
  readonly #killedUnknown = new Set<string>();
  #nextIndex = 0;
  readonly #ids: AgentIdMap;
  /**
   * What each agent's volumes reserve, from the launch that makes one until its destroy: reported to the host
   * manager (`volume-reservations`), which holds an idle volume's from other work for its own task.
   */
  readonly #reservations: VolumeReservationBook;
  /** The last `volume-reservations` of each host, so only changes go out. */
  readonly #reservationsSent = new ReservationReports();
  /** Set while the constructor adds the agents it starts with. */
  #starting = true;
  #sink?: (events: BackendEvent[]) => void;
  #pending: BackendEvent[] = [];
  #flushTimer?: ReturnType<typeof setTimeout>;
  #stopping?: Promise<void>;
  #stopped = false;
  readonly #spawner?: Spawner;
  readonly #owner: DataDirOwnership;
  readonly #gcDelayMs: number;
  readonly #gcDiskHeadroom: number;
  /** Sandboxes are looked at this often, whatever the disk: a few times per retention period. */
  readonly #sweepMs: number;
  #lastSweepMs = -Infinity;
  /**
   * No ended run's sandbox still there ended before this, as far as known (too low is safe: a sweep that
   * finds nothing due). A look whose cutoff is before it has nothing to remove, so it walks nothing.
   */
  #oldestEndMs = -Infinity;
  readonly #gcTimer: ReturnType<typeof setInterval>;
  /** Jobs deleted while runs of theirs were live: how many of those runs have not ended yet. */
  readonly #deletedLive = new Map<string, number>();
  /** The sandbox removal under way (one at a time). */
  #collecting: Promise<void> = Promise.resolve();

  constructor(options: MiniclusterOptions) {
    const problem = diskOptionsProblem(options);
    if (problem) throw new Error(`Cannot start minicluster: ${problem}`);
    // First of all: while another live process drives this dir, the tasks its records name are that one's.
    // Held, the tasks a crashed minicluster left running are ended before any agent comes up: they would
    // otherwise run twice.
    this.#owner = takeOverDataDir(options.dataDir, "minicluster");
    this.dataDir = options.dataDir;
    // The runs it ended had their secrets in their sandboxes still: they go as if the runs had ended here.
    for (const problem of removeLeftSecrets(options.dataDir, (a, t) => sandboxPath(options.dataDir, a, t))) {
      console.error(`minicluster: ${problem}`);
    }
    this.#defaults = { ...DEFAULTS, ...options.defaults };
    this.#now = options.now ?? Date.now;
    this.#stopGracePeriodMs = options.stopGracePeriodMs ?? MAX_STOP_GRACE_MS;
    this.#maxCompletedTasks = options.maxCompletedTasks ?? 10_000;
    this.#gcDelayMs = options.sandboxGcDelayMs ?? DEFAULT_SANDBOX_GC_DELAY_MS;
    this.#gcDiskHeadroom = options.gcDiskHeadroom ?? DEFAULT_GC_DISK_HEADROOM;
    const diskWatchMs = options.diskWatchIntervalMs ?? DEFAULT_DISK_WATCH_INTERVAL_MS;
    // A few sweeps per retention period, at most hourly, and at most every second (a retention of 0 keeps
    // no ended run's sandbox, without sweeping at every turn). In between, the disk's usage is looked at
    // more often, and sandboxes it makes due are removed. The timer does not keep the process up.
    this.#sweepMs = Math.max(1_000, Math.min(this.#gcDelayMs / 4, 3600_000));
    this.#gcTimer = setInterval(() => {
      this.#collect(false).catch((e) => {
        console.error(`minicluster: sandbox GC failed: ${e instanceof Error ? e.message : e}`);
      });
    }, Math.min(this.#sweepMs, diskWatchMs));
    Deno.unrefTimer(this.#gcTimer);
    try {
      this.#ids = new AgentIdMap(options.dataDir);
      this.#reservations = new VolumeReservationBook(options.dataDir);
      this.#spawner = createSpawner(options.spawner ?? (options.spawnInWorker ? "auto" : "in-process"));
      const agents = typeof options.agents === "number"
        ? Array.from({ length: options.agents }, () => ({}))
        : options.agents;
      for (const agent of agents) this.#add(agent);
      this.#starting = false;
    } catch (e) {
      clearInterval(this.#gcTimer);
      void this.#spawner?.close();
      this.#owner.release();
      throw e;
    }
  }

  start(sink: (events: BackendEvent[]) => void): void {
    if (this.#sink) throw new Error("Cannot start minicluster: it was already started");
    this.#sink = sink;
    const ups: BackendEvent[] = [...this.#agents.values()].map((a) => ({ kind: "host-up", host: a.info() }));
    this.#pending = [...ups, ...this.#pending];
    // After their host-up: the host manager takes them for the hosts it knows.
    for (const agent of this.#agents.values()) this.#reportReservations(agent);
    this.#schedule();
  }

  launch(tasks: LaunchSpec[]): void {
    if (this.#stopping) throw new Error("Cannot launch tasks: the minicluster is stopped");
    for (const spec of tasks) {
      const problem = this.#invalid(spec);
      const agent = this.#agents.get(spec.agentId);
      if (problem) {
        this.#reply(spec.taskId, "TASK_ERROR", "REASON_TASK_INVALID", problem, spec);
      } else if (this.#killedUnknown.has(spec.taskId)) {
        // As Mesos answers a kill of a task the master has not started yet: the launch ends killed.
        this.#record({
          taskId: spec.taskId,
          state: "TASK_KILLED",
          hostname: spec.hostname,
          agentId: spec.agentId,
          timeMs: this.#now(),
          reason: "REASON_TASK_KILLED_DURING_LAUNCH",
          message: "Task killed before it was launched",
        });
      } else if (!agent) {
        const message = `Agent ${spec.agentId} is not registered`;
        this.#reply(spec.taskId, "TASK_LOST", "REASON_AGENT_REMOVED", message, spec);
      } else {
        // Reserved as the launch is taken, before any status of the run, as Mesos RESERVEs in the ACCEPT.
        if (spec.volume) this.#reserve(agent, spec);
        agent.launch(spec);
      }
    }
  }

  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void {
    if (this.#stopped) return;
    for (const { taskId, agentId, gracePeriodMs } of tasks) {
      const latest = this.#tasks.get(taskId);
      if (!latest) {
        // Mesos answers a kill of an unknown task with an explicit reconciliation. Its launch may still be
        // on the way: remembered, so that it never runs after this answer.
        this.#reply(taskId, "TASK_LOST", "REASON_RECONCILIATION", "Reconciliation: Task is unknown");
        this.#killedUnknown.add(taskId);
        for (const old of this.#killedUnknown) {
          if (this.#killedUnknown.size <= this.#maxCompletedTasks) break;
          this.#killedUnknown.delete(old);
        }
        continue;
      }
      // Mesos silently ignores a kill whose agent does not match the task's; mirror it so such bugs show here.
      if (agentId && agentId !== latest.agentId) continue;
      if (!this.#agents.get(latest.agentId)?.kill(taskId, gracePeriodMs)) this.#reconciled(latest);
    }
  }

  reconcile(taskIds?: string[]): void {
    if (this.#stopped) return;
    if (!taskIds || taskIds.length === 0) {
      for (const status of this.#tasks.values()) {
        if (!TERMINAL.has(status.state)) this.#reconciled(status);
      }
      return;
    }
    for (const taskId of taskIds) {
      const latest = this.#tasks.get(taskId);
      if (latest) this.#reconciled(latest);
      else this.#reply(taskId, "TASK_LOST", "REASON_RECONCILIATION", "Reconciliation: Task is unknown");
    }
  }

  /**
   * Destroys deleted volumes: each agent removes the volume's directory, unless a live task of its mounts it
   * (then it is said on stderr and kept). A host with no agent here now (removed, or not added again since
   * a restart) runs nothing, so its volume's directory, under the agent id the data dir keeps for the host,
   * is removed at once: there is nothing to wait for, and the data is gone even if the host never comes
   * back. A host that never had an agent on this data dir has no directory here, so nothing of it to
   * destroy (said on stderr). Resolves once every removal ended.
   */
  async destroyVolumes(volumes: VolumeRef[]): Promise<void> {
    await Promise.all(volumes.map(async (v) => {
      try {
        await this.#destroyVolume(v);
      } catch (e) {
        console.error(`minicluster: ${e instanceof Error ? e.message : e}`);
      }
    }));
  }

  #destroyVolume(v: VolumeRef): Promise<void> {
    // By host name first: the volume's record names its host, and the host keeps its agent id.
    const agents = [...this.#agents.values(), ...[...this.#down.values()].map((d) => d.agent)];
    const agent = agents.find((a) => a.hostname === v.hostname) ??
      agents.find((a) => v.agentId !== "" && a.agentId === v.agentId);
    if (agent) {
      const token = this.#reservations.token(agent.agentId, v.volumeId);
      return agent.destroyVolume(v.volumeId).then(() => this.#released(agent.agentId, v.volumeId, token));
    }
    const agentId = this.#ids.saved(v.hostname) ?? this.#hosts.get(v.agentId)?.agentId;
    const why = !isSafeId(v.volumeId)
      ? "not a volume id"
      : !agentId
      ? `no agent on host ${v.hostname} ever ran on this data dir, so none of its volumes is here`
      : undefined;
    if (why) return Promise.reject(new Error(`Cannot destroy volume ${JSON.stringify(v.volumeId)}: ${why}`));
    const token = this.#reservations.token(agentId!, v.volumeId);
    return removeVolumeDir(volumePath(this.dataDir, agentId!, v.volumeId))
      .then(() => this.#released(agentId!, v.volumeId, token));
  }

  /** A launch on its volume: the volume's reservation is the run's (`launchReservation`). */
  #reserve(agent: Agent, spec: LaunchSpec): void {
    if (this.#reservations.reserve(agent.agentId, spec.volume!.volumeId, launchReservation(spec))) {
      this.#reportReservations(agent);
    }
  }

  /** A destroyed volume's reservation goes, unless a launch reserved it again since the destroy began. */
  #released(agentId: string, volumeId: string, token: number | undefined): void {
    if (!this.#reservations.release(agentId, volumeId, token)) return;
    const agent = this.#agents.get(agentId);
    if (agent) this.#reportReservations(agent);
  }

  /**
   * `volume-reservations` of a registered agent's host when they changed since the last report (an agent
   * away is told at its host-up, as the host manager keeps a host's last report while its agent is away).
   */
  #reportReservations(agent: Agent): void {
    if (this.#agents.get(agent.agentId) !== agent) return;
    const event = this.#reservationsSent.next(agent.hostname, this.#reservations.of(agent.agentId));
    if (event) this.#push(event);
  }

  /** How long an ended run's sandbox is kept at most: the fuller the disk, the less (`gcDiskHeadroom`). */
  get sandboxGcDelayMs(): number {
    return this.#gcDelayMs;
  }

  /**
   * Removes the sandboxes of ended runs (on every agent's directory, also of agents gone) whose run ended
   * long enough ago, as Mesos's agent GC does: `sandboxGcDelayMs` scaled down by how full the data dir's
   * file system is now (`gcDiskHeadroom`; unscaled when `df` cannot tell). A run's end is its sandbox
   * directory's modification time, set when it ended, so it holds across restarts. Live runs' sandboxes
   * and volumes (outside every sandbox; a sandbox's link to its volume is removed, not followed) are never
   * touched.
   */
  collectSandboxes(): Promise<void> {
    return this.#collect(true);
  }

  /** A look at the disk, then a sweep when one is `forced`, the sweep period passed, or a sandbox is due. */
  #collect(forced: boolean): Promise<void> {
    return this.#exclusive(async () => {
      const usage = await filesystemUsage(this.dataDir);
      const maxAgeMs = usage === undefined
        ? this.#gcDelayMs
        : gcMaxAgeMs(this.#gcDelayMs, this.#gcDiskHeadroom, usage);
      const now = this.#now();
      const cutoffMs = now - maxAgeMs;
      if (!forced && now - this.#lastSweepMs < this.#sweepMs && cutoffMs < this.#oldestEndMs) return;
      this.#lastSweepMs = now;
      // Runs that end during the sweep lower it again (`onSandboxEnded`).
      this.#oldestEndMs = Infinity;
      const due = (_taskId: string, mtimeMs: number | undefined) =>
        mtimeMs !== undefined && mtimeMs <= cutoffMs;
      try {
        await this.#sweep(due, true, (mtimeMs) => this.#oldestEndMs = Math.min(this.#oldestEndMs, mtimeMs));
      } catch (e) {
        this.#oldestEndMs = -Infinity; // not all was seen: the next look sweeps again
        throw e;
      }
    });
  }

  /**
   * Removes at once the sandboxes of every ended run of these jobs (task ids `<jobId>-<instance>-<run>`):
   * their job was deleted, so no one asks for them again. Their volumes are destroyed apart.
   */
  removeSandboxes(jobIds: string[]): Promise<void> {
    const ids = new Set(jobIds.filter(isSafeId));
    if (ids.size === 0) return Promise.resolve();
    // A job deleted while its tasks still run (a forced delete: the kills follow the delete): each live run's
    // sandbox goes when the run ends, as no sweep would take it later (its job is gone).
    const live = new Map<string, number>();
    for (const taskId of this.#liveTaskIds()) {
      const job = jobOfTask(taskId);
      if (ids.has(job)) live.set(job, (live.get(job) ?? 0) + 1);
    }
    // Counted afresh: a job's removal asked for again does not wait for its runs twice.
    for (const [job, n] of live) this.#deletedLive.set(job, n);
    return this.#exclusive(() => this.#sweep((taskId) => ids.has(jobOfTask(taskId)), false));
  }

  /** A run ended: its sandbox goes at once if its job was deleted while it ran. */
  #sandboxEnded(endMs: number, taskId: string, sandbox: string): void {
    this.#oldestEndMs = Math.min(this.#oldestEndMs, endMs);
    const job = jobOfTask(taskId);
    const left = this.#deletedLive.get(job);
    if (left === undefined) return;
    if (left <= 1) this.#deletedLive.delete(job);
    else this.#deletedLive.set(job, left - 1);
    void this.#exclusive(() =>
      Deno.remove(sandbox, { recursive: true }).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return;
        console.error(`minicluster: cannot remove sandbox ${sandbox}: ${e instanceof Error ? e.message : e}`);
      })
    );
  }

  /** Runs `work` after the sandbox removal under way (one at a time; `stop` waits for the last). */
  #exclusive(work: () => Promise<void>): Promise<void> {
    const run = this.#collecting.then(work);
    this.#collecting = run.catch(() => {});
    return run;
  }

  /** Removes the ended runs' sandboxes `doomed` picks; `kept` hears the end of each ended one left. */
  async #sweep(
    doomed: (taskId: string, mtimeMs: number | undefined) => boolean,
    needsTime: boolean,
    kept?: (mtimeMs: number) => void,
  ): Promise<void> {
    for (const agentId of await this.#agentDirs()) {
      const tasks = `${this.dataDir}/agents/${agentId}/tasks`;
      for (const taskId of await dirEntries(tasks)) {
        const dir = `${tasks}/${taskId}`;
        const mtimeMs = needsTime ? (await Deno.lstat(dir).catch(() => undefined))?.mtime?.getTime() : 0;
        // Live runs as of now, after the await: one may have started since the listing. A live run's
        // end is heard when it ends.
        if (this.#liveTaskIds().has(taskId)) continue;
        if (!doomed(taskId, mtimeMs)) {
          if (mtimeMs !== undefined) kept?.(mtimeMs);
          continue;
        }
        await Deno.remove(dir, { recursive: true }).catch((e) => {
          if (e instanceof Deno.errors.NotFound) return;
          if (mtimeMs !== undefined) kept?.(mtimeMs);
          console.error(`minicluster: cannot remove sandbox ${dir}: ${e instanceof Error ? e.message : e}`);
        });
      }
    }
  }

  #liveTaskIds(): Set<string> {
    const agents = [...this.#agents.values(), ...[...this.#down.values()].map((d) => d.agent)];
    return new Set(agents.flatMap((a) => a.liveTaskIds()));
  }

  /**
   * Ends every live task as TASK_LOST (SIGTERM, SIGKILL after its kill grace period, at most
   * `stopGracePeriodMs`) and waits until all exited.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const ending: Ending = {
        state: "TASK_LOST",
        reason: "REASON_EXECUTOR_TERMINATED",
        message: "Minicluster stopped",
      };
      await Promise.all(
        [...this.#agents.values()].map((a) => a.shutdown(ending, { max: this.#stopGracePeriodMs })),
      );
      await Promise.all([...this.#down.values()].map((d) => d.shutDown));
      await this.#spawner?.close();
      clearInterval(this.#gcTimer);
      await this.#collecting;
      clearTimeout(this.#flushTimer);
      this.#flush();
      this.#stopped = true;
      this.#owner.release();
    })();
    return this.#stopping;
  }

  /**
   * Adds an agent (default name `agent-<i>`) under the id its host had on this data dir, else a new one
   * (`minicluster-S<n>`); announced with host-up once started. Throws if the id cannot be recorded.
   */
  addAgent(options: Partial<AgentOptions> = {}): HostInfo {
    if (this.#stopping) throw new Error("Cannot add agent: the minicluster is stopped");
    const host = this.#add(options).info();
    // Before start, start() itself announces every agent.
    if (this.#sink) {
      this.#push({ kind: "host-up", host });
      this.#reportReservations(this.#agents.get(host.agentId)!);
    }
    return host;
  }

  /**
   * Removes an agent as if it died: its processes are SIGKILLed, its tasks end TASK_LOST
   * (REASON_AGENT_REMOVED), then host-lost. False when no such agent is registered.
   */
  async removeAgent(agentId: string): Promise<boolean> {
    const agent = this.#agents.get(agentId);
    if (!agent) return false;
    this.#agents.delete(agentId);
    const message = `Agent ${agentId} removed`;
    await agent.shutdown({ state: "TASK_LOST", reason: "REASON_AGENT_REMOVED", message }, 0);
    this.#push({ kind: "host-lost", hostname: agent.hostname, agentId, reason: "REASON_AGENT_REMOVED" });
    return true;
  }

  /**
   * Takes a host's machine down for maintenance (Mesos's `/machine/down`): its agent leaves (tasks still
   * there end TASK_LOST, with Mesos's reason for an agent the operator removed,
   * REASON_AGENT_REMOVED_BY_OPERATOR, not a failure of theirs; a drained host has none), then host-lost.
   * It offers nothing and runs nothing until `machineUp`. A host with no registered agent is left as it is.
   */
  machineDown(hostname: string): void {
    if (this.#stopping || this.#down.has(hostname)) return;
    const agent = [...this.#agents.values()].find((a) => a.hostname === hostname);
    if (!agent) return;
    this.#agents.delete(agent.agentId);
    const message = `Agent ${agent.agentId} removed: its machine is down for maintenance`;
    const reason = "REASON_AGENT_REMOVED_BY_OPERATOR";
    const shutDown = agent.shutdown({ state: "TASK_LOST", reason, message }, 0)
      .then(() => {
        this.#push({
          kind: "host-lost",
          hostname,
          agentId: agent.agentId,
          reason: "machine down for maintenance",
        });
      });
    this.#down.set(hostname, { agent, shutDown });
  }

  /** Brings a machine taken down by `machineDown` up (Mesos's `/machine/up`): its agent registers again. */
  machineUp(hostname: string): void {
    const down = this.#down.get(hostname);
    if (!down) return;
    this.#down.delete(hostname);
    void down.shutDown.then(() => {
      if (this.#stopping) return;
      this.#agents.set(down.agent.agentId, down.agent);
      this.#push({ kind: "host-up", host: down.agent.info() });
      this.#reportReservations(down.agent);
    });
  }

  /**
   * The agents: the registered ones, and those whose machine is down for maintenance (they come back, so
   * their names and port ranges stay taken).
   */
  hosts(): HostInfo[] {
    return [...this.#agents.values(), ...[...this.#down.values()].map((d) => d.agent)].map((a) => a.info());
  }

  /** The agent a task was launched on, also after it ended or its agent was removed. */
  agentFor(taskId: string): HostInfo | undefined {
    const latest = this.#tasks.get(taskId);
    return latest && this.#hosts.get(latest.agentId);
  }

  /** Pid (and process group id) of a running task's process. */
  pid(taskId: string): number | undefined {
    const latest = this.#tasks.get(taskId);
    return latest && this.#agents.get(latest.agentId)?.pid(taskId);
  }

  /** A known task's sandbox directory (its working directory). */
  sandboxOf(taskId: string): string | undefined {
    const latest = this.#tasks.get(taskId);
    return latest && sandboxPath(this.dataDir, latest.agentId, taskId);
  }

  /**
   * A task's sandbox output, read from disk: works for ended tasks and across minicluster restarts. A run it
   * no longer knows is looked for on `agentId` first, then on every agent.
   */
  async logs(taskId: string, file: LogFile, agentId?: string): Promise<string | undefined> {
    const opened = await this.openLog(taskId, file, agentId);
    if (!opened) return undefined;
    return await new Response(opened.readable).text();
  }

  /**
   * A task's sandbox output file, opened for streaming its raw bytes (the caller reads `readable` to its end
   * or cancels it, which closes the file), found as `logs` finds it. Undefined when there is none; throws
   * SandboxFileRefused for one that is not the sandbox's own file (a link out of it, `openSandboxFile`).
   */
  async openLog(taskId: string, file: LogFile, agentId?: string): Promise<Deno.FsFile | undefined> {
    if (!isSafeId(taskId) || (file !== "stdout" && file !== "stderr")) return undefined;
    const latest = this.#tasks.get(taskId);
    const hinted = agentId !== undefined && isSafeId(agentId) ? [agentId] : [];
    const agentIds = latest ? [latest.agentId] : [...new Set([...hinted, ...await this.#agentDirs()])];
    for (const agentId of agentIds) {
      const opened = await openSandboxFile(this.dataDir, agentId, taskId, file);
      if (opened) return opened;
    }
    return undefined;
  }

  async #agentDirs(): Promise<string[]> {
    const ids: string[] = [];
    try {
      for await (const entry of Deno.readDir(`${this.dataDir}/agents`)) {
        if (entry.isDirectory) ids.push(entry.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return ids.sort();
  }

  #add(partial: Partial<AgentOptions>): Agent {
    // Taken only once the agent is added: a refused one (its id not recordable) leaves the name to the next.
    const i = this.#nextIndex;
    const d = this.#defaults;
    const hostname = partial.hostname ?? `agent-${i}`;
    const options: AgentOptions = {
      hostname,
      agentId: partial.agentId ?? this.#ids.saved(hostname) ?? this.#newAgentId(i),
      resources: { ...(partial.resources ?? d.resources) },
      attributes: { rack: `rack-${i % 2}`, ...d.attributes, ...partial.attributes },
      portRanges: partial.portRanges ?? [d.portRange],
      env: partial.env,
      containerDiskWatchIntervalMs: partial.containerDiskWatchIntervalMs ?? d.containerDiskWatchIntervalMs,
    };
    for (const a of [...this.#agents.values(), ...[...this.#down.values()].map((d) => d.agent)]) {
      if (a.agentId === options.agentId || a.hostname === options.hostname) {
        throw new Error(
          `Cannot add agent ${options.hostname} (${options.agentId}): an agent with that hostname or id exists`,
        );
      }
    }
    const agent = new Agent(options, {
      dataDir: this.dataDir,
      now: this.#now,
      onStatus: (s) => this.#record(s),
      onSandboxEnded: (endMs, taskId, sandbox) => this.#sandboxEnded(endMs, taskId, sandbox),
      spawner: this.#spawner,
    });
    // Before the agent runs anything: its sandboxes and volumes go under this id from now on.
    this.#ids.record(options.hostname, options.agentId);
    this.#nextIndex = i + 1;
    this.#agents.set(agent.agentId, agent);
    this.#hosts.set(agent.agentId, agent.info());
    return agent;
  }

  /**
   * An id no host has: `minicluster-S<i>` by the order agents are added, or the next free one after it.
   * One whose directory is there is not free: it holds an agent's data from before ids were kept. Except
   * for the agents a data dir from then starts with, which had these ids by their order and find their
   * own directories again.
   */
  #newAgentId(i: number): string {
    const fromBefore = this.#starting && !this.#ids.existed;
    const inUse = new Set(this.hosts().map((h) => h.agentId));
    for (let n = i;; n++) {
      const id = `minicluster-S${n}`;
      if (this.#ids.taken(id) || inUse.has(id)) continue;
      if (!fromBefore && exists(`${this.dataDir}/agents/${id}`)) continue;
      return id;
    }
  }

  #invalid(spec: LaunchSpec): string | undefined {
    if (!isSafeId(spec.taskId)) return `Task id ${JSON.stringify(spec.taskId)} has characters not allowed`;
    const latest = this.#tasks.get(spec.taskId);
    if (latest && !TERMINAL.has(latest.state)) return `Task has duplicate ID: ${spec.taskId}`;
    if (spec.executor) {
      // Running its command without the executor would run something else than the task (the executor
      // gets the work from `data`), and could even report success: refused, unlike a container's image.
      return `Task uses a CUSTOM executor (${spec.executor.name ?? "unnamed"}), which the minicluster ` +
        "cannot run: it has only the command executor, so the executor's data would go unread. Run the " +
        "job on Mesos, or remove its executor to run the command as a command task";
    }
    if (!spec.command.value) return "Task has no command value";
    const health = spec.healthCheck && healthCheckProblem(spec.healthCheck);
    if (health) return `Task uses an invalid health check: ${health}`;
    const secret = secretsProblem(spec.secrets);
    if (secret) return `Task has an invalid secret: ${secret}`;
    return undefined;
  }

  #record(status: TaskStatus): void {
    this.#tasks.set(status.taskId, status);
    if (TERMINAL.has(status.state)) {
      this.#completed.add(status.taskId);
      for (const old of this.#completed) {
        if (this.#completed.size <= this.#maxCompletedTasks) break;
        this.#completed.delete(old);
        this.#tasks.delete(old);
      }
    } else {
      this.#completed.delete(status.taskId);
    }
    this.#push({ kind: "task-status", status });
  }

  #reconciled(latest: TaskStatus): void {
    const status: TaskStatus = {
      ...latest,
      timeMs: this.#now(),
      reason: "REASON_RECONCILIATION",
      message: "Reconciliation: Latest task state",
    };
    this.#push({ kind: "task-status", status });
  }

  /** A master-style answer that is not recorded as the task's state (invalid or unknown tasks). */
  #reply(
    taskId: string,
    state: MesosTaskState,
    reason: string,
    message: string,
    where?: { agentId: string; hostname: string },
  ): void {
    const status: TaskStatus = {
      taskId,
      state,
      hostname: where?.hostname ?? "",
      agentId: where?.agentId ?? "",
      timeMs: this.#now(),
      message,
      reason,
    };
    this.#push({ kind: "task-status", status });
  }

  #push(event: BackendEvent): void {
    if (this.#stopped) return;
    this.#pending.push(event);
    this.#schedule();
  }

  // Batching through a timer both groups events and guarantees the sink never runs inside launch/kill.
  #schedule(): void {
    if (!this.#sink || this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => this.#flush(), 0);
  }

  #flush(): void {
    this.#flushTimer = undefined;
    if (!this.#sink || this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#sink(batch);
  }
}

/** What is wrong with the disk options (naming the field, its value and what it takes), or undefined. */
function diskOptionsProblem(o: MiniclusterOptions): string | undefined {
  const h = o.gcDiskHeadroom;
  if (h !== undefined && !(h >= 0 && h <= 1)) {
    return `gcDiskHeadroom is ${h}, expected a fraction from 0 to 1`;
  }
  const ms = o.diskWatchIntervalMs;
  if (ms !== undefined && !(ms > 0)) return `diskWatchIntervalMs is ${ms}, expected a positive number of ms`;
  return undefined;
}

async function dirEntries(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isDirectory) names.push(e.name);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return names;
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The job of a run's task id, `<jobId>-<instance>-<run>`. */
function jobOfTask(taskId: string): string {
  return taskId.replace(/-\d+-\d+$/, "");
}
