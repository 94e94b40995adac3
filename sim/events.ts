/** Timed scenario events on virtual time: failures, rack loss, maintenance, capacity and pool changes. */
import type { ApiReply } from "../core/messages.ts";
import type { Prng } from "../core/ports/prng.ts";
import type { SimCluster, UsageGroup } from "./cluster.ts";
import type { DrainWatch } from "./drain_watch.ts";
import type { EventQueue } from "./event_queue.ts";
import { poolConfig, type Scenario, type ScenarioEvent, type ScenarioPool } from "./scenario.ts";
import { type HostSelector, runOrder } from "./scenario_events.ts";
import { type HostClass, hostsOf } from "./scenario_hosts.ts";

const HOST_SERVICE = "peloton.api.v0.host.svc.HostService";
const RESPOOL_SERVICE = "peloton.api.respool.ResourceManager";

/** What happened, for the report: when, what, and on how many hosts. */
export interface EventRecord {
  atSec: number;
  kind: string;
  detail: string;
  hosts?: number;
  error?: string;
  /**
   * A drain: simulated seconds from its start until the last of its hosts had no task left (DRAINED), or
   * null when that never came before the run ended. A host still draining when the maintenance's time is
   * up stays in maintenance until drained (Peloton completes only drained hosts), so this may be longer
   * than the event's `durationSec`.
   */
  drainSeconds?: number | null;
  /**
   * A drain: hosts it picked that an earlier drain still had in maintenance. They stay that drain's: this one
   * neither starts nor completes their maintenance, and they are not in its `hosts` nor its `drainSeconds`.
   */
  alreadyInMaintenance?: number;
  /**
   * A drain not over by the end of the run: its hosts that still have tasks, and what holds those tasks
   * there, by workload (most tasks first). An SLA that can never be met shows here as tasks held by their
   * job's SLA while its unavailable instances wait, PENDING, for room elsewhere.
   */
  drainPending?: DrainPending;
}

export interface DrainPending {
  hosts: number;
  tasks: number;
  holding: { workload: string; jobs: number; tasks: number; why: string }[];
}

export interface EventContext {
  queue: EventQueue;
  cluster: SimCluster;
  prng: Prng;
  api: (procedure: string, body: unknown, onReply: (r: ApiReply) => void) => void;
  poolIds: Map<string, string>;
  usageGroups: Map<string, UsageGroup>;
  log: EventRecord[];
  /** Times the drains: it must see the messages sent when the scenario has drain events. */
  drains: DrainWatch;
}

/** Schedules every event of the scenario. */
export function scheduleEvents(scenario: Scenario, ctx: EventContext): void {
  const classes = new Map<string, HostClass>(scenario.hostClasses.map((c) => [c.name, c]));
  // New hosts of a class continue its numbering.
  const nextIndex = new Map<string, number>(scenario.hostClasses.map((c) => [c.name, c.count]));
  const pools = new Map<string, ScenarioPool>();
  const walk = (list: ScenarioPool[], parent: string) => {
    for (const p of list) {
      const path = `${parent === "/" ? "" : parent}/${p.name}`;
      pools.set(path, p);
      walk(p.children ?? [], path);
    }
  };
  walk(scenario.respools, "/");
  const state: EventState = {
    classes,
    nextIndex,
    pools,
    poolUpdates: new Serial(),
    removed: new Set(),
    holds: new Map(),
    inMaintenance: new Set(),
    drainSteps: new Serial(),
  };
  // An event due before the run got there (pools are created first, over the modelled RPC latency) runs at
  // once, as a workload's early arrival does; those run in their own time order.
  for (const { e } of runOrder(scenario.events)) {
    ctx.queue.schedule(Math.max(e.atSec * 1000, ctx.queue.now), () => apply(e, ctx, state));
  }
}

/** What events carry from one to the next. */
interface EventState {
  classes: Map<string, HostClass>;
  nextIndex: Map<string, number>;
  /** Each pool's config as the resource manager holds it: the scenario's, then every update it accepted. */
  pools: Map<string, ScenarioPool>;
  poolUpdates: Serial<string>;
  /** Hosts removed: they never come back, whatever was to bring them back. */
  removed: Set<string>;
  /** Hosts down, by how many failures and lost racks hold them (one without a recovery for good). */
  holds: Map<string, number>;
  /** Hosts a drain put into maintenance and has not completed yet: the host manager has them in maintenance. */
  inMaintenance: Set<string>;
  /** Each drain's steps, by its record: its end waits for the host manager's answer to its start. */
  drainSteps: Serial<EventRecord>;
}

function apply(e: ScenarioEvent, ctx: EventContext, state: EventState): void {
  const { classes, nextIndex, pools } = state;
  const at = e.atSec;
  const record = (kind: string, detail: string, hosts?: number) => {
    const r: EventRecord = { atSec: at, kind, detail };
    if (hosts !== undefined) r.hosts = hosts;
    ctx.log.push(r);
    return r;
  };
  const later = (sec: number, fn: () => void) => ctx.queue.schedule((at + sec) * 1000, fn);
  const up = (name: string) => ctx.cluster.host(name)?.up === true;
  if (e.failHosts || e.loseRack) {
    const names = select(ctx, e.loseRack ? { rack: e.loseRack } : e.failHosts!, up);
    // A lost rack holds its hosts an earlier failure has down too: they come back with the last of the two.
    const downAlready = e.loseRack
      ? select(ctx, { rack: e.loseRack }, (n) => !up(n) && !state.removed.has(n))
      : [];
    const what = e.loseRack ? `rack ${e.loseRack} lost` : `hosts failed (${describe(e.failHosts!)})`;
    const r = record(e.loseRack ? "loseRack" : "failHosts", what, names.length);
    if (downAlready.length) r.detail += `, ${downAlready.length} of its hosts down already`;
    const held = [...names, ...downAlready];
    for (const n of held) state.holds.set(n, (state.holds.get(n) ?? 0) + 1);
    ctx.cluster.hostsDown(names, e.loseRack ? `rack ${e.loseRack} lost` : "agent failed");
    if (e.recoverAfterSec) {
      later(e.recoverAfterSec, () => recover(ctx, state, held, what, at + e.recoverAfterSec!));
    }
  } else if (e.drain) {
    const picked = select(ctx, e.drain, up);
    // A host an earlier drain has in maintenance is left to it: the host manager refuses a whole
    // StartMaintenance naming a DRAINED host, and this drain's end must not end that drain's maintenance.
    let names = picked.filter((n) => !state.inMaintenance.has(n));
    const r = record("drain", `maintenance (${describe(e.drain)})`, names.length);
    if (names.length < picked.length) r.alreadyInMaintenance = picked.length - names.length;
    ctx.drains.watch(r, names, ctx.queue.now);
    for (const n of names) state.inMaintenance.add(n);
    state.drainSteps.run(r, (next) =>
      maintenance(ctx, "StartMaintenance", names, r, (ok) => {
        if (!ok) {
          // Refused as a whole: none of its hosts is this drain's to complete.
          for (const n of names) state.inMaintenance.delete(n);
          names = [];
        }
        next();
      }));
    if (e.durationSec) {
      later(e.durationSec, () =>
        state.drainSteps.run(r, (next) => {
          // A host removed during the maintenance stays gone: there is no agent to complete it for. One a
          // failure or lost rack holds down has its maintenance completed, and comes up as that recovers.
          const back = names.filter((n) => !state.removed.has(n));
          const gone = names.length - back.length;
          const held = back.filter((n) => state.holds.has(n)).length;
          for (const n of names) if (state.removed.has(n)) state.inMaintenance.delete(n);
          const notes = [
            ...(gone ? [`${gone} removed meanwhile stay gone`] : []),
            ...(held ? [`${held} still down for a failure`] : []),
          ];
          const headline = back.length > held
            ? "hosts up again"
            : back.length
            ? "none up again"
            : "none of its own in maintenance to bring back";
          const done: EventRecord = {
            atSec: at + e.durationSec!,
            kind: "maintenanceDone",
            detail: `${headline}${notes.length ? ` (${notes.join(", ")})` : ""}`,
            hosts: back.length - held,
          };
          ctx.log.push(done);
          completeWhenDrained(ctx, state, back, done);
          next();
        }));
    }
  } else if (e.addHosts || e.addHostClass) {
    const c = e.addHostClass ?? classes.get(e.addHosts!.class)!;
    if (e.addHostClass) classes.set(c.name, c);
    const count = e.addHosts?.count ?? c.count;
    const first = nextIndex.get(c.name) ?? 0;
    nextIndex.set(c.name, first + count);
    const hosts = hostsOf(c, first, count);
    record(e.addHostClass ? "addHostClass" : "addHosts", `+${count} ${c.name} hosts`, hosts.length);
    ctx.cluster.addHosts(hosts, c.name);
  } else if (e.removeHosts) {
    // Machines leave the cluster whatever their state: one down now (a failure to recover from, a lost
    // rack) is taken too, in host order, and stays gone. Only hosts removed already are not there to take.
    const names = select(ctx, e.removeHosts, (n) => !state.removed.has(n));
    for (const n of names) state.removed.add(n);
    const down = names.filter((n) => !up(n)).length;
    const r = record("removeHosts", `hosts removed (${describe(e.removeHosts)})`, names.length);
    if (down) r.detail += `, ${down} of them down already`;
    ctx.cluster.removeHosts(names, "agent removed");
  } else if (e.updatePool) {
    const { path, force, ...change } = e.updatePool;
    // Said once the resource manager answers: an update it refused changed nothing.
    const r = record("updatePool", `pool ${path}: update not answered by the end of the run`);
    const id = ctx.poolIds.get(path);
    if (!pools.has(path) || !id) {
      r.error = `no pool ${path}`;
      r.detail = `pool ${path} not updated`;
      return;
    }
    const parentPath = path.slice(0, path.lastIndexOf("/")) || "/";
    // The change replaces fields of the config the resource manager holds, so it is merged only once the
    // update before it to the same pool was answered, and kept only if the resource manager accepted it:
    // a rejected update must not ride along with a later one.
    state.poolUpdates.run(path, (done) => {
      const updated = { ...pools.get(path)!, ...change } as ScenarioPool;
      ctx.api(`${RESPOOL_SERVICE}::UpdateResourcePool`, {
        id: { value: id },
        force: force === true,
        config: { ...poolConfig(updated), parent: { value: ctx.poolIds.get(parentPath) } },
      }, (reply) => {
        const err = reply.error?.message ?? errorText(reply.body);
        if (err) r.error = err;
        else pools.set(path, updated);
        r.detail = err ? `pool ${path} not updated: the respool API refused it` : `pool ${path} updated`;
        done();
      });
    });
  } else if (e.usage) {
    const group = ctx.usageGroups.get(e.usage.workload)!;
    record("usage", `${e.usage.workload} tasks use ×${e.usage.level} of their modelled cpu`);
    ctx.cluster.setUsageLevel(group, e.usage.level);
  }
}

/**
 * A failure's or lost rack's end: its hosts come back, but for those removed meanwhile, which stay gone, and
 * those another failure or lost rack still holds down, which come back with the last of them. A host a
 * drain still has in maintenance has its agent back, but is up only once its maintenance completes.
 */
function recover(ctx: EventContext, state: EventState, held: string[], what: string, atSec: number): void {
  const back: string[] = [];
  let gone = 0, still = 0, maintained = 0;
  for (const n of held) {
    const left = state.holds.get(n)! - 1;
    if (left) state.holds.set(n, left);
    else state.holds.delete(n);
    if (state.removed.has(n)) gone++;
    else if (left) still++;
    else {
      back.push(n);
      if (state.inMaintenance.has(n)) maintained++;
    }
  }
  ctx.cluster.hostsUp(back);
  const notes = [
    ...(gone ? [`${gone} removed meanwhile stay gone`] : []),
    ...(still ? [`${still} still down for another failure`] : []),
    ...(maintained ? [`${maintained} still in maintenance`] : []),
  ];
  ctx.log.push({
    atSec,
    kind: "recover",
    detail: `${what}: back${notes.length ? ` (${notes.join(", ")})` : ""}`,
    hosts: back.length - maintained,
  });
}

/** Runs the steps given for one key one after another, each once the one before called `done`. */
class Serial<K> {
  readonly #waiting = new Map<K, ((done: () => void) => void)[]>();

  run(key: K, step: (done: () => void) => void): void {
    const waiting = this.#waiting.get(key);
    if (waiting) {
      waiting.push(step);
      return;
    }
    const queue: ((done: () => void) => void)[] = [];
    this.#waiting.set(key, queue);
    const next = () => {
      const following = queue.shift();
      if (following) following(next);
      else this.#waiting.delete(key);
    };
    step(next);
  }
}

/** Starts or completes the maintenance of hosts; `onReply` is told whether the host manager did (no hosts: did). */
function maintenance(
  ctx: EventContext,
  method: "StartMaintenance" | "CompleteMaintenance",
  names: string[],
  r: EventRecord,
  onReply: (ok: boolean) => void = () => {},
): void {
  if (!names.length) return onReply(true);
  ctx.api(`${HOST_SERVICE}::${method}`, { hostnames: names }, (reply) => {
    if (reply.error) r.error = reply.error.message;
    onReply(!reply.error);
  });
}

/** How often the hosts of a drain whose time is up are looked at again while they still drain. */
const DRAIN_RECHECK_MS = 1000;

/**
 * Ends a drain's maintenance as an operator does under Peloton's rule that only drained hosts complete:
 * the hosts no longer DRAINING now, the others once their tasks have moved off.
 */
function completeWhenDrained(
  ctx: EventContext,
  state: EventState,
  names: string[],
  r: EventRecord,
  again = false,
): void {
  ctx.api(`${HOST_SERVICE}::QueryHosts`, { hostStates: ["HOST_STATE_DRAINING"] }, (reply) => {
    if (reply.error) {
      r.error = reply.error.message;
      return;
    }
    const infos = (reply.body as { hostInfos: { hostname: string }[] }).hostInfos;
    const draining = new Set(infos.map((h) => h.hostname));
    const drained = names.filter((n) => !draining.has(n));
    maintenance(ctx, "CompleteMaintenance", drained, r, (ok) => {
      // Refused, they stay in maintenance as far as a later drain can tell.
      if (ok) drained.forEach((n) => state.inMaintenance.delete(n));
    });
    const left = names.filter((n) => draining.has(n));
    if (!left.length) return;
    // Said once, with how many were still draining when the maintenance's time was up.
    if (!again) r.detail += ` (${left.length} still draining, completed once drained)`;
    ctx.queue.schedule(
      ctx.queue.now + DRAIN_RECHECK_MS,
      () => completeWhenDrained(ctx, state, left, r, true),
    );
  });
}

/**
 * Hosts matching a selector, in host order, of those `candidate` takes (agents up, hosts not removed); then a
 * seeded fraction of them, then the first `count`.
 */
export function select(
  ctx: EventContext,
  s: HostSelector,
  candidate: (hostname: string) => boolean,
): string[] {
  const wanted = s.hosts ? new Set(s.hosts) : undefined;
  const seen = new Set<string>();
  let names: string[] = [];
  for (const h of ctx.cluster.hosts) {
    const a = h.attributes;
    if (seen.has(h.hostname)) continue;
    seen.add(h.hostname);
    if (s.class !== undefined && a.host_class !== s.class) continue;
    if (s.rack !== undefined && a.rack !== s.rack) continue;
    if (s.zone !== undefined && a.zone !== s.zone) continue;
    if (wanted && !wanted.has(h.hostname)) continue;
    if (!candidate(h.hostname)) continue;
    names.push(h.hostname);
  }
  if (s.fraction !== undefined) {
    // A seeded partial shuffle: the same seed picks the same hosts.
    const k = Math.round(names.length * s.fraction);
    for (let i = 0; i < k; i++) {
      const j = i + Math.floor(ctx.prng() * (names.length - i));
      [names[i], names[j]] = [names[j], names[i]];
    }
    names = names.slice(0, k);
  }
  if (s.count !== undefined) names = names.slice(0, s.count);
  return names;
}

function describe(s: HostSelector): string {
  const parts: string[] = [];
  if (s.class) parts.push(`class ${s.class}`);
  if (s.rack) parts.push(`rack ${s.rack}`);
  if (s.zone) parts.push(`zone ${s.zone}`);
  if (s.hosts) parts.push(`${s.hosts.length} named`);
  if (s.count) parts.push(`at most ${s.count}`);
  if (s.fraction) parts.push(`${Math.round(s.fraction * 100)}%`);
  return parts.join(", ") || "all hosts";
}

export function errorText(body: unknown): string | undefined {
  const e = (body as { error?: Record<string, { message?: string }> } | undefined)?.error;
  if (!e) return undefined;
  const first = Object.values(e)[0];
  return first?.message ?? JSON.stringify(e);
}
