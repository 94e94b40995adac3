/** `peloton minicluster`: a local master that speaks the documented Mesos v1 HTTP API, with real-process agents. */
import { portProblem } from "../daemons/listen.ts";
import { MesosMaster } from "../mesos/master.ts";
import type { Command } from "./command.ts";
import { UsageError } from "./command.ts";
import { alreadyStopping, finishStop, stopSignals } from "./graceful_stop.ts";
import { startProblem } from "./up_command.ts";

function nonNegativeInt(name: string, v: unknown, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > max) {
    throw new UsageError(`--${name}: got "${v}", expected an integer from 0 to ${max}`);
  }
  return n;
}

export const miniclusterCommand: Command = {
  name: "minicluster",
  args: [],
  summary: "run a Mesos-API-compatible master emulator whose agents run tasks as local processes",
  offline: true,
  options: {
    port: { type: "string", default: "5050" },
    host: { type: "string", default: "127.0.0.1" },
    agents: { type: "string", default: "3" },
    "data-dir": { type: "string", default: ".peloton/mesos" },
    "agent-cpus": { type: "string", default: "4" },
    "agent-mem-mb": { type: "string", default: "8192" },
    "heartbeat-seconds": { type: "string", default: "15" },
    "status-retry-ms": { type: "string", default: "10000" },
    "max-completed-tasks": { type: "string", default: "1000" },
    verbose: { type: "boolean", short: "v", default: false },
  },
  async run(ctx, _args, opts) {
    const badPort = portProblem(opts.port);
    if (badPort) throw new UsageError(badPort);
    const port = Number(opts.port);
    const agents = nonNegativeInt("agents", opts.agents, 1000);
    const cpus = Number(opts["agent-cpus"]);
    if (!(cpus > 0)) {
      throw new UsageError(`--agent-cpus: got "${opts["agent-cpus"]}", expected a positive number`);
    }
    const memMb = nonNegativeInt("agent-mem-mb", opts["agent-mem-mb"]);
    const heartbeat = Number(opts["heartbeat-seconds"]);
    if (!(heartbeat > 0)) {
      throw new UsageError(
        `--heartbeat-seconds: got "${opts["heartbeat-seconds"]}", expected a positive number`,
      );
    }
    // Mesos resends an unacknowledged status update after 10 s, doubling; tests and demos wait less.
    const retryMs = nonNegativeInt("status-retry-ms", opts["status-retry-ms"] ?? 10_000);
    if (retryMs < 10) throw new UsageError(`--status-retry-ms: got ${retryMs}, expected at least 10`);
    const maxCompleted = nonNegativeInt("max-completed-tasks", opts["max-completed-tasks"] ?? 1000);
    const dataDir = String(opts["data-dir"]);
    const host = String(opts.host);
    let master: MesosMaster;
    try {
      // The master holds the data dir while it runs; taking it over after a crash (kill -9), it ends the
      // task processes the crashed one left running before its agents come up.
      master = await MesosMaster.start({
        dataDir,
        dataDirOwner: "peloton minicluster",
        hostname: host,
        port,
        agents: Array.from({ length: agents }, () => ({ cpus, memMb })),
        heartbeatIntervalMs: heartbeat * 1000,
        statusUpdateRetryMinMs: retryMs,
        maxCompletedTasks: maxCompleted,
        statusUpdateRetryMaxMs: Math.max(retryMs, 600_000),
        spawnInWorker: true,
        log: opts.verbose ? (line) => ctx.err(line) : undefined,
      });
    } catch (e) {
      const problem = startProblem(e, host, port);
      if (!problem) throw e;
      ctx.err(`peloton minicluster: ${problem}`);
      return 1;
    }
    // SIGHUP too: a closed terminal would otherwise end it at once and leave its agents' tasks running.
    // Listened for before the line that says it is up: a supervisor (or a test) may signal it at once.
    const signals = stopSignals((signal) =>
      ctx.err(alreadyStopping("peloton minicluster", signal, "ending tasks"))
    );
    ctx.out(
      `peloton minicluster: Mesos master emulator at ${master.url} (scheduler API ${master.url}/api/v1/scheduler), ` +
        `${agents} agents, sandboxes in ${dataDir}`,
    );
    ctx.out(
      "  an emulator of the documented Mesos v1 protocol, not Apache Mesos; use with: peloton up --backend mesos",
    );
    try {
      const signal = await signals.stopped;
      ctx.err(`peloton minicluster: stopping (${signal})`);
      return await finishStop(ctx.err, "peloton minicluster", () => master.stop(), new Promise(() => {}));
    } finally {
      signals.dispose();
    }
  },
};
