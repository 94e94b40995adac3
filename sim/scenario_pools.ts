/** The rules a scenario's resource pools follow: each pool's config by the resource manager's rules, and how pools nest. */
import { z } from "zod";
import { normalizeConfigObject, parseRespoolConfig } from "../core/model/load.ts";
import { canonKey } from "../core/model/_schema_kit.ts";
import { normalizeKeys } from "../core/model/_key_normalize.ts";
import { parseYamlSource, plainToSource } from "../core/model/yaml_load.ts";
import type { JobConfig, RespoolConfig, RespoolResourceConfig } from "../core/model/config_types.ts";
import { gangSize, isRevocable } from "../core/jobmgr/task_build.ts";
import { mergeTaskConfig } from "../core/model/task_merge.ts";
import { slackLimit } from "../core/resmgr/admission_bounds.ts";
import { RespoolNode } from "../core/resmgr/respool_node.ts";
import { isMapping, leastOf } from "./scenario_distribution.ts";
import {
  JOB_RESOURCE_FIELDS,
  jobAmounts,
  jobFileIssues,
  type JobFiles,
  type JobFileTask,
} from "./scenario_hosts.ts";
import { quote } from "./scenario_messages.ts";
import { type Distribution, instanceRange, RESOURCE_FIELDS } from "./scenario_workload.ts";

/** A problem of one pool field; `path` is from the scenario's top (`respools[0].children[1].name`). */
export interface PoolIssue {
  path: (string | number)[];
  message: string;
}

/** The pool's config as the respool API takes it (Peloton's shape; `children` and `file` removed). */
export function poolConfig(pool: Record<string, unknown>): Record<string, unknown> {
  const { children: _c, file: _f, ...config } = pool;
  return { ...config, resources: Array.isArray(config.resources) ? config.resources : [] };
}

/** A pool config's errors and warnings by the resource manager's rules, and the config when it has no errors. */
export function respoolIssues(
  config: Record<string, unknown>,
): { errors: PoolIssue[]; warnings: PoolIssue[]; config?: RespoolConfig } {
  const res = parseRespoolConfig(config, "pool");
  const issue = (i: { path: string; message: string }): PoolIssue => ({
    path: i.path.split(/[.[\]]+/).filter(Boolean).map((s) => /^\d+$/.test(s) ? Number(s) : s),
    message: i.message.slice(`pool: ${i.path || "(top level)"}: `.length),
  });
  return res.ok
    ? { errors: [], warnings: res.warnings.map(issue), config: res.value }
    : { errors: res.errors.map(issue), warnings: res.warnings.map(issue) };
}

/** A scenario pool's keys that Peloton's respool config does not have: `poolConfig` takes them out. */
const SCENARIO_KEYS = z.object({ children: z.unknown(), file: z.unknown() });

/**
 * A pool's own issues by the resource manager's rules, with the scenario's keys (`children`, `file`), which
 * those rules never see, known too: a key one typo away from one of them is refused with a suggestion, as
 * a typo of Peloton's keys is, and the known keys an unknown key's message lists name them.
 */
function ownIssues(pool: Record<string, unknown>): ReturnType<typeof respoolIssues> {
  const own = respoolIssues(poolConfig(pool));
  const unknownKey = (i: PoolIssue) => i.path.length === 1 && i.message.startsWith("unknown key");
  const known = (i: PoolIssue): PoolIssue =>
    unknownKey(i)
      ? { ...i, message: i.message.replace(/\)$/, `, ${Object.keys(SCENARIO_KEYS.shape).join(", ")})`) }
      : i;
  const errors = own.errors.map(known), warnings: PoolIssue[] = [];
  for (const w of own.warnings.map(known)) {
    const meant = unknownKey(w) ? scenarioKeyNear(String(w.path[0])) : undefined;
    if (!meant) {
      warnings.push(w);
      continue;
    }
    const message = w.message.replace(/^unknown key, ignored \(/, `unknown key; did you mean ${meant}? (`);
    errors.push({ ...w, message });
  }
  return { ...own, errors, warnings };
}

/**
 * Why a pool may not name its parent, as Peloton's `respool create PATH FILE` and `respool validate` refuse a
 * file that does: the parent is where the pool is nested (PATH there, the scenario's nesting here), and a
 * second one would be silently overridden.
 */
const PARENT_GIVEN = "expected no parent: a pool's parent is where the scenario nests it (the pool whose " +
  "children list it, or the root for a pool in respools)";

/** The parent a pool's config names (in any key style), as the respool API reads it; undefined when none. */
function parentOf(pool: Record<string, unknown>): unknown {
  const config = normalizeConfigObject("respool", poolConfig(pool)).value;
  const v = isMapping(config) ? config.parent : undefined;
  // `{value: id}` or the id itself; an empty one is no parent, as Peloton's CLI reads it.
  const id = isMapping(v) && Object.keys(v).length === 1 && canonKey(Object.keys(v)[0]) === "value"
    ? Object.values(v)[0]
    : v;
  return id === undefined || id === null || id === "" ? undefined : v;
}

/**
 * Why a pool read from a respool file (`file`, holding `text`, whose config is `config`) is refused for
 * naming its parent: `<file>:<line>: parent: got "root", expected no parent: ...`; undefined when it names
 * none.
 */
export function parentInFile(text: string, file: string, config: RespoolConfig): string | undefined {
  if (!config.parent) return undefined;
  const source = parseYamlSource(text);
  const entry = source.ok && source.root.kind === "map"
    ? source.root.entries.find((e) => canonKey(e.key) === "parent")
    : undefined;
  const line = entry?.line === undefined ? "" : `:${entry.line}`;
  return `${file}${line}: parent: got ${quote(config.parent)}, ${PARENT_GIVEN}; remove it from the file`;
}

/** The scenario key a pool's key is a typo of (`childern`) or spelt otherwise (`Children`), if any. */
function scenarioKeyNear(key: string): string | undefined {
  const norm = normalizeKeys(plainToSource({ [key]: 0 }), SCENARIO_KEYS);
  return norm.notes[0]?.suggestion ?? Object.keys(norm.value as Record<string, unknown>)[0];
}

/**
 * Checks a scenario's pools as written (`respools`, whether or not the rest of the scenario is valid):
 * each inline pool's config by the resource manager's own rules (errors and warnings; a key one typo away
 * from a known one is an error), no pool naming its `parent` (`PARENT_GIVEN`), then each pool against its
 * parent and siblings as the respool API checks it when a run creates it: a top-level pool is not named
 * root, siblings have different names, a pool's limits are within its parent's, and the reservations of a
 * parent's children add up to at most its own (counted in list order, without the pools refused before).
 * Entries that are not pools (not a mapping, or children that are not a list) are the schema's to report and
 * are skipped, as are rules that need a pool whose config is unknown: one from a `file:` not read yet
 * (`loadScenarioFile` checks those once it is), or one with errors of its own.
 */
export function checkPools(respools: unknown): { errors: PoolIssue[]; warnings: PoolIssue[] } {
  const errors: PoolIssue[] = [], warnings: PoolIssue[] = [];
  walk(respools, ["respools"], { path: "" }, true, errors, warnings);
  return { errors, warnings };
}

/** `checkPools` for pools whose configs were checked already (those `file:` named): nesting only. */
export function checkNesting(respools: unknown): PoolIssue[] {
  const errors: PoolIssue[] = [];
  walk(respools, ["respools"], { path: "" }, false, errors, []);
  return errors;
}

/**
 * The pools of `list` (at `at`), children of the pool at `parent.path` ("" for the root, which checks
 * nothing; undefined when its name is not known) whose config is `parent.config` (undefined when unknown).
 */
function walk(
  list: unknown,
  at: (string | number)[],
  parent: { path?: string; config?: RespoolConfig },
  ownRules: boolean,
  errors: PoolIssue[],
  warnings: PoolIssue[],
): void {
  if (!Array.isArray(list)) return;
  const siblings: Siblings = { names: new Set(), reserved: new Map() };
  list.forEach((pool, i) => {
    if (!isMapping(pool)) return;
    const here = [...at, i];
    let config: RespoolConfig | undefined;
    // Beside a `file:` too, whose pool replaces the rest of the entry.
    if (ownRules && parentOf(pool) !== undefined) {
      errors.push({ path: [...here, "parent"], message: `${PARENT_GIVEN}; remove it` });
    }
    if (!pool.file || !ownRules) {
      const own = ownIssues(pool);
      if (ownRules) {
        for (const e of own.errors) errors.push({ path: [...here, ...e.path], message: e.message });
        for (const w of own.warnings) warnings.push({ path: [...here, ...w.path], message: w.message });
      }
      config = own.config;
    }
    const name = typeof pool.name === "string" ? pool.name : undefined;
    const refused = nestingIssues(name, config, parent, siblings);
    for (const r of refused) errors.push({ path: [...here, ...r.path], message: r.message });
    // A pool the respool API refuses is not created: its later siblings' reservations add up without it.
    if (config && !refused.length) addReservations(siblings.reserved, config.resources);
    const path = parent.path === undefined || name === undefined ? undefined : `${parent.path}/${name}`;
    walk(pool.children, [...here, "children"], { path, config }, ownRules, errors, warnings);
  });
}

/** The names of the pools before, and what they reserve by resource kind (those the API would create). */
interface Siblings {
  names: Set<string>;
  reserved: Map<string, number>;
}

/** Why the respool API would refuse to create a pool under `parent` after `siblings`; paths within the pool. */
function nestingIssues(
  name: string | undefined,
  config: RespoolConfig | undefined,
  parent: { path?: string; config?: RespoolConfig },
  siblings: Siblings,
): PoolIssue[] {
  const issues: PoolIssue[] = [];
  const under = parent.path;
  if (name !== undefined && under === "" && name === "root") {
    issues.push({
      path: ["name"],
      message: `got "root", expected a name other than root for a top-level pool: the resource manager's ` +
        "root pool has it",
    });
  }
  if (name !== undefined && under !== undefined && siblings.names.has(name)) {
    issues.push({
      path: ["name"],
      message: `got ${quote(name)}, expected a name no other pool under ${under || "/"} has`,
    });
  }
  if (name !== undefined) siblings.names.add(name);
  // The root has no resources of its own and limits nothing.
  if (!config || !under || !parent.config) return issues;
  config.resources.forEach((r, j) => {
    const p = parent.config!.resources.find((x) => x.kind === r.kind);
    // Peloton fills a kind a pool leaves out with reservation 0 and limit 0.
    const which = p ? "" : `, which lists no ${r.kind} resource`;
    const limit = p?.limit ?? 0, reservation = p?.reservation ?? 0;
    if (r.limit > limit) {
      issues.push({
        path: ["resources", j, "limit"],
        message: `got ${r.limit}, expected at most ${limit}, the limit of ${under}${which}`,
      });
    }
    const before = siblings.reserved.get(r.kind) ?? 0;
    if (before + r.reservation <= reservation) return;
    const left = Math.max(0, reservation - before);
    issues.push({
      path: ["resources", j, "reservation"],
      message: before === 0
        ? `got ${r.reservation}, expected at most ${reservation}, the reservation of ${under}${which}`
        : `got ${r.reservation}, expected at most ${left}: the reservation of ${under} is ${reservation}, ` +
          `and its children before this one reserve ${before}`,
    });
  });
  return issues;
}

function addReservations(into: Map<string, number>, resources: RespoolResourceConfig[]): void {
  for (const r of resources) into.set(r.kind, (into.get(r.kind) ?? 0) + r.reservation);
}

/**
 * Workloads whose every task asks for more of some resource than its pool's limit: the resource manager
 * never admits such a task, so the workload's jobs wait for the whole run without a placement attempt or a
 * failure reason. A pool that lists no resource of a kind has a limit of 0 for it, as in Peloton. A job
 * file's tasks are judged by their configs (`files`: its defaultConfig and each instanceConfig, warned of at
 * the job file's field), a trace's are not; only pools whose configs are valid are. A revocable task's cpu
 * is not: it comes from slack, admitted against the pool's slack entitlement, which no limit caps; its
 * memory, disk and gpu are held to the pool's slack limit too (`admission_bounds.ts`'s `slackLimit`, the
 * bound admission holds it to). A warning, not an error: the run shows what such a cluster does.
 */
export function unadmittableWork(
  workloads: readonly {
    name: string;
    respool: string;
    jobFile?: string;
    trace?: unknown;
    revocable?: boolean;
  }[],
  respools: unknown,
  files?: JobFiles,
): PoolIssue[] {
  const limits = poolLimits(respools);
  const issues: PoolIssue[] = [];
  const waits = ": the resource manager will admit none of them, and they will wait for the whole run";
  workloads.forEach((w, i) => {
    const pool = limits.get(w.respool);
    if (!pool || w.trace !== undefined) return;
    if (w.jobFile !== undefined) {
      const judge = (t: JobFileTask) => {
        const asks = jobAmounts(t.config);
        return RESOURCE_FIELDS.flatMap(([, kind, unit], k) => {
          const over = overPool(w.respool, pool, kind, asks[k], t.revocable);
          return over === undefined ? [] : [{
            field: `${t.from("resource")}.resource.${JOB_RESOURCE_FIELDS[k]}`,
            what: `asks for ${asks[k]} ${unit}, ${over}`,
          }];
        });
      };
      issues.push(...jobFileIssues(w, i, files, judge, waits));
      return;
    }
    for (const [field, kind, unit] of RESOURCE_FIELDS) {
      const least = leastOf((w as Record<string, unknown>)[field]);
      const over = overPool(w.respool, pool, kind, least, w.revocable === true);
      if (over === undefined) continue;
      issues.push({
        path: ["workloads", i, field],
        message: `every task of ${w.name} asks for at least ${least} ${unit}, ${over}${waits}`,
      });
    }
  });
  return issues;
}

/** How a task asking for `amount` of a kind is more than its pool (at `path`) ever admits, if it is. */
function overPool(
  path: string,
  pool: PoolBounds,
  kind: string,
  amount: number,
  revocable: boolean,
): string | undefined {
  if (kind === "cpu" && revocable) return undefined;
  const limit = pool.limits.get(kind) ?? 0;
  if (amount > limit) {
    const why = pool.limits.has(kind)
      ? `its ${kind} limit is ${limit}`
      : `it lists no ${kind} resource, so its ${kind} limit is 0`;
    return `more than ${path} can ever hold (${why})`;
  }
  if (revocable && amount > pool.slack(kind)) {
    return `more than ${path} can ever hold of revocable work (${pool.slackWhy(kind)})`;
  }
  return undefined;
}

/**
 * Gangs bigger than their pool may ever hold or than the cluster ever has: a gang is admitted whole or not
 * at all (Peloton's `minimumRunningInstances`), against an entitlement its pool's limit and the cluster's
 * capacity cap, so a workload whose every gang asks for more never has one admitted, and its jobs wait for
 * the whole run with no placement attempt (a queue behind them in the pool waits too). A gang's least ask
 * is judged (its fewest tasks times a task's least draw); a job file's gang is its instances below
 * `sla.minimumRunningInstances` (a batch job's, not revocable), each with its own config. Workloads whose
 * tasks alone are too big are `unadmittableWork`'s; a trace's are not judged. So are gangs within both
 * whose members need more hosts at once than the cluster ever has room for one on (`tooFewHosts`): admitted,
 * such a gang is never placed and holds its pool's allocation. A warning, as `unadmittableWork`'s.
 */
export function oversizedGangs(
  scenario: Parameters<typeof clusterMost>[0] & {
    workloads: readonly {
      name: string;
      respool: string;
      instances: Distribution;
      gang?: boolean | number;
      jobFile?: string;
      trace?: unknown;
      revocable?: boolean;
    }[];
  },
  respools: unknown,
  files?: JobFiles,
): PoolIssue[] {
  const limits = poolLimits(respools);
  const most = clusterMost(scenario), hosts = hostsEver(scenario);
  const issues: PoolIssue[] = [];
  scenario.workloads.forEach((w, i) => {
    if (w.trace !== undefined) return;
    const pool = limits.get(w.respool);
    let gang: { size: number; members: number[][]; revocable: boolean } | undefined;
    if (w.jobFile !== undefined) gang = jobFileGang(files?.templates[w.name]);
    else if (w.gang !== undefined && w.gang !== false) {
      const fewest = instanceRange(w.instances).min;
      const size = w.gang === true ? fewest : Math.min(w.gang, fewest);
      const least = RESOURCE_FIELDS.map(([field]) => leastOf((w as Record<string, unknown>)[field]));
      gang = { size, members: Array(size).fill(least), revocable: w.revocable === true };
    }
    if (!gang || gang.size < 2) return;
    const over: string[] = [];
    let overLimit = false;
    RESOURCE_FIELDS.forEach(([, kind, unit], k) => {
      // Revocable cpu comes from slack, which no limit caps.
      if (kind === "cpu" && gang.revocable) return;
      // Revocable work is held to the slack limit (within the limit while it is at most 100%).
      const slack = pool && gang.revocable ? pool.slack(kind) : Infinity;
      const limit = Math.min(pool ? pool.limits.get(kind) ?? 0 : Infinity, slack);
      const asks = gang.members.map((m) => m[k]);
      // A task alone over the limit is warned of already.
      if (asks.every((n) => n <= 0) || asks.some((n) => n > limit)) return;
      const total = Math.round(asks.reduce((a, b) => a + b, 0) * 1000) / 1000;
      const cap = Math.min(limit, most.get(kind)!);
      if (total <= cap) return;
      overLimit ||= total > limit;
      const which = limit > most.get(kind)!
        ? `more than the cluster ever has (${most.get(kind)} ${unit})`
        : limit === slack
        ? `more than ${w.respool} can ever hold of revocable work (${pool!.slackWhy(kind)})`
        : `more than ${w.respool} can ever hold (its ${kind} limit is ${limit})`;
      over.push(`${total} ${unit}, ${which}`);
    });
    const synthetic = w.jobFile === undefined;
    const warn = (asks: string, then: string) =>
      issues.push(
        synthetic
          ? {
            path: ["workloads", i, "gang"],
            message: `every gang of ${w.name} has at least ${gang.size} tasks, ${asks}: ${then}`,
          }
          : {
            path: ["workloads", i, "jobFile"],
            message:
              `${files?.resolve ? files.resolve(w.jobFile!) : w.jobFile}: sla.minimumRunningInstances: ` +
              `every gang of ${w.name} has ${gang.size} tasks, ${asks}: ${then}`,
          },
      );
    if (!over.length) {
      // Admitted, but too many members for the hosts at once: it holds its pool's allocation.
      const few = tooFewHosts(hosts, gang.members, synthetic);
      if (few === undefined) return;
      warn(
        few,
        "a gang is placed whole or not at all, so none of them will ever be placed, and admitted, they hold " +
          `${w.respool}'s allocation (work queued behind them in ${w.respool} waits with them)`,
      );
      return;
    }
    // A gang over its pool's limit is passed over at admission; one too big for the cluster holds the
    // pool's queue, as more hosts would let it in.
    const behind = overLimit ? "" : ` (and work queued behind them in ${w.respool} with them)`;
    const admitted = "a gang is admitted whole or not at all, so the resource manager will admit none of " +
      `them, and they will wait for the whole run${behind}`;
    warn(`which ask for ${synthetic ? "at least " : ""}${over.join("; ")}`, admitted);
  });
  return issues;
}

/**
 * How a gang's members (asks by `RESOURCE_FIELDS`) need more hosts at once than `hosts` have room for, e.g.
 * "which ask for at least 8 GPUs each, and only 7 hosts ever have room for one"; undefined when they do not.
 * Like members are counted together, as many on a host as its resources hold: exact for a gang of like
 * members, and one whose members differ is judged by each kind alone, so a gang that fits is never named.
 * Host pools and constraints are not judged (they only take hosts away). Members no host takes at all are
 * `unplaceableWork`'s.
 */
function tooFewHosts(
  hosts: { count: number; has: number[] }[],
  members: number[][],
  least: boolean,
): string | undefined {
  const alike = new Map<string, { need: number[]; count: number }>();
  for (const need of members) {
    const seen = alike.get(need.join());
    if (seen) seen.count++;
    else alike.set(need.join(), { need, count: 1 });
  }
  for (const { need, count } of alike.values()) {
    let room = 0, most = 0;
    for (const h of hosts) {
      const each = Math.min(...need.flatMap((n, k) => n > 0 ? [Math.floor(h.has[k] / n)] : []));
      room += each * h.count;
      most = Math.max(most, each);
    }
    if (room === 0 || room >= count) continue;
    const asks = amountsText(
      new Map(RESOURCE_FIELDS.flatMap(([, kind], k) => need[k] > 0 ? [[kind, need[k]]] : [])),
    );
    const which = count === members.length ? "which ask" : `${count} of which ask`;
    const few = most > 1
      ? `the hosts could only ever hold ${room} of them at once`
      : `only ${room} host${room === 1 ? "" : "s"} ever ${room === 1 ? "has" : "have"} room for one`;
    return `${which} for ${least ? "at least " : ""}${asks} each, and ${few}`;
  }
  return undefined;
}

/** The hosts a scenario ever has, by class: those at the start and those events add, with their resources. */
function hostsEver(scenario: {
  hostClasses: readonly ClassCapacity[];
  events: readonly { addHostClass?: ClassCapacity; addHosts?: { class: string; count: number } }[];
}): { count: number; has: number[] }[] {
  const classes = [...scenario.hostClasses, ...scenario.events.flatMap((e) => e.addHostClass ?? [])];
  const added = (name: string) =>
    scenario.events.reduce((n, e) => n + (e.addHosts?.class === name ? e.addHosts.count : 0), 0);
  return classes.map((c) => ({
    count: c.count + added(c.name),
    has: RESOURCE_FIELDS.map(([field]) => c[field]),
  }))
    .filter((c) => c.count > 0);
}

/**
 * A job file's gang: a batch job's instances below `sla.minimumRunningInstances` that are not revocable
 * (`gangSize`), each asking for its config's resources; undefined when it has none.
 */
function jobFileGang(
  template: Record<string, unknown> | undefined,
): { size: number; members: number[][]; revocable: boolean } | undefined {
  const job = template as unknown as JobConfig | undefined;
  if (!job || job.type !== "BATCH") return undefined;
  const members: number[][] = [];
  for (let id = 0; id < Math.min(job.sla.minimumRunningInstances, job.instanceCount); id++) {
    const config = mergeTaskConfig(job, id);
    if (gangSize(job, id, isRevocable(job, config)) > 1) members.push(jobAmounts(config));
  }
  return { size: members.length, members, revocable: false };
}

/** A pool's bounds as the warnings judge work by: its limits by kind, and its slack limit. */
interface PoolBounds {
  limits: Map<string, number>;
  /** What its revocable work may hold of a kind (cpu: no bound). */
  slack(kind: string): number;
  /** The slack limit of a kind, said: "its memory slack limit is 100: 10% of its reservation of 1000". */
  slackWhy(kind: string): string;
}

/** Each inline pool's bounds, by path (pools with errors of their own are left out). */
function poolLimits(respools: unknown): Map<string, PoolBounds> {
  const limits = new Map<string, PoolBounds>();
  const collect = (list: unknown, parent: string) => {
    if (!Array.isArray(list)) return;
    for (const pool of list) {
      if (!isMapping(pool) || typeof pool.name !== "string") continue;
      const path = `${parent}/${pool.name}`;
      const config = respoolIssues(poolConfig(pool)).config;
      if (config) limits.set(path, poolBounds(path, config));
      collect(pool.children, path);
    }
  };
  collect(respools, "");
  return limits;
}

function poolBounds(path: string, config: RespoolConfig): PoolBounds {
  // The resource manager's own bound, from a pool made of the config (as the resource manager makes it).
  const node = new RespoolNode(path, path, config);
  const { bound, percent } = slackLimit(node);
  const of = (kind: string) => bound[kind as keyof typeof bound] ?? Infinity;
  return {
    limits: new Map(config.resources.map((r) => [r.kind, r.limit])),
    slack: of,
    slackWhy: (kind) =>
      `its ${kind} slack limit is ${round3(of(kind))}: ${percent}% of its reservation of ` +
      `${node.reservation()[kind as keyof typeof bound] ?? 0}`,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A host class as the capacity check reads it. */
export interface ClassCapacity {
  name: string;
  count: number;
  cpu: number;
  memoryMb: number;
  diskMb: number;
  gpu: number;
}

/** What a scenario's cluster ever has, by kind: its hosts at the start and those events add. */
export function clusterMost(scenario: {
  hostClasses: readonly ClassCapacity[];
  events: readonly { addHostClass?: ClassCapacity; addHosts?: { class: string; count: number } }[];
}): Map<string, number> {
  const classes = [...scenario.hostClasses, ...scenario.events.flatMap((e) => e.addHostClass ?? [])];
  const added = (name: string) =>
    scenario.events.reduce((n, e) => n + (e.addHosts?.class === name ? e.addHosts.count : 0), 0);
  return new Map(
    RESOURCE_FIELDS.map(([field, kind]) => [
      kind,
      classes.reduce((n, c) => n + (c.count + added(c.name)) * c[field], 0),
    ]),
  );
}

/** "12 cores, 4096 MB of memory". */
export function amountsText(byKind: Map<string, number>): string {
  return RESOURCE_FIELDS.filter(([, kind]) => byKind.has(kind)).map(([, kind, unit]) => {
    const n = byKind.get(kind)!;
    return unit === "MB" ? `${n} MB of ${kind}` : `${n} ${unit}`;
  }).join(", ");
}

/** Why a cluster whose top-level pools reserve more than it has behaves unlike Peloton's. */
export const OVER_RESERVED_WHY =
  "entitlements add up to more than the cluster, so admitted tasks may wait for " +
  "hosts (Peloton refuses such pools: its root pool's reservation is the cluster's capacity)";

/**
 * The top-level pools reserving more of a resource than the cluster ever has (its hosts at the start and those
 * events add). Peloton refuses such a pool (its root's reservation is the cluster's capacity); this scheduler
 * takes it, as capacity comes and goes, and so does the simulator, but entitlements then add up to more than
 * the cluster: tasks are admitted that no host can take, and a pool's entitlement says little of what it
 * gets. A warning, not an error: the run shows what such a cluster does.
 */
export function overReservedCluster(
  scenario: {
    hostClasses: readonly ClassCapacity[];
    events: readonly { addHostClass?: ClassCapacity; addHosts?: { class: string; count: number } }[];
  },
  respools: unknown,
): PoolIssue[] {
  if (!Array.isArray(respools)) return [];
  const reserved = new Map<string, number>();
  for (const pool of respools) {
    if (!isMapping(pool)) continue;
    const config = respoolIssues(poolConfig(pool)).config;
    if (config) addReservations(reserved, config.resources);
  }
  const most = clusterMost(scenario);
  const over = new Map<string, number>(), has = new Map<string, number>();
  for (const [, kind] of RESOURCE_FIELDS) {
    const wants = reserved.get(kind) ?? 0;
    if (wants <= most.get(kind)!) continue;
    over.set(kind, wants);
    has.set(kind, most.get(kind)!);
  }
  if (!over.size) return [];
  return [{
    path: ["respools"],
    message: `the top-level pools reserve ${amountsText(over)}, more than the cluster ever has ` +
      `(${amountsText(has)}): ${OVER_RESERVED_WHY}`,
  }];
}
