/** Peloton's JSON shapes for the job manager's API: jobs, tasks, events, updates and volumes. */
import type { ApiErrorCode, ApiRequest } from "../messages.ts";
import type { JobConfig, TaskConfig } from "../model/config_types.ts";
import {
  type JobRecord,
  mesosTaskId,
  type TaskEventRecord,
  type TaskRecord,
  type UpdateRecord,
  type VolumeRecord,
} from "../model/records.ts";
import { rfc3339 } from "../model/time_format.ts";
import type { Transport } from "../ports/transport.ts";
import type { InstanceMap } from "./job_entry.ts";

export type Body = Record<string, unknown>;

/** `{value: "x"}` or `"x"` → "x". */
export function idValue(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as Body).value === "string") return (v as Body).value as string;
  return undefined;
}

export const time = (ms?: number) => (ms === undefined ? undefined : rfc3339(ms));

/** A job as the API shows it, from memory or from the store. */
export interface JobView {
  jobId: string;
  config: JobConfig;
  configVersion: number;
  runtime: JobRecord["runtime"];
  tasks?: InstanceMap<TaskRecord>;
}

export function jobConfigJson(c: JobConfig, version?: number): Body {
  const { respoolId, ...rest } = c;
  return {
    ...rest,
    respoolID: respoolId ? { value: respoolId } : undefined,
    changeLog: version === undefined ? undefined : { version },
  };
}

/** v1alpha entity version: `<configVersion>-<desiredStateVersion>-<workflowVersion>`. */
export function entityVersion(j: JobView): string {
  return `${j.configVersion}-${j.runtime.desiredStateVersion ?? 1}-${j.runtime.workflowVersion ?? 0}`;
}

export function jobInfoJson(j: JobView): Body {
  const rt = j.runtime;
  return {
    id: { value: j.jobId },
    config: jobConfigJson(j.config, j.configVersion),
    runtime: {
      state: rt.state,
      goalState: rt.goalState,
      creationTime: time(rt.creationTimeMs),
      startTime: time(rt.startTimeMs),
      completionTime: time(rt.completionTimeMs),
      taskStats: rt.taskStats,
      configurationVersion: j.configVersion,
      updateID: rt.updateId ? { value: rt.updateId } : undefined,
      entityVersion: { value: entityVersion(j) },
    },
  };
}

export function taskRuntimeJson(t: TaskRecord): Body {
  return {
    state: t.state,
    goalState: t.goalState,
    mesosTaskId: { value: mesosTaskId(t.jobId, t.instanceId, t.runId) },
    startTime: time(t.startTimeMs),
    completionTime: time(t.completionTimeMs),
    host: t.hostname,
    agentID: t.agentId ? { value: t.agentId } : undefined,
    ports: t.ports,
    message: t.message,
    reason: t.reason,
    failureCount: t.failureCount,
    configVersion: t.configVersion,
    desiredConfigVersion: t.desiredConfigVersion ?? t.configVersion,
    healthy: t.healthy,
    terminationStatus: t.terminationReason ? { reason: t.terminationReason } : undefined,
    exitCode: t.exitCode,
    volumeID: t.volumeId ? { value: t.volumeId } : undefined,
  };
}

export function taskInfoJson(jobId: string, config: TaskConfig, t: TaskRecord): Body {
  return { instanceId: t.instanceId, jobId: { value: jobId }, config, runtime: taskRuntimeJson(t) };
}

export function eventJson(e: TaskEventRecord): Body {
  return {
    taskId: { value: mesosTaskId(e.jobId, e.instanceId, e.runId) },
    actualState: e.state,
    timestamp: rfc3339(e.timeMs),
    hostname: e.hostname,
    message: e.message,
    reason: e.reason,
  };
}

/** v0 `update.UpdateInfo`. */
export function updateInfoJson(u: UpdateRecord): Body {
  const total = u.instancesAdded.length + u.instancesUpdated.length + u.instancesRemoved.length;
  return {
    updateId: { value: u.updateId },
    jobId: { value: u.jobId },
    type: u.type,
    config: u.config,
    status: {
      state: u.state,
      numTasksDone: u.instancesDone.length,
      numTasksFailed: u.instancesFailed.length,
      numTasksRemaining: total - u.instancesDone.length - u.instancesFailed.length,
      instancesCurrent: u.instancesCurrent,
    },
    configVersion: u.jobConfigVersion,
    prevConfigVersion: u.prevJobConfigVersion,
    instancesAdded: u.instancesAdded,
    instancesUpdated: u.instancesUpdated,
    instancesRemoved: u.instancesRemoved,
    creationTime: time(u.creationTimeMs),
    updateTime: time(u.updateTimeMs),
    completionTime: time(u.completionTimeMs),
    opaqueData: u.opaqueData ? { data: u.opaqueData } : undefined,
  };
}

/** Instance ids as v1alpha `pod.InstanceIDRange`s, `to` inclusive (Peloton's `ConvertInstanceIDListToInstanceRange`). */
export function instanceIdRanges(ids: readonly number[]): { from: number; to: number }[] {
  const out: { from: number; to: number }[] = [];
  for (const id of [...ids].sort((a, b) => a - b)) {
    const last = out.at(-1);
    if (last && id === last.to + 1) last.to = id;
    else if (!last || id > last.to) out.push({ from: id, to: id });
  }
  return out;
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
    type: `WORKFLOW_TYPE_${u.type}`,
    state: `WORKFLOW_STATE_${u.state}`,
    prevState: u.prevState ? `WORKFLOW_STATE_${u.prevState}` : undefined,
    numInstancesCompleted: u.instancesDone.length,
    numInstancesRemaining: total - u.instancesDone.length - u.instancesFailed.length,
    numInstancesFailed: u.instancesFailed.length,
    instancesCurrent: u.instancesCurrent,
    version: version(u.jobConfigVersion),
    prevVersion: version(u.prevJobConfigVersion),
    creationTime: time(u.creationTimeMs),
    updateTime: time(u.updateTimeMs),
    completionTime: time(u.completionTimeMs),
  };
}

/** v1alpha `stateless.WorkflowInfo` (`ConvertUpdateModelToWorkflowInfo`): status, spec and instances. */
export function workflowInfoJson(j: JobView, u: UpdateRecord): Body {
  const c = u.config;
  const spec: Body = u.type === "UPDATE"
    ? {
      updateSpec: {
        batchSize: c.batchSize,
        rollbackOnFailure: c.rollbackOnFailure,
        maxInstanceRetries: c.maxInstanceAttempts,
        maxTolerableInstanceFailures: c.maxFailureInstances,
        startPaused: c.startPaused,
        inPlace: c.inPlace,
      },
      instancesAdded: instanceIdRanges(u.instancesAdded),
      instancesRemoved: instanceIdRanges(u.instancesRemoved),
      instancesUpdated: instanceIdRanges(u.instancesUpdated),
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
  };
}

/** v0 `volume.PersistentVolumeInfo`. */
export function volumeJson(v: VolumeRecord): Body {
  return {
    id: { value: v.volumeId },
    jobId: { value: v.jobId },
    instanceId: v.instanceId,
    hostname: v.hostname,
    state: v.state === "CREATED" ? "CREATED" : "DELETED",
    goalState: "CREATED",
    sizeMB: v.sizeMb,
    containerPath: v.containerPath,
    createTime: time(v.createdMs),
  };
}

/** Parses `ranges: [{from, to}]` (to exclusive) into instance ids below `count`. */
export function instancesOf(ranges: unknown, count: number): number[] | undefined {
  if (!Array.isArray(ranges) || !ranges.length) return undefined;
  const out = new Set<number>();
  for (const r of ranges as Body[]) {
    const from = Number(r.from ?? 0), to = Math.min(Number(r.to ?? count), count);
    for (let i = from; i < to; i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** Replies to one API request. */
export class Reply {
  constructor(private readonly transport: Transport, private readonly req: ApiRequest) {}

  ok(body: Body): void {
    this.transport.send(this.req.replyTo, { kind: "api-reply", reqId: this.req.reqId, body });
  }

  error(code: ApiErrorCode, message: string): void {
    this.transport.send(this.req.replyTo, {
      kind: "api-reply",
      reqId: this.req.reqId,
      error: { code, message },
    });
  }
}
