/** `peloton up`: the four daemons, the store and the minicluster in one process. */
import { StoreTooNewError } from "../store/schema.ts";
import { z } from "zod";
import type { PlacementConfig } from "../../core/placement/engine.ts";
import { type ArchiverConfig, DEFAULT_ARCHIVER_CONFIG } from "../../core/jobmgr/archiver.ts";
import { PELOTON_HOST_POOLS } from "../../core/placement/host_pool_policy.ts";
import type { AgentOptions } from "../minicluster/agent.ts";
import { BasicAuth, fieldProblems, listProblems } from "../auth/basic_auth.ts";
import { ListenError, portProblem, raiseOpenFilesLimit } from "../daemons/listen.ts";
import { jsonLogger } from "../log.ts";
import { DataDirError, DataDirInUseError } from "../minicluster/data_dir_owner.ts";
import { DEFAULT_PORT, startPeloton } from "../server.ts";
import { StoreInUseError } from "../store/store_claim.ts";
import type { Command } from "./command.ts";
import { UsageError } from "./command.ts";
import { alreadyStopping, finishStop, stopSignals } from "./graceful_stop.ts";
import { checkStoreFlag } from "./store_flag.ts";
import { parseYamlValue } from "../../core/model/yaml_load.ts";
import { readUtf8File } from "../utf8.ts";
import { portRangeOverlap, portRangeProblem } from "../backends.ts";
import type { MesosCredentials } from "../mesos/credentials.ts";

/** One agent in `--agents-file`: resources in Peloton's units, attributes and a port range. */
const agentSchema = z.object({
  hostname: z.string().min(1).optional(),
  cpu: z.number().positive().default(4),
  memoryMb: z.number().int().positive().default(8192),
  diskMb: z.number().int().nonnegative().default(20480),
  gpu: z.number().nonnegative().default(0),
  attributes: z.record(z.string(), z.string()).default({}),
  ports: z.tuple([z.number().int().positive(), z.number().int().positive()]).optional(),
}).strict();

/** `--agents-file` as a mapping: its agents under `agents:`. */
const agentsFileSchema = z.object({ agents: z.array(agentSchema).min(1) }).strict();

/**
 * Reads `--agents-file`: a YAML list of agents, or `{agents: [...]}`. Every problem is listed, each naming
 * its field (`agents.1.cpu`), as the job and respool files' are.
 */
async function readAgentsFile(path: string): Promise<Partial<AgentOptions>[]> {
  let raw: unknown;
  try {
    raw = parseYamlValue(await readUtf8File(path));
  } catch (e) {
    throw new UsageError(`--agents-file: cannot read ${path}: ${(e as Error).message}`);
  }
  const refuse = (problems: string[]) => new UsageError(`--agents-file ${path}: ${listProblems(problems)}`);
  let problems: string[];
  if (raw === null || raw === undefined) {
    problems = ["the file is empty; expected a list of agents, or agents: holding one"];
  } else if (Array.isArray(raw)) {
    problems = fieldProblems(z.array(agentSchema).min(1), raw, "agents");
  } else if (typeof raw === "object") {
    problems = fieldProblems(agentsFileSchema, raw);
  } else {
    problems = [`(top level): got ${JSON.stringify(raw)}, expected a list of agents, or agents: holding one`];
  }
  if (problems.length) throw refuse(problems);
  const list = z.array(agentSchema).parse(Array.isArray(raw) ? raw : (raw as { agents: unknown }).agents);
  // Hostnames name hosts everywhere (constraints, maintenance, volumes): each agent's its own. One left out
  // is agent-N, N its place in the list, as the minicluster names it.
  const first = new Map<string, number>();
  list.forEach((a, i) => {
    const hostname = a.hostname || `agent-${i}`;
    const j = first.get(hostname);
    if (j !== undefined) {
      problems.push(
        `agents.${i}.hostname: got "${hostname}"${a.hostname ? "" : " (its default)"}, ` +
          `expected a hostname no other agent has (agents.${j} has it)`,
      );
    } else first.set(hostname, i);
  });
  list.forEach((a, i) => {
    const problem = a.ports && portRangeProblem(a.ports);
    if (problem) problems.push(`agents.${i}.ports: ${problem}`);
  });
  if (problems.length) throw refuse(problems);
  // Agents share localhost: two offering one port would hand it to two tasks.
  const overlap = portRangeOverlap(
    list.map((a, i) => ({
      hostname: a.hostname || `agent-${i}`,
      portRanges: a.ports ? [a.ports] : [],
    })),
  );
  if (overlap) throw refuse([overlap]);
  return list.map((a) => ({
    ...(a.hostname ? { hostname: a.hostname } : {}),
    resources: {
      cpuMilli: Math.round(a.cpu * 1000),
      memMb: a.memoryMb,
      diskMb: a.diskMb,
      gpuMilli: Math.round(a.gpu * 1000),
    },
    attributes: a.attributes,
    ...(a.ports ? { portRanges: [a.ports] as [number, number][] } : {}),
  }));
}

export function positiveInt(name: string, v: unknown): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    throw new UsageError(`--${name}: got "${v}", expected a positive integer`);
  }
  return n;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration flag's value, such as `30d`, `12h`, `90s` or `500ms`, in milliseconds. */
export function durationMs(name: string, v: unknown): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(String(v).trim());
  if (!m) throw new UsageError(`--${name}: got "${v}", expected a duration such as 30d, 12h, 90s or 500ms`);
  return Math.round(Number(m[1]) * UNIT_MS[m[2]]);
}

/** The Mesos backend's flags, which `up` and `hostmgr` share. */
export const MESOS_FLAGS = {
  "mesos-master": { type: "string" },
  "mesos-principal": { type: "string" },
  "mesos-secret-file": { type: "string" },
} as const;

/** The job archiver's flags, which `up` and `jobmgr` share. */
export const ARCHIVE_FLAGS = {
  "archive-after": { type: "string", default: "30d" },
  "archive-every": { type: "string", default: "24h" },
  "archive-max-jobs": { type: "string", default: String(DEFAULT_ARCHIVER_CONFIG.maxJobsPerRun) },
  "archive-dir": { type: "string" },
} as const;

/**
 * `--archive-after 30d` (`off`: never), `--archive-every 24h`, `--archive-max-jobs 5000` and `--archive-dir`
 * (default `<data-dir>/archive`): batch jobs that ended longer ago are exported there and deleted.
 */
export function archiveFlags(
  opts: Record<string, unknown>,
): { archiver: Partial<ArchiverConfig>; archiveDir: string } {
  const after = String(opts["archive-after"]);
  const retentionMs = after === "off" ? 0 : durationMs("archive-after", after);
  const periodMs = durationMs("archive-every", opts["archive-every"]);
  if (periodMs < 1_000) {
    throw new UsageError(`--archive-every: got "${opts["archive-every"]}", expected at least 1s`);
  }
  const maxJobsPerRun = positiveInt("archive-max-jobs", opts["archive-max-jobs"]);
  const archiveDir = opts["archive-dir"] ? String(opts["archive-dir"]) : `${opts["data-dir"]}/archive`;
  // A short period (a test's, a demo's) also starts the first run and a backlog's next one sooner.
  const soon = Math.min(periodMs, DEFAULT_ARCHIVER_CONFIG.initialDelayMs);
  return {
    archiver: { retentionMs, periodMs, maxJobsPerRun, initialDelayMs: soon, backlogDelayMs: soon },
    archiveDir,
  };
}

export const upCommand: Command = {
  name: "up",
  args: [],
  summary:
    "run jobmgr, resmgr, placement and hostmgr in one process with the embedded store and a minicluster " +
    "(or --backend mesos --mesos-master URL; a master that authenticates needs --mesos-principal NAME and " +
    "--mesos-secret-file PATH, the file holding the secret)",
  offline: true,
  options: {
    port: { type: "string", default: String(DEFAULT_PORT) },
    host: { type: "string", default: "127.0.0.1" },
    "data-dir": { type: "string", default: ".peloton" },
    store: { type: "string" },
    agents: { type: "string", default: "3" },
    "agent-cpus": { type: "string", default: "4" },
    "agent-mem-mb": { type: "string", default: "8192" },
    "agent-disk-mb": { type: "string", default: "20480" },
    "agents-file": { type: "string" },
    "sandbox-gc-delay-ms": { type: "string" },
    backend: { type: "string", default: "minicluster" },
    "task-restart-backoff-ms": { type: "string" },
    ...MESOS_FLAGS,
    "placement-workers": { type: "string", default: "0" },
    "use-host-pool": { type: "boolean", default: false },
    "auth-config": { type: "string" },
    ...ARCHIVE_FLAGS,
    verbose: { type: "boolean", short: "v", default: false },
  },
  async run(ctx, _args, opts) {
    const badPort = portProblem(opts.port);
    if (badPort) throw new UsageError(badPort);
    const port = Number(opts.port);
    const { backend, mesosMaster, mesosCredentials, agents, agentOptions, sandboxGcDelayMs } =
      await backendFlags(opts);
    const backoff = opts["task-restart-backoff-ms"];
    if (backoff !== undefined && !(Number(backoff) >= 0)) {
      throw new UsageError(`--task-restart-backoff-ms: got "${backoff}", expected a number of milliseconds`);
    }
    let auth: BasicAuth | undefined;
    if (opts["auth-config"]) {
      try {
        auth = await BasicAuth.load(String(opts["auth-config"]));
      } catch (e) {
        throw new UsageError(`--auth-config: ${(e as Error).message}`);
      }
    }
    const store = opts.store ? String(opts.store) : undefined;
    const unreachable = await checkStoreFlag(store);
    if (unreachable) {
      ctx.err(`peloton up: ${unreachable}`);
      return 1;
    }
    const workers = placementWorkers(opts["placement-workers"]);
    const archive = archiveFlags(opts);
    // Warnings and errors always; -v adds the info lines, one per API call among them.
    const log = jsonLogger({ daemon: "all" }, (line) => ctx.err(line), opts.verbose ? "info" : "warn");
    await raiseOpenFilesLimit(log);
    let server;
    try {
      server = await startPeloton({
        auth,
        jobmgr: {
          ...(backoff === undefined ? {} : { initialTaskBackoffMs: Number(backoff) }),
          // Mesos keeps a persistent volume as it was created: updates may not change its path or size.
          ...(backend === "mesos" ? { fixedVolumes: true } : {}),
        },
        backend,
        mesosMaster,
        mesosCredentials,
        host: String(opts.host),
        port,
        dataDir: String(opts["data-dir"]),
        store,
        agents,
        agentOptions,
        sandboxGcDelayMs,
        log,
        placementWorkers: workers,
        placement: hostPoolFlag(opts),
        ...archive,
      });
    } catch (e) {
      const problem = startProblem(e, String(opts.host), port);
      if (!problem) throw e;
      ctx.err(`peloton up: ${problem}`);
      return 1;
    }
    // Listened for before the line that says it is up: a supervisor (or a test) may signal it at once.
    const signals = stopSignals((signal) =>
      ctx.err(alreadyStopping("peloton up", signal, server.stopStep()))
    );
    const principal = mesosCredentials ? ` as principal ${mesosCredentials.principal}` : "";
    const cluster = backend === "mesos"
      ? `Mesos master ${opts["mesos-master"]}${principal}`
      : `${agents} agents`;
    ctx.out(
      `peloton up: API at ${server.url}/api/v1, web UI at ${server.url}/ui/, ${cluster}, data in ${
        opts["data-dir"]
      }`,
    );
    const why = await Promise.race([signals.stopped.then((signal) => ({ signal })), server.lost]);
    if (typeof why === "string") {
      // As a daemon that lost its lease: no graceful stop, whose writes could not be stored; a supervisor
      // restarts it, and the next start recovers from the store and ends the tasks this one left running.
      ctx.err(`peloton up: ${why}; exiting`);
      return 1;
    }
    ctx.err(`peloton up: stopping (${why.signal})`);
    try {
      return await finishStop(
        ctx.err,
        "peloton up",
        () => server.stop((line) => ctx.err(`peloton up: ${line}`)),
        server.lost,
        () => server.stopStep(),
      );
    } finally {
      signals.dispose();
    }
  },
};

/**
 * The one line to print for a start that failed for a reason the operator can act on (the data dir or the
 * store is held by another live process, the port is taken, a file it could not make or write: a full disk,
 * no permission, a path through a file), or undefined for anything else.
 */
export function startProblem(e: unknown, host: string, port: number): string | undefined {
  if (
    e instanceof DataDirInUseError || e instanceof DataDirError || e instanceof StoreInUseError ||
    e instanceof StoreTooNewError
  ) {
    return e.message;
  }
  const bind = e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.AddrNotAvailable
    ? new ListenError(host, port, e)
    : e;
  if (bind instanceof ListenError) {
    return bind.inUse ? `${bind.message}; pick another with --port` : bind.message;
  }
  return fileProblem(e) ? (e as Error).message : undefined;
}

/** The system's file errors the operator fixes (and Deno's own error classes for some of them). */
const FILE_ERRORS = [
  Deno.errors.PermissionDenied,
  Deno.errors.NotFound,
  Deno.errors.NotADirectory,
  Deno.errors.IsADirectory,
  Deno.errors.FilesystemLoop,
];
/** ENOSPC, EROFS, EDQUOT, EIO and EMFILE, and SQLite's words for a full disk, a read-only or unopenable file. */
const FILE_ERROR_TEXT =
  /\(os error (28|30|122|5|24)\)|database or disk is full|SQLITE_FULL|disk I\/O error|attempt to write a readonly database|unable to open database file/;

/** Whether `e`, or an error it was caused by, is a file the start could not make, open or write. */
function fileProblem(e: unknown): boolean {
  for (let err = e, depth = 0; err instanceof Error && depth < 8; err = err.cause, depth++) {
    if (FILE_ERRORS.some((kind) => err instanceof kind) || FILE_ERROR_TEXT.test(err.message)) return true;
  }
  return false;
}

/** `--use-host-pool`: Peloton's `use_host_pool`, each kind of work placed in its host pool. */
export function hostPoolFlag(opts: Record<string, unknown>): Partial<PlacementConfig> {
  return opts["use-host-pool"] ? { hostPools: PELOTON_HOST_POOLS } : {};
}

/** `--placement-workers N`: Deno workers for placement rounds (0: in process). */
function placementWorkers(v: unknown): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    throw new UsageError(`--placement-workers: got "${v}", expected an integer >= 0`);
  }
  return n;
}

/**
 * `--mesos-principal NAME` and `--mesos-secret-file PATH`: the HTTP basic credentials the Mesos backend sends
 * the master and its agents (Peloton's `mesos.framework.principal` and secret file); the principal is the
 * framework's too. The secret is read from the file, trailing newlines stripped, and never taken on the
 * command line, where `ps` would show it.
 */
async function mesosCredentialsFlags(
  opts: Record<string, unknown>,
  backend: string,
): Promise<MesosCredentials | undefined> {
  const principal = opts["mesos-principal"], file = opts["mesos-secret-file"];
  if (principal === undefined && file === undefined) return undefined;
  if (backend !== "mesos") {
    const flag = principal !== undefined ? "mesos-principal" : "mesos-secret-file";
    throw new UsageError(`--${flag}: only used with --backend mesos`);
  }
  if (principal === undefined) {
    throw new UsageError(
      `--mesos-principal: expected the principal whose secret --mesos-secret-file ${file} holds`,
    );
  }
  if (file === undefined) {
    throw new UsageError(
      `--mesos-secret-file: expected the file holding the secret of principal ${JSON.stringify(principal)} ` +
        "(--mesos-principal); a secret is never taken on the command line",
    );
  }
  const name = String(principal);
  // HTTP basic authentication ends the principal at the first colon.
  if (name === "" || name.includes(":")) {
    throw new UsageError(
      `--mesos-principal: got ${JSON.stringify(name)}, expected a non-empty name without ':'`,
    );
  }
  let secret: string;
  try {
    secret = (await readUtf8File(String(file))).replace(/(\r?\n)+$/, "");
  } catch (e) {
    throw new UsageError(`--mesos-secret-file: cannot read ${file}: ${(e as Error).message}`);
  }
  if (secret === "") {
    throw new UsageError(
      `--mesos-secret-file: ${file} is empty; expected the secret of principal ${JSON.stringify(name)}`,
    );
  }
  return { principal: name, secret };
}

/** A master given as Peloton's config gives it, `host:port` without a scheme (the client adds `http://`). */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

/**
 * What is wrong with `--mesos-master`, or undefined: each of its comma-separated masters must be an http or
 * https URL naming a host, or `host:port`. Checked at start, so that a typo is not retried against forever.
 */
export function mesosMasterProblem(value: string): string | undefined {
  for (const part of value.split(",").map((u) => u.trim())) {
    if (part === "") return `"" names no master`;
    const bare = !part.includes("://");
    if (bare && !HOST_PORT.test(part)) return `${JSON.stringify(part)} is neither a URL nor host:port`;
    let url: URL;
    try {
      url = new URL(bare ? `http://${part}` : part);
    } catch {
      return `${JSON.stringify(part)} is not a URL`;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return `${JSON.stringify(part)} is a ${url.protocol} URL`;
    }
    if (url.hostname === "") return `${JSON.stringify(part)} names no host`;
    // What the client would drop without a word, or retry against for good.
    if (url.username || url.password) {
      return "a master URL carries no credentials: give them with --mesos-principal and --mesos-secret-file";
    }
    if (url.port === "0") return `${JSON.stringify(part)} names port 0`;
    if (url.pathname !== "/" || url.search || url.hash) {
      return `${
        JSON.stringify(part)
      } has a path, query or fragment (the client talks to the master's /api/v1)`;
    }
  }
  return undefined;
}

/**
 * The backend flags `up` and `hostmgr` share: `--backend`, the Mesos master and its credentials
 * (`--mesos-master`, `--mesos-principal`, `--mesos-secret-file`), and the minicluster's agents (`--agents-file`,
 * or `--agents` of `--agent-cpus`, `--agent-mem-mb` and `--agent-disk-mb` each).
 */
export async function backendFlags(opts: Record<string, unknown>): Promise<{
  backend: "minicluster" | "mesos";
  mesosMaster: string | undefined;
  mesosCredentials?: MesosCredentials;
  agents: number;
  agentOptions: Partial<AgentOptions>[];
  sandboxGcDelayMs?: number;
}> {
  const backend = String(opts.backend);
  if (backend !== "minicluster" && backend !== "mesos") {
    throw new UsageError(`--backend: got "${backend}", expected minicluster or mesos`);
  }
  if (backend === "mesos" && !opts["mesos-master"]) {
    throw new UsageError(
      "--mesos-master: expected the master's URL (e.g. http://127.0.0.1:5050) with --backend mesos",
    );
  }
  // As the credentials' flags: a master named for the minicluster would be ignored without a word.
  if (backend !== "mesos" && opts["mesos-master"] !== undefined) {
    throw new UsageError("--mesos-master: only used with --backend mesos");
  }
  const badMaster = backend === "mesos" ? mesosMasterProblem(String(opts["mesos-master"])) : undefined;
  if (badMaster) {
    // Never the password a URL's user info would carry, which this refuses.
    const got = JSON.stringify(String(opts["mesos-master"]).replace(/\/\/[^/@]*@/g, "//***@"));
    throw new UsageError(
      `--mesos-master: got ${got}: ${badMaster}; expected the master's http or https URL with a host ` +
        "(e.g. http://127.0.0.1:5050) or its host:port, or several separated by commas",
    );
  }
  const mesosCredentials = await mesosCredentialsFlags(opts, backend);
  const fromFile = opts["agents-file"] ? await readAgentsFile(String(opts["agents-file"])) : undefined;
  const agents = fromFile ? fromFile.length : positiveInt("agents", opts.agents);
  const cpus = Number(opts["agent-cpus"]);
  if (!(cpus > 0)) {
    throw new UsageError(`--agent-cpus: got "${opts["agent-cpus"]}", expected a positive number`);
  }
  const resources = {
    cpuMilli: Math.round(cpus * 1000),
    memMb: positiveInt("agent-mem-mb", opts["agent-mem-mb"]),
    diskMb: positiveInt("agent-disk-mb", opts["agent-disk-mb"]),
    gpuMilli: 0,
  };
  const gc = opts["sandbox-gc-delay-ms"];
  if (gc !== undefined && !/^\d{1,15}$/.test(String(gc))) {
    throw new UsageError(
      `--sandbox-gc-delay-ms: got "${gc}", expected a whole number of milliseconds (how long an ended run's ` +
        "sandbox is kept; a week by default)",
    );
  }
  return {
    backend,
    mesosMaster: opts["mesos-master"] ? String(opts["mesos-master"]) : undefined,
    ...(mesosCredentials ? { mesosCredentials } : {}),
    agents,
    agentOptions: fromFile ?? Array.from({ length: agents }, () => ({ resources })),
    ...(gc === undefined ? {} : { sandboxGcDelayMs: Number(gc) }),
  };
}
