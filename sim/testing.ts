/** Test harness for simulations: load a scenario file with its job templates and run it. */
import { loadJobConfig } from "../core/model/load.ts";
import type { LaunchSpec } from "../core/ports/host_backend.ts";
import { buildReport, type Report } from "../reports/report.ts";
import { type RunOptions, runScenario, type Simulation } from "./runner.ts";
import { parseScenario, type Scenario } from "./scenario.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/** Reads a scenario and the job files its workloads name; throws on any error. */
export async function loadScenario(
  path: string,
): Promise<{ scenario: Scenario; templates: Record<string, Record<string, unknown>> }> {
  const res = parseScenario(await Deno.readTextFile(path), path);
  if (!res.ok) throw new Error(res.errors.join("\n"));
  const templates: Record<string, Record<string, unknown>> = {};
  for (const w of res.scenario.workloads) {
    if (!w.jobFile) continue;
    const file = `${res.dir}/${w.jobFile}`;
    const job = loadJobConfig(await Deno.readTextFile(file), file);
    if (!job.ok) throw new Error(job.errors.map((e) => e.message).join("\n"));
    templates[w.name] = job.value as unknown as Record<string, unknown>;
  }
  return { scenario: res.scenario, templates };
}

/** Runs a scenario file with invariant checks on. */
export async function simulate(
  path: string,
  seed: number,
  extra: Partial<RunOptions> = {},
): Promise<Simulation> {
  const { scenario, templates } = await loadScenario(path);
  return runScenario(scenario, { seed, templates, checkInvariants: true, ...extra });
}

/** Parses an inline scenario (YAML text) or throws with its errors. */
export function inlineScenario(yaml: string): Scenario {
  const res = parseScenario(yaml, "inline.yaml");
  if (!res.ok) throw new Error(res.errors.join("\n"));
  return res.scenario;
}

/**
 * An open-ended run (no `durationSec`) on one 4-core host: a's two 2-core tasks run 100 s, then b's 4-core
 * task 30 s; the run ends at about 130 s. `settings` lines (indented two spaces) are added to its settings.
 */
export function openEndedScenario(...settings: string[]): Scenario {
  return inlineScenario(`
name: open-ended
hostClasses:
  - {name: h, count: 1, cpu: 4, memoryMb: 4096}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 4, limit: 100}
      - {kind: memory, reservation: 4096, limit: 409600}
workloads:
  - {name: a, respool: /p, arrival: {at: [0]}, instances: 2, durationSec: 100, cpu: 2, memoryMb: 1024}
  - {name: b, respool: /p, arrival: {at: [50]}, instances: 1, durationSec: 30, cpu: 4, memoryMb: 1024}
settings:
  taskStartupSec: 0
  sampleIntervalSec: 10
${settings.map((line) => `  ${line}`).join("\n")}
`);
}

/**
 * 40 one-core tasks that outlive the run on 4-core hosts: `tasks.unplaced` is exactly max(0, 40 - 4 × hosts),
 * so the smallest host count that places every task is 10. Its pool reserves more than the cluster has, so
 * every task is admitted and those no host takes fail placement with reasons (a scenario warning says so).
 */
export const PLAN_SCENARIO = `name: plan-small
description: 40 one-core tasks on 4-core hosts; 10 hosts place them all.
durationSec: 120
hostClasses:
  - { name: std, count: 2, cpu: 4, memoryMb: 16384, diskMb: 100000 }
respools:
  - name: p
    resources:
      - { kind: cpu, reservation: 1000, limit: 1000, share: 1 }
      - { kind: memory, reservation: 10000000, limit: 10000000, share: 1 }
      - { kind: disk, reservation: 100000000, limit: 100000000, share: 1 }
      - { kind: gpu, reservation: 0, limit: 0, share: 1 }
workloads:
  - name: w
    respool: /p
    type: BATCH
    arrival: { at: [0] }
    instances: 40
    durationSec: 3600
    cpu: 1
    memoryMb: 1024
settings:
  sampleIntervalSec: 10
`;

/**
 * A small cluster for event tests: 12 hosts of 8 cores in 3 racks (`std-rack-0` to `std-rack-2`), pool /svc,
 * and one service `web` of `instances` one-core instances at most 4 per host, of which a drain may take down
 * `sla` at once (`maxUnavailableInstances`; without it, no limit). `events` and `extra` workloads are YAML
 * list lines.
 */
export function rackScenario(
  events: string,
  o: { instances?: number; sla?: number; durationSec?: number; extra?: string } = {},
): string {
  const limit = o.sla === undefined ? "" : `, maxUnavailableInstances: ${o.sla}`;
  return `name: events
durationSec: ${o.durationSec ?? 300}
hostClasses:
  - {name: std, count: 12, cpu: 8, memoryMb: 32768, diskMb: 100000, racks: 3}
respools:
  - name: svc
    resources:
      - {kind: cpu, reservation: 96, limit: 96}
      - {kind: memory, reservation: 393216, limit: 393216}
      - {kind: disk, reservation: 1200000, limit: 1200000}
workloads:
  - {name: web, respool: /svc, type: stateless, arrival: {at: [0]}, instances: ${
    o.instances ?? 48
  }, cpu: 1, memoryMb: 1024, maxPerHost: 4${limit}}
${o.extra ?? ""}
events:
${events}
settings: {sampleIntervalSec: 10}
`;
}

/**
 * Services on 4 hosts, using a quarter of their cpu, leave 48 cores of slack; revocable backfill runs 24
 * two-core tasks on it. `spike`: at 200 s the services' use triples and 16 of them are killed.
 */
export function slackPools(spike: boolean): string {
  return `
name: slack-pools
durationSec: 300
hostClasses:
  - {name: std, count: 4, cpu: 32, memoryMb: 131072, diskMb: 500000}
respools:
  - name: web
    resources:
      - {kind: cpu, reservation: 64, limit: 64}
      - {kind: memory, reservation: 262144, limit: 262144}
      - {kind: disk, reservation: 1000000, limit: 1000000}
  - name: backfill
    slacklimit: {maxpercent: 100}
    resources:
      - {kind: cpu, reservation: 0, limit: 64}
      - {kind: memory, reservation: 131072, limit: 262144}
      - {kind: disk, reservation: 500000, limit: 1000000}
workloads:
  - {name: frontend, respool: /web, type: stateless, arrival: {at: [0]}, instances: 8, cpu: 8, memoryMb: 8192,
     preemptible: false, cpuUsage: {fixed: 0.25}}
  - {name: backfill, respool: /backfill, arrival: {at: [30]}, instances: 100, durationSec: 1000, cpu: 2,
     memoryMb: 1024, revocable: true}
${spike ? "events:\n  - {atSec: 200, usage: {workload: frontend, level: 3}}\n" : ""}settings:
  sampleIntervalSec: 10
  slackIntervalSec: 15
`;
}

/** `slackPools` with its spike. */
export const SLACK_POOLS = slackPools(true);

/** A one-host scenario replaying a trace file (`traceScenarioYaml`). */
export interface TraceScenario {
  /** The trace file, a name in the scenario's directory. */
  file: string;
  /** The run's lines (`durationSec: 300`). */
  run: string;
  /** More of the workload's `trace` fields, as YAML flow (`startSec: 600`). */
  trace?: string;
  /** The pool's cpu (default 16, the host's); with `memoryAndDisk`, memory and disk in proportion too. */
  poolCpu?: number;
  memoryAndDisk?: boolean;
  /** Lines after the workload: settings, or more of the workload's fields. */
  tail?: string;
}

/**
 * The YAML of a scenario replaying a trace on one 16-core host, in pool /trace, workload `g`; its `trace`
 * field is on line 12 when the run is one line and the pool has cpu alone.
 */
export function traceScenarioYaml(o: TraceScenario): string {
  const cpu = o.poolCpu ?? 16;
  const more = o.memoryAndDisk
    ? `      - {kind: memory, reservation: ${cpu * 4096}, limit: ${cpu * 4096}}
      - {kind: disk, reservation: ${cpu * 6250}, limit: ${cpu * 6250}}
`
    : "";
  return `name: s
${o.run}
hostClasses:
  - {name: std, count: 1, cpu: 16, memoryMb: 65536, diskMb: 100000}
respools:
  - name: trace
    resources:
      - {kind: cpu, reservation: ${cpu}, limit: ${cpu}}
${more}workloads:
  - name: g
    respool: /trace
    trace: {file: ${o.file}, hostClass: std${o.trace ? `, ${o.trace}` : ""}}
${o.tail ?? ""}
`;
}

/** Writes `traceScenarioYaml(o)` to `dir/s.yaml`; returns its path. */
export async function writeTraceScenarioYaml(dir: string, o: TraceScenario): Promise<string> {
  await Deno.writeTextFile(`${dir}/s.yaml`, traceScenarioYaml(o));
  return `${dir}/s.yaml`;
}

/** Writes `dir/s.yaml`, replaying the trace file `trace` (a name in `dir`) for `durationSec`; its path. */
export function writeTraceScenario(dir: string, trace: string, durationSec: number): Promise<string> {
  return writeTraceScenarioYaml(dir, { file: trace, run: `durationSec: ${durationSec}` });
}

/** A shipped scenario's report (seed 1), as `deno task sim scenarios/NAME --seed 1` writes it. */
export async function scenarioReport(name: string, checkInvariants = false): Promise<Report> {
  const { scenario, templates } = await loadScenario(`${ROOT}/scenarios/${name}`);
  const sim = await runScenario(scenario, { seed: 1, templates, checkInvariants });
  return buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
}

/** The largest value of a series over samples in [fromSec, toSec) (a null, no value, left out). */
export function maxBetween(r: Report, series: (number | null)[], fromSec: number, toSec: number): number {
  let max = -Infinity;
  r.series.t.forEach((t, i) => {
    const v = series[i];
    if (t >= fromSec && t < toSec && v !== null) max = Math.max(max, v);
  });
  return max;
}

/** `deno task sim ARGS` as a user runs it (in `cwd`, the repository by default): its exit code and output. */
export async function runSim(
  args: string[],
  cwd = ROOT,
): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/sim/main.ts`, ...args],
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

/** A launch of a shell `command` as task `id` (`<job>-<instance>-<run>`) on the simulated cluster's host-0. */
export function simLaunchSpec(id: string, command: string, extra: Partial<LaunchSpec> = {}): LaunchSpec {
  return {
    taskId: id,
    jobId: id.split("-")[0],
    instanceId: 0,
    hostname: "host-0",
    agentId: "agent-0",
    resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 0 },
    ports: {},
    command: { shell: true, value: command, arguments: [] },
    env: {},
    killGracePeriodMs: 5000,
    labels: [],
    ...extra,
  };
}
