/** `peloton job ...`: create, get, status, stop, validate. */
import { stringify } from "yaml";
import { loadJobConfig } from "../../core/model/load.ts";
import type { Command, CommandContext } from "./command.ts";
import { UsageError } from "./command.ts";
import { loadConfigFile } from "./config_file.ts";

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

export const jobCommands: Command[] = [
  {
    name: "job create",
    args: ["RESPOOL", "FILE"],
    summary: "create a job from a YAML config in a leaf resource pool; prints the new job id",
    options: { jobID: { type: "string", short: "i" } },
    async run(ctx, [respool, file], opts) {
      const config = await loadConfigFile(ctx, file, loadJobConfig);
      if (!config) return 1;
      const id = await respoolId(ctx, respool);
      const body: Record<string, unknown> = { config: { ...config, respoolID: { value: id } } };
      if (opts.jobID) body.id = { value: opts.jobID };
      const res = await ctx.client.call<{ jobId: { value: string } }>(`${JOB}::Create`, body);
      ctx.out(ctx.json ? JSON.stringify(res) : `Job ${res.jobId.value} created`);
      return 0;
    },
  },
  {
    name: "job get",
    args: ["JOB"],
    summary: "print a job's config and runtime",
    async run(ctx, [job]) {
      const res = await ctx.client.call<{ jobInfo: JobInfo }>(`${JOB}::Get`, { id: { value: job } });
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : stringify(res.jobInfo).trimEnd());
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
    name: "job stop",
    args: ["JOB"],
    summary: "stop every task of a job (SIGTERM, then SIGKILL after the kill grace period)",
    async run(ctx, [job]) {
      const res = await ctx.client.call<{ stoppedInstanceIds: number[] }>(`${TASK}::Stop`, {
        jobId: { value: job },
      });
      ctx.out(
        ctx.json ? JSON.stringify(res) : `Job ${job} stopping: ${res.stoppedInstanceIds.length} instances`,
      );
      return 0;
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
      ctx.out(
        ctx.json
          ? JSON.stringify(config, null, 2)
          : `${file}: valid ${config.type} job "${config.name}" with ${config.instanceCount} instances`,
      );
      return 0;
    },
  },
];
