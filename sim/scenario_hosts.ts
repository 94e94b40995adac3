/** Host classes of the scenario format, the agents they expand to, and the warnings of work none can take. */
import { z } from "zod";
import { DEFAULT_HOST_POOL, HOST_POOL_ATTRIBUTE } from "../core/hostmgr/host_pools.ts";
import { isRevocable } from "../core/jobmgr/task_build.ts";
import type { Constraint, JobConfig, TaskConfig } from "../core/model/config_types.ts";
import { ConstraintSchema } from "../core/model/task_config.ts";
import { mergeTaskConfig, overridesField } from "../core/model/task_merge.ts";
import { describeConstraint, evaluate, HOST_KIND, labelsOf } from "../core/placement/constraints.ts";
import type { HostInfo } from "../core/ports/host_backend.ts";
import { leastOf } from "./scenario_distribution.ts";
import { RESOURCE_FIELDS } from "./scenario_workload.ts";

const portRange = z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]);

export const hostClass = z.object({
  name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' or '-'"),
  count: z.number().int().nonnegative(),
  cpu: z.number().positive(),
  memoryMb: z.number().positive(),
  diskMb: z.number().nonnegative().default(0),
  gpu: z.number().nonnegative().default(0),
  attributes: z.record(z.string(), z.string()).default({}),
  /** Spreads hosts over `<class>-rack-0 … <class>-rack-(racks-1)` in a `rack` attribute. */
  racks: z.number().int().positive().optional(),
  /** Spreads the racks (or hosts, without racks) over `zone-0 … zone-(zones-1)` in a `zone` attribute. */
  zones: z.number().int().positive().optional(),
  /** Sets the `host_pool` attribute Peloton's host pools use. */
  hostPool: z.string().min(1).optional(),
  portRange: portRange.default([31000, 32000]),
  /** Several ranges; replaces `portRange`. */
  portRanges: z.array(portRange).min(1).optional(),
}).strict();
export type HostClass = z.infer<typeof hostClass>;

/** Hosts `<class>-<first>` … `<class>-<first+count-1>` of a class, with rack, zone and pool attributes. */
export function hostsOf(c: HostClass, first = 0, count = c.count): HostInfo[] {
  const hosts: HostInfo[] = [];
  const resources = {
    cpuMilli: Math.round(c.cpu * 1000),
    memMb: Math.round(c.memoryMb),
    diskMb: Math.round(c.diskMb),
    gpuMilli: Math.round(c.gpu * 1000),
  };
  const portRanges = c.portRanges ?? [c.portRange];
  for (let i = first; i < first + count; i++) {
    const hostname = `${c.name}-${i}`;
    const attributes: Record<string, string> = { ...c.attributes, host_class: c.name };
    if (c.hostPool) attributes.host_pool = c.hostPool;
    const { rack, zone } = placeOf(c, i);
    if (rack !== undefined) attributes.rack = rack;
    if (zone !== undefined) attributes.zone = zone;
    hosts.push({ hostname, agentId: `${hostname}-S0`, resources, attributes, portRanges });
  }
  return hosts;
}

/**
 * The `rack` and `zone` attributes of host `i` of a class: spread by `racks` and `zones`, else its
 * `attributes`' own. They repeat every `racks` hosts (every `zones` hosts without racks).
 */
function placeOf(c: HostClass, i: number): { rack?: string; zone?: string } {
  const rack = c.racks ? i % c.racks : i;
  return {
    rack: c.racks ? `${c.name}-rack-${rack}` : c.attributes.rack,
    zone: c.zones ? `zone-${rack % c.zones}` : c.attributes.zone,
  };
}

/** What an event's host selector asks of a host. */
export interface HostCriteria {
  class?: string;
  rack?: string;
  zone?: string;
  hosts?: string[];
}

/** The criteria a selector gives besides the hosts it names: `of class std`, `in rack std-rack-1`. */
export function criteria(s: HostCriteria): string[] {
  const out: string[] = [];
  if (s.class !== undefined) out.push(`of class ${s.class}`);
  if (s.rack !== undefined) out.push(`in rack ${s.rack}`);
  if (s.zone !== undefined) out.push(`in zone ${s.zone}`);
  return out;
}

/** What host `i` of class `c` is instead, for each of the criteria it does not meet. */
export function unlike(s: HostCriteria, c: HostClass, i: number): string[] {
  const { rack, zone } = placeOf(c, i);
  const is: string[] = [];
  if (s.class !== undefined && c.name !== s.class) is.push(`of class ${c.name}`);
  if (s.rack !== undefined && rack !== s.rack) is.push(rack === undefined ? "in no rack" : `in rack ${rack}`);
  if (s.zone !== undefined && zone !== s.zone) is.push(zone === undefined ? "in no zone" : `in zone ${zone}`);
  return is;
}

/**
 * The hosts, racks and zones a scenario's classes produce, as events add classes and hosts: what events
 * may name. Counts only, so a 50,000-host scenario is checked without building its hosts.
 */
export class HostCatalog {
  readonly #classes = new Map<string, { c: HostClass; count: number }>();

  constructor(classes: HostClass[]) {
    for (const c of classes) this.#classes.set(c.name, { c, count: c.count });
  }

  hasClass(name: string): boolean {
    return this.#classes.has(name);
  }

  classNames(): string[] {
    return [...this.#classes.keys()];
  }

  /** A class defined by an event; its hosts register with it. */
  addClass(c: HostClass): void {
    this.#classes.set(c.name, { c, count: c.count });
  }

  addHosts(name: string, count: number): void {
    const entry = this.#classes.get(name);
    if (entry) entry.count += count;
  }

  hasHost(hostname: string): boolean {
    return this.#hostAt(hostname) !== undefined;
  }

  /**
   * How many hosts there are now that meet the criteria (and are among the hosts named, when some are);
   * and each named host the other criteria leave out, with what it is instead (`of class big`).
   */
  pick(s: HostCriteria): { count: number; excluded: { index: number; host: string; is: string[] }[] } {
    if (s.hosts) {
      const picked = new Set<string>();
      const excluded: { index: number; host: string; is: string[] }[] = [];
      s.hosts.forEach((host, index) => {
        const at = this.#hostAt(host);
        if (!at) return;
        const is = unlike(s, at.c, at.i);
        if (is.length) excluded.push({ index, host, is });
        else picked.add(host);
      });
      return { count: picked.size, excluded };
    }
    let count = 0;
    for (const { c, count: n } of this.#classes.values()) {
      // Hosts k, k + period, k + 2 × period, … share their rack and zone.
      const period = c.racks ?? c.zones ?? 1;
      for (let k = 0; k < Math.min(n, period); k++) {
        if (!unlike(s, c, k).length) count += Math.floor((n - 1 - k) / period) + 1;
      }
    }
    return { count, excluded: [] };
  }

  /** The class and index of a host there is now (`std-3`: std's fourth). */
  #hostAt(hostname: string): { c: HostClass; i: number } | undefined {
    for (const { c, count } of this.#classes.values()) {
      const prefix = `${c.name}-`;
      if (matches({ prefix, n: count }, hostname)) return { c, i: Number(hostname.slice(prefix.length)) };
    }
    return undefined;
  }

  hasRack(rack: string): boolean {
    return this.#values("rack").some((v) => matches(v, rack));
  }

  hasZone(zone: string): boolean {
    return this.#values("zone").some((v) => matches(v, zone));
  }

  /** The hosts, racks or zones there are, in short: `std-0 … std-99`, `gpu-0 … gpu-7`. */
  describe(what: "host" | "rack" | "zone"): string[] {
    const values: Values[] = what === "host"
      ? [...this.#classes.values()].map((e) => ({ prefix: `${e.c.name}-`, n: e.count }))
      : this.#values(what);
    // Classes share zone names: `zone-0 … zone-2` covers a class's `zone-0 … zone-1`.
    const ranges = new Map<string, number>();
    const single = new Set<string>();
    for (const v of values) {
      if ("value" in v) single.add(v.value);
      else if (v.n > 0) ranges.set(v.prefix, Math.max(v.n, ranges.get(v.prefix) ?? 0));
    }
    return [...[...ranges].map(([prefix, n]) => range(prefix, n)), ...single];
  }

  /** Per class, the `rack` or `zone` values its hosts have (`hostsOf`'s rules). */
  #values(attr: "rack" | "zone"): Values[] {
    const out: Values[] = [];
    for (const { c, count } of this.#classes.values()) {
      if (count === 0) continue;
      const racks = c.racks ? Math.min(c.racks, count) : 0;
      // Zones go round the racks, or round the hosts without racks.
      const n = attr === "rack" ? racks : c.zones ? Math.min(c.zones, racks || count) : 0;
      if (n > 0) out.push({ prefix: attr === "rack" ? `${c.name}-rack-` : "zone-", n });
      else if (c.attributes[attr] !== undefined) out.push({ value: c.attributes[attr] });
    }
    return out;
  }
}

/** Attribute values of a class: `<prefix>0` … `<prefix><n-1>`, or one value set in its `attributes`. */
type Values = { prefix: string; n: number } | { value: string };

function matches(v: Values, value: string): boolean {
  if ("value" in v) return v.value === value;
  const rest = value.startsWith(v.prefix) ? value.slice(v.prefix.length) : "";
  return /^(0|[1-9]\d*)$/.test(rest) && Number(rest) < v.n;
}

function range(prefix: string, n: number): string {
  return n === 1 ? `${prefix}0` : `${prefix}0 … ${prefix}${n - 1}`;
}

/**
 * Workloads whose every task asks for more than any host has: no placement round ever finds a host for
 * one, so they all end the run unplaced. Each resource that no class has enough of is named; when each
 * fits some class but none has them all at once, the workload is. Host classes count once they have or get
 * hosts (events' included). A task's least ask is judged (a distribution's smallest draw; exponential,
 * normal and lognormal draws can be small, so those never are): a workload only some of whose tasks are too
 * big is not warned of. A job file's tasks are judged by their configs (`files`): its defaultConfig and each
 * instanceConfig, each warned of at the job file's field that sets what is too big. A trace's are not. A
 * warning, not an error: the run shows what such a cluster does.
 */
export function unplaceableWork(
  scenario: {
    hostClasses: HostClass[];
    events: readonly { addHostClass?: HostClass; addHosts?: { class: string } }[];
    workloads: readonly { name: string; jobFile?: string; trace?: unknown }[];
  },
  files?: JobFiles,
): { path: (string | number)[]; message: string }[] {
  const { events } = scenario;
  const hosts = [...scenario.hostClasses, ...events.flatMap((e) => e.addHostClass ?? [])]
    .filter((c) => c.count > 0 || events.some((e) => e.addHosts?.class === c.name))
    .map((c) => ({ name: c.name, has: RESOURCE_FIELDS.map(([field]) => c[field]) }));
  const issues: { path: (string | number)[]; message: string }[] = [];
  const never = ": none of them will ever be placed";
  scenario.workloads.forEach((w, i) => {
    if (!hosts.length || w.trace !== undefined) return;
    if (w.jobFile !== undefined) {
      const judge = (t: JobFileTask) =>
        tooBig(hosts, jobAmounts(t.config)).map(({ k, text }) => ({
          field: `${t.from("resource")}.resource${k === undefined ? "" : `.${JOB_RESOURCE_FIELDS[k]}`}`,
          what: `asks for ${text}`,
        }));
      issues.push(...jobFileIssues(w, i, files, judge, never));
      return;
    }
    const least = RESOURCE_FIELDS.map(([field]) => leastOf((w as Record<string, unknown>)[field]));
    for (const { k, text } of tooBig(hosts, least)) {
      issues.push({
        path: k === undefined ? ["workloads", i] : ["workloads", i, RESOURCE_FIELDS[k][0]],
        message: `every task of ${w.name} asks for at least ${text}${never}`,
      });
    }
  });
  return issues;
}

/**
 * How a task asking for `need` (by `RESOURCE_FIELDS`) is bigger than any host class: each resource no class
 * has enough of (`k`, its index), or, when each fits some class, all of them at once; none when it fits one.
 */
function tooBig(hosts: { name: string; has: number[] }[], need: number[]): { k?: number; text: string }[] {
  if (hosts.some((c) => c.has.every((n, k) => need[k] <= n))) return [];
  const over = RESOURCE_FIELDS.flatMap(([, , unit], k) => {
    const most = Math.max(...hosts.map((c) => c.has[k]));
    return need[k] <= most
      ? []
      : [{ k, text: `${need[k]} ${unit}, more than any host class has (${most} at most)` }];
  });
  if (over.length) return over;
  // Each resource fits some class, but no class has them all.
  const amounts = (of: number[]) =>
    RESOURCE_FIELDS.flatMap(([, kind, unit], k) =>
      need[k] > 0 ? [`${kind} ${of[k]}${unit === "MB" ? " MB" : ""}`] : []
    ).join(", ");
  return [{
    text: `${amounts(need)}, which no host class has at once ` +
      `(${hosts.map((c) => `${c.name}: ${amounts(c.has)}`).join("; ")})`,
  }];
}

/**
 * Workloads whose every task needs a host no host class has: their `hostAttributes`, or those ANDed with
 * their `constraint`, fail on every host the classes build (events' classes and hosts included), as the
 * placement engine would find round after round ("constraint host_pool=nope failed"). Hosts are judged as
 * placement sees them: their class's attributes, rack and zone, and the host pool its `host_pool` attribute
 * names, else the default pool, and their names, `<class>-<i>`. A `constraint` is judged only as the API
 * would read it (a shape the API would refuse is left to it); TASK label constraints (per-host limits) are
 * not judged. A job file's tasks are judged by their configs' constraints (`files`), as `unplaceableWork`
 * judges their resources; one naming hosts says how the simulator names them, as a job file written for a
 * production cluster names its hosts otherwise (the minicluster's `agent-0`). Daemon workloads are not
 * warned of: a daemon job runs on the hosts that match, none here. A warning, as `unplaceableWork`.
 */
export function unmatchedConstraints(
  scenario: {
    hostClasses: HostClass[];
    events: readonly { addHostClass?: HostClass; addHosts?: { class: string; count: number } }[];
    workloads: readonly {
      name: string;
      type?: string;
      jobFile?: string;
      trace?: unknown;
      hostAttributes?: Record<string, string>;
      constraint?: Record<string, unknown>;
    }[];
  },
  files?: JobFiles,
): { path: (string | number)[]; message: string }[] {
  const { events } = scenario;
  const classes = [...scenario.hostClasses, ...events.flatMap((e) => e.addHostClass ?? [])].map((c) => ({
    c,
    count: c.count + events.reduce((n, e) => n + (e.addHosts?.class === c.name ? e.addHosts.count : 0), 0),
  })).filter((x) => x.count > 0);
  const issues: { path: (string | number)[]; message: string }[] = [];
  const never = ": none of them will ever be placed";
  scenario.workloads.forEach((w, i) => {
    if (!classes.length || w.trace !== undefined || w.type === "DAEMON") return;
    if (w.jobFile !== undefined) {
      const judge = (t: JobFileTask, job: JobConfig) => {
        const c = job.type === "DAEMON" ? undefined : t.config.constraint;
        // A job file names the hosts of the cluster it was written for (the minicluster's agent-0, ...).
        const unmet = c &&
          unmetBy(classes, c, "; the simulator names a class's hosts <class>-0, <class>-1, …");
        if (!unmet) return [];
        return [{ field: `${t.from("constraint")}.constraint`, what: `needs ${unmet}` }];
      };
      issues.push(...jobFileIssues(w, i, files, judge, never));
      return;
    }
    const attributes = Object.entries(w.hostAttributes ?? {}).map(([key, value]): Constraint => ({
      type: "LABEL_CONSTRAINT",
      labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key, value }, requirement: 1 },
    }));
    const parsed = w.constraint === undefined ? undefined : ConstraintSchema.safeParse(w.constraint);
    if (parsed && !parsed.success) return;
    const own = parsed?.data;
    // Which field to name: the attributes alone when they rule out every host, else the constraint.
    const candidates: ["hostAttributes" | "constraint", Constraint[]][] = [
      ["hostAttributes", attributes],
      ["constraint", own ? [...attributes, own] : []],
    ];
    for (const [field, parts] of candidates) {
      if (!parts.length) continue;
      const c: Constraint = parts.length === 1
        ? parts[0]
        : { type: "AND_CONSTRAINT", andConstraint: { constraints: parts } };
      const unmet = unmetBy(classes, c);
      if (!unmet) continue;
      issues.push({
        path: ["workloads", i, field],
        message: `every task of ${w.name} needs ${unmet}${never}`,
      });
      return;
    }
  });
  return issues;
}

/**
 * "a host where hostname=std-9, which no host class has (std: hosts std-0 … std-4)" when no host of the
 * classes (each with its count of hosts) meets a HOST constraint; undefined when one does.
 */
function unmetBy(
  classes: { c: HostClass; count: number }[],
  c: Constraint,
  /** Said after the hosts' names when the constraint names hosts. */
  namesNote = "",
): string | undefined {
  if (classes.some((x) => someHostMeets(x.c, x.count, c))) return undefined;
  const keys = [...new Set(labelsOf(c, "HOST").map((kv) => kv.slice(0, kv.indexOf("="))))];
  const has = classes.map((x) => `${x.c.name}: ${attributesText(x.c, x.count, keys)}`).join("; ");
  return `a host where ${describeConstraint(c)}, which no host class has ` +
    `(${has}${keys.includes("hostname") ? namesNote : ""})`;
}

/** Host `i` of a class as a constraint sees it: its attributes, with its host pool, and its name. */
function hostAsPlaced(c: HostClass, i: number): { hostname: string; attributes: Record<string, string> } {
  const { hostname, attributes } = hostsOf(c, i, 1)[0];
  return {
    hostname,
    attributes: {
      ...attributes,
      [HOST_POOL_ATTRIBUTE]: attributes[HOST_POOL_ATTRIBUTE] ?? DEFAULT_HOST_POOL,
    },
  };
}

/**
 * Whether a HOST constraint passes on some of a class's `count` hosts. Hosts a rack (or zone) period apart
 * have the same attributes, so one period of them is judged, unless the constraint names hosts.
 */
function someHostMeets(c: HostClass, count: number, constraint: Constraint): boolean {
  const byName = labelsOf(constraint, "HOST").some((kv) => kv.startsWith("hostname="));
  const n = byName ? count : Math.min(count, c.racks ?? c.zones ?? 1);
  for (let i = 0; i < n; i++) {
    if (evaluate(constraint, { ...hostAsPlaced(c, i), taskLabels: [] }, HOST_KIND) !== "mismatch") {
      return true;
    }
  }
  return false;
}

/** The values a class's hosts have for the keys (`host_pool=default`), the first three of each. */
function attributesText(c: HostClass, count: number, keys: string[]): string {
  const n = Math.min(count, c.racks ?? c.zones ?? 1);
  return keys.map((key) => {
    if (key === "hostname") return `hosts ${range(`${c.name}-`, count)}`;
    const values = [
      ...new Set(Array.from({ length: n }, (_, i) => hostAsPlaced(c, i).attributes[key] ?? "")),
    ];
    const shown = values.slice(0, 3).map((v) => (v === "" ? `no ${key}` : `${key}=${v}`));
    return values.length > 3 ? `${shown.join(", ")}, …` : shown.join(", ");
  }).join(", ");
}

/** The job files a scenario's workloads name, read (by workload name), and how a message names a file. */
export interface JobFiles {
  templates: Readonly<Record<string, Record<string, unknown>>>;
  resolve?: (path: string) => string;
}

/** Instances a warning names one by one; of more, it says how many. */
const FEW_INSTANCES = 10;

/** A job file's resource fields, in `RESOURCE_FIELDS`' order. */
export const JOB_RESOURCE_FIELDS = ["cpuLimit", "memLimitMb", "diskLimitMb", "gpuLimit"] as const;

/** What a task config asks for, in `RESOURCE_FIELDS`' order and units. */
export function jobAmounts(tc: TaskConfig): number[] {
  return JOB_RESOURCE_FIELDS.map((f) => tc.resource?.[f] ?? 0);
}

/** Instances of a job file that run one task config (an instanceConfig merged over the default). */
export interface JobFileTask {
  /** The instances' ids, when there are a few (an instanceConfig's one); undefined when there are more. */
  ids?: number[];
  /** How many of a job's instances run it. */
  count: number;
  config: TaskConfig;
  revocable: boolean;
  /** Where the job file sets a field: `instanceConfig.3` when that one does, else `defaultConfig`. */
  from(field: keyof TaskConfig): string;
}

/**
 * A job file's tasks: each instanceConfig within the instance count, then the instances without one; `total`
 * is a job's instances (a daemon's, one per host, all running the default config, count as one).
 */
export function jobFileTasks(job: JobConfig): { tasks: JobFileTask[]; total: number } {
  const daemon = job.type === "DAEMON";
  const total = daemon ? 1 : job.instanceCount;
  const own = daemon ? [] : Object.keys(job.instanceConfig ?? {}).map(Number).filter((id) => id < total);
  const tasks: JobFileTask[] = own.sort((a, b) => a - b).map((id) => {
    const config = mergeTaskConfig(job, id);
    const from = (field: keyof TaskConfig) =>
      overridesField(job.instanceConfig[id], field) ? `instanceConfig.${id}` : "defaultConfig";
    return { ids: [id], count: 1, config, revocable: isRevocable(job, config), from };
  });
  const count = total - own.length;
  if (count > 0) {
    const config = job.defaultConfig;
    // Named when they are few: the ids below the instance count without a config of their own.
    const taken = new Set(own);
    const ids = count > FEW_INSTANCES || daemon
      ? undefined
      : Array.from({ length: own.length + count }, (_, id) => id).filter((id) => !taken.has(id));
    tasks.push({ ids, count, config, revocable: isRevocable(job, config), from: () => "defaultConfig" });
  }
  return { tasks, total };
}

/**
 * The warnings of a job file workload's tasks, at its `jobFile`: `judge` says, of the instances running one
 * config, the job file's field at fault and what is wrong with it ("asks for 8 cores, more than ..."). The
 * instances judged alike make one warning, which names the file and field and says which tasks it is of
 * ("every task of big", "instance 3 of each big job"); `outcome` ends it.
 */
export function jobFileIssues(
  w: { name: string; jobFile?: string },
  i: number,
  files: JobFiles | undefined,
  judge: (t: JobFileTask, job: JobConfig) => { field: string; what: string }[],
  outcome: string,
): { path: (string | number)[]; message: string }[] {
  const job = files?.templates[w.name] as unknown as JobConfig | undefined;
  if (w.jobFile === undefined || !job) return [];
  const { tasks, total } = jobFileTasks(job);
  const found = new Map<string, { field: string; what: string; count: number; ids?: number[] }>();
  for (const t of tasks) {
    for (const { field, what } of judge(t, job)) {
      const key = JSON.stringify([field, what]);
      let f = found.get(key);
      if (!f) found.set(key, f = { field, what, count: 0, ids: [] });
      f.count += t.count;
      f.ids = f.ids && t.ids && [...f.ids, ...t.ids];
    }
  }
  const file = files!.resolve ? files!.resolve(w.jobFile) : w.jobFile;
  return [...found.values()].map(({ field, what, count, ids }) => {
    // "asks for" of one task, "ask for" of several.
    const plural = what.replace(/^(\w+)s\b/, "$1");
    const of = `of each ${w.name} job`;
    const who = count === total
      ? `every task of ${w.name} ${what}`
      : ids?.length === 1
      ? `instance ${ids[0]} ${of} ${what}`
      : ids && ids.length <= FEW_INSTANCES
      ? `instances ${ids.sort((a, b) => a - b).join(", ")} ${of} ${plural}`
      : `${count} of the ${total} tasks ${of} ${plural}`;
    return { path: ["workloads", i, "jobFile"], message: `${file}: ${field}: ${who}${outcome}` };
  });
}
