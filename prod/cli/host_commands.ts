/** `peloton host ...`: query hosts and their state; start and complete maintenance. */
import type { Command } from "./command.ts";
import { table } from "./format.ts";

const HOST = "peloton.api.v0.host.svc.HostService";

type HostInfo = {
  hostname: string;
  state: string;
  labels: { key: string; value: string }[];
  resources: { total: Record<string, number>; free: Record<string, number> };
  tasks: number;
};

export const hostCommands: Command[] = [
  {
    name: "host query",
    args: [],
    summary: "list hosts with their state, labels and resources (-s HOST_STATE_UP,... to filter)",
    options: { states: { type: "string", short: "s" } },
    async run(ctx, _args, opts) {
      const hostStates = opts.states ? String(opts.states).split(",").map((s) => s.trim()) : undefined;
      const res = await ctx.client.call<{ hostInfos: HostInfo[] }>(`${HOST}::QueryHosts`, { hostStates });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        ctx.out(table(
          ["Hostname", "State", "CPU free/total", "Mem free/total", "Tasks", "Labels"],
          res.hostInfos.map((h) => [
            h.hostname,
            h.state,
            `${h.resources.free.cpuLimit}/${h.resources.total.cpuLimit}`,
            `${h.resources.free.memLimitMb}/${h.resources.total.memLimitMb} MB`,
            h.tasks,
            h.labels.map((l) => `${l.key}=${l.value}`).join(","),
          ]),
        ));
      }
      return 0;
    },
  },
  maintenance("start", "StartMaintenance", "drain a host: it takes no new work (DRAINING, then DRAINED)"),
  maintenance(
    "complete",
    "CompleteMaintenance",
    "end the maintenance of a DRAINED or DOWN host: it is UP and takes work again",
  ),
];

function maintenance(word: string, method: string, summary: string): Command {
  return {
    name: `host maintenance ${word}`,
    args: ["HOSTNAME"],
    summary,
    async run(ctx, [hostname]) {
      const res = await ctx.client.call<{ hostname?: string }>(`${HOST}::${method}`, { hostname });
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {ctx.out(
          `Host ${res.hostname ?? hostname}: maintenance ${word === "start" ? "started" : "completed"}`,
        );}
      return 0;
    },
  };
}
