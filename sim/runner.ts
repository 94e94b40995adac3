/** The simulator's one wiring place: builds the four daemons on virtual time and runs a scenario. */
import { HostManager } from "../core/hostmgr/hostmgr.ts";
import { DEFAULT_JOBMGR_CONFIG, JobManager } from "../core/jobmgr/jobmgr.ts";
import type { ApiReply, Message } from "../core/messages.ts";
import { isTerminalJobState } from "../core/model/states.ts";
import { seededPrng } from "../core/ports/prng.ts";
import { DEFAULT_PLACEMENT_CONFIG, type PlacementConfig, PlacementEngine } from "../core/placement/engine.ts";
import { InProcessExecutor } from "../core/placement/in_process_executor.ts";
import { WorkerExecutor } from "../prod/placement/worker_executor.ts";
import { runWithPlacement, SimPlacementExecutor } from "./placement_executor.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "../core/resmgr/resmgr.ts";
import { PendingCalls } from "../core/rpc.ts";
import { SimClock } from "./clock.ts";
import { DEFAULT_SIM_CLUSTER_OPTIONS, SimCluster, type UsageGroup } from "./cluster.ts";
import { DrainWatch } from "./drain_watch.ts";
import { EventQueue } from "./event_queue.ts";
import { errorText, type EventRecord, scheduleEvents } from "./events.ts";
import { checkInvariants, MaintenanceSlaCheck } from "./invariants.ts";
import { MemoryStore } from "./memory_store.ts";
import { SimMetrics } from "./metrics.ts";
import { poolConfig, type Scenario, type ScenarioPool, type Workload } from "./scenario.ts";
import { hostsOf } from "./scenario_hosts.ts";
import { neverStartingJobs, StallWatch, type StuckJob } from "./stall.ts";
import { preemptionOf, SimStats } from "./stats.ts";
import type { TraceJob, TraceStop } from "./trace.ts";
import { SimTransport } from "./transport.ts";
import { scheduleWorkload, type Submission } from "./workload.ts";

/** What a run reads from files, read beforehand by the caller (the runner does no I/O). */
export interface RunInputs {
  /** Job file bodies by workload name. */
  templates?: Record<string, Record<string, unknown>>;
  /** Parsed traces by workload name. */
  traces?: Record<string, TraceJob[]>;
}

export interface RunOptions extends RunInputs {
  seed: number;
  /** Check invariants every sample interval and at the end (tests turn this on). */
  checkInvariants?: boolean;
  /** Called every sample interval with progress; returning true stops the run early. */
  onSample?: (simulatedMs: number, events: number) => boolean | void;
  /** Let the host event loop run between samples (signals, progress output). */
  yieldBetweenSamples?: boolean;
  /** Host partitions each placement round is split into (default 1); the same count gives the same run. */
  placementPartitions?: number;
  /** Place the partitions in that many Deno workers instead of in process (same results, real parallelism). */
  placementWorkers?: boolean;
  /** Overrides of the placement engine's config (rounds, deadlines, host reservation). */
  placementConfig?: Partial<PlacementConfig>;
}

/** The wired simulation, exposed so tests can look inside after a run. */
export interface Simulation {
  scenario: Scenario;
  queue: EventQueue;
  cluster: SimCluster;
  jobmgr: JobManager;
  resmgr: ResourceManager;
  hostmgr: HostManager;
  placement: PlacementEngine;
  store: MemoryStore;
  transport: SimTransport;
  stats: SimStats;
  metrics: SimMetrics;
  /** Jobs the workloads submitted, with the API's answer. */
  submissions: (Submission & { accepted?: boolean; error?: string })[];
  /** Timed events as they happened. */
  events: EventRecord[];
  /** With `checkInvariants`: services' SLA against host maintenance, checked as drains happen. */
  maintenanceSla?: MaintenanceSlaCheck;
  /** The scenario's drains, timed as their hosts empty. */
  drains: DrainWatch;
  /** Job arrivals scheduled and not yet come (0 once every workload has submitted its last job). */
  pendingArrivals: number;
  endedEarly: boolean;
  /**
   * Jobs nothing could ever start (`stall.ts`): those an open-ended run stopped waiting for, or those a run
   * with a durationSec ended with that its pools could never admit (or that queued behind such work).
   */
  stuck: StuckJob[];
  /** Pool ids by path, once the scenario's pools exist. */
  poolIds: Map<string, string>;
  /** A public API call from a client; the answer arrives as virtual time advances. */
  api(procedure: string, body: unknown): Promise<ApiReply>;
  /**
   * Runs virtual time up to `ms`, sampling statistics (and checking invariants) every interval; stops
   * right after the event that makes `done` true, if one does (time then stands there, between samples).
   */
  advanceTo(ms: number, done?: () => boolean): Promise<void>;
  /**
   * Samples the statistics now unless the last sample is now: a run that ends between two sample times
   * (its horizon off the sample grid) still has its last, shorter interval in the series and averages.
   */
  sampleEnd(): void;
  /** Releases placement workers. */
  close(): Promise<void>;
}

export const ADDRESSES = {
  jobmgr: "jobmgr",
  resmgr: "resmgr",
  placement: "placement",
  hostmgr: "hostmgr",
  client: "sim/client",
};

/**
 * Runs a scenario to its horizon, or, without a durationSec, until its last job ends (or no job left can
 * ever start). It yields to the host event loop between samples so a progress bar can draw and Ctrl-C can
 * stop it; the simulation itself never awaits, so the same seed gives the same result.
 */
export async function runScenario(scenario: Scenario, options: RunOptions): Promise<Simulation> {
  const sim = createSimulation(scenario, options);
  const horizonMs = scenario.durationSec !== undefined ? scenario.durationSec * 1000 : Infinity;
  const sampleMs = scenario.settings.sampleIntervalSec * 1000;
  // An open-ended run ends with the event that ends its last job, not at the next sample time: its
  // length, rates and averages are the work's, whatever the sample interval.
  const done = horizonMs === Infinity ? allJobsDone(sim) : undefined;
  const stall = horizonMs === Infinity ? new StallWatch(sim) : undefined;
  let t = 0;
  for (;;) {
    t = Math.min(t + sampleMs, horizonMs);
    await sim.advanceTo(t, done);
    if (done?.()) {
      // The job manager saw its last job end; the other daemons hear of it a message later.
      await settle(sim);
      break;
    }
    if (options.yieldBetweenSamples) await new Promise((r) => setTimeout(r, 0));
    if (options.onSample?.(t, sim.queue.processed)) {
      sim.endedEarly = true;
      break;
    }
    if (t >= horizonMs) break;
    const stuck = stall?.check(t);
    if (stuck) {
      sim.stuck = stuck;
      break;
    }
  }
  sim.sampleEnd();
  // A run to its durationSec says which of the jobs it ended with nothing in it could have started.
  if (horizonMs !== Infinity && !sim.endedEarly) sim.stuck = neverStartingJobs(sim);
  if (options.checkInvariants) checkInvariants(sim, options.seed);
  await sim.close();
  return sim;
}

/** How long, at most, an open-ended run waits at its end for the messages then in flight to arrive. */
const SETTLE_LIMIT_MS = 10_000;

/**
 * Runs on until no message is in flight: the statuses that ended the last job reach the resource manager
 * (which releases their allocation) as they reached the job manager, so the last sample and the pools at
 * the end show what the daemons know once the work is over, not one latency before. A few milliseconds of
 * latency at most; bounded all the same, should the daemons keep talking. Only an open-ended run's end.
 */
async function settle(sim: Simulation): Promise<void> {
  const idle = () => sim.transport.inFlight === 0;
  if (idle()) return;
  await sim.advanceTo(sim.queue.now + SETTLE_LIMIT_MS, idle);
}

/**
 * Whether every job submitted has ended (or was refused) and none is still to come: checked after every
 * event of an open-ended run, so it costs a step per call. Jobs end for good (a terminal job is not run
 * again, and one the job manager forgot ended), so the submissions found done are not looked at again.
 */
function allJobsDone(sim: Simulation): () => boolean {
  let doneUpTo = 0;
  return () => {
    const subs = sim.submissions;
    if (sim.pendingArrivals !== 0 || subs.length === 0) return false;
    for (; doneUpTo < subs.length; doneUpTo++) {
      const sub = subs[doneUpTo];
      if (sub.accepted !== true) {
        if (sub.accepted === false) continue;
        return false;
      }
      // A job no longer in the job manager's memory ended (it forgets finished jobs when asked to).
      const job = sim.jobmgr.jobs.get(sub.jobId);
      if (job !== undefined && !isTerminalJobState(job.runtime.state)) return false;
    }
    return true;
  };
}

/**
 * Tells the cluster which hosts the host manager has DOWN for maintenance, as it says when hosts change
 * (`host-inventory`, sent at the change): their machines are down, so they leave the capacity utilization
 * is over, as failed hosts do. A host listed LOST keeps what it had: its agent is gone, and it counts in no
 * capacity either way until it is back.
 */
function machinesDown(cluster: SimCluster, msg: Message): void {
  if (msg.kind !== "host-inventory") return;
  for (const h of msg.hosts) {
    if (h.state !== "LOST") cluster.setMaintenanceDown(h.hostname, h.state === "HOST_STATE_DOWN");
  }
}

/** Whether tasks of the scenario leave cpu unused or run on slack: only then do agents estimate slack. */
function modelsSlack(scenario: Scenario): boolean {
  return scenario.workloads.some((w) => w.cpuUsage !== undefined || w.revocable) ||
    scenario.events.some((e) => e.usage !== undefined);
}

/**
 * Wires a simulation and schedules its scenario without running it: tests drive it with `api` and
 * `advanceTo`, and `runScenario` runs it to the end.
 */
export function createSimulation(scenario: Scenario, options: RunOptions): Simulation {
  const s = scenario.settings;
  const queue = new EventQueue();
  const clock = new SimClock(queue);
  const prng = seededPrng(options.seed);
  const transport = new SimTransport(queue, s.rpcLatencyMs);
  // The job manager hands the store snapshots it never changes: no need to copy them again.
  const store = new MemoryStore((fn) => queue.schedule(queue.now, fn), {
    keepEvents: s.recordTaskEvents,
    adoptWrites: true,
    archiveFinishedTasks: s.untrackFinishedJobs,
  });
  const metrics = new SimMetrics();
  const cluster = new SimCluster(queue, prng, {
    ...DEFAULT_SIM_CLUSTER_OPTIONS,
    startupMs: s.taskStartupSec * 1000,
    statusBatchMs: s.statusBatchMs,
  });
  // Hosts `<class>-<n>` with rack, zone and pool attributes when asked; the cluster records their class.
  for (const c of scenario.hostClasses) cluster.addHosts(hostsOf(c), c.name);
  const a = ADDRESSES;

  const hostmgr = new HostManager({
    clock,
    transport,
    backend: cluster,
    metrics,
    store,
    self: a.hostmgr,
    jobmgr: a.jobmgr,
    resmgr: a.resmgr,
  });
  const resmgr = new ResourceManager(
    { clock, transport, store, prng, metrics, self: a.resmgr, hostmgr: a.hostmgr },
    {
      ...DEFAULT_RESMGR_CONFIG,
      schedulingPeriodMs: s.schedulingPeriodMs,
      entitlementPeriodMs: s.entitlementPeriodSec * 1000,
      preemption: {
        enabled: s.preemption.enabled,
        periodMs: s.preemption.periodSec * 1000,
        sustainedOverAllocationCount: s.preemption.sustainedOverAllocationCount,
        preemptingTimeoutMs: s.preemption.preemptingTimeoutSec * 1000,
      },
    },
  );
  const partitions = options.placementPartitions ?? 1;
  const workers = options.placementWorkers ? new WorkerExecutor(partitions) : undefined;
  const executor = new SimPlacementExecutor(workers ?? new InProcessExecutor(partitions), queue);
  const placement = new PlacementEngine(
    { clock, transport, metrics, self: a.placement, resmgr: a.resmgr, hostmgr: a.hostmgr, executor },
    {
      ...DEFAULT_PLACEMENT_CONFIG,
      dequeueTimeoutMs: s.placementDequeueTimeoutMs,
      ...options.placementConfig,
    },
  );
  const jobmgr = new JobManager(
    { clock, transport, store, prng, metrics, self: a.jobmgr, resmgr: a.resmgr, hostmgr: a.hostmgr },
    {
      ...DEFAULT_JOBMGR_CONFIG,
      recordEvents: s.recordTaskEvents,
      placementPollTimeoutMs: s.placementPollTimeoutMs,
      untrackTerminalJobs: s.untrackFinishedJobs,
    },
  );
  transport.register(a.hostmgr, hostmgr);
  transport.register(a.resmgr, resmgr);
  transport.register(a.placement, placement);
  transport.register(a.jobmgr, jobmgr);

  const sampleMs = s.sampleIntervalSec * 1000;
  const horizonMs = scenario.durationSec !== undefined ? scenario.durationSec * 1000 : Infinity;
  // A preemption counts as its run ends killed: the job manager's record says what it killed the run for.
  const stats = new SimStats(
    cluster,
    { warmupMs: s.warmupSec * 1000, sampleMs },
    (taskId) => preemptionOf(jobmgr.find(taskId)?.task),
  );
  // Averages after the warm-up start from what hosts had held by its end, to the millisecond.
  if (s.warmupSec > 0) queue.schedule(s.warmupSec * 1000, () => stats.markWarmup(cluster.usage, queue.now));
  const drains = new DrainWatch();
  const maintenanceSla = options.checkInvariants ? new MaintenanceSlaCheck(jobmgr.jobs) : undefined;
  // Drains are timed only in runs that have some, the SLA checked only with invariant checks: other runs
  // do no extra work per message.
  const drained = scenario.events.some((e) => e.drain) ? drains : undefined;
  transport.tap = drained || maintenanceSla
    ? (to, msg) => {
      stats.observe(to, msg, queue.now);
      machinesDown(cluster, msg);
      drained?.observe(msg, queue.now);
      maintenanceSla?.observe(msg, queue.now);
    }
    : (to, msg) => {
      stats.observe(to, msg, queue.now);
      machinesDown(cluster, msg);
    };
  const calls = new PendingCalls<ApiReply>();
  transport.register(a.client, { receive: (m: Message) => m.kind === "api-reply" && calls.resolve(m) });
  const call = (procedure: string, body: unknown, onReply: (r: ApiReply) => void) => {
    const reqId = calls.register(onReply);
    const to = procedure.startsWith("peloton.api.respool")
      ? a.resmgr
      : procedure.startsWith("peloton.api.v0.host")
      ? a.hostmgr
      : a.jobmgr;
    transport.send(to, { kind: "api", reqId, replyTo: a.client, procedure, body });
  };

  const sim: Simulation = {
    scenario,
    queue,
    cluster,
    jobmgr,
    resmgr,
    hostmgr,
    placement,
    store,
    transport,
    stats,
    metrics,
    submissions: [],
    events: [],
    ...(maintenanceSla ? { maintenanceSla } : {}),
    drains,
    pendingArrivals: 0,
    endedEarly: false,
    stuck: [],
    poolIds: new Map<string, string>([["/", "root"]]),
    api: (procedure, body) => new Promise((resolve) => call(procedure, body, resolve)),
    advanceTo: async (ms, done) => {
      let t = queue.now;
      while (t < ms) {
        t = Math.min(ms, (Math.floor(t / sampleMs) + 1) * sampleMs);
        // Virtual time stops only where a placement result is due and still out in workers.
        await runWithPlacement(queue, executor, t, done);
        if (done?.()) return;
        if (t % sampleMs === 0) stats.sample(t, sim);
        if (options.checkInvariants) checkInvariants(sim, options.seed);
      }
    },
    sampleEnd: () => {
      if (queue.now > stats.lastSampleMs) stats.sample(queue.now, sim);
    },
    close: async () => await workers?.close(),
  };
  hostmgr.start();
  resmgr.start();
  placement.start();
  jobmgr.start();

  const usageGroups = new Map<string, UsageGroup>(scenario.workloads.map((w) => [w.name, { level: 1 }]));
  if (modelsSlack(scenario)) {
    const every = s.slackIntervalSec * 1000;
    const tick = () => {
      cluster.estimateSlack();
      queue.schedule(queue.now + every, tick);
    };
    queue.schedule(every, tick);
  }
  createPools(scenario.respools, "/", call, sim.poolIds, () => {
    // The cluster is set up before its work comes, as a production cluster is: the new pools' entitlements
    // are computed now, with no demand, not in the first scheduling period along with the work of time 0
    // (which would then be entitled at once, where production waits for the next entitlement period).
    resmgr.recalculate();
    for (const w of scenario.workloads) {
      scheduleWorkload(w, {
        // Each workload draws from a stream of its own: what it submits does not depend on how the cluster
        // schedules, so runs that differ in a setting compare the same work (common random numbers).
        prng: seededPrng(streamSeed(options.seed, w.name)),
        outcomeSeed: streamSeed(options.seed, `${w.name}/outcomes`),
        schedule: (at, fn) => {
          sim.pendingArrivals++;
          queue.schedule(Math.max(at, queue.now), () => {
            sim.pendingArrivals--;
            fn();
          });
        },
        horizonMs,
        submit: (sub) => submit(sim, w, sub, call),
        cluster,
        template: w.jobFile ? options.templates?.[w.name] : undefined,
        trace: options.traces?.[w.name],
        traceHostClass: w.trace ? scenario.hostClasses.find((c) => c.name === w.trace!.hostClass) : undefined,
        usageGroup: usageGroups.get(w.name)!,
      });
    }
    scheduleEvents(scenario, {
      queue,
      cluster,
      prng,
      api: call,
      poolIds: sim.poolIds,
      usageGroups,
      log: sim.events,
      drains,
    });
  });
  return sim;
}

type Call = (procedure: string, body: unknown, onReply: (r: ApiReply) => void) => void;

/** Submits a job through the public API; an elastic job then grows step by step while it runs. */
function submit(sim: Simulation, w: Workload, sub: Submission, call: Call): void {
  const entry: Simulation["submissions"][number] = { ...sub };
  sim.submissions.push(entry);
  sim.cluster.setPool(sub.jobId, w.respool);
  sim.stats.submitted(sub.jobId, w.name, sub.instances, sim.queue.now, sub.config.type === "DAEMON");
  const respoolID = { value: sim.poolIds.get(w.respool) ?? w.respool };
  const config = { ...sub.config, respoolID };
  call("peloton.api.job.JobManager::Create", { id: { value: sub.jobId }, config }, (reply) => {
    const err = reply.error?.message ?? errorText(reply.body);
    entry.accepted = !err;
    if (err) entry.error = err;
    else {
      if (w.elastic) grow(sim, w, sub.jobId, config, sub.instances, call);
      for (const stop of sub.stops ?? []) stopAt(sim, sub.jobId, stop, call);
    }
  });
}

/**
 * Stops instances of a job at a time, as a user's `task stop` would (a trace's KILL): one still pending
 * leaves the queue and never runs, one running is killed. A stop due before the job was accepted comes then.
 */
function stopAt(sim: Simulation, jobId: string, stop: TraceStop, call: Call): void {
  const ranges = stop.instances.map((i) => ({ from: i, to: i + 1 }));
  sim.queue.schedule(Math.max(stop.atMs, sim.queue.now), () => {
    // Nothing to do with the answer: a job that ended already (and may be forgotten) has nothing to stop.
    call("peloton.api.task.TaskManager::Stop", { jobId: { value: jobId }, ranges }, () => {});
  });
}

/** Spark dynamic allocation: every `everySec` the job asks for `growBy` more executors, up to the max. */
function grow(
  sim: Simulation,
  w: Workload,
  jobId: string,
  config: Record<string, unknown>,
  count: number,
  call: Call,
) {
  const e = w.elastic!;
  if (count >= e.maxInstances) return;
  sim.queue.schedule(sim.queue.now + e.everySec * 1000, () => {
    const job = sim.jobmgr.jobs.get(jobId);
    if (!job || isTerminalJobState(job.runtime.state) || job.runtime.goalState === "KILLED") return;
    const next = Math.min(e.maxInstances, count + e.growBy);
    const grown = { ...config, instanceCount: next };
    call("peloton.api.job.JobManager::Update", { id: { value: jobId }, config: grown }, (reply) => {
      if (reply.error || errorText(reply.body)) return;
      sim.stats.grew(jobId, next, sim.queue.now);
      grow(sim, w, jobId, grown, next, call);
    });
  });
}

/** Creates the scenario's pools through the respool API, parents first, then calls `done`. */
function createPools(
  pools: ScenarioPool[],
  parentPath: string,
  api: Call,
  ids: Map<string, string>,
  done: () => void,
) {
  let i = 0;
  const next = () => {
    if (i === pools.length) return done();
    const pool = pools[i++];
    const path = parentPath === "/" ? `/${pool.name}` : `${parentPath}/${pool.name}`;
    api("peloton.api.respool.ResourceManager::CreateResourcePool", {
      config: { ...poolConfig(pool), parent: { value: ids.get(parentPath) } },
    }, (reply) => {
      const id = (reply.body as { result?: { value: string } } | undefined)?.result?.value;
      if (!id) throw new Error(`scenario pool ${path}: ${reply.error?.message ?? errorText(reply.body)}`);
      ids.set(path, id);
      createPools(pool.children ?? [], path, api, ids, next);
    });
  };
  next();
}

/** A seed for the named stream of a run (FNV-1a over the run's seed and the name). */
function streamSeed(seed: number, name: string): number {
  let h = 0x811c9dc5;
  for (const c of `${seed}/${name}`) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}
