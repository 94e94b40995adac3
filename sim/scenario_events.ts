/** Timed events of the scenario format: host failures, rack loss, maintenance, capacity changes, pool changes. */
import { z } from "zod";
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
 * comes before the run's end, and has a host selector that picks hosts.
 * Events run by (time in whole ms, list order), as the simulator's event queue orders them, so an
 * event may use a class an earlier-listed but later-timed event adds only if it runs after it.
 */
export function checkEvents(events: ScenarioEvent[], scope: EventScope, report: Report): void {
  const hosts = scope.hostClasses && new HostCatalog(scope.hostClasses);
  const classAddedAt = new Map<string, number>();
  for (const e of events) if (e.addHostClass) classAddedAt.set(e.addHostClass.name, e.atSec);
  const grows = classAddedAt.size > 0 || events.some((e) => e.addHosts);
  const order = events.map((e, i) => ({ e, i, ms: Math.ceil(e.atSec * 1000) }))
    .sort((a, b) => a.ms - b.ms || a.i - b.i);
  for (const { e, i } of order) {
    const path = (...rest: (string | number)[]) => ["events", i, ...rest];
    // At the end itself, an event would start what the run never shows (a drain of no length).
    if (scope.durationSec !== undefined && e.atSec >= scope.durationSec) {
      report(path("atSec"), `expected a time before durationSec (${scope.durationSec}), when the run ends`);
    }
    if (e.updatePool) checkPoolUpdate(e.updatePool, scope, path("updatePool"), report);
    if (e.usage && scope.workloads && !scope.workloads.includes(e.usage.workload)) {
      report(path("usage", "workload"), `expected one of the workloads (${scope.workloads.join(", ")})`);
    }
    if (!hosts) continue;
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
      } else hosts.addClass(e.addHostClass);
    }
    if (e.addHosts) {
      checkClass(e.addHosts.class, path("addHosts", "class"));
      hosts.addHosts(e.addHosts.class, e.addHosts.count);
    }
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
      if (exists) checkPicks(s, hosts, path(key), when, report);
    }
    if (e.loseRack !== undefined && !hosts.hasRack(e.loseRack)) {
      report(path("loseRack"), oneOf("racks", hosts.describe("rack")));
    }
  }
}

/**
 * A selector picks at least one host of those there are when its event runs: one that picks none would run
 * as an event on no host (a drain of 0 s reads as an instant one). Hosts a failure or removal took down
 * before are counted: which ones a fraction took is the seed's to say.
 */
function checkPicks(
  s: HostSelector,
  hosts: HostCatalog,
  at: (string | number)[],
  when: string,
  report: Report,
): void {
  const { count, excluded } = hosts.pick(s);
  const wanted = criteria(s).join(" and ");
  for (const x of excluded) {
    report([...at, "hosts", x.index], `expected a host ${wanted}: ${x.host} is ${x.is.join(" and ")}`);
  }
  if (excluded.length) return;
  if (count === 0) {
    report(at, `expected a selector that picks a host: no host is ${wanted || "there"}${when}`);
  } else if (s.fraction !== undefined && Math.round(count * s.fraction) === 0) {
    const hostsThere = count === 1 ? "the one host" : `at least one of the ${count} hosts`;
    report(
      [...at, "fraction"],
      `expected a fraction that picks ${hostsThere}${when} (${count} × ${s.fraction} rounds to 0)`,
    );
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
