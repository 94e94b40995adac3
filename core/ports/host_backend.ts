/** HostBackend port: the cluster the host manager drives (simulated hosts, minicluster or Mesos). */
import type { ContainerInfo } from "../model/config_types.ts";
import type { Resources } from "../model/resources.ts";
import type { MesosTaskState } from "../model/states.ts";

/** An agent as the backend reports it: total resources, attributes and port ranges. */
export interface HostInfo {
  hostname: string;
  agentId: string;
  resources: Resources;
  /** Agent attributes (rack, zone, host_pool, peloton/exclusive, ...). */
  attributes: Record<string, string>;
  /** Inclusive port ranges the host offers. */
  portRanges: [number, number][];
  /** The agent's IP address, when the backend knows it (Peloton's HostInfo `ip`, from the agent's PID). */
  ip?: string;
}

export interface CommandSpec {
  shell: boolean;
  value?: string;
  arguments: string[];
  /** Files the backend fetches into the task's sandbox before it starts (Mesos `CommandInfo.URI`). */
  uris?: FetchUri[];
  /** The user to run the task as (Mesos `CommandInfo.user`); the minicluster runs it as its own user. */
  user?: string;
}

/** Mesos `CommandInfo.URI`: `extract` defaults to true, as in Mesos; an executable file is not extracted. */
export interface FetchUri {
  value: string;
  executable?: boolean;
  extract?: boolean;
  cache?: boolean;
  /** The file's name in the sandbox (default: the URI's last path segment). */
  outputFile?: string;
}

/** Everything a backend needs to start one task. */
export interface LaunchSpec {
  /** Mesos task id `<jobId>-<instanceId>-<runId>`. */
  taskId: string;
  jobId: string;
  instanceId: number;
  hostname: string;
  agentId: string;
  resources: Resources;
  ports: Record<string, number>;
  command: CommandSpec;
  env: Record<string, string>;
  killGracePeriodMs: number;
  /** The task's labels; the host manager counts them for TASK-kind constraints. */
  labels: { key: string; value: string }[];
  /** Runs on revocable (slack) cpus; the first to go when slack shrinks. */
  revocable?: boolean;
  /** A health check the backend runs on the task (Mesos `HealthCheck`). */
  healthCheck?: HealthCheckSpec;
  /**
   * A persistent volume: the backend keeps it on the host across runs (under the agent, not the
   * task's sandbox) and makes it available at `containerPath` relative to the sandbox.
   */
  volume?: { volumeId: string; containerPath: string; sizeMb: number };
  /**
   * The task's container (Peloton's `TaskConfig.container`, Mesos `ContainerInfo`): a Docker image, or a
   * Mesos container with an image. Mesos runs the command inside it; the minicluster, which has no
   * container runtime, runs the command on the host with the Docker `env` parameters as its environment.
   */
  container?: ContainerInfo;
  /**
   * The job's secrets (Peloton's secret volumes, Mesos `Volume.Source.SECRET` of type VALUE), each to be
   * written before the command starts at `path` in the container, read-only; the minicluster, which has no
   * container, writes them under the task's sandbox (an absolute path relative to the sandbox). `data` is
   * base64. Never logged.
   */
  secrets?: { path: string; data: string }[];
  /**
   * A custom executor (Peloton's `TaskConfig.executor`, CUSTOM being the only type Peloton launches): the
   * backend runs the task's command and container as this executor's, and the executor reads `data`.
   */
  executor?: ExecutorSpec;
}

/**
 * Peloton's `TaskConfig.executor`, a Mesos ExecutorInfo of type CUSTOM (Aurora's thermos executor, say), as
 * the task config gave it: `data` is read, other ExecutorInfo fields (`name`, `labels`, ...) pass through.
 */
export interface ExecutorSpec {
  type: "CUSTOM";
  /** The executor's payload, base64 (a proto `bytes` field), e.g. thermos's task description. */
  data?: string;
  name?: string;
  [field: string]: unknown;
}

/**
 * A health check as the backend runs it. After `initialIntervalSecs`, every `intervalSecs` the check
 * runs with `timeoutSecs`; each result that changes the task's health is reported as a TASK_RUNNING
 * status with `healthy`; after `maxConsecutiveFailures` failures in a row the backend kills the task
 * (TASK_KILLED, reason REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, healthy false).
 */
export interface HealthCheckSpec {
  type: "COMMAND" | "HTTP";
  /** COMMAND: run with /bin/sh -c, healthy on exit 0. */
  command?: string;
  /**
   * COMMAND: run without the task's environment variables (Peloton's `commandCheck.unshareEnvironments`);
   * by default the check sees them, as the task does.
   */
  unshareEnvironments?: boolean;
  /** HTTP: GET http://127.0.0.1:<port><path>, healthy on a 2xx/3xx answer. */
  http?: { port: number; path: string; scheme: string };
  initialIntervalSecs: number;
  intervalSecs: number;
  timeoutSecs: number;
  maxConsecutiveFailures: number;
}

export interface TaskStatus {
  taskId: string;
  state: MesosTaskState;
  hostname: string;
  agentId: string;
  timeMs: number;
  message?: string;
  /** Mesos `TaskStatus.Reason` name, e.g. REASON_COMMAND_EXECUTOR_FAILED. */
  reason?: string;
  exitCode?: number;
  /** Set when the task has a health check and this update reports its result. */
  healthy?: boolean;
  /**
   * Set by backends whose updates must be acknowledged (Mesos `TaskStatus.uuid`, base64). The host
   * manager acknowledges only after the job and resource managers have processed the update.
   */
  uuid?: string;
}

export type BackendEvent =
  | { kind: "host-up"; host: HostInfo }
  | { kind: "host-lost"; hostname: string; agentId: string; reason: string }
  /** The revocable resources a host can lend now (Mesos revocable offers); replaces the last report. */
  | { kind: "host-slack"; hostname: string; slack: Resources }
  | { kind: "task-status"; status: TaskStatus }
  /**
   * Persistent volumes (or reservations labelled for one) the backend found on a host that this run of it did
   * not make: ones a restart kept it from destroying, say. The host manager destroys (`destroyVolumes`) those
   * the store does not know, and keeps every one it does.
   */
  | { kind: "volumes-found"; hostname: string; agentId: string; volumeIds: string[] }
  /**
   * What a host holds reserved for each of its persistent volumes (Mesos: the volume's disk and the pieces
   * dynamically reserved with it; the minicluster and the simulator reserve a launch's cpu, memory and GPUs
   * with its volume's size, as a Mesos RESERVE does), replacing the last report. The host manager keeps an idle volume's reservation (its task is
   * not running there) from other work, for the volume's own task.
   */
  | { kind: "volume-reservations"; hostname: string; volumes: VolumeReservation[] };

/** A persistent volume's reservation on its host, in the core's units (its disk counts the volume's size). */
export interface VolumeReservation {
  volumeId: string;
  resources: Resources;
}

/**
 * The backend pushes events through the sink it was started with, in batches; it never calls the
 * sink synchronously from `launch` or `kill`.
 */
export interface HostBackend {
  start(sink: (events: BackendEvent[]) => void): void;
  launch(tasks: LaunchSpec[]): void;
  /** Kills with a grace period: SIGTERM, then SIGKILL after `gracePeriodMs`. */
  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void;
  /** Asks for the current status of the given tasks (explicit) or of all tasks (implicit). */
  reconcile(taskIds?: string[]): void;
  /** Acknowledges processed updates that carried a `uuid` (backends without acknowledgements omit it). */
  acknowledge?(acks: { taskId: string; agentId: string; uuid: string }[]): void;
  /**
   * A backend that takes machines down for maintenance itself (the minicluster; Mesos's `/machine/down` and
   * `/machine/up` are carried by a sync instead) has both: `machineDown` takes a DRAINED host's machine down
   * (its agent leaves, host-lost, and offers nothing), `machineUp` brings it up once its maintenance is
   * completed (its agent registers again, host-up). Both are safe to call again.
   */
  machineDown?(hostname: string): void;
  machineUp?(hostname: string): void;
  /**
   * Destroys persistent volumes that were deleted (Peloton's DeleteVolume; Mesos's DESTROY): their data is
   * gone from their host, so a volume made later, under the same id or on the same host, starts empty. One a
   * live task still mounts is left as it is. `agentId` is empty when the host manager does not know the
   * host. A backend that keeps no volumes (the simulator) has none; the Mesos backend's destroys wait for an offer
   * carrying the volume (DESTROY + UNRESERVE), since Mesos offers no volume a task still uses.
   */
  destroyVolumes?(volumes: VolumeRef[]): void;
  /** Removes the sandboxes of deleted jobs' ended runs at once (optional: Mesos collects them itself). */
  removeSandboxes?(jobIds: string[]): void;
  /**
   * The backend keeps a persistent volume as it was created (Mesos matches a volume whole, at its container
   * path and size), so a job's volume may not change its path or size. The host manager tells the job
   * managers in its full host inventory.
   */
  readonly fixedVolumes?: boolean;
  stop(): Promise<void>;
}

/** A persistent volume on a host, as `destroyVolumes` names it. */
export interface VolumeRef {
  volumeId: string;
  hostname: string;
  agentId: string;
}

/** A backend's machine maintenance, both calls present. */
export type MachineBackend = Required<Pick<HostBackend, "machineDown" | "machineUp">>;
