/** The scenario format capacity planners write: hosts, resource pools, workloads, timed events and run settings. */
import { z } from "zod";
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { parseRespoolConfig } from "../core/model/load.ts";
import { checkEvents, type ScenarioEvent, scenarioEvent } from "./scenario_events.ts";
import { type HostClass, hostClass } from "./scenario_hosts.ts";
import { type Distribution, type Workload, workload } from "./scenario_workload.ts";

export type { Distribution, HostClass, ScenarioEvent, Workload };

/**
 * A resource pool in Peloton's respool YAML shape (`name`, `owningteam`, `resources` of kind, reservation,
 * limit, share, `controllerlimit`, `slacklimit`, `policy`, in either key style), with its `children`; or
 * `file:` naming a Peloton respool file. A resource without `share` gets 1.
 */
export interface ScenarioPool {
  name: string;
  file?: string;
  children?: ScenarioPool[];
  [key: string]: unknown;
}
const respool: z.ZodType<ScenarioPool> = z.lazy(() =>
  z.object({
    name: z.string().min(1).regex(/^[^/]+$/, "a name without '/'"),
    file: z.string().min(1).optional(),
    children: z.array(respool).optional(),
  }).catchall(z.unknown())
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

export const scenarioSchema = scenarioBase.superRefine((s, ctx) => {
  const report: Report = (path, message) => ctx.addIssue({ code: "custom", path, message });
  s.hostClasses.forEach((c, i) => {
    if (s.hostClasses.findIndex((o) => o.name === c.name) !== i) {
      report(["hostClasses", i, "name"], "a name no other class has");
    }
  });
  const pools = poolPaths(s.respools);
  checkWorkloads(s, pools, report);
  if (s.durationSec !== undefined && s.durationSec > 0 && s.settings.warmupSec >= s.durationSec) {
    // Statistics start after the warm-up: a run no longer than it reports nothing.
    report(["settings", "warmupSec"], `less than durationSec (${s.durationSec})`);
  }
  checkEvents(s.events, {
    // A malformed durationSec is reported already: every event would be after it.
    durationSec: s.durationSec !== undefined && s.durationSec > 0 ? s.durationSec : undefined,
    hostClasses: s.hostClasses,
    workloads: s.workloads.map((w) => w.name),
    pools: [...pools.keys()],
    poolIssues: (config) => respoolIssues(poolConfig(config as ScenarioPool)),
  }, report);
});
export type Scenario = z.infer<typeof scenarioSchema>;

export type ScenarioResult = { ok: true; scenario: Scenario; dir: string } | { ok: false; errors: string[] };

/** Parses a scenario; errors name the file, line, field path, the value and what was expected. */
export function parseScenario(text: string, file: string): ScenarioResult {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length) {
    return {
      ok: false,
      errors: doc.errors.map((e) => `${file}:${lines.linePos(e.pos[0]).line}: ${e.message.split("\n")[0]}`),
    };
  }
  const root = doc.contents as Node | null;
  const at = (path: (string | number)[]) => {
    const node = nodeAt(root, path);
    return {
      line: node?.range ? `:${lines.linePos(node.range[0]).line}` : "",
      value: node && isScalar(node) ? `got ${JSON.stringify(node.value)}, ` : "",
    };
  };
  const res = scenarioSchema.safeParse(doc.toJS());
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
  if (!res.success) {
    return {
      ok: false,
      errors: res.error.issues.map((i) => {
        const path = i.path as (string | number)[];
        const { line, value } = at(path);
        // Pool rules already say what they got.
        const got = i.message.startsWith("got ") ? "" : value;
        return `${file}${line}: ${formatPath(path) || "(top level)"}: ${got}${i.message}`;
      }),
    };
  }
  const errors: string[] = [];
  checkPools(res.data.respools, ["respools"], (path, message) => {
    errors.push(`${file}${at(path).line}: ${formatPath(path)}: ${message}`);
  });
  return errors.length ? { ok: false, errors } : { ok: true, scenario: res.data, dir };
}

/** The pool's config as the respool API takes it (Peloton's shape; `children` and `file` removed). */
export function poolConfig(pool: ScenarioPool): Record<string, unknown> {
  const { children: _c, file: _f, ...config } = pool;
  const resources = Array.isArray(config.resources) ? config.resources : [];
  return {
    ...config,
    resources: resources.map((r) =>
      r && typeof r === "object" && !("share" in r) ? { ...(r as object), share: 1 } : r
    ),
  };
}

type Report = (path: (string | number)[], message: string) => void;

/**
 * Workloads name distinct leaf pools and trace host classes that exist; work that never ends on its own
 * needs a `durationSec`, or the run would never stop.
 */
function checkWorkloads(
  s: z.infer<typeof scenarioBase>,
  pools: Map<string, ScenarioPool>,
  report: Report,
): void {
  const classes = s.hostClasses.map((c) => c.name);
  const leaves = [...pools].filter(([, p]) => !p.children?.length).map(([path]) => path);
  const names = new Set<string>();
  s.workloads.forEach((w, i) => {
    if (names.has(w.name)) report(["workloads", i, "name"], "a name no other workload has");
    names.add(w.name);
    const pool = pools.get(w.respool);
    if (!pool || pool.children?.length) {
      // The job manager refuses jobs for pools with children ("is not a leaf pool").
      const why = pool || w.respool === "/"
        ? `; ${w.respool} has child pools, and jobs go to leaf pools`
        : "";
      report(["workloads", i, "respool"], `one of the leaf pools (${leaves.join(", ")})${why}`);
    }
    if (w.trace && !classes.includes(w.trace.hostClass)) {
      report(["workloads", i, "trace", "hostClass"], `one of the host classes (${classes.join(", ")})`);
    }
    if (s.durationSec === undefined) {
      const endless = endlessWork(w);
      if (endless) report(["workloads", i, endless.field], `${endless.why}: set the run's durationSec`);
    } else if (!w.trace && s.durationSec > 0) {
      for (const field of startsAfter(w, s.durationSec)) {
        report(
          ["workloads", i, ...field],
          `expected at most durationSec (${s.durationSec}): the run ends before`,
        );
      }
    }
  });
}

/** Where a workload's start or arrival times lie past the run's end: jobs that would silently never come. */
function startsAfter(w: Workload, durationSec: number): (string | number)[][] {
  const late: (string | number)[][] = [];
  if (w.startSec > durationSec) late.push(["startSec"]);
  const a = w.arrival;
  if ("at" in a) a.at.forEach((t, j) => t > durationSec && late.push(["arrival", "at", j]));
  if ("bursts" in a && a.bursts.firstAtSec > durationSec) late.push(["arrival", "bursts", "firstAtSec"]);
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

/** Validates every inline pool with the resource manager's own config rules; unknown keys are errors too. */
function checkPools(pools: ScenarioPool[], path: (string | number)[], report: Report): void {
  pools.forEach((pool, i) => {
    const here = [...path, i];
    if (!pool.file) {
      for (const issue of respoolIssues(poolConfig(pool))) report([...here, ...issue.path], issue.message);
    }
    checkPools(pool.children ?? [], [...here, "children"], report);
  });
}

/** A pool config's problems by the resource manager's rules, warnings (unknown keys) included. */
function respoolIssues(config: Record<string, unknown>): { path: (string | number)[]; message: string }[] {
  const res = parseRespoolConfig(config, "pool");
  return (res.ok ? res.warnings : [...res.errors, ...res.warnings]).map((issue) => ({
    path: issue.path.split(/[.[\]]+/).filter(Boolean).map((s) => /^\d+$/.test(s) ? Number(s) : s),
    message: issue.message.slice(`pool: ${issue.path || "(top level)"}: `.length),
  }));
}

function formatPath(path: (string | number)[]): string {
  return path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
}

function nodeAt(node: Node | null, path: (string | number)[]): Node | null {
  let cur: Node | null = node;
  for (const seg of path) {
    let next: Node | undefined;
    if (isMap(cur)) {
      next = cur.get(seg, true) as Node | undefined;
      // Peloton's files spell keys in any case (`owningteam`, `controllerLimit`).
      if (!next && typeof seg === "string") {
        const pair = cur.items.find((p) =>
          isScalar(p.key) && String(p.key.value).toLowerCase() === seg.toLowerCase()
        );
        next = pair?.value as Node | undefined;
      }
    } else if (isSeq(cur) && typeof seg === "number") next = cur.get(seg, true) as Node | undefined;
    if (!next) break;
    cur = next;
  }
  return cur;
}
