/**
 * Normalized shapes of Peloton's configuration messages, in proto-JSON (camelCase) names with enums as
 * their names. The zod schemas in `job_config.ts`, `respool_config.ts`, `update_config.ts` and
 * `stateless_spec.ts` accept both key styles found in Peloton's YAML files and produce these shapes.
 */
import type { JobType } from "./states.ts";

export interface Label {
  key: string;
  value: string;
}

/** v0 `task.ResourceConfig`, API units. */
export interface ResourceConfig {
  cpuLimit: number;
  memLimitMb: number;
  diskLimitMb: number;
  fdLimit: number;
  gpuLimit: number;
}

export interface EnvironmentVariable {
  name: string;
  value: string;
}

/** `mesos.v1.CommandInfo` (subset Peloton used). */
export interface CommandInfo {
  shell: boolean;
  value?: string;
  arguments: string[];
  environment: { variables: EnvironmentVariable[] };
  uris: { value: string; executable?: boolean; extract?: boolean; cache?: boolean; outputFile?: string }[];
  user?: string;
}

/** `mesos.v1.ContainerInfo`, kept as given (type normalized to its name). */
export interface ContainerInfo {
  type: "DOCKER" | "MESOS";
  docker?: {
    image?: string;
    network?: string;
    parameters?: Label[];
    forcePullImage?: boolean;
    privileged?: boolean;
    [k: string]: unknown;
  };
  mesos?: { image?: unknown; [k: string]: unknown };
  volumes?: { containerPath: string; hostPath?: string; mode?: "RW" | "RO" }[];
  [k: string]: unknown;
}

export type HealthCheckType = "UNKNOWN" | "COMMAND" | "HTTP" | "GRPC";

/** v0 `task.HealthCheckConfig`; defaults are Mesos's (15 s initial, 10 s interval, 3 failures, 20 s timeout). */
export interface HealthCheckConfig {
  enabled: boolean;
  initialIntervalSecs: number;
  intervalSecs: number;
  maxConsecutiveFailures: number;
  timeoutSecs: number;
  type: HealthCheckType;
  commandCheck?: { command: string; unshareEnvironments?: boolean };
  httpCheck?: { scheme?: string; port: number; path?: string };
}

/** A port a task needs: `value` 0 means dynamic, exported through `envName`. */
export interface PortConfig {
  name: string;
  value: number;
  envName?: string;
}

export type LabelConstraintKind = "TASK" | "HOST";
export type LabelConstraintCondition = "LESS_THAN" | "EQUAL" | "GREATER_THAN";

export interface LabelConstraint {
  kind: LabelConstraintKind;
  condition: LabelConstraintCondition;
  label: Label;
  requirement: number;
}

/** v0 `task.Constraint`: a label constraint or an AND/OR of constraints. */
export type Constraint =
  | { type: "LABEL_CONSTRAINT"; labelConstraint: LabelConstraint }
  | { type: "AND_CONSTRAINT"; andConstraint: { constraints: Constraint[] } }
  | { type: "OR_CONSTRAINT"; orConstraint: { constraints: Constraint[] } };

export interface RestartPolicy {
  maxFailures: number;
}

export interface PersistentVolumeConfig {
  containerPath: string;
  sizeMB: number;
}

export type PreemptionPolicyType = "INVALID" | "PREEMPTIBLE" | "NON_PREEMPTIBLE";

export interface PreemptionPolicy {
  type: PreemptionPolicyType;
  killOnPreempt: boolean;
}

/** v0 `task.TaskConfig`. Absent optional sections stay absent (merge rules depend on it). */
export interface TaskConfig {
  name?: string;
  labels?: Label[];
  resource?: ResourceConfig;
  container?: ContainerInfo;
  command?: CommandInfo;
  executor?: Record<string, unknown>;
  healthCheck?: HealthCheckConfig;
  ports?: PortConfig[];
  constraint?: Constraint;
  restartPolicy?: RestartPolicy;
  volume?: PersistentVolumeConfig;
  preemptionPolicy?: PreemptionPolicy;
  controller?: boolean;
  killGracePeriodSeconds?: number;
  revocable?: boolean;
}

/** v0 `job.SlaConfig`. */
export interface SlaConfig {
  priority: number;
  preemptible: boolean;
  revocable: boolean;
  maximumRunningInstances: number;
  minimumRunningInstances: number;
  maxRunningTime: number;
  maximumUnavailableInstances: number;
}

export type PlacementStrategy = "PLACEMENT_STRATEGY_INVALID" | "PACK_HOST" | "SPREAD_JOB";

/** v0 `job.JobConfig`. */
export interface JobConfig {
  name: string;
  type: JobType;
  owningTeam: string;
  ldapGroups: string[];
  description: string;
  owner: string;
  labels: Label[];
  instanceCount: number;
  sla: SlaConfig;
  defaultConfig: TaskConfig;
  /** Per-instance overrides, merged top-level field by field over `defaultConfig`. */
  instanceConfig: Record<number, TaskConfig>;
  respoolId?: string;
  placementStrategy: PlacementStrategy;
}

export type RespoolResourceKind = "cpu" | "memory" | "disk" | "gpu";
export type ReservationType = "ELASTIC" | "STATIC";

/** v0 `respool.ResourceConfig`. */
export interface RespoolResourceConfig {
  kind: RespoolResourceKind;
  reservation: number;
  limit: number;
  share: number;
  type: ReservationType;
}

/** v0 `respool.ResourcePoolConfig`. */
export interface RespoolConfig {
  name: string;
  owningTeam: string;
  ldapGroups: string[];
  description: string;
  resources: RespoolResourceConfig[];
  /** Parent pool id (`root` for top-level pools); the CLI derives it from the path. */
  parent?: string;
  policy: "UNKNOWN" | "PriorityFIFO";
  controllerLimit?: { maxPercent: number };
  slackLimit?: { maxPercent: number };
}

/** v0 `update.UpdateConfig`. */
export interface UpdateConfig {
  batchSize: number;
  batchPercentage: number;
  stopBeforeUpdate: boolean;
  startPaused: boolean;
  rollbackOnFailure: boolean;
  maxInstanceAttempts: number;
  maxFailureInstances: number;
  inPlace: boolean;
  startTasks: boolean;
  /**
   * Not in Peloton: how long an instance without a health check must stay RUNNING at its new config
   * before it counts as updated (Kubernetes' `minReadySeconds`, Nomad's `min_healthy_time`). A run that
   * ends sooner is a failed attempt. Absent in workflows stored before it existed: the default applies.
   */
  minRunningSeconds?: number;
}

/** v1alpha `pod.ContainerSpec` (subset with every field Peloton's files use). */
export interface ContainerSpec {
  name?: string;
  resource?: {
    cpuLimit: number;
    memLimitMb: number;
    diskLimitMb: number;
    fdLimit: number;
    gpuLimit: number;
  };
  container?: ContainerInfo;
  command?: CommandInfo;
  executor?: Record<string, unknown>;
  livenessCheck?: HealthCheckConfig;
  readinessCheck?: HealthCheckConfig;
  ports?: { name: string; value: number; envName?: string; type?: string }[];
  entrypoint?: { value: string; arguments: string[] };
  environment?: EnvironmentVariable[];
  image?: string;
  volumeMounts?: { name: string; readOnly?: boolean; mountPath: string }[];
}

/** v1alpha `pod.PodSpec`. */
export interface PodSpec {
  podName?: string;
  labels?: Label[];
  initContainers?: ContainerSpec[];
  containers: ContainerSpec[];
  constraint?: Constraint;
  restartPolicy?: RestartPolicy;
  volume?: PersistentVolumeConfig;
  preemptionPolicy?: { killOnPreempt: boolean };
  controller?: boolean;
  killGracePeriodSeconds?: number;
  revocable?: boolean;
  volumes?: Record<string, unknown>[];
  mesosSpec?: Record<string, unknown>;
  hostPorts?: boolean;
}

/** v1alpha `job.stateless.JobSpec`. */
export interface StatelessJobSpec {
  name: string;
  owner: string;
  owningTeam: string;
  ldapGroups: string[];
  description: string;
  labels: Label[];
  instanceCount: number;
  sla: { priority: number; preemptible: boolean; revocable: boolean; maximumUnavailableInstances: number };
  defaultSpec: PodSpec;
  instanceSpec: Record<number, PodSpec>;
  respoolId?: string;
}
