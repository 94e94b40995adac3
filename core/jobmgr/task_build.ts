/** Builds what the other daemons need from a task: the resource manager's task and the launch spec. */
import type { HostPlacement, RmTask } from "../messages.ts";
import type { JobConfig, Label, TaskConfig } from "../model/config_types.ts";
import { mergeTaskConfig } from "../model/job_config.ts";
import { mesosTaskId, type SecretRecord, type TaskRecord } from "../model/records.ts";
import { fromLimits, type Resources } from "../model/resources.ts";
import { isTerminalTaskState, type TaskType } from "../model/states.ts";
import type { ExecutorSpec, HealthCheckSpec, LaunchSpec } from "../ports/host_backend.ts";

/** Peloton's default kill grace period (`task_builder.go`). */
export const DEFAULT_KILL_GRACE_MS = 30_000;

/** A task's SIGTERM-to-SIGKILL grace; unset or 0 means Peloton's default of 30 s. */
export function killGraceMs(tc: TaskConfig): number {
  return tc.killGracePeriodSeconds ? tc.killGracePeriodSeconds * 1000 : DEFAULT_KILL_GRACE_MS;
}

/** Merged task configs of one job, computed once per instance that has an override. */
export class TaskConfigs {
  readonly #default: TaskConfig;
  readonly #byInstance = new Map<number, TaskConfig>();
  /**
   * Instances with a config of their own. Looked up on every task change, so kept as a Set: an `in` test
   * on the parsed config object costs a runtime call (its keys are numbers, its shape one of many).
   */
  readonly #overridden: ReadonlySet<number>;

  constructor(private readonly config: JobConfig) {
    this.#default = mergeTaskConfig(config, -1);
    this.#overridden = new Set(Object.keys(config.instanceConfig).map(Number));
  }

  /** Whether instance 0 is a controller task (its outcome decides the job's). */
  get controller0(): boolean {
    return this.get(0).controller === true;
  }

  /** The default config merged on its own (what a new daemon instance or added instance starts from). */
  get defaults(): TaskConfig {
    return this.#default;
  }

  get(instanceId: number): TaskConfig {
    if (!this.#overridden.has(instanceId)) return this.#default;
    let c = this.#byInstance.get(instanceId);
    if (!c) {
      c = mergeTaskConfig(this.config, instanceId);
      this.#byInstance.set(instanceId, c);
    }
    return c;
  }
}

export function taskTypeOf(config: JobConfig, task: TaskConfig): TaskType {
  if (config.type === "BATCH") return "BATCH";
  if (config.type === "DAEMON") return "DAEMON";
  return task.volume ? "STATEFUL" : "STATELESS";
}

/** Preemptible per job SLA unless the task's preemption policy overrides it. */
export function isPreemptible(config: JobConfig, task: TaskConfig): boolean {
  const p = task.preemptionPolicy?.type;
  if (p === "PREEMPTIBLE") return true;
  if (p === "NON_PREEMPTIBLE") return false;
  return config.sla.preemptible;
}

/** Gang size of an instance: instances below `minimumRunningInstances` form one gang (batch only). */
export function gangSize(config: JobConfig, instanceId: number, revocable: boolean): number {
  const min = config.sla.minimumRunningInstances;
  if (min > 1 && instanceId < min && config.type === "BATCH" && !revocable) return min;
  return 1;
}

/**
 * Whether the members of a gang waiting to be sent to the resource manager wait for this other member of
 * it (`actions`: its goal-state actions now): it is on its way back to the queue (being killed to run
 * again, ended with a retry due, INITIALIZED and to be started), as the members of a gang preempted whole
 * are, ending one by one. A member that runs is not waited for: the gang is running, and a member rejoining
 * it (failed and retried, its host drained) goes alone, as the gang's other members may wait for it. Nor is
 * one that will not run again (done, stopped, out of retries, removed), that already waits at the resource
 * manager, or that nothing starts (a rolling create has not reached it).
 */
export function gangAwaits(
  task: TaskRecord,
  actions: readonly string[],
  retriesLeft: () => boolean,
): boolean {
  const s = task.state;
  if (s === "INITIALIZED") return actions.includes("start") || actions.includes("initialize");
  if (s === "KILLING" || s === "PREEMPTING") {
    return task.goalState !== "KILLED" && task.goalState !== "DELETED";
  }
  if (!isTerminalTaskState(s)) return false;
  if (actions.includes("fail_retry")) return retriesLeft();
  return actions.includes("initialize") || actions.includes("preempt_retry") ||
    actions.includes("terminated_retry");
}

/**
 * A task's resources; a persistent volume's size is reserved as disk on its host. One object per task
 * config, shared by every task built from it (and by the other daemons, which only read it): a million
 * tasks then hold a few thousand resource vectors, not millions.
 */
export function taskResources(tc: TaskConfig): Resources {
  let r = SHARED.get(tc);
  if (!r) {
    r = fromLimits(tc.resource ?? {});
    if (tc.volume) r.diskMb += Math.ceil(tc.volume.sizeMB);
    SHARED.set(tc, r);
  }
  return r;
}

/** Derived values per task config (task configs are never changed once built). */
const SHARED = new WeakMap<TaskConfig, Resources>();
const COMMANDS = new WeakMap<TaskConfig, LaunchSpec["command"]>();
const RM_PORTS = new WeakMap<TaskConfig, RmTask["ports"]>();
const NO_LABELS: Label[] = [];

export function isRevocable(config: JobConfig, tc: TaskConfig): boolean {
  return config.sla.revocable || tc.revocable === true;
}

/** The health check a backend runs, from Peloton's `HealthCheckConfig` (none when disabled). */
export function healthCheckSpec(tc: TaskConfig, ports: Record<string, number>): HealthCheckSpec | undefined {
  const hc = tc.healthCheck;
  if (!hc?.enabled) return undefined;
  const timing = {
    initialIntervalSecs: hc.initialIntervalSecs,
    intervalSecs: hc.intervalSecs,
    timeoutSecs: hc.timeoutSecs,
    maxConsecutiveFailures: hc.maxConsecutiveFailures,
  };
  if (hc.type === "HTTP" && hc.httpCheck) {
    // Port 0 means the task's only (dynamic) port.
    const port = hc.httpCheck.port || Object.values(ports)[0] || 0;
    return {
      type: "HTTP",
      http: { port, path: hc.httpCheck.path ?? "/", scheme: hc.httpCheck.scheme ?? "http" },
      ...timing,
    };
  }
  const cc = hc.commandCheck;
  if (cc?.command) {
    const unshare = cc.unshareEnvironments ? { unshareEnvironments: true } : {};
    return { type: "COMMAND", command: cc.command, ...unshare, ...timing };
  }
  return undefined;
}

/** The task's executor as Peloton's host manager launches it: a CUSTOM one only (`populateExecutorInfo`). */
function customExecutor(tc: TaskConfig): ExecutorSpec | undefined {
  return tc.executor?.type === "CUSTOM" ? tc.executor as ExecutorSpec : undefined;
}

export function buildRmTask(
  job: { jobId: string; config: JobConfig },
  task: TaskRecord,
  tc: TaskConfig,
): RmTask {
  const revocable = isRevocable(job.config, tc);
  return {
    taskId: mesosTaskId(task.jobId, task.instanceId, task.runId),
    jobId: task.jobId,
    instanceId: task.instanceId,
    respoolId: job.config.respoolId ?? "",
    resources: taskResources(tc),
    priority: job.config.sla.priority,
    preemptible: isPreemptible(job.config, tc),
    revocable,
    controller: tc.controller === true,
    taskType: taskTypeOf(job.config, tc),
    ports: rmPorts(tc),
    constraint: tc.constraint,
    labels: tc.labels ?? NO_LABELS,
    placementStrategy: job.config.placementStrategy,
    desiredHost: task.desiredHost,
    requiredHost: task.requiredHost,
    minInstances: gangSize(job.config, task.instanceId, revocable),
  };
}

function rmPorts(tc: TaskConfig): RmTask["ports"] {
  let ports = RM_PORTS.get(tc);
  if (!ports) RM_PORTS.set(tc, ports = (tc.ports ?? []).map((p) => ({ name: p.name, value: p.value })));
  return ports;
}

function launchCommand(tc: TaskConfig): LaunchSpec["command"] {
  let c = COMMANDS.get(tc);
  if (!c) {
    c = {
      shell: tc.command?.shell ?? true,
      value: tc.command?.value,
      arguments: tc.command?.arguments ?? [],
    };
    if (tc.command?.uris?.length) c.uris = tc.command.uris;
    if (tc.command?.user) c.user = tc.command.user;
    COMMANDS.set(tc, c);
  }
  return c;
}

/** `taskId`: the run's Mesos task id when the caller has it already (a placement carries it). */
export function buildLaunchSpec(
  job: { config: JobConfig; secrets?: readonly SecretRecord[] },
  task: TaskRecord,
  tc: TaskConfig,
  placement: Pick<HostPlacement, "hostname" | "agentId">,
  ports: Record<string, number>,
  taskId = mesosTaskId(task.jobId, task.instanceId, task.runId),
): LaunchSpec {
  const env: Record<string, string> = {};
  for (const v of tc.command?.environment.variables ?? []) env[v.name] = v.value;
  for (const p of tc.ports ?? []) {
    if (p.envName && ports[p.name] !== undefined) env[p.envName] = String(ports[p.name]);
  }
  return {
    taskId,
    jobId: task.jobId,
    instanceId: task.instanceId,
    hostname: placement.hostname,
    agentId: placement.agentId,
    resources: taskResources(tc),
    ports,
    command: launchCommand(tc),
    env,
    killGracePeriodMs: killGraceMs(tc),
    labels: tc.labels ?? NO_LABELS,
    revocable: isRevocable(job.config, tc) || undefined,
    healthCheck: healthCheckSpec(tc, ports),
    container: tc.container,
    volume: tc.volume && task.volumeId
      ? { volumeId: task.volumeId, containerPath: tc.volume.containerPath, sizeMb: tc.volume.sizeMB }
      : undefined,
    secrets: job.secrets?.length ? job.secrets.map((s) => ({ path: s.path, data: s.data })) : undefined,
    executor: customExecutor(tc),
  };
}
