/** Messages between the daemons: each daemon's narrow surface, as discriminated unions on `kind`. */
import type { Constraint, Label, PlacementStrategy } from "./model/config_types.ts";
import type { Resources } from "./model/resources.ts";
import type { HostState, TaskState, TaskType } from "./model/states.ts";
import type { LaunchSpec, TaskStatus } from "./ports/host_backend.ts";
import type { Address } from "./ports/transport.ts";

// ---------------------------------------------------------------------------------------------
// Shared shapes

/** A task as the resource manager and placement engine see it (Peloton's `resmgr.Task`). */
export interface RmTask {
  /** Mesos task id `<jobId>-<instanceId>-<runId>`. */
  taskId: string;
  jobId: string;
  instanceId: number;
  respoolId: string;
  resources: Resources;
  priority: number;
  preemptible: boolean;
  revocable: boolean;
  controller: boolean;
  taskType: TaskType;
  /** Port names the task needs; placement picks numbers for dynamic ones (value 0). */
  ports: { name: string; value: number }[];
  constraint?: Constraint;
  labels: Label[];
  placementStrategy: PlacementStrategy;
  /** Preferred host (in-place updates): placement tries it first, then falls back after a deadline. */
  desiredHost?: string;
  /** The only host the task may run on (a daemon instance, a stateful task's volume). */
  requiredHost?: string;
  /** Gang size when the task belongs to a gang (`minimumRunningInstances`), else 1. */
  minInstances: number;
}

/** Gangs are admitted and placed all or nothing. */
export interface Gang {
  tasks: RmTask[];
}

/** Tasks placed on one leased host; the job manager launches them with the lease. */
export interface HostPlacement {
  leaseId: string;
  hostname: string;
  agentId: string;
  tasks: { taskId: string; ports: Record<string, number> }[];
  /**
   * Set when the tasks on this lease belong to several job managers (production runs several): the
   * placement is split, one part per owner, and the host manager keeps the lease until every part launched.
   */
  parts?: number;
}

export interface PlacementFailure {
  taskId: string;
  reason: string;
}

/** Tasks a placement engine still holds and keeps trying, with the reason their latest round failed. */
export interface PlacementPending {
  reason: string;
  taskIds: string[];
}

/** A running task the resource manager wants back (Peloton's preemption queue). */
export interface Preemption {
  taskId: string;
  reason: "PREEMPTION_REASON_REVOKE_RESOURCES" | "PREEMPTION_REASON_HOST_MAINTENANCE";
}

/** A task state change the resource manager reports to the job manager. */
export interface RmStateChange {
  taskId: string;
  state: TaskState;
  timeMs: number;
  reason?: string;
}

/** A host the host manager lends to one placement engine until launch or release. */
export interface HostLease {
  leaseId: string;
  hostname: string;
  agentId: string;
  /** Free resources when leased. */
  free: Resources;
  total: Resources;
  /** Free slack (revocable) resources; revocable tasks take their cpu from here. */
  freeSlack: Resources;
  attributes: Record<string, string>;
  /** Free ports, as inclusive ranges. */
  freePorts: [number, number][];
  /** Tasks on the host per label `key=value` the filter asked to count (TASK-kind constraints). */
  labelCounts?: Record<string, number>;
  /** A GPU host kept for GPU work (`scarce_resource_types`): work without GPUs must not use it. */
  keptForGpu?: boolean;
}

export interface HostFilter {
  /** Minimum free resources a host must have. */
  minResources: Resources;
  numPorts: number;
  /**
   * Static port values the work asks for (a subset of `numPorts`): a host is leased only with every one in
   * its ranges and free. Left out when there are none.
   */
  staticPorts?: number[];
  maxHosts: number;
  /** Whether the work needs GPUs: GPU hosts are kept for GPU work. */
  gpu: boolean;
  /** Hosts to try first (desired host). */
  hints?: string[];
  /** Evaluated for its HOST-kind labels (and the host limit of a top-level TASK label). */
  constraint?: Constraint;
  /** Revocable work: cpu is matched against free slack, the rest against regular free resources. */
  revocable?: boolean;
  /** Stop leasing once the hosts have room for this many tasks of `minResources`. */
  tasks?: number;
  /** Count at most this many tasks per host toward `tasks` (1 for spreading). */
  tasksPerHost?: number;
  /** Walk order: least free first (best fit, default) or most free first (spreading). */
  order?: "least-free" | "most-free";
  /** The only host that may be leased (a daemon instance, a stateful task's volume). */
  requiredHost?: string;
  /**
   * `<jobId>-<instanceId>` of the filter's tasks pinned to `requiredHost` (placement sets it): each may
   * have a persistent volume there, named after it (`<jobId>-<instanceId>-volume-<uuid>`), whose idle
   * reservation the host manager keeps from other work and gives to that task.
   */
  volumeOwners?: string[];
  /** Task labels (`key=value`) to count on each leased host. */
  countLabels?: string[];
  /**
   * The filter's one task, when it has a host reserved: that host is counted by what it lacks, not as
   * "host reserved for a large task" (it is reserved for this task, not against it).
   */
  reservedFor?: string;
}

export interface ClusterCapacity {
  physical: Resources;
  slack: Resources;
}

/** A public API call carried to the daemon that serves it (Peloton procedure names and JSON shapes). */
export interface ApiRequest {
  kind: "api";
  reqId: number;
  replyTo: Address;
  procedure: string;
  body: unknown;
  /**
   * A job manager's GetResourcePool for a create: the resource manager claims the pool, if a leaf, under
   * `key` (the job's id, when the job is named already) and refuses to delete it (busy, naming the job)
   * until the job's tasks are enqueued, the claim is released (`release-pool-claim`), or it expires. Never
   * set from outside the daemons.
   */
  poolClaim?: { key: string; jobId?: string };
}

/** `error.code` follows YARPC/gRPC names: invalid-argument, not-found, already-exists, ... */
export interface ApiReply {
  kind: "api-reply";
  reqId: number;
  body?: unknown;
  error?: { code: ApiErrorCode; message: string };
}

export type ApiErrorCode =
  | "invalid-argument"
  | "not-found"
  | "already-exists"
  | "failed-precondition"
  | "out-of-range"
  | "aborted"
  | "cancelled"
  | "deadline-exceeded"
  | "unimplemented"
  | "internal"
  | "unavailable";

/**
 * The v1alpha WatchService's stream (`peloton.api.v1alpha.watch.svc.WatchService::Watch`). A Watch call is an
 * `api` message like any other: its `api-reply` carries the first WatchResponse (`{watchId}`) or the error
 * that refused it. Then every change the watch matches comes to the call's `replyTo` as a `watch-event`
 * carrying one WatchResponse (`{watchId, pods: [PodSummary]}` or `{watchId, statelessJobs: [JobSummary]}`),
 * until a `watch-end` says why the stream ends (`cancelled` by WatchService::Cancel, `unavailable` when the
 * job manager stops or hands the job over). The caller that stops listening sends WatchService::Cancel.
 */
export interface WatchEvent {
  kind: "watch-event";
  watchId: string;
  response: { watchId: string; pods?: unknown[]; statelessJobs?: unknown[] };
}

export interface WatchEnd {
  kind: "watch-end";
  watchId: string;
  error: { code: ApiErrorCode; message: string };
}

// ---------------------------------------------------------------------------------------------
// To the resource manager

export type ResmgrMessage =
  /** `owner`: the job manager that drives these tasks; their placements and changes go to it alone. */
  | { kind: "enqueue-gangs"; gangs: Gang[]; owner?: Address }
  | { kind: "dequeue-gangs"; reqId: number; replyTo: Address; limit: number; timeoutMs: number }
  /** `pending`: interim reasons of tasks the engine keeps trying (shown by `task list`, not handed back). */
  | {
    kind: "set-placements";
    placements: HostPlacement[];
    failed: PlacementFailure[];
    pending?: PlacementPending[];
  }
  | { kind: "get-placements"; reqId: number; replyTo: Address; limit: number; timeoutMs: number }
  /** `ackToken`: answer with `statuses-processed` once handled (the backend acknowledges only then). */
  | { kind: "task-updates"; updates: TaskUpdate[]; ackToken?: number }
  /** Forget tasks (killed before they ran): out of their queue, allocation released. */
  | { kind: "drop-tasks"; taskIds: string[] }
  /**
   * Claims made by a job manager's pool lookup for a create (`ApiRequest.poolClaim`): `name-pool-claim`
   * makes one made before the job was named the job's (kept under its id from then on), so it ends when
   * the job's tasks are enqueued; `release-pool-claim` ends one whose create failed. Both safe to repeat.
   */
  | { kind: "name-pool-claim"; key: string; jobId: string }
  | { kind: "release-pool-claim"; key: string }
  /** Tasks on hosts going into maintenance: the job manager is to move them (Peloton's host drainer). */
  | { kind: "drain-tasks"; taskIds: string[] }
  /**
   * Drains the job manager holds back for its jobs' SLA: the tasks run on (RUNNING again here, not
   * PREEMPTING), and the host manager's next drain request (every entitlement period) asks again.
   */
  | { kind: "drains-held"; taskIds: string[] }
  /** Tasks already launched, re-registered after a restart so their allocation is accounted. */
  | { kind: "track-tasks"; tasks: { task: RmTask; state: TaskState }[]; owner?: Address }
  /**
   * `roomFreed`: room appeared that the capacity does not show (a host left maintenance), so placement
   * should retry held work now.
   */
  | { kind: "cluster-capacity"; reqId: number; capacity: ClusterCapacity; roomFreed?: boolean }
  | PeerChanged;

/** A task status as the host manager saw it, mapped to Peloton's task state. */
export interface TaskUpdate {
  taskId: string;
  state: TaskState;
  hostname: string;
  timeMs: number;
  resources?: Resources;
}

// ---------------------------------------------------------------------------------------------
// To the host manager

export type HostmgrMessage =
  /** The job or resource manager has handled (and stored) a batch of statuses. */
  | { kind: "statuses-processed"; ackToken: number }
  /**
   * Leases hosts for each filter in order; one request per placement round. `held`: leases the engine
   * keeps from an earlier round for this one; its hosts are in the round, so no filter counts them.
   */
  | { kind: "acquire-hosts"; reqId: number; replyTo: Address; filters: HostFilter[]; held?: string[] }
  | { kind: "release-hosts"; leaseIds: string[] }
  /** `parts`: the placement's `parts`; the lease stays valid until that many launches used it. */
  | { kind: "launch-tasks"; leaseId: string; hostname: string; tasks: LaunchSpec[]; parts?: number }
  /** `hostname`: where the task runs, when the job manager knows it (spares the host manager a search). */
  | { kind: "kill-tasks"; tasks: { taskId: string; gracePeriodMs: number; hostname?: string }[] }
  /** Launched tasks known from the store after a restart: account them and reconcile with the backend. */
  | { kind: "reconcile-tasks"; tasks: LaunchSpec[] }
  /** Deleted persistent volumes: the backend destroys their data on the host each was made on. */
  | { kind: "destroy-volumes"; volumes: { volumeId: string; hostname: string }[] }
  /** Deleted jobs: the backend removes their ended runs' sandboxes now, not after its retention period. */
  | { kind: "remove-sandboxes"; jobIds: string[] }
  | { kind: "get-cluster-capacity"; reqId: number; replyTo: Address }
  /**
   * Reserves a host for a large task that keeps failing: its freed resources go to no one else until
   * the task fits, then it is leased to `replyTo` with a `reservation-update`. `reservationId` (the
   * engine's, unique per engine incarnation) names this reservation in the update and the cancel: a task
   * holds one reservation at a time, and a new id replaces the task's older one, unless that id was
   * cancelled already (the cancel overtook the request): such a request is refused.
   */
  | {
    kind: "reserve-host";
    reqId: number;
    replyTo: Address;
    taskId: string;
    reservationId: string;
    filter: HostFilter;
  }
  /** Ends the named reservation; one of the task's that has since replaced it stays. */
  | { kind: "cancel-reservation"; taskId: string; reservationId: string }
  | PeerChanged;

// ---------------------------------------------------------------------------------------------
// To the job manager

export type JobmgrMessage =
  /** `ackToken`: answer with `statuses-processed` once the new states are stored. */
  | { kind: "task-statuses"; statuses: MappedTaskStatus[]; ackToken?: number }
  | HostInventory
  | PeerChanged;

/**
 * Production's separate daemons: another daemon restarted or a new leader took over, so what it kept in
 * memory is gone and must be sent again (the job manager resends its tasks; the host manager its hosts
 * and capacity). The mode's wiring sends it when its registry sees the change.
 */
export interface PeerChanged {
  kind: "peer-changed";
  role: "resmgr" | "hostmgr" | "jobmgr" | "placement";
  /**
   * Set when that process is gone for good (it died or stopped): the resource manager takes back the tasks
   * a placement engine held and the hosts leased for a job manager's undelivered placements.
   */
  gone?: Address;
}

/** Hosts as the job manager needs them for daemon jobs: pushed by the host manager when hosts change. */
export interface HostInventory {
  kind: "host-inventory";
  /** A full inventory replaces what the job manager knew; otherwise these hosts changed. */
  full: boolean;
  /** On a full inventory: the host manager's backend keeps volumes as created (`HostBackend.fixedVolumes`). */
  fixedVolumes?: boolean;
  hosts: { hostname: string; attributes: Record<string, string>; state: HostState | "LOST" }[];
}

/** A backend status with Peloton's state, as the host manager forwards it. */
export interface MappedTaskStatus extends TaskStatus {
  pelotonState: TaskState;
}

// ---------------------------------------------------------------------------------------------
// Replies

export type ReplyMessage =
  /**
   * `roomEpoch`: grows each time room may have appeared (tasks ended, a host joined or came back); a
   * placement engine that sees it change retries the work it holds back without waiting out its backoff.
   */
  | { kind: "gangs"; reqId: number; gangs: Gang[]; roomEpoch?: number }
  | {
    kind: "placements";
    reqId: number;
    placements: HostPlacement[];
    changes: RmStateChange[];
    /** Running tasks to evict; the job manager kills them and, unless `killOnPreempt`, runs them again. */
    preemptions?: Preemption[];
  }
  | {
    kind: "hosts-acquired";
    reqId: number;
    leases: HostLease[];
    /** Per filter: hosts not in the round (not leased by any filter, nor held), by reason; each counted once. */
    rejections: Record<string, number>[];
    /** Per filter: every matching host was leased (false: the filter stopped at its limit). */
    exhausted: boolean[];
    /** The largest host's cpu, memory and gpu (each the largest of any host): what "large" is measured by. */
    largestHost?: Resources;
  }
  /** A reserve-host answer: the reserved host, or why none can ever fit. */
  | { kind: "host-reserved"; reqId: number; hostname?: string; reason?: string };

// ---------------------------------------------------------------------------------------------
// To the placement engine

/**
 * A reservation completed (the host is leased to the engine) or ended without room. `reservationId` is
 * the reserve request's: an update of a reservation the engine has since cancelled is told from one of
 * the task's next reservation by it, whatever order messages arrive in.
 */
export type PlacementMessage =
  | {
    kind: "reservation-update";
    taskId: string;
    reservationId: string;
    lease?: HostLease;
    reason?: string;
  }
  /**
   * The resource manager dropped these tasks (stopped, killed) while this engine held them (PLACING): the
   * engine stops placing them at once, and hands the rest of a gang that lost a member back (`failed`).
   * Ids the engine does not hold are ignored (it may have handed them back meanwhile).
   */
  | { kind: "tasks-dropped"; taskIds: string[] };

export type Message =
  | ResmgrMessage
  | HostmgrMessage
  | JobmgrMessage
  | ReplyMessage
  | PlacementMessage
  | ApiRequest
  | ApiReply
  | WatchEvent
  | WatchEnd;

/**
 * Why a leaf pool's queued tasks wait (the resource pool API's `GetAdmissionWaits`, ours): the pool's path
 * and limit (cores, MB, MB, GPUs: a non-revocable task asking for more can never be admitted), and, for each
 * of its queues whose first gang is not admitted, why, in words. Every gang waits in `pending` first;
 * Peloton's admission moves one refused at its head to the queue of its kind (`nonPreemptible`, with
 * preemption on; `controller`; `revocable`), where it waits apart. Each queue stops at its own first gang.
 */
export interface AdmissionWaits {
  path: string;
  limit: { cpu: number; memory: number; disk: number; gpu: number };
  /** Preemption is on: non-preemptible work is held to the pool's reservation, in its own queue. */
  preemption: boolean;
  queues: { pending?: string; nonPreemptible?: string; controller?: string; revocable?: string };
  /**
   * Per queue with a wait, the gang that holds it: its job and size (a task behind another job's gang is
   * told it is behind that gang, not told of it as if it were its own). `passedOver`: the queue holds no
   * one; its reason is only that the pool can never admit this gang, which the gangs behind pass. Left
   * out when no queue waits (and by resource managers older than it).
   */
  heads?: Partial<Record<keyof AdmissionWaits["queues"], AdmissionHead>>;
}

export interface AdmissionHead {
  jobId: string;
  tasks: number;
  passedOver?: boolean;
}
