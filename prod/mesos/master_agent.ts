/** An emulated Mesos agent: command tasks as real processes, and per-task status update streams with retries. */
import type { LaunchSpec, TaskStatus as CoreStatus } from "../../core/ports/host_backend.ts";
import { Agent, type Ending } from "../minicluster/agent.ts";
import {
  type Attribute,
  type CommandInfo,
  type ContainerInfo,
  encodeBase64,
  isTerminalState,
  type TaskInfo,
  type TaskState,
  type TaskStatus,
  type TaskStatusReason,
  type Volume,
} from "./protocol.ts";
import { fromContainerInfo, fromHealthCheck, fromMesosUri } from "./mesos_convert.ts";
import { executorIdOf } from "./master_types.ts";
import { type Bag, bagFromMesos, bagToCore } from "./resources.ts";
import { checkpointed, type CheckpointFile, convertTotal, restoreTotal } from "./master_volumes.ts";
import type { Spawner } from "../minicluster/spawner.ts";

export interface EmuAgentConfig {
  id: string;
  hostname: string;
  ip: string;
  /** The port its `/files` endpoint answers on (the emulator's own). */
  port: number;
  resources: Bag;
  attributes: Attribute[];
}

/** Where forwarded updates go: the master decides whether the agent is registered and the framework connected. */
export interface AgentContext {
  dataDir: string;
  retryMinMs: number;
  retryMaxMs: number;
  forward(agent: EmuAgent, frameworkId: string, status: TaskStatus, latest: TaskState): void;
  /**
   * A custom executor's process ended (Mesos's ExitedExecutorMessage, sent once, unacknowledged); `status`
   * is its wait status when known. Command executors are the agent's own and not reported.
   */
  executorExited?(agent: EmuAgent, frameworkId: string, executorId: string, status: number | undefined): void;
  /** Starts task processes (default: in this thread). */
  spawner?: Spawner;
  /** Where agents keep their dynamic reservations and persistent volumes across emulator restarts. */
  checkpoints?: CheckpointFile;
  log?: (line: string) => void;
}

/** A task as the agent knows it: live, or terminal with its last update not acknowledged yet. */
export interface AgentTask {
  info: TaskInfo;
  frameworkId: string;
  latest: TaskState;
}

interface UpdateStream {
  frameworkId: string;
  pending: TaskStatus[];
  intervalMs: number;
  timer?: ReturnType<typeof setTimeout>;
}

export type AckResult = "acked" | "acked-terminal" | "unexpected";

export class EmuAgent {
  readonly config: EmuAgentConfig;
  /**
   * The agent's total: its `--resources` (`config.resources`) with the dynamic reservations and persistent
   * volumes made on it, checkpointed, as Mesos's `totalResources`.
   */
  #total: Bag;
  readonly #ctx: AgentContext;
  readonly #runner: Agent;
  readonly #tasks = new Map<string, AgentTask>();
  readonly #streams = new Map<string, UpdateStream>();
  /** Tasks whose process output is ignored: the agent "died" or the framework was removed. */
  readonly #silenced = new Set<string>();

  constructor(config: EmuAgentConfig, ctx: AgentContext) {
    this.config = config;
    this.#ctx = ctx;
    this.#total = restoreTotal(
      config.resources,
      ctx.checkpoints?.load(config.hostname, config.id) ?? [],
      ctx.log,
    );
    const core = bagToCore(config.resources);
    this.#runner = new Agent(
      { hostname: config.hostname, agentId: config.id, resources: core, attributes: {}, portRanges: [] },
      {
        dataDir: ctx.dataDir,
        now: Date.now,
        onStatus: (s) => this.#onProcessStatus(s),
        spawner: ctx.spawner,
      },
    );
  }

  get id(): string {
    return this.config.id;
  }

  get total(): Bag {
    return this.#total;
  }

  /** An applied RESERVE, UNRESERVE, CREATE or DESTROY: the total trades `consumed` for `converted`, checkpointed. */
  convert(consumed: Bag, converted: Bag): void {
    this.#total = convertTotal(this.#total, consumed, converted);
    this.#ctx.checkpoints?.save(this.config.hostname, checkpointed(this.#total), this.id);
  }

  /** DESTROY's other half: the volume's directory goes, with all it holds. */
  destroyVolume(volumeId: string): Promise<void> {
    return this.#runner.destroyVolume(volumeId);
  }

  tasks(): AgentTask[] {
    return [...this.#tasks.values()];
  }

  task(taskId: string): AgentTask | undefined {
    return this.#tasks.get(taskId);
  }

  pid(taskId: string): number | undefined {
    return this.#runner.pid(taskId);
  }

  sandbox(taskId: string): string {
    return this.#runner.sandbox(taskId);
  }

  /** Starts a validated task; the master already holds it in TASK_STAGING. */
  launch(frameworkId: string, info: TaskInfo, defaultGraceMs: number): void {
    this.#tasks.set(info.task_id.value, { info, frameworkId, latest: "TASK_STAGING" });
    this.#runner.launch(toLaunchSpec(this.config, info, defaultGraceMs));
  }

  /**
   * The command executor's kill: TASK_KILLING first for frameworks that understand it, then SIGTERM and
   * SIGKILL after the grace period. False when the agent has no such live task.
   */
  kill(taskId: string, gracePeriodMs: number, sendKilling: boolean): boolean {
    const task = this.#tasks.get(taskId);
    if (!task || isTerminalState(task.latest)) return false;
    if (sendKilling && (task.latest === "TASK_STARTING" || task.latest === "TASK_RUNNING")) {
      this.#enqueue(
        task,
        this.#status(task, "TASK_KILLING", "SOURCE_EXECUTOR", { message: "Command is being killed" }),
      );
    }
    return this.#runner.kill(taskId, gracePeriodMs);
  }

  /** An ACKNOWLEDGE from the framework: only the head of a stream can be acknowledged. */
  acknowledge(taskId: string, uuid: string): AckResult {
    const stream = this.#streams.get(taskId);
    const head = stream?.pending[0];
    if (!stream || !head || head.uuid !== uuid) return "unexpected";
    clearTimeout(stream.timer);
    stream.timer = undefined;
    stream.pending.shift();
    stream.intervalMs = this.#ctx.retryMinMs;
    if (isTerminalState(head.state)) {
      this.#streams.delete(taskId);
      this.#tasks.delete(taskId);
      return "acked-terminal";
    }
    if (stream.pending.length > 0) this.#send(taskId, stream);
    return "acked";
  }

  /** Re-sends every stream's head at once, as an agent does after (re-)registering with a master. */
  resume(): void {
    for (const [taskId, stream] of this.#streams) {
      clearTimeout(stream.timer);
      stream.timer = undefined;
      if (stream.pending.length > 0) this.#send(taskId, stream);
    }
  }

  /** Kills every process of a framework and forgets its tasks and updates (framework removed). */
  async shutdownFramework(frameworkId: string): Promise<void> {
    const ids = [...this.#tasks.values()].filter((t) => t.frameworkId === frameworkId).map((t) =>
      t.info.task_id.value
    );
    for (const id of ids) this.#forget(id);
    for (const id of ids) this.#runner.kill(id, 0);
    await this.#runner.idle();
  }

  /** The agent process dies: processes killed, nothing more is reported, its streams are gone. */
  async crash(): Promise<void> {
    for (const id of [...this.#tasks.keys()]) this.#forget(id);
    const ending: Ending = { state: "TASK_LOST", reason: "REASON_AGENT_REMOVED", message: "Agent removed" };
    await this.#runner.shutdown(ending, 0);
  }

  #forget(taskId: string): void {
    this.#silenced.add(taskId);
    this.#tasks.delete(taskId);
    clearTimeout(this.#streams.get(taskId)?.timer);
    this.#streams.delete(taskId);
  }

  #onProcessStatus(s: CoreStatus): void {
    const task = this.#tasks.get(s.taskId);
    // The master already reports TASK_STAGING; executors never send it.
    if (!task || s.state === "TASK_STAGING" || this.#silenced.has(s.taskId)) return;
    // The agent speaks for an executor that died and for a container its isolator destroyed (a disk quota).
    const source =
      s.reason === "REASON_EXECUTOR_TERMINATED" || s.reason?.startsWith("REASON_CONTAINER_LIMITATION")
        ? "SOURCE_AGENT"
        : "SOURCE_EXECUTOR";
    this.#enqueue(
      task,
      this.#status(task, s.state, source, { message: s.message, reason: s.reason, healthy: s.healthy }),
    );
    // The task's process is its executor's here, so a terminal update means the executor exited.
    if (task.info.executor && isTerminalState(s.state)) {
      this.#ctx.executorExited?.(this, task.frameworkId, executorIdOf(task.info), waitStatus(s.message));
    }
  }

  #status(
    task: AgentTask,
    state: TaskState,
    source: TaskStatus["source"],
    extra: { message?: string; reason?: string; healthy?: boolean },
  ): TaskStatus {
    const taskId = task.info.task_id.value;
    const status: TaskStatus = {
      task_id: { value: taskId },
      state,
      source,
      agent_id: { value: this.id },
      executor_id: { value: executorIdOf(task.info) },
      timestamp: Date.now() / 1000,
      uuid: encodeBase64(crypto.getRandomValues(new Uint8Array(16))),
    };
    if (extra.message) status.message = extra.message;
    if (extra.reason) status.reason = extra.reason as TaskStatusReason;
    if (extra.healthy !== undefined) status.healthy = extra.healthy;
    const pid = this.pid(taskId);
    if (pid !== undefined) {
      status.container_status = { container_id: { value: `${this.id}.${taskId}` }, executor_pid: pid };
    }
    return status;
  }

  #enqueue(task: AgentTask, status: TaskStatus): void {
    const taskId = task.info.task_id.value;
    task.latest = status.state;
    let stream = this.#streams.get(taskId);
    if (!stream) {
      stream = { frameworkId: task.frameworkId, pending: [], intervalMs: this.#ctx.retryMinMs };
      this.#streams.set(taskId, stream);
    }
    stream.pending.push(status);
    // Only the head is in flight; later updates wait for its acknowledgement.
    if (stream.pending.length === 1) this.#send(taskId, stream);
  }

  #send(taskId: string, stream: UpdateStream): void {
    const task = this.#tasks.get(taskId);
    if (!task) return;
    this.#ctx.forward(this, stream.frameworkId, stream.pending[0], task.latest);
    clearTimeout(stream.timer);
    stream.timer = setTimeout(() => {
      stream.intervalMs = Math.min(this.#ctx.retryMaxMs, stream.intervalMs * 2);
      this.#send(taskId, stream);
    }, stream.intervalMs);
  }

  /** Stops retry timers and every process without reporting (emulator shutdown). */
  async stop(): Promise<void> {
    await this.crash();
  }
}

/**
 * TaskInfo → what the process runner needs. `shell: false` runs the argv the task's containerizer would (see
 * `execOf`). A custom executor's command runs in the task's place (there is no executor API here for it to
 * take the task over), with the variable an agent gives an executor.
 */
function toLaunchSpec(agent: EmuAgentConfig, info: TaskInfo, defaultGraceMs: number): LaunchSpec {
  const cmd = info.executor?.command ?? info.command ?? {};
  const env: Record<string, string> = {};
  for (const v of cmd.environment?.variables ?? []) env[v.name] = v.value ?? "";
  if (info.executor) env.MESOS_EXECUTOR_ID = info.executor.executor_id.value;
  const taskId = info.task_id.value;
  const shell = cmd.shell !== false;
  const container = info.executor?.container ?? info.container;
  const exec = shell ? { value: cmd.value, arguments: [] } : execOf(cmd, container);
  const grace = info.kill_policy?.grace_period;
  return {
    taskId,
    // The runner always exports PELOTON_* variables; tasks of other frameworks get neutral values.
    jobId: env.PELOTON_JOB_ID ?? taskId,
    instanceId: Number(env.PELOTON_INSTANCE_ID ?? 0) || 0,
    hostname: agent.hostname,
    agentId: agent.id,
    resources: bagToCore(bagFromMesos(info.resources)),
    ports: {},
    // The runner takes the executable, then the arguments after argv[0].
    command: {
      shell,
      value: exec.value,
      arguments: exec.arguments,
      ...(cmd.uris?.length ? { uris: cmd.uris.map(fromMesosUri) } : {}),
      ...(cmd.user ? { user: cmd.user } : {}),
    },
    env,
    killGracePeriodMs: grace ? Number(grace.nanoseconds) / 1e6 : defaultGraceMs,
    labels: [],
    // The runner's checker stands in for the command executor's (Mesos's grace period is not modelled).
    healthCheck: info.health_check && fromHealthCheck(info.health_check),
    ...containerAndSecrets(container),
    ...persistentVolume(info),
  };
}

/**
 * The executable a `shell: false` command runs and its arguments after argv[0], as its containerizer builds
 * them: the Mesos containerizer runs `execvp(value, arguments)`, `arguments` being the whole argv; the Docker
 * containerizer runs `docker run ... <image> <value> <arguments...>` (`Docker::run`), where they follow
 * `value` (the image's entrypoint aside: there is no image here), or stand alone when it has none.
 */
function execOf(
  cmd: CommandInfo,
  container: ContainerInfo | undefined,
): { value?: string; arguments: string[] } {
  const args = cmd.arguments ?? [];
  if (container?.type !== "DOCKER") return { value: cmd.value, arguments: args.slice(1) };
  return cmd.value ? { value: cmd.value, arguments: args } : { value: args[0], arguments: args.slice(1) };
}

/**
 * The task's persistent volume (a disk resource with `disk.persistence`), which the runner keeps under the
 * agent, outside every sandbox, and links at its `container_path` in the sandbox, as Mesos mounts it there.
 */
function persistentVolume(info: TaskInfo): Pick<LaunchSpec, "volume"> {
  const r = [...info.resources ?? [], ...info.executor?.resources ?? []].find((x) => x.disk?.persistence);
  if (!r) return {};
  const containerPath = r.disk!.volume?.container_path ?? "";
  return {
    volume: { volumeId: r.disk!.persistence!.id, containerPath, sizeMb: Number(r.scalar?.value ?? 0) },
  };
}

// Signal numbers (Linux) of the endings the runner reports by name.
const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGTERM: 15,
};

/** The `waitpid` status of a process from the runner's message ("exited with status 3" is 3 << 8). */
function waitStatus(message: string | undefined): number | undefined {
  const exited = /exited with status (\d+)/.exec(message ?? "");
  if (exited) return Number(exited[1]) << 8;
  const signal = /terminated with signal (\w+)/.exec(message ?? "");
  return signal ? SIGNALS[signal[1]] : undefined;
}

/**
 * The volume/secret isolator's share: SECRET volumes of type VALUE (the master let no other kind through)
 * leave the container and are written by the runner, under the sandbox as the minicluster does, there
 * being no container filesystem here. A container that held only them is no container.
 */
function containerAndSecrets(c: ContainerInfo | undefined): Pick<LaunchSpec, "container" | "secrets"> {
  if (!c) return {};
  const isSecret = (v: Volume) => v.source?.type === "SECRET";
  const secrets = (c.volumes ?? []).filter(isSecret).map((v) => ({
    path: v.container_path,
    data: v.source?.secret?.value?.data ?? "",
  }));
  if (secrets.length === 0) return { container: fromContainerInfo(c) };
  const volumes = c.volumes!.filter((v) => !isSecret(v));
  const rest: ContainerInfo = { ...c, volumes };
  if (volumes.length === 0) delete rest.volumes;
  const bare = rest.type === "MESOS" && Object.keys(rest).every((k) => k === "type");
  return bare ? { secrets } : { container: fromContainerInfo(rest), secrets };
}
