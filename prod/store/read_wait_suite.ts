/**
 * A suite for the SQL stores: a read waits for the pending writes of what it reads (read-your-writes) and
 * for no others, so a read of one job is not held behind another job's writes that the database is slow on.
 */
import { deepStrictEqual as equal, ok } from "node:assert/strict";
import type { Store, StoreWrite } from "../../core/ports/store.ts";
import type { RespoolRecord, TaskEventRecord } from "../../core/model/records.ts";
import type { StoreClaim } from "./store_claim.ts";
import {
  adminLock,
  hostPool,
  maintenance,
  makeJob,
  makeSecret,
  makeTask,
  makeUpdate,
  makeVolume,
  put,
  workflowEvent,
} from "./store_suite.ts";
import { orWithin } from "../settle.ts";

/** Opens a store on an empty database of its own, checking `claim` in every write transaction. */
export type OpenWithClaim = (claim: StoreClaim) => Promise<{ store: Store; close(): Promise<void> }>;

/**
 * A claim whose check, made in every write transaction just before its commit, can be held: the group's
 * writes are then in the database's transaction but not committed, as on a database slow to take them.
 */
class HoldingClaim implements StoreClaim {
  readonly lost = new Promise<string>(() => {});
  #held?: PromiseWithResolvers<void>;
  /** Resolves once a write transaction is held. */
  reached = Promise.withResolvers<void>();

  hold(): void {
    this.#held = Promise.withResolvers();
    this.reached = Promise.withResolvers();
  }

  letGo(): void {
    this.#held?.resolve();
    this.#held = undefined;
  }

  async check(): Promise<void> {
    if (!this.#held) return;
    this.reached.resolve();
    await this.#held.promise;
  }

  release(): Promise<void> {
    this.letGo();
    return Promise.resolve();
  }
}

const PENDING = Symbol("pending");
const LATE = Symbol("late");

/**
 * Writes `before`, then holds the write of `held` (one batch) while `fn` runs; then lets it commit and runs
 * what `fn` returned, to look at reads made while it was held.
 */
async function withHeldWrite(
  open: OpenWithClaim,
  before: StoreWrite[],
  held: StoreWrite[],
  fn: (store: Store, written: Promise<Error | undefined>) => Promise<() => Promise<void>>,
): Promise<void> {
  const claim = new HoldingClaim();
  const { store, close } = await open(claim);
  try {
    equal(await put(store, before), undefined);
    claim.hold();
    const written = put(store, held);
    ok(await orWithin(claim.reached.promise.then(() => true), 10_000, false), "the write reached its commit");
    const after = await fn(store, written);
    claim.letGo();
    equal(await written, undefined);
    await after();
  } finally {
    claim.letGo();
    await close();
  }
}

/**
 * The names of the reads not settled within `ms` (all waited on at once). Each read's failure counts as
 * handled, so a read left waiting when a check fails does not fail the run as an uncaught error on close.
 */
async function unsettled(reads: Record<string, Promise<unknown>>, ms: number): Promise<string[]> {
  const settled = new Set<string>();
  const all = Object.entries(reads).map(([what, r]) =>
    r.then(() => settled.add(what), () => settled.add(what))
  );
  await orWithin(Promise.all(all), ms, LATE);
  return Object.keys(reads).filter((what) => !settled.has(what));
}

/** Each read answered while the write is held (not behind it), within 5 s. */
async function answeredNow(reads: Record<string, Promise<unknown>>): Promise<void> {
  equal(await unsettled(reads, 5_000), [], "reads held behind a write to other rows");
}

/** Each read still waiting (for the held write) after 300 ms. */
async function stillWaiting(reads: Record<string, Promise<unknown>>): Promise<void> {
  await new Promise((r) => setTimeout(r, 300));
  equal(
    await unsettled(reads, 0),
    Object.keys(reads),
    "reads answered before the write of what they read was committed",
  );
}

function taskEvent(jobId: string, state: TaskEventRecord["state"]): TaskEventRecord {
  return { jobId, instanceId: 0, runId: 1, state, timeMs: 1_700_000_000_000, hostname: "h", message: "m" };
}

function respool(id: string): RespoolRecord {
  return {
    id,
    path: `/${id}`,
    parentId: "root",
    config: {
      name: id,
      owningTeam: "team",
      ldapGroups: [],
      description: "",
      resources: [{ kind: "cpu", reservation: 1, limit: 10, share: 1, type: "ELASTIC" }],
      parent: "root",
      policy: "PriorityFIFO",
    },
  };
}

/** Every row of one job: its own, a config, a task, an event, an update, a workflow's step and a secret. */
function jobRows(jobId: string): StoreWrite[] {
  const job = makeJob(jobId);
  return [
    { kind: "job.put", job },
    { kind: "job.config", jobId, version: 1, config: job.config },
    { kind: "task.put", task: makeTask(jobId, 0) },
    { kind: "task.event", event: taskEvent(jobId, "RUNNING") },
    { kind: "update.put", update: makeUpdate(`${jobId}-update`, jobId) },
    { kind: "workflow.event", event: workflowEvent(jobId, `${jobId}-update`, 0, "ROLLING_FORWARD") },
    { kind: "secret.put", secret: makeSecret(jobId, "s1", "/etc/s1") },
  ];
}

/** The reads of one job's rows; each resolves to whether it saw them. */
function readsOfJob(store: Store, jobId: string): Record<string, Promise<boolean>> {
  return {
    getJob: store.getJob(jobId).then((j) => j !== undefined),
    getTasks: store.getTasks(jobId).then((t) => t.length === 1),
    getTask: store.getTask(jobId, 0).then((t) => t !== undefined),
    getTaskEvents: store.getTaskEvents(jobId, 0).then((e) => e.length === 1),
    getJobConfig: store.getJobConfig(jobId, 1).then((c) => c !== undefined),
    listUpdates: store.listUpdates(jobId).then((u) => u.length === 1),
    getWorkflowEvents: store.getWorkflowEvents(jobId, `${jobId}-update`).then((e) => e.length === 1),
    getSecrets: store.getSecrets(jobId).then((s) => s.length === 1),
  };
}

async function allTrue(reads: Record<string, Promise<boolean>>): Promise<void> {
  const entries = await Promise.all(Object.entries(reads).map(async ([what, r]) => [what, await r] as const));
  equal(entries.filter(([, saw]) => !saw).map(([what]) => what), [], "reads that did not see their writes");
}

/** Registers the suite as one Deno test with a step per property; `open` gives each a database of its own. */
export function readWaitSuite(name: string, open: OpenWithClaim): void {
  const steps: Record<string, () => Promise<void>> = {
    "a read of another job is answered while a job's write is held; a read of what it writes waits for it":
      () =>
        withHeldWrite(open, jobRows("other"), [
          ...jobRows("held"),
          { kind: "volume.put", volume: makeVolume("vol-held", "held", 0) },
          { kind: "respool.put", pool: respool("pool-held") },
          { kind: "maintenance.put", maintenance: maintenance("host-held") },
          { kind: "hostpool.put", pool: hostPool("hostpool-held") },
          { kind: "admin.lock", lock: adminLock("Write") },
        ], async (store, written) => {
          const other = readsOfJob(store, "other");
          await answeredNow(other);
          await allTrue(other);
          // Read-your-writes: every read of what the held batch writes waits for it, and then sees it.
          const held = {
            ...readsOfJob(store, "held"),
            queryJobs: store.queryJobs({}).then((p) => p.jobs.some((j) => j.jobId === "held")),
            activeJobs: store.activeJobs().then((js) => js.some((j) => j.jobId === "held")),
            getUpdate: store.getUpdate("held-update").then((u) => u !== undefined),
            activeUpdates: store.activeUpdates().then((us) => us.some((u) => u.jobId === "held")),
            listVolumes: store.listVolumes("held").then((vs) => vs.length === 1),
            getVolume: store.getVolume("vol-held").then((v) => v !== undefined),
            respools: store.respools().then((ps) => ps.some((p) => p.id === "pool-held")),
            hostMaintenance: store.hostMaintenance().then((ms) => ms.length === 1),
            hostPools: store.hostPools().then((hp) => hp.pools.length === 1),
            adminLocks: store.adminLocks().then((ls) => ls.length === 1),
          };
          await stillWaiting(held);
          equal(await orWithin(written, 0, PENDING), PENDING);
          return () => allTrue(held);
        }),

    "a job query and a read of the job are answered while its task writes are held; its tasks wait": () =>
      withHeldWrite(open, jobRows("big"), [
        ...Array.from({ length: 50 }, (_, i): StoreWrite => ({
          kind: "task.put",
          task: makeTask("big", i, { version: i === 0 ? 2 : 1, state: "LAUNCHED" }),
        })),
        { kind: "task.event", event: taskEvent("big", "LAUNCHED") },
      ], async (store) => {
        await answeredNow({
          queryJobs: store.queryJobs({ states: ["RUNNING"], limit: 10 }),
          getJob: store.getJob("big"),
          getJobConfig: store.getJobConfig("big", 1),
          listUpdates: store.listUpdates("big"),
        });
        const tasks = store.getTasks("big");
        const events = store.getTaskEvents("big", 0);
        const activeJobs = store.activeJobs();
        await stillWaiting({ getTasks: tasks, getTaskEvents: events, activeJobs });
        return async () => {
          equal((await tasks).map((t) => [t.instanceId, t.state, t.version]).slice(0, 2), [
            [0, "LAUNCHED", 2],
            [1, "LAUNCHED", 1],
          ]);
          equal((await tasks).length, 50);
          equal((await events).map((e) => e.state), ["RUNNING", "LAUNCHED"]);
          ok((await activeJobs).some((j) => j.jobId === "big"));
        };
      }),
  };
  Deno.test(`${name}: reads wait for the writes of what they read`, async (t) => {
    for (const [what, fn] of Object.entries(steps)) await t.step(what, fn);
  });
}
