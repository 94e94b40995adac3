/** `peloton jobmgr|resmgr|placement|hostmgr`: each daemon as its own process, finding the others through the store. */
import { portProblem, raiseOpenFilesLimit } from "../daemons/listen.ts";
import { BasicAuth } from "../auth/basic_auth.ts";
import { startHostmgr } from "../daemons/hostmgr_daemon.ts";
import { type RunningDaemon, startJobmgr } from "../daemons/jobmgr_daemon.ts";
import type { DaemonOptions } from "../daemons/process.ts";
import { startPlacement } from "../daemons/placement_daemon.ts";
import { startResmgr } from "../daemons/resmgr_daemon.ts";
import { jsonLogger } from "../log.ts";
import { type Command, type CommandContext, type OptionSpec, UsageError } from "./command.ts";
import { alreadyStopping, finishStop, stopSignals } from "./graceful_stop.ts";
import { parseStoreFlag } from "./store_flag.ts";
import {
  ARCHIVE_FLAGS,
  archiveFlags,
  backendFlags,
  hostPoolFlag,
  MESOS_FLAGS,
  positiveInt,
  startProblem,
} from "./up_command.ts";

/** Peloton's ports for its daemons (its `base.yaml` configs); the job manager's is the CLI's default. */
const PORTS = { jobmgr: 5392, resmgr: 5290, hostmgr: 5291, placement: 5300 } as const;

type Role = keyof typeof PORTS;

const COMMON: OptionSpec = {
  host: { type: "string", default: "127.0.0.1" },
  "data-dir": { type: "string", default: ".peloton" },
  store: { type: "string" },
  "lease-ttl-ms": { type: "string", default: "10000" },
  "auth-config": { type: "string" },
};

async function commonOptions(
  role: Role,
  opts: Record<string, unknown>,
): Promise<Omit<DaemonOptions, "role">> {
  const badPort = portProblem(opts.port ?? PORTS[role]);
  if (badPort) throw new UsageError(badPort);
  const port = Number(opts.port ?? PORTS[role]);
  const dataDir = String(opts["data-dir"]);
  const ttl = positiveInt("lease-ttl-ms", opts["lease-ttl-ms"]);
  if (ttl < 300) throw new UsageError(`--lease-ttl-ms: got ${ttl}, expected at least 300`);
  let auth: BasicAuth | undefined;
  if (opts["auth-config"]) {
    try {
      auth = await BasicAuth.load(String(opts["auth-config"]));
    } catch (e) {
      throw new UsageError(`--auth-config: ${(e as Error).message}`);
    }
  }
  return {
    host: String(opts.host),
    port,
    dataDir,
    store: opts.store ? String(opts.store) : `sqlite:${dataDir}/peloton.sqlite`,
    leaseTtlMs: ttl,
    auth,
    log: jsonLogger({ daemon: role }),
  };
}

/**
 * Runs until SIGINT, SIGTERM or SIGHUP (graceful stop, exit 0; a signal during the stop says it is under
 * way) or a lost lease, claim on the store or store write (exit 1, a supervisor restarts it).
 */
async function serve(ctx: CommandContext, role: Role, daemon: RunningDaemon): Promise<number> {
  const name = `peloton ${role}`;
  // Listened for before the line that says it serves: a supervisor (or a test) may signal it at once.
  const signals = stopSignals((signal) => ctx.err(alreadyStopping(name, signal, daemon.process.stopStep)));
  ctx.out(`${name}: serving at ${daemon.process.url} (instance ${daemon.process.instance})`);
  try {
    const why = await Promise.race([
      signals.stopped.then((signal) => ({ signal })),
      daemon.lost,
      daemon.process.lost,
    ]);
    if (typeof why === "string") {
      ctx.err(`${name}: ${why}; exiting`);
      return 1;
    }
    daemon.process.log("stopping", { signal: why.signal });
    return await finishStop(
      ctx.err,
      name,
      () => daemon.stop(),
      daemon.process.lost,
      () => daemon.process.stopStep ?? "done",
    );
  } finally {
    signals.dispose();
  }
}

function daemonCommand(
  role: Role,
  summary: string,
  options: OptionSpec,
  start: (common: Omit<DaemonOptions, "role">, opts: Record<string, unknown>) => Promise<RunningDaemon>,
): Command {
  return {
    name: role,
    args: [],
    summary,
    offline: true,
    options: { ...COMMON, port: { type: "string", default: String(PORTS[role]) }, ...options },
    async run(ctx, _args, opts) {
      const common = await commonOptions(role, opts);
      // The value's shape only: a daemon whose store does not answer yet waits for it (its /health says
      // so), where `up` checks that the server answers before it starts.
      if (common.store !== undefined) parseStoreFlag(common.store);
      await raiseOpenFilesLimit(common.log);
      let daemon: RunningDaemon;
      try {
        daemon = await start(common, opts);
      } catch (e) {
        // A busy port, or a data dir or store another process owns: one line, not a stack trace.
        const problem = startProblem(e, common.host, common.port);
        if (!problem) throw e;
        ctx.err(`peloton ${role}: ${problem}`);
        return 1;
      }
      return await serve(ctx, role, daemon);
    },
  };
}

export const daemonCommands: Command[] = [
  daemonCommand(
    "jobmgr",
    "run a job manager process (several may run; each drives the jobs of the shards it holds)",
    { "task-restart-backoff-ms": { type: "string" }, ...ARCHIVE_FLAGS },
    (common, opts) => {
      const backoff = opts["task-restart-backoff-ms"];
      if (backoff !== undefined && !(Number(backoff) >= 0)) {
        throw new UsageError(
          `--task-restart-backoff-ms: got "${backoff}", expected a number of milliseconds`,
        );
      }
      return startJobmgr({
        ...common,
        jobmgr: backoff === undefined ? undefined : { initialTaskBackoffMs: Number(backoff) },
        ...archiveFlags(opts),
      });
    },
  ),
  daemonCommand(
    "resmgr",
    "run a resource manager process (leader-elected through the store; others stand by)",
    {},
    (common) => startResmgr(common),
  ),
  daemonCommand(
    "placement",
    "run a placement engine process (several may run at once)",
    {
      "placement-workers": { type: "string", default: "0" },
      "use-host-pool": { type: "boolean", default: false },
    },
    (common, opts) => {
      const n = Number(opts["placement-workers"]);
      if (!Number.isInteger(n) || n < 0) {
        throw new UsageError(
          `--placement-workers: got "${opts["placement-workers"]}", expected an integer >= 0`,
        );
      }
      return startPlacement({ ...common, workers: n, placement: hostPoolFlag(opts) });
    },
  ),
  daemonCommand(
    "hostmgr",
    "run a host manager process (leader-elected; the leader drives the minicluster or a Mesos master: " +
      "--backend mesos --mesos-master URL, with --mesos-principal NAME and --mesos-secret-file PATH for a " +
      "master that authenticates)",
    {
      backend: { type: "string", default: "minicluster" },
      ...MESOS_FLAGS,
      agents: { type: "string", default: "3" },
      "agent-cpus": { type: "string", default: "4" },
      "agent-mem-mb": { type: "string", default: "8192" },
      "agent-disk-mb": { type: "string", default: "20480" },
      "agents-file": { type: "string" },
      "sandbox-gc-delay-ms": { type: "string" },
    },
    async (common, opts) => startHostmgr({ ...common, ...(await backendFlags(opts)) }),
  ),
];
