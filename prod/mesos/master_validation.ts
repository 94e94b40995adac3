/** Scheduler call validation as the master does it before dispatch: each problem is a 400 with this message. */
import { type Call, CALL_TYPES, decodeBase64, payloadField } from "./protocol.ts";

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
  if (typeof type !== "string" || !(CALL_TYPES as readonly string[]).includes(type)) {
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
