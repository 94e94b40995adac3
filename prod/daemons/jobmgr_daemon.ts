/** `peloton jobmgr`: one job manager process, driving the jobs of the shards it holds. */
import { DEFAULT_JOBMGR_CONFIG, JobManager, type JobmgrConfig } from "../../core/jobmgr/jobmgr.ts";
import type { Route } from "../../core/api/procedures.ts";
import { seededPrng } from "../../core/ports/prng.ts";
import { storeFailure } from "../../core/ports/store.ts";
import { shardAddress, shardOf } from "../cluster/registry.ts";
import { ShardOwner } from "../cluster/shards.ts";
import { storedLocks } from "../../core/jobmgr/lockdown.ts";
import { type ArchiverConfig, DEFAULT_ARCHIVER_CONFIG, JobArchiver } from "../../core/jobmgr/archiver.ts";
import { NdjsonArchive } from "../archive_file.ts";
import { loadRecovery } from "../recovery.ts";
import { jobCallOf, watchHolder } from "./api_jobs.ts";
import { CANCEL_PROCEDURE } from "../watch_stream.ts";
import { daemonGauges } from "./gauges.ts";
import { watchLeaders } from "./leaders.ts";
import { type ApiTarget, type DaemonOptions, DaemonProcess } from "./process.ts";

export interface JobmgrDaemonOptions extends Omit<DaemonOptions, "role"> {
  jobmgr?: Partial<JobmgrConfig>;
  /** Job archiver settings over the defaults; it archives the jobs of the shards held here. */
  archiver?: Partial<ArchiverConfig>;
  /** Where archived jobs are exported (default `<dataDir>/archive`). */
  archiveDir?: string;
}

export interface RunningDaemon {
  process: DaemonProcess;
  /** Graceful stop (SIGTERM): in-flight requests and writes finish, leases are handed back. */
  stop(): Promise<void>;
  /** Resolves when the daemon must exit (it lost a lease it cannot do without). */
  lost: Promise<string>;
}

export async function startJobmgr(o: JobmgrDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "jobmgr" });
  await p.open();
  const self = `jobmgr@${p.instance}`;
  const jm = new JobManager({
    clock: p.clock,
    transport: p.transport,
    store: p.store,
    prng: seededPrng(crypto.getRandomValues(new Uint32Array(1))[0]),
    metrics: p.metrics,
    self,
    resmgr: "resmgr",
    hostmgr: "hostmgr",
    tagOwner: true,
    onLostWrite: (err) => p.lostWrite(err),
  }, { ...DEFAULT_JOBMGR_CONFIG, ...o.jobmgr });
  p.transport.register(self, jm);
  const locks = new StoredLocks(p, jm);
  await locks.sync();
  jm.start();
  locks.start();

  let lost!: (why: string) => void;
  const lostPromise = new Promise<string>((r) => (lost = r));
  const loader = new ShardLoader(p, jm);
  const shards = new ShardOwner({
    cluster: p.cluster,
    registry: p.registry,
    holder: p.instance,
    url: p.url,
    ttlMs: o.leaseTtlMs,
    adopt: async (k) => {
      await loader.load(k);
      p.transport.register(shardAddress(k), jm);
    },
    release: async (k) => {
      p.transport.unregister(shardAddress(k));
      jm.release([...jm.jobs.keys()].filter((id) => shardOf(id) === k));
      await p.store.flush();
    },
    onLost: (why) => {
      p.log.error("lost a shard lease; exiting", { reason: why });
      lost(why);
    },
    log: (msg, fields) => p.log(msg, fields),
  });
  p.fences = () => shards.fences();
  watchLeaders(p, (role) => jm.receive({ kind: "peer-changed", role }));
  p.hooks = {
    health: () => ({ shards: shards.readyShards(), jobs: jm.jobs.size }),
    jobmgrTarget: (route, body) => target(p, shards, self, route, body),
  };
  p.metrics.collect(() => p.metrics.gauge("peloton_jobmgr_shards").set(shards.readyShards().length));
  daemonGauges(p.metrics, { jobmgr: jm });
  shards.start();
  const archiver = new JobArchiver(jm, { ...DEFAULT_ARCHIVER_CONFIG, ...o.archiver }, {
    sink: new NdjsonArchive(o.archiveDir ?? `${o.dataDir}/archive`, `jobs-${p.instance}`),
    owns: (id) => shards.isReady(shardOf(id)),
    log: (msg, fields) => p.log(msg, fields),
  });
  archiver.start();
  return {
    process: p,
    lost: lostPromise,
    stop: () =>
      p.close(async () => {
        const held = shards.fences();
        p.fences = () => held;
        await archiver.stop();
        await shards.stop(false);
        locks.stop();
        jm.stop();
        await p.store.flush();
        // Handed back only once every write is durable, so the next owner reads all of it.
        for (const f of held) await p.cluster.release(f.name, f.holder, f.token).catch(() => {});
      }),
  };
}

/**
 * The lockdown in the store, taken up by this job manager: at start, and within `LOCK_SYNC_MS` of another
 * job manager storing one. A read is compared with memory only if no Lockdown or RemoveLockdown was made
 * here while it ran, and none is still being stored: a stale read never undoes this job manager's own call.
 */
class StoredLocks {
  static readonly LOCK_SYNC_MS = 2_000;
  #timer?: ReturnType<typeof setInterval>;

  constructor(readonly p: DaemonProcess, readonly jm: JobManager) {}

  async sync(): Promise<void> {
    const calls = this.jm.lockCalls;
    const locks = storedLocks(await this.p.store.adminLocks());
    if (calls !== this.jm.lockCalls || this.jm.lockWritesInFlight) return;
    const held = [...this.jm.locks];
    if (locks.length === held.length && locks.every((c) => this.jm.locks.has(c))) return;
    this.jm.applyLocks(locks);
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.sync().catch((e) =>
        this.p.log.warn("reading the lockdown failed", { error: (e as Error).message })
      );
    }, StoredLocks.LOCK_SYNC_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** Loads the jobs of shards taken in the same moment with one read of the store. */
class ShardLoader {
  #pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }[]>();
  #timer?: ReturnType<typeof setTimeout>;

  constructor(readonly p: DaemonProcess, readonly jm: JobManager) {}

  load(shard: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const list = this.#pending.get(shard) ?? [];
      list.push({ resolve, reject });
      this.#pending.set(shard, list);
      this.#timer ??= setTimeout(() => void this.#run(), 20);
    });
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    const batch = this.#pending;
    this.#pending = new Map();
    try {
      const recovered = await loadRecovery(this.p.store, (id) => batch.has(shardOf(id)));
      this.jm.adopt(recovered.jobs, recovered.updates);
      this.p.log("shards loaded", { shards: [...batch.keys()], jobs: recovered.jobs.length });
      for (const list of batch.values()) for (const w of list) w.resolve();
    } catch (err) {
      for (const list of batch.values()) for (const w of list) w.reject(err as Error);
    }
  }
}

/** Where a job manager call goes: reads here, writes to the job's owner, creates into a shard held here. */
async function target(
  p: DaemonProcess,
  shards: ShardOwner,
  self: string,
  route: Route,
  body: Record<string, unknown>,
): Promise<ApiTarget> {
  if (route.procedure === CANCEL_PROCEDURE) return cancelTarget(p, self, body);
  let call;
  try {
    call = await jobCallOf(route.procedure, body, p.store);
  } catch (err) {
    // Routing by an update's or a volume's id reads the store.
    const { code, message } = storeFailure(err, "finding the job the call is for");
    return { error: code, message };
  }
  if (call.create) {
    const ready = shards.readyShards();
    if (!ready.length) {
      return { error: "unavailable", message: "this job manager holds no shard yet; try again" };
    }
    const shard = ready[Math.floor(Math.random() * ready.length)];
    return { local: self, body: { ...body, [call.create]: { value: jobIdIn(shard) } } };
  }
  if (!call.jobId || call.read) return { local: self };
  const shard = shardOf(call.jobId);
  if (shards.isReady(shard)) return { local: self };
  const owner = p.registry.holder(`jobmgr-shard-${shard}`);
  if (owner && owner.holder !== p.instance) return { forward: owner.url };
  return {
    error: "unavailable",
    message: `job ${call.jobId}'s shard ${shard} has no job manager now; try again`,
  };
}

/**
 * A watch is cancelled where its stream is: in the process of the job manager its id names. An id naming
 * no job manager is answered here (the job manager says what is wrong with it).
 */
function cancelTarget(p: DaemonProcess, self: string, body: Record<string, unknown>): ApiTarget {
  const holder = watchHolder(body);
  if (!holder || holder === self) return { local: self };
  const url = p.registry.resolve(holder);
  if (url && url !== p.url) return { forward: url };
  if (url) return { local: self };
  return {
    error: "not-found",
    message: `watch ${body.watchId} not found: its job manager ${holder} is not running`,
  };
}

/** A new job id that falls into `shard`. */
function jobIdIn(shard: number): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shardOf(id) === shard) return id;
  }
}
