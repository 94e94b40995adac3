/**
 * Peloton's v1alpha JSON shapes for the stateless JobService: job status and spec, workflow status and info,
 * each enum in v1alpha's names (`JOB_STATE_RUNNING`, `POD_STATE_RUNNING`, `CONSTRAINT_TYPE_LABEL`, ...), which
 * differ from v0's (`RUNNING`, `LABEL_CONSTRAINT`, ...). v0 responses keep v0's names (api_json.ts).
 */
import type {
  Constraint,
  HealthCheckConfig,
  LabelConstraint,
  PersistentVolumeConfig,
  PodSpec,
  SlaConfig,
} from "../model/config_types.ts";
import type {
  TaskRecord,
  UpdateRecord,
  UpdateState,
  WorkflowEventRecord,
  WorkflowType,
} from "../model/records.ts";
import { jobConfigToStatelessSpec } from "../model/stateless_spec.ts";
import { type JobState, TASK_STATES } from "../model/states.ts";
import { MAX_UINT32 } from "../model/_schema_kit.ts";
import {
  type Body,
  entityVersion,
  instanceIdRanges,
  type JobView,
  taskStatsJson,
  time,
  valueMessage,
} from "./api_json.ts";

/**
 * v1alpha `stateless.JobState`. Peloton casts v0's number across (`stateless.JobState(runtime.GetState())`,
 * pkg/jobmgr/util/handler/api_converter.go); the two enums line up but for 0, UNKNOWN in v0 and INVALID here.
 */
export function jobStateName(s: JobState): string {
  return s === "UNKNOWN" ? "JOB_STATE_INVALID" : `JOB_STATE_${s}`;
}

/**
 * v1alpha `pod.PodState` of a v0 task state name (`ConvertTaskStateToPodState`): the same states, UNKNOWN
 * becoming INVALID (and any name no v0 state has); RESERVED is POD_STATE_RESERVED (17), as in Peloton's
 * newest pod.proto and converter.
 */
export function podStateName(s: string): string {
  return POD_STATES.has(s) ? `POD_STATE_${s}` : "POD_STATE_INVALID";
}

/** v0 task states with a v1alpha pod state of the same name: all but UNKNOWN. */
const POD_STATES: ReadonlySet<string> = new Set(Object.keys(TASK_STATES).filter((s) => s !== "UNKNOWN"));

/** v1alpha `pod.PodState` names without their prefix, by enum number (KILLING and PREEMPTING are not v0's order). */
/** `<jobId>-<instanceId>`: the job id is a UUID, so the last `-` starts the instance. */
export const POD_NAME = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)$/i;

/** A pod a request names: its job (in lower case) and instance, and its name as Peloton writes it. */
export interface PodRef {
  jobId: string;
  instanceId: number;
  name: string;
}

/**
 * The pod a request names at `field` (`{value: "<jobId>-<instanceId>"}`, v1alpha's PodName), or an Error
 * naming the field when it is missing or malformed; the instance is a uint32, as in Peloton.
 */
export function podNameOf(raw: unknown, field: string): PodRef | Error {
  const expected = "<jobId>-<instanceId>";
  const text = valueMessage(raw, field, `a pod name ${expected}`);
  if (text instanceof Error) return text;
  if (text === undefined) return new Error(`${field}: missing, expected ${expected}`);
  const pod = POD_NAME.exec(text);
  const instanceId = pod ? Number(pod[2]) : NaN;
  if (!pod || !(instanceId <= MAX_UINT32)) {
    return new Error(`${field}: got ${JSON.stringify(text)}, expected ${expected}`);
  }
  const jobId = pod[1].toLowerCase();
  return { jobId, instanceId, name: `${jobId}-${instanceId}` };
}

export const POD_STATE_NUMBERS: readonly string[] = [
  "INVALID",
  "INITIALIZED",
  "PENDING",
  "READY",
  "PLACING",
  "PLACED",
  "LAUNCHING",
  "LAUNCHED",
  "STARTING",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "LOST",
  "KILLING",
  "KILLED",
  "PREEMPTING",
  "DELETED",
  "RESERVED",
];

/** `pod_stats`: task counts by v1alpha pod state (`ConvertTaskStatsToPodStats`). */
export function podStatsJson(taskStats: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [s, n] of Object.entries(taskStats)) {
    const name = podStateName(s);
    out[name] = (out[name] ?? 0) + n;
  }
  return out;
}

/** What a workflow is, as its v1alpha type tells it: its kind, and whether it is the job's rolling create. */
export interface WorkflowKind {
  type: WorkflowType;
  create?: boolean;
}

/**
 * v1alpha `stateless.WorkflowType`: UPDATE and RESTART by name. A rolling create (CreateJob) is UPDATE, as
 * Peloton's `RollingCreate` makes an UPDATE workflow from an empty config to the job's. START and STOP
 * (JobManager's Start|Stop workflows) have no v1alpha name; Peloton casts its internal `models.WorkflowType`
 * across, and proto3 JSON writes a value its enum does not name as the number, 3 and 4.
 */
export function workflowTypeJson(w: WorkflowKind): string | number {
  if (w.create) return "WORKFLOW_TYPE_UPDATE";
  return w.type === "START" ? 3 : w.type === "STOP" ? 4 : `WORKFLOW_TYPE_${w.type}`;
}

/** v1alpha `stateless.WorkflowState`: v0's update states, in the same order, prefixed. */
export function workflowStateName(s: UpdateState): string {
  return `WORKFLOW_STATE_${s}`;
}

/**
 * v1alpha `stateless.WorkflowEvent`: the workflow's type, the step's state and when it was recorded. An event
 * record holds its workflow's kind but not whether that is a rolling create: `create` says so.
 */
export function workflowEventJson(
  e: Pick<WorkflowEventRecord, "type" | "state" | "timeMs"> & { create?: boolean },
): Body {
  return { type: workflowTypeJson(e), timestamp: time(e.timeMs), state: workflowStateName(e.state) };
}

/**
 * v1alpha `stateless.JobStatus` (`ConvertRuntimeInfoToJobStatus`); `workflowId` (ours) names the workflow in
 * progress. `revision` is the runtime's change log: its write counter, and its creation time in nanoseconds
 * as Peloton stamps it (`UnixNano`), a decimal string as proto3 JSON writes a uint64 past 2^53. The runtime
 * holds no time of its last write nor a writer, so `updatedAt` and `updatedBy` are left out.
 */
export function statusJson(j: JobView, workflow?: UpdateRecord): Body {
  const rt = j.runtime;
  return {
    revision: { version: rt.version, createdAt: String(BigInt(Math.trunc(rt.creationTimeMs)) * 1_000_000n) },
    state: jobStateName(rt.state),
    desiredState: jobStateName(rt.goalState),
    creationTime: time(rt.creationTimeMs),
    // Every pod state a task state maps to, 0 included, as Peloton converts its runtime's taskStats.
    podStats: podStatsJson(taskStatsJson(rt.taskStats)),
    version: { value: entityVersion(j) },
    workflowId: rt.updateId ? { value: rt.updateId } : undefined,
    workflowStatus: workflow ? workflowStatusJson(j, workflow) : undefined,
    podStatsByConfigurationVersion: j.tasks ? podStatsByConfigVersionJson(j.tasks.values()) : undefined,
  };
}

/**
 * `pod_stats_by_configuration_version`: task counts by config version, keyed by its pod entity version
 * (`versionutil.GetPodEntityVersion`: `<configVersion>-0-0`), each a `PodStateStats` of v1alpha pod states.
 * Counted from the tasks, so a job read from the store without them has none.
 */
export function podStatsByConfigVersionJson(tasks: Iterable<TaskRecord>): Record<string, Body> {
  const byVersion = new Map<number, Record<string, number>>();
  for (const t of tasks) {
    const stats = byVersion.get(t.configVersion) ?? {};
    stats[t.state] = (stats[t.state] ?? 0) + 1;
    byVersion.set(t.configVersion, stats);
  }
  const out: Record<string, Body> = {};
  for (const [v, stats] of [...byVersion].sort(([a], [b]) => a - b)) {
    out[`${v}-0-0`] = { stateStats: podStatsJson(stats) };
  }
  return out;
}

/** v1alpha `stateless.SlaSpec` of a v0 SLA config (`ConvertSLAConfigToSLASpec`): the four fields it has. */
export function slaSpecJson(sla: SlaConfig): Body {
  return {
    priority: sla.priority,
    preemptible: sla.preemptible,
    revocable: sla.revocable,
    maximumUnavailableInstances: sla.maximumUnavailableInstances,
  };
}

/**
 * v1alpha `stateless.JobSpec` of the job's current config version, made from the stored JobConfig, so it
 * is the same after a restart and there for jobs created through the v0 API. Its `revision` carries the
 * config version, as Peloton's does; the parser ignores it, so the spec can be sent back in a ReplaceJob
 * (which reads v1alpha's enum names as well as v0's).
 */
export function specJson(j: JobView): Body {
  const { respoolId, defaultSpec, instanceSpec, ...spec } = jobConfigToStatelessSpec(j.config);
  return {
    revision: { version: j.configVersion },
    ...spec,
    defaultSpec: podSpecJson(defaultSpec),
    instanceSpec: Object.fromEntries(Object.entries(instanceSpec).map(([id, pod]) => [id, podSpecJson(pod)])),
    respoolId: respoolId === undefined ? undefined : { value: respoolId },
  };
}

/**
 * v1alpha `pod.PodSpec` in its wire names (`ConvertTaskConfigToPodSpec`): the constraint's and health
 * checks' enums, which Peloton casts across by number, and the volume's `sizeMb` (v0's is `sizeMB`).
 * Mesos's own messages (container, command, executor) are the same in both APIs.
 */
export function podSpecJson(pod: PodSpec): Body {
  const { constraint, volume, containers, initContainers, ...rest } = pod;
  const out: Body = { ...rest, containers: containers.map(containerJson) };
  if (initContainers) out.initContainers = initContainers.map(containerJson);
  if (constraint) out.constraint = constraintJson(constraint);
  if (volume) out.volume = volumeJson(volume);
  return out;
}

function containerJson(c: PodSpec["containers"][number]): Body {
  const { livenessCheck, readinessCheck, ...rest } = c;
  const out: Body = { ...rest };
  if (livenessCheck) out.livenessCheck = healthCheckJson(livenessCheck);
  if (readinessCheck) out.readinessCheck = healthCheckJson(readinessCheck);
  return out;
}

/**
 * v1alpha `pod.HealthCheckSpec`: `type` as HEALTH_CHECK_TYPE_*. Its enum has no GRPC (v0's 3): Peloton passes
 * the number across, and proto3 JSON writes a number its enum does not name as the number.
 */
function healthCheckJson(h: HealthCheckConfig): Body {
  return { ...h, type: h.type === "GRPC" ? 3 : `HEALTH_CHECK_TYPE_${h.type}` };
}

const CONSTRAINT_TYPE = { LABEL_CONSTRAINT: "LABEL", AND_CONSTRAINT: "AND", OR_CONSTRAINT: "OR" } as const;
const LABEL_KIND = { TASK: "POD", HOST: "HOST" } as const;

/** v1alpha `pod.Constraint`: CONSTRAINT_TYPE_*, LABEL_CONSTRAINT_KIND_* (v0's TASK is POD), LABEL_CONSTRAINT_CONDITION_*. */
export function constraintJson(c: Constraint): Body {
  const type = `CONSTRAINT_TYPE_${CONSTRAINT_TYPE[c.type]}`;
  switch (c.type) {
    case "LABEL_CONSTRAINT":
      return { type, labelConstraint: labelConstraintJson(c.labelConstraint) };
    case "AND_CONSTRAINT":
      return { type, andConstraint: { constraints: c.andConstraint.constraints.map(constraintJson) } };
    case "OR_CONSTRAINT":
      return { type, orConstraint: { constraints: c.orConstraint.constraints.map(constraintJson) } };
  }
}

function labelConstraintJson(l: LabelConstraint): Body {
  return {
    ...l,
    kind: `LABEL_CONSTRAINT_KIND_${LABEL_KIND[l.kind]}`,
    condition: `LABEL_CONSTRAINT_CONDITION_${l.condition}`,
  };
}

/** v1alpha `pod.PersistentVolumeSpec`. */
function volumeJson(v: PersistentVolumeConfig): Body {
  const { sizeMB, ...rest } = v;
  return { ...rest, sizeMb: sizeMB };
}

/**
 * v1alpha `stateless.WorkflowStatus` (`ConvertUpdateModelToWorkflowStatus`): the entity versions the
 * workflow moves the job to and from pair its config versions with the job's other two versions.
 */
export function workflowStatusJson(j: JobView, u: UpdateRecord): Body {
  const version = (config: number) => ({
    value: `${config}-${j.runtime.desiredStateVersion ?? 1}-${j.runtime.workflowVersion ?? 0}`,
  });
  const total = u.instancesAdded.length + u.instancesUpdated.length + u.instancesRemoved.length;
  return {
    type: workflowTypeJson(u),
    state: workflowStateName(u.state),
    prevState: u.prevState ? workflowStateName(u.prevState) : undefined,
    numInstancesCompleted: u.instancesDone.length,
    numInstancesRemaining: total - u.instancesDone.length - u.instancesFailed.length,
    numInstancesFailed: u.instancesFailed.length,
    instancesCurrent: u.instancesCurrent,
    version: version(u.jobConfigVersion),
    // A rolling create goes from Peloton's placeholder config, version 0 (`DummyConfigVersion`).
    prevVersion: version(u.create ? 0 : u.prevJobConfigVersion),
    creationTime: time(u.creationTimeMs),
    updateTime: time(u.updateTimeMs),
    completionTime: time(u.completionTimeMs),
  };
}

/**
 * v1alpha `stateless.WorkflowInfo` (`ConvertUpdateModelToWorkflowInfo`): status, spec and instances. A rolling
 * create is Peloton's UPDATE from an empty config: its `updateSpec` is the CreateSpec's, and every instance it
 * starts is one it adds.
 */
export function workflowInfoJson(j: JobView, u: UpdateRecord): Body {
  const c = u.config;
  const spec: Body = u.type === "UPDATE" || u.create
    ? {
      updateSpec: {
        batchSize: c.batchSize,
        rollbackOnFailure: c.rollbackOnFailure,
        maxInstanceRetries: c.maxInstanceAttempts,
        maxTolerableInstanceFailures: c.maxFailureInstances,
        startPaused: c.startPaused,
        inPlace: c.inPlace,
        startPods: c.startTasks,
      },
      instancesAdded: instanceIdRanges(
        u.create ? [...u.instancesAdded, ...u.instancesUpdated].sort((a, b) => a - b) : u.instancesAdded,
      ),
      instancesRemoved: instanceIdRanges(u.instancesRemoved),
      instancesUpdated: instanceIdRanges(u.create ? [] : u.instancesUpdated),
    }
    : u.type === "RESTART"
    ? {
      restartSpec: {
        batchSize: c.batchSize,
        ranges: instanceIdRanges(u.instancesUpdated),
        inPlace: c.inPlace,
      },
    }
    : {};
  return {
    status: workflowStatusJson(j, u),
    ...spec,
    opaqueData: u.opaqueData ? { data: u.opaqueData } : undefined,
    // The workflow's own states, newest first, as Peloton reads its job update events.
    events: (u.states ?? []).map((e) => workflowEventJson({ ...e, type: u.type, create: u.create }))
      .reverse(),
  };
}
