/**
 * The simulator's CLI: `deno task sim SCENARIO --seed N --out DIR` runs a scenario and writes its report;
 * `deno task sim compare DIR... --out DIR` compares reports; `deno task sim plan SCENARIO --vary ... --target ...`
 * searches for the smallest value of a field that meets a target.
 */
import { parseArgs } from "node:util";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { writeCsvFiles } from "../reports/csv.ts";
import {
  compareReports,
  comparisonText,
  type Named,
  renderComparison,
  reportProblems,
} from "../reports/compare.ts";
import { renderHtml } from "../reports/html.ts";
import { renderPlan } from "../reports/plan_html.ts";
import { buildReport, type Report } from "../reports/report.ts";
import { closest, unknownFlag } from "../prod/cli/command.ts";
import { plan, type PlanOptions, PlanRunFailed, preparePlan } from "./plan.ts";
import { Progress } from "./progress.ts";
import { InvariantError } from "./invariants.ts";
import { runScenario } from "./runner.ts";
import { loadScenarioFile, ScenarioError } from "./scenario_load.ts";

const USAGE = `usage:
  deno task sim SCENARIO.yaml [--seed N] [--out DIR] [--check-invariants]
  deno task sim compare DIR1 DIR2 ... [--out DIR]
  deno task sim plan SCENARIO.yaml --vary PATH=LO..HI --target 'FIELD<=VALUE' [--seed N] [--workers N]
                     [--resolution R] [--out DIR]
    PATH: hosts.<class>.count, workloads.<name>.<field>, settings.<field>, ...
    FIELD: a number in report.json, e.g. queueDelaySeconds.p99, utilization.cpu, tasks.unplaced,
           workloads.<name>.queueDelaySeconds.p99, pools.<path>.avgAllocationCpu
    --seed N: the random seed, from 0 to 4294967295 (default 1)
    --out DIR: where the files go (default out/SCENARIO-SEED for a run, SCENARIO the file's name without
               .yaml; compare and plan write none without it, printing their answer only)
    --workers N: plan's runs at once (default 2, or 1 on a one-core machine)`;

/** uPlot's browser build and stylesheet, inlined into the report. */
export async function uplotAssets(): Promise<{ js: string; css: string }> {
  await import("uplot").catch(() => undefined);
  const require = createRequire(import.meta.url);
  const js = await Deno.readTextFile(require.resolve("uplot/dist/uPlot.iife.min.js"));
  const css = await Deno.readTextFile(require.resolve("uplot/dist/uPlot.min.css"));
  return { js, css };
}

function fail(message: string): never {
  console.error(message);
  Deno.exit(2);
}

type Options = Record<string, { type: "string" | "boolean"; default?: string | boolean; short?: string }>;

/**
 * Parses one subcommand's arguments (`command` names it in errors: `compare: `); a bad one prints the usage,
 * an unknown flag with the subcommand's flag it is closest to.
 */
function args(
  argv: string[],
  options: Options,
  command = "",
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const all: Options = { ...options, help: { type: "boolean", short: "h" } };
  try {
    const res = parseArgs({ args: argv, allowPositionals: true, options: all });
    return {
      values: res.values as Record<string, string | boolean | undefined>,
      positionals: res.positionals,
    };
  } catch (e) {
    fail(`${command}${unknownFlag(e as Error, Object.keys(all)) ?? (e as Error).message}\n${USAGE}`);
  }
}

/**
 * `deno task sim compre out/a`: a first argument that is no file but close to a subcommand's name is its typo,
 * said so here rather than read as a scenario file that is missing (or as one of two given).
 */
async function mistypedSubcommand(first: string | undefined): Promise<void> {
  if (first === undefined || first.startsWith("-")) return;
  const meant = closest(first, ["compare", "plan"]);
  if (meant === undefined || await Deno.stat(first).then(() => true, () => false)) return;
  fail(`"${first}": no such scenario file; did you mean \`deno task sim ${meant}\`?\n${USAGE}`);
}

/** The PRNG takes a 32-bit seed: a larger one would run as `seed >>> 0` yet be recorded as given. */
const MAX_SEED = 2 ** 32 - 1;

function seedOf(text: unknown): number {
  const seed = typeof text === "string" && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(seed <= MAX_SEED)) {
    fail(`--seed: got "${text}", expected an integer from 0 to ${MAX_SEED} (the PRNG's 32-bit seed)`);
  }
  return seed;
}

/** What a run writes: an earlier run's are removed before it starts, so a run that fails leaves none behind. */
const REPORT_FILES = ["report.json", "report.html", "series.csv", "pools.csv"];

/**
 * Creates the output directory and checks that files can be written in it, before any work: a run that
 * cannot write its report would otherwise be thrown away at the end. The `files` this command writes are
 * removed if an earlier run left them: one that then fails must not leave an older answer looking like its.
 */
export async function prepareOut(dir: string, files: string[]): Promise<void> {
  const stat = await Deno.stat(dir).catch(() => undefined);
  if (stat && !stat.isDirectory) {
    fail(`--out ${dir}: cannot write the report there: it is a file, not a directory`);
  }
  try {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.remove(await Deno.makeTempFile({ dir, prefix: ".write-check-" }));
    for (const f of files) {
      await Deno.remove(`${dir}/${f}`).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  } catch (e) {
    fail(`--out ${dir}: cannot write the report there: ${(e as Error).message}`);
  }
}

/** Loads a scenario; what it ignores is printed as warnings, and a scenario that cannot run ends the CLI. */
async function load(file: string) {
  try {
    const loaded = await loadScenarioFile(file);
    for (const w of loaded.warnings) console.error(`warning: ${w}`);
    return loaded;
  } catch (e) {
    if (e instanceof ScenarioError) fail([e.message, ...e.warnings.map((w) => `warning: ${w}`)].join("\n"));
    throw e;
  }
}

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === "compare") return await compare(argv.slice(1));
  if (argv[0] === "plan") return await planCommand(argv.slice(1));
  await mistypedSubcommand(argv[0]);
  const { values, positionals } = args(argv, {
    seed: { type: "string", default: "1" },
    out: { type: "string" },
    "check-invariants": { type: "boolean", default: false },
  });
  if (values.help) return console.log(USAGE);
  if (positionals.length !== 1) fail(`expected one scenario file, got ${positionals.length}\n${USAGE}`);
  const file = positionals[0];
  const seed = seedOf(values.seed);
  const out = (values.out as string | undefined) ??
    `out/${file.replace(/^.*\//, "").replace(/\.ya?ml$/, "")}-${seed}`;
  // The earlier run's reports go first: a scenario refused now must not leave them looking like its answer.
  await prepareOut(out, REPORT_FILES);
  // wallSeconds measures the whole run: reading the scenario's files (parsing a large trace) may take most.
  const started = performance.now();
  const loaded = await load(file);
  const scenario = loaded.scenario;

  const progress = new Progress(scenario.durationSec);
  let interrupted = false;
  const onSigint = () => (interrupted = true);
  Deno.addSignalListener("SIGINT", onSigint);
  let peakRss = Deno.memoryUsage().rss;
  let sim;
  try {
    sim = await runScenario(scenario, {
      seed,
      templates: loaded.templates,
      traces: loaded.traces,
      checkInvariants: values["check-invariants"] as boolean,
      yieldBetweenSamples: true,
      onSample: (ms, events) => {
        peakRss = Math.max(peakRss, Deno.memoryUsage().rss);
        progress.draw(ms, events);
        return interrupted;
      },
    });
  } catch (e) {
    if (!(e instanceof InvariantError)) throw e;
    progress.done();
    console.error(`invariant broken: ${e.message}; no report written`);
    Deno.exit(1);
  }
  Deno.removeSignalListener("SIGINT", onSigint);
  progress.done();
  const report = buildReport(scenario, sim, seed, {
    wallSeconds: (performance.now() - started) / 1000,
    peakRssBytes: Math.max(peakRss, Deno.memoryUsage().rss),
  });
  await Deno.writeTextFile(`${out}/report.json`, JSON.stringify(report, null, 2) + "\n");
  await writeCsvFiles(report, out);
  await Deno.writeTextFile(
    `${out}/report.html`,
    renderHtml(report, await uplotAssets(), { durationSeconds: scenario.durationSec }),
  );
  console.log(summaryLine(report, out, scenario.durationSec));
  const stuck = report.jobs.stuck;
  for (const j of report.stuckJobs.slice(0, 5)) {
    const tasks = `${j.waitingTasks} ${j.waitingTasks === 1 ? "task" : "tasks"} waiting`;
    console.log(`  never starts: job ${j.jobId} (${j.workload}, ${tasks}): ${j.reason}`);
  }
  if (stuck > 5) console.log(`  ... ${stuck - 5} more stuck jobs: see stuckJobs in ${out}/report.json`);
  // A timed event the cluster refused (a pool update the respool API rejects) changed nothing: say so here,
  // not only in the report, since the run's answer is for a scenario without it.
  for (const e of report.events) {
    if (e.error !== undefined) console.log(`  event failed at ${e.atSec} s: ${e.kind}: ${e.error}`);
    // A drain that never finished: what holds its hosts, so the answer is not read as a slow drain.
    const p = e.drainPending;
    if (!p) continue;
    console.log(`  drain at ${e.atSec} s not over by the end: ${p.tasks} tasks left on ${p.hosts} hosts`);
    for (const h of p.holding.slice(0, 3)) {
      console.log(`    ${h.tasks} of ${h.workload} (${h.jobs} ${h.jobs === 1 ? "job" : "jobs"}): ${h.why}`);
    }
  }
  // Stopped by Ctrl-C: the report is partial, and a script running the simulator should be able to tell.
  if (interrupted) Deno.exit(130);
}

/**
 * The line a run ends with. Task counts cover the whole run; the launch rate and queue delays leave out
 * the warm-up (instances asked for after it), and the line says so when there is one.
 */
export function summaryLine(report: Report, out: string, durationSec?: number): string {
  const t = report.tasks, q = report.queueDelaySeconds, stuck = report.jobs.stuck;
  const jobs = `${stuck} ${stuck === 1 ? "job" : "jobs"}`;
  const ending = report.endedEarly
    ? " (interrupted: partial report)"
    : !stuck
    ? ""
    : durationSec === undefined
    ? ` (stopped: ${jobs} can never start)`
    : ` (${jobs} could never start)`;
  const warmup = report.warmupSeconds;
  const measured = Math.max(0, report.simulatedSeconds - warmup);
  const counts = `tasks submitted ${t.submitted}, launched ${t.launched}, succeeded ${t.succeeded}, ` +
    `failed ${t.failed}, preempted ${t.preempted}, unplaced ${t.unplaced}`;
  // A percentile of no delays (none asked for after the warm-up) is null: "n/a", not "0s".
  const s = (v: number | null) => (v === null ? "n/a" : `${v}s`);
  const launches = report.launchesPerSec === null ? "n/a" : report.launchesPerSec;
  const rates = `${launches} launches/s; queue delay p50 ${s(q.p50)} p99 ${s(q.p99)}`;
  const figures = warmup > 0
    ? `whole run (${report.simulatedSeconds}s): ${counts}; after the ${warmup}s warm-up (${measured}s): ${rates}`
    : `${counts}; ${rates}`;
  return `${report.scenario}: ${report.hosts} hosts, ${report.simulatedSeconds}s simulated in ` +
    `${report.wallSeconds}s${ending}; ${figures}; peak RSS ${
      (report.peakRssBytes / 2 ** 30).toFixed(2)
    } GiB. ` +
    `Report: ${out}/report.html`;
}

async function compare(argv: string[]): Promise<void> {
  const { values, positionals } = args(argv, { out: { type: "string" } }, "compare: ");
  if (values.help) return console.log(USAGE);
  if (positionals.length < 2) {
    fail(`compare: expected at least two report directories, got ${positionals.length}`);
  }
  const paths = positionals.map((dir) =>
    dir.endsWith(".json") ? dir : `${dir.replace(/\/$/, "")}/report.json`
  );
  const names = runNames(paths);
  const list: Named[] = [];
  for (const [i, path] of paths.entries()) {
    let report: unknown;
    try {
      report = JSON.parse(await Deno.readTextFile(path));
    } catch (e) {
      fail(`compare: cannot read ${path}: ${(e as Error).message}`);
    }
    const problems = reportProblems(report);
    if (problems.length) {
      const shown = problems.length > 6 ? [...problems.slice(0, 5), `${problems.length - 5} more`] : problems;
      fail(`compare: ${path} is not a simulation report (${shown.join("; ")})`);
    }
    list.push({ name: names[i], report: report as Report });
  }
  const out = values.out as string | undefined;
  if (out) await prepareOut(out, ["compare.json", "compare.html"]);
  const comparison = compareReports(list);
  console.log(comparisonText(comparison));
  if (out) {
    // Both rendered before either is written: a report the page cannot show leaves no compare.json alone.
    const json = JSON.stringify(comparison, null, 2) + "\n";
    const html = renderComparison(list, await uplotAssets());
    await Deno.writeTextFile(`${out}/compare.json`, json);
    await Deno.writeTextFile(`${out}/compare.html`, html);
    console.log(`Comparison: ${out}/compare.html`);
  }
}

/**
 * The names compared runs go by, told apart: a report.json by its directory, another file by its name, a
 * directory such as "." or "../b" by its real name. Names alike take their parent directories until they
 * differ ("x/a", "y/a"); the same report given twice is numbered ("a", "a (2)").
 */
export function runNames(reportPaths: string[], cwd = Deno.cwd()): string[] {
  const parts = reportPaths.map((p) => {
    const segments = resolve(cwd, p).split("/").filter((x) => x !== "");
    return segments.at(-1) === "report.json" ? segments.slice(0, -1) : segments;
  });
  const full = parts.map((p) => p.join("/"));
  const tail = (p: string[], depth: number) => p.slice(-depth).join("/");
  const names = parts.map((p, i) => {
    for (let depth = 1; depth <= p.length; depth++) {
      const name = tail(p, depth);
      if (parts.every((q, j) => full[j] === full[i] || tail(q, depth) !== name)) return name;
    }
    return `/${full[i]}`;
  });
  return names.map((n, i) => (names.indexOf(n) !== i ? `${n} (${i + 1})` : n));
}

async function planCommand(argv: string[]): Promise<void> {
  const { values, positionals } = args(argv, {
    vary: { type: "string" },
    target: { type: "string" },
    seed: { type: "string", default: "1" },
    workers: { type: "string", default: String(Math.min(2, navigator.hardwareConcurrency || 1)) },
    resolution: { type: "string" },
    out: { type: "string" },
  }, "plan: ");
  if (values.help) return console.log(USAGE);
  if (positionals.length !== 1) fail(`plan: expected one scenario file, got ${positionals.length}\n${USAGE}`);
  if (!values.vary || !values.target) fail(`plan: --vary and --target are required\n${USAGE}`);
  const file = positionals[0];
  const loaded = await load(file);
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1) {
    fail(`--workers: got "${values.workers}", expected a positive integer`);
  }
  const resolution = values.resolution === undefined ? undefined : Number(values.resolution);
  if (resolution !== undefined && !(resolution > 0)) {
    fail(`--resolution: got "${values.resolution}", expected a positive number`);
  }
  const seed = seedOf(values.seed);
  const options: PlanOptions = {
    loaded,
    vary: values.vary as string,
    target: values.target as string,
    seed,
    workers,
    resolution,
    // Each run's line as it finishes: a long plan shows its progress, and Ctrl-C keeps what it shows.
    onRun: (p) => {
      console.error(
        `  ${values.vary!.toString().split("=")[0]}=${p.value}: ${
          p.error ??
            `${p.atLeast ? "over " : ""}${p.metric} (${p.met ? "meets" : "misses"} target${
              p.atLeast ? ": the drain was not over by the end" : ""
            })`
        }`,
      );
    },
  };
  // Refuses a bad range, path or target, and a range some of whose values make the scenario invalid,
  // before any worker starts or any file is written: a failing variant would otherwise read as a miss.
  let prepared;
  try {
    prepared = preparePlan(options);
  } catch (e) {
    fail(`plan: ${(e as Error).message}`);
  }
  const out = values.out as string | undefined;
  if (out) await prepareOut(out, ["plan.json", "plan.html"]);
  // Ctrl-C stops the runs under way and keeps those done: a partial plan, as a sim run's partial report.
  // A second one, should writing it hang, ends the process at once.
  const interrupt = new AbortController();
  const onSigint = () => interrupt.signal.aborted ? Deno.exit(130) : interrupt.abort();
  Deno.addSignalListener("SIGINT", onSigint);
  let outcome;
  try {
    outcome = await plan({ ...options, signal: interrupt.signal }, prepared);
  } catch (e) {
    // A run that failed is not the operator's mistake (exit 2): the plan could not be answered (exit 1).
    if (e instanceof PlanRunFailed) {
      console.error(`plan: ${e.message}`);
      Deno.exit(1);
    }
    fail(`plan: ${(e as Error).message}`);
  }
  console.log(outcome.note);
  console.log("value\tmetric\tmeets");
  for (const p of outcome.points) {
    console.log(`${p.value}\t${p.atLeast ? ">" : ""}${p.metric ?? p.error}\t${p.met}`);
  }
  if (outcome.warning) console.error(`warning: ${outcome.warning}`);
  if (out) {
    await Deno.writeTextFile(`${out}/plan.json`, JSON.stringify(outcome, null, 2) + "\n");
    await Deno.writeTextFile(`${out}/plan.html`, renderPlan(outcome, await uplotAssets()));
    console.log(`Plan: ${out}/plan.html`);
  }
  Deno.removeSignalListener("SIGINT", onSigint);
  // Stopped by Ctrl-C: a script running the plan should be able to tell the plan is partial.
  if (outcome.partial) {
    const written = out ? `: the runs done are in ${out}/plan.json, marked partial` : "";
    console.error(`plan: interrupted: partial plan, no answer${written}`);
    Deno.exit(130);
  }
}

if (import.meta.main) await main(Deno.args);
