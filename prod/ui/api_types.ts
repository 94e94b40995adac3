/** The slices of Peloton's API replies the web UI reads (types only: erased before the page is built). */

export interface IdValue {
  value: string;
}

export type TaskStats = Record<string, number>;

export interface ResourceLimits {
  cpuLimit?: number;
  memLimitMb?: number;
  diskLimitMb?: number;
  gpuLimit?: number;
}

export interface JobConfigJson {
  name: string;
  type: string;
  owningTeam?: string;
  owner?: string;
  description?: string;
  instanceCount: number;
  respoolID?: IdValue;
  labels?: { key: string; value: string }[];
  sla?: { priority?: number; preemptible?: boolean; revocable?: boolean; maxRunningTime?: number };
  defaultConfig?: TaskConfigJson;
  /** Per-instance overrides by instance id, each merged over `defaultConfig` top-level field by field. */
  instanceConfig?: Record<string, TaskConfigJson>;
  changeLog?: { version: number };
}

/** v0 `task.TaskConfig`, the fields the UI names; an instance override may hold any of its fields. */
export interface TaskConfigJson {
  name?: string;
  resource?: ResourceLimits;
  command?: { value?: string };
  killGracePeriodSeconds?: number;
  labels?: { key: string; value: string }[];
  /** The persistent volume the task keeps across runs on its host. */
  volume?: { containerPath?: string; sizeMB?: number };
  constraint?: ConstraintJson;
  healthCheck?: HealthCheckJson;
  ports?: { name?: string; value?: number; envName?: string }[];
  [field: string]: unknown;
}

/**
 * v0 `task.Constraint`: a label constraint, or an AND or OR of constraints. Proto3 JSON leaves out zero values
 * (a requirement of 0), and the API writes a condition as `CONDITION_EQUAL`.
 */
export interface ConstraintJson {
  /** `LABEL_CONSTRAINT`, `AND_CONSTRAINT`, `OR_CONSTRAINT`. */
  type?: string;
  labelConstraint?: {
    /** `HOST` (the host's own labels) or `TASK` (the labels of the tasks on the host). */
    kind?: string;
    /** `CONDITION_LESS_THAN`, `CONDITION_EQUAL`, `CONDITION_GREATER_THAN`. */
    condition?: string;
    label?: { key: string; value: string };
    /** The count of such labels on the host the condition compares with. */
    requirement?: number;
  };
  andConstraint?: { constraints?: ConstraintJson[] };
  orConstraint?: { constraints?: ConstraintJson[] };
}

/** v0 `task.HealthCheckConfig`. */
export interface HealthCheckJson {
  enabled?: boolean;
  /** `COMMAND`, `HTTP`, `GRPC`. */
  type?: string;
  initialIntervalSecs?: number;
  intervalSecs?: number;
  maxConsecutiveFailures?: number;
  timeoutSecs?: number;
  commandCheck?: { command?: string };
  httpCheck?: { scheme?: string; port?: number; path?: string };
}

export interface JobInfoJson {
  id: IdValue;
  config: JobConfigJson;
  runtime: {
    state: string;
    goalState: string;
    creationTime?: string;
    startTime?: string;
    completionTime?: string;
    taskStats?: TaskStats;
    configurationVersion?: number;
    updateID?: IdValue;
  };
}

export interface TaskInfoJson {
  instanceId: number;
  config: { name?: string; resource?: ResourceLimits };
  runtime: {
    state: string;
    goalState: string;
    host?: string;
    startTime?: string;
    completionTime?: string;
    message?: string;
    reason?: string;
    failureCount?: number;
    terminationStatus?: { reason: string; exitCode?: number; signal?: string };
    healthy?: string;
    mesosTaskId?: IdValue;
    /** The job config version the task runs... */
    configVersion?: number;
    /** ...and the one it is being moved to (the same when it is not). */
    desiredConfigVersion?: number;
  };
}

export interface UpdateInfoJson {
  updateId: IdValue;
  jobId: IdValue;
  type: string;
  status: {
    state: string;
    numTasksDone: number;
    numTasksFailed: number;
    numTasksRemaining: number;
    instancesCurrent?: number[];
  };
  config?: { batchSize?: number };
  configVersion?: number;
  prevConfigVersion?: number;
  creationTime?: string;
  updateTime?: string;
  completionTime?: string;
}

/** v1alpha `stateless.WorkflowEvent`: one step of one instance in a workflow. */
export interface WorkflowEventJson {
  /** `WORKFLOW_TYPE_UPDATE`, ...; START and STOP come as their enum numbers (3, 4). */
  type?: string | number;
  /** `WORKFLOW_STATE_ROLLING_FORWARD`, ... */
  state: string;
  timestamp?: string;
}

/** A workflow's steps on one instance, newest first. */
export interface InstanceEventsJson {
  instanceId?: number;
  events?: WorkflowEventJson[];
}

/** v1alpha JobService `ListJobWorkflows`: a workflow (newest first), with its instances' steps if asked. */
export interface WorkflowInfoJson {
  workflowId?: IdValue;
  status: {
    type?: string | number;
    state: string;
  };
  /** The workflow's own states, newest first. */
  events?: { type?: string | number; state: string; timestamp?: string }[];
  instanceEvents?: InstanceEventsJson[];
}

export interface RespoolResource {
  kind: string;
  reservation: number;
  limit: number;
  share: number;
  type?: string;
}

/** Per-resource usage: Peloton's allocation and slack, and our entitlement and queued demand. */
export interface RespoolUsage {
  kind: string;
  allocation?: number;
  slack?: number;
  entitlement?: number;
  demand?: number;
}

export interface RespoolInfoJson {
  id: IdValue;
  path: IdValue;
  parent?: IdValue;
  children: IdValue[];
  config: {
    name: string;
    owningTeam?: string;
    description?: string;
    resources: RespoolResource[];
    policy?: string;
  };
  /** `usage`, as respool.proto's ResourcePoolInfo names it. */
  usage?: RespoolUsage[];
}

export interface HostInfoJson {
  hostname: string;
  /** host.proto's `ip`, when the host manager knows it. */
  ip?: string;
  agentId?: string;
  state: string;
  /** host.proto's `goal_state`: DOWN once the host is in maintenance, else UP. */
  goalState?: string;
  labels?: { key: string; value: string }[];
  resources?: { total?: ResourceLimits; free?: ResourceLimits; slack?: ResourceLimits };
  tasks?: number;
  /** The host pool it is in; absent for a host in maintenance whose agent is gone. */
  currentPool?: string;
  /** The pool it should be in (Peloton's host mover moves it there); ours moves at once, so it is the same. */
  desiredPool?: string;
}

/**
 * A job's secret as its Get answers it: v0 `JobManager::Get` names its id `id`, v1alpha `JobService::GetJob`
 * `secretId`. Never its data: the API does not answer it.
 */
export interface SecretJson {
  id?: IdValue;
  secretId?: IdValue;
  path: string;
}

/** A `HostService::ListHostPools` pool: every pool, empty ones too. */
export interface HostPoolJson {
  name: string;
  hosts: string[];
}

/** A `JobManager::Query` reply: one page of jobs, newest first, and how many match in all. */
export interface JobPageJson {
  records: JobInfoJson[];
  pagination: { offset: number; limit: number; total: number };
}

/** The jobs view's query, from the URL (`#/jobs?name=&owner=&state=&page=&size=`). */
export interface JobListQuery {
  /**
   * A part of a job name (Peloton's QuerySpec.name); "" for any. The API ignores its case, of any letter, on
   * either store.
   */
  name: string;
  /** An owner, matched exactly; "" for any. */
  owner: string;
  /** A job state, "ACTIVE" for every state but the terminal ones, or "" for any. */
  state: string;
  /** 1-based. */
  page: number;
  size: number;
}

/** A `TaskManager::Query` reply: one page of a job's tasks in the order asked, and how many match in all. */
export interface TaskPageJson {
  records: TaskInfoJson[];
  pagination: { offset: number; limit: number; total: number };
}

/** The job view's tasks table, from the URL (`#/jobs/ID?state=&name=&host=&sort=&order=&page=&size=`). */
export interface TaskListQuery {
  /** Task states, uppercase, unique and sorted; none for any. */
  states: string[];
  /** Task names, each matched exactly as the API does (Peloton's QuerySpec.names); none for any. */
  names: string[];
  /** Host names, each matched exactly; none for any. */
  hosts: string[];
  /** The column sorted by, as Peloton's task order property (`instanceId`, `creation_time`, ...). */
  sort: string;
  desc: boolean;
  /** 1-based. */
  page: number;
  size: number;
}

/** What the server tells the page when it builds it. */
export interface UiConfig {
  refreshMs: number;
  /** Peloton's job states, for the summary's counts and the state filter. */
  jobStates: string[];
  /** The job states that are not terminal. */
  activeJobStates: string[];
}

/**
 * The resource pool API's `GetAdmissionWaits` (ours) for a leaf pool: why the first gang of each of its
 * queues is not admitted, by queue (pending, nonPreemptible, controller, revocable).
 */
export interface AdmissionWaitsJson {
  path: string;
  queues: Record<string, string | undefined>;
}

/** One gang waiting in a pool's queue: its tasks, as Peloton names them (`<jobId>-<instanceId>`). */
export interface PendingGangJson {
  taskIDs?: string[];
}

/**
 * The resource manager's `GetPendingTasks` (Peloton's private ResourceManagerService) for a leaf pool: its
 * queued gangs by queue (`pending`, `non-preemptible`, `controller`, `revocable`, in the order the queues are
 * admitted from), each queue's first gangs in the order they are admitted; empty queues are left out.
 */
export interface PendingTasksJson {
  pendingGangsByQueue?: Record<string, { pendingGangs?: PendingGangJson[] }>;
}

/** Everything one refresh loaded; a part that failed to load is undefined and its error is listed. */
export interface Snapshot {
  /** The jobs view's page of jobs (only on that view)... */
  jobPage?: JobPageJson;
  /** ...and the hash of the query it answers (`jobListHash`), also when it failed to load. */
  jobPageFor?: string;
  /** How many jobs are in each state, counted by the API. */
  jobCounts?: Record<string, number>;
  /** Active jobs, newest first, up to the UI's cap (`total` says how many there are). */
  activeJobs?: JobPageJson;
  pools?: RespoolInfoJson[];
  /** On the pools view: why each leaf pool with queued demand holds its queued tasks, by pool id. */
  poolWaits?: Record<string, AdmissionWaitsJson>;
  /**
   * On the pools view: what waits in the queues of each pool the operator opened, by pool id; null when the
   * call failed (its error is listed); absent until it is first loaded.
   */
  poolQueues?: Record<string, PendingTasksJson | null>;
  hosts?: HostInfoJson[];
  /** Only on the hosts view: the host pools, with those no host is in. */
  hostPools?: HostPoolJson[];
  /** Only on a job's page. */
  job?: {
    /** The tasks the operator opened to their events and sandbox logs, by instance id. */
    taskDetails?: Record<number, TaskDetails>;
    info?: JobInfoJson;
    /** The job's secrets by id and path, from the same Get as `info` (absent when it has none). */
    secrets?: SecretJson[];
    /** The tasks table's page... */
    tasks?: TaskPageJson;
    /** ...and the hash of the query it answers (`taskListHash`), also when it failed to load. */
    tasksFor?: string;
    updates?: UpdateInfoJson[];
    /**
     * The job's current or last workflow with each instance's steps, only when `updates` lists any
     * (a one-item `ListJobWorkflows` reply).
     */
    workflows?: WorkflowInfoJson[];
  };
}

/** v0 `task.PodEvent` as TaskManager's `GetPodEvents` answers it: one state a run of a task went through. */
export interface PodEventJson {
  /** The run, a Mesos task id `<jobId>-<instanceId>-<runId>`. */
  taskId?: IdValue;
  actualState?: string;
  timestamp?: string;
  hostname?: string;
  message?: string;
  reason?: string;
}

/**
 * One sandbox file of a task's run as loaded: its text (its end), or why it could not be; `sizeBytes` when
 * the file was longer than what was read of it.
 */
export interface SandboxFileLoad {
  text?: string;
  sizeBytes?: number;
  error?: string;
}

/**
 * A task opened in the tasks table: its events (`GetPodEvents`, newest first, the latest runs), and its
 * current run's sandbox (`BrowseSandbox`, then its stdout and stderr), each with the error that kept it.
 */
export interface TaskDetails {
  events?: PodEventJson[];
  eventsError?: string;
  sandbox?: { taskId: string; agentId?: string; hostname?: string };
  sandboxError?: string;
  stdout?: SandboxFileLoad;
  stderr?: SandboxFileLoad;
}

/**
 * Which rows a view shows opened (the job view's instances by id, the pools view's pools by pool id), and how
 * to open or close one.
 */
export interface RowToggle<K = number> {
  open: ReadonlySet<K>;
  toggle: (key: K) => void;
}

/** An API call: resolves to the reply, or rejects with an error saying what failed. */
export type ApiCall = <T = Record<string, unknown>>(procedure: string, body: unknown) => Promise<T>;

/** What the operator picked in an action's confirm step: its choice's option, its amount. */
export interface ActionPicks {
  choice?: string;
  amount?: number;
}

/** An operator action: what to ask before it, the call it makes, and how to describe its answer. */
export interface UiAction {
  label: string;
  /**
   * The button's accessible name when its label alone does not say which it is: one of a row's or a pool's,
   * repeated down the page ("Start maintenance on agent-1"). The label stays what is shown.
   */
  name?: string;
  question: string;
  procedure: string;
  body: Record<string, unknown>;
  /**
   * A value the operator picks in the confirm step, one of `options`, sent in the body as `field`. The picking
   * is in the confirm step, not in the view: the view is rebuilt on every refresh and would lose it.
   */
  choice?: { label: string; field: string; options: string[] };
  /**
   * A whole number the operator types in the confirm step (how many), from 1 to `max` when it has one (what
   * the page last saw); the action's `prepare` checks it again against what the server has when it is sent.
   */
  amount?: { label: string; max?: number };
  /**
   * Works out the body to send from the operator's picks when they press Confirm, reading what it needs from
   * the API then (`call`), not from what the page showed when they asked. It throws an Error worded for the
   * operator when the picks no longer fit.
   */
  prepare?: (picks: ActionPicks, call: ApiCall) => Promise<Record<string, unknown>>;
  /** The operator's words for a refusal of the call (its error's text), when the API's are not. */
  explain?: (error: string, sent: Record<string, unknown>) => string;
  /** What the reply says, for the result line; `sent` is the body sent (with the operator's pick). */
  describe: (reply: Record<string, unknown>, sent: Record<string, unknown>) => string;
  disabled?: boolean;
  /**
   * Why the action is disabled ("Job has ended (FAILED): there is nothing to stop"): its button's tooltip and
   * description, shown beside it when it has the focus.
   */
  disabledWhy?: string;
  /** Marks destructive actions (drawn in red). */
  danger?: boolean;
}
