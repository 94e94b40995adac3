/** `peloton host ...`: query hosts and their state; start and complete maintenance; host pools. */
import { type Command, MAX_UINT32, UsageError } from "./command.ts";
import { table } from "./format.ts";

const HOST = "peloton.api.v0.host.svc.HostService";

type HostInfo = {
  hostname: string;
  state: string;
  labels: { key: string; value: string }[];
  resources: { total: Record<string, number>; free: Record<string, number> };
  tasks: number;
  currentPool?: string;
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
          ["Hostname", "State", "Pool", "CPU free/total", "Mem free/total", "Tasks", "Labels"],
          res.hostInfos.map((h) => [
            h.hostname,
            h.state,
            h.currentPool ?? "—",
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
  maintenance(
    "start",
    "StartMaintenance",
    "drain a host: it takes no new work (DRAINING, DRAINED, then DOWN once its machine is down)",
  ),
  maintenance(
    "complete",
    "CompleteMaintenance",
    "end the maintenance of a DOWN host: its machine comes up, and it is UP and takes work again",
  ),
  {
    name: "host pool list",
    args: [],
    summary: "list the host pools with their number of hosts",
    async run(ctx) {
      const res = await ctx.client.call<{ pools: HostPoolInfo[] }>(`${HOST}::ListHostPools`, {});
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else ctx.out(table(["Pool", "Hosts"], res.pools.map((p) => [p.name, p.hosts.length])));
      return 0;
    },
  },
  {
    name: "host pool list-hosts",
    args: ["POOL"],
    summary: "list the hosts of a host pool",
    async run(ctx, [name]) {
      const res = await ctx.client.call<{ pools: HostPoolInfo[] }>(`${HOST}::ListHostPools`, {});
      const pool = res.pools.find((p) => p.name === name);
      if (!pool) {
        ctx.err(`host pool ${name} not found; the pools are ${res.pools.map((p) => p.name).join(", ")}`);
        return 1;
      }
      if (ctx.json) ctx.out(JSON.stringify(pool, null, 2));
      else ctx.out(pool.hosts.length ? pool.hosts.join("\n") : `Host pool ${name} has no hosts`);
      return 0;
    },
  },
  poolChange("create", "CreateHostPool", "create a host pool (hosts join it with `host pool change`)"),
  poolChange("delete", "DeleteHostPool", "delete a host pool: its hosts move to the default pool"),
  {
    name: "host pool change",
    args: ["HOSTNAME", "POOL"],
    summary: "move a host to another host pool; -s POOL checks the pool it is in first",
    options: { source: { type: "string", short: "s" } },
    async run(ctx, [hostname, destinationPool], opts) {
      const body = { hostname, sourcePool: opts.source as string | undefined, destinationPool };
      const res = await ctx.client.call<Record<string, never>>(`${HOST}::ChangeHostPool`, body);
      ctx.out(
        ctx.json ? JSON.stringify(res, null, 2) : `Host ${hostname} moved to host pool ${destinationPool}`,
      );
      return 0;
    },
  },
  {
    name: "host pool move",
    args: ["SOURCE", "DEST", "COUNT"],
    summary: "move COUNT hosts from one host pool to another (idle, roomy hosts first; in maintenance last)",
    async run(ctx, [sourcePool, destinationPool, countArg]) {
      if (!/^\d+$/.test(countArg) || Number(countArg) < 1) {
        throw new UsageError(`COUNT: got "${countArg}", expected a whole number of hosts, at least 1`);
      }
      if (Number(countArg) > MAX_UINT32) {
        throw new UsageError(
          `COUNT: got "${countArg}", expected a whole number of hosts from 1 to ${MAX_UINT32} (the API's uint32)`,
        );
      }
      const count = Number(countArg);
      // MoveHosts takes the number of hosts each pool is to have (Peloton's request); the host manager
      // refuses it if another move changed the pools in between, so hosts never move twice.
      const listed = await ctx.client.call<{ pools: HostPoolInfo[] }>(`${HOST}::ListHostPools`, {});
      const has = (name: string) => listed.pools.find((p) => p.name === name)?.hosts.length ?? 0;
      const body = {
        sourcePool,
        srcPoolDesiredHosts: Math.max(0, has(sourcePool) - count),
        destinationPool,
        destPoolDesiredHosts: has(destinationPool) + count,
      };
      const res = await ctx.client.call<{ hosts?: string[] }>(`${HOST}::MoveHosts`, body);
      if (ctx.json) ctx.out(JSON.stringify(res, null, 2));
      else {
        const hosts = res.hosts ?? [];
        ctx.out(
          `Moved ${hosts.length} host${hosts.length === 1 ? "" : "s"} from host pool ${sourcePool} ` +
            `to ${destinationPool}: ${hosts.join(", ")}`,
        );
      }
      return 0;
    },
  },
];

type HostPoolInfo = { name: string; hosts: string[] };

function poolChange(word: "create" | "delete", method: string, summary: string): Command {
  return {
    name: `host pool ${word}`,
    args: ["POOL"],
    summary,
    async run(ctx, [name]) {
      const res = await ctx.client.call<Record<string, never>>(`${HOST}::${method}`, { name });
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : `Host pool ${name} ${word}d`);
      return 0;
    },
  };
}

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
