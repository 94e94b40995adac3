/**
 * Peloton's v0 host API (`peloton.api.v0.host.svc.HostService`), served by the host manager: hosts,
 * maintenance and host pools.
 */
import type { ApiRequest } from "../messages.ts";
import { gotText } from "../model/got_text.ts";
import { HOST_STATES, type HostState } from "../model/states.ts";
import { toLimits, zero } from "../model/resources.ts";
import { storeFailure } from "../ports/store.ts";
import type { HostEntry } from "./host_table.ts";
import {
  DEFAULT_HOST_POOL,
  HOST_POOL_ATTRIBUTE,
  type HostPoolChange,
  type HostPoolRefusal,
  type HostPools,
} from "./host_pools.ts";
import { moveHosts } from "./host_mover.ts";

export const HOST_SERVICE = "peloton.api.v0.host.svc.HostService";

type Body = Record<string, unknown>;

/** What the API needs of the host manager. */
export interface HostApiTarget {
  readonly hosts: readonly HostEntry[];
  host(hostname: string): HostEntry | undefined;
  /** Hosts in maintenance that are not registered, listed in their `unregisteredState`. */
  unregisteredInMaintenance(): string[];
  /** DOWN, or the state stored before a restart while the host's agent may still come back. */
  unregisteredState(hostname: string): HostState;
  /**
   * Returns why the request is refused, or undefined when accepted: `done` is then called once the
   * change is stored (with the error that stopped it, if one did).
   */
  startMaintenance(hostname: string, done: (err?: Error) => void): MaintenanceRefusal | undefined;
  completeMaintenance(hostname: string, done: (err?: Error) => void): MaintenanceRefusal | undefined;
  /** What `startMaintenance` or `completeMaintenance` would refuse, changing nothing. */
  maintenanceRefusal(
    method: "StartMaintenance" | "CompleteMaintenance",
    hostname: string,
  ): MaintenanceRefusal | undefined;
  readonly hostPools: HostPools;
  now(): number;
  /** Moves the hosts a host pool change moved and stores it; `done` once stored. */
  applyHostPoolChange(change: HostPoolChange, done: (err?: Error) => void): void;
}

/** Why a maintenance request for one host is refused, with the API error code it answers with. */
export interface MaintenanceRefusal {
  code: "not-found" | "failed-precondition" | "invalid-argument";
  message: string;
}

/** A host's state as the API shows it: a lost host in maintenance is DOWN, otherwise UNKNOWN. */
export function apiState(h: HostEntry): HostState {
  if (!h.lost) return h.state;
  return h.state === "HOST_STATE_UP" ? "HOST_STATE_UNKNOWN" : "HOST_STATE_DOWN";
}

/**
 * Peloton's goal state of a host (`host_info.goal_state`): DOWN once maintenance is asked for (DRAINING,
 * DRAINED, DOWN), UP otherwise, as its StartMaintenance and CompleteMaintenance set it. A completion
 * brings the host out of maintenance at once here, so no host is DOWN with goal UP for long enough to list.
 */
export function goalState(state: HostState): HostState {
  return state === "HOST_STATE_DRAINING" || state === "HOST_STATE_DRAINED" || state === "HOST_STATE_DOWN"
    ? "HOST_STATE_DOWN"
    : "HOST_STATE_UP";
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f]*:[0-9a-f:.]*$/i;

/**
 * A host's IP address (HostInfo `ip`) as far as it is known: the one its backend reported (Peloton took it
 * from the agent's PID, `slave(1)@10.0.0.1:5051`), else its name when that is an address (agents registered
 * by address). Else empty, proto's "not set".
 */
export function ipOf(hostname: string, reported?: string): string {
  if (reported) return reported;
  return IPV4.test(hostname) || IPV6.test(hostname) ? hostname : "";
}

/**
 * A host in maintenance whose agent has not registered since a restart: in its pool (stored when it went
 * into maintenance), which is its one label known. Its resources are what its agent reported, which is not
 * stored: none are known, and its machine, down, offers none, so they are 0 (as for the agent id, empty).
 */
export function unregisteredHostJson(hostname: string, state: HostState, pool?: string): Body {
  const none = toLimits(zero());
  return {
    hostname,
    ip: ipOf(hostname),
    state,
    goalState: goalState(state),
    labels: pool === undefined ? [] : [{ key: HOST_POOL_ATTRIBUTE, value: pool }],
    ...(pool === undefined ? {} : { currentPool: pool, desiredPool: pool }),
    agentId: "",
    resources: { total: none, free: none, slack: none },
    tasks: 0,
  };
}

/**
 * A host as Peloton's `host.HostInfo` shows it (hostname, ip, state, goalState, labels, currentPool,
 * desiredPool), and ours besides, which the CLI's `host query` and the UI's hosts view show: its agent id,
 * resources (total, free, slack) and number of tasks.
 */
export function hostInfoJson(h: HostEntry): Body {
  const slack = h.slack, pool = h.info.attributes[HOST_POOL_ATTRIBUTE] ?? DEFAULT_HOST_POOL;
  const state = apiState(h);
  return {
    hostname: h.info.hostname,
    ip: ipOf(h.info.hostname, h.info.ip),
    state,
    goalState: goalState(state),
    labels: Object.entries(h.info.attributes).map(([key, value]) => ({ key, value })),
    // Moves take effect at once: the pool a host should be in is the one it is in.
    currentPool: pool,
    desiredPool: pool,
    agentId: h.info.agentId,
    resources: { total: toLimits(h.info.resources), free: toLimits(h.free), slack: toLimits(slack) },
    tasks: h.tasks.size,
  };
}

type ApiError = {
  code:
    | "invalid-argument"
    | "not-found"
    | "already-exists"
    | "failed-precondition"
    | "unimplemented"
    | "unavailable"
    | "internal";
  message: string;
};

type ApiResult = { body: Body } | { error: ApiError };

/**
 * Answers a host API request through `reply`: at once for a query or a refusal, and for maintenance once
 * every change it made is stored (a maintenance request acknowledged is never lost to a restart).
 */
export function hostApi(target: HostApiTarget, req: ApiRequest, reply: (res: ApiResult) => void): void {
  const method = req.procedure.slice(req.procedure.indexOf("::") + 2);
  const body = (req.body ?? {}) as Body;
  switch (method) {
    case "QueryHosts":
      return reply(queryHosts(target, body));
    case "StartMaintenance":
    case "CompleteMaintenance":
      return maintenance(target, method, body, reply);
    case "ListHostPools":
      return reply({ body: { pools: target.hostPools.list() } });
    case "CreateHostPool":
      return hostPoolChange(target, target.hostPools.create(body.name, target.now()), reply);
    case "DeleteHostPool":
      return hostPoolChange(target, target.hostPools.delete(body.name, target.now()), reply);
    case "ChangeHostPool":
      return hostPoolChange(
        target,
        target.hostPools.change(body.hostname, body.sourcePool, body.destinationPool, target.now()),
        reply,
      );
    case "MoveHosts": {
      // Peloton's reply is empty; this one names the hosts moved, in the order chosen.
      const move = moveHosts(target.hostPools, (name) => target.host(name), body, target.now());
      if ("code" in move) return reply({ error: move });
      return hostPoolChange(target, move.change, reply, { hosts: move.hosts });
    }
  }
  reply({ error: { code: "unimplemented", message: `procedure ${req.procedure} is not implemented` } });
}

function maintenance(
  target: HostApiTarget,
  method: "StartMaintenance" | "CompleteMaintenance",
  body: Body,
  reply: (res: ApiResult) => void,
): void {
  const names = hostnamesOf(body);
  if (typeof names === "string") return reply({ error: { code: "invalid-argument", message: names } });
  // Every host of a list is checked before any changes, and the refusals are reported together: a call
  // refused for one host changes none (Peloton's went down the list and left the hosts before it changed).
  const hosts = [...new Set(names)];
  const refusals = hosts.flatMap((name) => target.maintenanceRefusal(method, name) ?? []);
  if (refusals.length) {
    const code = refusals.every((r) => r.code === "not-found")
      ? "not-found"
      : refusals.some((r) => r.code === "failed-precondition")
      ? "failed-precondition"
      : "invalid-argument";
    return reply({ error: { code, message: refusals.map((r) => r.message).join("; ") } });
  }
  const failures: ReturnType<typeof storeFailure>[] = [];
  let waiting = 1;
  const settle = () => {
    if (--waiting > 0) return;
    if (failures.length) {
      // Unavailable only when every failure was the store out of reach: a call again may then succeed.
      const code = failures.every((e) => e.code === "unavailable") ? "unavailable" : "internal";
      return reply({ error: { code, message: failures.map((e) => e.message).join("; ") } });
    }
    reply({ body: names.length === 1 ? { hostname: names[0] } : { hostnames: names } });
  };
  for (const name of hosts) {
    const done = (err?: Error) => {
      if (err) failures.push(storeFailure(err, `storing the maintenance of host ${name}`));
      settle();
    };
    waiting++;
    const refused = method === "StartMaintenance"
      ? target.startMaintenance(name, done)
      : target.completeMaintenance(name, done);
    if (refused) {
      // Checked above in the same turn: a refusal now is the host manager's fault, not the caller's.
      failures.push({ code: "internal", message: refused.message });
      waiting--;
    }
  }
  settle();
}

/** Applies an accepted host pool change and answers (Peloton's empty reply, unless told) once it is stored. */
function hostPoolChange(
  target: HostApiTarget,
  change: HostPoolChange | HostPoolRefusal,
  reply: (res: ApiResult) => void,
  answer: Body = {},
): void {
  if ("code" in change) return reply({ error: change });
  target.applyHostPoolChange(change, (err) => {
    if (err) reply({ error: storeFailure(err, "storing the host pool change") });
    else reply({ body: answer });
  });
}

/**
 * `hostname`, or the deprecated `hostnames` list Peloton still accepts. Both may name one host; naming
 * different ones is refused: Peloton's handler takes the list alone whenever it is not empty, which would
 * silently leave `hostname` out, and taking `hostname` alone would leave the list out.
 */
function hostnamesOf(body: Body): string[] | string {
  // An absent field is undefined, or null (protobuf's JSON reads null as the field left out); an empty list
  // is the list left out, as protobuf reads it, beside a hostname.
  const name = body.hostname;
  const list = Array.isArray(body.hostnames) && !body.hostnames.length && name != null
    ? null
    : body.hostnames;
  if (list != null) {
    if (!Array.isArray(list) || !list.length) {
      return `hostnames: ${gotText(list)}, expected a non-empty list of host names`;
    }
    const bad = list.findIndex((h) => typeof h !== "string" || !h);
    if (bad >= 0) return `hostnames[${bad}]: ${gotText(list[bad])}, expected a host name`;
  }
  if (name != null && (typeof name !== "string" || !name)) {
    return `hostname: ${gotText(name)}, expected a host name`;
  }
  if (list == null) {
    return name == null ? "hostname: missing, expected a host name (or hostnames, a list)" : [name as string];
  }
  if (name == null) return list as string[];
  if (list.every((h) => h === name)) return [name as string];
  return `hostname and hostnames: got ${JSON.stringify(name)} and ${JSON.stringify(list)}, give hostnames ` +
    "or hostname, not both (Peloton acts on the list alone)";
}

function queryHosts(target: HostApiTarget, body: Body): { body: Body } | { error: ApiError } {
  const states = body.hostStates;
  if (states !== undefined && !Array.isArray(states)) {
    return { error: { code: "invalid-argument", message: "hostStates: expected a list of host states" } };
  }
  const wanted = new Set<string>();
  for (const s of (states ?? []) as unknown[]) {
    const name = typeof s === "number"
      ? Object.entries(HOST_STATES).find(([, n]) => n === s)?.[0]
      : String(s);
    if (!name || !(name in HOST_STATES)) {
      return {
        error: {
          code: "invalid-argument",
          message: `hostStates: got ${JSON.stringify(s)}, expected one of ${
            Object.keys(HOST_STATES).join(", ")
          }`,
        },
      };
    }
    wanted.add(name as HostState);
  }
  const infos = target.hosts.filter((h) => !wanted.size || wanted.has(apiState(h))).map(hostInfoJson);
  for (const name of target.unregisteredInMaintenance()) {
    const state = target.unregisteredState(name);
    if (!wanted.size || wanted.has(state)) {
      infos.push(unregisteredHostJson(name, state, target.hostPools.poolOf(name)));
    }
  }
  return { body: { hostInfos: infos } };
}
