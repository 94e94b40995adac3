/**
 * `deno task bench-placement --hosts 50000 --tasks 100000 [--workers N] [--seed S] [-j]`: the placement
 * engine and host manager against a busy, mixed cluster (like kube-scheduler's scheduler_perf).
 */
import { parseArgs } from "node:util";
import { HostManager } from "../core/hostmgr/hostmgr.ts";
import type { Gang, Message, RmTask } from "../core/messages.ts";
import { bestFit } from "../core/placement/best_fit.ts";
import { DEFAULT_PLACEMENT_CONFIG, PlacementEngine } from "../core/placement/engine.ts";
import { InProcessExecutor } from "../core/placement/in_process_executor.ts";
import { placeRound } from "../core/placement/plan.ts";
import { PELOTON_POLICIES } from "../core/placement/policy.ts";
import { RoundBuilder } from "../core/placement/round_build.ts";
import type { PlacementRound } from "../core/placement/round.ts";
import type { TaskType } from "../core/model/states.ts";
import type { HostBackend, LaunchSpec } from "../core/ports/host_backend.ts";
import { noMetrics } from "../core/ports/metrics.ts";
import type { PlacementExecutor } from "../core/ports/placement_executor.ts";
import { seededPrng } from "../core/ports/prng.ts";
import type { Receiver } from "../core/ports/transport.ts";
import { WorkerExecutor } from "../prod/placement/worker_executor.ts";
import { SimClock } from "../sim/clock.ts";
import { EventQueue } from "../sim/event_queue.ts";
import { MemoryStore } from "../sim/memory_store.ts";
import { runWithPlacement, SimPlacementExecutor } from "../sim/placement_executor.ts";
import { SimTransport } from "../sim/transport.ts";
import { baselineRound, benchHosts, benchWorkload, busyFor, prefill } from "./bench_workload.ts";

const USAGE = "usage: deno task bench-placement [--hosts N] [--tasks N] [--workers N] [--in-process] " +
  "[--seed S] [--round TASKS] [--overcommit X] [--no-baseline] [--no-warmup] [-j]";

export interface BenchOptions {
  hosts: number;
  tasks: number;
  /** Deno workers (host partitions); 0 places in process without partitions. */
  workers: number;
  inProcess: boolean;
  seed: number;
  /** Tasks dequeued and placed per round. */
  round: number;
  /** How many times the free cpu the workload asks for (saturation). */
  overcommit: number;
  baseline: boolean;
  /** Rounds in flight at once (the engine's `pipelineDepth`, default 2). */
  pipeline?: number;
  /** Places a few rounds of a small separate cluster before timing (JIT warm-up); default true. */
  warmup?: boolean;
}

export interface BenchResult {
  hosts: number;
  tasks: number;
  placed: number;
  failed: number;
  workers: number;
  inProcess: boolean;
  seed: number;
  seconds: number;
  placementsPerSec: number;
  /** Wall time with a round out in the executor. */
  executorSeconds: number;
  /**
   * Wall time the main thread (engine, host manager, stand-ins) sat waiting for a placement result; the
   * rest of `seconds` is its own serial work, which more workers cannot shorten.
   */
  waitSeconds: number;
  /** The placement compute alone: the whole workload as one round over every host. */
  oneRoundSeconds: number;
  rounds: number;
  placedBestFit: number | null;
  bestFitSeconds: number | null;
  placedVsBestFit: number | null;
  hostStateBytes: number;
  peakRssBytes: number;
  overcommittedHosts: number;
  topFailureReasons: Record<string, number>;
}

/** A backend that accepts every launch and never reports: the benchmark measures placement only. */
const nullBackend: HostBackend = {
  start() {},
  launch() {},
  kill() {},
  reconcile() {},
  stop: () => Promise.resolve(),
};

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

export async function runBench(o: BenchOptions): Promise<BenchResult> {
  let peakRss = Deno.memoryUsage().rss;
  const sample = () => (peakRss = Math.max(peakRss, Deno.memoryUsage().rss));
  const prng = seededPrng(o.seed);
  const hosts = benchHosts(prng, o.hosts);
  const gangs = benchWorkload(prng, o.tasks);
  const running = prefill(prng, hosts, busyFor(hosts, gangs, o.overcommit));
  const total = gangs.reduce((n, g) => n + g.tasks.length, 0);

  const queue = new EventQueue();
  const clock = new SimClock(queue);
  const transport = new SimTransport(queue, 0);
  gc();
  const heapBefore = Deno.memoryUsage().heapUsed;
  const hostmgr = new HostManager({
    clock,
    transport,
    backend: nullBackend,
    metrics: noMetrics,
    store: new MemoryStore((fn) => queue.schedule(queue.now, fn)),
    self: "hostmgr",
    jobmgr: "jobmgr",
    resmgr: "resmgr",
  });
  hostmgr.start();
  hostmgr.onBackendEvents(hosts.map((host) => ({ kind: "host-up", host })));
  hostmgr.receive({ kind: "reconcile-tasks", tasks: running });
  gc();
  const hostStateBytes = Deno.memoryUsage().heapUsed - heapBefore;

  const inner: PlacementExecutor = o.inProcess || o.workers === 0
    ? new InProcessExecutor(Math.max(1, o.workers))
    : new WorkerExecutor(o.workers);
  if (inner instanceof WorkerExecutor) await inner.run(emptyRound()); // load the worker modules before timing
  // The placement code is compiled before timing wherever it runs (here or in the workers), on rounds of
  // a separate small cluster: the timed run places all of its own rounds.
  if (o.warmup !== false) await warmUp(inner, o.seed);
  // Wall time with at least one round out in the executor (rounds overlap with workers).
  let executorMs = 0, out = 0, since = 0;
  const timed: PlacementExecutor = {
    partitions: inner.partitions,
    place(round, onResult) {
      if (out++ === 0) since = performance.now();
      inner.place(round, (r) => {
        if (--out === 0) executorMs += performance.now() - since;
        onResult(r);
      });
    },
  };
  // Virtual time models the executor as a server that takes one round per millisecond, in order: a
  // round's result is due after everything the engine did when the one before came back, so the next
  // round is dequeued, leased and built (and the last handed back) while workers place this one.
  let lastDueMs = 0;
  const executor = new WaitTimer(timed, queue, () => {
    lastDueMs = Math.max(queue.now, lastDueMs) + 1;
    return lastDueMs - queue.now;
  });
  const engine = new PlacementEngine(
    {
      clock,
      transport,
      metrics: noMetrics,
      self: "placement",
      resmgr: "resmgr",
      hostmgr: "hostmgr",
      executor,
    },
    {
      ...DEFAULT_PLACEMENT_CONFIG,
      dequeueLimit: o.round,
      roundLimit: o.round,
      reservation: null,
      pipelineDepth: o.pipeline ?? DEFAULT_PLACEMENT_CONFIG.pipelineDepth,
      // Nothing ends in the benchmark, so waiting out Peloton's deadlines would only repeat rounds.
      policies: mapPolicies((p) => ({ ...p, maxDurationMs: 1 })),
    },
  );
  const feed = new Feed(gangs, queue, transport, hostmgr);
  transport.register("hostmgr", hostmgr);
  transport.register("placement", engine);
  transport.register("resmgr", feed);
  transport.register("jobmgr", { receive() {} });
  queue.runUntil(0);
  sample();

  const started = performance.now();
  engine.start();
  const done = () => feed.resolved >= total;
  await runWithPlacement(queue, executor, Infinity, done);
  if (!done()) throw new Error(`The benchmark stalled with ${total - feed.resolved} tasks unresolved`);
  const seconds = (performance.now() - started) / 1000;
  engine.stop();
  sample();
  if (inner instanceof WorkerExecutor) await inner.close();

  let overcommittedHosts = 0;
  for (const h of hostmgr.hosts) {
    const f = h.free;
    if (f.cpuMilli < 0 || f.memMb < 0 || f.diskMb < 0 || f.gpuMilli < 0) overcommittedHosts++;
  }

  let placedBestFit: number | null = null, bestFitSeconds: number | null = null;
  if (o.baseline) {
    const t0 = performance.now();
    const round = baselineRound(hosts, running, gangs);
    const slots = bestFit(round);
    placedBestFit = slots.reduce((n, h) => n + (h >= 0 ? 1 : 0), 0);
    bestFitSeconds = (performance.now() - t0) / 1000;
    sample();
  }
  // Placement compute alone: the whole workload as one round over every host, best of three.
  let roundSeconds = Infinity;
  const exec = o.inProcess || o.workers === 0 ? undefined : new WorkerExecutor(o.workers);
  for (let i = 0; i < 3; i++) {
    const round = baselineRound(hosts, running, gangs, DEFAULT_PLACEMENT_CONFIG.scoreLimit);
    const t0 = performance.now();
    if (exec) await exec.run(round);
    else placeRound(round, Math.max(1, o.workers));
    roundSeconds = Math.min(roundSeconds, (performance.now() - t0) / 1000);
  }
  await exec?.close();
  sample();
  return {
    hosts: o.hosts,
    tasks: total,
    placed: feed.placed,
    failed: feed.failed,
    workers: o.workers,
    inProcess: o.inProcess || o.workers === 0,
    seed: o.seed,
    seconds: round3(seconds),
    placementsPerSec: Math.round(feed.placed / seconds),
    executorSeconds: round3(executorMs / 1000),
    waitSeconds: round3(executor.waitedMs / 1000),
    oneRoundSeconds: round3(roundSeconds),
    rounds: feed.rounds,
    placedBestFit,
    bestFitSeconds: bestFitSeconds === null ? null : round3(bestFitSeconds),
    placedVsBestFit: placedBestFit ? round3(feed.placed / placedBestFit) : null,
    hostStateBytes,
    peakRssBytes: peakRss,
    overcommittedHosts,
    topFailureReasons: Object.fromEntries([...feed.reasons].sort((a, b) => b[1] - a[1]).slice(0, 5)),
  };
}

/** Times how long this thread waits for placement results: the rest of the run is its own work. */
class WaitTimer extends SimPlacementExecutor {
  waitedMs = 0;

  override async next(): Promise<void> {
    const t0 = performance.now();
    await super.next();
    this.waitedMs += performance.now() - t0;
  }
}

/** Stands in for the resource manager (hands out the workload) and the job manager (launches placements). */
class Feed implements Receiver {
  placed = 0;
  failed = 0;
  rounds = 0;
  readonly reasons = new Map<string, number>();
  #next = 0;
  readonly #byId = new Map<string, RmTask>();

  constructor(
    private readonly gangs: Gang[],
    private readonly queue: EventQueue,
    private readonly transport: SimTransport,
    private readonly hostmgr: HostManager,
  ) {
    for (const g of gangs) for (const t of g.tasks) this.#byId.set(t.taskId, t);
  }

  get resolved(): number {
    return this.placed + this.failed;
  }

  receive(msg: Message): void {
    if (msg.kind === "dequeue-gangs") {
      const out: Gang[] = [];
      let n = 0;
      while (this.#next < this.gangs.length && n < msg.limit) {
        const g = this.gangs[this.#next++];
        out.push(g);
        n += g.tasks.length;
      }
      const reply = () => this.transport.send(msg.replyTo, { kind: "gangs", reqId: msg.reqId, gangs: out });
      if (out.length || msg.timeoutMs <= 0) reply();
      else this.queue.schedule(this.queue.now + msg.timeoutMs, reply);
    } else if (msg.kind === "set-placements") {
      this.rounds++;
      for (const p of msg.placements) {
        const tasks: LaunchSpec[] = p.tasks.map((pt) =>
          launchOf(this.#byId.get(pt.taskId)!, p.hostname, p.agentId, pt.ports)
        );
        this.placed += tasks.length;
        // The job manager's part: launch with the lease, so the host manager accounts the placement.
        this.hostmgr.receive({ kind: "launch-tasks", leaseId: p.leaseId, hostname: p.hostname, tasks });
      }
      for (const f of msg.failed) {
        this.failed++;
        const why = f.reason.replace(/[\d,]+ hosts/g, "N hosts");
        this.reasons.set(why, (this.reasons.get(why) ?? 0) + 1);
      }
    }
  }
}

function launchOf(t: RmTask, hostname: string, agentId: string, ports: Record<string, number>): LaunchSpec {
  return {
    taskId: t.taskId,
    jobId: t.jobId,
    instanceId: t.instanceId,
    hostname,
    agentId,
    resources: t.resources,
    ports,
    command: { shell: true, arguments: [] },
    env: {},
    killGracePeriodMs: 0,
    labels: t.labels,
    revocable: t.revocable || undefined,
  };
}

function emptyRound(): PlacementRound {
  return new RoundBuilder([]).build([], 1);
}

/** Places rounds of a 2,000-host cluster (its own seed) until the placement code is compiled. */
async function warmUp(executor: PlacementExecutor, seed: number): Promise<void> {
  const prng = seededPrng(seed + 1_000_003);
  const hosts = benchHosts(prng, 2000);
  const gangs = benchWorkload(prng, 4000);
  const running = prefill(prng, hosts, busyFor(hosts, gangs, 1.25));
  for (let i = 0; i < 5; i++) {
    const round = baselineRound(hosts, running, gangs, DEFAULT_PLACEMENT_CONFIG.scoreLimit);
    await new Promise<void>((resolve) => executor.place(round, () => resolve()));
  }
}

function mapPolicies(f: (p: typeof PELOTON_POLICIES.BATCH) => typeof PELOTON_POLICIES.BATCH) {
  const out = {} as typeof PELOTON_POLICIES;
  for (const [k, v] of Object.entries(PELOTON_POLICIES)) out[k as TaskType] = f(v);
  return out;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function fail(message: string): never {
  console.error(message);
  Deno.exit(2);
}

export async function main(argv: string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        hosts: { type: "string", default: "50000" },
        tasks: { type: "string", default: "100000" },
        workers: { type: "string", default: "1" },
        "in-process": { type: "boolean", default: false },
        seed: { type: "string", default: "1" },
        round: { type: "string", default: "10000" },
        overcommit: { type: "string", default: "1.25" },
        "no-baseline": { type: "boolean", default: false },
        "no-warmup": { type: "boolean", default: false },
        json: { type: "boolean", short: "j", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
  if (values.help) return console.log(USAGE);
  const int = (name: keyof typeof values, min: number) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) {
      fail(`--${name}: got "${values[name]}", expected an integer >= ${min}`);
    }
    return n;
  };
  const overcommit = Number(values.overcommit);
  if (!(overcommit > 0)) fail(`--overcommit: got "${values.overcommit}", expected a positive number`);
  const res = await runBench({
    hosts: int("hosts", 1),
    tasks: int("tasks", 1),
    workers: int("workers", 0),
    inProcess: values["in-process"]!,
    seed: int("seed", 0),
    round: int("round", 1),
    overcommit,
    baseline: !values["no-baseline"],
    warmup: !values["no-warmup"],
  });
  if (values.json) return console.log(JSON.stringify(res, null, 2));
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
  console.log(
    [
      `${res.hosts.toLocaleString("en-US")} hosts, ${res.tasks.toLocaleString("en-US")} tasks, ` +
      `${
        res.inProcess ? `in process (${Math.max(1, res.workers)} partition)` : `${res.workers} workers`
      }, seed ${res.seed}`,
      `placed ${res.placed.toLocaleString("en-US")} in ${res.seconds} s: ${
        res.placementsPerSec.toLocaleString("en-US")
      } placements/s` +
      ` (${res.rounds} rounds, ${res.executorSeconds} s with a round in the executor, ` +
      `${res.waitSeconds} s waiting for one)`,
      res.placedBestFit === null
        ? "full-scan best fit: skipped"
        : `full-scan best fit placed ${res.placedBestFit.toLocaleString("en-US")}` +
          ` (${res.bestFitSeconds} s); engine/best fit = ${res.placedVsBestFit}`,
      `one round of all ${
        res.tasks.toLocaleString("en-US")
      } tasks over every host: ${res.oneRoundSeconds} s in the executor`,
      `host state ${mb(res.hostStateBytes)}, peak RSS ${
        mb(res.peakRssBytes)
      }, over-committed hosts ${res.overcommittedHosts}`,
    ].join("\n"),
  );
}

if (import.meta.main) await main(Deno.args);
