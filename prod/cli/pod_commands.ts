/**
 * `peloton pod ...` (Peloton's v1alpha pod commands, `pkg/cli/pod_actions.go`): a pod is one instance of a job,
 * named `<jobId>-<instanceId>`; its runs are pod ids `<jobId>-<instanceId>-<run>`.
 */
import { POD_NAME, POD_STATE_NUMBERS } from "../../core/jobmgr/v1alpha_json.ts";
import type { Command, CommandContext } from "./command.ts";
import {
  MAX_UINT32,
  sortOrder,
  TASK_QUERY_OPTIONS,
  TASK_QUERY_SUMMARY,
  TASK_SORT,
  UsageError,
  wholeFlag,
} from "./command.ts";
import { pageLine, table } from "./format.ts";
import { printSandboxFile } from "./sandbox_output.ts";
import { jobRangeBody, podEventsCommand } from "./task_commands.ts";

const POD = "peloton.api.v1alpha.pod.svc.PodService";
const TASK = "peloton.api.task.TaskManager";

/** NAME checked here, so a typo is a usage error naming the form, not a round trip. */
function podName(s: string): { value: string } {
  const m = POD_NAME.exec(s);
  if (!m) throw new UsageError(`NAME: got "${s}", expected a pod name <jobId>-<instanceId>`);
  if (Number(m[2]) > MAX_UINT32) {
    throw new UsageError(
      `NAME: got "${s}", expected a pod name <jobId>-<instanceId>, the instance id at most ${MAX_UINT32}`,
    );
  }
  return { value: s };
}

/** `--id` or PODID: a run of the pod, `<NAME>-<run>`. */
function podId(name: string, id: unknown): { value: string } | undefined {
  if (id === undefined) return undefined;
  const s = String(id);
  if (!new RegExp(`^${name}-\\d+$`, "i").test(s)) {
    throw new UsageError(`pod id: got "${s}", expected a run of ${name}: ${name}-RUN`);
  }
  return { value: s };
}

type PodStatus = Record<string, unknown> & { podId?: { value: string } };

const STATUS_HEADERS = ["Pod ID", "State", "Desired", "Host", "Started", "Completed", "Message", "Reason"];

function statusRow(s: PodStatus): (string | undefined)[] {
  return [
    s.podId?.value,
    s.state as string,
    s.desiredState as string,
    s.host as string,
    s.startTime as string,
    s.completionTime as string,
    s.message as string,
    s.reason as string,
  ];
}

/** A pod action that answers nothing: says it was asked, as Peloton's do (the pod gets there after). */
function action(method: "StartPod" | "StopPod" | "RestartPod" | "RefreshPod", verb: string): Command {
  const word = method.replace("Pod", "").toLowerCase();
  return {
    name: `pod ${word}`,
    args: ["NAME"],
    summary: `${verb} a pod (asynchronous: it gets there after the command returns)`,
    async run(ctx, [name]) {
      await ctx.client.call(`${POD}::${method}`, { podName: podName(name) });
      ctx.out(ctx.json ? "{}" : `Pod ${name}: ${word} requested`);
      return 0;
    },
  };
}

/** Prints a pod's sandbox file: the current run's, or run `id`'s (NAME-RUN). */
async function printPodLog(ctx: CommandContext, name: string, file: string, id?: string): Promise<void> {
  const [, job, inst] = POD_NAME.exec(name)!;
  const res = await ctx.client.call<{ taskId: { value: string }; agentId?: { value: string } }>(
    `${TASK}::BrowseSandbox`,
    { jobId: { value: job }, instanceId: Number(inst), ...(id === undefined ? {} : { taskId: id }) },
  );
  await printSandboxFile(ctx, { taskId: res.taskId.value, agentId: res.agentId?.value }, file, {
    podName: name,
  });
}

const SVC = "peloton.api.v1alpha.job.stateless.svc.JobService";

/** Pod state names a query takes (all but INVALID). */
const POD_STATES = POD_STATE_NUMBERS.slice(1);

/** `-s RUNNING,POD_STATE_FAILED`: pod states, each checked. */
function podStates(s: string): string[] {
  return s.split(",").map((x) => x.trim()).filter(Boolean).map((x) => {
    const name = x.toUpperCase().replace(/^POD_STATE_/, "");
    if (!POD_STATES.includes(name)) {
      throw new UsageError(`--states: got "${x}", expected pod states among ${POD_STATES.join(", ")}`);
    }
    return `POD_STATE_${name}`;
  });
}

export const podCommands: Command[] = [
  {
    name: "pod query",
    args: ["JOB"],
    summary: `find a job's pods by ${TASK_QUERY_SUMMARY}`,
    options: TASK_QUERY_OPTIONS,
    async run(ctx, [job], opts) {
      const spec: Record<string, unknown> = {};
      if (opts.states) spec.podStates = podStates(String(opts.states));
      if (opts.names) spec.names = String(opts.names).split(",").map((n) => podName(n.trim()));
      if (opts.hosts) spec.hosts = String(opts.hosts).split(",").map((h) => h.trim()).filter(Boolean);
      const pagination = {
        limit: wholeFlag("limit", opts.limit, 1),
        offset: wholeFlag("offset", opts.offset, 0),
        orderBy: sortOrder(opts.sort, opts.sortorder, TASK_SORT, "v1alpha"),
      };
      const res = await ctx.client.call<
        { pods: { status: PodStatus }[]; pagination: { offset: number; total: number } }
      >(`${SVC}::QueryPods`, { jobId: { value: job }, spec, pagination, summaryOnly: true });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        const p = res.pagination;
        ctx.out(
          `${table(STATUS_HEADERS, res.pods.map((x) => statusRow(x.status)))}\n` +
            pageLine("pods", res.pods.length, p),
        );
      }
      return 0;
    },
  },
  {
    name: "job stateless list-pods",
    args: ["JOB"],
    summary: "list a job's pods (all, or an instance range with -r FROM:TO) (JobService::ListPods)",
    options: { range: { type: "string", short: "r" } },
    async run(ctx, [job], opts) {
      const body = jobRangeBody(job, opts);
      const res = await ctx.client.call<{ pods: { podName: { value: string }; status: PodStatus }[] }>(
        `${SVC}::ListPods`,
        body,
      );
      ctx.out(
        ctx.json
          ? JSON.stringify(res, null, 2)
          : table(["Pod", ...STATUS_HEADERS], res.pods.map((p) => [p.podName.value, ...statusRow(p.status)])),
      );
      return 0;
    },
  },
  {
    name: "pod get",
    args: ["NAME"],
    summary: "show a pod: its current run, then the runs before it (--statusonly leaves out its spec; " +
      "--currentonly shows the current run alone; --limit N shows N runs in all, the current one among " +
      "them; 0, the default, all)",
    options: {
      statusonly: { type: "boolean" },
      currentonly: { type: "boolean" },
      limit: { type: "string" },
    },
    async run(ctx, [name], opts) {
      const limit = opts.limit === undefined ? undefined : wholeFlag("limit", opts.limit, 0);
      // Peloton's --currentonly is GetPod's limit of 1: the current run alone.
      if (opts.currentonly === true && limit !== undefined && limit !== 1) {
        throw new UsageError(
          `--currentonly: shows the current run alone, but --limit ${opts.limit} asks for ${
            limit || "all"
          } runs: give one of them`,
        );
      }
      const body = {
        podName: podName(name),
        statusOnly: opts.statusonly === true,
        limit: opts.currentonly === true ? 1 : limit ?? 0,
      };
      const res = await ctx.client.call<
        { current: { status: PodStatus }; previous?: { status: PodStatus }[] }
      >(`${POD}::GetPod`, body);
      const runs = [res.current, ...(res.previous ?? [])];
      ctx.out(
        ctx.json ? JSON.stringify(res, null, 2) : table(STATUS_HEADERS, runs.map((r) => statusRow(r.status))),
      );
      return 0;
    },
  },
  // Peloton's `pod events` is the v0 TaskManager's GetPodEvents, of a job's instance.
  podEventsCommand(
    "pod events",
    "list a task's state changes, newest first: of its latest run and those before it, 10 runs in all " +
      "unless -l/--limit N says how many, or of -r/--run JOB-INSTANCE-RUN alone",
    { run: { type: "string", short: "r" }, limit: { type: "string", short: "l" } },
  ),
  {
    name: "pod cache",
    args: ["NAME"],
    summary: "show the pod's status as the job manager holds it in memory",
    async run(ctx, [name]) {
      const res = await ctx.client.call<{ status: PodStatus }>(`${POD}::GetPodCache`, {
        podName: podName(name),
      });
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : table(STATUS_HEADERS, [statusRow(res.status)]));
      return 0;
    },
  },
  {
    name: "pod events-v1alpha",
    args: ["NAME"],
    summary: "list a run's state changes, newest first: the current run, or -p/--id NAME-RUN's",
    options: { id: { type: "string", short: "p" } },
    async run(ctx, [name], opts) {
      const res = await ctx.client.call<{ events: Record<string, unknown>[] }>(`${POD}::GetPodEvents`, {
        podName: podName(name),
        ...(opts.id === undefined ? {} : { podId: podId(name, opts.id) }),
      });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        ctx.out(table(
          ["Time", "Pod ID", "State", "Desired", "Host", "Message", "Reason"],
          (res.events ?? []).map((e) => [
            e.timestamp as string,
            (e.podId as { value: string }).value,
            e.actualState as string,
            e.desiredState as string,
            e.hostname as string,
            e.message as string,
            e.reason as string,
          ]),
        ));
      }
      return 0;
    },
  },
  {
    name: "pod logs",
    args: ["NAME"],
    summary: "print a pod's stdout (or -f stderr) from its sandbox: the current run's, or -p/--id NAME-RUN's",
    options: {
      filename: { type: "string", short: "f", default: "stdout" },
      id: { type: "string", short: "p" },
    },
    async run(ctx, [name], opts) {
      podName(name);
      const file = String(opts.filename);
      if (file !== "stdout" && file !== "stderr") {
        throw new UsageError(`--filename: got "${file}", expected stdout or stderr`);
      }
      await printPodLog(ctx, name, file, podId(name, opts.id)?.value);
      return 0;
    },
  },
  {
    name: "pod delete-events",
    args: ["NAME", "PODID"],
    summary: "delete the events of a pod's runs up to PODID (NAME-RUN), to bound their growth",
    async run(ctx, [name, id]) {
      await ctx.client.call(`${POD}::DeletePodEvents`, { podName: podName(name), podId: podId(name, id) });
      ctx.out(ctx.json ? "{}" : `Pod ${name}: events of runs up to ${id} deleted`);
      return 0;
    },
  },
  action("StartPod", "start"),
  action("StopPod", "stop"),
  action("RestartPod", "restart"),
  action("RefreshPod", "re-run the goal-state action of"),
];
