/**
 * Google cluster-data 2011 `task_events` replay: the CSV's 13 columns (time in µs, missing info, job ID,
 * task index, machine ID, event type, user, scheduling class, priority, cpu, memory and disk requests as
 * fractions of the largest machine, different-machine restriction) become Peloton batch jobs.
 */
import type { OutcomeModel, UsageGroup } from "./cluster.ts";
import type { HostClass, Workload } from "./scenario.ts";
import type { TraceSpec } from "./scenario_workload.ts";

/** Event types of the 2011 trace. */
export const TRACE_EVENTS = {
  SUBMIT: 0,
  SCHEDULE: 1,
  EVICT: 2,
  FAIL: 3,
  FINISH: 4,
  KILL: 5,
  LOST: 6,
  UPDATE_PENDING: 7,
  UPDATE_RUNNING: 8,
} as const;

/**
 * A task as the replay runs it. A task of the trace may run several times (it FAILs, or is EVICTed or LOST,
 * is resubmitted and SCHEDULEd again): the replay runs its last run and ends it the way the trace's last
 * FINISH, FAIL or KILL ended the task. Earlier runs are left to the simulated scheduler, as evictions are.
 */
export interface TraceTask {
  /** The task index in the trace. */
  index: number;
  /**
   * How long its last run took, from its last SCHEDULE to that run's end (FINISH, FAIL or KILL, or an
   * EVICT or LOST before the task's final end). 0 for a task the trace ended before ever scheduling it
   * (see `endedPendingSec`). Undefined when the trace never ends the task, or scheduled it again after its
   * last end: it was still running, or waiting to, when the trace stops.
   */
  durationSec: number | undefined;
  /**
   * How the task ended in the trace, from its last FINISH, FAIL or KILL: 0 for FINISH, 1 for FAIL, 143
   * (SIGTERM) for KILL; undefined when `durationSec` is.
   */
  exitCode: number | undefined;
  /**
   * Set for a task the trace failed while it was still pending, never scheduled: the trace time (seconds)
   * it failed. It never ran in the trace, so the replay never runs it past that time: placed before it, the
   * task runs until then and fails; placed after it, it fails at once.
   */
  endedPendingSec?: number;
  /**
   * Set for a task the trace last ended with a KILL (pending or running): the trace time (seconds) of the
   * kill. The replay stops the task then through the job manager's API, as a user's kill: one still pending
   * leaves the queue and never runs, one running ends KILLED. Until then it runs (`exitCode` is 143 but
   * unused: the stop ends it, not an exit).
   */
  killedSec?: number;
  /**
   * Set for a task already running when the trace window opens (its last SCHEDULE at time 0, before the
   * window): its start is unknown, so the replay ends its run at the trace time it ended (`durationSec`
   * from time 0), not that long after the replay starts it.
   */
  runningBeforeWindow?: true;
}

/**
 * Tasks of a trace job that arrive together, submitted to the simulator as one Peloton batch job. A job of
 * the 2011 trace often gets tasks after its first ones (SUBMIT events of new task indexes minutes later):
 * each such lot arrives as its own job at its own SUBMIT time (`part` 1, 2, …), rather than every task at
 * the job's first SUBMIT. Tasks submitted within `ARRIVAL_WINDOW_SEC` of a lot's first SUBMIT join it, so a
 * job's first tasks, whose SUBMITs the trace spreads over a second or two, stay one job; they arrive with
 * the lot, at most that much before their own SUBMIT.
 */
export interface TraceJob {
  /** The trace's job ID, shared by the lots of one job. */
  jobId: string;
  /** 0 for the lot submitted with the job; 1, 2, … for tasks added to it later, in time order. */
  part: number;
  /** The lot's first SUBMIT (trace seconds). */
  submitSec: number;
  /** The lot's tasks, by task index: instance i of the submitted job replays `tasks[i]`. */
  tasks: TraceTask[];
  /** The largest request among the trace job's tasks (all its lots), as fractions of the largest machine. */
  cpu: number;
  memory: number;
  disk: number;
  priority: number;
  /** Tasks must run on different machines (from every task of the trace job, in any lot). */
  differentMachines: boolean;
}

/** How long after a lot's first SUBMIT a task's SUBMIT may come and the task still join the lot. */
export const ARRIVAL_WINDOW_SEC = 5;

export class TraceError extends Error {
  override readonly name = "TraceError";
}

/** One task's events so far, in time order. */
interface TaskAcc {
  index: number;
  submitUs?: number;
  /** The last SCHEDULE, and the end of the run it started (its first EVICT, FAIL, FINISH, KILL or LOST). */
  startUs?: number;
  runEndUs?: number;
  /** The last FINISH, FAIL or KILL and its exit code. */
  endUs?: number;
  exitCode?: number;
  /** SCHEDULEd after its last FINISH, FAIL or KILL: its final run has no end in the trace. */
  restarted?: boolean;
}

interface JobAcc {
  jobId: string;
  /** Its place among the jobs, in the order the file first names them. */
  at: number;
  tasks: Map<number, TaskAcc>;
  cpu: number;
  memory: number;
  disk: number;
  priority: number;
  differentMachines: boolean;
}

/** Column names of `task_events`, for messages (column numbers are these indexes + 1). */
const COLUMNS = [
  "timestamp",
  "missing info",
  "job ID",
  "task index",
  "machine ID",
  "event type",
  "user",
  "scheduling class",
  "priority",
  "CPU request",
  "memory request",
  "disk request",
  "different-machine constraint",
] as const;

const MAX_EVENT_TYPE = 8, MAX_SCHEDULING_CLASS = 3, MAX_PRIORITY = 11;
const INTEGER = "an integer";
const EVENT_TYPE = `an integer from 0 to ${MAX_EVENT_TYPE}`;
const SCHEDULING_CLASS = `an integer from 0 to ${MAX_SCHEDULING_CLASS}`;
const PRIORITY = `an integer from 0 to ${MAX_PRIORITY}`;

/**
 * Times at or past this (the trace's 2^63 − 1) mean "after the trace window": the event did not happen
 * within the trace, so it is left out (a task whose FINISH has this time never ends in the replay).
 */
export const AFTER_WINDOW_US = 2 ** 63 - 1;

/** The trace window opens 600 s in; time 0 is "before the window", where the cluster's earlier work sits. */
export const WINDOW_START_SEC = 600;

/** Rows a parser makes room for at first; it doubles them as a file goes on. */
const FIRST_ROWS = 1024;

/**
 * Parses `task_events` CSV into jobs ordered by submission (a job with tasks added later makes one
 * `TraceJob` per lot of them), a line at a time: a file of any size streams through it, never held whole
 * (`parseTaskEvents` for text in hand). Events with time 0 happened before the trace window and count as
 * time 0; those at 2^63 − 1 happened after it and are left out (see `AFTER_WINDOW_US`). Every field is
 * checked, in the file's order: a bad row fails with its line, column and what was expected. Timestamp, job
 * ID, task index and event type are mandatory; the real data leaves the other columns empty at times, and an
 * empty one is read as missing.
 *
 * A task's events are taken in time order, ties in the file's order: part files concatenated out of order,
 * or a row written late, read as they happened (a FINISH before its SCHEDULE in the file ends the run that
 * SCHEDULE started). Its last SCHEDULE and last FINISH, FAIL or KILL are the latest ones (see `TraceTask`).
 * The rows are not kept as text: each one's time, job, task and event type go into typed arrays, 21 bytes a
 * row, and `finish` takes those in time order.
 *
 * Only tasks with a SUBMIT event are replayed: one of the trace's part files holds the later events of
 * tasks submitted in an earlier part, and those are left out. A file in which no task at all is submitted
 * would replay nothing, so it is refused.
 */
export class TaskEventsParser {
  readonly #jobs = new Map<string, JobAcc>();
  readonly #jobList: JobAcc[] = [];
  // Per row, in the file's order: what the events need once the rows are in time order.
  #timesUs = new Float64Array(FIRST_ROWS);
  #jobOf = new Uint32Array(FIRST_ROWS);
  #taskOf = new Float64Array(FIRST_ROWS);
  #typeOf = new Uint8Array(FIRST_ROWS);
  #lineNo = 0;
  #rows = 0;
  #inOrder = true;

  constructor(readonly file = "task_events.csv") {}

  /** Lines read so far, empty ones included: the number of the last one. */
  get lines(): number {
    return this.#lineNo;
  }

  /** Takes the file's next line (without its "\n"); a bad row throws a TraceError naming it. */
  line(raw: string): void {
    this.#lineNo++;
    const line = raw.trim();
    if (!line) return;
    const f = line.split(",");
    if (f.length !== 13) {
      throw new TraceError(
        `${this.file} line ${this.#lineNo}: expected 13 columns (task_events of 2011), got ${f.length}`,
      );
    }
    // Not only integers: the bundled sample (tools/make_trace_sample.ts) has half-µs times.
    const timeUs = decimal(f[0]);
    if (!(timeUs >= 0)) this.#bad(0, "a time in µs (a number ≥ 0)", f[0]);
    this.#int(f, 1, Infinity, INTEGER);
    const jobId = f[2];
    this.#int(f, 2, Infinity, INTEGER, true);
    const index = this.#int(f, 3, Infinity, "an integer ≥ 0", true);
    this.#int(f, 4, Infinity, INTEGER);
    const type = this.#int(f, 5, MAX_EVENT_TYPE, EVENT_TYPE, true);
    this.#int(f, 7, MAX_SCHEDULING_CLASS, SCHEDULING_CLASS);
    const priority = this.#int(f, 8, MAX_PRIORITY, PRIORITY);
    const cpu = this.#fraction(f, 9), memory = this.#fraction(f, 10), disk = this.#fraction(f, 11);
    const spread = f[12];
    if (spread !== "" && spread !== "0" && spread !== "1") this.#bad(12, "0 or 1", spread);
    let job = this.#jobs.get(jobId);
    if (!job) {
      job = {
        jobId,
        at: this.#jobList.length,
        tasks: new Map(),
        cpu: 0,
        memory: 0,
        disk: 0,
        priority: 0,
        differentMachines: false,
      };
      this.#jobs.set(jobId, job);
      this.#jobList.push(job);
    }
    // Empty fields are -1, so they leave the job's largest value as it is.
    job.priority = Math.max(job.priority, priority);
    job.cpu = Math.max(job.cpu, cpu);
    job.memory = Math.max(job.memory, memory);
    job.disk = Math.max(job.disk, disk);
    if (spread === "1") job.differentMachines = true;
    const rows = this.#rows;
    if (rows === this.#timesUs.length) this.#grow();
    if (rows > 0 && timeUs < this.#timesUs[rows - 1]) this.#inOrder = false;
    this.#timesUs[rows] = timeUs, this.#jobOf[rows] = job.at, this.#taskOf[rows] = index;
    this.#typeOf[rows] = type;
    this.#rows++;
  }

  /** The jobs of the lines taken, in submission order; throws a TraceError when there is none. */
  finish(): TraceJob[] {
    const rows = this.#rows, file = this.file;
    if (!rows) throw new TraceError(`${file}: no task events (the file has no rows)`);
    const timesUs = this.#timesUs, jobOf = this.#jobOf, taskOf = this.#taskOf, typeOf = this.#typeOf;
    const order = Uint32Array.from({ length: rows }, (_, i) => i);
    // Stable: rows at the same time keep the file's order (a SUBMIT and a SCHEDULE in the same µs).
    if (!this.#inOrder) order.sort((a, b) => timesUs[a] - timesUs[b] || a - b);
    for (const row of order) {
      const timeUs = timesUs[row];
      // After the trace window: it did not happen within the trace (nor do the rows after it in time).
      if (timeUs >= AFTER_WINDOW_US) break;
      const job = this.#jobList[jobOf[row]];
      const index = taskOf[row], type = typeOf[row];
      let task = job.tasks.get(index);
      if (!task) job.tasks.set(index, task = { index });
      take(task, type, timeUs);
    }
    const out: TraceJob[] = [];
    for (const j of this.#jobList) out.push(...lots(j));
    if (!out.length) {
      throw new TraceError(
        `${file}: no task was ever submitted: none of its ${rows} ${rows === 1 ? "row is" : "rows are"} a ` +
          `SUBMIT event (event type ${TRACE_EVENTS.SUBMIT}), so there is no job to replay`,
      );
    }
    return out.sort((a, b) =>
      a.submitSec - b.submitSec || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : a.part - b.part)
    );
  }

  #grow(): void {
    const n = this.#timesUs.length * 2;
    const grown = <T extends Float64Array | Uint32Array | Uint8Array>(a: T, b: T): T => (b.set(a), b);
    this.#timesUs = grown(this.#timesUs, new Float64Array(n));
    this.#jobOf = grown(this.#jobOf, new Uint32Array(n));
    this.#taskOf = grown(this.#taskOf, new Float64Array(n));
    this.#typeOf = grown(this.#typeOf, new Uint8Array(n));
  }

  // Called only on a bad row, so the checks below stay a few comparisons per field.
  #bad(col: number, expected: string, got: string): never {
    const value = got === "" ? "an empty field" : `"${got}"`;
    throw new TraceError(
      `${this.file} line ${this.#lineNo}, column ${col + 1} (${
        COLUMNS[col]
      }): expected ${expected}, got ${value}`,
    );
  }

  /** A non-negative integer, or -1 for an empty optional field. */
  #int(f: string[], col: number, max: number, expected: string, mandatory = false): number {
    const s = f[col];
    if (s === "" && !mandatory) return -1;
    const v = digits(s);
    return v >= 0 && v <= max ? v : this.#bad(col, expected, s);
  }

  /** A request as a fraction of the largest machine, or -1 for an empty field. */
  #fraction(f: string[], col: number): number {
    const s = f[col];
    if (s === "") return -1;
    const v = decimal(s);
    return v >= 0 && v <= 1 ? v : this.#bad(col, "a number from 0 to 1", s);
  }
}

/** Parses `task_events` CSV text held whole (a file streams through `TaskEventsParser` instead). */
export function parseTaskEvents(text: string, file = "task_events.csv"): TraceJob[] {
  const parser = new TaskEventsParser(file);
  let from = 0;
  for (let nl = text.indexOf("\n"); nl >= 0; from = nl + 1, nl = text.indexOf("\n", from)) {
    parser.line(text.slice(from, nl));
  }
  parser.line(text.slice(from));
  return parser.finish();
}

/** One event of a task, taken in time order. */
function take(task: TaskAcc, type: number, timeUs: number): void {
  switch (type) {
    case TRACE_EVENTS.SUBMIT:
      // Resubmissions after an eviction or failure are the scheduler's business here, not the trace's.
      if (task.submitUs === undefined) task.submitUs = timeUs;
      break;
    case TRACE_EVENTS.SCHEDULE:
      task.startUs = timeUs;
      task.runEndUs = undefined;
      task.restarted = task.endUs !== undefined;
      break;
    case TRACE_EVENTS.FINISH:
    case TRACE_EVENTS.FAIL:
    case TRACE_EVENTS.KILL:
      task.endUs = timeUs;
      task.exitCode = type === TRACE_EVENTS.FINISH ? 0 : type === TRACE_EVENTS.FAIL ? 1 : 143;
      task.restarted = false;
      // falls through: the end of the task is the end of its run, if it was running
    case TRACE_EVENTS.EVICT:
    case TRACE_EVENTS.LOST:
      if (task.startUs !== undefined && task.runEndUs === undefined) task.runEndUs = timeUs;
      break;
  }
}

/**
 * A job's submitted tasks as lots that arrive together (`TraceJob`): in order of their first SUBMIT, a
 * task more than `ARRIVAL_WINDOW_SEC` after its lot's first starts the next lot.
 */
function lots(j: JobAcc): TraceJob[] {
  const submitted = [...j.tasks.values()].filter((t) => t.submitUs !== undefined);
  submitted.sort((a, b) => a.submitUs! - b.submitUs! || a.index - b.index);
  const out: TraceJob[] = [];
  let lot: TaskAcc[] = [];
  let firstUs = -Infinity;
  const close = () => {
    if (!lot.length) return;
    lot.sort((a, b) => a.index - b.index);
    out.push({
      jobId: j.jobId,
      part: out.length,
      submitSec: firstUs / 1e6,
      tasks: lot.map(replayed),
      cpu: j.cpu,
      memory: j.memory,
      disk: j.disk,
      priority: j.priority,
      differentMachines: j.differentMachines,
    });
  };
  for (const t of submitted) {
    if (t.submitUs! > firstUs + ARRIVAL_WINDOW_SEC * 1e6) {
      close();
      lot = [];
      firstUs = t.submitUs!;
    }
    lot.push(t);
  }
  close();
  return out;
}

/** How the replay runs a task: its last run, ended the way the trace last ended the task. */
function replayed(t: TaskAcc): TraceTask {
  if (t.endUs === undefined || t.restarted) {
    return { index: t.index, durationSec: undefined, exitCode: undefined };
  }
  const killed = t.exitCode === 143 ? { killedSec: t.endUs / 1e6 } : {};
  if (t.startUs === undefined) {
    if (t.exitCode === 143) return { index: t.index, durationSec: 0, exitCode: t.exitCode, ...killed };
    return { index: t.index, durationSec: 0, exitCode: t.exitCode, endedPendingSec: t.endUs / 1e6 };
  }
  const durationSec = Math.max(0, t.runEndUs! - t.startUs) / 1e6;
  return t.startUs === 0
    ? { index: t.index, durationSec, exitCode: t.exitCode, runningBeforeWindow: true, ...killed }
    : { index: t.index, durationSec, exitCode: t.exitCode, ...killed };
}

/**
 * The value of a string of ASCII digits, or -1 (a sign, a point, a space or nothing is not one). Past
 * 2^53 (job and machine IDs) it may be off in the last digits; those are kept as strings, not values.
 */
function digits(s: string): number {
  if (s === "") return -1;
  let v = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * A decimal such as `0.0625`, `.5` or `1e-5`, or NaN. Number() alone would read "" and " " as 0 and
 * accept "Infinity" and signs, so the first and last characters must be digits or a point.
 */
function decimal(s: string): number {
  if (s === "") return NaN;
  const a = s.charCodeAt(0), z = s.charCodeAt(s.length - 1);
  const ok = (a === 46 || (a >= 48 && a <= 57)) && (z === 46 || (z >= 48 && z <= 57));
  return ok ? Number(s) : NaN;
}

/** A trace job the replay submits, and when (simulated ms). */
export interface ReplayedJob {
  job: TraceJob;
  atMs: number;
}

/**
 * The jobs a replay submits, in order: those of the replayed window, at most `maxJobs` of them. Trace time
 * `trace.startSec` is simulated time 0, and `speedup` trace seconds pass per simulated second; the window
 * holds the jobs that then arrive from the workload's `startSec` to its `stopSec`, both included, and
 * before the run's end at `horizonMs` (an arrival at the end itself does not happen, as in `arrives`).
 * Jobs submitted at time 0, before the trace window, arrive when the replay starts if it starts by the
 * window's start (see `arrivalMs`). Jobs outside the window, before it in particular, are not replayed
 * (`leftOutBefore` says how many) and do not count against `maxJobs`. Tasks added to a job later (a lot of
 * `part` 1 or more) arrive in the window or not by their own time; `maxJobs` counts trace jobs, so the lots
 * of a job it took come in too.
 */
export function replayedJobs(jobs: TraceJob[], w: Workload, horizonMs: number): ReplayedJob[] {
  const startMs = w.startSec * 1000;
  const max = w.maxJobs ?? Infinity;
  const stopMs = w.stopSec !== undefined ? w.stopSec * 1000 : Infinity;
  const out: ReplayedJob[] = [];
  const taken = new Set<string>();
  for (const job of jobs) {
    const atMs = arrivalMs(job, w);
    // Jobs come in submission order: past the window's end, none of the rest is in it.
    if (atMs > stopMs || atMs >= horizonMs) break;
    if (atMs < startMs || (taken.size >= max && !taken.has(job.jobId))) continue;
    taken.add(job.jobId);
    out.push({ job, atMs });
  }
  return out;
}

/** The trace second a workload's replay starts at: `trace.startSec`, moved on by the workload's `startSec`. */
function replayStartSec(w: Workload): number {
  return w.trace!.startSec + w.startSec * w.trace!.speedup;
}

/**
 * When a trace job arrives (simulated ms; before the workload's `startSec` for one before its window). A job
 * submitted at time 0 was on the cluster before the trace window opened, at a time the trace does not give:
 * a replay that starts by the window's start (trace second 600) submits it as it starts, so it starts from
 * the cluster as the trace found it, long-running production tasks included.
 */
function arrivalMs(job: TraceJob, w: Workload): number {
  if (job.submitSec === 0 && replayStartSec(w) <= WINDOW_START_SEC) return w.startSec * 1000;
  return ((job.submitSec - w.trace!.startSec) / w.trace!.speedup) * 1000;
}

/**
 * What a workload leaves out of the trace for coming before its replayed window, as a warning, or undefined
 * when it leaves out nothing: those tasks' load is missing from the cluster the run starts with. Tasks of
 * time 0 (before the trace window) are named apart, with the start that would replay them.
 */
export function leftOutBefore(jobs: TraceJob[], w: Workload): string | undefined {
  const startMs = w.startSec * 1000;
  const ids = new Set<string>();
  let tasks = 0, early = 0;
  for (const job of jobs) {
    const atMs = arrivalMs(job, w);
    if (atMs >= startMs) {
      // In submission order: past the time-0 jobs, the rest of the window comes after these.
      if (job.submitSec !== 0) break;
      continue;
    }
    ids.add(job.jobId);
    tasks += job.tasks.length;
    if (job.submitSec === 0) early += job.tasks.length;
  }
  if (!tasks) return undefined;
  const start = w.startSec > 0
    ? `trace.startSec ${w.trace!.startSec}, the workload's startSec ${w.startSec} at trace.speedup ${
      w.trace!.speedup
    }`
    : `trace.startSec ${w.trace!.startSec}`;
  const of = `${tasks} ${tasks === 1 ? "task" : "tasks"} of ${ids.size} trace ${
    ids.size === 1 ? "job" : "jobs"
  }`;
  const before = early
    ? `; ${early} of them ${early === 1 ? "was" : "were"} on the cluster before the trace window (time 0), ` +
      `which a replay starting by trace second ${WINDOW_START_SEC} submits as it starts`
    : "";
  return `left out ${of} submitted before the replayed window, which starts at trace second ` +
    `${secs(replayStartSec(w))} (${start})${before}`;
}

/** When a trace workload stops submitting (ms): the run's end or the workload's `stopSec`, the earlier one. */
export function replayEndMs(w: Workload, horizonMs: number): number {
  return Math.min(horizonMs, w.stopSec !== undefined ? w.stopSec * 1000 : Infinity);
}

/**
 * Why a trace workload would replay none of the trace's jobs, or undefined when it replays some. The run
 * would load nothing and report an empty cluster, so this is refused; the message gives the window in
 * trace seconds, what sets it, and the trace seconds the jobs are submitted in, so the window can be moved.
 */
export function emptyWindow(
  jobs: TraceJob[],
  w: Workload,
  durationSec: number | undefined,
): string | undefined {
  const spec = w.trace!;
  const horizonMs = durationSec !== undefined ? durationSec * 1000 : Infinity;
  const endMs = replayEndMs(w, horizonMs);
  if (replayedJobs(jobs, w, horizonMs).length) return undefined;
  const from = spec.startSec + w.startSec * spec.speedup;
  const start = w.startSec > 0
    ? `trace.startSec ${spec.startSec}, the workload's startSec ${w.startSec}`
    : `trace.startSec ${spec.startSec}`;
  let window: string;
  if (endMs === Infinity) {
    window = w.startSec > 0
      ? `trace seconds ${secs(from)} on (${start} at trace.speedup ${spec.speedup})`
      : `trace seconds ${secs(from)} on (trace.startSec)`;
  } else {
    const end = endMs < horizonMs
      ? `the workload's stopSec ${w.stopSec}`
      : `the run's durationSec ${durationSec}`;
    window = `trace seconds ${secs(from)} to ${secs(spec.startSec + (endMs / 1000) * spec.speedup)} ` +
      `(${start}, then ${end} at trace.speedup ${spec.speedup})`;
  }
  const first = jobs[0].submitSec, last = jobs[jobs.length - 1].submitSec;
  // A job with tasks added later has a lot for each: the jobs are counted once.
  const count = new Set(jobs.map((j) => j.jobId)).size;
  const which = count === 1 ? "its one job is" : `its ${count} jobs are`;
  const when = first === last
    ? `at trace second ${secs(first)}`
    : `from trace second ${secs(first)} to ${secs(last)}`;
  return `the replayed window, ${window}, holds none of the trace's jobs: ${which} submitted ${when}; ` +
    "set trace.startSec (or the run's durationSec, the workload's startSec or stopSec) so that the window " +
    "holds some";
}

/** Trace seconds as the file has them, to the µs. */
function secs(x: number): string {
  return String(Math.round(x * 1e6) / 1e6);
}

/**
 * A trace job (one lot of its tasks) as a Peloton batch job: requests scaled to the host class, Google's
 * priority kept. The different-machine restriction is on a label the trace job's every lot carries, so
 * tasks added later keep off the machines of its earlier ones too, as the trace's restriction means.
 */
export function traceConfig(job: TraceJob, w: Workload, c: HostClass, n: number): Record<string, unknown> {
  const task: Record<string, unknown> = {
    resource: {
      cpuLimit: Math.max(0.01, Math.round(job.cpu * c.cpu * 1000) / 1000),
      memLimitMb: Math.max(1, Math.round(job.memory * c.memoryMb)),
      diskLimitMb: Math.round(job.disk * c.diskMb),
      gpuLimit: 0,
    },
    command: { shell: true, value: `trace job ${job.jobId}` },
  };
  if (job.differentMachines) {
    const value = `${w.name}-trace-job-${job.jobId}`;
    task.labels = [{ key: "sim.job", value }];
    task.constraint = {
      type: "LABEL_CONSTRAINT",
      labelConstraint: {
        kind: "TASK",
        condition: "LESS_THAN",
        label: { key: "sim.job", value },
        requirement: 1,
      },
    };
  }
  return {
    name: `${w.name}-${n}`,
    type: "BATCH",
    owner: "trace",
    owningTeam: w.name,
    instanceCount: job.tasks.length,
    // Google's production band (priority 9 and up) was not preempted.
    sla: { priority: job.priority, preemptible: job.priority < 9 },
    defaultConfig: task,
  };
}

/**
 * Each instance runs as long as its trace task's last run (faster with `speedup`) and ends the same way.
 * A task the trace failed while still pending runs, if placed before that time, until then (the simulated
 * time `startSec` and `speedup` make of it), and otherwise fails as soon as it starts; so does one already
 * running before the trace window, until the time its run ended. A task the trace killed (`killedSec`)
 * runs until the replay stops it at the kill's time (`traceStops`), not for a time of its own.
 */
export function traceModel(job: TraceJob, spec: TraceSpec, group: UsageGroup): OutcomeModel {
  return (launch, _prng, runsAtMs) => {
    const t = job.tasks[launch.instanceId];
    const untilMs = (sec: number) =>
      Math.max(0, Math.round(((sec - spec.startSec) / spec.speedup) * 1000) - runsAtMs);
    const durationMs = t?.killedSec !== undefined
      ? Infinity
      : t?.endedPendingSec !== undefined
      ? untilMs(t.endedPendingSec)
      : t?.runningBeforeWindow && t.durationSec !== undefined
      ? untilMs(t.durationSec)
      : Math.round(((t?.durationSec ?? spec.openEndedSec) / spec.speedup) * 1000);
    return { durationMs, exitCode: t?.exitCode ?? 0, usageGroup: group };
  };
}

/** Instances of a lot stopped at one time (simulated ms), as the trace killed them. */
export interface TraceStop {
  atMs: number;
  instances: number[];
}

/**
 * When the replay stops a lot's instances the trace killed (`killedSec`), in time order, those killed at
 * the same time together: the simulated time `startSec` and `speedup` make of the kill, or, for a kill
 * before the replay's start (a task of time 0 killed then), as soon as the job is in.
 */
export function traceStops(job: TraceJob, spec: TraceSpec): TraceStop[] {
  const byMs = new Map<number, number[]>();
  job.tasks.forEach((t, i) => {
    if (t.killedSec === undefined) return;
    const atMs = Math.max(0, Math.round(((t.killedSec - spec.startSec) / spec.speedup) * 1000));
    const list = byMs.get(atMs);
    if (list) list.push(i);
    else byMs.set(atMs, [i]);
  });
  return [...byMs].sort(([a], [b]) => a - b).map(([atMs, instances]) => ({ atMs, instances }));
}
