/**
 * `deno task bench-prod --tasks 10000 [--store URL] [--backend minicluster|mesos] [--agents N] [-j]`: the
 * production scheduler as a real process (`peloton up`), a batch job of short real processes from create
 * to SUCCEEDED, with API calls measured while it runs. A `mysql://` store's database is dropped first.
 */
import { parseArgs } from "node:util";
import { dropMysqlDatabase, parseMysqlUrl } from "../prod/store/mysql_dialect.ts";
import { startPeloton, type UpProcess } from "../prod/testing.ts";

const USAGE = "usage: deno task bench-prod [--tasks N] [--store URL] [--backend minicluster|mesos] " +
  "[--mesos-master URL] [--agents N] [--agent-cpus N] [--cpu C] [--command CMD] [--api-rps N] [--work-dir DIR] " +
  "[--port N] [-j]";

export interface BenchProdOptions {
  tasks: number;
  store?: string;
  backend: "minicluster" | "mesos";
  /** A Mesos master to use; without it `--backend mesos` starts the minicluster emulator. */
  mesosMaster?: string;
  agents: number;
  agentCpus: number;
  /** Cores each task asks for. */
  cpu: number;
  command: string;
  /** API calls per second made while the job runs (JobManager::Get on the job). */
  apiRps: number;
  /**
   * Where the daemons' data and the tasks' sandboxes go (a fresh directory inside it); the system's
   * temporary directory by default. Each task's sandbox is a directory with two files, so the file system
   * shows in the figures: `/dev/shm` takes the disk out of them.
   */
  workDir?: string;
  /**
   * The port `peloton up` serves on (and the minicluster emulator, on the next one, with `--backend mesos`);
   * 0, the default, takes free ones.
   */
  port?: number;
}

export interface BenchProdResult {
  tasks: number;
  seconds: number;
  tasksPerSec: number;
  apiLatencyMs: { p50: number; p99: number; max: number; calls: number };
  peakRssBytes: number;
  store: string;
  backend: string;
  agents: number;
  workDir: string;
  /** Where `peloton up` served during the run. */
  url: string;
  /** Seconds from create until the first task succeeded, and from there to the last. */
  firstSucceededSeconds: number;
}

async function call(url: string, procedure: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/api/v1`, {
    method: "POST",
    headers: { "content-type": "application/json", "rpc-procedure": procedure },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok || json.error) throw new Error(`${procedure}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Peak resident set of a process (Linux `VmHWM`). */
async function peakRss(pid: number): Promise<number> {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(await Deno.readTextFile(`/proc/${pid}/status`));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export async function benchProd(o: BenchProdOptions): Promise<BenchProdResult> {
  const dir = await Deno.makeTempDir({ dir: o.workDir, prefix: "peloton-bench-prod-" });
  let master: UpProcess | undefined;
  let up: UpProcess | undefined;
  try {
    // A run starts from an empty database: a job left by an earlier run would be recovered and run too.
    if (o.store?.startsWith("mysql:")) await dropMysqlDatabase(parseMysqlUrl(o.store));
    let mesosMaster = o.mesosMaster;
    if (o.backend === "mesos" && !mesosMaster) {
      master = await startPeloton([
        "minicluster",
        "--port",
        String(o.port ? o.port + 1 : 0),
        "--agents",
        String(o.agents),
        "--agent-cpus",
        String(o.agentCpus),
        "--agent-mem-mb",
        "65536",
        "--data-dir",
        `${dir}/master`,
        "--max-completed-tasks",
        String(o.tasks + 1000),
      ], /Mesos master emulator at (http:\/\/\S+) /);
      mesosMaster = master.url;
    }
    const args = ["up", "--port", String(o.port ?? 0), "--data-dir", `${dir}/peloton`];
    if (o.store) args.push("--store", o.store);
    if (o.backend === "mesos") args.push("--backend", "mesos", "--mesos-master", mesosMaster!);
    else {
      args.push("--agents", String(o.agents), "--agent-cpus", String(o.agentCpus), "--agent-mem-mb", "65536");
    }
    up = await startPeloton(args, /API at (http:\/\/[^\s]+)\/api\/v1/);
    const url = up.url;
    const pool = await call(url, "peloton.api.respool.ResourceManager::CreateResourcePool", {
      config: {
        name: "bench",
        resources: [
          { kind: "cpu", reservation: 0, limit: 1e6, share: 1 },
          { kind: "memory", reservation: 0, limit: 1e9, share: 1 },
          { kind: "disk", reservation: 0, limit: 1e9, share: 1 },
          { kind: "gpu", reservation: 0, limit: 0, share: 1 },
        ],
        policy: "PriorityFIFO",
      },
    });
    const respoolID = (pool.result as { value: string }).value;
    // Let the resource manager learn the cluster's capacity before the clock starts.
    await new Promise((r) => setTimeout(r, 1000));
    const started = performance.now();
    const created = await call(url, "peloton.api.job.JobManager::Create", {
      config: {
        name: "bench",
        type: "BATCH",
        owningTeam: "bench",
        respoolID: { value: respoolID },
        instanceCount: o.tasks,
        sla: { priority: 1, preemptible: true },
        defaultConfig: {
          resource: { cpuLimit: o.cpu, memLimitMb: 1, diskLimitMb: 1 },
          command: { value: o.command },
        },
      },
    });
    const jobId = (created.jobId as { value: string }).value;
    const latencies: number[] = [];
    let firstSucceeded = 0;
    let done = false;
    // API load: JobManager::Get at a steady rate; its answers also tell when the job is done.
    while (!done) {
      const t0 = performance.now();
      const got = await call(url, "peloton.api.job.JobManager::Get", { id: { value: jobId } });
      latencies.push(performance.now() - t0);
      const rt = (got.jobInfo as { runtime: { state: string; taskStats: Record<string, number> } }).runtime;
      if (!firstSucceeded && (rt.taskStats.SUCCEEDED ?? 0) > 0) firstSucceeded = performance.now();
      if (["SUCCEEDED", "FAILED", "KILLED"].includes(rt.state)) {
        if (rt.state !== "SUCCEEDED") {
          throw new Error(`the job ended ${rt.state}: ${JSON.stringify(rt.taskStats)}`);
        }
        done = true;
      } else await new Promise((r) => setTimeout(r, Math.max(0, 1000 / o.apiRps - (performance.now() - t0))));
    }
    const seconds = (performance.now() - started) / 1000;
    const rss = await peakRss(up.child.pid);
    latencies.sort((a, b) => a - b);
    const round = (x: number) => Math.round(x * 100) / 100;
    return {
      tasks: o.tasks,
      seconds: round(seconds),
      tasksPerSec: Math.round(o.tasks / seconds),
      apiLatencyMs: {
        p50: round(percentile(latencies, 0.5)),
        p99: round(percentile(latencies, 0.99)),
        max: round(latencies.at(-1) ?? 0),
        calls: latencies.length,
      },
      peakRssBytes: rss,
      store: o.store ? o.store.replace(/:[^:@/]*@/, ":***@") : "sqlite (embedded)",
      backend: o.backend,
      agents: o.agents,
      workDir: dir.slice(0, dir.lastIndexOf("/")),
      url,
      firstSucceededSeconds: round((firstSucceeded - started) / 1000),
    };
  } finally {
    await up?.stop();
    await master?.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: {
        tasks: { type: "string", default: "10000" },
        store: { type: "string" },
        backend: { type: "string", default: "minicluster" },
        "mesos-master": { type: "string" },
        agents: { type: "string", default: "8" },
        "agent-cpus": { type: "string", default: "64" },
        cpu: { type: "string", default: "0.05" },
        command: { type: "string", default: "true" },
        "api-rps": { type: "string", default: "20" },
        "work-dir": { type: "string" },
        port: { type: "string", default: "0" },
        json: { type: "boolean", short: "j", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (e) {
    console.error(`${(e as Error).message}\n${USAGE}`);
    Deno.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const backend = values.backend;
  if (backend !== "minicluster" && backend !== "mesos") {
    console.error(`--backend: got "${backend}", expected minicluster or mesos\n${USAGE}`);
    Deno.exit(2);
  }
  const fail = (message: string): never => {
    console.error(`${message}\n${USAGE}`);
    Deno.exit(2);
  };
  const int = (name: "tasks" | "agents" | "agent-cpus") => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 1) fail(`--${name}: got "${values[name]}", expected an integer >= 1`);
    return n;
  };
  const positive = (name: "cpu" | "api-rps") => {
    const n = Number(values[name]);
    if (!(n > 0) || !Number.isFinite(n)) fail(`--${name}: got "${values[name]}", expected a positive number`);
    return n;
  };
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65534) {
    fail(`--port: got "${values.port}", expected an integer from 0 (any free port) to 65534`);
  }
  if (values["work-dir"] !== undefined) {
    const dir = values["work-dir"];
    let isDirectory = false;
    try {
      // Made if missing, as `peloton up --data-dir` makes its dir; a file there is a mistake.
      Deno.mkdirSync(dir, { recursive: true });
      isDirectory = Deno.statSync(dir).isDirectory;
    } catch { /* a file, or no right to make it: said below */ }
    if (!isDirectory) fail(`--work-dir: "${dir}" is not a directory and cannot be made one`);
  }
  const result = await benchProd({
    tasks: int("tasks"),
    store: values.store,
    backend,
    mesosMaster: values["mesos-master"],
    agents: int("agents"),
    agentCpus: int("agent-cpus"),
    cpu: positive("cpu"),
    command: values.command!,
    apiRps: positive("api-rps"),
    workDir: values["work-dir"],
    port,
  });
  if (values.json) console.log(JSON.stringify(result));
  else {
    console.log(
      `${result.tasks} tasks in ${result.seconds} s: ${result.tasksPerSec} tasks/s; API p50 ` +
        `${result.apiLatencyMs.p50} ms, p99 ${result.apiLatencyMs.p99} ms; peak RSS ${
          (result.peakRssBytes / 2 ** 20).toFixed(0)
        } MiB (${result.store}, ${result.backend}, sandboxes in ${result.workDir})`,
    );
  }
  Deno.exit(0);
}
