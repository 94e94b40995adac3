/** Workload generation: turns a scenario's workloads into job submissions on virtual time. */
import type { Prng } from "../core/ports/prng.ts";
import { randomUuid } from "../core/ports/prng.ts";
import type { OutcomeModel, SimCluster, UsageGroup } from "./cluster.ts";
import { outcomeFromCommand } from "./cluster.ts";
import type { Distribution, HostClass, Workload } from "./scenario.ts";
import type { TraceJob, TraceStop } from "./trace.ts";
import { replayedJobs, traceConfig, traceModel, traceStops } from "./trace.ts";

/** Draws from a distribution. */
export function sample(d: Distribution, prng: Prng): number {
  if (typeof d === "number") return d;
  if ("fixed" in d) return d.fixed;
  if ("uniform" in d) return d.uniform[0] + prng() * (d.uniform[1] - d.uniform[0]);
  if ("exponential" in d) return -Math.log(1 - prng()) * d.exponential;
  if ("choice" in d) {
    const total = d.choice.reduce((a, [, w]) => a + w, 0);
    let x = prng() * total;
    for (const [v, w] of d.choice) if ((x -= w) < 0) return v;
    return d.choice[d.choice.length - 1][0];
  }
  // Box-Muller; negative draws clamp to zero (durations and counts are not negative).
  const u = 1 - prng(), v = prng();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  if ("lognormal" in d) return d.lognormal.median * Math.exp(d.lognormal.sigma * z);
  return Math.max(0, d.normal.mean + d.normal.stddev * z);
}

/** A job ready to submit: its id, Peloton JSON config and the behaviour of its tasks. */
export interface Submission {
  workload: string;
  jobId: string;
  config: Record<string, unknown>;
  instances: number;
  model?: OutcomeModel;
  /** Instances to stop through the API once the job is accepted (a trace's KILLs), at their times. */
  stops?: TraceStop[];
}

/** What scheduling a workload needs from the simulation. */
export interface WorkloadContext {
  prng: Prng;
  /**
   * Seed of the workload's task outcomes (durations, failures, cpu use): each run of a task draws from a
   * stream of its own, seeded from this and its task id (`taskPrng`), so its outcome does not depend on when
   * or where it launched, nor on what launched before it.
   */
  outcomeSeed: number;
  schedule: (atMs: number, fn: () => void) => void;
  horizonMs: number;
  submit: (s: Submission) => void;
  cluster: SimCluster;
  /** A parsed job file body (Peloton JSON) when the workload names one. */
  template?: Record<string, unknown>;
  /** Jobs of a trace workload, in submission order. */
  trace?: TraceJob[];
  traceHostClass?: HostClass;
  /** The workload's usage level, shared by its tasks (events change it). */
  usageGroup: UsageGroup;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Job config bodies in Peloton's JSON shape for a synthetic workload. */
function syntheticConfig(w: Workload, n: number, instances: number, prng: Prng): Record<string, unknown> {
  const type = w.type === "STATELESS" || w.type === "STATEFUL" ? "SERVICE" : w.type;
  const gang = w.gang === true ? instances : w.gang === false ? 0 : Math.min(w.gang, instances);
  const task: Record<string, unknown> = {
    resource: {
      cpuLimit: round3(sample(w.cpu, prng)),
      memLimitMb: Math.round(sample(w.memoryMb, prng)),
      diskLimitMb: Math.round(sample(w.diskMb, prng)),
      gpuLimit: round3(sample(w.gpu, prng)),
    },
    command: { shell: true, value: `run ${w.name}` },
  };
  const constraints: Record<string, unknown>[] = [];
  for (const [key, value] of Object.entries(w.hostAttributes ?? {})) {
    constraints.push(label("HOST", "EQUAL", key, value, 1));
  }
  if (w.constraint) constraints.push(w.constraint);
  if (w.maxPerHost) {
    // Counted through a label every task of the job carries.
    const value = `${w.name}-${n}`;
    task.labels = [{ key: "sim.job", value }];
    constraints.push(label("TASK", "LESS_THAN", "sim.job", value, w.maxPerHost));
  }
  if (constraints.length === 1) task.constraint = constraints[0];
  else if (constraints.length > 1) {
    task.constraint = { type: "AND_CONSTRAINT", andConstraint: { constraints } };
  }
  if (w.type === "STATEFUL") task.volume = { containerPath: "data", sizeMB: w.volumeMb };
  if (w.ports > 0) {
    task.ports = Array.from(
      { length: w.ports },
      (_, i) => ({ name: `port${i}`, value: 0, envName: `PORT${i}` }),
    );
  }
  return {
    name: `${w.name}-${n}`,
    type,
    owner: "sim",
    owningTeam: w.name,
    instanceCount: type === "DAEMON" ? 0 : instances,
    sla: {
      priority: w.priority,
      preemptible: w.preemptible,
      revocable: w.revocable,
      ...(gang > 1 ? { minimumRunningInstances: gang } : {}),
      ...(w.maxUnavailableInstances ? { maximumUnavailableInstances: w.maxUnavailableInstances } : {}),
    },
    ...(w.placementStrategy ? { placementStrategy: w.placementStrategy } : {}),
    defaultConfig: task,
  };
}

function label(kind: string, condition: string, key: string, value: string, requirement: number) {
  return {
    type: "LABEL_CONSTRAINT",
    labelConstraint: { kind, condition, label: { key, value }, requirement },
  };
}

/**
 * A stream of draws for one run of a task: seeded from the workload's outcome seed and the Mesos task id
 * (`<job>-<instance>-<run>`, FNV-1a), then SplitMix32. Runs that differ in a setting give the same run of
 * the same task the same outcome (common random numbers), where one stream shared in launch order would
 * give it whichever draw came next.
 */
export function taskPrng(seed: number, taskId: string): Prng {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < taskId.length; i++) h = Math.imul(h ^ taskId.charCodeAt(i), 0x01000193);
  let x = h >>> 0;
  return () => {
    x = (x + 0x9e3779b9) | 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** Task behaviour of a synthetic workload: duration, failures and cpu use, drawn per task run (`taskPrng`). */
function outcomeModel(
  w: Workload,
  group: UsageGroup,
  commandBased: boolean,
  seed: number,
): OutcomeModel | undefined {
  const { durationSec: duration, failureRate, cpuUsage } = w;
  if (commandBased && duration === undefined && failureRate === 0 && cpuUsage === undefined) return undefined;
  return (spec) => {
    const prng = taskPrng(seed, spec.taskId);
    let durationMs = Infinity, exitCode = 0;
    if (duration !== undefined) durationMs = Math.round(sample(duration, prng) * 1000);
    else if (commandBased) ({ durationMs, exitCode } = outcomeFromCommand(spec));
    const failed = failureRate > 0 && prng() < failureRate;
    return {
      durationMs,
      exitCode: failed ? 1 : exitCode,
      cpuUsage: cpuUsage === undefined ? 1 : sample(cpuUsage, prng),
      usageGroup: group,
    };
  };
}

/** Arrival times of a workload, in ms, lazily: `next(prev)` gives the next one or Infinity. */
function arrivals(w: Workload, prng: Prng): { first: number[] } | { next: (prevMs: number) => number } {
  const startMs = w.startSec * 1000;
  const a = w.arrival;
  const exp = (rate: number) => (-Math.log(1 - prng()) / rate) * 1000;
  if ("at" in a) return { first: a.at.map((t) => t * 1000).filter((t) => t >= startMs) };
  if ("ratePerSec" in a) return { next: (prev) => Math.max(prev, startMs) + exp(a.ratePerSec) };
  if ("bursts" in a) {
    const b = a.bursts;
    const firstMs = b.firstAtSec * 1000, everyMs = b.everySec * 1000;
    let k = Math.max(0, Math.ceil((startMs - firstMs) / everyMs)), j = 0;
    return {
      next: () => {
        if (j === b.jobs) j = 0, k++;
        j++;
        return firstMs + k * everyMs;
      },
    };
  }
  // Diurnal: thinning a Poisson process at the curve's peak rate.
  const d = a.diurnal;
  const peak = d.meanPerSec * (1 + d.amplitude);
  const rateAt = (ms: number) =>
    d.meanPerSec * (1 + d.amplitude * Math.cos((2 * Math.PI * (ms / 1000 - d.peakAtSec)) / d.periodSec));
  return {
    next: (prev) => {
      let t = Math.max(prev, startMs);
      for (;;) {
        t += exp(peak);
        if (prng() * peak <= rateAt(t)) return t;
      }
    },
  };
}

/** Schedules a workload's arrivals; `ctx.submit` is called at each one on virtual time. */
export function scheduleWorkload(w: Workload, ctx: WorkloadContext): void {
  const { prng, cluster, template } = ctx;
  if (w.trace) return scheduleTrace(w, ctx);
  const model = outcomeModel(w, ctx.usageGroup, template !== undefined, ctx.outcomeSeed);
  let n = 0;
  const make = (): Submission => {
    n++;
    const instances = template
      ? Number(template.instanceCount ?? template.instancecount ?? 1)
      // The scenario's counts and bounds are whole numbers of at least 1; a draw is rounded, and kept so.
      : Math.max(1, Math.round(sample(w.instances, prng)));
    const config = template
      ? { ...template, name: `${template.name ?? w.name}-${n}` }
      : syntheticConfig(w, n, instances, prng);
    const jobId = randomUuid(prng);
    if (model) cluster.setModel(jobId, model);
    // A daemon job (synthetic or from a job file) has an instance per matching host, none of its own.
    const daemon = config.type === "DAEMON";
    return { workload: w.name, jobId, config, instances: daemon ? 0 : instances, model };
  };
  const max = w.maxJobs ?? Infinity;
  const comes = arrives(w, ctx.horizonMs);
  const plan = arrivals(w, prng);
  if ("first" in plan) {
    for (const t of plan.first.slice(0, Number.isFinite(max) ? max : undefined)) {
      if (comes(t)) ctx.schedule(t, () => ctx.submit(make()));
    }
    return;
  }
  let scheduled = 0;
  const step = (prevMs: number) => {
    const at = plan.next(prevMs);
    if (!comes(at) || scheduled >= max) return;
    scheduled++;
    ctx.schedule(at, () => {
      ctx.submit(make());
      step(at);
    });
  };
  step(0);
}

/**
 * Whether an arrival at `atMs` happens: up to the workload's `stopSec` (included) and before the run's end
 * (not at it: the run would end before the job's tasks could be asked for, as no event runs then either).
 */
export function arrives(w: Workload, horizonMs: number): (atMs: number) => boolean {
  const stopMs = w.stopSec !== undefined ? w.stopSec * 1000 : Infinity;
  return (atMs) => atMs <= stopMs && atMs < horizonMs;
}

/** Replays a trace: each trace job is submitted at its (scaled) submit time. */
function scheduleTrace(w: Workload, ctx: WorkloadContext): void {
  const spec = w.trace!;
  let n = 0;
  for (const { job, atMs } of replayedJobs(ctx.trace ?? [], w, ctx.horizonMs)) {
    ctx.schedule(atMs, () => {
      n++;
      const jobId = randomUuid(ctx.prng);
      const model = traceModel(job, spec, ctx.usageGroup);
      ctx.cluster.setModel(jobId, model);
      ctx.submit({
        workload: w.name,
        jobId,
        config: traceConfig(job, w, ctx.traceHostClass!, n),
        instances: job.tasks.length,
        model,
        stops: traceStops(job, spec),
      });
    });
  }
}
