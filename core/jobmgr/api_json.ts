/** Peloton's JSON shapes for the job manager's API: jobs, tasks, events, updates and volumes. */
import type { ApiErrorCode, ApiRequest } from "../messages.ts";
import type {
  Constraint,
  JobConfig,
  Label,
  PlacementStrategy,
  PreemptionPolicy,
  TaskConfig,
  UpdateConfig,
} from "../model/config_types.ts";
import { parseUpdateConfig } from "../model/load.ts";
import {
  type JobRecord,
  mesosTaskId,
  type TaskEventRecord,
  type TaskRecord,
  type UpdateRecord,
  type VolumeRecord,
} from "../model/records.ts";
import { MAX_UINT32 } from "../model/_schema_kit.ts";
import { TASK_STATES, type TaskState, type TaskStats } from "../model/states.ts";
import { rfc3339 } from "../model/time_format.ts";
import { storeFailure } from "../ports/store.ts";
import type { Transport } from "../ports/transport.ts";
import type { InstanceMap } from "./job_entry.ts";
import { messageOf, wholeNumber } from "./query_spec.ts";

export type Body = Record<string, unknown>;

import { UUID } from "../model/got_text.ts";
export { gotText, UUID } from "../model/got_text.ts";

/**
 * `{value: "x"}` or `"x"` → "x": for fields that are text in the proto (BrowseSandbox's `taskId`), for
 * replies and for messages already checked. A request field the proto makes a message is read with
 * `valueMessage`, which refuses a bare string as protobuf's JSON decoding does.
 */
export function idValue(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as Body).value === "string") return (v as Body).value as string;
  return undefined;
}

/** The most a workflow's `opaqueData` holds (a caller's own bookkeeping, as Aurora bridge's update metadata). */
export const MAX_OPAQUE_DATA_BYTES = 1 << 20;

/**
 * A request's `opaqueData.data` (Peloton's OpaqueData, the caller's own data kept with a workflow): undefined
 * when absent, an Error naming the field when it is not text.
 */
export function opaqueDataOf(body: Body): string | undefined | Error {
  const o = body.opaqueData;
  if (o === undefined || o === null) return undefined;
  const data = typeof o === "object" ? (o as Body).data : undefined;
  if (typeof data === "string") {
    // Stored with the workflow by calls that change it after they acted (pause, resume, abort): checked
    // here, so no store refuses it for its size once the change is made.
    const bytes = data.length * 3 <= MAX_OPAQUE_DATA_BYTES ? 0 : new TextEncoder().encode(data).length;
    if (bytes > MAX_OPAQUE_DATA_BYTES) {
      return new Error(`opaqueData.data: ${bytes} bytes, expected at most ${MAX_OPAQUE_DATA_BYTES}`);
    }
    return data;
  }
  if (typeof o === "object" && data === undefined) return "";
  return new Error(`opaqueData.data: got ${JSON.stringify(data ?? o)}, expected text`);
}

/**
 * The text of one of Peloton's `{value}` messages (JobID, PodName, ResourcePoolPath, ...) at `field` of a
 * request: undefined when absent; `{}` is its empty value, as protobuf reads it. Anything else is an Error
 * naming the field, `what` saying what was expected: a bare string too, which protobuf's JSON decoding
 * (Peloton's YARPC servers used jsonpb) refuses where a message is expected, so a client written against
 * this API is not one Peloton would refuse.
 */
export function valueMessage(raw: unknown, field: string, what: string): string | undefined | Error {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "string") {
    const s = JSON.stringify(raw);
    return new Error(`${field}: got ${s}, expected ${what} as a message, {"value": ${s}}`);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return new Error(`${field}: got ${JSON.stringify(raw)}, expected ${what} as {"value": ...}`);
  }
  const value = (raw as Body).value;
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    return new Error(`${field}.value: got ${JSON.stringify(value)}, expected ${what}`);
  }
  return value;
}

/**
 * The job id a request names at `field` (`{value: "<uuid>"}`, in lower case, as Peloton makes them), or an
 * Error naming the field when it is missing or malformed. A well-formed id of no job is the caller's to
 * answer (not found): a malformed one is a mistake in the request, not a job that is not there.
 */
export function jobIdOf(raw: unknown, field: string): string | Error {
  const id = valueMessage(raw, field, "a job id");
  if (id instanceof Error) return id;
  if (id === undefined) return new Error(`${field}: missing, expected a job id`);
  if (!UUID.test(id)) return new Error(`${field}: got ${JSON.stringify(raw)}, expected a job id`);
  return id.toLowerCase();
}

/** `jobIdOf` the request's `field`, or its `alias` when only that is given (some calls take either name). */
export function jobIdAt(body: Body, field: string, alias: string): string | Error {
  const given = (v: unknown) => v !== undefined && v !== null;
  return !given(body[field]) && given(body[alias])
    ? jobIdOf(body[alias], alias)
    : jobIdOf(body[field], field);
}

/**
 * The id a create asks for its job (v0 Create's `id`, v1alpha CreateJob's `jobId`, `{value}`):
 * undefined when absent or empty, for which one is made, as Peloton's handlers make one; else it must be a
 * UUID, as theirs require (pods are named `<jobId>-<instanceId>`, and a SQL store's id columns are 128
 * characters wide), taken in lower case, as Peloton makes them and as every call reads a job id (`jobIdOf`),
 * so that the job made is the one Get and its pods' names reach. An Error naming `field` when it is not.
 */
export function requestedJobId(raw: unknown, field: string): string | undefined | Error {
  if (typeof raw === "string") return valueMessage(raw, field, "a job id");
  const value = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Body).value : raw;
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string" && UUID.test(value)) return value.toLowerCase();
  return new Error(`${field}: got ${JSON.stringify(value)}, expected a UUID`);
}

/**
 * The id a refused create names, as sent (job.proto's `InvalidJobId.id`: Peloton gives `req.Id` back), as
 * a JobID: its text, or a value of another type written as JSON; undefined when none was sent.
 */
export function sentJobId(raw: unknown): Body | undefined {
  const value = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Body).value : raw;
  if (value === undefined || value === null) return undefined;
  return { value: typeof value === "string" ? value : JSON.stringify(value) };
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

/**
 * v0 `job.JobConfig`, its enums in job.proto's and task.proto's names (`PLACEMENT_STRATEGY_PACK_HOST`,
 * `CONDITION_EQUAL`, `TYPE_NON_PREEMPTIBLE`), where the model keeps the short ones.
 */
export function jobConfigJson(c: JobConfig, version?: number): Body {
  const { respoolId, ...rest } = c;
  return {
    ...rest,
    defaultConfig: taskConfigJson(c.defaultConfig),
    instanceConfig: Object.fromEntries(
      Object.entries(c.instanceConfig).map(([id, tc]) => [id, taskConfigJson(tc)]),
    ),
    placementStrategy: placementStrategyName(c.placementStrategy),
    respoolID: respoolId ? { value: respoolId } : undefined,
    changeLog: version === undefined ? undefined : { version },
  };
}

/*
 * Where v0's enum names differ from the model's: a name a proto's enum does not have makes Go's jsonpb and
 * Python's json_format refuse the whole response, so every output goes through these. Requests may use
 * either spelling (the parsers strip the prefixes).
 */

/** v0 `job.PlacementStrategy`: `PLACEMENT_STRATEGY_PACK_HOST`, `PLACEMENT_STRATEGY_SPREAD_JOB`. */
export function placementStrategyName(s: PlacementStrategy): string {
  return s.startsWith("PLACEMENT_STRATEGY_") ? s : `PLACEMENT_STRATEGY_${s}`;
}

/** v0 `task.TaskConfig`: its constraint's conditions and its preemption policy's type in task.proto's names. */
export function taskConfigJson(tc: TaskConfig): Body {
  return {
    ...tc,
    ...(tc.constraint && { constraint: v0ConstraintJson(tc.constraint) }),
    ...(tc.preemptionPolicy && { preemptionPolicy: preemptionPolicyJson(tc.preemptionPolicy) }),
  };
}

/** v0 `task.Constraint`: `LabelConstraint.Condition` is `CONDITION_*` (its type and kind need no prefix). */
function v0ConstraintJson(c: Constraint): Body {
  switch (c.type) {
    case "LABEL_CONSTRAINT": {
      const l = c.labelConstraint;
      return { ...c, labelConstraint: { ...l, condition: `CONDITION_${l.condition}` } };
    }
    case "AND_CONSTRAINT":
      return { ...c, andConstraint: { constraints: c.andConstraint.constraints.map(v0ConstraintJson) } };
    case "OR_CONSTRAINT":
      return { ...c, orConstraint: { constraints: c.orConstraint.constraints.map(v0ConstraintJson) } };
  }
}

/** v0 `task.PreemptionPolicy`: `type` is `TYPE_INVALID`, `TYPE_PREEMPTIBLE` or `TYPE_NON_PREEMPTIBLE`. */
function preemptionPolicyJson(p: PreemptionPolicy): Body {
  return { ...p, type: `TYPE_${p.type}` };
}

/** v0 `task.TerminationStatus.Reason` without its `TERMINATION_STATUS_REASON_` prefix. */
const TERMINATION_REASONS: ReadonlySet<string> = new Set([
  "KILLED_ON_REQUEST",
  "FAILED",
  "KILLED_HOST_MAINTENANCE",
  "PREEMPTED_RESOURCES",
  "DEADLINE_TIMEOUT_EXCEEDED",
  "KILLED_FOR_UPDATE",
  "KILLED_FOR_RESTART",
  "KILLED_FOR_SLA_AWARE_RESTART",
]);

/**
 * A task's termination reason as v0 `TerminationStatus.Reason` (`TERMINATION_STATUS_REASON_*`). Our
 * SYSTEM_FAILURE (a run lost, or failed for the system's fault) is FAILED, as Peloton marks every failed
 * run; a reason the enum does not have is INVALID rather than a name no client can read.
 */
export function terminationReasonName(reason: string): string {
  const bare = reason.replace(/^TERMINATION_STATUS_REASON_/, "");
  const name = bare === "SYSTEM_FAILURE" ? "FAILED" : TERMINATION_REASONS.has(bare) ? bare : "INVALID";
  return `TERMINATION_STATUS_REASON_${name}`;
}

/** v1alpha entity version: `<configVersion>-<desiredStateVersion>-<workflowVersion>`. */
export function entityVersion(j: JobView): string {
  return `${j.configVersion}-${j.runtime.desiredStateVersion ?? 1}-${j.runtime.workflowVersion ?? 0}`;
}

/**
 * The config version an entity version names, read as Peloton's `versionutil.GetConfigVersion`
 * (pkg/common/util/entityversion): three `-`-separated parts, the first an unsigned integer; the other two
 * are not read, as a config version's spec does not depend on them. The version is an EntityVersion
 * message, `{value}`: anything else is refused naming it, as protobuf's JSON decoding refuses it.
 */
export function parseConfigVersion(
  raw: unknown,
): { ok: true; value: number } | { ok: false; message: string } {
  const given = valueMessage(raw, "version", "an entity version");
  if (given instanceof Error) return { ok: false, message: given.message };
  const expected = 'expected an entity version "<configVersion>-<desiredStateVersion>-<workflowVersion>"' +
    " whose config version is an unsigned integer";
  // `{}` (an empty value, as protobuf reads it) is shown as sent.
  const shown = typeof (raw as Body | undefined)?.value === "string"
    ? JSON.stringify(given)
    : JSON.stringify(raw);
  const parts = (given ?? "").split("-");
  const value = Number(parts[0]);
  if (parts.length !== 3 || !/^\d+$/.test(parts[0]) || !Number.isSafeInteger(value)) {
    return { ok: false, message: `version: entityVersion has wrong format: ${expected}, got ${shown}` };
  }
  return { ok: true, value };
}

/**
 * A job runtime's `taskStats` as answered: a count for every task state, 0 for those no task is in, as
 * Peloton's `GetTaskStateSummaryForJob` fills it. The job manager counts only the states tasks entered.
 */
export function taskStatsJson(stats: TaskStats): Record<TaskState, number> {
  const out = {} as Record<TaskState, number>;
  for (const s of Object.keys(TASK_STATES) as TaskState[]) out[s] = stats[s] ?? 0;
  return out;
}

/** v0 `job.RuntimeInfo`. */
export function jobRuntimeJson(j: JobView): Body {
  const rt = j.runtime;
  return {
    state: rt.state,
    goalState: rt.goalState,
    creationTime: time(rt.creationTimeMs),
    startTime: time(rt.startTimeMs),
    completionTime: time(rt.completionTimeMs),
    taskStats: taskStatsJson(rt.taskStats),
    configurationVersion: j.configVersion,
    updateID: rt.updateId ? { value: rt.updateId } : undefined,
    entityVersion: { value: entityVersion(j) },
  };
}

export function jobInfoJson(j: JobView): Body {
  return {
    id: { value: j.jobId },
    config: jobConfigJson(j.config, j.configVersion),
    runtime: jobRuntimeJson(j),
  };
}

/**
 * v0 `job.JobInfo` as Query's `records` give it: its config without `instanceConfig`, which job.proto's
 * QueryResponse leaves out (it can be huge; Get gives it).
 */
export function queriedJobInfoJson(j: JobView): Body {
  const { instanceConfig: _, ...config } = jobConfigJson(
    { ...j.config, instanceConfig: {} },
    j.configVersion,
  );
  return { id: { value: j.jobId }, config, runtime: jobRuntimeJson(j) };
}

/**
 * A job summary's `owner`: the config's owner, else its owning team. Peloton filled a summary's owner from
 * its job index's owner column, which holds the owning team, so its summaries name the team there.
 */
export function summaryOwner(c: { owner: string; owningTeam: string }): string {
  return c.owner || c.owningTeam;
}

/** v0 `job.JobSummary`: a job as a query lists it, without its task configs. */
export function jobSummaryJson(j: JobView): Body {
  const c = j.config;
  return {
    id: { value: j.jobId },
    name: c.name,
    type: c.type,
    owner: summaryOwner(c),
    owningTeam: c.owningTeam,
    labels: c.labels,
    instanceCount: c.instanceCount,
    respoolID: c.respoolId ? { value: c.respoolId } : undefined,
    runtime: jobRuntimeJson(j),
    sla: c.sla,
  };
}

/**
 * Why a task's run ended or is being ended, as Peloton's `TerminationStatus.Reason` without its prefix, or
 * undefined for a run that goes on or succeeded. A reason the job manager recorded (preemption, maintenance,
 * deadline, system failure) stands; else it is read from what was asked of the run, as Peloton's handlers
 * set it when they ask: a stop (goal KILLED, TaskManager.Stop, StopPod, a job's stop), an update (a new
 * config version, or the instance removed), a restart (a new run); else a run that failed ended FAILED.
 */
export function terminationReasonOf(t: TaskRecord): string | undefined {
  if (t.state === "SUCCEEDED") return undefined;
  if (t.terminationReason) return t.terminationReason;
  if (t.goalState === "KILLED") return "KILLED_ON_REQUEST";
  if (t.goalState === "DELETED") return "KILLED_FOR_UPDATE";
  // A restart asks for a new run on a new config version too (Peloton's restart strategy: KILLED_FOR_RESTART).
  if (t.desiredRunId !== undefined && t.desiredRunId > t.runId) return "KILLED_FOR_RESTART";
  if (t.desiredConfigVersion !== undefined && t.desiredConfigVersion !== t.configVersion) {
    return "KILLED_FOR_UPDATE";
  }
  if (t.state === "FAILED" || t.state === "LOST") return "FAILED";
  return undefined;
}

/**
 * v0 `task.TerminationStatus` (v1alpha `pod.TerminationStatus` has the same fields and names): its reason,
 * and the run's exit code when not zero (proto3 leaves a zero out). We keep no signal apart from the run's
 * message. Undefined for a run that goes on or succeeded, as task.proto sets it only for one that did not.
 */
export function terminationStatusJson(t: TaskRecord): Body | undefined {
  const reason = terminationReasonOf(t);
  if (reason === undefined) return undefined;
  return { reason: terminationReasonName(reason), ...(t.exitCode ? { exitCode: t.exitCode } : {}) };
}

/** The run before a task's current one (none for its first), as GetPod's `prevPodId` names it. */
export function prevRunId(t: TaskRecord): number | undefined {
  return t.runId > 1 ? t.runId - 1 : undefined;
}

/** v0 `task.RuntimeInfo`. */
export function taskRuntimeJson(t: TaskRecord): Body {
  const id = (run: number | undefined) =>
    run === undefined ? undefined : { value: mesosTaskId(t.jobId, t.instanceId, run) };
  return {
    state: t.state,
    goalState: t.goalState,
    mesosTaskId: id(t.runId),
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
    prevMesosTaskId: id(prevRunId(t)),
    desiredMesosTaskId: id(t.desiredRunId ?? t.runId),
    terminationStatus: terminationStatusJson(t),
    volumeID: t.volumeId ? { value: t.volumeId } : undefined,
  };
}

export function taskInfoJson(jobId: string, config: TaskConfig, t: TaskRecord): Body {
  return {
    instanceId: t.instanceId,
    jobId: { value: jobId },
    config: taskConfigJson(config),
    runtime: taskRuntimeJson(t),
  };
}

/**
 * v0 `task.PodEvent`: `agentID` is a plain string there, and `desriedTaskId` is Peloton's spelling. Fields
 * an event stored before they were kept lacks are left out.
 */
export function eventJson(e: TaskEventRecord): Body {
  const id = (run: number | undefined) =>
    run === undefined ? undefined : { value: mesosTaskId(e.jobId, e.instanceId, run) };
  return {
    taskId: id(e.runId),
    actualState: e.state,
    goalState: e.goalState,
    timestamp: rfc3339(e.timeMs),
    configVersion: e.configVersion,
    desiredConfigVersion: e.desiredConfigVersion,
    agentID: e.agentId,
    hostname: e.hostname,
    message: e.message,
    reason: e.reason,
    prevTaskId: id(e.prevRunId),
    healthy: e.healthy,
    desriedTaskId: id(e.desiredRunId),
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

/** Instance ids as text, runs joined: `0-9`, `2, 5-7` (at most `max` runs, then how many more ids). */
export function idsText(ids: readonly number[], max = 8): string {
  const runs = instanceIdRanges(ids);
  const text = runs.slice(0, max).map((r) => (r.from === r.to ? `${r.from}` : `${r.from}-${r.to}`));
  const rest = runs.slice(max).reduce((n, r) => n + r.to - r.from + 1, 0);
  return text.join(", ") + (rest ? ` and ${rest} more` : "");
}

/** "10 instances" for ids 0 to 9; "2 instances: 2, 5" when they are not 0 to n-1 (daemon jobs, shrunk jobs). */
export function instancesText(ids: readonly number[]): string {
  const n = ids.length;
  const count = n === 0 ? "no instances" : n === 1 ? "1 instance" : `${n} instances`;
  const sorted = [...ids].sort((a, b) => a - b);
  return sorted.every((id, i) => id === i) ? count : `${count}: ${idsText(sorted)}`;
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

/** A request's uint32 field named `field` (a number or a string of digits; absent is 0), or why it is refused. */
export function uint32Of(raw: unknown, field: string): number | string {
  const n = wholeNumber(raw);
  return n !== undefined && n <= MAX_UINT32
    ? n
    : `${field}: got ${JSON.stringify(raw)}, expected a whole number from 0 to ${MAX_UINT32}`;
}

/** An instance range of a request: `to` exclusive; undefined is to the job's end. */
export interface InstanceRange {
  from: number;
  to?: number;
}

/**
 * The least `to` that is read as "to the job's end": Peloton's CLI sends max int32 for an open range (`-r 3:`),
 * its older versions max uint32; no job has that many instances (a job has at most 100,000).
 */
const OPEN_TO = 0x7fff_ffff;

/**
 * One instance range `{from, to}` of a request, named `field`, as every call that takes ranges reads them
 * (Peloton's `-r FROM:TO`): whole numbers, `to` exclusive and above `from`; `from` absent is 0, `to` absent
 * or at least max int32 (`OPEN_TO`) is to the job's end. Why it is refused otherwise.
 */
export function instanceRangeOf(raw: unknown, field: string): InstanceRange | string {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return `${field}: got ${JSON.stringify(raw ?? null)}, expected {from, to}`;
  }
  const r = raw as Body;
  const from = uint32Of(r.from, `${field}.from`);
  if (typeof from === "string") return from;
  const to = r.to === undefined || r.to === null ? MAX_UINT32 : uint32Of(r.to, `${field}.to`);
  if (typeof to === "string") return to;
  if (to >= OPEN_TO) return { from };
  if (to <= from) {
    return `${field}: got ${JSON.stringify(raw)}, expected from below to (to is exclusive: ` +
      `{from: ${from}, to: ${from + 1}} is instance ${from} alone)`;
  }
  return { from, to };
}

/** A request's one instance `range` (task List and Refresh, ListPods): absent is the whole job. */
export function rangeOf(body: Body): InstanceRange | string {
  return body.range === undefined || body.range === null ? { from: 0 } : instanceRangeOf(body.range, "range");
}

/** A request's list of instance ranges, named `field`: absent or empty is every instance. */
export function instanceRangesOf(raw: unknown, field = "ranges"): InstanceRange[] | string {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return `${field}: got ${JSON.stringify(raw)}, expected a list of {from, to}`;
  const out: InstanceRange[] = [];
  for (const [i, r] of raw.entries()) {
    const range = instanceRangeOf(r, `${field}[${i}]`);
    if (typeof range === "string") return range;
    out.push(range);
  }
  return out;
}

/** Whether instance `id` is in `range`. */
export const inRange = (range: InstanceRange, id: number): boolean =>
  id >= range.from && (range.to === undefined || id < range.to);

/** The instance ids of `ranges` below `count`; undefined (every instance) when there are none. */
export function instancesOf(ranges: readonly InstanceRange[], count: number): number[] | undefined {
  if (!ranges.length) return undefined;
  const out = new Set<number>();
  for (const r of ranges) {
    for (let i = r.from; i < Math.min(r.to ?? count, count); i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * Peloton's InstanceIdOutOfRange {jobId, instanceCount} for ranges reaching past the first id no instance of
 * the job ever had, with a message naming, from the first, every instance of them the job does not have:
 * those past its end and those it had and removed (a shrink, a daemon's host leaving), which alone are no
 * refusal ("instances 5-6 are out of range: job J has 2 instances"); undefined when none is past the end.
 */
export function outOfRangeOf(job: JobView, ranges: readonly InstanceRange[]): Body | undefined {
  const bound = job.runtime.nextInstanceId ?? job.config.instanceCount;
  if (!ranges.some((r) => pastEnd(r, bound))) return undefined;
  const missing = missingParts(job, ranges, bound);
  const are = missing.length > 1 || missing[0].startsWith("instances") ? "are" : "is";
  return {
    jobId: { value: job.jobId },
    instanceCount: job.config.instanceCount,
    message: `${missing.join(", ")} ${are} out of range: job ${job.jobId} has ${
      instancesText([...(job.tasks?.keys() ?? [])])
    }`,
  };
}

/** Whether a range reaches `bound` (an open one ends at the job's end, so only one starting there does). */
const pastEnd = (r: InstanceRange, bound: number): boolean =>
  r.to === undefined ? r.from >= bound : r.to > bound;

/**
 * The instances of `ranges` the job does not have, merged and in order, as text ("instances 5-6",
 * "instance 12", "instances from 20"): ids below `bound` it removed, and the parts at or past `bound` (an
 * open range only when it starts there: it ends at the job's end).
 */
function missingParts(job: JobView, ranges: readonly InstanceRange[], bound: number): string[] {
  const parts: [lo: number, hi: number][] = [];
  for (const { from, to } of ranges) {
    if (job.tasks) {
      for (let id = from; id < Math.min(to ?? bound, bound); id++) {
        if (!job.tasks.has(id)) parts.push([id, id]);
      }
    }
    if (pastEnd({ from, to }, bound)) {
      parts.push([Math.max(from, bound), to === undefined ? Infinity : to - 1]);
    }
  }
  parts.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number][] = [];
  for (const [lo, hi] of parts) {
    const last = merged.at(-1);
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return merged.map(([lo, hi]) =>
    hi === Infinity ? `instances from ${lo}` : lo === hi ? `instance ${lo}` : `instances ${lo}-${hi}`
  );
}

/**
 * The batch size and in-place flag of a restart, start or stop workflow, from the request's `field` (v0's
 * restartConfig|startConfig|stopConfig, v1alpha's restartSpec; their `ranges` are read apart) or else a bare
 * `batchSize`; absent, every instance at once. Read as an UpdateConfig is (`parseUpdateConfig`, as
 * ReplaceJob's updateSpec, CreateJob's createSpec and CreateUpdate's updateConfig are), so every workflow
 * call checks them alike; why not, naming the field.
 */
export function workflowSpecOf(
  body: Body,
  field: string,
): Pick<UpdateConfig, "batchSize" | "inPlace"> | string {
  const spec = messageOf(body[field], field);
  if (!spec.ok) return spec.message;
  const { ranges: _, ...rest } = spec.value;
  const given = body[field] !== undefined && body[field] !== null;
  const parsed = given
    ? parseUpdateConfig(rest, field)
    : parseUpdateConfig({ batchSize: body.batchSize }, "request");
  if (!parsed.ok) return parsed.errors.map((e) => e.message).join("; ");
  return { batchSize: parsed.value.batchSize, inPlace: parsed.value.inPlace };
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

  /** A store read or write failed: `unavailable` if the store could not be reached, else `internal`. */
  storeError(err: unknown, doing?: string): void {
    const { code, message } = storeFailure(err, doing);
    this.error(code, message);
  }
}

/**
 * A request's list of labels (`[{key, value}]`; absent is none, a label without a value has the empty one),
 * or why it is refused, naming `field`.
 */
export function labelList(raw: unknown, field: string): Label[] | string {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return `${field}: got ${JSON.stringify(raw)}, expected a list of {key, value}`;
  const out: Label[] = [];
  for (const [i, l] of raw.entries()) {
    const key = (l as Body | null)?.key, value = (l as Body | null)?.value ?? "";
    if (typeof key !== "string" || !key || typeof value !== "string") {
      return `${field}[${i}]: got ${JSON.stringify(l)}, expected {key, value} with a non-empty key`;
    }
    out.push({ key, value });
  }
  return out;
}

/** Whether `have` holds every label of `want`. */
export function hasLabels(have: readonly Label[] | undefined, want: readonly Label[]): boolean {
  return want.every((l) => (have ?? []).some((h) => h.key === l.key && h.value === l.value));
}
