/** `peloton task ...`: list, query, get, cache, refresh, logs, events. */
import { parseMesosTaskId } from "../../core/model/records.ts";
import { TASK_STATES } from "../../core/model/states.ts";
import type { Command, CommandContext, OptionSpec } from "./command.ts";
import {
  MAX_UINT32,
  sortOrder,
  TASK_QUERY_OPTIONS,
  TASK_QUERY_SUMMARY,
  TASK_SORT,
  UsageError,
  wholeFlag,
} from "./command.ts";
import { mb, pageLine, table } from "./format.ts";
import { printSandboxFile } from "./sandbox_output.ts";

const TASK = "peloton.api.task.TaskManager";

type TaskInfo = {
  instanceId: number;
  config: { name?: string; resource?: { cpuLimit?: number; memLimitMb?: number; diskLimitMb?: number } };
  runtime: Record<string, unknown> & { mesosTaskId?: { value: string } };
};

/**
 * `from:to` (to exclusive; either side may be empty) as Peloton's `-r/--range`. A range of no instances
 * (3:1, 3:3) is refused here: the server would answer it with nothing, as if the job had no such tasks.
 */
export function parseRange(s: string): { from: number; to?: number } {
  const m = /^(\d*):(\d*)$/.exec(s);
  if (!m) throw new UsageError(`--range: got "${s}", expected FROM:TO such as 0:10, :5 or 3:`);
  const end = (v: string) => {
    if (Number(v) > MAX_UINT32) {
      throw new UsageError(
        `--range: got "${s}", expected instance ids from 0 to ${MAX_UINT32} (the API's uint32)`,
      );
    }
    return Number(v);
  };
  const from = m[1] ? end(m[1]) : 0, to = m[2] ? end(m[2]) : undefined;
  if (to !== undefined && to <= from) {
    const one = `${from}:${from + 1}`;
    throw new UsageError(
      `--range: got "${s}", expected FROM:TO with FROM below TO (TO is exclusive: ${one} is instance ${from} alone)`,
    );
  }
  return { from, to };
}

/** `-s RUNNING,failed`: task states, each checked. */
function taskStates(s: string): string[] {
  return s.split(",").map((x) => x.trim().toUpperCase()).filter(Boolean).map((x) => {
    if (!(x in TASK_STATES)) {
      throw new UsageError(
        `--states: got "${x}", expected task states among ${Object.keys(TASK_STATES).join(", ")}`,
      );
    }
    return x;
  });
}

/** A request naming a job and, with `-r FROM:TO`, an instance range of it (task list, refresh, list-pods). */
export function jobRangeBody(job: string, opts: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = { jobId: { value: job } };
  if (opts.range) body.range = parseRange(String(opts.range));
  return body;
}

function instance(s: string): number {
  if (!/^\d+$/.test(s) || Number(s) > MAX_UINT32) {
    throw new UsageError(`INSTANCE: got "${s}", expected an instance number from 0 to ${MAX_UINT32}`);
  }
  return Number(s);
}

/** Peloton's GetResponse: `result` the current run, `results` every run (ours: current first, then newest first). */
type GetResponse = {
  result?: TaskInfo;
  results?: TaskInfo[];
  outOfRange?: { instanceCount?: number; message?: string };
};

/** Thrown when the job has no instance INSTANCE (never had, or removed); printed as is, exit 1. */
class OutOfRange extends Error {
  override readonly name = "OutOfRange";
}

/**
 * A task's runs; Peloton answers an instance the job does not have with `outOfRange` in place of a result.
 * Our server says why in its message: instance ids need not be 0 to instanceCount-1 (daemon jobs keep the
 * ids of instances whose host left, shrunk jobs those below the new count).
 */
async function getTask(ctx: CommandContext, job: string, inst: number): Promise<GetResponse> {
  const res = await ctx.client.call<GetResponse>(`${TASK}::Get`, { jobId: { value: job }, instanceId: inst });
  if (res.outOfRange || !res.result) {
    const count = res.outOfRange?.instanceCount;
    throw new OutOfRange(
      res.outOfRange?.message ??
        `instance ${inst} does not exist: job ${job} has ${count ?? "fewer"} instance${
          count === 1 ? "" : "s"
        }`,
    );
  }
  return res;
}

/**
 * Why the job has no instance `inst`, as `task get` says it ("instance 7 is out of range: job J has 3
 * instances"), or undefined when it has it: for commands whose own call answers such an instance with nothing.
 */
export async function missingInstance(
  ctx: CommandContext,
  job: string,
  inst: number,
): Promise<string | undefined> {
  try {
    await getTask(ctx, job, inst);
    return undefined;
  } catch (e) {
    if (e instanceof OutOfRange) return e.message;
    throw e;
  }
}

/** Runs a task command, turning OutOfRange into a one-line error and exit 1. */
function reportingRange(
  name: string,
  run: (ctx: CommandContext, args: string[], opts: Record<string, unknown>) => Promise<number>,
): Command["run"] {
  return async (ctx, args, opts) => {
    try {
      return await run(ctx, args, opts);
    } catch (e) {
      if (!(e instanceof OutOfRange)) throw e;
      ctx.err(`peloton ${name}: ${e.message}`);
      return 1;
    }
  };
}

function rows(tasks: TaskInfo[]) {
  return tasks.map((t) => {
    const r = t.runtime;
    return [
      t.instanceId,
      t.config.name ?? "",
      t.config.resource?.cpuLimit,
      mb(t.config.resource?.memLimitMb),
      mb(t.config.resource?.diskLimitMb),
      r.state as string,
      r.goalState as string,
      (r.startTime as string) ?? "",
      r.mesosTaskId?.value,
      (r.host as string) ?? "",
      (r.message as string) ?? "",
      (r.reason as string) ?? "",
    ];
  });
}

const HEADERS = [
  "Instance",
  "Name",
  "CPU Limit",
  "Mem Limit",
  "Disk Limit",
  "State",
  "GoalState",
  "Started At",
  "Task ID",
  "Host",
  "Message",
  "Reason",
];

/**
 * `task events` and `pod events`: TaskManager::GetPodEvents of an instance, newest first. Peloton's `pod events`
 * takes `-r/--run` (that run alone, JOB-INSTANCE-RUN) and `-l/--limit` (how many runs back from the latest,
 * 10 when 0 or left out); its `task events` neither.
 */
export function podEventsCommand(name: string, summary: string, options?: OptionSpec): Command {
  return {
    name,
    args: ["JOB", "INSTANCE"],
    summary,
    options,
    run: reportingRange(name, async (ctx, [job, inst], opts) => {
      const instanceId = instance(inst);
      const body: Record<string, unknown> = { jobId: { value: job }, instanceId };
      if (opts.run !== undefined) {
        const task = `${job}-${instanceId}`, runId = String(opts.run);
        const id = parseMesosTaskId(runId);
        if (!id || id.jobId !== job || id.instanceId !== instanceId) {
          throw new UsageError(`--run: got "${runId}", expected a run of ${task}: ${task}-RUN`);
        }
        body.runId = runId;
      }
      if (opts.limit !== undefined) body.limit = wholeFlag("limit", opts.limit, 0);
      const res = await ctx.client.call<{ result: Record<string, unknown>[] }>(`${TASK}::GetPodEvents`, body);
      // No events at all: say why if the job is unknown or the instance is past its end.
      if (res.result.length === 0) await getTask(ctx, job, instanceId);
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        ctx.out(table(
          ["Time", "Task ID", "State", "Host", "Message", "Reason"],
          res.result.map((e) => [
            e.timestamp as string,
            (e.taskId as { value: string }).value,
            e.actualState as string,
            e.hostname as string,
            e.message as string,
            e.reason as string,
          ]),
        ));
      }
      return 0;
    }),
  };
}

export const taskCommands: Command[] = [
  {
    name: "task list",
    args: ["JOB"],
    summary: "list a job's tasks (all, or an instance range with -r FROM:TO)",
    options: { range: { type: "string", short: "r" } },
    async run(ctx, [job], opts) {
      const body = jobRangeBody(job, opts);
      const res = await ctx.client.call<{ result: { value: Record<string, TaskInfo> } }>(
        `${TASK}::List`,
        body,
      );
      const tasks = Object.values(res.result.value).sort((a, b) => a.instanceId - b.instanceId);
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : table(HEADERS, rows(tasks)));
      return 0;
    },
  },
  {
    name: "task query",
    args: ["JOB"],
    summary: `find a job's tasks by ${TASK_QUERY_SUMMARY}`,
    options: TASK_QUERY_OPTIONS,
    async run(ctx, [job], opts) {
      const spec: Record<string, unknown> = {
        pagination: {
          limit: wholeFlag("limit", opts.limit, 1),
          offset: wholeFlag("offset", opts.offset, 0),
          orderBy: sortOrder(opts.sort, opts.sortorder, TASK_SORT),
        },
      };
      if (opts.states) spec.taskStates = taskStates(String(opts.states));
      const list = (v: unknown) => String(v).split(",").map((x) => x.trim()).filter(Boolean);
      if (opts.names) spec.names = list(opts.names);
      if (opts.hosts) spec.hosts = list(opts.hosts);
      const res = await ctx.client.call<
        { records?: TaskInfo[]; pagination: { offset: number; total: number } }
      >(
        `${TASK}::Query`,
        { jobId: { value: job }, spec },
      );
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        const tasks = res.records ?? [], p = res.pagination;
        ctx.out(
          `${table(HEADERS, rows(tasks))}\n${pageLine("tasks", tasks.length, p)}`,
        );
      }
      return 0;
    },
  },
  {
    name: "task cache",
    args: ["JOB", "INSTANCE"],
    summary: "show a task as the job manager holds it in memory (TaskManager::GetCache)",
    async run(ctx, [job, inst]) {
      const res = await ctx.client.call<{ runtime: TaskInfo["runtime"]; labels?: unknown[] }>(
        `${TASK}::GetCache`,
        { jobId: { value: job }, instanceId: instance(inst) },
      );
      ctx.out(JSON.stringify(res, null, 2));
      return 0;
    },
  },
  {
    name: "task refresh",
    args: ["JOB"],
    summary: "run a job's tasks' goal-state actions again (all, or an instance range with -r FROM:TO)",
    options: { range: { type: "string", short: "r" } },
    async run(ctx, [job], opts) {
      const body = jobRangeBody(job, opts);
      await ctx.client.call(`${TASK}::Refresh`, body);
      ctx.out(ctx.json ? "{}" : `Refreshed the tasks of job ${job}`);
      return 0;
    },
  },
  {
    name: "task get",
    args: ["JOB", "INSTANCE"],
    summary: "show one task: its current run first, then previous runs",
    run: reportingRange("task get", async (ctx, [job, inst]) => {
      const res = await getTask(ctx, job, instance(inst));
      ctx.out(
        ctx.json
          ? JSON.stringify(res, null, 2)
          : table(HEADERS, rows(res.results ?? (res.result ? [res.result] : []))),
      );
      return 0;
    }),
  },
  podEventsCommand(
    "task events",
    "list a task's state changes with their reason and time, newest first, in its latest 10 runs " +
      "(`pod events` picks the run or how many)",
  ),
  {
    name: "task logs",
    args: ["JOB", "INSTANCE", "TASKID?"],
    summary:
      "print a task's stdout (or -f stderr) from its sandbox: the current run's, or TASKID's (an earlier run, JOB-INSTANCE-RUN)",
    options: { filename: { type: "string", short: "f", default: "stdout" } },
    run: reportingRange("task logs", async (ctx, [job, inst, taskId], opts) => {
      const file = String(opts.filename);
      if (file !== "stdout" && file !== "stderr") {
        throw new UsageError(`--filename: got "${file}", expected stdout or stderr`);
      }
      await getTask(ctx, job, instance(inst));
      const res = await ctx.client.call<{ taskId: { value: string }; agentId?: { value: string } }>(
        `${TASK}::BrowseSandbox`,
        { jobId: { value: job }, instanceId: instance(inst), ...(taskId === undefined ? {} : { taskId }) },
      );
      // With -j, the file's end as text under the run it is of, as the other commands answer in JSON.
      const run = { taskId: res.taskId.value, agentId: res.agentId?.value };
      await printSandboxFile(ctx, run, file, { taskId: run.taskId });
      return 0;
    }),
  },
];
