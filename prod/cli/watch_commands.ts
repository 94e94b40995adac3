/**
 * `peloton watch ...`: Peloton's v1alpha WatchService. `watch pod` and `watch job` print each change to the
 * pods of a job or to stateless jobs as the job manager makes it, until the watch ends; `watch cancel` ends one.
 */
import { POD_NAME } from "../../core/jobmgr/v1alpha_json.ts";
import { WATCH_SERVICE } from "../../core/jobmgr/watch.ts";
import { ApiError } from "./client.ts";
import { type Command, type CommandContext, UsageError } from "./command.ts";
import { parseLabels } from "./job_commands.ts";

interface WatchResponse {
  watchId?: string;
  pods?: { podName?: { value: string }; status?: { state?: string; host?: string } }[];
  statelessJobs?: { jobId?: { value: string }; status?: { state?: string } }[];
}

/** `--pod-names` and `--job-ids`: comma-separated, each checked by `valid`. */
function ids(flag: string, v: unknown, valid: (s: string) => boolean, expected: string): { value: string }[] {
  if (v === undefined) return [];
  return String(v).split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
    if (!valid(s)) throw new UsageError(`--${flag}: got "${s}", expected ${expected}`);
    return { value: s };
  });
}

/** One line per pod or job of a response: when it was seen, its name, its state (and a pod's host). */
export function eventLines(res: WatchResponse, now: Date): string[] {
  const at = now.toISOString();
  return [
    ...(res.pods ?? []).map((p) =>
      [at, p.podName?.value, p.status?.state, p.status?.host].filter((c) => c !== undefined && c !== "")
        .join("  ")
    ),
    ...(res.statelessJobs ?? []).map((j) => [at, j.jobId?.value, j.status?.state].join("  ")),
  ];
}

/**
 * Prints the stream until it ends: the watch id, then one line per change (`-j`: every line as it came, the
 * last one included). Ended by `watch cancel` or Ctrl-C: exit 0; ended any other way: exit 1.
 */
async function follow(ctx: CommandContext, body: Record<string, unknown>): Promise<number> {
  const stop = new AbortController();
  const unlisten = ctx.onInterrupt?.(() => stop.abort());
  try {
    for await (const res of ctx.client.stream<WatchResponse>(`${WATCH_SERVICE}::Watch`, body, stop.signal)) {
      if (ctx.json) ctx.out(JSON.stringify(res));
      else if (res.pods === undefined && res.statelessJobs === undefined) ctx.out(`Watch ${res.watchId}`);
      else for (const line of eventLines(res, new Date())) ctx.out(line);
    }
    return 0;
  } catch (e) {
    if (!(e instanceof ApiError) || e.procedure !== `${WATCH_SERVICE}::Watch`) throw e;
    if (ctx.json) ctx.out(JSON.stringify({ error: { code: e.code, message: e.detail } }));
    if (e.code === "cancelled") {
      if (!ctx.json) ctx.out(e.detail);
      return 0;
    }
    if (ctx.json) return 1;
    throw e;
  } finally {
    unlisten?.();
  }
}

/** `-l k=v,...`, which may be given more than once (Peloton's watch `--labels` is repeatable): every label. */
function watchLabels(given: unknown): ReturnType<typeof parseLabels> {
  return ((given ?? []) as string[]).filter(Boolean).flatMap(parseLabels);
}

export const watchCommands: Command[] = [
  {
    name: "watch pod",
    args: ["JOB"],
    summary:
      "print each change to the pods of JOB (--pod-names NAME,... and -l k=v,..., repeatable, narrow it): " +
      "time, pod, state, host; until `watch cancel` or Ctrl-C (-j: the stream's JSON lines)",
    options: {
      "pod-names": { type: "string" },
      labels: { type: "string", short: "l", multiple: true },
    },
    run(ctx, [job], opts) {
      const podNames = ids(
        "pod-names",
        opts["pod-names"],
        (s) => POD_NAME.test(s),
        "pod names <jobId>-<instanceId>",
      );
      const podFilter: Record<string, unknown> = { jobId: { value: job } };
      if (podNames.length) podFilter.podNames = podNames;
      const labels = watchLabels(opts.labels);
      if (labels.length) podFilter.labels = labels;
      return follow(ctx, { podFilter });
    },
  },
  {
    name: "watch job",
    args: [],
    summary:
      "print each change to stateless jobs (--job-ids ID,... and -l k=v,..., repeatable, narrow it): " +
      "time, job, state; until `watch cancel` or Ctrl-C (-j: the stream's JSON lines)",
    options: {
      "job-ids": { type: "string" },
      labels: { type: "string", short: "l", multiple: true },
    },
    run(ctx, _args, opts) {
      const jobIds = ids("job-ids", opts["job-ids"], (s) => s.length > 0, "job ids");
      const statelessJobFilter: Record<string, unknown> = {};
      if (jobIds.length) statelessJobFilter.jobIds = jobIds;
      const labels = watchLabels(opts.labels);
      if (labels.length) statelessJobFilter.labels = labels;
      return follow(ctx, { statelessJobFilter });
    },
  },
  {
    name: "watch cancel",
    args: ["WATCH-ID"],
    summary: "end a watch (its stream ends cancelled)",
    async run(ctx, [watchId]) {
      await ctx.client.call(`${WATCH_SERVICE}::Cancel`, { watchId });
      ctx.out(ctx.json ? "{}" : `Watch ${watchId} cancelled`);
      return 0;
    },
  },
];
