/**
 * MoveHosts (v0 HostService, Peloton's host mover `pkg/hostmgr/hostpool/hostmover`): moves a number of hosts
 * from one host pool to another, choosing which, as one change stored in one batch.
 *
 * The request is Peloton's `MoveHostsRequest`: `sourcePool`, `destinationPool` and the number of hosts each
 * should have afterwards, `srcPoolDesiredHosts` and `destPoolDesiredHosts` (absent is 0, as in proto3). As
 * in Peloton, the two must agree (the source loses as many hosts as the destination gains), and a request
 * whose outcome is already the case moves nothing and succeeds, so a retried request does not move twice.
 * Unlike Peloton's, any pool may be the source (Peloton's moves only out of `shared`, for its resizer), a
 * destination with more hosts than asked is refused rather than ignored, the hosts move at once (as
 * ChangeHostPool moves them here; their running tasks are left alone), and the reply names the moved hosts.
 */
import { gotText } from "../model/got_text.ts";
import { type Resources, zero } from "../model/resources.ts";
import type { HostEntry } from "./host_table.ts";
import { badName, type HostPoolChange, type HostPoolRefusal, type HostPools } from "./host_pools.ts";

/** Peloton's fields are int32. */
const MAX_HOSTS = 2 ** 31 - 1;

/**
 * The order in which a pool's hosts are given up, first to last. Peloton asks its resource manager's scorer,
 * which puts hosts without tasks first and then the least busy ones (fewest non-preemptible tasks,
 * controllers, tasks), leaving out hosts with non-preemptible work. The host manager does not know a task's
 * preemptibility, so it ranks by what it knows:
 * 1. usable hosts first: UP with their agent registered and neither leased to a placement engine nor
 *    reserved for a large task; then such hosts that are leased or reserved (work of the source pool is
 *    about to land there); then hosts whose agent is lost; hosts in maintenance (DRAINING, DRAINED, DOWN)
 *    last, since they give the destination nothing until their maintenance is over;
 * 2. fewest tasks first (the fewest of the source pool's tasks end up running in the destination);
 * 3. most free cpu, then most free memory (the destination gets the most room now);
 * 4. host name, so that the same cluster gives the same choice.
 *
 * `agentless` are hosts of the pool in maintenance whose agent has not registered since a restart (their
 * machine is down): in maintenance, with no task and nothing known to be free.
 */
export function moveOrder(
  hosts: readonly HostEntry[],
  nowMs: number,
  agentless: readonly string[] = [],
): string[] {
  const tier = (h: HostEntry) =>
    h.state !== "HOST_STATE_UP" ? 3 : h.lost ? 2 : h.leased(nowMs) || h.reservedFor !== undefined ? 1 : 0;
  const keyed: { hostname: string; tier: number; free: Resources; tasks: number }[] = [
    ...hosts.map((h) => ({ hostname: h.info.hostname, tier: tier(h), free: h.free, tasks: h.tasks.size })),
    ...agentless.map((hostname) => ({ hostname, tier: 3, free: zero(), tasks: 0 })),
  ];
  keyed.sort((a, b) =>
    a.tier - b.tier || a.tasks - b.tasks || b.free.cpuMilli - a.free.cpuMilli ||
    b.free.memMb - a.free.memMb || (a.hostname < b.hostname ? -1 : 1)
  );
  return keyed.map((k) => k.hostname);
}

/** MoveHosts accepted: the change to apply and store, and the hosts it moves in the order chosen. */
export interface HostsMove {
  change: HostPoolChange;
  hosts: string[];
}

/** Checks a MoveHosts request and makes its change, or says which field is wrong. */
export function moveHosts(
  pools: HostPools,
  hostOf: (hostname: string) => HostEntry | undefined,
  body: Record<string, unknown>,
  nowMs: number,
): HostsMove | HostPoolRefusal {
  const source = body.sourcePool, destination = body.destinationPool;
  for (const [field, pool] of [["sourcePool", source], ["destinationPool", destination]] as const) {
    const bad = badName(pool, field);
    if (bad) return bad;
    if (!pools.exists(pool as string)) return invalid(`${field}: host pool ${pool} does not exist`);
  }
  const src = source as string, dest = destination as string;
  if (src === dest) {
    return invalid(
      `destinationPool: got ${JSON.stringify(dest)}, the same as sourcePool; hosts move between two pools`,
    );
  }
  const srcDesired = hostCount(body.srcPoolDesiredHosts), destDesired = hostCount(body.destPoolDesiredHosts);
  if (srcDesired === undefined) return badCount("srcPoolDesiredHosts", body.srcPoolDesiredHosts);
  if (destDesired === undefined) return badCount("destPoolDesiredHosts", body.destPoolDesiredHosts);

  const srcHosts = pools.hostsOf(src), destHas = pools.hostsOf(dest).length;
  if (srcHosts.length === srcDesired && destHas === destDesired) {
    return { change: pools.moveAll([], dest, nowMs), hosts: [] };
  }
  const count = destDesired - destHas;
  if (count <= 0) {
    return invalid(
      `destPoolDesiredHosts: got ${destDesired}, but host pool ${dest} has ${destHas} hosts already; ` +
        `expected more than ${destHas} (the hosts it has plus the number to move)`,
    );
  }
  if (count > srcHosts.length) {
    return invalid(
      `destPoolDesiredHosts: got ${destDesired}, which moves ${hosts(count)} into host pool ${dest} ` +
        `(it has ${destHas}), but host pool ${src} has only ${hosts(srcHosts.length)}`,
    );
  }
  if (srcHosts.length - count !== srcDesired) {
    return invalid(
      `srcPoolDesiredHosts: got ${srcDesired}, but moving ${hosts(count)} out of host pool ${src} ` +
        `(it has ${srcHosts.length}) leaves ${srcHosts.length - count}; the two pools' counts must change ` +
        "by the same number",
    );
  }
  // A pool's host not registered is one in maintenance whose agent has not come back since a restart.
  const entries: HostEntry[] = [], agentless: string[] = [];
  for (const name of srcHosts) {
    const h = hostOf(name);
    if (h) entries.push(h);
    else agentless.push(name);
  }
  const chosen = moveOrder(entries, nowMs, agentless).slice(0, count);
  return { change: pools.moveAll(chosen, dest, nowMs), hosts: chosen };
}

/** A count as proto3 JSON writes an int32: a number, or a string of digits; absent is 0. */
function hostCount(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 0 && n <= MAX_HOSTS ? n : undefined;
}

function badCount(field: string, v: unknown): HostPoolRefusal {
  return invalid(`${field}: ${gotText(v)}, expected a whole number of hosts (0 to ${MAX_HOSTS})`);
}

function invalid(message: string): HostPoolRefusal {
  return { code: "invalid-argument", message };
}

const hosts = (n: number) => `${n} host${n === 1 ? "" : "s"}`;
