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

export interface TraceTask {
  /** The task index in the trace. */
  index: number;
  /** How long its last run took, from its last SCHEDULE (or its SUBMIT) to FINISH, FAIL or KILL. */
  durationSec: number | undefined;
  /** 0 for FINISH, 1 for FAIL, 143 (SIGTERM) for KILL; undefined when the trace never ends it. */
  exitCode: number | undefined;
}

export interface TraceJob {
  jobId: string;
  submitSec: number;
  tasks: TraceTask[];
  /** The largest request among the job's tasks, as fractions of the largest machine. */
  cpu: number;
  memory: number;
  disk: number;
  priority: number;
  /** Tasks must run on different machines. */
  differentMachines: boolean;
}

export class TraceError extends Error {
  override readonly name = "TraceError";
}

interface TaskAcc {
  index: number;
  submitUs?: number;
  startUs?: number;
  endUs?: number;
  exitCode?: number;
}

interface JobAcc {
  submitUs: number;
  tasks: Map<number, TaskAcc>;
  cpu: number;
  memory: number;
  disk: number;
  priority: number;
  differentMachines: boolean;
}

/**
 * Parses `task_events` CSV text into jobs ordered by submission. Events with time 0 happened before
 * the trace window and count as time 0. Rows are checked: a bad row fails with its line number.
 */
export function parseTaskEvents(text: string, file = "task_events.csv"): TraceJob[] {
  const jobs = new Map<string, JobAcc>();
  let lineNo = 0;
  for (const raw of text.split("\n")) {
    lineNo++;
    const line = raw.trim();
    if (!line) continue;
    const f = line.split(",");
    if (f.length !== 13) {
      throw new TraceError(`${file}:${lineNo}: expected 13 columns (task_events of 2011), got ${f.length}`);
    }
    const timeUs = Number(f[0]), type = Number(f[5]), index = Number(f[3]);
    const jobId = f[2];
    if (
      !Number.isFinite(timeUs) || timeUs < 0 || !jobId || !Number.isInteger(index) || !(type in TYPE_NAMES)
    ) {
      throw new TraceError(
        `${file}:${lineNo}: expected a time in µs, a job ID, a task index and an event type 0-8, got "${line}"`,
      );
    }
    let job = jobs.get(jobId);
    if (!job) {
      job = {
        submitUs: Infinity,
        tasks: new Map(),
        cpu: 0,
        memory: 0,
        disk: 0,
        priority: 0,
        differentMachines: false,
      };
      jobs.set(jobId, job);
    }
    let task = job.tasks.get(index);
    if (!task) job.tasks.set(index, task = { index });
    if (f[8] !== "") job.priority = Math.max(job.priority, Number(f[8]));
    if (f[9] !== "") job.cpu = Math.max(job.cpu, Number(f[9]));
    if (f[10] !== "") job.memory = Math.max(job.memory, Number(f[10]));
    if (f[11] !== "") job.disk = Math.max(job.disk, Number(f[11]));
    if (f[12] === "1") job.differentMachines = true;
    switch (type) {
      case TRACE_EVENTS.SUBMIT:
        // Resubmissions after an eviction or failure are the scheduler's business here, not the trace's.
        if (task.submitUs === undefined) task.submitUs = timeUs;
        job.submitUs = Math.min(job.submitUs, timeUs);
        break;
      case TRACE_EVENTS.SCHEDULE:
        if (task.endUs === undefined) task.startUs = timeUs;
        break;
      case TRACE_EVENTS.FINISH:
      case TRACE_EVENTS.FAIL:
      case TRACE_EVENTS.KILL:
        if (task.endUs === undefined) {
          task.endUs = timeUs;
          task.exitCode = type === TRACE_EVENTS.FINISH ? 0 : type === TRACE_EVENTS.FAIL ? 1 : 143;
        }
        break;
    }
  }
  const out: TraceJob[] = [];
  for (const [jobId, j] of jobs) {
    const submitted = [...j.tasks.values()].filter((t) => t.submitUs !== undefined);
    if (!submitted.length) continue;
    submitted.sort((a, b) => a.index - b.index);
    out.push({
      jobId,
      submitSec: j.submitUs / 1e6,
      tasks: submitted.map((t) => ({
        index: t.index,
        durationSec: t.endUs === undefined
          ? undefined
          : Math.max(0, t.endUs - (t.startUs ?? t.submitUs!)) / 1e6,
        exitCode: t.exitCode,
      })),
      cpu: j.cpu,
      memory: j.memory,
      disk: j.disk,
      priority: j.priority,
      differentMachines: j.differentMachines,
    });
  }
  return out.sort((a, b) => a.submitSec - b.submitSec || (a.jobId < b.jobId ? -1 : 1));
}

const TYPE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(TRACE_EVENTS).map(([k, v]) => [v, k]),
);

/** A trace job as a Peloton batch job: requests scaled to the host class, Google's priority kept. */
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
    const value = `${w.name}-${n}`;
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

/** Each instance runs as long as its trace task ran (faster with `speedup`) and ends the same way. */
export function traceModel(job: TraceJob, spec: TraceSpec, group: UsageGroup): OutcomeModel {
  return (launch) => {
    const t = job.tasks[launch.instanceId];
    const sec = t?.durationSec ?? spec.openEndedSec;
    return {
      durationMs: Math.round((sec / spec.speedup) * 1000),
      exitCode: t?.exitCode ?? 0,
      usageGroup: group,
    };
  };
}
