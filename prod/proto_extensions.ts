/**
 * Reply fields Peloton's .proto files do not define (ours), and their removal from replies to callers that did
 * not ask for them: a strict proto3 JSON reader (Go protojson, Java JsonFormat, Python json_format without
 * their ignore-unknown options) refuses a whole reply with one field it does not know. Only a request with
 * `Peloton-Extensions: true` (the CLI and the web UI send it) gets them.
 */
import type { Route } from "../core/api/procedures.ts";
import { HOST_SERVICE } from "../core/hostmgr/host_api.ts";
import { JOB_SERVICE, TASK_SERVICE } from "../core/jobmgr/job_api.ts";
import { JOBMGR_SERVICE } from "../core/jobmgr/jobmgr_service_api.ts";
import { STATELESS_SERVICE } from "../core/jobmgr/stateless_api.ts";
import { UPDATE_SERVICE } from "../core/jobmgr/update_api.ts";
import { WATCH_SERVICE } from "../core/jobmgr/watch.ts";
import { RESPOOL_SERVICE } from "../core/resmgr/respool_api.ts";
import { RESMGR_SERVICE } from "../core/resmgr/task_inspect.ts";
import { RPC_STATUS_SUCCESS } from "./daemons/http_errors.ts";

/** The request header that asks for the extension fields. */
export const EXTENSIONS_HEADER = "peloton-extensions";
/** Warnings a v0 Create produced, as a JSON list of text, whatever the request asked for. */
export const WARNINGS_HEADER = "peloton-warnings";

const JOB = JOB_SERVICE, TASK = TASK_SERVICE, UPDATE = UPDATE_SERVICE, STATELESS = STATELESS_SERVICE;
const JOBMGR_PRIVATE = JOBMGR_SERVICE, WATCH = WATCH_SERVICE, RESPOOL = RESPOOL_SERVICE;
const RESMGR_PRIVATE = RESMGR_SERVICE, HOST = HOST_SERVICE;

/** v0 `update.UpdateInfo`'s extras: the workflow's kind, its instance lists and times, our update setting. */
const UPDATE_INFO = [
  "type",
  "config.minRunningSeconds",
  "status.instancesCurrent",
  "instancesAdded",
  "instancesUpdated",
  "instancesRemoved",
  "creationTime",
  "updateTime",
  "completionTime",
];

/** v0 `respool.ResourceUsage` has kind, allocation and slack: the last cycle's entitlement and the demand are ours. */
const USAGE = ["usage[].entitlement", "usage[].demand"];

const under = (prefix: string, paths: readonly string[]) => paths.map((p) => `${prefix}.${p}`);

/**
 * Canonical procedure (`routeProcedure`'s, so every alias it is served under: `peloton.api.v0.job.JobManager`,
 * `JobManager.Get`, ...) → the paths of the reply's extension fields. A path is JSON names joined by `.`;
 * `name[]` steps into each element of a list.
 */
export const EXTENSIONS: Readonly<Record<string, readonly string[]>> = {
  // GetResponse: error, jobInfo, secrets. RuntimeInfo has no entity version in v0.
  [`${JOB}::Get`]: ["config", "jobInfo.runtime.entityVersion"],
  [`${JOB}::Query`]: ["records[].runtime.entityVersion", "results[].runtime.entityVersion"],
  [`${JOB}::GetCache`]: ["runtime.entityVersion"],
  // CreateResponse: error, jobId. The warnings go in `Peloton-Warnings` as well (`warningsHeader`).
  [`${JOB}::Create`]: ["warnings"],
  // UpdateResponse: error, id, message.
  [`${JOB}::Update`]: ["configVersion", "instancesRemoved"],
  // InstanceIdOutOfRange: jobId, instanceCount.
  [`${TASK}::Get`]: ["outOfRange.message"],
  [`${TASK}::Restart`]: ["outOfRange.message"],
  [`${TASK}::Stop`]: ["error.outOfRange.message"],
  [`${TASK}::Start`]: ["error.outOfRange.message"],
  // BrowseSandboxResponse: error, hostname, port, paths, mesosMasterHostname, mesosMasterPort.
  [`${TASK}::BrowseSandbox`]: ["agentId", "taskId", "error.outOfRange.message"],
  [`${UPDATE}::GetUpdate`]: under("updateInfo", UPDATE_INFO),
  [`${UPDATE}::ListUpdates`]: under("updateInfo[]", UPDATE_INFO),
  // v1alpha JobStatus and WorkflowInfo have no workflow id; ReplaceJob's and RestartJob's replies only `version`.
  [`${STATELESS}::GetJob`]: ["jobInfo.status.workflowId", "summary.status.workflowId"],
  [`${STATELESS}::QueryJobs`]: ["records[].status.workflowId"],
  [`${STATELESS}::ListJobs`]: ["jobs[].status.workflowId"],
  [`${STATELESS}::GetJobCache`]: ["status.workflowId"],
  [`${STATELESS}::ReplaceJob`]: ["workflowId"],
  [`${STATELESS}::RestartJob`]: ["workflowId"],
  [`${STATELESS}::ListJobWorkflows`]: ["workflowInfos[].workflowId"],
  [`${JOBMGR_PRIVATE}::GetJobCache`]: ["status.workflowId"],
  // Each line of the stream.
  [`${WATCH}::Watch`]: ["statelessJobs[].status.workflowId"],
  [`${RESPOOL}::GetResourcePool`]: [...under("poolinfo", USAGE), ...under("childPools[]", USAGE)],
  [`${RESPOOL}::Query`]: under("resourcePools[]", USAGE),
  [`${RESMGR_PRIVATE}::GetActiveTasks`]: ["total"],
  [`${RESMGR_PRIVATE}::GetOrphanTasks`]: under("orphanTasks[]", [
    "state",
    "respool",
    "held",
    "kind",
    "reason",
  ]),
  // HostInfo: hostname, ip, state, goalState, labels, currentPool, desiredPool.
  [`${HOST}::QueryHosts`]: under("hostInfos[]", ["agentId", "resources", "tasks"]),
};

/** Whether the request asked for the extension fields. */
export function wantsExtensions(headers: Headers): boolean {
  return headers.get(EXTENSIONS_HEADER)?.trim().toLowerCase() === "true";
}

/**
 * The reply as `route`'s caller may read it: as it is with `extensions`, else without the fields `EXTENSIONS`
 * lists for it. The body is not changed: what is cut is copied around.
 */
export function shapeReply(procedure: string, body: unknown, extensions: boolean): unknown {
  const paths = EXTENSIONS[procedure];
  if (extensions || !paths) return body;
  let out = body;
  for (const path of paths) out = without(out, path.split("."));
  return out;
}

/** `shapeReply` for one route and request: the function a reply or a stream line goes through. */
export function replyShaper(route: Route, headers: Headers): (body: unknown) => unknown {
  const extensions = wantsExtensions(headers);
  return (body) => shapeReply(route.procedure, body, extensions);
}

/**
 * The HTTP answer to an API call `route` answered with `body`, shaped for the request `req` (`replyShaper`),
 * with `Peloton-Warnings` when it carries warnings and `headers` besides. Every front answers through here.
 */
export function apiReply(
  route: Route,
  req: Request,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  const reply = body ?? {};
  return Response.json(replyShaper(route, req.headers)(reply), {
    headers: { "rpc-status": RPC_STATUS_SUCCESS, ...warningsHeader(reply), ...headers },
  });
}

/** Response headers for the reply: `Peloton-Warnings` when a Create's reply carries warnings. */
export function warningsHeader(body: unknown): Record<string, string> {
  const warnings = isObject(body) ? body.warnings : undefined;
  if (!Array.isArray(warnings) || !warnings.length) return {};
  // JSON keeps each warning whole (commas, quotes) and the header within ASCII.
  return { [WARNINGS_HEADER]: JSON.stringify(warnings.map(String)).replace(/[^\x20-\x7e]/g, asciiEscape) };
}

function asciiEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

function without(value: unknown, path: readonly string[]): unknown {
  if (!path.length) return value;
  const [step, ...rest] = path;
  const list = step.endsWith("[]");
  const key = list ? step.slice(0, -2) : step;
  if (!isObject(value) || !(key in value)) return value;
  const copy = { ...value };
  if (!rest.length && !list) {
    delete copy[key];
    return copy;
  }
  const inner = copy[key];
  if (list) {
    if (!Array.isArray(inner)) return value;
    copy[key] = rest.length ? inner.map((item) => without(item, rest)) : inner;
  } else copy[key] = without(inner, rest);
  return copy;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
