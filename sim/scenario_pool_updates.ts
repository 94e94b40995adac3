/**
 * The rules a scenario's `updatePool` events follow: judged, in the order they run, against the pool tree as
 * the updates before them left it, by the nesting rules the respool API applies to an update (Peloton's
 * UpdateResourcePool), and warned of when they make the top-level pools reserve more than the cluster has.
 */
import type { RespoolConfig } from "../core/model/config_types.ts";
import { isMapping } from "./scenario_distribution.ts";
import {
  amountsText,
  clusterMost,
  OVER_RESERVED_WHY,
  poolConfig,
  type PoolIssue,
  respoolIssues,
} from "./scenario_pools.ts";
import { RESOURCE_FIELDS } from "./scenario_workload.ts";

/** An event as these rules read it: its time and, for an update, the pool's path and the fields it gives. */
export interface PoolUpdateEvent {
  atSec: number;
  updatePool?: { path: string; [key: string]: unknown };
}

/** One pool as the respool API holds it: its fields as written (undefined: a file not read yet), its place. */
interface Held {
  fields?: Record<string, unknown>;
  config?: RespoolConfig;
  parent: string;
  children: string[];
}

/** The pools by path ("" the root), as created from the scenario's `respools`. */
function treeOf(respools: unknown): Map<string, Held> {
  const tree = new Map<string, Held>([["", { parent: "", children: [] }]]);
  const walk = (list: unknown, parent: string) => {
    if (!Array.isArray(list)) return;
    for (const pool of list) {
      if (!isMapping(pool) || typeof pool.name !== "string") continue;
      const path = `${parent}/${pool.name}`;
      if (tree.has(path)) continue;
      const fields = pool.file === undefined ? pool : undefined;
      tree.set(path, { fields, config: fields && configOf(fields), parent, children: [] });
      tree.get(parent)!.children.push(path);
      walk(pool.children, path);
    }
  };
  walk(respools, "");
  return tree;
}

/** A pool's config by the resource manager's rules, or undefined when it has errors of its own. */
function configOf(fields: Record<string, unknown>): RespoolConfig | undefined {
  return respoolIssues(poolConfig(fields)).config;
}

/** Of a kind, a pool's reservation and limit (0 for a kind it lists none of, as Peloton fills it). */
function amounts(
  config: RespoolConfig,
  kind: string,
): { reservation: number; limit: number; listed: boolean } {
  const r = config.resources.find((x) => x.kind === kind);
  return { reservation: r?.reservation ?? 0, limit: r?.limit ?? 0, listed: r !== undefined };
}

const KINDS = RESOURCE_FIELDS.map(([, kind]) => kind);

/**
 * Runs the scenario's pool updates in the order the simulator runs them (by time, then list order) over the
 * pools of `respools`: `visit` is told of each with the problems the respool API would refuse it for (none
 * when it is forced, or its own fields have errors: those are the pool rules' to report), then the update is
 * applied when it has none, as the simulator keeps only updates the API accepted.
 */
function eachUpdate(
  respools: unknown,
  events: readonly PoolUpdateEvent[],
  visit: (i: number, e: PoolUpdateEvent, issues: PoolIssue[], before: Map<string, Held>) => void,
): void {
  const tree = treeOf(respools);
  const order = events.map((e, i) => ({ e, i })).filter(({ e }) => e.updatePool)
    .sort((a, b) => a.e.atSec - b.e.atSec || a.i - b.i);
  for (const { e, i } of order) {
    const { path, force, ...change } = e.updatePool!;
    const pool = tree.get(path);
    if (path === "" || !pool?.fields) continue;
    const fields = { ...pool.fields, ...change };
    const config = configOf(fields);
    if (!config) continue;
    const at = ["events", i, "updatePool"];
    const issues = force === true || !Array.isArray(change.resources)
      ? []
      : nestingIssues(tree, path, config, e.atSec).map((x) => ({ ...x, path: [...at, ...x.path] }));
    visit(i, e, issues, tree);
    if (!issues.length) tree.set(path, { ...pool, fields, config });
  }
}

/**
 * Why the respool API would refuse a pool's new `config` at `atSec`: a limit above its parent's, its
 * siblings' reservations and its own adding up to more than its parent's, a limit below a child's, its
 * children's reservations adding up to more than its own. Paths are within the update (`resources[0].limit`).
 * Rules needing a pool whose config is unknown are not judged.
 */
function nestingIssues(
  tree: Map<string, Held>,
  path: string,
  config: RespoolConfig,
  atSec: number,
): PoolIssue[] {
  const issues: PoolIssue[] = [];
  const pool = tree.get(path)!;
  const parent = tree.get(pool.parent)!;
  const siblings = parent.children.filter((c) => c !== path).map((c) => tree.get(c)!);
  const children = pool.children.map((c) => ({ path: c, config: tree.get(c)!.config }));
  const when = ` at ${atSec} s`;
  config.resources.forEach((r, j) => {
    // The root limits nothing.
    if (pool.parent !== "" && parent.config) {
      const p = amounts(parent.config, r.kind);
      const which = p.listed ? "" : `, which lists no ${r.kind} resource`;
      if (r.limit > p.limit) {
        issues.push({
          path: ["resources", j, "limit"],
          message: `expected at most ${p.limit}, the limit of ${pool.parent}${when}${which}`,
        });
      }
      if (siblings.every((s) => s.config)) {
        const others = siblings.reduce((n, s) => n + amounts(s.config!, r.kind).reservation, 0);
        if (others + r.reservation > p.reservation) {
          issues.push({
            path: ["resources", j, "reservation"],
            message: `expected at most ${Math.max(0, p.reservation - others)}: the reservation of ` +
              `${pool.parent} is ${p.reservation}${when}${which}, and its other children reserve ${others}`,
          });
        }
      }
    }
  });
  if (!children.every((c) => c.config)) return issues;
  for (const kind of KINDS) {
    const own = config.resources.findIndex((r) => r.kind === kind);
    const { reservation, limit } = amounts(config, kind);
    // A kind the update leaves out has a limit and a reservation of 0, as Peloton fills it.
    const at = (field: string) => (own < 0 ? ["resources"] : ["resources", own, field]);
    const none = own < 0 ? `lists no ${kind} resource, so its ${kind} limit is 0: ` : "";
    for (const c of children) {
      const childLimit = amounts(c.config!, kind).limit;
      if (childLimit > limit) {
        issues.push({
          path: at("limit"),
          message: `${none}expected at least ${childLimit}, the ${kind} limit of its child ${c.path}${when}`,
        });
      }
    }
    const reserved = children.reduce((n, c) => n + amounts(c.config!, kind).reservation, 0);
    if (reserved > reservation) {
      issues.push({
        path: at("reservation"),
        message: `${none.replace("limit", "reservation")}expected at least ${reserved}, what its children ` +
          `reserve of ${kind}${when}`,
      });
    }
  }
  return issues;
}

/**
 * Every `updatePool` event the respool API would refuse, with every problem of each: the updated pool judged
 * against its parent, its siblings and its children as earlier updates (those accepted) left them. A forced
 * update (`force: true`) is taken as the API takes it, unchecked.
 */
export function poolUpdateIssues(respools: unknown, events: readonly PoolUpdateEvent[]): PoolIssue[] {
  const out: PoolIssue[] = [];
  eachUpdate(respools, events, (_i, _e, issues) => out.push(...issues));
  return out;
}

/**
 * Updates of a top-level pool after which the top-level pools reserve more of a resource than the cluster
 * ever has, and more than before the update: the warning `overReservedCluster` gives the scenario's own
 * pools, for the tree as the update leaves it.
 */
export function overReservedByUpdates(
  scenario: Parameters<typeof clusterMost>[0] & { events: readonly PoolUpdateEvent[] },
  respools: unknown,
): PoolIssue[] {
  const most = clusterMost(scenario);
  const out: PoolIssue[] = [];
  const topReserved = (tree: Map<string, Held>, path?: string, config?: RespoolConfig) => {
    const sums = new Map<string, number>(KINDS.map((k) => [k, 0]));
    for (const top of tree.get("")!.children) {
      const c = top === path ? config : tree.get(top)!.config;
      if (c) { for (const k of KINDS) sums.set(k, sums.get(k)! + amounts(c, k).reservation); }
    }
    return sums;
  };
  eachUpdate(respools, scenario.events, (i, e, issues, tree) => {
    const path = e.updatePool!.path;
    if (issues.length || tree.get(path)?.parent !== "") return;
    const { path: _p, force: _f, ...change } = e.updatePool!;
    const config = configOf({ ...tree.get(path)!.fields, ...change });
    const before = topReserved(tree), after = topReserved(tree, path, config);
    const over = new Map<string, number>(), has = new Map<string, number>();
    for (const k of KINDS) {
      if (after.get(k)! <= most.get(k)! || after.get(k)! <= before.get(k)!) continue;
      over.set(k, after.get(k)!);
      has.set(k, most.get(k)!);
    }
    if (!over.size) return;
    out.push({
      path: ["events", i, "updatePool", "resources"],
      message: `after this update at ${e.atSec} s the top-level pools reserve ${amountsText(over)}, more ` +
        `than the cluster ever has (${amountsText(has)}): ${OVER_RESERVED_WHY}`,
    });
  });
  return out;
}
