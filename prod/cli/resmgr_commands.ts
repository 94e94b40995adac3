/** `peloton resmgr tasks active|pending|orphan`: what the resource manager holds (Peloton's `resmgr tasks` commands). */
import { UUID } from "../../core/jobmgr/api_json.ts";
import { RESMGR_SERVICE } from "../../core/resmgr/task_inspect.ts";
import { type Command, UsageError, wholeFlag } from "./command.ts";
import { table } from "./format.ts";

type Entry = { taskID: string; taskState: string; respool: string; reason: string };

export type Orphan = {
  taskId: { value: string };
  state: string;
  respool: string;
  resource: { cpuLimit: number; gpuLimit: number; memLimitMb: number; diskLimitMb: number };
  held: boolean;
  hostname?: string;
  reason: string;
};

/**
 * `--job JOB`, a job id as every other command takes it (the resource manager matches it against its tasks'
 * ids, so a malformed one would match nothing and show an empty table, not a mistake); "" for every job.
 */
function jobFlag(v: unknown): string {
  if (v === undefined) return "";
  if (!UUID.test(String(v))) throw new UsageError(`--job: got "${v}", expected a job id`);
  return String(v).toLowerCase();
}

export const resmgrCommands: Command[] = [
  {
    name: "resmgr tasks active",
    args: [],
    summary:
      "the resource manager's tasks by state (--job JOB, --respool POOL, -s STATES,...; -n 1000 at most)",
    options: {
      job: { type: "string" },
      respool: { type: "string" },
      states: { type: "string", short: "s" },
      limit: { type: "string", short: "n", default: "1000" },
    },
    async run(ctx, _args, opts) {
      const states = opts.states ? String(opts.states).split(",").map((s) => s.trim()).filter(Boolean) : [];
      const res = await ctx.client.call<
        { tasksByState: Record<string, { taskEntry: Entry[] }>; total: number }
      >(
        `${RESMGR_SERVICE}::GetActiveTasks`,
        {
          jobID: jobFlag(opts.job),
          respoolID: opts.respool ?? "",
          states,
          limit: wholeFlag("limit", opts.limit, 1),
        },
      );
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      const entries = Object.values(res.tasksByState).flatMap((s) => s.taskEntry);
      ctx.out(table(
        ["Task", "State", "Resource pool", "Reason"],
        entries.map((e) => [e.taskID, e.taskState, e.respool, e.reason]),
      ));
      if (entries.length < res.total) {
        ctx.err(`showing ${entries.length} of ${res.total} tasks; raise -n for more`);
      }
      return 0;
    },
  },
  {
    name: "resmgr tasks pending",
    args: ["RESPOOL"],
    summary: "a leaf pool's queued gangs, each queue in admission order (-n 100 gangs a queue)",
    options: { limit: { type: "string", short: "n", default: "100" } },
    async run(ctx, [respool], opts) {
      const res = await ctx.client.call<{
        pendingGangsByQueue: Record<string, { pendingGangs: { taskIDs: string[] }[] }>;
      }>(`${RESMGR_SERVICE}::GetPendingTasks`, {
        respoolID: { value: respool },
        limit: wholeFlag("limit", opts.limit, 1),
      });
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      const queues = Object.entries(res.pendingGangsByQueue);
      if (!queues.length) ctx.out(`Nothing is queued in ${respool}`);
      for (const [queue, { pendingGangs }] of queues) {
        ctx.out(`${queue} (${pendingGangs.length} gangs):`);
        pendingGangs.forEach((g, i) => ctx.out(`  ${i + 1}. ${g.taskIDs.join(", ")}`));
      }
      return 0;
    },
  },
  {
    name: "resmgr tasks orphan",
    args: [],
    summary: "tasks the resource manager holds that nothing will end: a run beside a later run of its " +
      "instance, or a launch handed over for the last time; with what each holds (--respool POOL)",
    options: { respool: { type: "string" } },
    async run(ctx, _args, opts) {
      const res = await ctx.client.call<{ orphanTasks: Orphan[] }>(`${RESMGR_SERVICE}::GetOrphanTasks`, {
        respoolID: opts.respool ?? "",
      });
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      if (!res.orphanTasks.length) ctx.out(`No orphan tasks${opts.respool ? ` in ${opts.respool}` : ""}`);
      else ctx.out(orphanTable(res.orphanTasks));
      return 0;
    },
  },
];

/** Peloton's columns (and ours), and a total of what counts in a pool's allocation: the Held rows. */
export function orphanTable(orphans: Orphan[]): string {
  const total = { cpu: 0, gpu: 0, mem: 0, disk: 0 };
  for (const o of orphans) {
    if (!o.held) continue;
    total.cpu += o.resource.cpuLimit;
    total.gpu += o.resource.gpuLimit;
    total.mem += o.resource.memLimitMb;
    total.disk += o.resource.diskLimitMb;
  }
  // Sums of tenths of cores are not exact in floating point.
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return table(
    ["Task", "State", "Resource pool", "Hostname", "CPU", "GPU", "Memory MB", "Disk MB", "Held", "Reason"],
    [
      ...orphans.map((o) => [
        o.taskId.value,
        o.state,
        o.respool,
        o.hostname,
        o.resource.cpuLimit,
        o.resource.gpuLimit,
        o.resource.memLimitMb,
        o.resource.diskLimitMb,
        o.held ? "yes" : "no",
        o.reason,
      ]),
      ["Total held", "", "", "", round(total.cpu), round(total.gpu), total.mem, total.disk, "", ""],
    ],
  );
}
