/**
 * The job archiver (Peloton's `archiver` daemon): batch jobs that ended long ago are exported and then
 * deleted with their tasks, events and updates, so a long-running cluster's store and job manager memory
 * stay bounded. Peloton ran it as its own process calling the API every 24 hours, for jobs completed at
 * least 30 days before, at most 5,000 a run, streaming their configs to Kafka; here each job manager
 * archives the jobs it drives, through the Store port, and hands each job to an `ArchiveSink` first.
 */
import type { JobRecord } from "../model/records.ts";
import { isTerminalJobState, type JobState } from "../model/states.ts";
import type { ArchivedJob, ArchiveSink } from "../ports/archive.ts";
import type { TimerId } from "../ports/clock.ts";
import type { JobManager } from "./jobmgr.ts";

const DAY_MS = 86_400_000;

export interface ArchiverConfig {
  /** Batch jobs that completed longer ago than this are archived (Peloton: 30 days); 0 turns it off. */
  retentionMs: number;
  /** Time between runs (Peloton: 24 hours). */
  periodMs: number;
  /** Most jobs one run archives (Peloton: 5,000). */
  maxJobsPerRun: number;
  /**
   * A run that archived `maxJobsPerRun` jobs left more behind: the next one comes this soon, not a period
   * later, so a backlog (an archiver turned on over a year of jobs) drains in minutes, in bounded runs.
   */
  backlogDelayMs: number;
  /** The first run, after the job manager starts. */
  initialDelayMs: number;
}

export const DEFAULT_ARCHIVER_CONFIG: ArchiverConfig = {
  retentionMs: 30 * DAY_MS,
  periodMs: DAY_MS,
  maxJobsPerRun: 5000,
  backlogDelayMs: 60_000,
  initialDelayMs: 60_000,
};

export interface ArchiverDeps {
  sink: ArchiveSink;
  /** Whether this job manager drives a job (its shard is held here); all of them when absent. */
  owns?: (jobId: string) => boolean;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** What one run did. */
export interface ArchiveRun {
  /** Jobs exported and deleted. */
  archived: string[];
  /** Jobs found old enough but left, as something changed them since they were read (or their delete failed). */
  skipped: string[];
  /** Why the run stopped early, if it did (the store or the sink failed, or a Write lockdown). */
  error?: string;
}

const TERMINAL: JobState[] = ["SUCCEEDED", "FAILED", "KILLED", "DELETED"];
/** Jobs read per store query while looking for old ones. */
const PAGE = 500;
/** Jobs exported and deleted together. */
const CHUNK = 50;

/**
 * Only BATCH jobs are archived: a stopped stateless or daemon job can be started again, so its age says
 * nothing about whether its owner is done with it.
 */
export class JobArchiver {
  #timer?: TimerId;
  #running?: Promise<ArchiveRun>;
  #stopped = true;
  #closed = false;

  constructor(readonly jm: JobManager, readonly config: ArchiverConfig, readonly deps: ArchiverDeps) {}

  start(): void {
    if (this.config.retentionMs <= 0 || !this.#stopped) return;
    this.#stopped = false;
    this.#schedule(this.config.initialDelayMs);
  }

  /** No more runs; resolves once a run in progress is over (it deletes nothing more). */
  async stop(): Promise<void> {
    this.#stopped = this.#closed = true;
    if (this.#timer !== undefined) this.jm.deps.clock.cancelTimer(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Runs once now (or joins the run in progress). */
  runOnce(): Promise<ArchiveRun> {
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
    return this.#running;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = this.jm.deps.clock.setTimer(delayMs, () => {
      this.#timer = undefined;
      this.runOnce().then((run) => {
        const backlog = !run.error && run.archived.length + run.skipped.length >= this.config.maxJobsPerRun;
        this.#schedule(backlog ? this.config.backlogDelayMs : this.config.periodMs);
      });
    });
  }

  async #run(): Promise<ArchiveRun> {
    const run: ArchiveRun = { archived: [], skipped: [] };
    const metrics = this.jm.deps.metrics;
    try {
      // Peloton's archiver deleted through the API, which a Write lockdown refuses.
      if (this.jm.locks.has("Write")) throw new Error("writes are locked down");
      const old = await this.#oldJobs(this.jm.now() - this.config.retentionMs);
      const store = this.jm.deps.store;
      // A chunk at a time: a run's tasks are never all in memory at once, and the deletes go to the store's
      // writer in slices, between which the job manager's own writes get their turn.
      for (let at = 0; at < old.length; at += CHUNK) {
        const chunk = old.slice(at, at + CHUNK);
        const records: ArchivedJob[] = [];
        for (const job of chunk) {
          if (this.#closed) throw new Error("stopped");
          records.push({ archivedAtMs: this.jm.now(), job, tasks: await store.getTasks(job.jobId) });
        }
        // Exported before anything is deleted: a job is never gone from both.
        await this.deps.sink.write(records);
        if (this.#closed) throw new Error("stopped");
        if (this.jm.locks.has("Write")) throw new Error("writes are locked down");
        await Promise.all(chunk.map((job) => this.#delete(job, run)));
      }
    } catch (e) {
      run.error = (e as Error).message;
    }
    metrics.counter("peloton_archiver_jobs_archived_total").inc(run.archived.length);
    const stopped = this.#closed && run.error === "stopped";
    const result = stopped ? "stopped" : run.error ? "failed" : "ok";
    metrics.counter("peloton_archiver_runs_total", { result }).inc();
    if (stopped) {
      this.deps.log?.("job archiver run stopped", { archived: run.archived.length });
    } else if (run.error) {
      this.deps.log?.("job archiver run failed", { error: run.error, archived: run.archived.length });
    } else if (run.archived.length || run.skipped.length) {
      this.deps.log?.("job archiver run", { archived: run.archived.length, skipped: run.skipped.length });
    }
    return run;
  }

  /** Batch jobs of this job manager that completed before `cutoffMs`, oldest first, at most a run's worth. */
  async #oldJobs(cutoffMs: number): Promise<JobRecord[]> {
    const out: JobRecord[] = [];
    const owns = this.deps.owns ?? (() => true);
    for (let offset = 0;; offset += PAGE) {
      // A stop waits for the run in progress: it reads no further.
      if (this.#closed) throw new Error("stopped");
      const { jobs } = await this.jm.deps.store.queryJobs({
        states: TERMINAL,
        order: [{ property: "completion_time", desc: false }],
        offset,
        limit: PAGE,
      });
      for (const job of jobs) {
        // Ascending completion time, those without one last: the first too recent ends the search.
        const done = job.runtime.completionTimeMs;
        if (done === undefined || done >= cutoffMs) return out;
        if (job.config.type !== "BATCH" || !owns(job.jobId)) continue;
        out.push(job);
        if (out.length >= this.config.maxJobsPerRun) return out;
      }
      if (jobs.length < PAGE) return out;
    }
  }

  /**
   * Deletes one exported job, unless the job manager holds it changed since it was read (a resize made it
   * run again): then it stays, and a later run exports it again once it has ended long enough.
   */
  #delete(job: JobRecord, run: ArchiveRun): Promise<void> {
    const held = this.jm.jobs.get(job.jobId);
    if (held && (held.runtime.version !== job.runtime.version || !isTerminalJobState(held.runtime.state))) {
      run.skipped.push(job.jobId);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.jm.deleteJob(job.jobId, (err) => {
        if (err) run.skipped.push(job.jobId);
        else run.archived.push(job.jobId);
        resolve();
      });
    });
  }
}
