/** Mesos v1 scheduler and operator API messages as JSON on the wire: proto field names, enum names. */

export const SCHEDULER_PATH = "/api/v1/scheduler";
export const OPERATOR_PATH = "/api/v1";
/** Compared exactly by the master: `application/json; charset=utf-8` gets 415. */
export const CONTENT_TYPE_JSON = "application/json";
export const CONTENT_TYPE_PROTOBUF = "application/x-protobuf";
export const STREAM_ID_HEADER = "Mesos-Stream-Id";

export const CALL_TYPES = [
  "SUBSCRIBE",
  "TEARDOWN",
  "ACCEPT",
  "DECLINE",
  "ACCEPT_INVERSE_OFFERS",
  "DECLINE_INVERSE_OFFERS",
  "REVIVE",
  "KILL",
  "SHUTDOWN",
  "ACKNOWLEDGE",
  "ACKNOWLEDGE_OPERATION_STATUS",
  "RECONCILE",
  "RECONCILE_OPERATIONS",
  "MESSAGE",
  "REQUEST",
  "SUPPRESS",
  "UPDATE_FRAMEWORK",
] as const;
export type CallType = typeof CALL_TYPES[number];

export const EVENT_TYPES = [
  "SUBSCRIBED",
  "OFFERS",
  "INVERSE_OFFERS",
  "RESCIND",
  "RESCIND_INVERSE_OFFER",
  "UPDATE",
  "UPDATE_OPERATION_STATUS",
  "MESSAGE",
  "FAILURE",
  "ERROR",
  "HEARTBEAT",
] as const;
export type EventType = typeof EVENT_TYPES[number];

export const TASK_STATES = [
  "TASK_STAGING",
  "TASK_STARTING",
  "TASK_RUNNING",
  "TASK_KILLING",
  "TASK_FINISHED",
  "TASK_FAILED",
  "TASK_KILLED",
  "TASK_ERROR",
  "TASK_LOST",
  "TASK_DROPPED",
  "TASK_UNREACHABLE",
  "TASK_GONE",
  "TASK_GONE_BY_OPERATOR",
  "TASK_UNKNOWN",
] as const;
export type TaskState = typeof TASK_STATES[number];

const TERMINAL = new Set<string>([
  "TASK_FINISHED",
  "TASK_FAILED",
  "TASK_KILLED",
  "TASK_ERROR",
  "TASK_LOST",
  "TASK_DROPPED",
  "TASK_GONE",
  "TASK_GONE_BY_OPERATOR",
  "TASK_UNKNOWN",
]);

/** Mesos's `protobuf::isTerminalState`: TASK_UNREACHABLE is not terminal (the agent may come back). */
export function isTerminalState(state: string): boolean {
  return TERMINAL.has(state);
}

export const TASK_STATUS_SOURCES = ["SOURCE_MASTER", "SOURCE_AGENT", "SOURCE_EXECUTOR"] as const;
export type TaskStatusSource = typeof TASK_STATUS_SOURCES[number];

export const TASK_STATUS_REASONS = [
  "REASON_COMMAND_EXECUTOR_FAILED",
  "REASON_CONTAINER_LAUNCH_FAILED",
  "REASON_CONTAINER_LIMITATION",
  "REASON_CONTAINER_LIMITATION_DISK",
  "REASON_CONTAINER_LIMITATION_MEMORY",
  "REASON_CONTAINER_PREEMPTED",
  "REASON_CONTAINER_UPDATE_FAILED",
  "REASON_MAX_COMPLETION_TIME_REACHED",
  "REASON_EXECUTOR_REGISTRATION_TIMEOUT",
  "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
  "REASON_EXECUTOR_TERMINATED",
  "REASON_EXECUTOR_UNREGISTERED",
  "REASON_FRAMEWORK_REMOVED",
  "REASON_GC_ERROR",
  "REASON_INVALID_FRAMEWORKID",
  "REASON_INVALID_OFFERS",
  "REASON_IO_SWITCHBOARD_EXITED",
  "REASON_MASTER_DISCONNECTED",
  "REASON_RECONCILIATION",
  "REASON_RESOURCES_UNKNOWN",
  "REASON_AGENT_DISCONNECTED",
  "REASON_AGENT_DRAINING",
  "REASON_AGENT_REMOVED",
  "REASON_AGENT_REMOVED_BY_OPERATOR",
  "REASON_AGENT_REREGISTERED",
  "REASON_AGENT_RESTARTED",
  "REASON_AGENT_UNKNOWN",
  "REASON_TASK_KILLED_DURING_LAUNCH",
  "REASON_TASK_CHECK_STATUS_UPDATED",
  "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED",
  "REASON_TASK_GROUP_INVALID",
  "REASON_TASK_GROUP_UNAUTHORIZED",
  "REASON_TASK_INVALID",
  "REASON_TASK_UNAUTHORIZED",
  "REASON_TASK_UNKNOWN",
] as const;
export type TaskStatusReason = typeof TASK_STATUS_REASONS[number];

export const FRAMEWORK_CAPABILITIES = [
  "REVOCABLE_RESOURCES",
  "TASK_KILLING_STATE",
  "GPU_RESOURCES",
  "SHARED_RESOURCES",
  "PARTITION_AWARE",
  "MULTI_ROLE",
  "RESERVATION_REFINEMENT",
  "REGION_AWARE",
] as const;
export type FrameworkCapability = typeof FRAMEWORK_CAPABILITIES[number];

export const VALUE_TYPES = ["SCALAR", "RANGES", "SET", "TEXT"] as const;
export const OPERATION_TYPES = [
  "LAUNCH",
  "LAUNCH_GROUP",
  "RESERVE",
  "UNRESERVE",
  "CREATE",
  "DESTROY",
  "GROW_VOLUME",
  "SHRINK_VOLUME",
  "CREATE_DISK",
  "DESTROY_DISK",
] as const;
export const INVERSE_OFFER_STATUSES = ["UNKNOWN", "ACCEPT", "DECLINE"] as const;

export interface ID {
  value: string;
}
export interface Scalar {
  value: number;
}
export interface Range {
  begin: number;
  end: number;
}
export interface Ranges {
  range: Range[];
}
export interface TimeInfo {
  nanoseconds: number;
}
export type DurationInfo = TimeInfo;

export interface Resource {
  name: string;
  type: "SCALAR" | "RANGES" | "SET";
  scalar?: Scalar;
  ranges?: Ranges;
  set?: { item: string[] };
  /** Deprecated pre-refinement format: `*` or the reserved role (`reservation` set when it is dynamic). */
  role?: string;
  reservation?: { principal?: string; labels?: { labels: Label[] } };
  allocation_info?: { role: string };
  /** Post-refinement format (RESERVATION_REFINEMENT frameworks): the reservations, the most refined last. */
  reservations?: ReservationInfo[];
  /** A persistent volume or a disk with a source (MOUNT, PATH, ...): never scratch space. */
  disk?: {
    persistence?: { id: string; principal?: string };
    volume?: { container_path?: string; mode?: "RW" | "RO"; host_path?: string };
    source?: unknown;
  };
  /** A shared resource (SHARED_RESOURCES frameworks), usable by several tasks at once. */
  shared?: Record<string, never>;
  revocable?: Record<string, never>;
}

export interface ReservationInfo {
  type?: "UNKNOWN" | "STATIC" | "DYNAMIC";
  role?: string;
  principal?: string;
  labels?: { labels: Label[] };
}

export interface Attribute {
  name: string;
  type: "SCALAR" | "RANGES" | "SET" | "TEXT";
  scalar?: Scalar;
  ranges?: Ranges;
  set?: { item: string[] };
  text?: { value: string };
}

export interface Unavailability {
  start: TimeInfo;
  duration?: DurationInfo;
}

export interface Offer {
  id: ID;
  framework_id: ID;
  agent_id: ID;
  hostname: string;
  allocation_info?: { role: string };
  resources: Resource[];
  attributes?: Attribute[];
  executor_ids?: ID[];
  unavailability?: Unavailability;
  url?: unknown;
}

export interface InverseOffer {
  id: ID;
  framework_id: ID;
  agent_id?: ID;
  unavailability: Unavailability;
  resources?: Resource[];
  url?: unknown;
}

export interface Label {
  key: string;
  value?: string;
}

export interface CommandInfo {
  /** Default true: `sh -c value`; false: `value` is the executable and `arguments` the full argv. */
  shell?: boolean;
  value?: string;
  arguments?: string[];
  environment?: { variables: { name: string; value?: string }[] };
  uris?: MesosUri[];
  user?: string;
}

/** `CommandInfo.URI`: a file the agent's fetcher puts in the sandbox before the task starts. */
export interface MesosUri {
  value: string;
  executable?: boolean;
  extract?: boolean;
  cache?: boolean;
  output_file?: string;
}

export interface KillPolicy {
  grace_period?: DurationInfo;
}

/** `mesos.proto` HealthCheck, run by the task's executor; results come back as `TaskStatus.healthy`. */
export interface HealthCheck {
  type: "COMMAND" | "HTTP" | "TCP";
  /** Seconds before the first check (default 15). */
  delay_seconds?: number;
  interval_seconds?: number;
  timeout_seconds?: number;
  /** Failures in a row after which the executor kills the task (default 3). */
  consecutive_failures?: number;
  /** Seconds after launch during which failures do not count (default 10). */
  grace_period_seconds?: number;
  command?: CommandInfo;
  http?: { port: number; path?: string; scheme?: string };
}

/**
 * `mesos.proto` ContainerInfo (the fields Peloton's job files use; others pass through): a Docker image
 * run by the Docker containerizer, or a Mesos container with an image.
 */
export interface ContainerInfo {
  type: "DOCKER" | "MESOS";
  docker?: {
    image: string;
    network?: "HOST" | "BRIDGE" | "NONE" | "USER";
    port_mappings?: { host_port: number; container_port: number; protocol?: string }[];
    privileged?: boolean;
    parameters?: { key: string; value: string }[];
    force_pull_image?: boolean;
    volume_driver?: string;
    [k: string]: unknown;
  };
  mesos?: {
    image?: { type: "APPC" | "DOCKER"; docker?: { name: string; [k: string]: unknown }; cached?: boolean };
    [k: string]: unknown;
  };
  volumes?: Volume[];
  hostname?: string;
  [k: string]: unknown;
}

/** `mesos.proto` Volume: a host path, an image, or a `source` (Peloton sends a job's secrets as SECRET ones). */
export interface Volume {
  container_path: string;
  mode: "RW" | "RO";
  host_path?: string;
  source?: VolumeSource;
  [k: string]: unknown;
}

export interface VolumeSource {
  type?: "UNKNOWN" | "DOCKER_VOLUME" | "HOST_PATH" | "SANDBOX_PATH" | "SECRET";
  secret?: Secret;
  [k: string]: unknown;
}

/** `mesos.proto` Secret: by value (`value.data`, base64 as every `bytes` field) or a reference to a store. */
export interface Secret {
  type?: "UNKNOWN" | "REFERENCE" | "VALUE";
  reference?: { name: string; key?: string };
  value?: { data: string };
}

/**
 * `mesos.proto` ExecutorInfo: a custom executor the agent starts with `command` (in `container`) and that
 * then runs the task; `data` (base64) is its payload. The fields Peloton sends; others pass through.
 */
export interface ExecutorInfo {
  type?: "UNKNOWN" | "DEFAULT" | "CUSTOM";
  executor_id: ID;
  framework_id?: ID;
  command?: CommandInfo;
  container?: ContainerInfo;
  resources?: Resource[];
  name?: string;
  data?: string;
  labels?: { labels: Label[] };
  shutdown_grace_period?: DurationInfo;
  [k: string]: unknown;
}

export interface TaskInfo {
  name: string;
  task_id: ID;
  agent_id: ID;
  resources: Resource[];
  /** Exactly one of `command` (the built-in command executor runs it) and `executor`. */
  command?: CommandInfo;
  container?: ContainerInfo;
  executor?: ExecutorInfo;
  /** Base64 bytes for the task's executor (Peloton copies `ExecutorInfo.data` here for thermos). */
  data?: string;
  health_check?: HealthCheck;
  kill_policy?: KillPolicy;
  labels?: { labels: Label[] };
  max_completion_time?: DurationInfo;
}

export interface Operation {
  type: typeof OPERATION_TYPES[number];
  launch?: { task_infos: TaskInfo[] };
  launch_group?: unknown;
  /** Dynamically reserves resources for the framework's role (`Offer.Operation.Reserve`). */
  reserve?: { resources: Resource[] };
  unreserve?: { resources: Resource[] };
  /** Makes persistent volumes of reserved disk (`Offer.Operation.Create`). */
  create?: { volumes: Resource[] };
  destroy?: { volumes: Resource[] };
}

export interface Filters {
  refuse_seconds?: number;
}

export interface TaskStatus {
  task_id: ID;
  state: TaskState;
  message?: string;
  source?: TaskStatusSource;
  reason?: TaskStatusReason;
  data?: string;
  agent_id?: ID;
  executor_id?: ID;
  timestamp?: number;
  /** Base64 of 16 bytes; present only on updates that must be acknowledged. */
  uuid?: string;
  healthy?: boolean;
  labels?: { labels: Label[] };
  container_status?: { container_id?: ID; executor_pid?: number };
  unreachable_time?: TimeInfo;
}

export interface FrameworkInfo {
  user: string;
  name: string;
  id?: ID;
  /** Seconds; the master's default 0 kills every task at the first disconnection. */
  failover_timeout?: number;
  checkpoint?: boolean;
  /** Deprecated single role (frameworks without MULTI_ROLE). */
  role?: string;
  roles?: string[];
  hostname?: string;
  principal?: string;
  webui_url?: string;
  capabilities?: { type: FrameworkCapability }[];
  labels?: { labels: Label[] };
}

export interface MasterInfo {
  id: string;
  ip: number;
  port: number;
  hostname?: string;
  version?: string;
  address?: { hostname?: string; ip?: string; port: number };
}

interface CallBase {
  framework_id?: ID;
}

export type Call =
  & CallBase
  & (
    | {
      type: "SUBSCRIBE";
      subscribe: { framework_info: FrameworkInfo; suppressed_roles?: string[]; offer_constraints?: unknown };
    }
    | { type: "TEARDOWN" }
    | { type: "ACCEPT"; accept: { offer_ids: ID[]; operations?: Operation[]; filters?: Filters } }
    | { type: "DECLINE"; decline: { offer_ids: ID[]; filters?: Filters } }
    | { type: "ACCEPT_INVERSE_OFFERS"; accept_inverse_offers: { inverse_offer_ids: ID[]; filters?: Filters } }
    | {
      type: "DECLINE_INVERSE_OFFERS";
      decline_inverse_offers: { inverse_offer_ids: ID[]; filters?: Filters };
    }
    | { type: "REVIVE"; revive?: { roles?: string[] } }
    | { type: "SUPPRESS"; suppress?: { roles?: string[] } }
    | { type: "KILL"; kill: { task_id: ID; agent_id?: ID; kill_policy?: KillPolicy } }
    | { type: "SHUTDOWN"; shutdown: { executor_id: ID; agent_id: ID } }
    | { type: "ACKNOWLEDGE"; acknowledge: { agent_id: ID; task_id: ID; uuid: string } }
    | { type: "RECONCILE"; reconcile: { tasks?: { task_id: ID; agent_id?: ID }[] } }
    | { type: "MESSAGE"; message: { agent_id: ID; executor_id: ID; data: string } }
    | { type: "REQUEST"; request: { requests: { agent_id?: ID; resources: Resource[] }[] } }
    | { type: "ACKNOWLEDGE_OPERATION_STATUS" | "RECONCILE_OPERATIONS" | "UPDATE_FRAMEWORK" }
  );

export type Event =
  | {
    type: "SUBSCRIBED";
    subscribed: { framework_id: ID; heartbeat_interval_seconds?: number; master_info?: MasterInfo };
  }
  | { type: "OFFERS"; offers: { offers: Offer[] } }
  | { type: "INVERSE_OFFERS"; inverse_offers: { inverse_offers: InverseOffer[] } }
  | { type: "RESCIND"; rescind: { offer_id: ID } }
  | { type: "RESCIND_INVERSE_OFFER"; rescind_inverse_offer: { inverse_offer_id: ID } }
  | { type: "UPDATE"; update: { status: TaskStatus } }
  | { type: "UPDATE_OPERATION_STATUS"; update_operation_status: { status: unknown } }
  | { type: "MESSAGE"; message: { agent_id: ID; executor_id: ID; data: string } }
  | { type: "FAILURE"; failure: { agent_id?: ID; executor_id?: ID; status?: number } }
  | { type: "ERROR"; error: { message: string } }
  | { type: "HEARTBEAT" };

export type EventOf<T extends EventType> = Extract<Event, { type: T }>;

/** `maintenance.proto` MachineID: both parts must match what the agent announces. */
export interface MachineID {
  hostname?: string;
  ip?: string;
}

export interface MaintenanceWindow {
  machine_ids: MachineID[];
  unavailability: Unavailability;
}

export interface MaintenanceSchedule {
  windows?: MaintenanceWindow[];
}

export interface MaintenanceStatus {
  draining_machines?: {
    id: MachineID;
    statuses?: { framework_id: ID; status: typeof INVERSE_OFFER_STATUSES[number]; timestamp?: TimeInfo }[];
  }[];
  down_machines?: MachineID[];
}

/** One entry of the operator API's GET_AGENTS answer (the fields this project reads and the emulator writes). */
export interface OperatorAgent {
  agent_info: {
    hostname: string;
    id?: ID;
    port?: number;
    resources?: Resource[];
    attributes?: Attribute[];
  };
  active?: boolean;
  pid?: string;
  version?: string;
  registered_time?: TimeInfo;
  total_resources?: Resource[];
  allocated_resources?: Resource[];
  offered_resources?: Resource[];
}

/** The sub-message field of a call or event type: `ACCEPT_INVERSE_OFFERS` → `accept_inverse_offers`. */
export function payloadField(type: string): string {
  return type.toLowerCase();
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decodes a `bytes` field as the master does: standard base64, padding optional. */
export function decodeBase64(text: string): Uint8Array | undefined {
  const clean = text.replace(/\s+/g, "");
  if (!B64.test(clean)) return undefined;
  const padded = clean.padEnd(Math.ceil(clean.length / 4) * 4, "=");
  try {
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

export function encodeBase64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** Seconds ↔ the `nanoseconds` of TimeInfo/DurationInfo (int64 as a JSON number, µs precision above 2^53). */
export function msToDuration(ms: number): DurationInfo {
  return { nanoseconds: Math.round(ms * 1e6) };
}

export function durationToMs(d: DurationInfo | undefined): number | undefined {
  return d === undefined ? undefined : Number(d.nanoseconds) / 1e6;
}
