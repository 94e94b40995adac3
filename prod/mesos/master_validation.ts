/** Scheduler call validation as the master does it before dispatch: each problem is a 400 with this message. */
import { isSafeId } from "../minicluster/agent.ts";
import { type Call, CALL_TYPES, decodeBase64, type ExecutorInfo, payloadField } from "./protocol.ts";

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// Calls whose sub-message must be present ("Expecting 'accept' to be present").
const NEEDS_PAYLOAD = new Set([
  "SUBSCRIBE",
  "ACCEPT",
  "DECLINE",
  "ACCEPT_INVERSE_OFFERS",
  "DECLINE_INVERSE_OFFERS",
  "KILL",
  "SHUTDOWN",
  "ACKNOWLEDGE",
  "ACKNOWLEDGE_OPERATION_STATUS",
  "RECONCILE",
  "RECONCILE_OPERATIONS",
  "MESSAGE",
  "REQUEST",
  "UPDATE_FRAMEWORK",
]);

/** A protobuf parse failure: JSON of the wrong type for a field. */
class ParseError extends Error {}

function id(value: unknown, path: string, required: boolean, missing: string[]): string | undefined {
  if (value === undefined || value === null) {
    if (required) missing.push(path);
    return undefined;
  }
  if (!isObj(value)) throw new ParseError(`'${path}' is not a JSON object`);
  if (value.value === undefined) {
    missing.push(`${path}.value`);
    return undefined;
  }
  if (typeof value.value !== "string") throw new ParseError(`'${path}.value' is not a string`);
  return value.value;
}

function ids(value: unknown, path: string, missing: string[]): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) throw new ParseError(`'${path}' is not a JSON array`);
  value.forEach((v, i) => id(v, `${path}[${i}]`, true, missing));
}

/** Returns why the master would answer 400, or undefined for a valid call. */
export function validateCall(value: unknown): string | undefined {
  try {
    return check(value);
  } catch (e) {
    if (e instanceof ParseError) return `Failed to convert JSON into Call protobuf: ${e.message}`;
    throw e;
  }
}

function check(value: unknown): string | undefined {
  if (!isObj(value)) throw new ParseError("Expecting a JSON object");
  const type = value.type;
  // An unknown name of an optional enum is dropped by the JSON parser, so it reads as a missing type.
  // `UNKNOWN` is a name of the enum (0): valid here, refused later as not implemented (501).
  if (typeof type !== "string" || !(type === "UNKNOWN" || (CALL_TYPES as readonly string[]).includes(type))) {
    return "Expecting 'type' to be present";
  }
  const missing: string[] = [];
  const frameworkId = id(value.framework_id, "framework_id", false, missing);
  const field = payloadField(type);
  const payload = value[field];
  if (payload !== undefined && !isObj(payload)) throw new ParseError(`'${field}' is not a JSON object`);
  if (NEEDS_PAYLOAD.has(type) && payload === undefined) return `Expecting '${field}' to be present`;
  const p = (payload ?? {}) as Obj;
  if (type !== "SUBSCRIBE" && frameworkId === undefined && !missing.length) {
    return "Expecting 'framework_id' to be present";
  }
  switch (type) {
    case "SUBSCRIBE": {
      const info = p.framework_info;
      if (!isObj(info)) {
        return info === undefined
          ? "Not initialized: subscribe.framework_info"
          : "Failed to convert JSON into Call protobuf: 'framework_info' is not a JSON object";
      }
      for (const f of ["user", "name"]) {
        if (typeof info[f] !== "string") missing.push(`subscribe.framework_info.${f}`);
      }
      const infoId = id(info.id, "subscribe.framework_info.id", false, missing);
      if (missing.length) break;
      if (frameworkId !== undefined && frameworkId !== infoId) {
        return "'framework_id' differs from 'subscribe.framework_info.id'";
      }
      break;
    }
    case "ACCEPT":
      acceptBytes(p, missing);
    // falls through
    case "DECLINE":
      ids(p.offer_ids, `${field}.offer_ids`, missing);
      break;
    case "ACCEPT_INVERSE_OFFERS":
    case "DECLINE_INVERSE_OFFERS":
      ids(p.inverse_offer_ids, `${field}.inverse_offer_ids`, missing);
      break;
    case "KILL":
      id(p.task_id, "kill.task_id", true, missing);
      id(p.agent_id, "kill.agent_id", false, missing);
      break;
    case "SHUTDOWN":
      id(p.executor_id, "shutdown.executor_id", true, missing);
      id(p.agent_id, "shutdown.agent_id", true, missing);
      break;
    case "ACKNOWLEDGE": {
      id(p.agent_id, "acknowledge.agent_id", true, missing);
      id(p.task_id, "acknowledge.task_id", true, missing);
      if (p.uuid === undefined) missing.push("acknowledge.uuid");
      else if (typeof p.uuid !== "string") throw new ParseError("'acknowledge.uuid' is not a string");
      else if (decodeBase64(p.uuid)?.length !== 16) {
        return `Invalid UUID in 'acknowledge.uuid': not 16 bytes of base64`;
      }
      break;
    }
    case "RECONCILE":
      if (p.tasks !== undefined && !Array.isArray(p.tasks)) {
        throw new ParseError("'reconcile.tasks' is not a JSON array");
      }
      ((p.tasks ?? []) as unknown[]).forEach((t, i) => {
        if (!isObj(t)) throw new ParseError(`'reconcile.tasks[${i}]' is not a JSON object`);
        id(t.task_id, `reconcile.tasks[${i}].task_id`, true, missing);
        id(t.agent_id, `reconcile.tasks[${i}].agent_id`, false, missing);
      });
      break;
    case "MESSAGE":
      id(p.agent_id, "message.agent_id", true, missing);
      id(p.executor_id, "message.executor_id", true, missing);
      if (typeof p.data !== "string") missing.push("message.data");
      break;
  }
  return missing.length ? `Not initialized: ${missing.join(", ")}` : undefined;
}

/**
 * The `bytes` fields of launched tasks (secret volumes' data, the task's and its executor's `data`) must
 * be base64, or the JSON does not convert (the whole call is refused). The error names the field, not its
 * value. An executor needs its `executor_id` (a required field).
 */
function acceptBytes(accept: Obj, missing: string[]): void {
  const operations = Array.isArray(accept.operations) ? accept.operations : [];
  operations.forEach((op, i) => {
    const infos = isObj(op) && isObj(op.launch) && Array.isArray(op.launch.task_infos)
      ? op.launch.task_infos
      : [];
    infos.forEach((info, j) => {
      const at = `accept.operations[${i}].launch.task_infos[${j}]`;
      if (!isObj(info)) return;
      bytes(info.data, `${at}.data`);
      if (info.executor !== undefined) {
        if (!isObj(info.executor)) throw new ParseError(`'${at}.executor' is not a JSON object`);
        id(info.executor.executor_id, `${at}.executor.executor_id`, true, missing);
        bytes(info.executor.data, `${at}.executor.data`);
      }
      secretBytes(info.container, `${at}.container`);
      if (isObj(info.executor)) secretBytes(info.executor.container, `${at}.executor.container`);
    });
  });
}

function secretBytes(container: unknown, at: string): void {
  const volumes = isObj(container) && Array.isArray(container.volumes) ? container.volumes : [];
  volumes.forEach((v, k) => {
    const value = isObj(v) && isObj(v.source) && isObj(v.source.secret) ? v.source.secret.value : undefined;
    if (isObj(value)) bytes(value.data, `${at}.volumes[${k}].source.secret.value.data`);
  });
}

function bytes(value: unknown, path: string): void {
  if (value === undefined) return;
  if (typeof value !== "string" || decodeBase64(value) === undefined) {
    throw new ParseError(`'${path}' is not valid base64`);
  }
}

/**
 * A task's (or, `owner` "Executor's", its executor's) ContainerInfo as the master checks it
 * (`common::validation::validateContainerInfo`), with what this emulator cannot run: secrets by reference
 * (no secret resolver module) and malformed secrets, which an agent's volume/secret isolator would fail at
 * launch.
 */
export function containerProblem(container: unknown, owner = "Task's"): string | undefined {
  if (container === undefined) return undefined;
  const invalid = `${owner} \`ContainerInfo\` is invalid`;
  if (!isObj(container)) return `${invalid}: not a JSON object`;
  const volumes = Array.isArray(container.volumes) ? container.volumes : [];
  for (const v of volumes) {
    const problem = isObj(v) ? volumeProblem(v) : "not a JSON object";
    if (problem) return `${invalid}: Invalid volume: ${problem}`;
  }
  if (container.type === "DOCKER" && container.docker === undefined) {
    return `${invalid}: DockerInfo 'docker' is not set for DOCKER typed ContainerInfo`;
  }
  return undefined;
}

/**
 * A LAUNCH's executor as the master checks it (`validation.cpp`: `executor::validate`, then the task's
 * `validateExecutor`), once it filled in `framework_id`; resources are checked with the task's. `running`:
 * the ExecutorInfo of a live executor of the framework with the same id on the agent. Only one task per
 * custom executor runs here (the executor's command is the task's process), so a second one is refused.
 */
export function executorInfoProblem(
  e: ExecutorInfo,
  frameworkId: string,
  running: ExecutorInfo | undefined,
): string | undefined {
  if (e.type === "DEFAULT" && e.command !== undefined) {
    return "'ExecutorInfo.command' must not be set for 'DEFAULT' executor";
  }
  if (e.type === "CUSTOM" && e.command === undefined) {
    return "'ExecutorInfo.command' must be set for 'CUSTOM' executor";
  }
  const id = e.executor_id.value;
  if (id === "") return "ID must be non-empty";
  if (!isSafeId(id)) return `'${id}' contains invalid characters`;
  if (!(Number(e.shutdown_grace_period?.nanoseconds ?? 0) >= 0)) {
    return "ExecutorInfo's 'shutdown_grace_period' must be non-negative";
  }
  const unset = e.command?.environment?.variables.find((v) => v.value === undefined);
  if (unset) {
    return `Executor's \`CommandInfo\` is invalid: Environment variable '${unset.name}' must have a value set`;
  }
  const container = containerProblem(e.container, "Executor's");
  if (container) return container;
  if (e.framework_id?.value !== frameworkId) {
    return `ExecutorInfo has an invalid FrameworkID (Actual: ${e.framework_id?.value} vs Expected: ${frameworkId})`;
  }
  if (running && JSON.stringify(running) !== JSON.stringify(e)) {
    return "ExecutorInfo is not compatible with existing ExecutorInfo with same ExecutorID";
  }
  if (running) return `executor ${id} already runs a task: one task per custom executor in this emulator`;
  if (e.type !== undefined && e.type !== "CUSTOM") return "'ExecutorInfo.type' must be 'CUSTOM'";
  if (e.command === undefined) return "'ExecutorInfo.command' must be set";
  // The emulator runs the executor's command; Mesos would start an executor without one and see it fail.
  if (!e.command.value) return "Executor's CommandInfo has no value";
  return undefined;
}

function volumeProblem(v: Obj): string | undefined {
  const count = [v.host_path, v.image, v.source].filter((x) => x !== undefined).length;
  if (count !== 1) return "Only one of them should be set: 'host_path', 'image' and 'source'";
  if (!isObj(v.source)) return undefined;
  const type = v.source.type;
  const field: Record<string, string> = {
    DOCKER_VOLUME: "docker_volume",
    HOST_PATH: "host_path",
    SANDBOX_PATH: "sandbox_path",
    SECRET: "secret",
  };
  if (typeof type !== "string" || !(type in field)) return "'source.type' is unknown";
  if (v.source[field[type]] === undefined) return `'source.${field[type]}' is not set for ${type} volume`;
  if (type !== "SECRET") return undefined;
  const secret = v.source.secret as Obj;
  // The agent's check (`validateSecret`), made here: the emulated agent only writes secrets' values.
  if (secret.type === "VALUE" && secret.value === undefined) {
    return "Secret of type VALUE must have the 'value' field set";
  }
  if (secret.type === "VALUE" && secret.reference !== undefined) {
    return "Secret of type VALUE must not have the 'reference' field set";
  }
  if (secret.type !== "VALUE") return "only secrets of type VALUE are supported by this emulator";
  return undefined;
}

const ROLE_BAD = /[\s\\]|^-|^\/|\/$|\/\//;

/** Mesos role name rules (hierarchical roles allowed). */
export function roleProblem(role: string): string | undefined {
  if (role === "") return "Role name cannot be empty";
  if (ROLE_BAD.test(role)) {
    return `Role '${role}' is invalid: it cannot start or end with '/', contain '//', whitespace or '\\', or start with '-'`;
  }
  if (role.split("/").some((p) => p === "." || p === "..")) {
    return `Role '${role}' cannot contain '.' or '..' components`;
  }
  return undefined;
}

/** FrameworkInfo problems found while subscribing (answered by an ERROR event on the stream). */
export function subscribeProblem(call: Extract<Call, { type: "SUBSCRIBE" }>): string | undefined {
  const info = call.subscribe.framework_info;
  const capabilities = new Set((info.capabilities ?? []).map((c) => c.type));
  if (info.roles?.length && !capabilities.has("MULTI_ROLE")) {
    return "'FrameworkInfo.roles' is set but the framework does not have the MULTI_ROLE capability";
  }
  if (capabilities.has("MULTI_ROLE") && info.role !== undefined) {
    return "'FrameworkInfo.role' must not be set when the framework has the MULTI_ROLE capability";
  }
  for (const r of info.roles ?? []) {
    const problem = roleProblem(r);
    if (problem) return problem;
  }
  if (info.role !== undefined && info.role !== "*" && roleProblem(info.role)) return roleProblem(info.role);
  const timeout = info.failover_timeout ?? 0;
  if (!(Number.isFinite(timeout) && timeout >= 0)) {
    return `Invalid failover_timeout ${timeout}: expected a non-negative duration`;
  }
  return undefined;
}
