/** `peloton job ...`: create, get, status, stop, validate, and the debug calls refresh, cache and active-list. */
import { stringify } from "yaml";
import { loadJobConfig } from "../../core/model/load.ts";
import {
  isTerminalJobState,
  isTerminalTaskState,
  type JobState,
  type TaskState,
} from "../../core/model/states.ts";
import { ApiError } from "./client.ts";
import type { Command, CommandContext } from "./command.ts";
import { UsageError, wholeNumber } from "./command.ts";
import { loadConfigFile } from "./config_file.ts";
import { table } from "./format.ts";

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const RESPOOL = "peloton.api.respool.ResourceManager";

/** Looks up a pool's id from its path, as Peloton's CLI does before job and pool calls. */
export async function respoolId(ctx: CommandContext, path: string): Promise<string> {
  if (!path.startsWith("/")) throw new UsageError(`RESPOOL: got "${path}", expected a path starting with /`);
  const res = await ctx.client.call<{ id: { value: string } }>(`${RESPOOL}::LookupResourcePoolID`, {
    path: { value: path },
  });
  return res.id.value;
}

type JobInfo = { id: { value: string }; config: Record<string, unknown>; runtime: Record<string, unknown> };

type Label = { key: string; value: string };

/** `-l/--labels k=v,k2=v2` (Peloton's label flag) → labels. */
export function parseLabels(v: string): Label[] {
  return v.split(",").map((kv) => {
    const i = kv.indexOf("=");
    if (i <= 0) throw new UsageError(`--labels: got "${kv}", expected KEY=VALUE`);
    return { key: kv.slice(0, i), value: kv.slice(i + 1) };
  });
}

/** States of a job that can still be stopped, as Peloton's `job stop --owner` queries them. */
const ACTIVE_STATES = ["INITIALIZED", "PENDING", "RUNNING"];

type Summary = {
  id: { value: string };
  name: string;
  owningTeam?: string;
  runtime: { state: string; goalState?: string };
};

/** What `-n/--limit` or `-q/--total` of 0 stands for: 100, each flag's default (a server reads 0 as its own). */
const STOP_DEFAULT_CAP = 100;

/**
 * Whether JOB's config passes `job stop`'s --owner and --labels, as Peloton's JobStopAction checks them: the
 * owner against the job's owning team, and ANY one given label being among the job's (its keys and values
 * trimmed) is enough.
 */
function matchesStopFilter(
  config: { owningTeam?: string; labels?: Label[] },
  owner: string | undefined,
  labels: Label[] | undefined,
): boolean {
  if (owner !== undefined && (config.owningTeam ?? "") !== owner) return false;
  if (labels === undefined) return true;
  return (config.labels ?? []).some((x) =>
    labels.some((l) => l.key === x.key.trim() && l.value === x.value.trim())
  );
}

/**
 * The jobs `job stop` acts on: JOB (checked against --owner and --labels when they are given too, as
 * Peloton's CLI does, and skipped when it has ended: `terminal` is then its state), or the first `cap`
 * active jobs matching --owner and --labels, with how many matched.
 */
async function jobsToStop(
  ctx: CommandContext,
  job: string | undefined,
  owner: string | undefined,
  labels: Label[] | undefined,
  cap: number,
): Promise<{ jobs: string[]; query?: Summary[]; matched?: number; terminal?: string; noMatch?: true }> {
  if (job !== undefined) {
    // Peloton's JobStopAction gets the job first, whatever the flags, to leave a job that has ended alone.
    const res = await ctx.client.call<{
      jobInfo: {
        config: { owningTeam?: string; labels?: Label[] };
        runtime: { state: JobState; goalState?: JobState };
      };
    }>(`${JOB}::Get`, { id: { value: job } });
    if (!matchesStopFilter(res.jobInfo.config, owner, labels)) return { jobs: [], noMatch: true };
    const { state, goalState } = res.jobInfo.runtime;
    // A job has ended when its goal has too: a service whose instances all failed reads FAILED while its
    // goal, RUNNING, restarts them (a crash loop), and stopping it is what ends it.
    if (isTerminalJobState(state) && (goalState === undefined || isTerminalJobState(goalState))) {
      return { jobs: [], terminal: state };
    }
    return { jobs: [job] };
  }
  // Peloton's CLI sends {limit, maxLimit} and its store counts no further than maxLimit, so a stop capped
  // at --total cannot tell that more matched. The same page is asked for without maxLimit, so that
  // `pagination.total` counts every match.
  const query = (jobStates: string[], pagination: { limit: number; offset?: number }) => {
    const spec: Record<string, unknown> = { jobStates, pagination };
    if (owner !== undefined) spec.owner = owner;
    if (labels !== undefined) spec.labels = labels;
    return ctx.client.call<{ results: Summary[]; pagination?: { total?: number } }>(
      `${JOB}::Query`,
      { spec, summaryOnly: true },
    );
  };
  const res = await query(ACTIVE_STATES, { limit: cap });
  const crashLooping = await crashLoopingJobs(query);
  const results = [...res.results.slice(0, cap), ...crashLooping].slice(0, cap);
  return {
    jobs: results.map((r) => r.id.value),
    query: results,
    matched: Math.max(res.pagination?.total ?? 0, Math.min(res.results.length, cap)) + crashLooping.length,
  };
}

/** How many FAILED jobs `crashLoopingJobs` reads a page. */
const FAILED_PAGE = 500;

/**
 * The FAILED jobs whose goal is still to run (services in a crash loop, restarting their failed instances):
 * they have not ended, so `job stop --owner` stops them too, as `job stop JOB` does. Peloton's CLI asked for
 * the active states alone and so left them running; every FAILED job is read, a page at a time, since a
 * query cannot ask for a goal state.
 */
async function crashLoopingJobs(
  query: (
    jobStates: string[],
    pagination: { limit: number; offset: number },
  ) => Promise<{ results: Summary[]; pagination?: { total?: number } }>,
): Promise<Summary[]> {
  const found: Summary[] = [];
  for (let offset = 0;; offset += FAILED_PAGE) {
    const page = await query(["FAILED"], { limit: FAILED_PAGE, offset });
    for (const j of page.results) {
      const goal = j.runtime.goalState;
      if (goal !== undefined && !isTerminalJobState(goal as JobState)) found.push(j);
    }
    if (page.results.length < FAILED_PAGE) return found;
  }
}

/**
 * The warning of a stop cut short by -n/--limit or -q/--total: how many of the matching jobs it stopped,
 * which flags stopped it, and how to stop the rest ("stopped 100 of 250 matching jobs (--limit 100, --total
 * 100); run again, or pass --limit 250 --total 250, to stop the rest"). Run again, it finds the rest: a
 * stopped job is KILLING, no longer active.
 */
function partialStopWarning(stopped: number, matched: number, limit: number, total: number): string {
  const binding = [limit < matched ? `--limit ${limit}` : "", total < matched ? `--total ${total}` : ""]
    .filter(Boolean);
  const pass = [limit < matched ? `--limit ${matched}` : "", total < matched ? `--total ${matched}` : ""]
    .filter(Boolean);
  return `peloton job stop: stopped ${stopped} of ${matched} matching jobs (${binding.join(", ")}); ` +
    `run again, or pass ${pass.join(" ")}, to stop the rest`;
}

/** How often `job stop --progress` reads a stopping job, and for how long at most (Peloton's 10 minutes). */
const PROGRESS_POLL_MS = 1000;
const PROGRESS_TIMEOUT_MS = 10 * 60_000;

/**
 * How many of a job's tasks have ended, of its instance count, as Peloton's `job stop --progress` counts
 * them: every one once the job has ended.
 */
async function tasksTerminated(
  ctx: CommandContext,
  job: string,
): Promise<{ total: number; terminated: number }> {
  const res = await ctx.client.call<{
    jobInfo: {
      config: { instanceCount: number };
      runtime: { state: JobState; taskStats?: Record<string, number> };
    };
  }>(`${JOB}::Get`, { id: { value: job } });
  const total = res.jobInfo.config.instanceCount;
  if (isTerminalJobState(res.jobInfo.runtime.state)) return { total, terminated: total };
  const terminated = Object.entries(res.jobInfo.runtime.taskStats ?? {})
    .filter(([state]) => isTerminalTaskState(state as TaskState))
    .reduce((sum, [, n]) => sum + n, 0);
  return { total, terminated };
}

/**
 * `job stop --progress`: waits until every task of `job` has ended, printing how many have as it changes
 * and Peloton's "Job J stopped, total_tasks:N terminated_tasks:N"; false (said on stderr) when 10 minutes
 * pass first.
 */
async function waitStopped(ctx: CommandContext, job: string): Promise<boolean> {
  const deadline = Date.now() + PROGRESS_TIMEOUT_MS;
  let shown = -1;
  for (;;) {
    const { total, terminated } = await tasksTerminated(ctx, job);
    if (terminated >= total) {
      if (!ctx.json) ctx.out(`Job ${job} stopped, total_tasks:${total} terminated_tasks:${terminated}`);
      return true;
    }
    if (Date.now() >= deadline) {
      ctx.err(
        `peloton job stop: timed out waiting for job ${job} to stop: ${terminated} of ${total} tasks ` +
          `terminated after ${PROGRESS_TIMEOUT_MS / 60_000} minutes`,
      );
      return false;
    }
    if (terminated !== shown && !ctx.json) ctx.out(`Job ${job} terminated/total: ${terminated}/${total}`);
    shown = terminated;
    await new Promise((r) => setTimeout(r, PROGRESS_POLL_MS));
  }
}

/** Peloton's `--opaque-data TEXT`: the caller's own data, kept with the workflow the command makes or changes. */
export const OPAQUE_FLAG = { "opaque-data": { type: "string" } } as const;

/** A request's `opaqueData` from `--opaque-data`, to spread into its body. */
export function opaqueFlag(opts: Record<string, unknown>): { opaqueData?: { data: string } } {
  return opts["opaque-data"] === undefined ? {} : { opaqueData: { data: String(opts["opaque-data"]) } };
}

/** Peloton's `--secret-path P --secret-data D`: one secret, its data given as text and sent in base64. */
export const SECRET_FLAGS = {
  "secret-path": { type: "string" },
  "secret-data": { type: "string" },
} as const;

/** A request's `secrets` from `--secret-path` and `--secret-data` (both or neither). */
export function secretsFlag(
  opts: Record<string, unknown>,
): { path: string; value: { data: string } }[] | undefined {
  const path = opts["secret-path"], data = opts["secret-data"];
  if (path === undefined && data === undefined) return undefined;
  if (path === undefined || String(path) === "") {
    throw new UsageError("--secret-path: expected the path to write the secret at, with --secret-data");
  }
  if (data === undefined) throw new UsageError("--secret-data: expected the secret, with --secret-path");
  const bytes = new TextEncoder().encode(String(data));
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return [{ path: String(path), value: { data: btoa(text) } }];
}

/**
 * Codes after which a call's outcome is unknown: no answer in time, a lost connection, a server that could
 * not say. The server may have carried it out, or still be carrying it out (a write it accepted is retried
 * until stored), so a create sent again may make a second job.
 */
const OUTCOME_UNKNOWN: ReadonlySet<string> = new Set([
  "deadline-exceeded",
  "unavailable",
  "unknown",
  "internal",
]);

/**
 * The id a create sends: `-i/--jobID` as given, else a new random UUID (v4, lower case, as the API takes one).
 * Picked here rather than by the server, so a create whose answer was lost can be sent again with the same id,
 * which the server refuses as already existing instead of creating a second job.
 */
export function jobIdToCreate(opts: Record<string, unknown>): string {
  return opts.jobID ? String(opts.jobID) : crypto.randomUUID();
}

/**
 * Sends `create` (a job create with the id `jobId`); its answer, or undefined (exit 1) once an error was
 * said. After one that leaves the outcome unknown, it says which job may still be created and how to check
 * or retry without making a second one. `get` is the command that shows the job.
 */
/** The job manager's refusal while an operator has its API locked down (AdminService Lockdown). */
const LOCKED_DOWN = /^All (read|write) APIs are locked down$/;

export async function createOnce<T>(
  ctx: CommandContext,
  command: string,
  jobId: string,
  get: string,
  create: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await create();
  } catch (e) {
    // An ApiError with a definite answer (invalid config, already exists) means nothing was created.
    if (e instanceof ApiError && !OUTCOME_UNKNOWN.has(e.code)) throw e;
    // Refused before any job manager got it (none runs, a daemon stopping): nothing was done either.
    if (e instanceof ApiError && e.notHandled) throw e;
    // A lockdown refuses before anything is done, under Peloton's `internal` code: a definite answer too.
    if (e instanceof ApiError && e.code === "internal" && LOCKED_DOWN.test(e.detail)) throw e;
    // Anything else (an answer cut off while read) also leaves the outcome unknown.
    ctx.err(`peloton ${command}: ${(e as Error).message}`);
    ctx.err(
      `peloton ${command}: job ${jobId} may still be created: check with \`peloton ${get} ${jobId}\`, ` +
        `or run the same command with -i ${jobId} (a retry of a job that was created is refused as already ` +
        "existing)",
    );
    return undefined;
  }
}

export const jobCommands: Command[] = [
  {
    name: "job create",
    args: ["RESPOOL", "FILE"],
    summary: "create a job from a YAML config in a leaf resource pool; prints the new job id " +
      "(-i ID: the job's id, a new random UUID without it; a create left unanswered is sent again with -i " +
      "ID, which cannot make a second job; --secret-path P --secret-data D: a secret written at P in each " +
      "of its tasks)",
    options: { jobID: { type: "string", short: "i" }, ...SECRET_FLAGS },
    async run(ctx, [respool, file], opts) {
      const secrets = secretsFlag(opts);
      const config = await loadConfigFile(ctx, file, loadJobConfig);
      if (!config) return 1;
      const id = await respoolId(ctx, respool);
      const jobId = jobIdToCreate(opts);
      const body: Record<string, unknown> = {
        id: { value: jobId },
        config: { ...config, respoolID: { value: id } },
      };
      if (secrets) body.secrets = secrets;
      const res = await createOnce(
        ctx,
        "job create",
        jobId,
        "job get",
        () => ctx.client.call<{ jobId: { value: string } }>(`${JOB}::Create`, body),
      );
      if (!res) return 1;
      ctx.out(ctx.json ? JSON.stringify(res) : `Job ${res.jobId.value} created`);
      return 0;
    },
  },
  {
    name: "job get",
    args: ["JOB"],
    summary: "print a job's config and runtime",
    async run(ctx, [job]) {
      const res = await ctx.client.call<{ jobInfo: JobInfo; secrets?: unknown[] }>(`${JOB}::Get`, {
        id: { value: job },
      });
      // A job's secrets by id and path (the API never answers their data).
      const shown = res.secrets ? { ...res.jobInfo, secrets: res.secrets } : res.jobInfo;
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : stringify(shown).trimEnd());
      return 0;
    },
  },
  {
    name: "job status",
    args: ["JOB"],
    summary: "print a job's state, goal state and task counts",
    async run(ctx, [job]) {
      const res = await ctx.client.call<{ jobInfo: JobInfo }>(`${JOB}::Get`, { id: { value: job } });
      const rt = res.jobInfo.runtime;
      if (ctx.json) {
        ctx.out(JSON.stringify(rt, null, 2));
        return 0;
      }
      const stats = Object.entries((rt.taskStats ?? {}) as Record<string, number>)
        .filter(([, n]) => n > 0)
        .map(([s, n]) => `${s}: ${n}`)
        .join(", ");
      ctx.out(
        stringify({
          state: rt.state,
          goalState: rt.goalState,
          creationTime: rt.creationTime,
          startTime: rt.startTime,
          completionTime: rt.completionTime,
          tasks: stats,
        }).trimEnd(),
      );
      return 0;
    },
  },
  {
    name: "job refresh",
    args: ["JOB"],
    summary: "run a job's and its tasks' goal-state actions again, loading it from the store if the job " +
      "manager does not hold it (JobManager::Refresh; debug)",
    async run(ctx, [job]) {
      await ctx.client.call(`${JOB}::Refresh`, { id: { value: job } });
      ctx.out(ctx.json ? "{}" : `Job ${job}: refresh requested`);
      return 0;
    },
  },
  {
    name: "job cache",
    args: ["JOB"],
    summary: "show a job's runtime, and the config fields Peloton's cache keeps, as the job manager holds " +
      "them in memory (JobManager::GetCache; debug)",
    async run(ctx, [job]) {
      const res = await ctx.client.call(`${JOB}::GetCache`, { id: { value: job } });
      ctx.out(JSON.stringify(res, null, 2));
      return 0;
    },
  },
  {
    name: "job active-list",
    args: [],
    summary: "list the ids of the jobs that have not ended, oldest first, from the store: every job " +
      "manager's (JobManager::GetActiveJobs; debug)",
    async run(ctx) {
      const res = await ctx.client.call<{ ids?: { value: string }[] }>(`${JOB}::GetActiveJobs`, {});
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        const ids = res.ids ?? [];
        ctx.out(ids.length ? table(["ID"], ids.map((i) => [i.value])) : "No active jobs");
      }
      return 0;
    },
  },
  {
    name: "job stop",
    args: ["JOB?"],
    summary: "stop every task of a job (SIGTERM, then SIGKILL after the kill grace period; a job that has " +
      "ended is left alone: 'Job is in terminal state: KILLED', exit 0; with --owner/-l, one that is not " +
      "that owning team's or has none of the labels: 'No matching job found', exit 0); or, Peloton's form, " +
      "of every " +
      "active job, and service in a crash loop, matching --owner O [and -l/--labels k=v,...] (lists them " +
      "and asks first; " +
      "-f/--force does not ask; at most -n/--limit 100 and -q/--total 100 jobs; when more match, says how " +
      "many on stderr, exit 0; when none does: 'No matching job(s) found', exit 0); --progress then waits " +
      "until every task of the jobs stopped has ended, showing how many have (exit 1 if 10 minutes pass first)",
    options: {
      progress: { type: "boolean", default: false },
      owner: { type: "string" },
      labels: { type: "string", short: "l" },
      force: { type: "boolean", short: "f", default: false },
      limit: { type: "string", short: "n", default: "100" },
      total: { type: "string", short: "q", default: "100" },
    },
    async run(ctx, [job], opts) {
      // An empty --owner is no owner, as in Peloton's CLI.
      const owner = opts.owner ? String(opts.owner) : undefined;
      const labels = opts.labels === undefined ? undefined : parseLabels(String(opts.labels));
      // Peloton's CLI stops no jobs by labels alone ("Either jobID or owner needs to be provided").
      if (job === undefined && owner === undefined) {
        throw new UsageError(
          `--owner: required without JOB${labels ? " (-l/--labels alone is not enough)" : ""}; give JOB, ` +
            "or --owner O [-l k=v,...] to stop every active job of that owner",
        );
      }
      const limit = wholeNumber("--limit", String(opts.limit)) || STOP_DEFAULT_CAP;
      const total = wholeNumber("--total", String(opts.total)) || STOP_DEFAULT_CAP;
      const { jobs, query, matched, terminal, noMatch } = await jobsToStop(
        ctx,
        job,
        owner,
        labels,
        Math.min(limit, total),
      );
      if (terminal !== undefined) {
        // Nothing to stop, which is what was asked: Peloton prints this and exits 0.
        ctx.out(
          ctx.json
            ? JSON.stringify({ stopped: [], failed: [], terminal: { id: job, state: terminal } })
            : `Job is in terminal state: ${terminal}`,
        );
        return 0;
      }
      if (noMatch) {
        // JOB is not the owning team's or has none of the labels: Peloton says so and exits 0, stopping nothing.
        ctx.out(
          ctx.json ? JSON.stringify({ stopped: [], failed: [], matched: 0 }) : "No matching job found",
        );
        return 0;
      }
      const partial = matched !== undefined && matched > jobs.length;
      if (jobs.length === 0) {
        // Peloton's JobStopAction prints this and exits 0: nothing matched, so nothing was left undone. (It
        // asks to confirm stopping the empty list first; there is nothing to confirm here.)
        ctx.out(
          ctx.json ? JSON.stringify({ stopped: [], failed: [], matched: 0 }) : "No matching job(s) found",
        );
        return 0;
      }
      if (query && !ctx.json) {
        // Owner is the owning team, which --owner matched (Peloton's job tables show it so).
        ctx.out(
          table(
            ["ID", "Name", "Owner", "State"],
            query.map((j) => [j.id.value, j.name, j.owningTeam, j.runtime.state]),
          ),
        );
      }
      if (
        query && opts.force !== true &&
        !(await ctx.confirm?.(
          (jobs.length === 1 ? "Stop this job" : `Stop these ${jobs.length} jobs`) +
            (partial ? ` (of ${matched} matching)?` : "?"),
        ))
      ) {
        ctx.err(`peloton job stop: nothing stopped: confirm on a terminal, or give -f/--force`);
        return 1;
      }
      const stopped: { id: string; instances: number }[] = [], failed: string[] = [];
      for (const id of jobs) {
        try {
          const res = await ctx.client.call<{ stoppedInstanceIds: number[] }>(`${TASK}::Stop`, {
            jobId: { value: id },
          });
          stopped.push({ id, instances: res.stoppedInstanceIds.length });
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          failed.push(id);
          ctx.err(`peloton job stop: ${e.message}`);
        }
      }
      if (ctx.json) {
        ctx.out(JSON.stringify(matched === undefined ? { stopped, failed } : { stopped, failed, matched }));
      } else for (const s of stopped) ctx.out(`Job ${s.id} stopping: ${s.instances} instances`);
      // A stop cut short at --limit/--total did what was asked, so it exits 0; the warning says the rest.
      if (partial) ctx.err(partialStopWarning(stopped.length, matched, limit, total));
      let waited = true;
      if (opts.progress === true) {
        for (const s of stopped) {
          waited = await waitStopped(ctx, s.id) && waited;
        }
      }
      return failed.length || !waited ? 1 : 0;
    },
  },
  {
    name: "job validate",
    args: ["FILE"],
    summary: "check a job config file offline; exits non-zero with the errors if it is invalid",
    offline: true,
    async run(ctx, [file]) {
      const config = await loadConfigFile(ctx, file, loadJobConfig);
      if (!config) return 1;
      // A daemon's instance count comes from its hosts; the file's, if any, was said to be ignored.
      const instances = config.type === "DAEMON"
        ? "one instance on each UP host its constraint matches"
        : `${config.instanceCount} instances`;
      ctx.out(
        ctx.json
          ? JSON.stringify(config, null, 2)
          : `${file}: valid ${config.type} job "${config.name}" with ${instances}`,
      );
      return 0;
    },
  },
];
