/**
 * `peloton jobmgr throttled-pods|query-job-cache|instance-availability`: Peloton's `jobmgr` commands over the
 * private JobManagerService, which answers from the job manager's cache (`peloton jobmgr` alone runs one).
 */
import { JOBMGR_SERVICE } from "../../core/jobmgr/jobmgr_service_api.ts";
import { type Command, MAX_UINT32, UsageError } from "./command.ts";
import { table } from "./format.ts";
import { parseLabels } from "./job_commands.ts";

/** `-i/--instances 1,2` (Peloton's): instance ids, comma-separated; empty means every instance. */
export function parseInstances(v: unknown): number[] {
  const text = String(v ?? "").trim();
  if (!text) return [];
  return text.split(",").map((part) => {
    const id = part.trim();
    if (!/^\d+$/.test(id) || Number(id) > MAX_UINT32) {
      throw new UsageError(
        `--instances: got "${text}", expected instance ids from 0 to ${MAX_UINT32}, comma-separated (0,2)`,
      );
    }
    return Number(id);
  });
}

export const jobmgrCommands: Command[] = [
  {
    name: "jobmgr throttled-pods",
    args: [],
    summary: "pods whose restart is held back after failures, in the job manager's cache " +
      "(JobManagerService::GetThrottledPods; each job manager answers for its own)",
    async run(ctx) {
      const res = await ctx.client.call<{ throttledPods?: { value: string }[] }>(
        `${JOBMGR_SERVICE}::GetThrottledPods`,
        {},
      );
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      const pods = res.throttledPods ?? [];
      ctx.out(pods.length ? table(["Pod"], pods.map((p) => [p.value])) : "No throttled pods");
      return 0;
    },
  },
  {
    name: "jobmgr query-job-cache",
    args: [],
    summary:
      "jobs in the job manager's cache with all the labels (-l k=v,...) and exactly the name (-n NAME) " +
      "(JobManagerService::QueryJobCache; each job manager answers for its own)",
    options: {
      labels: { type: "string", short: "l" },
      name: { type: "string", short: "n" },
    },
    async run(ctx, _args, opts) {
      const labels = opts.labels ? parseLabels(String(opts.labels)) : [];
      const res = await ctx.client.call<{ result?: { jobId: { value: string }; name: string }[] }>(
        `${JOBMGR_SERVICE}::QueryJobCache`,
        { spec: { labels, name: opts.name ?? "" } },
      );
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      const jobs = res.result ?? [];
      // Peloton's words when nothing matches.
      ctx.out(jobs.length ? table(["Job", "Name"], jobs.map((j) => [j.jobId.value, j.name])) : "No result");
      return 0;
    },
  },
  {
    name: "jobmgr instance-availability",
    args: ["JOB"],
    summary: "each instance's availability (AVAILABLE, UNAVAILABLE, KILLED, DELETED) as SLA-aware " +
      "maintenance counts it; -i/--instances 0,2 for some (JobManagerService::GetInstanceAvailabilityInfoForJob)",
    options: { instances: { type: "string", short: "i" } },
    async run(ctx, [job], opts) {
      const instances = parseInstances(opts.instances);
      const res = await ctx.client.call<{ instanceAvailabilityMap?: Record<string, string> }>(
        `${JOBMGR_SERVICE}::GetInstanceAvailabilityInfoForJob`,
        { jobId: { value: job }, instances },
      );
      if (ctx.json) {
        ctx.out(JSON.stringify(res, null, 2));
        return 0;
      }
      const rows = Object.entries(res.instanceAvailabilityMap ?? {}).sort(([a], [b]) =>
        Number(a) - Number(b)
      );
      ctx.out(table(["Instance", "Availability"], rows));
      return 0;
    },
  },
];
