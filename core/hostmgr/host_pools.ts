/**
 * Peloton's host pools (`pkg/hostmgr/hostpool`, v0 HostService ListHostPools, CreateHostPool, DeleteHostPool,
 * ChangeHostPool, and MoveHosts, which picks its hosts in `host_mover.ts`): every host is in exactly one
 * pool, and the pool is the host's `host_pool` label, which placement constraints match (`host_pool=batch`).
 *
 * A host's pool is, in order: the pool an operator put it in (stored); the pool its agent's `host_pool`
 * attribute names (the minicluster's agents and the simulator's host classes set one); the default pool.
 * A host put into maintenance has its pool stored too (`keep`), as if an operator had put it there: its
 * agent may be gone for good, and after a restart such a host is listed in its stored pool (`placeAgentless`),
 * where ChangeHostPool, DeleteHostPool and MoveHosts find it as they find a registered one.
 * The default pool always exists; a pool an agent names exists while it has hosts; a pool an operator
 * created exists until deleted. Moves take effect at once and leave the host's running tasks alone, as
 * Peloton's ChangeHostPool does; `desiredPool` is the current pool (no host goal-state engine moves hosts
 * later, as Peloton's does after MoveHosts).
 */
import { gotText } from "../model/got_text.ts";
import type { HostPoolAssignmentRecord, HostPoolRecord } from "../model/records.ts";
import type { StoredHostPools, StoreWrite } from "../ports/store.ts";

export const DEFAULT_HOST_POOL = "default";
export const HOST_POOL_ATTRIBUTE = "host_pool";

/** Pool names go into labels (`host_pool=<name>`) and the CLI's comma lists. */
const POOL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Why a host pool request is refused, with the API error code it answers with. */
export interface HostPoolRefusal {
  code: "invalid-argument" | "not-found" | "already-exists";
  message: string;
}

/** A change accepted: what to store, and the hosts whose pool it changes (with their new pool). */
export interface HostPoolChange {
  writes: StoreWrite[];
  moved: { hostname: string; pool: string }[];
  /** Puts the pools back as they were (the store refused the change); returns the hosts' moves back. */
  undo(): { hostname: string; pool: string }[];
}

/** A change being made: the undo of each step, and where each moved host was. */
type Building = HostPoolChange & { undos: (() => void)[]; back: { hostname: string; pool: string }[] };

export class HostPools {
  /** Pools an operator created, by name. */
  readonly #created = new Map<string, HostPoolRecord>();
  /** Hosts an operator put in a pool, by host name. */
  readonly #assigned = new Map<string, string>();
  /**
   * The pool of each host the host manager knows (registered, or in maintenance without its agent since a
   * restart), and each pool's hosts.
   */
  readonly #poolOf = new Map<string, string>();
  readonly #members = new Map<string, Set<string>>();

  /** Puts back what was stored before a restart (before any host registers). */
  recover(stored: StoredHostPools): void {
    for (const p of stored.pools) this.#created.set(p.name, p);
    for (const a of stored.assignments) this.#assigned.set(a.hostname, a.pool);
  }

  /** The pool of a host whose agent reports `attributes`, as it registers. */
  poolFor(hostname: string, attributes: Readonly<Record<string, string>>): string {
    return this.#assigned.get(hostname) ?? attributes[HOST_POOL_ATTRIBUTE] ?? DEFAULT_HOST_POOL;
  }

  /** The pool a known host is in (registered, or listed in maintenance), else undefined. */
  poolOf(hostname: string): string | undefined {
    return this.#poolOf.get(hostname);
  }

  /** Records that a host is in `pool` (it registered, or moved). */
  place(hostname: string, pool: string): void {
    const old = this.#poolOf.get(hostname);
    if (old === pool) return;
    if (old !== undefined) {
      const hosts = this.#members.get(old)!;
      hosts.delete(hostname);
      if (!hosts.size) this.#members.delete(old);
    }
    this.#poolOf.set(hostname, pool);
    let hosts = this.#members.get(pool);
    if (!hosts) this.#members.set(pool, hosts = new Set());
    hosts.add(hostname);
  }

  /**
   * Lists a host whose agent has not registered (one in maintenance, after a restart) in the pool stored for
   * it; one whose pool was never stored (its agent named it) is in the default pool until its agent registers.
   */
  placeAgentless(hostname: string): void {
    this.place(hostname, this.#assigned.get(hostname) ?? DEFAULT_HOST_POOL);
  }

  /** The host is no longer listed (its agent has not registered, and it left maintenance); its stored pool stays. */
  remove(hostname: string): void {
    const old = this.#poolOf.get(hostname);
    if (old === undefined) return;
    this.#poolOf.delete(hostname);
    const hosts = this.#members.get(old)!;
    hosts.delete(hostname);
    if (!hosts.size) this.#members.delete(old);
  }

  /**
   * Stores the pool a known host is in, unless it is stored already: a host going into maintenance keeps
   * it across a restart that does not see its agent again. Its undo forgets it, unless changed since.
   */
  keep(hostname: string, nowMs: number): HostPoolChange {
    const change = this.#change(), pool = this.#poolOf.get(hostname);
    const assigned = this.#assigned.get(hostname);
    if (pool === undefined || assigned === pool) return change;
    this.#assigned.set(hostname, pool);
    change.writes.push({ kind: "hostpool.assign", assignment: { hostname, pool, changedMs: nowMs } });
    change.undos.push(() => {
      if (this.#assigned.get(hostname) !== pool) return;
      if (assigned === undefined) this.#assigned.delete(hostname);
      else this.#assigned.set(hostname, assigned);
    });
    return change;
  }

  /** The hosts a pool has, by name. */
  hostsOf(pool: string): string[] {
    return [...this.#members.get(pool) ?? []].sort();
  }

  /** Moves known hosts to `pool` in the order given, as one change stored in one batch (MoveHosts). */
  moveAll(hostnames: readonly string[], pool: string, nowMs: number): HostPoolChange {
    const change = this.#change();
    for (const hostname of hostnames) {
      if (this.#poolOf.get(hostname) !== pool) this.#assign(hostname, pool, nowMs, change);
    }
    return change;
  }

  exists(name: string): boolean {
    return name === DEFAULT_HOST_POOL || this.#created.has(name) || this.#members.has(name);
  }

  /** Every pool with its hosts, by name; hosts by name. */
  list(): { name: string; hosts: string[] }[] {
    const names = new Set([DEFAULT_HOST_POOL, ...this.#created.keys(), ...this.#members.keys()]);
    return [...names].sort().map((name) => ({ name, hosts: this.hostsOf(name) }));
  }

  /** CreateHostPool. */
  create(name: unknown, nowMs: number): HostPoolChange | HostPoolRefusal {
    const bad = badName(name);
    if (bad) return bad;
    const pool = name as string;
    if (this.exists(pool)) return { code: "already-exists", message: `host pool ${pool} already exists` };
    const record = { name: pool, createdMs: nowMs };
    this.#created.set(pool, record);
    const change = this.#change();
    change.writes.push({ kind: "hostpool.put", pool: record });
    change.undos.push(() => this.#created.delete(pool));
    return change;
  }

  /** DeleteHostPool: its hosts move to the default pool. */
  delete(name: unknown, nowMs: number): HostPoolChange | HostPoolRefusal {
    const bad = badName(name);
    if (bad) return bad;
    const pool = name as string;
    if (pool === DEFAULT_HOST_POOL) {
      return {
        code: "invalid-argument",
        message: `name: the ${DEFAULT_HOST_POOL} host pool cannot be deleted`,
      };
    }
    if (!this.exists(pool)) return { code: "not-found", message: `host pool ${pool} not found` };
    const change = this.#change();
    const record = this.#created.get(pool);
    if (record) {
      this.#created.delete(pool);
      change.writes.push({ kind: "hostpool.delete", name: pool });
      change.undos.push(() => this.#created.set(pool, record));
    }
    // Its hosts, and hosts put in it that have not registered since a restart.
    const hosts = new Set(this.#members.get(pool));
    for (const [hostname, p] of this.#assigned) if (p === pool) hosts.add(hostname);
    for (const hostname of [...hosts].sort()) this.#assign(hostname, DEFAULT_HOST_POOL, nowMs, change);
    return change;
  }

  /**
   * ChangeHostPool. `source` must be the host's pool when given (Peloton requires it; the CLI looks it up
   * when left out); moving a host to the pool it is in changes nothing.
   */
  change(
    hostname: unknown,
    source: unknown,
    destination: unknown,
    nowMs: number,
  ): HostPoolChange | HostPoolRefusal {
    if (typeof hostname !== "string" || !hostname) {
      return {
        code: "invalid-argument",
        message: `hostname: ${gotText(hostname)}, expected a host name`,
      };
    }
    const current = this.#poolOf.get(hostname);
    if (current === undefined) return { code: "not-found", message: `host ${hostname} not found` };
    if (source !== undefined && source !== "" && source !== current) {
      return {
        code: "invalid-argument",
        message: `sourcePool: host ${hostname} is in host pool ${current}, not ${JSON.stringify(source)}`,
      };
    }
    const bad = badName(destination, "destinationPool");
    if (bad) return bad;
    const dest = destination as string;
    if (!this.exists(dest)) {
      return {
        code: "invalid-argument",
        message: `destinationPool: host pool ${dest} does not exist (create it first)`,
      };
    }
    const change = this.#change();
    if (dest !== current) this.#assign(hostname, dest, nowMs, change);
    return change;
  }

  /** An empty change whose undo runs its steps' undos, last first. */
  #change(): Building {
    const change: Building = {
      writes: [],
      moved: [],
      undos: [],
      back: [],
      undo: () => {
        for (const undo of change.undos.reverse()) undo();
        return change.back;
      },
    };
    return change;
  }

  #assign(hostname: string, pool: string, nowMs: number, change: Building): void {
    const assignment: HostPoolAssignmentRecord = { hostname, pool, changedMs: nowMs };
    const assigned = this.#assigned.get(hostname), current = this.#poolOf.get(hostname);
    this.#assigned.set(hostname, pool);
    change.writes.push({ kind: "hostpool.assign", assignment });
    change.undos.push(() => {
      if (assigned === undefined) this.#assigned.delete(hostname);
      else this.#assigned.set(hostname, assigned);
    });
    if (current !== undefined) {
      this.place(hostname, pool);
      change.moved.push({ hostname, pool });
      change.undos.push(() => this.place(hostname, current));
      change.back.push({ hostname, pool: current });
    }
  }
}

export function badName(name: unknown, field = "name"): HostPoolRefusal | undefined {
  if (typeof name === "string" && POOL_NAME.test(name)) return undefined;
  return {
    code: "invalid-argument",
    message: `${field}: ${gotText(name)}, expected a host pool name ` +
      "(1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit)",
  };
}

/** `attributes` with the host's pool as its `host_pool` label; the same object when it already says so. */
export function withPool(
  attributes: Readonly<Record<string, string>>,
  pool: string,
): Readonly<Record<string, string>> {
  return attributes[HOST_POOL_ATTRIBUTE] === pool
    ? attributes
    : { ...attributes, [HOST_POOL_ATTRIBUTE]: pool };
}
