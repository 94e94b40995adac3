/** The scenario format capacity planners write: hosts, resource pools, workloads, timed events and run settings. */
import { z } from "zod";
import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair, type YAMLMap } from "yaml";
import { parseDocumentBounded, parseYamlSource } from "../core/model/yaml_load.ts";
import { checkEvents, type ScenarioEvent, scenarioEvent } from "./scenario_events.ts";
import { type HostClass, hostClass } from "./scenario_hosts.ts";
import { volumeIssues } from "./scenario_arrivals.ts";
import { quote, scenarioMessage } from "./scenario_messages.ts";
import { checkPools, poolConfig, respoolIssues } from "./scenario_pools.ts";
import { poolUpdateIssues } from "./scenario_pool_updates.ts";
import { type Distribution, misplacedFields, type Workload, workload } from "./scenario_workload.ts";

export type { Distribution, HostClass, ScenarioEvent, Workload };
export { poolConfig };

/**
 * A resource pool in Peloton's respool YAML shape (`name`, `owningteam`, `resources` of kind, reservation,
 * limit, share, `controllerlimit`, `slacklimit`, `policy`, in either key style), with its `children`; or
 * `file:` naming a Peloton respool file. A resource without `share` gets 1. Unknown keys follow Peloton's
 * files' rule: one a typo away from a known key is an error, any other a warning (`ScenarioResult`).
 */
export interface ScenarioPool {
  name: string;
  file?: string;
  children?: ScenarioPool[];
  [key: string]: unknown;
}
const POOL_NAME = "expected a pool name: text without '/'";
const respool: z.ZodType<ScenarioPool> = z.lazy(() =>
  z.object({
    name: z.string({ error: POOL_NAME }).min(1, { error: POOL_NAME }).regex(/^[^/]+$/, { error: POOL_NAME }),
    file: z.string({ error: "expected a respool file's path" }).min(1, {
      error: "expected a respool file's path",
    })
      .optional(),
    children: z.array(respool, { error: "expected a list of pools" }).optional(),
  }, { error: "expected a pool: a mapping with a name and resources, or a name and a file" }).catchall(
    z.unknown(),
  )
);

/** The resource manager's preemptor; Peloton's `config/resmgr/base.yaml` values by default. */
const preemption = z.object({
  enabled: z.boolean().default(true),
  /** `task_preemption_period`: how often pools are checked for over-allocation. */
  periodSec: z.number().positive().default(60),
  /** `sustained_over_allocation_count`: consecutive checks over entitlement before tasks are preempted. */
  sustainedOverAllocationCount: z.number().int().positive().default(5),
  /** `preempting_timeout`: a victim that has not exited by then may be chosen again. */
  preemptingTimeoutSec: z.number().positive().default(600),
}).strict();
export type PreemptionSettings = z.infer<typeof preemption>;

const settings = z.object({
  /** Modelled latency of every message between daemons. */
  rpcLatencyMs: z.number().nonnegative().default(1),
  taskStartupSec: z.number().nonnegative().default(1),
  sampleIntervalSec: z.number().positive().default(10),
  /** Statistics leave out this first part of the run (the cluster filling up). */
  warmupSec: z.number().nonnegative().default(0),
  /** Daemon periods: resmgr's entitlement and scheduling passes, the placement and job manager polls. */
  entitlementPeriodSec: z.number().positive().default(60),
  schedulingPeriodMs: z.number().positive().default(100),
  placementDequeueTimeoutMs: z.number().positive().default(100),
  placementPollTimeoutMs: z.number().positive().default(100),
  /** How often agents estimate slack and kill revocable tasks that lost theirs (Mesos: 15 s). */
  slackIntervalSec: z.number().positive().default(15),
  /** Statuses leave the cluster in batches this far apart (0: each at its exact time). */
  statusBatchMs: z.number().nonnegative().default(0),
  preemption: preemption.default(preemption.parse({})),
  /** Store every task state change as an event (memory-hungry at scale). */
  recordTaskEvents: z.boolean().default(false),
  /**
   * The job manager forgets jobs once they ended (Peloton's JobUntrack) and the store keeps only their
   * job record (as Peloton's archiver cleans old tasks out): what lets an hour of millions of tasks fit
   * in memory. Tests that look at finished jobs' tasks leave it off.
   */
  untrackFinishedJobs: z.boolean().default(false),
}).strict();
export type Settings = z.infer<typeof settings>;

const scenarioBase = z.object({
  name: z.string().min(1),
  description: z.string().default(""),
  /**
   * Simulated seconds to run; without it the run ends when every submitted job has ended, or when the
   * jobs left can never start (the report lists them in `stuckJobs` with the reason: `stall.ts`).
   */
  durationSec: z.number().positive().optional(),
  hostClasses: z.array(hostClass).min(1),
  respools: z.array(respool).min(1),
  workloads: z.array(workload).default([]),
  events: z.array(scenarioEvent).default([]),
  settings: settings.default(settings.parse({})),
}).strict();

type ScenarioBase = z.infer<typeof scenarioBase>;

/**
 * What the rules across fields read: the scenario's top-level fields that parsed (`parsed`; a valid
 * scenario's are all of them). A rule reading a field that did not parse is not judged.
 */
interface Known {
  fields: Partial<ScenarioBase>;
  parsed: (key: keyof ScenarioBase) => boolean;
}

/**
 * The rules that look at several fields: distinct class names, a cluster with hosts, workloads naming
 * leaf pools and classes that exist, a warm-up shorter than the run, and events naming what exists when
 * they run.
 */
function checkScenario({ fields: s, parsed: known }: Known, report: Report): void {
  s.hostClasses?.forEach((c, i) => {
    if (s.hostClasses!.findIndex((o) => o.name === c.name) !== i) {
      report(["hostClasses", i, "name"], "expected a name no other class has");
    }
  });
  // A class whose name is taken is reported above; the rules below read the first class of each name, so
  // the racks or hosts of the duplicate raise no second error.
  const classes = s.hostClasses?.filter((c, i) => s.hostClasses!.findIndex((o) => o.name === c.name) === i);
  if (classes && s.events) checkSomeHosts(classes, s.events, report);
  const pools = s.respools ? poolPaths(s.respools) : undefined;
  // A malformed durationSec is reported already; undefined here, it would read as a run with none.
  const duration = known("durationSec") ? { sec: s.durationSec } : undefined;
  if (s.workloads) {
    checkWorkloads(s.workloads, { pools, classes: classes?.map((c) => c.name), duration }, report);
  }
  if (
    s.durationSec !== undefined && s.durationSec > 0 && s.settings && s.settings.warmupSec >= s.durationSec
  ) {
    // Statistics start after the warm-up: a run no longer than it reports nothing.
    report(["settings", "warmupSec"], `expected less than durationSec (${s.durationSec})`);
  }
  if (!s.events) return;
  checkEvents(s.events, {
    // A malformed durationSec is reported already: every event would be after it.
    durationSec: s.durationSec !== undefined && s.durationSec > 0 ? s.durationSec : undefined,
    hostClasses: classes,
    workloads: s.workloads?.map((w) => w.name),
    pools: pools && [...pools.keys()],
    poolIssues: (config) => respoolIssues(poolConfig(config as ScenarioPool)).errors,
  }, report);
  // Pool updates nest as the respool API requires, in the tree as the updates before them leave it.
  if (s.respools) { for (const x of poolUpdateIssues(s.respools, s.events)) report(x.path, x.message); }
}

const ALL_PARSED = () => true;

/**
 * The rules across fields, run inside the parse once every field is well-formed enough for zod to run them.
 * A field the schema found malformed may break a rule too: the schema's problem is the one to fix.
 */
function checkParsed(s: ScenarioBase, ctx: z.RefinementCtx<ScenarioBase>): void {
  const malformed = new Set(ctx.issues.map((i) => formatPath((i.path ?? []) as (string | number)[])));
  checkScenario({ fields: s, parsed: ALL_PARSED }, (path, message) => {
    if (!malformed.has(formatPath(path))) ctx.addIssue({ code: "custom", path, message });
  });
}

export const scenarioSchema = scenarioBase.superRefine(checkParsed);
export type Scenario = z.infer<typeof scenarioSchema>;

/**
 * `warnings`: what the run ignores, such as a pool key Peloton's files carry but no pool uses (the project's
 * rule: a key one typo away from a known one is an error with a suggestion, other unknown keys are ignored
 * with a warning).
 */
export type ScenarioResult =
  | { ok: true; scenario: Scenario; dir: string; warnings: string[] }
  | { ok: false; errors: string[]; warnings: string[] };

/** A problem at a field of a scenario (`path`), and what was expected there. */
export interface ScenarioIssue {
  path: (string | number)[];
  message: string;
}

/**
 * Validates a scenario as read from YAML (or an edited copy of one): the schema, the rules across fields
 * and the pool rules, every problem at once. A rule that needs a malformed field is not judged, but the
 * rules that do not still run. `warnings`: what the run would ignore.
 */
export function validateScenario(
  input: unknown,
  /**
   * The input is a file as written (not a parsed scenario with its defaults filled in, as `plan` checks its
   * variants): fields a workload would not use are refused too.
   */
  asWritten = false,
):
  | { ok: true; scenario: Scenario; warnings: ScenarioIssue[] }
  | { ok: false; errors: ScenarioIssue[]; warnings: ScenarioIssue[] } {
  // The rules across fields run inside the parse when every field is well-formed enough for zod to run
  // them; otherwise they run here, on the fields that parsed, so their errors come with the others.
  let ruled = false;
  const res = scenarioBase.superRefine((s, ctx) => {
    ruled = true;
    checkParsed(s, ctx);
  }).safeParse(input, { error: scenarioMessage });
  const errors: ScenarioIssue[] = [];
  const warnings: ScenarioIssue[] = [];
  const reported = new Set<string>();
  for (const i of res.success ? [] : res.error.issues) {
    const path = i.path as (string | number)[];
    // An unknown key is named by its own path (its line, too).
    const paths = i.code === "unrecognized_keys" ? i.keys.map((k) => [...path, k]) : [path];
    for (const p of paths) {
      errors.push({ path: p, message: i.message });
      reported.add(formatPath(p));
    }
  }
  // A field the schema found malformed may break a rule too: the schema's problem is the one to fix.
  const add = (issue: ScenarioIssue) => {
    if (!reported.has(formatPath(issue.path))) errors.push(issue);
  };
  if (!res.success && !ruled) checkScenario(parsedFields(input), (path, message) => add({ path, message }));
  // Fields a workload's jobs are not built from, as written (defaults would hide them after the parse).
  const rawWorkloads = input && typeof input === "object" ? (input as { workloads?: unknown }).workloads : [];
  if (asWritten && Array.isArray(rawWorkloads)) {
    rawWorkloads.forEach((w, i) => {
      for (const m of misplacedFields(w)) add({ path: ["workloads", i, ...m.path], message: m.message });
    });
  }
  // Pool rules run on the pools as written, so their errors come with the schema's.
  const pools = checkPools(
    input && typeof input === "object" ? (input as { respools?: unknown }).respools : [],
  );
  pools.errors.forEach(add);
  warnings.push(...pools.warnings);
  if (res.success) {
    res.data.events.forEach((e, i) => {
      if (!e.updatePool) return;
      const { path, force, children, file, ...change } = e.updatePool;
      const at = (...p: string[]) => ["events", i, "updatePool", ...p];
      // Both would be dropped: an update changes the one pool's own config, as UpdateResourcePool does.
      if (children !== undefined) {
        add({
          path: at("children"),
          message:
            "expected no children: an update changes this pool's own config; its children are in respools",
        });
      }
      if (file !== undefined) {
        add({ path: at("file"), message: "expected no file: give the fields to change here" });
      }
      if (force !== undefined && typeof force !== "boolean") {
        add({ path: at("force"), message: "expected true or false" });
      }
      const name = path.slice(path.lastIndexOf("/") + 1);
      for (const w of respoolIssues(poolConfig({ name, ...change })).warnings) {
        warnings.push({ path: at(...w.path.map(String)), message: w.message });
      }
    });
  }
  if (!res.success || errors.length) return { ok: false, errors, warnings };
  return { ok: true, scenario: res.data, warnings };
}

/**
 * An issue as `<path>: got <value>, <message>`, `value` being what the field holds (a scalar; otherwise
 * nothing is said of it). A message that says what it got already, or that is about an unknown key
 * (whose value is not what is wrong) or a missing one, is left as it is.
 */
export function issueText(issue: ScenarioIssue, value: unknown): string {
  const scalar = value === null || ["string", "number", "boolean"].includes(typeof value);
  const got = scalar && !/^(got |unknown key|missing)/.test(issue.message) ? `got ${quote(value)}, ` : "";
  return `${formatPath(issue.path) || "(top level)"}: ${got}${issue.message}`;
}

/**
 * Parses a scenario; errors and warnings name the file, line, field path, the value and what was expected.
 */
export function parseScenario(text: string, file: string): ScenarioResult {
  const lines = new LineCounter();
  const doc = parseDocumentBounded(text, { lineCounter: lines });
  if (doc.errors.length) {
    return {
      ok: false,
      errors: doc.errors.map((e) => `${file}:${lines.linePos(e.pos[0]).line}: ${e.message.split("\n")[0]}`),
      warnings: [],
    };
  }
  const root = doc.contents as Node | null;
  const located = (i: ScenarioIssue) => {
    // The node at the path, or the nearest one holding it (a missing field's mapping). An issue about a key
    // itself (unknown, or not taken there) is on the key's line: a block value starts on the lines below.
    const node = nodeAt(root, i.path);
    const at = KEY_ISSUE.test(i.message) ? keyAt(root, i.path) ?? node : node;
    const line = at?.range ? `:${lines.linePos(at.range[0]).line}` : "";
    return `${file}${line}: ${issueText(i, node && isScalar(node) ? node.value : undefined)}`;
  };
  // The yaml library's own alias bound throws, refusing even a benign file with over 100 uses of one anchor,
  // and so does an alias with no anchor. The config loader's reading bounds what aliases expand to (a
  // billion-laughs file would hang the checks) and names the line of what it refuses.
  const aliases = parseYamlSource(text);
  if (!aliases.ok) {
    return { ok: false, errors: aliases.errors.map((p) => `${file}:${p.line}: ${p.message}`), warnings: [] };
  }
  const res = validateScenario(doc.toJS({ maxAliasCount: -1 }), true);
  const warnings = res.warnings.map(located);
  if (!res.ok) return { ok: false, errors: res.errors.map(located), warnings };
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
  return { ok: true, scenario: res.scenario, dir, warnings };
}

type Report = (path: (string | number)[], message: string) => void;

/**
 * A cluster with no host at the start and none added by an event would place nothing: its report would
 * read as an answer (everything unplaced) to a question it never asked. A class with no hosts is fine
 * beside others, or when events add hosts.
 */
function checkSomeHosts(classes: HostClass[], events: ScenarioEvent[], report: Report): void {
  if (classes.some((c) => c.count > 0)) return;
  if (events.some((e) => e.addHosts || (e.addHostClass && e.addHostClass.count > 0))) return;
  const why = "the cluster would have no hosts, and no event adds any";
  if (classes.length === 1) report(["hostClasses", 0, "count"], `expected at least 1: ${why}`);
  else report(["hostClasses"], `expected a class with a count of at least 1: ${why}`);
}

/** The top-level fields of a malformed scenario that parse on their own. */
function parsedFields(input: unknown): Known {
  const fields: Record<string, unknown> = {};
  const parsed = new Set<string>();
  if (input && typeof input === "object" && !Array.isArray(input)) {
    for (const [key, schema] of Object.entries(scenarioBase.shape)) {
      const res = (schema as z.ZodType).safeParse((input as Record<string, unknown>)[key], {
        error: scenarioMessage,
      });
      if (!res.success) continue;
      fields[key] = res.data;
      parsed.add(key);
    }
  }
  return { fields: fields as Partial<ScenarioBase>, parsed: (key) => parsed.has(key) };
}

/**
 * Workloads name distinct leaf pools and trace host classes that exist; work that never ends on its own
 * needs a `durationSec`, or the run would never stop; no workload brings more work than a run can hold. What the scenario's other fields hold is undefined
 * when they are malformed: the rules reading them wait.
 */
function checkWorkloads(
  workloads: Workload[],
  scope: { pools?: Map<string, ScenarioPool>; classes?: string[]; duration?: { sec?: number } },
  report: Report,
): void {
  const { pools, classes, duration } = scope;
  const leaves = pools ? [...pools].filter(([, p]) => !p.children?.length).map(([path]) => path) : [];
  const names = new Set<string>();
  workloads.forEach((w, i) => {
    if (names.has(w.name)) report(["workloads", i, "name"], "expected a name no other workload has");
    names.add(w.name);
    const pool = pools?.get(w.respool);
    if (pools && (!pool || pool.children?.length)) {
      // The job manager refuses jobs for pools with children ("is not a leaf pool").
      const why = pool || w.respool === "/"
        ? `; ${w.respool} has child pools, and jobs go to leaf pools`
        : w.respool.startsWith("/")
        ? ""
        : '; a pool path starts with "/"';
      report(["workloads", i, "respool"], `expected one of the leaf pools (${leaves.join(", ")})${why}`);
    }
    if (classes && w.trace && !classes.includes(w.trace.hostClass)) {
      report(
        ["workloads", i, "trace", "hostClass"],
        `expected one of the host classes (${classes.join(", ")})`,
      );
    }
    if (!duration) return;
    if (duration.sec === undefined) {
      const endless = endlessWork(w);
      if (endless) report(["workloads", i, endless.field], `${endless.why}: set the run's durationSec`);
    } else if (!w.trace && duration.sec > 0) {
      for (const field of startsAfter(w, duration.sec)) {
        report(
          ["workloads", i, ...field],
          `expected a time before durationSec (${duration.sec}), when the run ends: a job arriving then ` +
            "would never be run",
        );
      }
    }
    // Arrivals past what a run can hold would exhaust its memory, not answer: refused before it starts.
    for (const x of volumeIssues(w, duration.sec)) report(["workloads", i, ...x.path], x.message);
  });
}

/**
 * Where a workload's start or arrival times lie at or past the run's end: jobs that would silently never come
 * (no arrival happens at the end itself, as no event does).
 */
function startsAfter(w: Workload, durationSec: number): (string | number)[][] {
  const late: (string | number)[][] = [];
  if (w.startSec >= durationSec) late.push(["startSec"]);
  const a = w.arrival;
  if ("at" in a) a.at.forEach((t, j) => t >= durationSec && late.push(["arrival", "at", j]));
  if ("bursts" in a && a.bursts.firstAtSec >= durationSec) late.push(["arrival", "bursts", "firstAtSec"]);
  return late;
}

/** Why a workload would keep the run going forever without a `durationSec`, if it would. */
function endlessWork(w: Workload): { field: string; why: string } | undefined {
  if (w.trace) return undefined;
  const a = w.arrival;
  if (!("at" in a) && w.stopSec === undefined && w.maxJobs === undefined) {
    return { field: "arrival", why: `${Object.keys(a)[0]} arrivals never stop without stopSec or maxJobs` };
  }
  // A job file's commands give its tasks' durations (its type is checked once the file is read).
  if (w.jobFile) return undefined;
  if (w.type !== "BATCH") return { field: "type", why: `${w.type} jobs never end` };
  if (w.durationSec === undefined) {
    return { field: "durationSec", why: "tasks without a durationSec run until the run ends" };
  }
  return undefined;
}

/** The scenario's pools by path (`/org/team`), parents first; the root is left out. */
function poolPaths(pools: ScenarioPool[], parent = ""): Map<string, ScenarioPool> {
  const out = new Map<string, ScenarioPool>();
  for (const p of pools) {
    out.set(`${parent}/${p.name}`, p);
    for (const [path, child] of poolPaths(p.children ?? [], `${parent}/${p.name}`)) out.set(path, child);
  }
  return out;
}

function formatPath(path: (string | number)[]): string {
  return path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
}

/** Issues about a key rather than its value: one the format does not know, or one not taken there. */
const KEY_ISSUE = /^(unknown key|expected no )/;

/** The node at `path`, or the nearest one holding it when the path leads out of the document. */
function nodeAt(node: Node | null, path: (string | number)[]): Node | null {
  let cur: Node | null = node;
  for (const seg of path) {
    const next = childAt(cur, seg);
    if (!next) break;
    cur = next;
  }
  return cur;
}

/** The key of the field at `path`; undefined when the path leads to no key of the document. */
function keyAt(node: Node | null, path: (string | number)[]): Node | undefined {
  let holder: Node | null | undefined = node;
  for (const seg of path.slice(0, -1)) {
    holder = childAt(holder, seg);
    if (!holder) return undefined;
  }
  const key = path.at(-1);
  return isMap(holder) && key !== undefined ? pairAt(holder, key)?.key as Node | undefined : undefined;
}

function childAt(cur: Node | null | undefined, seg: string | number): Node | undefined {
  if (isMap(cur)) return (pairAt(cur, seg)?.value ?? undefined) as Node | undefined;
  if (isSeq(cur) && typeof seg === "number") return cur.get(seg, true) as Node | undefined;
  return undefined;
}

/** A mapping's pair of key `seg`, spelt in any case as Peloton's files spell keys (`owningteam`). */
function pairAt(map: YAMLMap, seg: string | number): Pair | undefined {
  const exact = map.items.find((p) => isScalar(p.key) && p.key.value === seg);
  if (exact || typeof seg !== "string") return exact;
  return map.items.find((p) => isScalar(p.key) && String(p.key.value).toLowerCase() === seg.toLowerCase());
}
