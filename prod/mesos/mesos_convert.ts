/** Pure conversions between the HostBackend port's shapes and Mesos messages. */
import { canonicalBase64 } from "../../core/model/base64.ts";
import type { ContainerInfo as CoreContainer } from "../../core/model/config_types.ts";
import type { MesosTaskState } from "../../core/model/states.ts";
import { portEnv } from "../../core/model/task_env.ts";
import type {
  ExecutorSpec,
  FetchUri,
  HealthCheckSpec,
  LaunchSpec,
  TaskStatus as CoreStatus,
} from "../../core/ports/host_backend.ts";
import {
  type CommandInfo,
  type ContainerInfo,
  decodeBase64,
  encodeBase64,
  type ExecutorInfo,
  type HealthCheck,
  type InverseOffer,
  type MesosUri,
  msToDuration,
  type OperatorAgent,
  type Resource,
  type TaskInfo,
  type TaskStatus,
  type Volume,
} from "./protocol.ts";
import { type Bag, bagFromCore, bagFromMesos, bagToMesos, reservedFor } from "./resources.ts";

type Secret = NonNullable<LaunchSpec["secrets"]>[number];

/** The resources a LaunchSpec asks for, its chosen ports included (revocable cpus for revocable tasks). */
export function specBag(spec: LaunchSpec): Bag {
  return bagFromCore(spec.resources, Object.values(spec.ports), spec.revocable === true);
}

/**
 * The port's health check as a Mesos HealthCheck. The grace period is 0 because the port's rule counts
 * every failure after the first delay; Mesos's default 10 s grace would ignore early ones. A COMMAND check
 * gets `environment`, the task's CommandInfo environment, unless it unshares it (Peloton's
 * `populateHealthCheck`).
 */
export function toHealthCheck(h: HealthCheckSpec, environment?: CommandInfo["environment"]): HealthCheck {
  const check: HealthCheck = {
    type: h.type,
    delay_seconds: h.initialIntervalSecs,
    interval_seconds: h.intervalSecs,
    timeout_seconds: h.timeoutSecs,
    consecutive_failures: h.maxConsecutiveFailures,
    grace_period_seconds: 0,
  };
  if (h.type === "COMMAND") {
    check.command = { shell: true, value: h.command ?? "" };
    if (environment && !h.unshareEnvironments) {
      check.command.environment = { variables: environment.variables.map((v) => ({ ...v })) };
    }
  } else if (h.http) check.http = { port: h.http.port, path: h.http.path, scheme: h.http.scheme };
  return check;
}

/** A Mesos HealthCheck as the port's spec (the emulator hands it to the process runner). */
export function fromHealthCheck(c: HealthCheck): HealthCheckSpec | undefined {
  if (c.type !== "COMMAND" && c.type !== "HTTP") return undefined;
  return {
    type: c.type,
    command: c.command?.value,
    http: c.http && { port: c.http.port, path: c.http.path ?? "/", scheme: c.http.scheme ?? "http" },
    initialIntervalSecs: c.delay_seconds ?? 15,
    intervalSecs: c.interval_seconds ?? 10,
    timeoutSecs: c.timeout_seconds ?? 20,
    maxConsecutiveFailures: c.consecutive_failures ?? 3,
  };
}

/** Peloton's id for a task's custom executor (`task_builder.go`): `thermos-` and the Mesos task id. */
export function customExecutorId(taskId: string): string {
  return `thermos-${taskId}`;
}

/** The name Peloton gives a custom executor that has none (`task_builder.go`). */
export const DEFAULT_EXECUTOR_NAME = "AuroraExecutor";

/**
 * A task's TaskInfo. `resources` are the pieces it takes from its offers (`takeResources`), each as
 * offered: reserved for the role or not, with the offer's `allocation_info`; without them, what the spec
 * asks for, unreserved. A LaunchSpec's `arguments` follow the minicluster's convention (the arguments after
 * argv[0]): see `toCommandArgv` for what Mesos wants. A task with a custom executor has no CommandInfo of
 * its own: its command and container go under the executor (`toExecutorInfo`).
 */
export function toTaskInfo(spec: LaunchSpec, resources: Resource[] = bagToMesos(specBag(spec))): TaskInfo {
  const env: Record<string, string> = {
    ...spec.env,
    ...portEnv(spec.ports),
    PELOTON_JOB_ID: spec.jobId,
    PELOTON_INSTANCE_ID: String(spec.instanceId),
    PELOTON_TASK_ID: `${spec.jobId}-${spec.instanceId}`,
  };
  let container = spec.container && toContainerInfo(spec.container);
  if (spec.secrets?.length) {
    // Peloton adds them to the task's container, a MESOS one when the task has none.
    container ??= { type: "MESOS" };
    container.volumes = [...container.volumes ?? [], ...spec.secrets.map(toSecretVolume)];
  }
  // The container the command runs in: a custom executor's own when the task has none.
  const docker = (container ?? spec.executor?.container as CoreContainer | undefined)?.type === "DOCKER";
  const value = spec.command.value ?? "";
  const command: CommandInfo = spec.command.shell
    ? { shell: true, value }
    : { shell: false, value, arguments: toCommandArgv(value, spec.command.arguments, docker) };
  command.environment = { variables: Object.entries(env).map(([name, v]) => ({ name, value: v })) };
  if (spec.command.uris?.length) command.uris = spec.command.uris.map((u) => snakeKeys(u) as MesosUri);
  if (spec.command.user) command.user = spec.command.user;
  const info: TaskInfo = {
    name: `${spec.jobId}-${spec.instanceId}`,
    task_id: { value: spec.taskId },
    agent_id: { value: spec.agentId },
    resources,
    kill_policy: { grace_period: msToDuration(spec.killGracePeriodMs) },
  };
  if (spec.executor) {
    info.executor = toExecutorInfo(spec.executor, spec.taskId, command, container);
    // The thermos executor reads its payload from the TaskInfo.
    if (info.executor.data !== undefined) info.data = info.executor.data;
  } else {
    info.command = command;
    if (container) info.container = container;
  }
  // The task's environment, so none when a custom executor holds the command (as Peloton's).
  if (spec.healthCheck) info.health_check = toHealthCheck(spec.healthCheck, info.command?.environment);
  if (spec.labels.length) info.labels = { labels: spec.labels.map((l) => ({ key: l.key, value: l.value })) };
  return info;
}

/**
 * A `shell: false` command's CommandInfo `arguments`, from the executable and the arguments after argv[0].
 * The Mesos containerizer runs `execvp(value, arguments)`, so there they are the whole argv, the executable
 * first; the Docker containerizer runs `docker run ... <image> <value> <arguments...>` (`Docker::run`), so
 * there they follow `value` and must not repeat it.
 */
function toCommandArgv(value: string, args: readonly string[], docker: boolean): string[] {
  return docker ? [...args] : [value, ...args];
}

/**
 * A custom executor as Peloton's host manager sends it (`populateExecutorInfo`, `populateCommandInfo`,
 * `populateContainerInfo`): the ExecutorInfo given, in the proto's JSON names, with Peloton's executor id,
 * a default name, the task's command, the task's container (else the executor's own), and no resources:
 * Peloton counts the executor's overhead in the task's own resources.
 */
function toExecutorInfo(
  e: ExecutorSpec,
  taskId: string,
  command: CommandInfo,
  container: ContainerInfo | undefined,
): ExecutorInfo {
  const info = snakeKeys(e) as ExecutorInfo;
  info.executor_id = { value: customExecutorId(taskId) };
  info.name ??= DEFAULT_EXECUTOR_NAME;
  delete info.resources;
  // Standard and padded, as Mesos decodes `bytes`, whichever form the proto3 JSON mapping allowed the job.
  if (info.data !== undefined) info.data = canonicalBase64(info.data) ?? info.data;
  info.command = command;
  if (container) info.container = container;
  else if (e.container) info.container = toContainerInfo(e.container as CoreContainer);
  return info;
}

/**
 * Why a task's custom executor cannot go to Mesos, or undefined: `data` that is not base64 (Mesos would
 * refuse the whole ACCEPT, every task in it, as JSON it cannot convert). The data itself is not quoted.
 */
export function executorProblem(executor: ExecutorSpec | undefined): string | undefined {
  if (executor?.data !== undefined && canonicalBase64(executor.data) === undefined) {
    return "executor.data is not valid base64";
  }
  return undefined;
}

/**
 * Peloton's `TaskConfig.container` is a Mesos ContainerInfo: sent as it is, in the proto's JSON names
 * (snake_case), with enums as names. A volume without a mode is read-write, as Peloton's files assume
 * (Mesos requires the field); an image type given as a number is named.
 */
export function toContainerInfo(c: CoreContainer): ContainerInfo {
  const out = snakeKeys(c) as ContainerInfo;
  for (const v of out.volumes ?? []) v.mode ??= "RW";
  const image = out.mesos?.image as { type?: unknown } | undefined;
  if (image && typeof image.type === "number") image.type = image.type === 1 ? "APPC" : "DOCKER";
  return out;
}

/**
 * A job's secret as Peloton hands it to Mesos: a read-only volume at `path` whose source is a SECRET of
 * type VALUE, its `data` the secret's bytes in standard base64 (how Mesos's JSON carries `bytes`). Throws
 * when `data` is not base64 (see `secretsProblem`), naming the path only.
 */
export function toSecretVolume(secret: Secret): Volume {
  const bytes = decodeBase64(secret.data);
  if (!bytes) {
    throw new Error(`Cannot convert secret ${JSON.stringify(secret.path)}: data is not valid base64`);
  }
  return {
    mode: "RO",
    container_path: secret.path,
    source: { type: "SECRET", secret: { type: "VALUE", value: { data: encodeBase64(bytes) } } },
  };
}

/**
 * Why a task's secrets cannot go to Mesos, or undefined: an empty path, or data that is not base64 (Mesos
 * would refuse the whole ACCEPT, every task in it, as JSON it cannot convert). Names the path, never the data.
 */
export function secretsProblem(secrets: readonly Secret[] | undefined): string | undefined {
  for (const s of secrets ?? []) {
    if (!s.path) return "secret: path is empty";
    if (decodeBase64(s.data) === undefined) {
      return `secret ${JSON.stringify(s.path)}: data is not valid base64`;
    }
  }
  return undefined;
}

/** A Mesos `CommandInfo.URI` as the port's (the emulator hands it to the process runner). */
export function fromMesosUri(u: MesosUri): FetchUri {
  return camelKeys(u) as FetchUri;
}

/** A Mesos ContainerInfo as the port's (the emulator hands it to the process runner). */
export function fromContainerInfo(c: ContainerInfo): CoreContainer {
  return camelKeys(c) as CoreContainer;
}

/**
 * Field names of ContainerInfo's messages and of CommandInfo.URI (mesos.proto, Mesos 1.x): a key given in
 * any case or spelling Peloton's files use (`portmappings`, `networkInfos`, `ip_addresses`) is sent by its
 * proto name, which Mesos's JSON parser requires (it skips names it does not know).
 */
const PROTO_FIELDS = [
  "type",
  "volumes",
  "hostname",
  "docker",
  "mesos",
  "network_infos",
  "linux_info",
  "rlimit_info",
  "tty_info",
  "image",
  "network",
  "port_mappings",
  "privileged",
  "parameters",
  "force_pull_image",
  "volume_driver",
  "host_port",
  "container_port",
  "protocol",
  "key",
  "value",
  "mode",
  "container_path",
  "host_path",
  "source",
  "docker_volume",
  "sandbox_path",
  "secret",
  "csi_volume",
  "driver",
  "name",
  "driver_options",
  "appc",
  "cached",
  "credential",
  "config",
  "id",
  "labels",
  "ip_addresses",
  "groups",
  "ip_address",
  "capability_info",
  "bounding_capabilities",
  "effective_capabilities",
  "share_pid_namespace",
  "seccomp",
  "ipc_mode",
  "shm_size",
  "rlimits",
  "hard",
  "soft",
  "window_size",
  "rows",
  "columns",
  "capabilities",
  "profile_name",
  "unconfined",
  "executable",
  "extract",
  "cache",
  "output_file",
  "principal",
];
const BY_CANON = new Map(PROTO_FIELDS.map((f) => [f.replaceAll("_", ""), f]));
const snake = (k: string) =>
  BY_CANON.get(k.toLowerCase().replaceAll("_", "")) ?? k.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);
const camel = (k: string) => k.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());

function mapKeys(v: unknown, key: (k: string) => string): unknown {
  if (Array.isArray(v)) return v.map((x) => mapKeys(x, key));
  if (v === null || typeof v !== "object") return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined) out[key(k)] = mapKeys(x, key);
  return out;
}
const snakeKeys = (v: unknown) => mapKeys(v, snake);
const camelKeys = (v: unknown) => mapKeys(v, camel);

const EXIT = /^Command exited with status (\d+)/;

/**
 * The states the master answers reconciliation with for a task it does not know (or knows only as
 * unreachable): the answer's message says why, and is the task's. For any other state the answer echoes the
 * task's latest state ("Reconciliation: Latest task state"), saying nothing about the task.
 */
const RECONCILED_UNKNOWN = new Set([
  "TASK_LOST",
  "TASK_GONE",
  "TASK_GONE_BY_OPERATOR",
  "TASK_UNREACHABLE",
  "TASK_UNKNOWN",
]);

/**
 * A Mesos update as the host manager sees it; `uuid` only when the update must be acknowledged. A
 * reconciliation answer's timestamp is when the master answered (Mesos stamps it `Clock::now()`), not when
 * the task reached its state: nothing in it tells when the task started, so a task first seen RUNNING in
 * one starts, as far as anyone here can know, at that time.
 */
export function toCoreStatus(
  s: TaskStatus,
  hostname: string,
  fallbackAgentId: string,
  nowMs: number,
): CoreStatus {
  const status: CoreStatus = {
    taskId: s.task_id.value,
    state: s.state as MesosTaskState,
    hostname,
    agentId: s.agent_id?.value ?? fallbackAgentId,
    timeMs: s.timestamp !== undefined ? Math.round(Number(s.timestamp) * 1000) : nowMs,
  };
  const echo = s.reason === "REASON_RECONCILIATION" && !RECONCILED_UNKNOWN.has(s.state);
  if (s.message !== undefined && !echo) status.message = s.message;
  if (s.reason !== undefined) status.reason = s.reason;
  const exit = s.message ? EXIT.exec(s.message) : null;
  if (exit) status.exitCode = Number(exit[1]);
  if (s.healthy !== undefined) status.healthy = s.healthy;
  if (s.uuid) status.uuid = s.uuid;
  return status;
}

/** Resources usable by `role`: unreserved ones and those reserved for the role; revocable ones are not capacity. */
export function usableBy(resources: Resource[], role: string): Resource[] {
  return resources.filter((r) => {
    if (r.revocable) return false;
    const owner = reservedFor(r);
    return owner === undefined || owner === role;
  });
}

/** An agent's total as the operator API reports it, restricted to what the role may use. */
export function operatorTotal(agent: OperatorAgent, role: string): Bag {
  return bagFromMesos(usableBy(agent.total_resources ?? agent.agent_info.resources ?? [], role));
}

/** `slave(1)@10.0.0.5:5051` → `10.0.0.5:5051`: where the agent's `/files` endpoint answers. */
export function agentAddress(agent: OperatorAgent): string | undefined {
  const m = agent.pid ? /@([^@]+)$/.exec(agent.pid) : null;
  if (m) return m[1];
  return agent.agent_info.hostname
    ? `${agent.agent_info.hostname}:${agent.agent_info.port ?? 5051}`
    : undefined;
}

/** Maintenance as Mesos announces it; the lead wires it to the host manager's drain flow later. */
export type MaintenanceEvent =
  | {
    kind: "inverse-offers";
    offers: { id: string; agentId?: string; hostname?: string; startMs: number; durationMs?: number }[];
  }
  | { kind: "inverse-offer-rescinded"; id: string };

/** INVERSE_OFFERS as a maintenance event: which hosts go away when, in milliseconds. */
export function toMaintenanceEvent(
  list: InverseOffer[],
  hostnameOf: (agentId: string) => string | undefined,
): MaintenanceEvent {
  return {
    kind: "inverse-offers",
    offers: list.map((io) => ({
      id: io.id.value,
      agentId: io.agent_id?.value,
      hostname: io.agent_id ? hostnameOf(io.agent_id.value) : undefined,
      startMs: Number(io.unavailability.start.nanoseconds) / 1e6,
      durationMs: io.unavailability.duration
        ? Number(io.unavailability.duration.nanoseconds) / 1e6
        : undefined,
    })),
  };
}
