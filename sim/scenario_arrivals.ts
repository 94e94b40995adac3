/** How much work a workload's arrivals bring over a run, and the bound past which a run cannot simulate it. */
import type { Distribution } from "./scenario_distribution.ts";
import type { Workload } from "./scenario_workload.ts";

/**
 * The most job arrivals a workload may be expected to bring over a run. Every arrival is an event on the
 * queue and a job in the store: far past this a run exhausts memory (a rate of 1e308 aborts V8 in seconds)
 * rather than answering. The largest shipped scenario (`peloton-scale.yaml`) brings about 35,000.
 */
export const MAX_EXPECTED_JOBS = 10_000_000;

/**
 * The most tasks (arrivals × mean instances a job asks for) a workload may be expected to bring over a run.
 * `peloton-scale.yaml`, an hour at Peloton's 1,000 launches a second, brings about 3,500,000.
 */
export const MAX_EXPECTED_TASKS = 100_000_000;

/** The jobs a workload is expected to bring over the run, and the tasks they ask for. */
interface Work {
  jobs: number;
  tasks: number;
}

/**
 * The jobs a workload is expected to bring over its arrival window (from `startSec` to `stopSec` or the run's
 * end, at most `maxJobs`), and the tasks they ask for. Infinity when nothing ends its arrivals (a run
 * without `durationSec`, the workload without `stopSec` or `maxJobs`: refused as endless elsewhere). A
 * trace's jobs are its file's (here 0); a job file's instance count is `fileInstances` once the file is
 * read (0 tasks until then); a daemon's tasks are one a host, not counted here.
 */
export function expectedWork(w: Workload, durationSec: number | undefined, fileInstances = 0): Work {
  if (w.trace) return { jobs: 0, tasks: 0 };
  const jobs = Math.min(arrivalJobs(w, durationSec), w.maxJobs ?? Infinity);
  const perJob = w.jobFile ? fileInstances : w.type === "DAEMON" ? 0 : tasksPerJob(w);
  return { jobs, tasks: jobs === 0 || perJob === 0 ? 0 : jobs * perJob };
}

/** The window's end: the workload's `stopSec` or the run's end, whichever is first. */
function windowEnd(w: Workload, durationSec: number | undefined): number {
  return Math.min(w.stopSec ?? Infinity, durationSec ?? Infinity);
}

/** Expected arrivals from `startSec` to the window's end, `maxJobs` aside. */
function arrivalJobs(w: Workload, durationSec: number | undefined): number {
  const start = w.startSec, end = windowEnd(w, durationSec);
  const seconds = Math.max(0, end - start);
  const a = w.arrival;
  if ("at" in a) return a.at.filter((t) => t >= start && t <= end).length;
  if ("ratePerSec" in a) return seconds === 0 ? 0 : a.ratePerSec * seconds;
  if ("bursts" in a) {
    const { everySec, jobs, firstAtSec } = a.bursts;
    const first = firstAtSec + Math.max(0, Math.ceil((start - firstAtSec) / everySec)) * everySec;
    if (first > end) return 0;
    return (Math.floor((end - first) / everySec) + 1) * jobs;
  }
  const d = a.diurnal;
  if (seconds === 0) return 0;
  if (!Number.isFinite(seconds)) return Infinity;
  // The rate's integral: mean × (seconds + amplitude × period/2π × (sin at the end − sin at the start)).
  const phase = (t: number) => Math.sin((2 * Math.PI * (t - d.peakAtSec)) / d.periodSec);
  const wave = (d.amplitude * d.periodSec / (2 * Math.PI)) * (phase(end) - phase(start));
  return d.meanPerSec * Math.max(0, seconds + wave);
}

/** The tasks a job asks for on average: its mean instance count, or what an elastic job grows to. */
function tasksPerJob(w: Workload): number {
  return Math.max(meanCount(w.instances), w.elastic?.maxInstances ?? 0);
}

/** A count distribution's mean (draws are rounded and at least 1: near enough for a bound). */
function meanCount(d: Distribution): number {
  if (typeof d === "number") return d;
  if ("fixed" in d) return d.fixed;
  if ("uniform" in d) return (d.uniform[0] + d.uniform[1]) / 2;
  if ("exponential" in d) return Math.max(1, d.exponential);
  if ("normal" in d) return Math.max(1, d.normal.mean);
  if ("lognormal" in d) return Math.max(1, d.lognormal.median * Math.exp(d.lognormal.sigma ** 2 / 2));
  const total = d.choice.reduce((sum, [, weight]) => sum + weight, 0);
  return d.choice.reduce((sum, [value, weight]) => sum + value * weight, 0) / total;
}

/** "4,166.667", "2.40e+14". */
function amount(n: number): string {
  return n < 1e15 ? n.toLocaleString("en-US", { maximumFractionDigits: 3 }) : n.toPrecision(3);
}

/** "about 2.40e+14", or "more than 1.8e+308" for a product past what a number holds. */
function about(n: number): string {
  return Number.isFinite(n) ? `about ${amount(n)}` : `more than ${Number.MAX_VALUE.toPrecision(2)}`;
}

/**
 * What is wrong with a workload's volume over the run: more job arrivals than MAX_EXPECTED_JOBS, reported at
 * the field that sets them (the rate, the diurnal mean, the bursts or `maxJobs`), or more tasks than
 * MAX_EXPECTED_TASKS, at the instance count (or `elastic.maxInstances`). A workload with no end to its
 * arrivals is left to the rule that refuses it as endless.
 */
export function volumeIssues(
  w: Workload,
  durationSec: number | undefined,
  fileInstances?: number,
): { path: (string | number)[]; message: string }[] {
  const { jobs, tasks } = expectedWork(w, durationSec, fileInstances);
  const arriving = arrivalJobs(w, durationSec);
  const seconds = windowEnd(w, durationSec) - w.startSec;
  if (w.maxJobs === undefined && seconds === Infinity) return [];
  const over = `over the ${amount(seconds)} s it arrives in`;
  if (jobs > MAX_EXPECTED_JOBS) {
    const bound = `at most ${amount(MAX_EXPECTED_JOBS)} jobs over the run, what a run can simulate`;
    if (w.maxJobs !== undefined && w.maxJobs < arriving) {
      return [{ path: ["maxJobs"], message: `expected ${bound}` }];
    }
    const a = w.arrival;
    const gives = `; it gives ${about(jobs)}`;
    if ("ratePerSec" in a) {
      const most = `at most ${amount(MAX_EXPECTED_JOBS / seconds)} a second ${over}`;
      return [{
        path: ["arrival", "ratePerSec"],
        message: `expected a rate giving ${bound} (${most})${gives}`,
      }];
    }
    if ("diurnal" in a) {
      const most = `about ${amount(MAX_EXPECTED_JOBS / seconds)} a second ${over}`;
      return [{
        path: ["arrival", "diurnal", "meanPerSec"],
        message: `expected a mean rate giving ${bound} (${most})${gives}`,
      }];
    }
    if ("bursts" in a) {
      return [{
        path: ["arrival", "bursts"],
        message:
          `expected bursts giving ${bound} (${a.bursts.jobs} jobs every ${a.bursts.everySec} s ${over})` +
          gives,
      }];
    }
    return [{ path: ["arrival", "at"], message: `expected ${bound}` }];
  }
  if (tasks > MAX_EXPECTED_TASKS) {
    const elastic = !w.jobFile && w.elastic !== undefined && w.elastic.maxInstances > meanCount(w.instances);
    const perJob = tasks / jobs;
    const field = w.jobFile ? "the job file's instanceCount" : elastic ? "elastic.maxInstances" : "instances";
    return [{
      path: w.jobFile ? ["jobFile"] : elastic ? ["elastic", "maxInstances"] : ["instances"],
      message: `expected at most ${amount(MAX_EXPECTED_TASKS)} tasks over the run, what a run can simulate ` +
        `(at most ${amount(MAX_EXPECTED_TASKS / jobs)} a job for the ${amount(jobs)} jobs its arrivals ` +
        `give); ${amount(jobs)} jobs × ${amount(perJob)} (${field}${
          elastic || w.jobFile ? "" : ", on average"
        }) ` +
        `is ${about(tasks)}`,
    }];
  }
  return [];
}
