/** Timed events of the scenario format: host failures, rack loss, maintenance, capacity changes, pool changes. */
import { z } from "zod";
import { type Found, type HostAction, HostStates, type Selection, whyNot } from "./scenario_host_states.ts";
import { criteria, HostCatalog, type HostClass, hostClass } from "./scenario_hosts.ts";

/** Which hosts an event acts on: a class, a rack, named hosts, and how many of them. */
const hostSelector = z.object({
  class: z.string().min(1).optional(),
  /** A value of the hosts' `rack` attribute, e.g. `std-rack-3`. */
  rack: z.string().min(1).optional(),
  /** A value of the hosts' `zone` attribute. */
  zone: z.string().min(1).optional(),
  hosts: z.array(z.string().min(1)).optional(),
  /** At most this many of the matching hosts (the first ones, in host order). */
  count: z.number().int().positive().optional(),
  /** Or this fraction of them, picked with the run's seed. */
  fraction: z.number().positive().max(1).optional(),
}).strict().refine((s) => Object.keys(s).length > 0, {
  // `{}` would pick every host of the cluster: almost always a typo, never what a what-if means.
  message: "expected a selector: one or more of class, rack, zone, hosts, count or fraction",
});
export type HostSelector = z.infer<typeof hostSelector>;

export const scenarioEvent = z.object({
  atSec: z.number().nonnegative(),
  /** Agents fail: their tasks are lost and run again elsewhere. */
  failHosts: hostSelector.optional(),
  /** Every host of a rack fails at once. */
  loseRack: z.string().min(1).optional(),
  /** failHosts and loseRack: the hosts come back (empty) after this long; without it they stay down. */
  recoverAfterSec: z.number().positive().optional(),
  /** Peloton host maintenance: the hosts drain (their tasks are moved), then come back after `durationSec`. */
  drain: hostSelector.optional(),
  /**
   * drain: how long the maintenance lasts; without it the hosts stay in maintenance. A host still draining
   * then comes back once drained (Peloton completes only drained hosts).
   */
  durationSec: z.number().positive().optional(),
  /** More hosts of a class from `hostClasses`, or of a class defined here. */
  addHosts: z.object({ class: z.string().min(1), count: z.number().int().positive() }).strict().optional(),
  addHostClass: hostClass.optional(),
  /** Hosts leave for good (decommissioned): like a failure that never recovers. */
  removeHosts: hostSelector.optional(),
  /** UpdateResourcePool on a pool path, in Peloton's respool shape (the fields given replace the pool's). */
  updatePool: z.object({ path: z.string() }).catchall(z.unknown()).optional(),
  /** A workload's tasks use this multiple of their modelled cpu (a traffic spike: slack shrinks). */
  usage: z.object({ workload: z.string().min(1), level: z.number().nonnegative() }).strict().optional(),
}).strict().superRefine((e, ctx) => {
  const actions = ACTIONS.filter((k) => e[k] !== undefined);
  if (actions.length !== 1) {
    ctx.addIssue({
      code: "custom",
      message: `expected exactly one of ${ACTIONS.join(", ")}; got ${
        actions.length ? actions.join(", ") : "none"
      }`,
    });
    return;
  }
  // Another event's field would be ignored, and hosts meant to come back would stay down.
  const kind = actions[0];
  for (const field of ["recoverAfterSec", "durationSec"] as const) {
    if (e[field] === undefined || COMES_BACK_AFTER[kind] === field) continue;
    const own = COMES_BACK_AFTER[kind];
    ctx.addIssue({
      code: "custom",
      path: [field],
      message: `expected no ${field} on ${kind} events (${TAKES[field]})${
        own ? `; its hosts come back after ${own}` : ""
      }`,
    });
  }
});
export type ScenarioEvent = z.infer<typeof scenarioEvent>;

export const ACTIONS = [
  "failHosts",
  "loseRack",
  "drain",
  "addHosts",
  "addHostClass",
  "removeHosts",
  "updatePool",
  "usage",
] as const;

/** The field that says when an event's hosts come back, for the events whose hosts do. */
const COMES_BACK_AFTER: Partial<Record<(typeof ACTIONS)[number], "recoverAfterSec" | "durationSec">> = {
  failHosts: "recoverAfterSec",
  loseRack: "recoverAfterSec",
  drain: "durationSec",
};
const TAKES = {
  recoverAfterSec: "recoverAfterSec is for failHosts and loseRack",
  durationSec: "durationSec is for drain",
};

/**
 * What events name elsewhere in the scenario, and the pool rules they must follow. The classes, workloads
 * or pools of a scenario whose field for them is malformed are undefined: what names them is not checked.
 */
export interface EventScope {
  hostClasses?: HostClass[];
  workloads?: string[];
  /** The run's length, when it has one: events after it never happen. */
  durationSec?: number;
  /** Paths of the scenario's pools, the root left out. */
  pools?: string[];
  /** Problems with a pool config in Peloton's respool shape: where below the pool, and what was expected. */
  poolIssues: (config: Record<string, unknown>) => { path: (string | number)[]; message: string }[];
}

type Report = (path: (string | number)[], message: string) => void;

/**
 * Checks that every event names classes, hosts, racks, zones, pools and workloads that exist when it runs,
 * comes before the run's end, and has a host selector that picks hosts it can act on then: hosts earlier
 * events removed, took down (and did not bring back yet) or put into maintenance (for a drain) do not count.
 * Events are checked in the order they run (`runOrder`), so an event may use a class an earlier-listed but
 * later-timed event adds only if it runs after it.
 */
export function checkEvents(events: ScenarioEvent[], scope: EventScope, report: Report): void {
  const hosts = scope.hostClasses && new HostCatalog(scope.hostClasses);
  const states = scope.hostClasses && new HostStates(scope.hostClasses);
  const classAddedAt = new Map<string, number>();
  for (const e of events) if (e.addHostClass) classAddedAt.set(e.addHostClass.name, e.atSec);
  const grows = classAddedAt.size > 0 || events.some((e) => e.addHosts);
  for (const { e, i } of runOrder(events)) {
    const ms = Math.ceil(e.atSec * 1000);
    const path = (...rest: (string | number)[]) => ["events", i, ...rest];
    // At the end itself, an event would start what the run never shows (a drain of no length).
    const late = scope.durationSec !== undefined && e.atSec >= scope.durationSec;
    if (late) {
      report(path("atSec"), `expected a time before durationSec (${scope.durationSec}), when the run ends`);
    }
    if (e.updatePool) checkPoolUpdate(e.updatePool, scope, path("updatePool"), report);
    if (e.usage && scope.workloads && !scope.workloads.includes(e.usage.workload)) {
      report(path("usage", "workload"), `expected one of the workloads (${scope.workloads.join(", ")})`);
    }
    if (!hosts || !states) continue;
    states.advance(ms);
    const when = grows ? ` at ${e.atSec} s` : "";
    const oneOf = (what: string, list: string[]) =>
      list.length
        ? `expected one of the ${what} (${list.join(", ")})${when}`
        : `expected one of the ${what}, but there are none${when}`;
    const checkClass = (name: string, at: (string | number)[]) => {
      if (hosts.hasClass(name)) return true;
      const later = classAddedAt.get(name);
      const hint = later !== undefined && later >= e.atSec
        ? `; ${name} is added by an addHostClass event that runs after this one (at ${later} s)`
        : "";
      report(at, `${oneOf("host classes", hosts.classNames())}${hint}`);
      return false;
    };
    if (e.addHostClass) {
      const name = e.addHostClass.name;
      if (hosts.hasClass(name)) {
        report(
          path("addHostClass", "name"),
          `expected a class name not in use yet (${hosts.classNames().join(", ")})`,
        );
      } else {
        hosts.addClass(e.addHostClass);
        states.addClass(e.addHostClass);
      }
    }
    if (e.addHosts) {
      checkClass(e.addHosts.class, path("addHosts", "class"));
      hosts.addHosts(e.addHosts.class, e.addHosts.count);
      states.addHosts(e.addHosts.class, e.addHosts.count);
    }
    // An event the run never reaches takes no host away, and is refused for its time alone.
    const act = (action: HostAction, s: Selection): Found | undefined => {
      if (late) return undefined;
      const untilSec = action === "removeHosts"
        ? undefined
        : action === "drain"
        ? e.durationSec
        : e.recoverAfterSec;
      return states.act(action, s, {
        event: i,
        atSec: e.atSec,
        action,
        untilSec: untilSec === undefined ? undefined : e.atSec + untilSec,
        rack: e.loseRack,
      });
    };
    for (const key of ["failHosts", "drain", "removeHosts"] as const) {
      const s = e[key];
      if (!s) continue;
      // Each name is checked on its own first; only a selector whose every name exists picks hosts.
      let exists = s.class === undefined || checkClass(s.class, path(key, "class"));
      if (s.rack !== undefined && !hosts.hasRack(s.rack)) {
        report(path(key, "rack"), oneOf("racks", hosts.describe("rack")));
        exists = false;
      }
      if (s.zone !== undefined && !hosts.hasZone(s.zone)) {
        report(path(key, "zone"), oneOf("zones", hosts.describe("zone")));
        exists = false;
      }
      s.hosts?.forEach((h, j) => {
        if (hosts.hasHost(h)) return;
        report(path(key, "hosts", j), oneOf("hosts", hosts.describe("host")));
        exists = false;
      });
      const picks = exists && checkPicks(s, hosts, path(key), when, report);
      // The hosts are taken down even when the event is refused: what follows is judged as the run goes.
      const found = act(key, s);
      if (picks && found) checkFound(found, s, key, e.atSec, path(key), report);
    }
    if (e.loseRack !== undefined) {
      const known = hosts.hasRack(e.loseRack);
      if (!known) report(path("loseRack"), oneOf("racks", hosts.describe("rack")));
      const rack = { rack: e.loseRack };
      const found = act("loseRack", rack);
      if (known && found && found.atMost === 0) {
        report(
          path("loseRack"),
          `expected a rack with a host that is up at ${e.atSec} s: ${whyNot(found, rack)}`,
        );
      }
    }
  }
}

/**
 * The events in the order the run applies them: by `atSec` (unrounded: two events less than a millisecond
 * apart run in time order, though virtual time moves in whole ms), then list order. The simulator schedules
 * them in this order, and its queue keeps it within a millisecond (first in, first out); the checker judges
 * each event against what the ones before it in this order did.
 */
export function runOrder(events: ScenarioEvent[]): { e: ScenarioEvent; i: number }[] {
  return events.map((e, i) => ({ e, i })).sort((a, b) => a.e.atSec - b.e.atSec || a.i - b.i);
}

/**
 * A selector picks at least one host of those there are when its event runs: one that picks none would run
 * as an event on no host (a drain of 0 s reads as an instant one). Hosts earlier events took away are
 * counted here; `checkFound` judges what is left of them. Returns whether the selector passed.
 */
function checkPicks(
  s: HostSelector,
  hosts: HostCatalog,
  at: (string | number)[],
  when: string,
  report: Report,
): boolean {
  const { count, excluded } = hosts.pick(s);
  const wanted = criteria(s).join(" and ");
  for (const x of excluded) {
    report([...at, "hosts", x.index], `expected a host ${wanted}: ${x.host} is ${x.is.join(" and ")}`);
  }
  if (excluded.length) return false;
  if (count === 0) {
    report(at, `expected a selector that picks a host: no host is ${wanted || "there"}${when}`);
  } else if (s.fraction !== undefined && Math.round(count * s.fraction) === 0) {
    report(
      [...at, "fraction"],
      `expected a fraction that picks ${someOf(count)}${when} (${count} × ${s.fraction} rounds to 0)`,
    );
  } else return true;
  return false;
}

const someOf = (count: number) => count === 1 ? "the one host" : `at least one of the ${count} hosts`;

/**
 * A selector whose hosts are there picks one the event can act on when it runs: one whose agent is up
 * (the simulator skips the others), for a drain one not in maintenance already, for a removal one not
 * removed already (down or not). A host it names must
 * be such a host. Only what is sure is refused: a host a seeded fraction may have left counts.
 */
function checkFound(
  found: Found,
  s: HostSelector,
  action: HostAction,
  atSec: number,
  at: (string | number)[],
  report: Report,
): void {
  // A removal takes hosts that are down too: only those removed already are gone for it.
  const state = `${
    action === "drain" ? "up and not in maintenance" : action === "removeHosts" ? "not removed yet" : "up"
  } at ${atSec} s`;
  let named = false;
  s.hosts?.forEach((host, j) => {
    const reason = found.unavailable.get(host);
    if (reason === undefined) return;
    report([...at, "hosts", j], `expected a host that is ${state}: ${host} is ${reason}`);
    named = true;
  });
  if (named) return;
  if (s.fraction !== undefined && found.up > 0 && Math.round(found.up * s.fraction) === 0) {
    report(
      [...at, "fraction"],
      `expected a fraction that picks ${someOf(found.up)} up at ${atSec} s (${found.up} × ${s.fraction} ` +
        `rounds to 0): ${whyNot(found, s)}`,
    );
  } else if (found.atMost === 0) {
    // A drain's count takes the first hosts up, in maintenance or not, as the simulator picks them.
    const first = action === "drain" && s.count !== undefined && found.unavailable.size < found.matched
      ? `; count takes the first ${s.count} hosts up, in maintenance or not`
      : "";
    report(at, `expected a selector that picks a host that is ${state}: ${whyNot(found, s)}${first}`);
  }
}

/** An updatePool names a pool of the tree, and its fields pass the rules the tree's own pools pass. */
function checkPoolUpdate(
  update: NonNullable<ScenarioEvent["updatePool"]>,
  scope: EventScope,
  at: (string | number)[],
  report: Report,
): void {
  const { path: pool, force: _force, ...change } = update;
  if (scope.pools && !scope.pools.includes(pool)) {
    report([...at, "path"], `expected one of the pools (${scope.pools.join(", ")})`);
  }
  // The change replaces whole fields of the pool, and the pool rules look at one field at a time.
  const name = pool.slice(pool.lastIndexOf("/") + 1);
  for (const issue of scope.poolIssues({ name, ...change })) report([...at, ...issue.path], issue.message);
}
