/** One minicluster agent: runs command tasks as real local processes, each in its own sandbox. */
import type { HostInfo, LaunchSpec, TaskStatus } from "../../core/ports/host_backend.ts";
import type { ContainerInfo } from "../../core/model/config_types.ts";
import type { Resources } from "../../core/model/resources.ts";
import { isTerminalTaskState, MESOS_TO_TASK_STATE, type MesosTaskState } from "../../core/model/states.ts";
import { HEALTH_CHECK_REASON } from "../../core/ports/health_check.ts";
import { portEnv } from "../../core/model/task_env.ts";
import { resolve } from "node:path";
import { fetchUris } from "./fetcher.ts";
import { recordSecrets, removeSecrets, secretRecordsDir, writeSecrets } from "./secrets.ts";
import { HealthChecker } from "./health.ts";
import { DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS, DiskQuotaWatch } from "./disk_quota.ts";
import { resolveProgram, signalGroup } from "./_session.ts";
import { inProcessSpawner, type Spawner, type SpawnRequest, type TaskProcess } from "./spawner.ts";
import {
  DATA_DIR_ENV,
  dataDirMark,
  forgetProcess,
  recordProcess,
  recordsDir,
  startTicks,
} from "./_task_records.ts";
import {
  membersOf,
  type ProcessTree,
  ProcScanner,
  RUN_ENV,
  runMark,
  signalEach,
  taskSessions,
} from "./_process_tree.ts";

export interface AgentOptions {
  hostname: string;
  agentId: string;
  resources: Resources;
  attributes: Record<string, string>;
  /** Inclusive port ranges the agent offers. */
  portRanges: [number, number][];
  /** Extra environment for every task, on top of the daemon's own environment. */
  env?: Record<string, string>;
  /**
   * How often a running task's sandbox is measured against its disk (Mesos's
   * `--container_disk_watch_interval`); default `DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS`.
   */
  containerDiskWatchIntervalMs?: number;
}

/** What the agent needs from its owner: where sandboxes live, the time, and where statuses go. */
export interface AgentContext {
  dataDir: string;
  now: () => number;
  onStatus: (status: TaskStatus) => void;
  /** A run's sandbox became its ended run's, at `endMs` (its modification time), for the sandbox GC. */
  onSandboxEnded?: (endMs: number, taskId: string, sandbox: string) => void;
  /** Starts the processes (default: in this thread). */
  spawner?: Spawner;
}

/** How a task ends when something other than its own exit decided it (kill, removal, shutdown). */
export interface Ending {
  state: MesosTaskState;
  reason?: string;
  message: string;
  /** Health to report with the final status (false when failing health checks ended the task). */
  healthy?: boolean;
}

interface TaskRun {
  spec: LaunchSpec;
  sandbox: string;
  child?: TaskProcess;
  /** The processes the task started, as far as they were found (`_process_tree.ts`). */
  tree?: ProcessTree;
  ending?: Ending;
  /** A kill that came while the process was being started, applied once it has a pid. */
  pendingGraceMs?: number;
  killTimer?: ReturnType<typeof setTimeout>;
  killAtMs?: number;
  /** The process was reaped; only its output is still draining. */
  exited?: boolean;
  /** Its terminal status was sent: nothing of it runs, though its bookkeeping may not be done. */
  ended?: boolean;
  health?: HealthChecker;
  /** Its secrets were recorded and may be in its sandbox, until they are removed as it ends. */
  secretsRecorded?: boolean;
  /** Aborts the fetch of the task's URIs when it is killed first. */
  fetching?: AbortController;
  done: Promise<void>;
}

/** One look at `/proc` per turn, shared by every agent of this process. */
const SCANNER = new ProcScanner();

/**
 * How long a task's ended run waits for the processes it left to die of SIGKILL before its status is sent
 * anyway (a process stuck in the kernel, uninterruptible, cannot be waited for forever).
 */
const TREE_KILL_TIMEOUT_MS = 5000;

// Ids become path segments of the sandbox, so they must not escape it.
const SAFE_ID = /^[A-Za-z0-9_.:-]+$/;

export function isSafeId(id: string): boolean {
  return SAFE_ID.test(id) && id !== "." && id !== "..";
}

/** `<dataDir>/agents/<agentId>/tasks/<taskId>`. */
export function sandboxPath(dataDir: string, agentId: string, taskId: string): string {
  return `${dataDir}/agents/${agentId}/tasks/${taskId}`;
}

/** `<dataDir>/agents/<agentId>/volumes/<volumeId>`: a persistent volume, outside every sandbox. */
export function volumePath(dataDir: string, agentId: string, volumeId: string): string {
  return `${dataDir}/agents/${agentId}/volumes/${volumeId}`;
}

/** Removes a volume's directory with all it holds; one already gone is fine. */
export async function removeVolumeDir(dir: string): Promise<void> {
  try {
    await Deno.remove(dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

export class Agent {
  readonly hostname: string;
  readonly agentId: string;
  readonly #options: AgentOptions;
  readonly #ctx: AgentContext;
  readonly #runs = new Map<string, TaskRun>();
  /** Volumes being destroyed, by id: a run mounting one waits until its old data is gone. */
  readonly #destroying = new Map<string, Promise<void>>();
  /** Sandboxes of running tasks with a disk quota, measured with `du` (Mesos's `disk/du` isolator). */
  readonly #disk: DiskQuotaWatch;

  constructor(options: AgentOptions, ctx: AgentContext) {
    if (!isSafeId(options.agentId)) {
      throw new Error(
        `Cannot create agent: agentId ${JSON.stringify(options.agentId)} must match ${SAFE_ID}`,
      );
    }
    this.hostname = options.hostname;
    this.agentId = options.agentId;
    this.#options = options;
    this.#ctx = ctx;
    const watchMs = options.containerDiskWatchIntervalMs ?? DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS;
    if (!(watchMs > 0)) {
      throw new Error(
        `Cannot create agent ${options.hostname}: containerDiskWatchIntervalMs is ${watchMs}, expected a ` +
          "positive number of ms",
      );
    }
    this.#disk = new DiskQuotaWatch(watchMs, (taskId, message) => this.#overQuota(taskId, message));
  }

  info(): HostInfo {
    const o = this.#options;
    return {
      hostname: o.hostname,
      agentId: o.agentId,
      resources: { ...o.resources },
      attributes: { ...o.attributes },
      portRanges: o.portRanges.map(([lo, hi]) => [lo, hi]),
      // Its tasks run on this machine, and its sandbox files are served from this process.
      ip: "127.0.0.1",
    };
  }

  sandbox(taskId: string): string {
    return sandboxPath(this.#ctx.dataDir, this.agentId, taskId);
  }

  /** Ids of tasks whose process has not been reaped yet. */
  liveTaskIds(): string[] {
    return [...this.#runs.keys()];
  }

  /** Pid of a live task's process (also its process group id), once spawned. */
  pid(taskId: string): number | undefined {
    return this.#runs.get(taskId)?.child?.pid;
  }

  /** Accepts a task (TASK_STAGING now) and runs it in the background; the caller validated the spec. */
  launch(spec: LaunchSpec): void {
    const run: TaskRun = { spec, sandbox: this.sandbox(spec.taskId), done: Promise.resolve() };
    this.#runs.set(spec.taskId, run);
    this.#emit(run, "TASK_STAGING");
    run.done = this.#run(run).finally(async () => {
      // When the run ended, as its sandbox's modification time: the sandbox GC counts its retention from it.
      const at = new Date(this.#ctx.now());
      await Deno.utime(run.sandbox, at, at).catch(() => {});
      if (this.#runs.get(spec.taskId) === run) this.#runs.delete(spec.taskId);
      this.#ctx.onSandboxEnded?.(at.getTime(), spec.taskId, run.sandbox);
    });
  }

  /**
   * As Mesos's `disk/du` isolator with `--enforce_container_disk_quota`: a sandbox over the task's disk
   * resource ends the task at once (its container destroyed, no grace period), TASK_FAILED.
   */
  #overQuota(taskId: string, message: string): void {
    const ending: Ending = { state: "TASK_FAILED", reason: "REASON_CONTAINER_LIMITATION_DISK", message };
    this.kill(taskId, 0, ending);
  }

  /**
   * SIGTERM to every process of the task (`_process_tree.ts`), SIGKILL after the grace period. False if the
   * task is not live.
   */
  kill(taskId: string, gracePeriodMs: number, ending?: Ending): boolean {
    const run = this.#runs.get(taskId);
    if (!run) return false;
    if (run.exited) return true; // too late: the status it exited with stands
    run.ending ??= ending ?? { state: "TASK_KILLED", message: "Task killed" };
    // Like Mesos's executors: a task being killed is no longer health checked.
    void run.health?.stop();
    if (!run.child) {
      // #run notices the ending before the spawn, or applies it once the process has its pid.
      run.pendingGraceMs = Math.min(run.pendingGraceMs ?? Infinity, gracePeriodMs);
      run.fetching?.abort();
      return true;
    }
    this.#signal(run, gracePeriodMs);
    return true;
  }

  #signal(run: TaskRun, gracePeriodMs: number): void {
    if (!run.child) return;
    const killAtMs = this.#ctx.now() + Math.max(0, gracePeriodMs);
    // A repeated kill may shorten the grace period, never extend it.
    if (run.killAtMs !== undefined && run.killAtMs <= killAtMs) return;
    if (run.killAtMs === undefined) this.#signalTree(run, "SIGTERM");
    clearTimeout(run.killTimer);
    run.killAtMs = killAtMs;
    if (gracePeriodMs <= 0) this.#signalTree(run, "SIGKILL");
    else run.killTimer = setTimeout(() => this.#signalTree(run, "SIGKILL"), gracePeriodMs);
  }

  /**
   * Signals the task's process group at once (all there is to do without `/proc`), then every other process
   * of the task at the next look at `/proc`. Once the task's process exited, `#endTree` takes over.
   */
  #signalTree(run: TaskRun, signal: Deno.Signal): void {
    if (!run.child || run.exited) return;
    signalGroup(run.child.pid, signal, true);
    void SCANNER.snapshot().then((snap) => {
      if (snap && run.tree && !run.exited) signalEach(membersOf(run.tree, snap), signal);
    });
  }

  /**
   * SIGKILLs whatever the task's process left running, in any process group or session, and waits until
   * it is gone: a run is reported ended only once nothing of it runs, so its next run never overlaps it
   * (as a Mesos container is destroyed when its task ends).
   */
  async #endTree(run: TaskRun): Promise<void> {
    const tree = run.tree;
    if (!tree) return;
    // Its session's processes are looked for as this task's from now on, not as another's.
    taskSessions.delete(tree.leader);
    const deadline = this.#ctx.now() + TREE_KILL_TIMEOUT_MS;
    for (let round = 0;; round++) {
      const snap = await SCANNER.snapshot();
      const members = snap ? membersOf(tree, snap) : [];
      if (members.length === 0) return;
      if (this.#ctx.now() >= deadline) {
        console.error(`minicluster: task ${run.spec.taskId}: processes ${members} outlived SIGKILL`);
        return;
      }
      signalEach(members, "SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 5 * (round + 1))));
    }
  }

  /**
   * Destroys a persistent volume (Mesos's DESTROY): its directory goes with all it holds, so a volume
   * mounted later under its id starts empty. Refused, with nothing removed, while a live task of this
   * agent mounts it: a volume is deleted only once its task stopped, so that is a run the job manager no
   * longer counts on, and ids made before they had a UUID (`<job>-<instance>-volume-<run>`) may repeat.
   */
  destroyVolume(volumeId: string): Promise<void> {
    if (!isSafeId(volumeId)) {
      return Promise.reject(new Error(`Cannot destroy volume ${JSON.stringify(volumeId)}: not a volume id`));
    }
    const user = [...this.#runs.values()].find((r) => !r.ended && r.spec.volume?.volumeId === volumeId);
    if (user) {
      return Promise.reject(
        new Error(`Cannot destroy volume ${volumeId}: task ${user.spec.taskId} on ${this.hostname} uses it`),
      );
    }
    const before = this.#destroying.get(volumeId) ?? Promise.resolve();
    const done = before.then(() => removeVolumeDir(volumePath(this.#ctx.dataDir, this.agentId, volumeId)));
    const settled = done.catch(() => {});
    this.#destroying.set(volumeId, settled);
    void settled.then(() => {
      if (this.#destroying.get(volumeId) === settled) this.#destroying.delete(volumeId);
    });
    return done;
  }

  /**
   * Ends every live task with `ending` and waits until all their processes were reaped: SIGKILL follows
   * SIGTERM after `gracePeriodMs`, or `{ max }`: after the task's own kill grace period, at most `max` ms.
   */
  async shutdown(ending: Ending, gracePeriodMs: number | { max: number }): Promise<void> {
    for (const [taskId, run] of this.#runs) {
      const grace = typeof gracePeriodMs === "number"
        ? gracePeriodMs
        : Math.min(run.spec.killGracePeriodMs, gracePeriodMs.max);
      this.kill(taskId, grace, ending);
    }
    await this.idle();
  }

  /** Resolves once no task of this agent is running. */
  async idle(): Promise<void> {
    while (this.#runs.size > 0) await Promise.all([...this.#runs.values()].map((r) => r.done));
  }

  async #run(run: TaskRun): Promise<void> {
    const secrets = run.spec.secrets ?? [];
    try {
      // The spawner makes the sandbox (off this thread); a volume, URIs and secrets need it first.
      if (run.spec.volume || run.spec.command.uris?.length || secrets.length) {
        await Deno.mkdir(run.sandbox, { recursive: true });
      }
      if (run.spec.volume) await this.#mountVolume(run);
    } catch (e) {
      this.#emit(run, "TASK_FAILED", {
        reason: "REASON_COMMAND_EXECUTOR_FAILED",
        message: `Failed to create sandbox ${run.sandbox}: ${errorMessage(e)}`,
      });
      return;
    }
    if (secrets.length && !run.ending) {
      // As Mesos's volume/secret isolator: in place before the fetcher runs and the command starts. Recorded
      // first, so that they go when the run ends even if this process dies before (`removeLeftSecrets`).
      const records = secretRecordsDir(this.#ctx.dataDir, this.agentId);
      const written = await recordSecrets(records, run.spec.taskId, secrets)
        .then(() => run.secretsRecorded = true)
        .then(() => writeSecrets(run.sandbox, secrets))
        .catch((e: Error) => e);
      if (written instanceof Error) {
        this.#removeSecrets(run);
        await emptyLogs(run.sandbox);
        this.#emit(run, "TASK_FAILED", {
          reason: "REASON_CONTAINER_LAUNCH_FAILED",
          message: `Failed to launch container: ${written.message}`,
        });
        return;
      }
    }
    if (run.spec.command.uris?.length && !run.ending) {
      // Mesos's fetcher: the URIs are in the sandbox before the task starts, or it fails to launch. A kill
      // meanwhile aborts the fetch, and the task ends as killed below.
      run.fetching = new AbortController();
      const fetched = await fetchUris(run.spec.command.uris, run.sandbox, run.fetching.signal)
        .catch((e: Error) => e);
      run.fetching = undefined;
      if (fetched instanceof Error && !run.ending) {
        this.#removeSecrets(run);
        await emptyLogs(run.sandbox);
        this.#emit(run, "TASK_FAILED", {
          reason: "REASON_CONTAINER_LAUNCH_FAILED",
          message: `Failed to launch container: ${fetched.message}`,
        });
        return;
      }
    }
    // Looked up before the ending is checked: no await may come between that check and the spawn.
    const program = await this.#program(run).catch((e: Error) => e);
    if (run.ending) {
      this.#removeSecrets(run);
      await emptyLogs(run.sandbox);
      this.#emit(run, run.ending.state, {
        reason: run.ending.state === "TASK_KILLED" ? "REASON_TASK_KILLED_DURING_LAUNCH" : run.ending.reason,
        message: run.ending.message,
      });
      return;
    }
    this.#emit(run, "TASK_STARTING");
    try {
      if (program instanceof Error) throw program;
      run.child = await (this.#ctx.spawner ?? inProcessSpawner).spawn(this.#command(run, program));
    } catch (e) {
      this.#removeSecrets(run);
      await emptyLogs(run.sandbox);
      this.#emit(run, "TASK_FAILED", {
        reason: "REASON_COMMAND_EXECUTOR_FAILED",
        message: `Failed to launch command: ${errorMessage(e)}`,
      });
      return;
    }
    // Should this daemon die, the next minicluster on this data dir ends the process (`_task_records.ts`).
    const records = recordsDir(this.#ctx.dataDir, this.agentId);
    const recorded = recordProcess(records, run.spec.taskId, run.child.pid);
    const leaderStart = startTicks(run.child.pid);
    taskSessions.add(run.child.pid);
    run.tree = {
      leader: run.child.pid,
      leaderStart: leaderStart === undefined ? undefined : Number(leaderStart),
      mark: `${RUN_ENV}=${this.#runMark(run)}`,
      known: new Map(),
    };
    this.#emit(run, "TASK_RUNNING");
    const quotaBytes = Math.round(run.spec.resources.diskMb * 1024 * 1024);
    if (run.pendingGraceMs !== undefined) this.#signal(run, run.pendingGraceMs);
    else {
      if (run.spec.healthCheck) run.health = this.#checkHealth(run);
      // A task without disk has no quota, as in Mesos.
      if (quotaBytes > 0) this.#disk.watch(run.spec.taskId, run.sandbox, quotaBytes);
    }
    let status: Deno.CommandStatus | undefined;
    try {
      status = await run.child.status;
    } catch {
      status = undefined;
    }
    run.exited = true;
    clearTimeout(run.killTimer);
    await Promise.all([run.health?.stop(), this.#disk.unwatch(run.spec.taskId)]);
    // The spawner already ended what was left of the task's process group; the rest of its processes now.
    await this.#endTree(run);
    // Nothing of the task runs now to read them; gone before its end is told.
    this.#removeSecrets(run);
    this.#finish(run, status);
    await recorded;
    // A process this agent lost track of may still run: its record stays for the next start to end it.
    if (status) await forgetProcess(records, run.spec.taskId);
  }

  /**
   * The run's secret files go from its sandbox once it ended, as a Mesos secret volume goes with its
   * container. One that cannot be removed is said on stderr; its record stays for the next start to retry.
   */
  #removeSecrets(run: TaskRun): void {
    if (!run.secretsRecorded) return;
    run.secretsRecorded = false;
    const records = secretRecordsDir(this.#ctx.dataDir, this.agentId);
    try {
      removeSecrets(records, run.spec.taskId, run.sandbox, (run.spec.secrets ?? []).map((s) => s.path));
    } catch (e) {
      console.error(`minicluster: cannot remove the secrets of task ${run.spec.taskId}: ${errorMessage(e)}`);
    }
  }

  #finish(run: TaskRun, status: Deno.CommandStatus | undefined): void {
    if (!status) {
      this.#emit(run, run.ending?.state ?? "TASK_FAILED", {
        reason: "REASON_EXECUTOR_TERMINATED",
        message: "Lost track of the task's process",
      });
      return;
    }
    const message = status.signal
      ? `Command terminated with signal ${status.signal}`
      : `Command exited with status ${status.code}`;
    if (run.ending) {
      const { state, reason, healthy } = run.ending;
      // A plain kill only says how the process ended; an ending with a reason explains itself first.
      const text = state === "TASK_KILLED" && !reason ? message : `${run.ending.message}; ${message}`;
      this.#emit(run, state, { reason, message: text, exitCode: status.code, healthy });
    } else if (status.success) {
      this.#emit(run, "TASK_FINISHED", { message, exitCode: 0 });
    } else {
      this.#emit(run, "TASK_FAILED", { message, exitCode: status.code });
    }
  }

  #checkHealth(run: TaskRun): HealthChecker {
    const { spec } = run;
    // Peloton's rule: a command check sees the task's environment unless it unshares it.
    const env = spec.healthCheck!.unshareEnvironments
      ? { ...this.#options.env, ...this.#agentVars(run) }
      : this.#env(run);
    return new HealthChecker(spec.healthCheck!, { cwd: run.sandbox, env }, {
      onHealth: (healthy, message) =>
        this.#emit(run, "TASK_RUNNING", { reason: HEALTH_CHECK_REASON, message, healthy }),
      onKill: (message) => {
        const ending: Ending = { state: "TASK_KILLED", reason: HEALTH_CHECK_REASON, message, healthy: false };
        this.kill(spec.taskId, spec.killGracePeriodMs, ending);
      },
    });
  }

  /** The file the task runs: `/bin/sh` for a shell command, else its program found on `PATH`. */
  #program(run: TaskRun): Promise<string> {
    const { command } = run.spec;
    if (command.shell) return Promise.resolve("/bin/sh");
    const env = this.#env(run);
    return resolveProgram(command.value ?? "", run.sandbox, env.PATH ?? Deno.env.get("PATH"));
  }

  /**
   * The task's shell opens its sandbox's `stdout` and `stderr` itself (an argv task's program is then
   * exec'd in its place), so the daemon holds no pipe or file per task and the files fill as the task
   * writes. A shell command's redirection shares its first line, so line numbers in errors are its own.
   */
  #command(run: TaskRun, program: string): SpawnRequest {
    const { command } = run.spec;
    const note = containerNote(run.spec.container);
    const redirect = `exec >stdout 2>stderr; ${note ? `printf '%s\\n' ${shellQuote(note)} >&2; ` : ""}`;
    const args = command.shell
      ? ["-c", redirect + (command.value ?? "")]
      : ["-c", `${redirect}exec "$0" "$@"`, program, ...command.arguments ?? []];
    // The spawner makes the task a session and process-group leader; the mark finds what leaves them.
    const env = { ...this.#env(run), [RUN_ENV]: this.#runMark(run) };
    return { program: "/bin/sh", args, cwd: run.sandbox, env };
  }

  /** Not in `#env`: a health check's processes, which see the task's environment, are not the task's. */
  #runMark(run: TaskRun): string {
    return runMark(dataDirMark(this.#ctx.dataDir), this.agentId, run.spec.taskId);
  }

  /**
   * A persistent volume lives under the agent, outside any sandbox, so it outlasts the task's runs;
   * each run sees it at `containerPath` inside its sandbox (a symlink, as there are no containers).
   */
  async #mountVolume(run: TaskRun): Promise<void> {
    const v = run.spec.volume!;
    if (
      !isSafeId(v.volumeId) || v.containerPath.split("/").includes("..") || v.containerPath.startsWith("/")
    ) {
      throw new Error(
        `volume ${v.volumeId}: containerPath "${v.containerPath}" must be a relative path inside the sandbox`,
      );
    }
    // A volume destroyed just before is gone before this run makes it again.
    await this.#destroying.get(v.volumeId);
    const dir = volumePath(this.#ctx.dataDir, this.agentId, v.volumeId);
    await Deno.mkdir(dir, { recursive: true });
    const link = `${run.sandbox}/${v.containerPath}`;
    await Deno.mkdir(link.slice(0, link.lastIndexOf("/")), { recursive: true });
    await Deno.remove(link).catch(() => {});
    // Absolute: a link is read from its own directory, so a data dir given relative (`peloton up`'s default
    // `.peloton`) would point nowhere from inside the sandbox.
    await Deno.symlink(resolve(dir), link);
  }

  #env(run: TaskRun): Record<string, string> {
    const { spec } = run;
    const env: Record<string, string> = {
      ...this.#options.env,
      ...spec.env,
      // A container's env parameters, as it would see them there; the agent's own variables win.
      ...dockerEnv(spec.container),
      // Never over PATH, HOME or the agent's own variables: a port named PATH is PORT_PATH only.
      ...portEnv(spec.ports),
      ...this.#agentVars(run),
      MESOS_TASK_ID: spec.taskId,
      PELOTON_JOB_ID: spec.jobId,
      PELOTON_INSTANCE_ID: String(spec.instanceId),
      PELOTON_TASK_ID: `${spec.jobId}-${spec.instanceId}`,
      // Finds the process after a crash even if its record was never written (`_task_records.ts`).
      [DATA_DIR_ENV]: dataDirMark(this.#ctx.dataDir),
    };
    if (spec.volume) env.PELOTON_VOLUME_PATH = `${run.sandbox}/${spec.volume.containerPath}`;
    return env;
  }

  /** The agent's own variables for a task's processes, which are not the task's environment. */
  #agentVars(run: TaskRun): Record<string, string> {
    return { HOST: this.hostname, MESOS_SANDBOX: run.sandbox, MESOS_AGENT_ID: this.agentId };
  }

  #emit(
    run: TaskRun,
    state: MesosTaskState,
    extra: { reason?: string; message?: string; exitCode?: number; healthy?: boolean } = {},
  ): void {
    const status: TaskStatus = {
      taskId: run.spec.taskId,
      state,
      hostname: this.hostname,
      agentId: this.agentId,
      timeMs: this.#ctx.now(),
    };
    if (extra.message !== undefined) status.message = extra.message;
    if (extra.reason !== undefined) status.reason = extra.reason;
    if (extra.exitCode !== undefined) status.exitCode = extra.exitCode;
    if (extra.healthy !== undefined) status.healthy = extra.healthy;
    if (isTerminalTaskState(MESOS_TO_TASK_STATE[state])) run.ended = true;
    this.#ctx.onStatus(status);
  }
}

/** A task that never ran still has its (empty) output files, as a Mesos sandbox does. */
async function emptyLogs(sandbox: string): Promise<void> {
  await Deno.mkdir(sandbox, { recursive: true }).catch(() => {});
  await Promise.all(
    ["stdout", "stderr"].map((f) =>
      Deno.writeTextFile(`${sandbox}/${f}`, "", { append: true }).catch(() => {})
    ),
  );
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * A Docker container's `env` parameters (`docker run --env NAME=value`, as Peloton's example jobs set
 * them): the minicluster has no container runtime and runs the command on the host, so they become the
 * process's environment, as the command would see them in its container.
 */
export function dockerEnv(container: ContainerInfo | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  if (container?.type !== "DOCKER") return env;
  for (const p of container.docker?.parameters ?? []) {
    if (p.key !== "env") continue;
    const at = p.value.indexOf("=");
    if (at > 0) env[p.value.slice(0, at)] = p.value.slice(at + 1);
  }
  return env;
}

/** The line a task with a container finds first in its stderr: its image is not used here. */
export function containerNote(container: ContainerInfo | undefined): string | undefined {
  if (!container) return undefined;
  const image = container.type === "DOCKER"
    ? container.docker?.image
    : (container.mesos?.image as { docker?: { name?: string } } | undefined)?.docker?.name;
  return `minicluster: no container runtime here: ${image ? `image ${image} is not used, ` : ""}` +
    "the command runs on the host" +
    (container.type === "DOCKER" ? " with the container's env parameters" : "");
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
