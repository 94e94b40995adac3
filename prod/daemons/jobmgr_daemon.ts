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
import { Term, TermFront } from "./term.ts";
import { settlesWithin } from "../settle.ts";

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
  /**
   * Resolves when the daemon must exit: a host manager that won the lease while another live process drives
   * its minicluster. A lost lease is not such a reason: the daemon steps down and campaigns again.
   */
  lost: Promise<string>;
}

export async function startJobmgr(o: JobmgrDaemonOptions): Promise<RunningDaemon> {
  const p = new DaemonProcess({ ...o, role: "jobmgr" });
  await p.open();
  const self = `jobmgr@${p.instance}`;
  // The address outlives the terms: what comes to it goes to the term's job manager.
  const front = new TermFront();
  p.transport.register(self, front);
  const archive = new NdjsonArchive(o.archiveDir ?? `${o.dataDir}/archive`, `jobs-${p.instance}`);
  let term: JobmgrTerm | undefined;
  let terms = 0;
  let steppedDown: string | undefined;
  let stopping = false;
  let campaigning: Promise<void> | undefined;

  /** Starts a term, trying again while the store cannot serve its first reads. */
  const campaign = async () => {
    for (let delayMs = 200; !stopping; delayMs = Math.min(5_000, delayMs * 2)) {
      try {
        term = await JobmgrTerm.begin(p, o, {
          self,
          front,
          archive,
          number: terms++,
          onLost: stepDown,
          taking: () => !stopping,
        });
        if (stopping) await term.stop();
        return;
      } catch (err) {
        p.log.warn("cannot take jobs up yet; trying again", {
          error: (err as Error).message,
          retryInMs: delayMs,
        });
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  };

  /**
   * A shard lease lost (the store out of reach past its TTL, or the shard taken over): every shard is given
   * up, the job manager thrown away once its writes are stored or fenced off, and the process campaigns for
   * shards again; those it takes are loaded from the store as at a fresh start.
   */
  function stepDown(t: JobmgrTerm, why: string): void {
    // A stop under way stops the term itself.
    if (term !== t || stopping) return;
    p.log.error("lost a shard lease; stepping down", { reason: why });
    steppedDown = why;
    term = undefined;
    campaigning = (async () => {
      await t.end();
      p.failCalls(self, "the job manager stepped down before it answered (it lost a shard lease); try again");
      if (stopping) return;
      p.log("campaigning for shards again");
      await campaign();
      steppedDown = undefined;
    })();
  }

  watchLeaders(p, (role) => term?.jm.receive({ kind: "peer-changed", role }));
  p.hooks = {
    health: () => ({
      shards: term?.shards.readyShards() ?? [],
      jobs: term?.jm.jobs.size ?? 0,
      ...(steppedDown ? { steppedDown } : {}),
    }),
    jobmgrTarget: (route, body) => target(p, term, self, route, body, steppedDown),
  };
  p.metrics.collect(() =>
    p.metrics.gauge("peloton_jobmgr_shards").set(term?.shards.readyShards().length ?? 0)
  );
  daemonGauges(p.metrics, () => ({ jobmgr: term?.jm }));
  campaigning = campaign();
  await campaigning;
  return {
    process: p,
    lost: new Promise(() => {}),
    stop: () => {
      // First of all, before any step that waits (calls in flight get up to 10 s): nothing more is launched,
      // so what is not running yet stays for the next owner, and no task starts only to be cut off. Nor is
      // another shard taken: those held are renewed until they are handed back at the stop's end.
      stopping = true;
      term?.jm.stopLaunching();
      term?.shards.stopTaking();
      return p.close(async () => {
        await settlesWithin(campaigning ?? Promise.resolve(), STOP_WAIT_MS);
        await term?.stop();
      });
    },
  };
}

/** How long a stop waits for a step-down or campaign under way. */
const STOP_WAIT_MS = 10_000;

/** What a job manager term is handed by its process. */
interface TermParts {
  self: string;
  front: TermFront;
  archive: NdjsonArchive;
  number: number;
  onLost(term: JobmgrTerm, why: string): void;
  /** False once the process began to stop: a term begun then takes no shard. */
  taking(): boolean;
}

/**
 * One term of a job manager process: the shards it holds and the job manager driving their jobs, built on
 * the term's clock, transport and store, so that once it ends it neither acts nor writes again.
 */
class JobmgrTerm {
  private constructor(
    readonly p: DaemonProcess,
    readonly term: Term,
    readonly jm: JobManager,
    readonly locks: StoredLocks,
    readonly shards: ShardOwner,
    readonly archiver: JobArchiver,
    /** Shard addresses this term registered. */
    readonly served: Set<number>,
  ) {}

  static async begin(p: DaemonProcess, o: JobmgrDaemonOptions, parts: TermParts): Promise<JobmgrTerm> {
    const t = new Term(p, "jobmgr", parts.number, parts.self);
    const jm = new JobManager({
      clock: t.clock,
      transport: t.transport,
      store: t.store,
      prng: seededPrng(crypto.getRandomValues(new Uint32Array(1))[0]),
      metrics: p.metrics,
      self: parts.self,
      resmgr: "resmgr",
      hostmgr: "hostmgr",
      tagOwner: true,
      onLostWrite: (err) => t.lostWrite(err),
    }, { ...DEFAULT_JOBMGR_CONFIG, ...o.jobmgr });
    const locks = new StoredLocks(p, jm);
    try {
      await locks.sync();
    } catch (err) {
      t.end();
      throw err;
    }
    parts.front.attach(t, jm);
    jm.start();
    locks.start();
    const loader = new ShardLoader(p, jm);
    const served = new Set<number>();
    const shards = new ShardOwner({
      cluster: p.cluster,
      registry: p.registry,
      holder: p.instance,
      url: p.url,
      ttlMs: o.leaseTtlMs,
      adopt: async (k) => {
        await loader.load(k);
        if (t.ended) return;
        served.add(k);
        p.transport.register(shardAddress(k), jm);
      },
      release: async (k) => {
        served.delete(k);
        p.transport.unregister(shardAddress(k));
        jm.release([...jm.jobs.keys()].filter((id) => shardOf(id) === k));
        await p.store.flush();
      },
      onLost: (why) => parts.onLost(created, why),
      log: (msg, fields) => p.log(msg, fields),
    });
    const archiver = new JobArchiver(jm, { ...DEFAULT_ARCHIVER_CONFIG, ...o.archiver }, {
      sink: parts.archive,
      owns: (id) => shards.isReady(shardOf(id)),
      log: (msg, fields) => p.log(msg, fields),
    });
    const created = new JobmgrTerm(p, t, jm, locks, shards, archiver, served);
    p.fences = () => shards.fences();
    if (!parts.taking()) shards.stopTaking();
    shards.start();
    archiver.start();
    return created;
  }

  /**
   * Ends the term after a lease was lost: nothing it does goes out any more (but answers to API calls),
   * its shards' messages wait for their next owner, and it resolves once every write it made is stored or
   * refused, each checked against the leases it held then.
   */
  async end(): Promise<void> {
    const held = this.shards.fences();
    this.p.fences = () => held;
    this.term.end();
    for (const k of this.served) this.p.transport.unregister(shardAddress(k));
    this.served.clear();
    void this.archiver.stop();
    this.locks.stop();
    this.jm.stop();
    await this.shards.stop(false);
    await this.p.store.flush();
    // A take or hand-back under way would otherwise act on the next term's leases of the same shards.
    await this.shards.idle();
  }

  /** Graceful stop: the shards' writes are stored, then their leases handed back for the next owner. */
  async stop(): Promise<void> {
    this.jm.stopLaunching();
    const held = this.shards.fences();
    this.p.fences = () => held;
    await this.archiver.stop();
    await this.shards.stop(false);
    this.locks.stop();
    this.jm.stop();
    await this.p.store.flush();
    // Handed back only once every write is durable, so the next owner reads all of it.
    for (const f of held) await this.p.cluster.release(f.name, f.holder, f.token).catch(() => {});
  }
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

/**
 * Where a job manager call goes: a call naming a job to the job's owner (reads too: only it knows the job's
 * tasks as they are now; one the owner cannot answer is read from the store here, the reply saying so),
 * creates into a shard held here, anything else here.
 */
async function target(
  p: DaemonProcess,
  term: JobmgrTerm | undefined,
  self: string,
  route: Route,
  body: Record<string, unknown>,
  steppedDown: string | undefined,
): Promise<ApiTarget> {
  if (route.procedure === CANCEL_PROCEDURE) return cancelTarget(p, self, body);
  const here: ApiTarget = term ? { local: self } : {
    error: "unavailable",
    message: steppedDown
      ? `this job manager stepped down (${steppedDown}) and is taking its jobs up again; try again`
      : "this job manager is taking its jobs up; try again",
  };
  let call;
  try {
    call = await jobCallOf(route.procedure, body, p.store);
  } catch (err) {
    // Routing by an update's or a volume's id reads the store.
    const { code, message } = storeFailure(err, "finding the job the call is for");
    return { error: code, message };
  }
  if (call.create) {
    const ready = term?.shards.readyShards() ?? [];
    if (!term || !ready.length) {
      return "error" in here
        ? here
        : { error: "unavailable", message: "this job manager holds no shard yet; try again" };
    }
    const shard = ready[Math.floor(Math.random() * ready.length)];
    return { local: self, body: { ...body, [call.create]: { value: jobIdIn(shard) } } };
  }
  if (!call.jobId) return here;
  const shard = shardOf(call.jobId);
  if (term?.shards.isReady(shard)) return here;
  const owner = p.registry.holder(`jobmgr-shard-${shard}`);
  if (owner && owner.holder === p.instance && term) {
    return { error: "unavailable", message: `job ${call.jobId}'s shard ${shard} is being loaded; try again` };
  }
  const elsewhere = owner && owner.holder !== p.instance ? owner : undefined;
  const unreachable = elsewhere &&
    `job ${call.jobId}'s shard ${shard} is held by job manager ${elsewhere.holder} at ${elsewhere.url}, which ` +
      `does not answer (it stopped or died; another takes the shard over once its lease runs out); try again`;
  if (call.read) {
    // Read here only when its owner cannot answer: the stored runtime's task counts lag its owner's.
    const why = elsewhere
      ? `job manager ${elsewhere.holder}, which drives job ${call.jobId}, cannot be reached`
      : `no job manager drives job ${call.jobId}'s shard ${shard} now`;
    const stored: ApiTarget = "error" in here
      ? here
      : { local: self, stale: `${why}: answered from the store by ${self}; task counts may lag` };
    if (elsewhere) return { forward: elsewhere.url, unreachable, fallback: stored };
    if ("local" in stored) p.log.warn("answering a read from the store", { procedure: route.procedure, why });
    return stored;
  }
  if (elsewhere) return { forward: elsewhere.url, unreachable };
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
