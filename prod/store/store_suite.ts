/** The Store conformance suite: every Store implementation registers it and must pass it unchanged. */
import { deepStrictEqual as equal, ok, rejects, strictEqual } from "node:assert/strict";
import type {
  JobOrder,
  JobOrderProperty,
  Store,
  StoredHostPools,
  StoreWrite,
  WorkflowEventsQuery,
} from "../../core/ports/store.ts";
import type {
  AdminLockRecord,
  HostMaintenanceRecord,
  HostPoolAssignmentRecord,
  HostPoolRecord,
  JobRecord,
  RespoolRecord,
  SecretRecord,
  TaskEventRecord,
  TaskRecord,
  UpdateRecord,
  UpdateState,
  VolumeRecord,
  WorkflowEventRecord,
} from "../../core/model/records.ts";
import type { JobState } from "../../core/model/states.ts";

export interface StoreSuiteOptions {
  /** What was written before `close()` is there after the next `open()` (the real stores). */
  durable?: boolean;
  /** Runs the schema migrations on an open store and returns the names of those that ran. */
  migrate?: (store: Store) => Promise<string[]>;
  /** A new, empty database of the store's kind, for the step that upgrades an older schema (SQL stores). */
  freshDatabase?: () => { url: string; drop: () => Promise<void> };
  /**
   * Makes `store.queryJobs` run `fn` between its reads (a SQL store counts the matches and reads the page
   * in two statements), for the step that writes there.
   */
  betweenQueryReads?: (store: Store, fn: () => Promise<void>) => void;
  /** Another store on the same database, counting the rows its statements return (SQL stores). */
  openCounting?: () => Promise<{ store: Store; rowsRead: () => number }>;
}

/**
 * Registers the suite as one Deno test with a step per property. `open` returns a store on the same
 * underlying database every time (steps use ids unique to the run); `cleanup` runs after the last step.
 */
export function storeSuite(
  name: string,
  open: () => Promise<Store>,
  cleanup: () => Promise<void> = () => Promise.resolve(),
  options: StoreSuiteOptions = {},
): void {
  const steps: Record<string, Case> = { ...cases };
  if (options.durable) steps["reopen after close sees every write"] = reopen;
  if (options.migrate) {
    const migrate = options.migrate;
    steps["running migrations again is a no-op"] = async (store) => {
      equal(await migrate(store), []);
      equal(await migrate(store), []);
    };
  }
  if (options.betweenQueryReads) {
    steps["queryJobs counts and pages one snapshot: a job written between its reads is in neither"] =
      queryJobsSnapshot(options.betweenQueryReads);
  }
  if (options.openCounting) {
    const what = "a large workflow read with a limit: the database sends each instance's newest events";
    steps[what] = boundedWorkflowRead(options.openCounting);
  }
  if (options.freshDatabase) {
    steps["a database at migration 0001 upgrades, keeping its rows"] = upgrade(options.freshDatabase);
    steps["a store a newer release migrated is refused, naming its migration, and left as it was"] =
      newerRelease(options.freshDatabase);
    steps["a database at migration 0003 gains host maintenance, keeping its rows"] = upgradeFrom0003(
      options.freshDatabase,
    );
    steps["a database at migration 0004 gains the owning team column, filled from its jobs"] =
      upgradeFrom0004(
        options.freshDatabase,
      );
    steps["a database at migration 0005 gains workflow events, keeping its rows"] = upgradeFrom0005(
      options.freshDatabase,
    );
    steps["a database at migration 0006 gains the completion time column, filled from its jobs"] =
      upgradeFrom0006(options.freshDatabase);
    steps["a database at migration 0007 gains host pools, keeping its rows"] = upgradeFrom0007(
      options.freshDatabase,
    );
    steps["a database at migration 0008 gains admin locks, keeping its rows"] = upgradeFrom0008(
      options.freshDatabase,
    );
    steps["a database at migration 0009 gains secrets, keeping its rows"] = upgradeFrom0009(
      options.freshDatabase,
    );
    steps["a database at migration 0010 gains event write keys, keeping its events"] = upgradeFrom0010(
      options.freshDatabase,
    );
    steps["a database at migration 0011 marks the tasks with work left, so recovery finds their jobs"] =
      upgradeFrom0011(options.freshDatabase);
    steps["a database at migration 0012 keeps its events, which read back without the task's details"] =
      upgradeFrom0012(options.freshDatabase);
  }
  Deno.test(`${name}: Store conformance`, async (t) => {
    const run = crypto.randomUUID().slice(0, 8);
    let passed = true;
    let error: unknown;
    try {
      // One clear failure when the store cannot even open (no server, bad URL), not one per step.
      passed = await t.step("opens", async () => await (await open()).close());
      for (const [what, fn] of passed ? Object.entries(steps) : []) {
        passed = await t.step(what, async () => {
          const store = await open();
          try {
            await fn(store, new Ids(`${run}-${what.replace(/\W+/g, "-").slice(0, 24)}`), open);
          } finally {
            await store.close();
          }
        }) && passed;
      }
    } catch (err) {
      [passed, error] = [false, err];
    }
    try {
      await cleanup();
    } catch (err) {
      if (passed) throw err; // otherwise the failure that came first is the one to see
    }
    if (error) throw error;
  });
}

/**
 * A job written from another connection while `queryJobs` is between its count and its page: the answer is
 * of one moment, the count and the page agreeing (before, a page of 3 came with a total of 2).
 */
function queryJobsSnapshot(
  betweenQueryReads: NonNullable<StoreSuiteOptions["betweenQueryReads"]>,
): Case {
  return async (store, ids, open) => {
    const owner = `${ids.prefix}-owner`;
    const job = (n: number) => makeJob(ids.job(n), { owningTeam: owner }, { creationTimeMs: 10 * (n + 1) });
    strictEqual(await put(store, [0, 1].map((n) => ({ kind: "job.put", job: job(n) }))), undefined);
    const other = await open();
    try {
      let wrote = false;
      betweenQueryReads(store, async () => {
        if (wrote) return;
        wrote = true;
        strictEqual(await put(other, [{ kind: "job.put", job: job(2) }]), undefined);
      });
      const { jobs, total } = await store.queryJobs({ owner, limit: 10 });
      ok(wrote, "the write ran between the reads");
      equal(
        { jobs: jobs.map((j) => j.jobId), total },
        { jobs: [ids.job(1), ids.job(0)], total: 2 },
        "the count and the page are of the moment before the write",
      );
      equal((await store.queryJobs({ owner, limit: 10 })).total, 3, "the next query sees the write");
    } finally {
      await other.close();
    }
  };
}

/**
 * Opens (and so migrates) the store at `url` from `processes` separate Deno processes started together,
 * each writing a job; throws with their output unless all succeed.
 */
export async function openConcurrently(url: string, processes: number): Promise<void> {
  const storeModule = new URL("./kysely_store.ts", import.meta.url).href;
  const code = `
    const { openStore } = await import(${JSON.stringify(storeModule)});
    const store = await openStore(Deno.args[0]);
    const { makeJob } = await import(${JSON.stringify(import.meta.url)});
    await new Promise((ok, fail) => store.write([{ kind: "job.put", job: makeJob(Deno.args[1]) }], (e) => e ? fail(e) : ok()));
    await store.close();`;
  const config = new URL("../../deno.json", import.meta.url).pathname;
  const outputs = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "--config", config, code, url, `concurrent-${i}`],
        stdout: "piped",
        stderr: "piped",
      }).output()),
  );
  const failures = outputs.filter((o) => !o.success).map((o) => new TextDecoder().decode(o.stderr));
  if (failures.length > 0) {
    throw new Error(
      `${failures.length} of ${processes} processes failed to open ${url}:\n${failures.join("\n")}`,
    );
  }
}

/**
 * A workflow of 2,000 instances, each with 5 events, one a repeat (10,000 rows), and one more instance
 * whose newest 3 events are one state: read with a limit of 2, the database sends each instance's newest
 * 2 events, and the last instance's all (its newest 2 are one step), not every event. With a limit of 3
 * the repeat is among every instance's newest 3, and the whole workflow is read again: the cost of
 * reading the steps with one window rather than two (see KyselyStore.getWorkflowEvents).
 */
function boundedWorkflowRead(openCounting: NonNullable<StoreSuiteOptions["openCounting"]>): Case {
  return async (store, ids) => {
    const jobId = ids.job(1), workflowId = ids.update(1), n = 2_000;
    const states: UpdateState[] = [
      "INITIALIZED",
      "ROLLING_FORWARD",
      "ROLLING_BACKWARD",
      "ROLLING_BACKWARD",
      "SUCCEEDED",
    ];
    // Step by step across the instances, as a workflow records them.
    const at = (step: number) =>
      [...Array(n).keys()].map((i) => workflowEvent(jobId, workflowId, i, states[step], step));
    const last = ["INITIALIZED", "ROLLING_BACKWARD", "ROLLING_BACKWARD", "ROLLING_BACKWARD"] as const;
    const ofLast = last.map((state, t) => workflowEvent(jobId, workflowId, n, state, 10 + t));
    const writes = [...states.flatMap((_, step) => at(step)), ...ofLast]
      .map((event): StoreWrite => ({ kind: "workflow.event", event }));
    strictEqual(await put(store, writes), undefined);
    const counted = await openCounting();
    try {
      const read = async (query: WorkflowEventsQuery) => {
        const before = counted.rowsRead();
        const steps = await counted.store.getWorkflowEvents(jobId, workflowId, query);
        return { steps, rows: counted.rowsRead() - before };
      };
      equal(await read({ limit: 2 }), {
        steps: [...at(3), ...at(4), ofLast[0], ofLast[3]],
        rows: 2 * n + 2 + 4,
      });
      equal(await read({ limit: 1 }), { steps: [...at(4), ofLast[3]], rows: n + 1 });
      equal(await read({ instanceId: 7, limit: 1 }), { steps: [at(4)[7]], rows: 1 });
      equal(await read({ limit: 3 }), {
        steps: [...at(1), ...at(3), ...at(4), ofLast[0], ofLast[3]],
        rows: 3 * n + 3 + 5 * n + 4,
      }, "every instance's newest 3 events hold a repeat: the workflow is read again");
      equal(await read({}), {
        steps: [...at(0), ...at(1), ...at(3), ...at(4), ofLast[0], ofLast[3]],
        rows: 5 * n + 4,
      }, "all steps: collapsing the runs needs every event");
    } finally {
      await counted.store.close();
    }
  };
}

/** Ids unique to one step, so steps can share a database. */
class Ids {
  constructor(readonly prefix: string) {}
  job(n: number): string {
    return `${this.prefix}-job-${n}`;
  }
  update(n: number): string {
    return `${this.prefix}-update-${n}`;
  }
  volume(n: number): string {
    return `${this.prefix}-volume-${n}`;
  }
  host(n: number): string {
    return `${this.prefix}-host-${n}`;
  }
  hostPool(n: number): string {
    return `${this.prefix}-pool-${n}`;
  }
  /** A job manager component (`GoalStateEngine`, `Read`, ...) under the prefix; the store checks no names. */
  component(name: string): string {
    return `${this.prefix}-component-${name}`;
  }
}

/** Writes a batch and resolves with its `done` error, if any. */
export function put(store: Store, batch: StoreWrite[]): Promise<Error | undefined> {
  return new Promise((resolve) => store.write(batch, resolve));
}

export function makeJob(
  jobId: string,
  over: Partial<JobRecord["config"]> = {},
  runtime: Partial<JobRecord["runtime"]> = {},
): JobRecord {
  return {
    jobId,
    configVersion: 1,
    config: {
      name: `name-${jobId}`,
      type: "BATCH",
      owningTeam: "team",
      ldapGroups: ["g1", "g2"],
      description: "a job — with ünïcode ✓",
      owner: "owner",
      labels: [{ key: "k", value: "v" }],
      instanceCount: 3,
      sla: {
        priority: 1,
        preemptible: true,
        revocable: false,
        maximumRunningInstances: 0,
        minimumRunningInstances: 0,
        maxRunningTime: 0,
        maximumUnavailableInstances: 0,
      },
      defaultConfig: {
        resource: { cpuLimit: 0.5, memLimitMb: 128.25, diskLimitMb: 10, fdLimit: 0, gpuLimit: 0 },
        command: {
          shell: true,
          value: "echo 'hi' \"there\"",
          arguments: [],
          environment: { variables: [] },
          uris: [],
        },
        constraint: {
          type: "AND_CONSTRAINT",
          andConstraint: {
            constraints: [{
              type: "LABEL_CONSTRAINT",
              labelConstraint: {
                kind: "HOST",
                condition: "EQUAL",
                label: { key: "zone", value: "a" },
                requirement: 1,
              },
            }],
          },
        },
      },
      instanceConfig: { 2: { name: "special", ports: [{ name: "http", value: 0, envName: "PORT" }] } },
      respoolId: "pool-1",
      placementStrategy: "PACK_HOST",
      ...over,
    },
    runtime: {
      state: "PENDING",
      goalState: "SUCCEEDED",
      creationTimeMs: 1_700_000_000_000,
      taskStats: { PENDING: 3 },
      version: 1,
      ...runtime,
    },
  };
}

export function makeTask(jobId: string, instanceId: number, over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    jobId,
    instanceId,
    runId: 1,
    state: "RUNNING",
    goalState: "SUCCEEDED",
    hostname: `host-${instanceId}`,
    ports: { http: 31000 + instanceId },
    startTimeMs: 1_700_000_000_500,
    failureCount: 0,
    configVersion: 1,
    history: [{ runId: 0, state: "FAILED", hostname: "old-host", exitCode: 1, message: "boom" }],
    version: 1,
    ...over,
  };
}

export function makeUpdate(updateId: string, jobId: string, over: Partial<UpdateRecord> = {}): UpdateRecord {
  return {
    updateId,
    jobId,
    type: "UPDATE",
    config: {
      batchSize: 2,
      batchPercentage: 0,
      stopBeforeUpdate: false,
      startPaused: false,
      rollbackOnFailure: true,
      maxInstanceAttempts: 3,
      maxFailureInstances: 1,
      inPlace: true,
      startTasks: false,
    },
    state: "ROLLING_FORWARD",
    prevState: "PAUSED",
    jobConfigVersion: 2,
    prevJobConfigVersion: 1,
    instancesAdded: [3],
    instancesUpdated: [0, 1, 2],
    instancesRemoved: [],
    instancesDone: [0],
    instancesFailed: [],
    instancesCurrent: [1, 2],
    creationTimeMs: 1_700_000_001_000,
    updateTimeMs: 1_700_000_002_000,
    opaqueData: `{"note":"ünïcode ✓"}`,
    version: 1,
    ...over,
  };
}

export function makeVolume(
  volumeId: string,
  jobId: string,
  instanceId: number,
  over: Partial<VolumeRecord> = {},
): VolumeRecord {
  return {
    volumeId,
    jobId,
    instanceId,
    hostname: `host-${instanceId}`,
    containerPath: "/var/data",
    sizeMb: 1024,
    state: "CREATED",
    createdMs: 1_700_000_003_000,
    ...over,
  };
}

export function makeSecret(
  jobId: string,
  secretId: string,
  path: string,
  over: Partial<SecretRecord> = {},
): SecretRecord {
  return {
    jobId,
    secretId,
    path,
    data: btoa(`${secretId} of ${jobId}`),
    createdMs: 1_700_000_005_000,
    version: 1,
    ...over,
  };
}

/** About 1 MB of base64 (Peloton's limit for a secret), every 4 characters different from their neighbours. */
function largeSecretData(): string {
  const groups = Array.from(
    { length: 262_144 },
    (_, i) => btoa(String.fromCharCode(i & 255, (i >> 8) & 255, i % 251)),
  );
  return groups.join("");
}

/** A job's config at another version: a different instance count, so versions are told apart. */
function configAt(jobId: string, version: number): JobRecord["config"] {
  return makeJob(jobId, { instanceCount: version, description: `version ${version}` }).config;
}

/** The fields of a StaleWriteError the suite checks. */
function staleness(err: Error | undefined): unknown[] {
  const e = err as Error & { entity?: string; id?: string; storedVersion?: number; writeVersion?: number };
  return [e?.name, e?.entity, e?.id, e?.storedVersion, e?.writeVersion];
}

function event(
  jobId: string,
  instanceId: number,
  state: TaskEventRecord["state"],
  timeMs: number,
): TaskEventRecord {
  return { jobId, instanceId, runId: 1, state, timeMs, hostname: "h", message: `to ${state}`, reason: "R" };
}

/** An event with every field: run 2 of instance 0 being killed for run 3 and config version 5. */
function detailedEvent(jobId: string): TaskEventRecord {
  return {
    ...event(jobId, 0, "KILLING", 1_700_000_000_000),
    runId: 2,
    goalState: "RUNNING",
    configVersion: 4,
    desiredConfigVersion: 5,
    agentId: "agent-1",
    healthy: "HEALTHY",
    prevRunId: 1,
    desiredRunId: 3,
  };
}

type DetailColumn =
  | "goal_state"
  | "config_version"
  | "desired_config_version"
  | "agent_id"
  | "healthy"
  | "prev_run_id"
  | "desired_run_id";

/** An event row as code before migration 0013 wrote it: without the task's details. */
function rowBefore0013<R extends Record<string, unknown>>(row: R): Omit<R, DetailColumn> {
  const {
    goal_state: _,
    config_version: __,
    desired_config_version: ___,
    agent_id: ____,
    healthy: _____,
    prev_run_id: ______,
    desired_run_id: _______,
    ...old
  } = row;
  return old;
}

export function workflowEvent(
  jobId: string,
  workflowId: string,
  instanceId: number,
  state: WorkflowEventRecord["state"],
  timeMs = 1_700_000_004_000,
): WorkflowEventRecord {
  return { jobId, workflowId, instanceId, type: "UPDATE", state, timeMs };
}

function pool(id: string, path: string, parentId: string): RespoolRecord {
  return {
    id,
    path,
    parentId,
    config: {
      name: path.split("/").pop() || "root",
      owningTeam: "team",
      ldapGroups: [],
      description: "",
      resources: [{ kind: "cpu", reservation: 10.5, limit: 100, share: 1, type: "ELASTIC" }],
      parent: parentId,
      policy: "PriorityFIFO",
    },
  };
}

type Case = (store: Store, ids: Ids, open: () => Promise<Store>) => Promise<void>;

const reopen: Case = async (store, ids, open) => {
  const jobId = ids.job(1);
  const update = makeUpdate(ids.update(1), jobId, { version: 4 });
  const volumes = [makeVolume(ids.volume(1), jobId, 0), makeVolume(ids.volume(2), jobId, 1)];
  store.write([{ kind: "job.put", job: makeJob(jobId) }, { kind: "task.put", task: makeTask(jobId, 0) }]);
  store.write([{ kind: "task.event", event: event(jobId, 0, "RUNNING", 1) }]);
  const step = workflowEvent(jobId, update.updateId, 0, "ROLLING_FORWARD");
  store.write([{ kind: "workflow.event", event: step }]);
  store.write([
    { kind: "job.config", jobId, version: 1, config: configAt(jobId, 1) },
    { kind: "job.config", jobId, version: 2, config: configAt(jobId, 2) },
    { kind: "task.put", task: makeTask(jobId, 1) },
    { kind: "update.put", update },
    ...volumes.map((volume): StoreWrite => ({ kind: "volume.put", volume })),
  ]);
  store.write([{ kind: "task.delete", jobId, instanceId: 1 }, {
    kind: "volume.delete",
    volumeId: ids.volume(2),
  }]);
  const kept = maintenance(ids.host(1));
  store.write([
    { kind: "maintenance.put", maintenance: kept },
    { kind: "maintenance.put", maintenance: maintenance(ids.host(2)) },
  ]);
  store.write([{ kind: "maintenance.delete", hostname: ids.host(2) }]);
  const keptPool = hostPool(ids.hostPool(1));
  const assigned = hostPoolAssignment(ids.host(1), ids.hostPool(1));
  store.write([
    { kind: "hostpool.put", pool: keptPool },
    { kind: "hostpool.put", pool: hostPool(ids.hostPool(2)) },
    { kind: "hostpool.assign", assignment: assigned },
  ]);
  store.write([{ kind: "hostpool.delete", name: ids.hostPool(2) }]);
  const keptSecret = makeSecret(jobId, "s1", "/etc/kept", { data: btoa("replaced"), version: 2 });
  const otherSecret = makeSecret(jobId, "s2", "/etc/two");
  store.write([
    { kind: "secret.put", secret: makeSecret(jobId, "s1", "/etc/old") },
    { kind: "secret.put", secret: otherSecret },
  ]);
  store.write([{ kind: "secret.put", secret: keptSecret }]);
  const deletedJob = ids.job(2);
  store.write([
    { kind: "job.put", job: makeJob(deletedJob) },
    { kind: "secret.put", secret: makeSecret(deletedJob, "s1", "/etc/gone") },
  ]);
  store.write([{ kind: "job.delete", jobId: deletedJob }]);
  const keptLock = adminLock(ids.component("Write"), 2);
  store.write([
    { kind: "admin.lock", lock: adminLock(ids.component("Write"), 1) },
    { kind: "admin.lock", lock: adminLock(ids.component("Kill")) },
  ]);
  store.write([
    { kind: "admin.unlock", component: ids.component("Kill") },
    { kind: "admin.lock", lock: keptLock },
  ]);
  await store.close();
  const again = await open();
  try {
    equal(await mineOf(again, ids), [kept]);
    equal(await hostPoolsOf(again, ids), { pools: [keptPool], assignments: [assigned] });
    equal(await locksOf(again, ids), [keptLock]);
    equal(await again.getSecrets(jobId), [keptSecret, otherSecret]);
    equal(await again.getSecrets(deletedJob), []);
    equal(await again.getJob(jobId), makeJob(jobId));
    equal(await again.getTasks(jobId), [makeTask(jobId, 0)]);
    equal(await again.getTaskEvents(jobId, 0), [event(jobId, 0, "RUNNING", 1)]);
    equal(await again.getWorkflowEvents(jobId, update.updateId), [step]);
    equal(await again.getJobConfig(jobId, 1), configAt(jobId, 1));
    equal(await again.getJobConfig(jobId, 2), configAt(jobId, 2));
    equal(await again.getUpdate(update.updateId), update);
    equal(await again.listUpdates(jobId), [update]);
    ok((await again.activeUpdates()).some((u) => u.updateId === update.updateId));
    equal(await again.listVolumes(jobId), [volumes[0]]);
    // The stored update version survived too: the rule still holds after reopening.
    equal(staleness(await put(again, [{ kind: "update.put", update }])), [
      "StaleWriteError",
      "update",
      update.updateId,
      4,
      4,
    ]);
  } finally {
    await again.close();
  }
};

/** A new, empty database of the store's kind (SQL stores). */
type FreshDatabase = NonNullable<StoreSuiteOptions["freshDatabase"]>;

/**
 * Builds a database as older code left it (`build` runs the migrations of that time and writes rows as that
 * code did), then opens it as a store: the store upgrades it, its own migrate() then has nothing left to
 * run, and `check` reads and writes through it.
 */
async function checkUpgrade(
  freshDatabase: FreshDatabase,
  build: (old: Awaited<ReturnType<typeof import("./kysely_store.ts").openStoreDatabase>>) => Promise<void>,
  check: (store: Store) => Promise<void>,
): Promise<void> {
  const { openStore, openStoreDatabase } = await import("./kysely_store.ts");
  const { url, drop } = freshDatabase();
  try {
    const old = await openStoreDatabase(url);
    await build(old);
    await old.db.destroy();

    const store = await openStore(url);
    try {
      equal(await store.migrate(), []);
      await check(store);
    } finally {
      await store.close();
    }
  } finally {
    await drop();
  }
}

/** A store a later release migrated further (a downgrade): refused before anything is read or written. */
function newerRelease(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { openStore, openStoreDatabase } = await import("./kysely_store.ts");
    const { migrateToLatest, StoreTooNewError } = await import("./schema.ts");
    const { url, drop } = freshDatabase();
    try {
      const current = await openStoreDatabase(url);
      const applied = await migrateToLatest(current.db, current.kind);
      await insertOldJob(current.db, makeJob(ids.job(1)));
      const { sql } = await import("kysely");
      const at = new Date().toISOString();
      await sql`insert into kysely_migration (name, timestamp) values (${"9999_from_the_future"}, ${at})`
        .execute(current.db);
      await current.db.destroy();

      await rejects(openStore(url), (e: Error) => {
        ok(e instanceof StoreTooNewError, String(e));
        equal(
          e.message,
          "the store was migrated by a newer release (its schema is at migration 9999_from_the_future, this " +
            `release knows up to ${
              applied.at(-1)
            }): a downgrade is not supported; run the newer release on it`,
        );
        return true;
      });
      const after = await openStoreDatabase(url);
      try {
        const { sql } = await import("kysely");
        const names = await sql<{ name: string }>`select name from kysely_migration`.execute(after.db);
        equal(names.rows.length, applied.length + 1, "no migration was run or undone");
        equal((await after.db.selectFrom("jobs").select("job_id").execute()).length, 1);
      } finally {
        await after.db.destroy();
      }
    } finally {
      await drop();
    }
  };
}

/**
 * A database made by the code before host maintenance was stored (migrations up to 0003), with rows in it:
 * opening it as a store adds the maintenance table and keeps the rows.
 */
function upgradeFrom0003(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { migrateToLatest } = await import("./schema.ts");
    const jobId = ids.job(1);
    await checkUpgrade(freshDatabase, async (old) => {
      equal(await migrateToLatest(old.db, old.kind, "0003_leases_members_frameworks"), [
        "0001_initial",
        "0002_updates_volumes_configs",
        "0003_leases_members_frameworks",
      ]);
      await insertOldJob(old.db, makeJob(jobId));
    }, async (store) => {
      equal(await store.getJob(jobId), makeJob(jobId));
      equal(await store.hostMaintenance(), []);
      const m = maintenance(ids.host(1));
      strictEqual(await put(store, [{ kind: "maintenance.put", maintenance: m }]), undefined);
      equal(await store.hostMaintenance(), [m]);
    });
  };
}

/**
 * A job row as the code before migration 0005 wrote it: no `owning_team` column (jobs without labels, so no
 * `job_labels` rows either).
 */
// deno-lint-ignore no-explicit-any
async function insertOldJob(db: import("kysely").Kysely<any>, job: JobRecord): Promise<void> {
  const { jobRow } = await import("./schema.ts");
  const { owning_team: _, completion_time_ms: __, ...row } = jobRow(job);
  await db.insertInto("jobs").values(row).execute();
}

/**
 * A database made by the code before the owning team had a column (migrations up to 0004), with jobs in it:
 * opening it as a store fills the column from each job's config, so a query by owner finds them.
 */
function upgradeFrom0004(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { migrateToLatest } = await import("./schema.ts");
    const team = `${ids.prefix}-team`;
    const jobs = [
      makeJob(ids.job(1), { owningTeam: team, owner: "someone" }, { creationTimeMs: 10 }),
      makeJob(ids.job(2), { owningTeam: `${team}-other`, owner: team }, { creationTimeMs: 20 }),
      // Stored before owning teams were limited to the column's width.
      makeJob(ids.job(3), { owningTeam: `${team}-${"x".repeat(300)}` }, { creationTimeMs: 30 }),
    ];
    const longTeam = jobs[2].config.owningTeam;
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0004_host_maintenance")).length, 4);
      for (const job of jobs) await insertOldJob(old.db, job);
    }, async (store) => {
      equal(await store.getJob(ids.job(1)), jobs[0]);
      equal(
        await store.queryJobs({ owner: team }),
        { jobs: [jobs[0]], total: 1 },
        "the owning team, not owner",
      );
      equal((await store.queryJobs({ owner: `${team}-other` })).jobs.map((j) => j.jobId), [ids.job(2)]);
      equal(
        await store.queryJobs({ owner: longTeam }),
        { jobs: [jobs[2]], total: 1 },
        "a team past the column",
      );
      equal(await store.queryJobs({ owner: longTeam.slice(0, 255) }), { jobs: [], total: 0 }, "its prefix");
      const again = { ...jobs[2], runtime: { ...jobs[2].runtime, version: jobs[2].runtime.version + 1 } };
      strictEqual(await put(store, [{ kind: "job.put", job: again }]), undefined, "written again");
      equal(await store.queryJobs({ owner: longTeam }), { jobs: [again], total: 1 });
    });
  };
}

/**
 * A database made by the code before workflow events were stored (migrations up to 0005), with a job in it:
 * opening it as a store adds their table, keeps the job, and stores and deletes events with it.
 */
function upgradeFrom0005(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { jobRow, migrateToLatest } = await import("./schema.ts");
    const jobId = ids.job(1), workflowId = ids.update(1);
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0005_jobs_owning_team")).length, 5);
      const { completion_time_ms: _, ...row } = jobRow(makeJob(jobId));
      await old.db.insertInto("jobs").values(row).execute();
    }, async (store) => {
      equal(await store.getJob(jobId), makeJob(jobId));
      equal(await store.getWorkflowEvents(jobId, workflowId), []);
      const step = workflowEvent(jobId, workflowId, 0, "ROLLING_FORWARD");
      strictEqual(await put(store, [{ kind: "workflow.event", event: step }]), undefined);
      equal(await store.getWorkflowEvents(jobId, workflowId), [step]);
      strictEqual(await put(store, [{ kind: "job.delete", jobId }]), undefined);
      equal(await store.getWorkflowEvents(jobId, workflowId), []);
    });
  };
}

/**
 * A database made by the code before job queries could be ordered by completion time (migrations up to
 * 0006), with jobs in it: opening it as a store fills the new column from each job's runtime.
 */
function upgradeFrom0006(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { jobRow, migrateToLatest } = await import("./schema.ts");
    const team = `${ids.prefix}-team`;
    const jobs = [400, undefined, 200].map((completionTimeMs, n) =>
      makeJob(ids.job(n), { owningTeam: team }, { creationTimeMs: 10 * n, completionTimeMs })
    );
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0006_workflow_events")).length, 6);
      for (const job of jobs) {
        const { completion_time_ms: _, ...row } = jobRow(job);
        await old.db.insertInto("jobs").values(row).execute();
      }
    }, async (store) => {
      equal(await store.getJob(ids.job(0)), jobs[0]);
      const order = [{ property: "completion_time", desc: false }] as const;
      equal(
        (await store.queryJobs({ owner: team, order })).jobs.map((j) => j.jobId),
        [ids.job(2), ids.job(0), ids.job(1)],
        "by the completion times in the runtimes, the job without one last",
      );
    });
  };
}

/**
 * A database made by the code before host pools were stored (migrations up to 0007), with rows in it:
 * opening it as a store adds the host pool tables and keeps the rows.
 */
function upgradeFrom0007(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { jobRow, maintenanceRow, migrateToLatest } = await import("./schema.ts");
    const job = makeJob(ids.job(1), {}, { completionTimeMs: 400 });
    const m = maintenance(ids.host(1));
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0007_jobs_completion_time")).length, 7);
      await old.db.insertInto("jobs").values(jobRow(job)).execute();
      await old.db.insertInto("host_maintenance").values(maintenanceRow(m)).execute();
    }, async (store) => {
      equal(await store.getJob(job.jobId), job);
      equal(await store.hostMaintenance(), [m]);
      equal(await store.hostPools(), { pools: [], assignments: [] });
      const p = hostPool(ids.hostPool(1));
      const a = hostPoolAssignment(ids.host(1), p.name);
      strictEqual(
        await put(store, [{ kind: "hostpool.put", pool: p }, { kind: "hostpool.assign", assignment: a }]),
        undefined,
      );
      equal(await store.hostPools(), { pools: [p], assignments: [a] });
    });
  };
}

/**
 * A database made by the code before lockdown was stored (migrations up to 0008), with rows in it: opening
 * it as a store adds the admin locks table and keeps the rows.
 */
function upgradeFrom0008(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { hostPoolAssignmentRow, hostPoolRow, jobRow, maintenanceRow, migrateToLatest } = await import(
      "./schema.ts"
    );
    const job = makeJob(ids.job(1), {}, { completionTimeMs: 400 });
    const m = maintenance(ids.host(1));
    const p = hostPool(ids.hostPool(1));
    const a = hostPoolAssignment(ids.host(1), p.name);
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0008_host_pools")).length, 8);
      await old.db.insertInto("jobs").values(jobRow(job)).execute();
      await old.db.insertInto("host_maintenance").values(maintenanceRow(m)).execute();
      await old.db.insertInto("host_pools").values(hostPoolRow(p)).execute();
      await old.db.insertInto("host_pool_assignments").values(hostPoolAssignmentRow(a)).execute();
    }, async (store) => {
      equal(await store.getJob(job.jobId), job);
      equal(await store.hostMaintenance(), [m]);
      equal(await store.hostPools(), { pools: [p], assignments: [a] });
      equal(await store.adminLocks(), []);
      const lock = adminLock(ids.component("GoalStateEngine"));
      strictEqual(await put(store, [{ kind: "admin.lock", lock }]), undefined);
      equal(await store.adminLocks(), [lock]);
    });
  };
}

/**
 * A database made by the code before secrets were stored (migrations up to 0009), with rows in it: opening
 * it as a store adds the secrets table and keeps the rows.
 */
function upgradeFrom0009(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { adminLockRow, jobRow, migrateToLatest } = await import("./schema.ts");
    const job = makeJob(ids.job(1));
    const lock = adminLock(ids.component("Launch"));
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0009_admin_locks")).length, 9);
      await old.db.insertInto("jobs").values(jobRow(job)).execute();
      await old.db.insertInto("admin_locks").values(adminLockRow(lock)).execute();
    }, async (store) => {
      equal(await store.getJob(job.jobId), job);
      equal(await store.adminLocks(), [lock]);
      equal(await store.getSecrets(job.jobId), []);
      const secret = makeSecret(job.jobId, "s1", "/etc/secret");
      strictEqual(await put(store, [{ kind: "secret.put", secret }]), undefined);
      equal(await store.getSecrets(job.jobId), [secret]);
    });
  };
}

/**
 * A database made by the code before event rows had write keys (migrations up to 0010), with events in it:
 * opening it as a store keeps them, and events written after it are stored once per write.
 */
function upgradeFrom0010(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { eventRow, jobRow, migrateToLatest, workflowEventRow } = await import("./schema.ts");
    const jobId = ids.job(1), workflowId = ids.update(1);
    const pending = event(jobId, 0, "PENDING", 1);
    const forward = workflowEvent(jobId, workflowId, 0, "ROLLING_FORWARD");
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0010_secret_info")).length, 10);
      await old.db.insertInto("jobs").values(jobRow(makeJob(jobId))).execute();
      const { write_key: _, ...row } = rowBefore0013(eventRow(pending, null));
      await old.db.insertInto("task_events").values(row).execute();
      const { write_key: __, ...step } = workflowEventRow(forward, null);
      await old.db.insertInto("workflow_events").values(step).execute();
    }, async (store) => {
      equal(await store.getTaskEvents(jobId, 0), [pending]);
      equal(await store.getWorkflowEvents(jobId, workflowId), [forward]);
      // The key is the write's, not the event's: the same event in two writes is stored twice.
      const running = event(jobId, 0, "RUNNING", 2);
      strictEqual(await put(store, [{ kind: "task.event", event: running }]), undefined);
      strictEqual(await put(store, [{ kind: "task.event", event: running }]), undefined);
      equal(await store.getTaskEvents(jobId, 0), [pending, running, running]);
      const done = workflowEvent(jobId, workflowId, 0, "SUCCEEDED");
      strictEqual(await put(store, [{ kind: "workflow.event", event: done }]), undefined);
      equal(await store.getWorkflowEvents(jobId, workflowId), [forward, done]);
    });
  };
}

/**
 * A database made by the code before tasks said whether they had work left (migrations up to 0011): the
 * new column is filled from the states there are, so an ended job with a service's ended run is recovered.
 */
function upgradeFrom0011(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { jobRow, migrateToLatest, taskRow } = await import("./schema.ts");
    const [revived, done] = [ids.job(1), ids.job(2)];
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0011_event_write_keys")).length, 11);
      for (const [jobId, goalState] of [[revived, "RUNNING"], [done, "KILLED"]] as const) {
        await old.db.insertInto("jobs").values(jobRow(makeJob(jobId, {}, { state: "KILLED" }))).execute();
        const { has_work: _, ...row } = taskRow(makeTask(jobId, 0, { state: "KILLED", goalState }));
        await old.db.insertInto("tasks").values(row).execute();
      }
    }, async (store) => {
      const active = (await store.activeJobs()).map((j) => j.jobId);
      equal([active.includes(revived), active.includes(done)], [true, false]);
    });
  };
}

/**
 * A database made by the code before events kept the task's goal, versions, agent, health and runs
 * (migrations up to 0012), with an event in it: that event reads back without them, later ones with them.
 */
function upgradeFrom0012(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { eventRow, jobRow, migrateToLatest } = await import("./schema.ts");
    const jobId = ids.job(1);
    const before = event(jobId, 0, "RUNNING", 1);
    await checkUpgrade(freshDatabase, async (old) => {
      equal((await migrateToLatest(old.db, old.kind, "0012_task_has_work")).length, 12);
      await old.db.insertInto("jobs").values(jobRow(makeJob(jobId))).execute();
      await old.db.insertInto("task_events").values(rowBefore0013(eventRow(before, "writer-1"))).execute();
    }, async (store) => {
      equal(await store.getTaskEvents(jobId, 0), [before]);
      const after = detailedEvent(jobId);
      strictEqual(await put(store, [{ kind: "task.event", event: after }]), undefined);
      equal(await store.getTaskEvents(jobId, 0), [before, after]);
    });
  };
}

/**
 * A batch that fails changes nothing: after `before` (and the step's job 1 and a respool at `/<prefix>/a`),
 * `change` is put with a write after it that is stale (that job again) or that the database refuses (a second
 * respool on that path), each alone and then in one group with `commit`, a batch that commits. `read` gives
 * `unchanged` after the batches alone and `committed` after the group.
 */
async function failsWhole(store: Store, ids: Ids, batches: {
  before: StoreWrite[];
  change: StoreWrite[];
  commit: StoreWrite[];
  read: () => Promise<unknown>;
  unchanged: unknown;
  committed: unknown;
}): Promise<void> {
  const p = ids.prefix;
  const jobId = ids.job(1);
  strictEqual(
    await put(store, [
      ...batches.before,
      { kind: "job.put", job: makeJob(jobId) },
      { kind: "respool.put", pool: pool(`${p}-a`, `/${p}/a`, "root") },
    ]),
    undefined,
  );
  const stale: StoreWrite[] = [...batches.change, { kind: "job.put", job: makeJob(jobId) }];
  const refused: StoreWrite[] = [...batches.change, {
    kind: "respool.put",
    pool: pool(`${p}-b`, `/${p}/a`, "root"),
  }];
  strictEqual((await put(store, stale))?.name, "StaleWriteError");
  ok(await put(store, refused) instanceof Error, "a second respool on the same path is refused");
  equal(await batches.read(), batches.unchanged, "each batch alone");
  // In one group with a batch that commits.
  const results = await Promise.all([put(store, stale), put(store, batches.commit), put(store, refused)]);
  const outcome = (r?: Error) => !r ? "committed" : r.name === "StaleWriteError" ? "stale" : "refused";
  equal(results.map(outcome), ["stale", "committed", "refused"]);
  equal(await batches.read(), batches.committed, "in a group");
}

export function adminLock(component: string, lockedMs = 1_700_000_000_321): AdminLockRecord {
  return { component, lockedMs };
}

/** The locks of one step's components (steps share a database). */
async function locksOf(store: Store, ids: Ids): Promise<AdminLockRecord[]> {
  return (await store.adminLocks()).filter((l) => l.component.startsWith(ids.component("")));
}

export function hostPool(name: string, createdMs = 1_700_000_000_456): HostPoolRecord {
  return { name, createdMs };
}

export function hostPoolAssignment(
  hostname: string,
  pool: string,
  changedMs = 1_700_000_000_789,
): HostPoolAssignmentRecord {
  return { hostname, pool, changedMs };
}

/** The host pools and assignments of one step's pools and hosts (steps share a database). */
async function hostPoolsOf(store: Store, ids: Ids): Promise<StoredHostPools> {
  const { pools, assignments } = await store.hostPools();
  return {
    pools: pools.filter((p) => p.name.startsWith(`${ids.prefix}-pool-`)),
    assignments: assignments.filter((a) => a.hostname.startsWith(`${ids.prefix}-host-`)),
  };
}

export function maintenance(
  hostname: string,
  over: Partial<HostMaintenanceRecord> = {},
): HostMaintenanceRecord {
  return { hostname, state: "HOST_STATE_DRAINING", startTimeMs: 1_700_000_000_123, ...over };
}

/** The maintenance records of one step's hosts (steps share a database). */
async function mineOf(store: Store, ids: Ids): Promise<HostMaintenanceRecord[]> {
  return (await store.hostMaintenance()).filter((m) => m.hostname.startsWith(`${ids.prefix}-host-`));
}

/**
 * Builds a database holding only migration 0001 and some rows, runs 0002's DDL once by hand (a MySQL
 * migrator cut short after its DDL and before recording it), then has several processes open it at once.
 */
function upgrade(freshDatabase: FreshDatabase): Case {
  return async (_store, ids) => {
    const { openStore, openStoreDatabase } = await import("./kysely_store.ts");
    const { eventRow, migrateToLatest, storeMigrations, taskRow } = await import("./schema.ts");
    const { url, drop } = freshDatabase();
    const jobId = ids.job(1);
    try {
      const old = await openStoreDatabase(url);
      equal(await migrateToLatest(old.db, old.kind, "0001_initial"), ["0001_initial"]);
      await insertOldJob(old.db, makeJob(jobId));
      // The task and its event as that code wrote them, without the columns of migrations 0011 and 0012.
      const { has_work: _, ...task } = taskRow(makeTask(jobId, 0));
      await old.db.insertInto("tasks").values(task).execute();
      const { write_key: __, ...running } = rowBefore0013(eventRow(event(jobId, 0, "RUNNING", 1), null));
      await old.db.insertInto("task_events").values(running).execute();
      await old.db.destroy();

      const cut = await openStoreDatabase(url);
      try {
        await storeMigrations(cut.kind)["0002_updates_volumes_configs"].up(cut.db);
      } finally {
        await cut.db.destroy();
      }
      await openConcurrently(url, 3);

      const store = await openStore(url);
      try {
        equal(await store.migrate(), []);
        equal(await store.getJob(jobId), makeJob(jobId));
        equal(await store.getTasks(jobId), [makeTask(jobId, 0)]);
        equal(await store.getTaskEvents(jobId, 0), [event(jobId, 0, "RUNNING", 1)]);
        const update = makeUpdate(ids.update(1), jobId);
        const volume = makeVolume(ids.volume(1), jobId, 0);
        strictEqual(
          await put(store, [
            { kind: "job.config", jobId, version: 1, config: configAt(jobId, 1) },
            { kind: "update.put", update },
            { kind: "volume.put", volume },
          ]),
          undefined,
        );
        equal(await store.getJobConfig(jobId, 1), configAt(jobId, 1));
        equal(await store.listUpdates(jobId), [update]);
        equal(await store.listVolumes(jobId), [volume]);
      } finally {
        await store.close();
      }
    } finally {
      await drop();
    }
  };
}

const cases: Record<string, Case> = {
  "job put/get round trip keeps the config intact": async (store, ids) => {
    const job = makeJob(ids.job(1));
    strictEqual(await put(store, [{ kind: "job.put", job }]), undefined);
    equal(await store.getJob(job.jobId), job);
    strictEqual(await store.getJob(ids.job(2)), undefined);
    const next = makeJob(job.jobId, { labels: [{ key: "a", value: "b" }] }, { state: "RUNNING", version: 2 });
    strictEqual(await put(store, [{ kind: "job.put", job: next }]), undefined);
    equal(await store.getJob(job.jobId), next);
  },

  "task put/get round trip": async (store, ids) => {
    const jobId = ids.job(1);
    const tasks = [2, 0, 1].map((i) => makeTask(jobId, i));
    strictEqual(await put(store, tasks.map((task) => ({ kind: "task.put", task }))), undefined);
    equal(await store.getTasks(jobId), [0, 1, 2].map((i) => makeTask(jobId, i)));
    const bare: TaskRecord = { ...makeTask(jobId, 1, { version: 2, state: "PENDING" }) };
    delete bare.hostname, delete bare.ports, delete bare.history;
    strictEqual(await put(store, [{ kind: "task.put", task: bare }]), undefined);
    equal(await store.getTask(jobId, 1), bare);
    strictEqual(await store.getTask(jobId, 9), undefined);
    equal(await store.getTasks(ids.job(2)), []);
  },

  "task events come back oldest first, per instance": async (store, ids) => {
    const jobId = ids.job(1);
    const states = ["PENDING", "READY", "PLACED", "LAUNCHED", "RUNNING", "SUCCEEDED"] as const;
    const events = states.map((s) => event(jobId, 0, s, 5)); // one timestamp: order is write order
    for (const e of events.slice(0, 3)) store.write([{ kind: "task.event", event: e }]);
    store.write([{ kind: "task.event", event: event(jobId, 1, "KILLED", 1) }]);
    strictEqual(await put(store, events.slice(3).map((event) => ({ kind: "task.event", event }))), undefined);
    equal(await store.getTaskEvents(jobId, 0), events);
    equal(await store.getTaskEvents(jobId, 1), [event(jobId, 1, "KILLED", 1)]);
    const bare: TaskEventRecord = { jobId, instanceId: 2, runId: 3, state: "LOST", timeMs: 7 };
    strictEqual(await put(store, [{ kind: "task.event", event: bare }]), undefined);
    equal(await store.getTaskEvents(jobId, 2), [bare]);
  },

  "a task event keeps the task's goal, versions, agent, health and runs of its moment": async (
    store,
    ids,
  ) => {
    const jobId = ids.job(1);
    const killing = detailedEvent(jobId);
    // A first run, not placed: no previous run, agent or health.
    const { agentId: _, healthy: __, prevRunId: ___, ...pending } = {
      ...detailedEvent(jobId),
      runId: 1,
      state: "PENDING" as const,
      desiredRunId: 1,
    };
    strictEqual(await put(store, [{ kind: "task.event", event: pending }]), undefined);
    strictEqual(await put(store, [{ kind: "task.event", event: killing }]), undefined);
    equal(await store.getTaskEvents(jobId, 0), [pending, killing]);
  },

  "an instance's events of runs up to one are deleted; later runs' and other instances' stay": async (
    store,
    ids,
  ) => {
    const jobId = ids.job(1);
    const of = (instanceId: number, runId: number, state: TaskEventRecord["state"]) => ({
      ...event(jobId, instanceId, state, runId),
      runId,
    });
    const events = [of(0, 1, "RUNNING"), of(0, 2, "RUNNING"), of(0, 3, "PENDING"), of(1, 1, "RUNNING")];
    strictEqual(await put(store, events.map((event) => ({ kind: "task.event", event }))), undefined);
    // Held-back events of the same batch are written before the delete, as it comes after them.
    strictEqual(
      await put(store, [
        { kind: "task.event", event: of(0, 2, "KILLED") },
        { kind: "task.events.delete", jobId, instanceId: 0, runId: 2 },
      ]),
      undefined,
    );
    equal(await store.getTaskEvents(jobId, 0), [of(0, 3, "PENDING")]);
    equal(await store.getTaskEvents(jobId, 1), [of(1, 1, "RUNNING")]);
  },

  "workflow events come back oldest first, per workflow and instance": async (store, ids) => {
    const jobId = ids.job(1), [a, b] = [ids.update(1), ids.update(2)];
    const states = ["INITIALIZED", "ROLLING_FORWARD", "SUCCEEDED"] as const;
    // One timestamp: order is write order, across batches and within one.
    const of0 = states.map((s) => workflowEvent(jobId, a, 0, s, 5));
    store.write([{ kind: "workflow.event", event: of0[0] }]);
    store.write([
      { kind: "workflow.event", event: workflowEvent(jobId, a, 1, "INITIALIZED", 5) },
      { kind: "workflow.event", event: of0[1] },
      { kind: "task.put", task: makeTask(jobId, 0) },
      { kind: "workflow.event", event: workflowEvent(jobId, b, 0, "PAUSED", 5) },
    ]);
    const restart: WorkflowEventRecord = { ...workflowEvent(ids.job(2), a, 0, "FAILED", 6), type: "RESTART" };
    strictEqual(
      await put(store, [
        { kind: "workflow.event", event: of0[2] },
        { kind: "workflow.event", event: restart },
      ]),
      undefined,
    );
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 0 }), of0);
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 1 }), [
      workflowEvent(jobId, a, 1, "INITIALIZED", 5),
    ]);
    equal(await store.getWorkflowEvents(jobId, a), [
      of0[0],
      workflowEvent(jobId, a, 1, "INITIALIZED", 5),
      of0[1],
      of0[2],
    ]);
    equal(await store.getWorkflowEvents(jobId, b), [workflowEvent(jobId, b, 0, "PAUSED", 5)]);
    equal(
      await store.getWorkflowEvents(ids.job(2), a, { instanceId: 0 }),
      [restart],
      "another job's, by job and workflow",
    );
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 2 }), []);
    equal(await store.getWorkflowEvents(jobId, ids.update(3)), []);
  },

  "a workflow's steps: a run of one state as its newest event, the newest `limit` of each instance": async (
    store,
    ids,
  ) => {
    const jobId = ids.job(1), [a, b] = [ids.update(1), ids.update(2)];
    const at = (i: number, state: UpdateState, timeMs: number) => workflowEvent(jobId, a, i, state, timeMs);
    // Instance 0 is rolled back (ROLLING_BACKWARD twice), instance 1 records it three times and instance 2
    // comes back to PAUSED after another state, all interleaved, with another workflow's event in between.
    const batches: WorkflowEventRecord[][] = [
      [at(0, "INITIALIZED", 1), at(1, "INITIALIZED", 1), at(2, "PAUSED", 1)],
      [at(0, "ROLLING_FORWARD", 2), at(2, "ROLLING_FORWARD", 2)],
      [at(0, "FAILED", 3), at(2, "PAUSED", 3)],
      [
        at(0, "ROLLING_BACKWARD", 4),
        at(1, "ROLLING_BACKWARD", 4),
        workflowEvent(jobId, b, 0, "SUCCEEDED", 4),
      ],
      [at(0, "ROLLING_BACKWARD", 5), at(1, "ROLLING_BACKWARD", 5)],
      [at(0, "SUCCEEDED", 6), at(1, "ROLLING_BACKWARD", 7)],
    ];
    for (const events of batches.slice(0, -1)) {
      store.write(events.map((event) => ({ kind: "workflow.event", event })));
    }
    strictEqual(
      await put(store, batches.at(-1)!.map((event) => ({ kind: "workflow.event", event }))),
      undefined,
    );

    const all = [
      at(0, "INITIALIZED", 1),
      at(1, "INITIALIZED", 1),
      at(2, "PAUSED", 1),
      at(0, "ROLLING_FORWARD", 2),
      at(2, "ROLLING_FORWARD", 2),
      at(0, "FAILED", 3),
      at(2, "PAUSED", 3),
      at(0, "ROLLING_BACKWARD", 5),
      at(0, "SUCCEEDED", 6),
      at(1, "ROLLING_BACKWARD", 7),
    ];
    equal(await store.getWorkflowEvents(jobId, a), all, "each run of one state as its newest");
    for (const limit of [0, 5, 6, 0xffff_ffff]) {
      equal(await store.getWorkflowEvents(jobId, a, { limit }), all, `limit ${limit}: no instance has more`);
    }
    equal(await store.getWorkflowEvents(jobId, a, { limit: 1 }), [
      at(2, "PAUSED", 3),
      at(0, "SUCCEEDED", 6),
      at(1, "ROLLING_BACKWARD", 7),
    ]);
    equal(await store.getWorkflowEvents(jobId, a, { limit: 2 }), [
      at(1, "INITIALIZED", 1),
      at(2, "ROLLING_FORWARD", 2),
      at(2, "PAUSED", 3),
      at(0, "ROLLING_BACKWARD", 5),
      at(0, "SUCCEEDED", 6),
      at(1, "ROLLING_BACKWARD", 7),
    ]);
    equal(await store.getWorkflowEvents(jobId, a, { limit: 4 }), all.slice(1), "instance 0 has 5 steps");
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 0, limit: 3 }), [
      at(0, "FAILED", 3),
      at(0, "ROLLING_BACKWARD", 5),
      at(0, "SUCCEEDED", 6),
    ]);
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 1 }), [
      at(1, "INITIALIZED", 1),
      at(1, "ROLLING_BACKWARD", 7),
    ]);
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 1, limit: 1 }), [
      at(1, "ROLLING_BACKWARD", 7),
    ]);
    equal(await store.getWorkflowEvents(jobId, a, { instanceId: 3, limit: 1 }), []);
    equal(await store.getWorkflowEvents(jobId, b, { instanceId: 0, limit: 1 }), [
      workflowEvent(jobId, b, 0, "SUCCEEDED", 4),
    ]);
  },

  "a workflow's events are deleted; the job's other workflows' stay": async (store, ids) => {
    const jobId = ids.job(1), [a, b] = [ids.update(1), ids.update(2)];
    strictEqual(
      await put(store, [
        { kind: "workflow.event", event: workflowEvent(jobId, a, 0, "ROLLING_FORWARD") },
        { kind: "workflow.event", event: workflowEvent(jobId, b, 0, "ROLLING_FORWARD") },
        { kind: "workflow.event", event: workflowEvent(ids.job(2), a, 0, "ROLLING_FORWARD") },
      ]),
      undefined,
    );
    // Held-back events of the same batch are written before the delete, as it comes after them.
    strictEqual(
      await put(store, [
        { kind: "workflow.event", event: workflowEvent(jobId, a, 0, "SUCCEEDED") },
        { kind: "workflow.events.delete", jobId, workflowId: a },
        { kind: "workflow.event", event: workflowEvent(jobId, a, 1, "INITIALIZED") },
      ]),
      undefined,
    );
    equal(await store.getWorkflowEvents(jobId, a), [workflowEvent(jobId, a, 1, "INITIALIZED")]);
    equal(await store.getWorkflowEvents(jobId, b), [workflowEvent(jobId, b, 0, "ROLLING_FORWARD")]);
    equal(await store.getWorkflowEvents(ids.job(2), a), [workflowEvent(ids.job(2), a, 0, "ROLLING_FORWARD")]);
    strictEqual(
      await put(store, [{ kind: "workflow.events.delete", jobId, workflowId: ids.update(9) }]),
      undefined,
    );
  },

  "job.delete removes the job's workflow events, written before it in its batch too": async (store, ids) => {
    const jobId = ids.job(1), workflowId = ids.update(1);
    strictEqual(
      await put(store, [
        { kind: "job.put", job: makeJob(jobId) },
        { kind: "workflow.event", event: workflowEvent(jobId, workflowId, 0, "ROLLING_FORWARD") },
      ]),
      undefined,
    );
    strictEqual(
      await put(store, [
        { kind: "workflow.event", event: workflowEvent(jobId, workflowId, 1, "ROLLING_FORWARD") },
        { kind: "job.delete", jobId },
      ]),
      undefined,
    );
    equal(await store.getWorkflowEvents(jobId, workflowId), []);
    strictEqual(
      await put(store, [
        { kind: "job.put", job: makeJob(jobId) },
        { kind: "workflow.event", event: workflowEvent(jobId, workflowId, 2, "INITIALIZED") },
      ]),
      undefined,
      "created again, it starts with no events",
    );
    equal(await store.getWorkflowEvents(jobId, workflowId), [
      workflowEvent(jobId, workflowId, 2, "INITIALIZED"),
    ]);
  },

  "respools put, update and delete": async (store, ids) => {
    const p = ids.prefix;
    const pools = [pool(`${p}-a`, `/${p}/a`, `${p}-root`), pool(`${p}-root`, `/${p}`, "root")];
    strictEqual(await put(store, pools.map((pool) => ({ kind: "respool.put", pool }))), undefined);
    const mine = async () => (await store.respools()).filter((r) => r.id.startsWith(p));
    equal(await mine(), [pools[1], pools[0]]);
    const moved = pool(`${p}-a`, `/${p}/b`, `${p}-root`);
    strictEqual(await put(store, [{ kind: "respool.put", pool: moved }]), undefined);
    equal(await mine(), [pools[1], moved]);
    const clash = await put(store, [{ kind: "respool.put", pool: pool(`${p}-c`, `/${p}/b`, `${p}-root`) }]);
    ok(clash instanceof Error, "a second pool on the same path is refused");
    strictEqual(await put(store, [{ kind: "respool.delete", id: `${p}-a` }]), undefined);
    equal(await mine(), [pools[1]]);
  },

  "a stale write drops its whole batch; others in the group commit": async (store, ids) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    strictEqual(await put(store, [{ kind: "job.put", job: makeJob(a, {}, { version: 5 }) }]), undefined);
    strictEqual(await put(store, [{ kind: "task.put", task: makeTask(a, 0, { version: 3 }) }]), undefined);
    const results = await Promise.all([
      put(store, [{ kind: "task.put", task: makeTask(b, 0) }]),
      put(store, [
        { kind: "task.put", task: makeTask(a, 1) },
        { kind: "task.event", event: event(a, 1, "RUNNING", 1) },
        { kind: "job.put", job: makeJob(a, {}, { version: 5, state: "RUNNING" }) },
      ]),
      put(store, [{ kind: "task.put", task: makeTask(b, 1) }]),
      put(store, [{ kind: "task.put", task: makeTask(a, 2) }, {
        kind: "task.put",
        task: makeTask(a, 0, { version: 2 }),
      }]),
      put(store, [{ kind: "task.put", task: makeTask(b, 2) }, { kind: "task.put", task: makeTask(b, 2) }]),
    ]);
    strictEqual(results[0], undefined);
    strictEqual(results[2], undefined);
    for (
      const [i, entity, id, stored, written] of [[1, "job", a, 5, 5], [3, "task", `${a}/0`, 3, 2], [
        4,
        "task",
        `${b}/2`,
        1,
        1,
      ]] as const
    ) {
      const err = results[i] as Error & { entity?: string; storedVersion?: number; writeVersion?: number };
      strictEqual(err?.name, "StaleWriteError", `batch ${i} is stale`);
      equal([err.entity, err.storedVersion, err.writeVersion], [entity, stored, written]);
      ok(err.message.includes(id) && err.message.includes(`${stored}`), err.message);
    }
    equal((await store.getTasks(b)).map((t) => t.instanceId), [0, 1]);
    equal((await store.getTasks(a)).map((t) => [t.instanceId, t.version]), [[0, 3]]);
    equal(await store.getTaskEvents(a, 1), []);
    equal((await store.getJob(a))?.runtime.state, "PENDING");
  },

  "a batch the database refuses rolls back alone": async (store, ids) => {
    const p = ids.prefix;
    const jobId = ids.job(1);
    strictEqual(
      await put(store, [{ kind: "respool.put", pool: pool(`${p}-a`, `/${p}/a`, "root") }]),
      undefined,
    );
    const results = await Promise.all([
      put(store, [{ kind: "task.put", task: makeTask(jobId, 0) }]),
      put(store, [
        { kind: "task.put", task: makeTask(jobId, 1) },
        { kind: "respool.put", pool: pool(`${p}-b`, `/${p}/a`, "root") },
      ]),
      put(store, [{ kind: "task.put", task: makeTask(jobId, 2) }]),
    ]);
    equal(results.map((r) => r instanceof Error), [false, true, false]);
    equal((await store.getTasks(jobId)).map((t) => t.instanceId), [0, 2]);
    equal((await store.respools()).filter((r) => r.id.startsWith(p)).map((r) => r.id), [`${p}-a`]);
  },

  "many writes land in order": async (store, ids) => {
    const jobId = ids.job(1);
    const order: number[] = [];
    const n = 500;
    for (let v = 1; v <= n; v++) {
      const task = makeTask(jobId, v % 5, { version: Math.ceil(v / 5), runId: v });
      store.write([{ kind: "task.put", task }, {
        kind: "task.event",
        event: { ...event(jobId, 0, "RUNNING", v), runId: v },
      }], (err) => {
        ok(err === undefined, err?.message);
        order.push(v);
      });
    }
    await store.flush();
    equal(order, Array.from({ length: n }, (_, i) => i + 1));
    equal((await store.getTasks(jobId)).map((t) => t.runId), [500, 496, 497, 498, 499]);
    equal((await store.getTaskEvents(jobId, 0)).map((e) => e.runId), order);
  },

  "an empty batch is done after every batch written before it, and after none written later": async (
    store,
    ids,
  ) => {
    const jobId = ids.job(1);
    const order: string[] = [];
    const put = (v: number) =>
      store.write([{ kind: "task.put", task: makeTask(jobId, 0, { version: v, runId: v }) }], (err) => {
        ok(err === undefined, err?.message);
        order.push(`put ${v}`);
      });
    for (let v = 1; v <= 3; v++) put(v);
    store.write([], (err) => {
      ok(err === undefined, err?.message);
      order.push("empty");
    });
    put(4);
    await store.flush();
    equal(order, ["put 1", "put 2", "put 3", "empty", "put 4"]);
    equal((await store.getTasks(jobId)).map((t) => t.runId), [4]);
  },

  "a task put again and again in one group ends as its last put, deletes in between counting": async (
    store,
    ids,
  ) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    const put = (jobId: string, i: number, version: number, runId: number): StoreWrite => ({
      kind: "task.put",
      task: makeTask(jobId, i, { version, runId }),
    });
    const ev = (jobId: string, runId: number): StoreWrite => ({
      kind: "task.event",
      event: { ...event(jobId, 0, "RUNNING", runId), runId },
    });
    const results: (Error | undefined)[] = [];
    // Queued together, so that they share groups: the outcome is the same however they are grouped.
    const batches: StoreWrite[][] = [
      [put(a, 0, 1, 1), ev(a, 1), put(b, 0, 1, 1), ev(b, 1)],
      [put(a, 0, 2, 2), ev(a, 2), put(a, 0, 3, 3), ev(a, 3)],
      [{ kind: "task.delete", jobId: a, instanceId: 0 }, put(a, 0, 1, 4), ev(a, 4)],
      [put(b, 0, 2, 2), { kind: "job.delete", jobId: b }, put(b, 0, 1, 3), ev(b, 3)],
      [put(a, 0, 2, 5), put(a, 0, 3, 6), put(a, 1, 1, 1)],
    ];
    for (const batch of batches) store.write(batch, (err) => results.push(err));
    await store.flush();
    equal(results, batches.map(() => undefined));
    equal((await store.getTasks(a)).map((t) => [t.instanceId, t.version, t.runId]), [[0, 3, 6], [1, 1, 1]]);
    equal((await store.getTaskEvents(a, 0)).map((e) => e.runId), [1, 2, 3, 4]);
    equal((await store.getTasks(b)).map((t) => [t.instanceId, t.version, t.runId]), [[0, 1, 3]]);
    equal(
      (await store.getTaskEvents(b, 0)).map((e) => e.runId),
      [3],
      "events before the job.delete went with it",
    );
  },

  "queryJobs filters by state, pool, owner, name and labels, newest first": async (store, ids) => {
    const owner = `${ids.prefix}-owner`;
    const jobs = [
      makeJob(ids.job(0), {
        owningTeam: owner,
        respoolId: "p1",
        labels: [{ key: "team", value: "x" }, { key: "tier", value: "1" }],
      }, { creationTimeMs: 10 }),
      makeJob(ids.job(1), { owningTeam: owner, respoolId: "p1", labels: [{ key: "team", value: "x" }] }, {
        creationTimeMs: 30,
        state: "RUNNING",
      }),
      makeJob(ids.job(2), { owningTeam: owner, respoolId: "p2", labels: [{ key: "team", value: "X" }] }, {
        creationTimeMs: 20,
        state: "SUCCEEDED",
      }),
      makeJob(ids.job(3), {
        owningTeam: owner,
        respoolId: "p2",
        labels: [{ key: "team", value: "x".repeat(600) }],
      }, {
        creationTimeMs: 40,
      }),
      makeJob(
        ids.job(4),
        { owningTeam: owner, respoolId: "p2", labels: [{ key: "team", value: `${"x".repeat(599)}y` }] },
        { creationTimeMs: 40 },
      ),
    ];
    strictEqual(await put(store, jobs.map((job) => ({ kind: "job.put", job }))), undefined);
    const q = async (query: Parameters<Store["queryJobs"]>[0]) =>
      (await store.queryJobs({ owner, ...query })).jobs.map((j) => Number(j.jobId.slice(-1)));
    equal(await q({}), [4, 3, 1, 2, 0]);
    equal(await q({ limit: 2 }), [4, 3]);
    equal(await q({ states: ["PENDING", "SUCCEEDED"] }), [4, 3, 2, 0]);
    equal(await q({ respoolId: "p1" }), [1, 0]);
    equal(await q({ name: `name-${ids.job(2)}` }), [2]);
    equal(await q({ labels: [{ key: "team", value: "x" }] }), [1, 0]);
    equal(await q({ labels: [{ key: "team", value: "x" }, { key: "tier", value: "1" }] }), [0]);
    equal(await q({ labels: [{ key: "team", value: "x".repeat(600) }] }), [3]);
    equal(await q({ labels: [{ key: "team", value: "x" }], respoolId: "p2" }), []);
    equal(await store.queryJobs({ owner: `${owner}-nobody` }), { jobs: [], total: 0 });
    // Peloton's QuerySpec.owner is the owning team: a job whose `owner` field matches is not found by it.
    const person = makeJob(ids.job(5), { owner: `${owner}-person`, owningTeam: `${owner}-elsewhere` }, {
      creationTimeMs: 50,
    });
    strictEqual(await put(store, [{ kind: "job.put", job: person }]), undefined);
    equal(await store.queryJobs({ owner: `${owner}-person` }), { jobs: [], total: 0 });
    equal((await store.queryJobs({ owner: `${owner}-elsewhere` })).jobs.map((j) => j.jobId), [ids.job(5)]);
    // Relabelling a job moves it between label queries.
    const relabelled = makeJob(ids.job(1), { owningTeam: owner, respoolId: "p1", labels: [] }, {
      creationTimeMs: 30,
      version: 2,
    });
    strictEqual(await put(store, [{ kind: "job.put", job: relabelled }]), undefined);
    equal(await q({ labels: [{ key: "team", value: "x" }] }), [0]);
  },

  "queryJobs by name matches a part of the name in any case; % and _ in it are themselves": async (
    store,
    ids,
  ) => {
    const owner = `${ids.prefix}-owner`;
    const names = ["Nightly-ETL", "nightly_etl", "etl 100%", "Spark", "nightlyXetl", "ТЕСТ-Über-ジョブ"];
    const jobs = names.map((name, i) =>
      makeJob(ids.job(i), { owningTeam: owner, name }, { creationTimeMs: 10 * (i + 1) })
    );
    strictEqual(await put(store, jobs.map((job) => ({ kind: "job.put", job }))), undefined);
    const q = async (name: string) =>
      (await store.queryJobs({ owner, name })).jobs.map((j) => Number(j.jobId.slice(-1)));
    equal(await q("ETL"), [4, 2, 1, 0], "a part, any case");
    equal(await q("nightly"), [4, 1, 0]);
    equal(await q("nightly_"), [1], "_ is itself, not any one character");
    equal(await q("100%"), [2], "% is itself, not any characters");
    equal(await q("%"), [2]);
    equal(await q("spark"), [3]);
    equal(await q("sparks"), []);
    equal(await q(""), [5, 4, 3, 2, 1, 0], "an empty part matches every name");
    // Any case beyond A-Z too (SQLite's own lower() folds only ASCII).
    equal(await q("тест-über"), [5]);
    equal(await q("ÜBER-ジョブ"), [5]);
  },

  "queryJobs pages newest first: offset and limit pick the page, total counts every match": async (
    store,
    ids,
  ) => {
    const owner = `${ids.prefix}-owner`;
    // Seven jobs; two share a creation time, so the tie goes by job id, descending.
    const jobs = [10, 20, 30, 30, 50, 60, 70].map((t, n) =>
      makeJob(ids.job(n), {
        owningTeam: owner,
        labels: [{ key: "tier", value: n % 2 ? "odd" : "x".repeat(600) }],
      }, {
        creationTimeMs: t,
        state: n < 5 ? "PENDING" : "SUCCEEDED",
      })
    );
    strictEqual(await put(store, jobs.map((job) => ({ kind: "job.put", job }))), undefined);
    const page = async (query: Parameters<Store["queryJobs"]>[0]) => {
      const { jobs, total } = await store.queryJobs({ owner, ...query });
      return { jobs: jobs.map((j) => Number(j.jobId.slice(-1))), total };
    };
    equal(await page({}), { jobs: [6, 5, 4, 3, 2, 1, 0], total: 7 });
    equal(await page({ offset: 0, limit: 3 }), { jobs: [6, 5, 4], total: 7 });
    equal(await page({ offset: 3, limit: 3 }), { jobs: [3, 2, 1], total: 7 });
    equal(await page({ offset: 6, limit: 3 }), { jobs: [0], total: 7 });
    equal(await page({ offset: 7, limit: 3 }), { jobs: [], total: 7 }, "past the last page");
    equal(await page({ offset: 5 }), { jobs: [1, 0], total: 7 }, "an offset without a limit");
    equal(await page({ limit: 0 }), { jobs: [], total: 7 }, "limit 0: only the total");
    equal(await page({ states: ["PENDING"], offset: 1, limit: 2 }), { jobs: [3, 2], total: 5 });
    equal(await page({ labels: [{ key: "tier", value: "odd" }], offset: 1, limit: 2 }), {
      jobs: [3, 1],
      total: 3,
    });
    // A label longer than the indexed column is matched whole, and the page is of the whole matches.
    const long = [{ key: "tier", value: "x".repeat(600) }];
    equal(await page({ labels: long, offset: 1, limit: 2 }), { jobs: [4, 2], total: 4 });
  },

  "queryJobs orders by each of Peloton's properties either way, then job id, and pages in that order": async (
    store,
    ids,
  ) => {
    const run = [{ key: "run", value: ids.prefix }];
    const long = { key: "long", value: "x".repeat(600) };
    // Ties in every property; names and teams that only a code-point (byte) order sorts alike everywhere:
    // "etl" before "etl " (MySQL's collation pads with spaces), U+FFFD before U+1F600 (not so in UTF-16).
    const rows: [number, number | undefined, string, string | undefined, JobState][] = [
      [40, 400, "etl", "ops", "SUCCEEDED"],
      [10, undefined, "etl ", "ml", "RUNNING"],
      [30, 200, "Etl", "ops", "FAILED"],
      [20, undefined, "\u{1F600}", undefined, "PENDING"],
      [40, 200, "\uFFFD", "ml", "KILLED"],
      [50, undefined, "etl", "Ops", "INITIALIZED"],
    ];
    const jobs = rows.map(([creationTimeMs, completionTimeMs, name, owningTeam, state], n) =>
      makeJob(ids.job(n), { name, owningTeam, labels: n % 2 ? run : [...run, long] }, {
        creationTimeMs,
        completionTimeMs,
        state,
      })
    );
    strictEqual(await put(store, jobs.map((job) => ({ kind: "job.put", job }))), undefined);
    const q = async (order: JobOrder[], page: { offset?: number; limit?: number } = {}) => {
      const { jobs, total } = await store.queryJobs({ labels: run, order, ...page });
      return { jobs: jobs.map((j) => Number(j.jobId.slice(-1))), total };
    };
    const ascending: Record<JobOrderProperty, number[]> = {
      creation_time: [1, 3, 2, 0, 4, 5],
      // Jobs not completed come after the others, ascending.
      completion_time: [2, 4, 0, 1, 3, 5],
      name: [2, 0, 5, 1, 4, 3],
      // The owning team; a job without one has "".
      owner: [3, 5, 1, 4, 0, 2],
      // By Peloton's state numbers: INITIALIZED, PENDING, RUNNING, SUCCEEDED, FAILED, KILLED.
      state: [5, 3, 1, 0, 2, 4],
    };
    for (const [property, expected] of Object.entries(ascending) as [JobOrderProperty, number[]][]) {
      for (const desc of [false, true]) {
        const order = [{ property, desc }];
        // Ties go by job id in the key's direction, so descending is ascending reversed.
        const all = desc ? expected.toReversed() : expected;
        equal(await q(order), { jobs: all, total: 6 }, `${property} ${desc ? "DESC" : "ASC"}`);
        for (const offset of [0, 2, 4]) {
          equal(await q(order, { offset, limit: 2 }), { jobs: all.slice(offset, offset + 2), total: 6 });
        }
      }
    }
    equal((await q([])).jobs, [5, 4, 0, 2, 3, 1], "none: newest first, ties by job id descending");
    equal(
      (await q([{ property: "owner", desc: false }, { property: "creation_time", desc: true }])).jobs,
      [3, 5, 4, 1, 0, 2],
      "each key in turn",
    );
    equal(
      (await q([{ property: "name", desc: false }, { property: "creation_time", desc: true }])).jobs,
      [2, 5, 0, 1, 4, 3],
    );
    equal(
      (await q([{ property: "completion_time", desc: false }, { property: "creation_time", desc: true }]))
        .jobs,
      [4, 2, 0, 5, 3, 1],
      "ties in the last key by job id in its direction",
    );
    // A label longer than the indexed column is matched after the read: the order holds there too.
    const longPage = await store.queryJobs({
      labels: [...run, long],
      order: [{ property: "name", desc: false }],
    });
    equal(longPage.jobs.map((j) => Number(j.jobId.slice(-1))), [2, 0, 4]);
    equal(
      (await store.queryJobs({
        labels: [...run, long],
        order: [{ property: "state", desc: true }],
        offset: 1,
      }))
        .jobs.map((j) => Number(j.jobId.slice(-1))),
      [2, 0],
    );
  },

  "activeJobs leaves out terminal jobs": async (store, ids) => {
    const states: JobState[] = [
      "INITIALIZED",
      "PENDING",
      "RUNNING",
      "KILLING",
      "SUCCEEDED",
      "FAILED",
      "KILLED",
      "DELETED",
    ];
    const batch = states.map((state, i): StoreWrite => ({
      kind: "job.put",
      job: makeJob(ids.job(i), {}, { state }),
    }));
    strictEqual(await put(store, batch), undefined);
    const active = (await store.activeJobs()).filter((j) => j.jobId.startsWith(ids.prefix));
    equal(active.map((j) => j.runtime.state).sort(), ["INITIALIZED", "KILLING", "PENDING", "RUNNING"]);
  },

  "activeJobs includes an ended job one of whose tasks has work left (a stopped job started again)": async (
    store,
    ids,
  ) => {
    // [job state, job goal, the second task, active]: the first task of each job SUCCEEDED, nothing left.
    const cases: [JobState, JobState, Partial<TaskRecord>, boolean][] = [
      // As the job manager says (`hasWork`), whatever the states.
      ["FAILED", "SUCCEEDED", { state: "FAILED", goalState: "SUCCEEDED", hasWork: true }, true],
      ["KILLED", "SUCCEEDED", { state: "LOST", goalState: "SUCCEEDED", hasWork: false }, false],
      ["KILLED", "RUNNING", { state: "KILLED", goalState: "RUNNING", hasWork: false }, false],
      // Without it, as the record tells: a service's or preempted task's ended run, a run asked for.
      ["KILLED", "RUNNING", { state: "KILLED", goalState: "RUNNING" }, true],
      ["KILLED", "KILLED", { state: "KILLED", goalState: "RUNNING" }, true],
      ["KILLED", "SUCCEEDED", { state: "KILLED", goalState: "PREEMPTING" }, true],
      [
        "SUCCEEDED",
        "SUCCEEDED",
        { state: "SUCCEEDED", goalState: "SUCCEEDED", runId: 1, desiredRunId: 2 },
        true,
      ],
      ["KILLED", "KILLED", { state: "KILLED", goalState: "KILLED" }, false],
      ["FAILED", "SUCCEEDED", { state: "FAILED", goalState: "SUCCEEDED" }, false],
      ["SUCCEEDED", "SUCCEEDED", { state: "SUCCEEDED", goalState: "SUCCEEDED" }, false],
    ];
    const batch = cases.flatMap(([state, goalState, task], i): StoreWrite[] => [
      { kind: "job.put", job: makeJob(ids.job(i), {}, { state, goalState }) },
      { kind: "task.put", task: makeTask(ids.job(i), 0, { state: "SUCCEEDED", goalState: "SUCCEEDED" }) },
      { kind: "task.put", task: makeTask(ids.job(i), 1, task) },
    ]);
    strictEqual(await put(store, batch), undefined);
    const active = new Set((await store.activeJobs()).map((j) => j.jobId));
    equal(cases.map((_, i) => active.has(ids.job(i))), cases.map((c) => c[3]));
  },

  "job.delete removes the job with its tasks and events": async (store, ids) => {
    const jobId = ids.job(1);
    strictEqual(
      await put(store, [{ kind: "job.put", job: makeJob(jobId, {}, { version: 9 }) }, {
        kind: "task.put",
        task: makeTask(jobId, 0, { version: 9 }),
      }, { kind: "task.event", event: event(jobId, 0, "RUNNING", 1) }]),
      undefined,
    );
    // Deleted and created again in one batch: the old versions no longer count.
    const again = makeJob(jobId, {}, { version: 1 });
    strictEqual(
      await put(store, [{ kind: "job.delete", jobId }, { kind: "job.put", job: again }, {
        kind: "task.put",
        task: makeTask(jobId, 1),
      }]),
      undefined,
    );
    equal(await store.getJob(jobId), again);
    equal((await store.getTasks(jobId)).map((t) => t.instanceId), [1]);
    equal(await store.getTaskEvents(jobId, 0), []);
    strictEqual(await put(store, [{ kind: "job.delete", jobId }]), undefined);
    strictEqual(await store.getJob(jobId), undefined);
    equal(await store.getTasks(jobId), []);
  },

  "job config versions are immutable and readable": async (store, ids) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    strictEqual(
      await put(store, [
        { kind: "job.config", jobId: a, version: 1, config: configAt(a, 1) },
        { kind: "job.config", jobId: a, version: 2, config: configAt(a, 2) },
        // A second put of a version in the same batch is a no-op as well: the first one stays.
        { kind: "job.config", jobId: a, version: 2, config: configAt(a, 9) },
      ]),
      undefined,
    );
    equal(await store.getJobConfig(a, 1), configAt(a, 1));
    equal(await store.getJobConfig(a, 2), configAt(a, 2));
    strictEqual(await store.getJobConfig(a, 3), undefined);
    strictEqual(await store.getJobConfig(b, 1), undefined);
    strictEqual(
      await put(store, [{ kind: "job.config", jobId: a, version: 1, config: configAt(a, 7) }]),
      undefined,
      "re-putting a version is not an error",
    );
    equal(await store.getJobConfig(a, 1), configAt(a, 1));
    // The same version number of another job is its own config.
    strictEqual(
      await put(store, [{ kind: "job.config", jobId: b, version: 1, config: configAt(b, 5) }]),
      undefined,
    );
    equal(await store.getJobConfig(b, 1), configAt(b, 5));
    equal(await store.getJobConfig(a, 1), configAt(a, 1));
  },

  "task.delete removes one instance, keeps its events and forgets its version": async (store, ids) => {
    const jobId = ids.job(1);
    strictEqual(
      await put(store, [
        ...[0, 1, 2, 3].map((i): StoreWrite => ({
          kind: "task.put",
          task: makeTask(jobId, i, { version: 5 }),
        })),
        { kind: "task.event", event: event(jobId, 1, "RUNNING", 1) },
      ]),
      undefined,
    );
    strictEqual(await put(store, [{ kind: "task.delete", jobId, instanceId: 1 }]), undefined);
    equal((await store.getTasks(jobId)).map((t) => t.instanceId), [0, 2, 3]);
    strictEqual(await store.getTask(jobId, 1), undefined);
    equal(await store.getTaskEvents(jobId, 1), [event(jobId, 1, "RUNNING", 1)]);
    strictEqual(
      await put(store, [{ kind: "task.delete", jobId, instanceId: 9 }]),
      undefined,
      "missing is fine",
    );
    // The version rule compares with the stored row, which went with the delete.
    strictEqual(await put(store, [{ kind: "task.put", task: makeTask(jobId, 1) }]), undefined);
    strictEqual(
      await put(store, [{ kind: "task.delete", jobId, instanceId: 0 }, {
        kind: "task.put",
        task: makeTask(jobId, 0),
      }]),
      undefined,
      "a delete earlier in the batch counts",
    );
    // And one earlier in the group, from another batch.
    const results = await Promise.all([
      put(store, [{ kind: "task.delete", jobId, instanceId: 2 }]),
      put(store, [{ kind: "task.put", task: makeTask(jobId, 2) }]),
      put(store, [{ kind: "task.put", task: makeTask(jobId, 3, { version: 5 }) }]),
    ]);
    equal(results.map(staleness), [
      [undefined, undefined, undefined, undefined, undefined],
      [undefined, undefined, undefined, undefined, undefined],
      ["StaleWriteError", "task", `${jobId}/3`, 5, 5],
    ]);
    equal((await store.getTasks(jobId)).map((t) => [t.instanceId, t.version]), [[0, 1], [1, 1], [2, 1], [
      3,
      5,
    ]]);
  },

  "update puts follow the version rule": async (store, ids) => {
    const jobId = ids.job(1);
    const [u1, u2] = [ids.update(1), ids.update(2)];
    strictEqual(await put(store, [{ kind: "update.put", update: makeUpdate(u1, jobId) }]), undefined);
    equal(await store.getUpdate(u1), makeUpdate(u1, jobId));
    strictEqual(await store.getUpdate(u2), undefined);
    equal(staleness(await put(store, [{ kind: "update.put", update: makeUpdate(u1, jobId) }])), [
      "StaleWriteError",
      "update",
      u1,
      1,
      1,
    ]);
    const bare: UpdateRecord = makeUpdate(u1, jobId, { version: 3, state: "PAUSED" });
    delete bare.prevState, delete bare.opaqueData, delete bare.completionTimeMs;
    strictEqual(await put(store, [{ kind: "update.put", update: bare }]), undefined);
    equal(await store.getUpdate(u1), bare, "absent optional fields stay absent");
    const stale = await put(store, [{ kind: "update.put", update: makeUpdate(u1, jobId, { version: 2 }) }]);
    equal(staleness(stale), ["StaleWriteError", "update", u1, 3, 2]);
    ok(stale!.message.includes(u1) && stale!.message.includes("3"), stale!.message);
    // Earlier writes of the batch count: the second put of version 4 is stale against the first.
    equal(
      staleness(
        await put(store, [
          { kind: "update.put", update: makeUpdate(u2, jobId, { version: 4 }) },
          { kind: "update.put", update: makeUpdate(u2, jobId, { version: 4 }) },
        ]),
      ),
      ["StaleWriteError", "update", u2, 4, 4],
    );
    strictEqual(await store.getUpdate(u2), undefined, "the stale batch left nothing");
    equal(await store.getUpdate(u1), bare);
  },

  "a stale update drops its whole batch; others in the group commit": async (store, ids) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    const [ua, ub] = [ids.update(1), ids.update(2)];
    strictEqual(
      await put(store, [
        { kind: "job.put", job: makeJob(a, {}, { version: 5 }) },
        { kind: "task.put", task: makeTask(a, 0) },
        { kind: "update.put", update: makeUpdate(ua, a, { version: 5 }) },
      ]),
      undefined,
    );
    const results = await Promise.all([
      put(store, [
        { kind: "task.put", task: makeTask(b, 0) },
        { kind: "update.put", update: makeUpdate(ub, b) },
        { kind: "volume.put", volume: makeVolume(ids.volume(2), b, 0) },
      ]),
      put(store, [
        { kind: "job.config", jobId: a, version: 2, config: configAt(a, 2) },
        { kind: "task.put", task: makeTask(a, 1) },
        { kind: "task.delete", jobId: a, instanceId: 0 },
        { kind: "task.event", event: event(a, 1, "RUNNING", 1) },
        { kind: "volume.put", volume: makeVolume(ids.volume(1), a, 1) },
        { kind: "job.put", job: makeJob(a, {}, { version: 6, state: "RUNNING" }) },
        { kind: "update.put", update: makeUpdate(ua, a, { version: 5, state: "SUCCEEDED" }) },
      ]),
      put(store, [
        { kind: "update.put", update: makeUpdate(ua, a, { version: 6, state: "PAUSED" }) },
        { kind: "task.put", task: makeTask(b, 1) },
      ]),
      // Stale against the batch just before it in the same group.
      put(store, [{ kind: "update.put", update: makeUpdate(ua, a, { version: 6, state: "ABORTED" }) }]),
    ]);
    equal(results.map(staleness), [
      [undefined, undefined, undefined, undefined, undefined],
      ["StaleWriteError", "update", ua, 5, 5],
      [undefined, undefined, undefined, undefined, undefined],
      ["StaleWriteError", "update", ua, 6, 6],
    ]);
    strictEqual(await store.getJobConfig(a, 2), undefined);
    equal(await store.getTasks(a), [makeTask(a, 0)]);
    equal(await store.getTaskEvents(a, 1), []);
    strictEqual(await store.getVolume(ids.volume(1)), undefined);
    equal((await store.getJob(a))?.runtime, makeJob(a, {}, { version: 5 }).runtime);
    equal(await store.getUpdate(ua), makeUpdate(ua, a, { version: 6, state: "PAUSED" }));
    equal((await store.getTasks(b)).map((t) => t.instanceId), [0, 1]);
    equal(await store.getUpdate(ub), makeUpdate(ub, b));
    equal(await store.getVolume(ids.volume(2)), makeVolume(ids.volume(2), b, 0));
  },

  "with a batch the database refuses, stale and good updates still resolve per batch": async (store, ids) => {
    const p = ids.prefix;
    const jobId = ids.job(1);
    const [u1, u2] = [ids.update(1), ids.update(2)];
    strictEqual(
      await put(store, [{ kind: "respool.put", pool: pool(`${p}-a`, `/${p}/a`, "root") }]),
      undefined,
    );
    const results = await Promise.all([
      put(store, [
        { kind: "update.put", update: makeUpdate(u1, jobId) },
        { kind: "job.config", jobId, version: 1, config: configAt(jobId, 1) },
        { kind: "volume.put", volume: makeVolume(ids.volume(1), jobId, 0) },
      ]),
      put(store, [
        { kind: "update.put", update: makeUpdate(u2, jobId) },
        { kind: "volume.put", volume: makeVolume(ids.volume(2), jobId, 1) },
        { kind: "respool.put", pool: pool(`${p}-b`, `/${p}/a`, "root") },
      ]),
      put(store, [{ kind: "update.put", update: makeUpdate(u1, jobId) }]),
      put(store, [
        { kind: "update.put", update: makeUpdate(u1, jobId, { version: 2 }) },
        { kind: "volume.delete", volumeId: ids.volume(1) },
      ]),
    ]);
    strictEqual(results[0], undefined);
    ok(results[1] instanceof Error && results[1].name !== "StaleWriteError", String(results[1]));
    equal(staleness(results[2]), ["StaleWriteError", "update", u1, 1, 1]);
    strictEqual(results[3], undefined);
    equal(await store.getUpdate(u1), makeUpdate(u1, jobId, { version: 2 }));
    strictEqual(await store.getUpdate(u2), undefined);
    equal(await store.listVolumes(jobId), []);
    equal(await store.getJobConfig(jobId, 1), configAt(jobId, 1));
  },

  "listUpdates is newest first; activeUpdates leaves out terminal ones, oldest first": async (store, ids) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    // One update per state; creation times tie in pairs, so ties are ordered by update id.
    const states: UpdateState[] = [
      "INITIALIZED",
      "ROLLING_FORWARD",
      "PAUSED",
      "SUCCEEDED",
      "ABORTED",
      "FAILED",
      "ROLLING_BACKWARD",
      "ROLLED_BACK",
    ];
    const updates = states.map((state, i) =>
      makeUpdate(ids.update(i), i < 4 ? a : b, {
        state,
        creationTimeMs: 1_000 + 10 * Math.floor((7 - i) / 2),
      })
    );
    strictEqual(
      await put(store, updates.map((update): StoreWrite => ({ kind: "update.put", update }))),
      undefined,
    );
    const n = (list: UpdateRecord[]) => list.map((u) => Number(u.updateId.slice(-1)));
    equal(n(await store.listUpdates(a)), [1, 0, 3, 2]);
    equal(n(await store.listUpdates(b)), [5, 4, 7, 6]);
    equal(await store.listUpdates(ids.job(3)), []);
    equal(await store.listUpdates(a), [1, 0, 3, 2].map((i) => updates[i]));
    const mine = async () =>
      n((await store.activeUpdates()).filter((u) => u.updateId.startsWith(ids.prefix)));
    // Creation times 1030: 0, 1; 1020: 2, 3; 1010: 4, 5; 1000: 6, 7. Active: 0, 1, 2, 6.
    equal(await mine(), [6, 2, 0, 1]);
    strictEqual(
      await put(store, [
        { kind: "update.put", update: { ...updates[2], state: "SUCCEEDED", version: 2 } },
        { kind: "update.put", update: { ...updates[3], state: "ROLLING_BACKWARD", version: 2 } },
      ]),
      undefined,
    );
    equal(await mine(), [6, 3, 0, 1]);
  },

  "host maintenance: put, put again replaces, listed by host name, delete": async (store, ids) => {
    const [a, b, c] = [ids.host(1), ids.host(2), ids.host(3)];
    equal(await mineOf(store, ids), []);
    strictEqual(
      await put(store, [
        { kind: "maintenance.put", maintenance: maintenance(c) },
        { kind: "maintenance.put", maintenance: maintenance(a, { startTimeMs: 5 }) },
        { kind: "maintenance.put", maintenance: maintenance(b, { state: "HOST_STATE_DOWN" }) },
      ]),
      undefined,
    );
    equal(await mineOf(store, ids), [
      maintenance(a, { startTimeMs: 5 }),
      maintenance(b, { state: "HOST_STATE_DOWN" }),
      maintenance(c),
    ]);
    // A put replaces the host's record; deleting a host with none is a no-op.
    const again = maintenance(a, { state: "HOST_STATE_DOWN", startTimeMs: 7 });
    strictEqual(await put(store, [{ kind: "maintenance.put", maintenance: again }]), undefined);
    strictEqual(
      await put(store, [
        { kind: "maintenance.delete", hostname: b },
        { kind: "maintenance.delete", hostname: ids.host(9) },
      ]),
      undefined,
    );
    equal(await mineOf(store, ids), [again, maintenance(c)]);
    // In a batch with a stale write, it is dropped with the rest of the batch.
    const jobId = ids.job(1);
    strictEqual(await put(store, [{ kind: "job.put", job: makeJob(jobId) }]), undefined);
    const stale = await put(store, [
      { kind: "maintenance.delete", hostname: c },
      { kind: "job.put", job: makeJob(jobId) },
    ]);
    strictEqual(stale?.name, "StaleWriteError");
    equal(await mineOf(store, ids), [again, maintenance(c)]);
  },

  "host pools: put, put again replaces, delete; assign, assign again replaces; listed by name": async (
    store,
    ids,
  ) => {
    const [a, b, c] = [ids.hostPool(1), ids.hostPool(2), ids.hostPool(3)];
    const [h1, h2, h3] = [ids.host(1), ids.host(2), ids.host(3)];
    equal(await hostPoolsOf(store, ids), { pools: [], assignments: [] });
    strictEqual(
      await put(store, [
        { kind: "hostpool.put", pool: hostPool(c) },
        { kind: "hostpool.put", pool: hostPool(a, 5) },
        { kind: "hostpool.put", pool: hostPool(b) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h3, b) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h1, a, 5) },
        // A pool with no record of its own (the default pool, or one an agent's attribute names).
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h2, "default") },
      ]),
      undefined,
    );
    equal(await hostPoolsOf(store, ids), {
      pools: [hostPool(a, 5), hostPool(b), hostPool(c)],
      assignments: [
        hostPoolAssignment(h1, a, 5),
        hostPoolAssignment(h2, "default"),
        hostPoolAssignment(h3, b),
      ],
    });
    // A put replaces the pool's record, an assignment the host's; deleting a pool with none is a no-op,
    // and deleting one leaves its hosts' assignments to the writes beside it.
    strictEqual(
      await put(store, [
        { kind: "hostpool.put", pool: hostPool(a, 7) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h1, c, 7) },
        { kind: "hostpool.delete", name: b },
        { kind: "hostpool.delete", name: ids.hostPool(9) },
      ]),
      undefined,
    );
    equal(await hostPoolsOf(store, ids), {
      pools: [hostPool(a, 7), hostPool(c)],
      assignments: [
        hostPoolAssignment(h1, c, 7),
        hostPoolAssignment(h2, "default"),
        hostPoolAssignment(h3, b),
      ],
    });
    // In order within a batch: DeleteHostPool deletes the pool and moves its hosts to the default pool; a
    // pool deleted then created again, and a host assigned twice, end as the last write says.
    strictEqual(
      await put(store, [
        { kind: "hostpool.delete", name: c },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h1, "default", 8) },
        { kind: "hostpool.delete", name: a },
        { kind: "hostpool.put", pool: hostPool(a, 8) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h3, a, 8) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h3, "default", 9) },
      ]),
      undefined,
    );
    equal(await hostPoolsOf(store, ids), {
      pools: [hostPool(a, 8)],
      assignments: [
        hostPoolAssignment(h1, "default", 8),
        hostPoolAssignment(h2, "default"),
        hostPoolAssignment(h3, "default", 9),
      ],
    });
  },

  "host pools: a batch that is stale or that the database refuses changes no host pool": async (
    store,
    ids,
  ) => {
    const [a, b, c] = [ids.hostPool(1), ids.hostPool(2), ids.hostPool(3)];
    const [h1, h2] = [ids.host(1), ids.host(2)];
    const before = { pools: [hostPool(a)], assignments: [hostPoolAssignment(h1, a)] };
    await failsWhole(store, ids, {
      before: [
        { kind: "hostpool.put", pool: before.pools[0] },
        { kind: "hostpool.assign", assignment: before.assignments[0] },
      ],
      // DeleteHostPool's batch.
      change: [
        { kind: "hostpool.put", pool: hostPool(b) },
        { kind: "hostpool.delete", name: a },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h1, "default", 2) },
        { kind: "hostpool.assign", assignment: hostPoolAssignment(h2, b, 2) },
      ],
      commit: [{ kind: "hostpool.put", pool: hostPool(c) }],
      read: () => hostPoolsOf(store, ids),
      unchanged: before,
      committed: { ...before, pools: [hostPool(a), hostPool(c)] },
    });
  },

  "admin locks: lock, lock again replaces, unlock, unlocking one not locked is a no-op; listed by component":
    async (store, ids) => {
      const [engine, kill, launch, read, write] = ["GoalStateEngine", "Kill", "Launch", "Read", "Write"].map((
        c,
      ) => ids.component(c));
      equal(await locksOf(store, ids), []);
      strictEqual(
        await put(store, [
          { kind: "admin.lock", lock: adminLock(write) },
          { kind: "admin.lock", lock: adminLock(engine, 5) },
          { kind: "admin.lock", lock: adminLock(launch) },
          { kind: "admin.lock", lock: adminLock(kill) },
        ]),
        undefined,
      );
      equal(await locksOf(store, ids), [
        adminLock(engine, 5),
        adminLock(kill),
        adminLock(launch),
        adminLock(write),
      ]);
      // Locking again replaces the component's record; unlocking one not locked is a no-op.
      strictEqual(
        await put(store, [
          { kind: "admin.lock", lock: adminLock(engine, 7) },
          { kind: "admin.unlock", component: launch },
          { kind: "admin.unlock", component: read },
        ]),
        undefined,
      );
      equal(await locksOf(store, ids), [adminLock(engine, 7), adminLock(kill), adminLock(write)]);
      // In order within a batch: unlocked then locked again, and locked then unlocked, end as the last write says.
      strictEqual(
        await put(store, [
          { kind: "admin.unlock", component: kill },
          { kind: "admin.lock", lock: adminLock(kill, 8) },
          { kind: "admin.lock", lock: adminLock(read, 8) },
          { kind: "admin.unlock", component: read },
          { kind: "admin.unlock", component: write },
          { kind: "admin.unlock", component: write },
        ]),
        undefined,
      );
      equal(await locksOf(store, ids), [adminLock(engine, 7), adminLock(kill, 8)]);
    },

  "admin locks: a batch that is stale or that the database refuses changes no lock": async (store, ids) => {
    const [engine, kill, launch, write] = ["GoalStateEngine", "Kill", "Launch", "Write"].map((c) =>
      ids.component(c)
    );
    const before = [adminLock(engine), adminLock(write)];
    await failsWhole(store, ids, {
      before: before.map((lock): StoreWrite => ({ kind: "admin.lock", lock })),
      // Lockdown and RemoveLockdown in one batch.
      change: [
        { kind: "admin.lock", lock: adminLock(kill, 2) },
        { kind: "admin.lock", lock: adminLock(engine, 2) },
        { kind: "admin.unlock", component: write },
      ],
      commit: [{ kind: "admin.lock", lock: adminLock(launch) }],
      read: () => locksOf(store, ids),
      unchanged: before,
      committed: [adminLock(engine), adminLock(launch), adminLock(write)],
    });
  },

  "secrets: listed by path then secret id, by code point; each job's own; put again replaces": async (
    store,
    ids,
  ) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    // A job whose id starts with a's has secrets of its own.
    const c = `${a}/2`;
    const long = "x".repeat(1_100); // longer than MySQL sorts strings by
    const s = [
      makeSecret(a, "s1", "/etc/b"),
      makeSecret(a, "s2", "/etc/a "),
      makeSecret(a, "s3", "/etc/a"),
      makeSecret(a, "s0", "/etc/b"),
      makeSecret(a, "s4", "/etc/\u{FF5E}"),
      makeSecret(a, "s5", "/etc/\u{1F600}"),
      makeSecret(a, "s6", `/etc/${long}b`),
      makeSecret(a, "s7", `/etc/${long}a`),
      makeSecret(b, "s1", "/etc/b", { createdMs: 1_700_000_006_000 }),
      makeSecret(c, "s1", "/etc/c"),
    ];
    strictEqual(await put(store, s.map((secret): StoreWrite => ({ kind: "secret.put", secret }))), undefined);
    // A trailing space sorts after its absence; U+FF5E before U+1F600 (by code point, not UTF-16 unit).
    const ofA = [s[2], s[1], s[3], s[0], s[7], s[6], s[4], s[5]];
    equal(await store.getSecrets(a), ofA);
    equal(await store.getSecrets(b), [s[8]]);
    equal(await store.getSecrets(c), [s[9]]);
    equal(await store.getSecrets(ids.job(3)), []);
    // Reads are copies.
    (await store.getSecrets(a))[0].data = "changed";
    equal(await store.getSecrets(a), ofA);

    // Put again by id: path, data and version replaced (the last of two puts in a batch); other jobs' stay.
    const moved = makeSecret(a, "s6", "/etc/0", { data: btoa("new data"), version: 3 });
    const large = makeSecret(b, "s1", "/etc/b", { data: largeSecretData(), version: 2 });
    strictEqual(
      await put(store, [
        { kind: "secret.put", secret: makeSecret(a, "s6", "/etc/z", { version: 2 }) },
        { kind: "secret.put", secret: moved },
        { kind: "secret.put", secret: large },
      ]),
      undefined,
    );
    equal(await store.getSecrets(a), [moved, s[2], s[1], s[3], s[0], s[7], s[4], s[5]]);
    const [readLarge] = await store.getSecrets(b);
    strictEqual(readLarge.data.length, 1_048_576);
    ok(readLarge.data === large.data, "a 1 MB secret comes back whole");
    equal(readLarge, large);
    equal(await store.getSecrets(c), [s[9]]);
  },

  "job.delete removes the job's secrets, put before it in its batch too; one put after it stays": async (
    store,
    ids,
  ) => {
    const a = ids.job(1);
    const other = `${a}/2`;
    const secret = (jobId: string, n: number) => makeSecret(jobId, `s${n}`, `/etc/${n}`);
    const secretPut = (jobId: string, n: number): StoreWrite => ({
      kind: "secret.put",
      secret: secret(jobId, n),
    });
    strictEqual(
      await put(store, [
        { kind: "job.put", job: makeJob(a) },
        secretPut(a, 1),
        secretPut(a, 2),
        { kind: "job.put", job: makeJob(other) },
        secretPut(other, 1),
      ]),
      undefined,
    );
    strictEqual(await put(store, [{ kind: "job.delete", jobId: a }]), undefined);
    equal(await store.getSecrets(a), []);
    equal(await store.getSecrets(other), [secret(other, 1)]);
    // Deleted and created again in one batch.
    strictEqual(
      await put(store, [
        { kind: "job.put", job: makeJob(a) },
        secretPut(a, 3),
        { kind: "job.delete", jobId: a },
        { kind: "job.put", job: makeJob(a) },
        secretPut(a, 4),
      ]),
      undefined,
    );
    equal(await store.getSecrets(a), [secret(a, 4)]);
    // The same across batches of one group.
    const results = await Promise.all([
      put(store, [secretPut(a, 5)]),
      put(store, [{ kind: "job.delete", jobId: a }]),
      put(store, [secretPut(a, 6)]),
    ]);
    equal(results, [undefined, undefined, undefined]);
    equal(await store.getSecrets(a), [secret(a, 6)]);
    equal(await store.getSecrets(other), [secret(other, 1)]);
  },

  "secrets: a batch that is stale or that the database refuses changes no secret": async (store, ids) => {
    const a = ids.job(1);
    const kept = makeSecret(a, "s1", "/etc/one");
    const added = makeSecret(a, "s3", "/etc/three");
    await failsWhole(store, ids, {
      before: [{ kind: "secret.put", secret: kept }],
      // A job update's batch: a task's new config, a secret replaced and one added.
      change: [
        { kind: "task.put", task: makeTask(a, 0) },
        { kind: "secret.put", secret: makeSecret(a, "s1", "/etc/one", { data: btoa("new"), version: 2 }) },
        { kind: "secret.put", secret: makeSecret(a, "s2", "/etc/two") },
      ],
      commit: [{ kind: "secret.put", secret: added }],
      read: async () => ({ secrets: await store.getSecrets(a), tasks: await store.getTasks(a) }),
      unchanged: { secrets: [kept], tasks: [] },
      committed: { secrets: [kept, added], tasks: [] },
    });
  },

  "volumes put, list, get and delete": async (store, ids) => {
    const [a, b] = [ids.job(1), ids.job(2)];
    const v = (n: number) => ids.volume(n);
    const volumes = [
      makeVolume(v(1), a, 2),
      makeVolume(v(3), a, 1),
      makeVolume(v(2), a, 1, { hostname: "other", containerPath: "/data/ünï", sizeMb: 1.5 }),
      makeVolume(v(4), a, 0),
      makeVolume(v(5), b, 0),
    ];
    strictEqual(
      await put(store, volumes.map((volume): StoreWrite => ({ kind: "volume.put", volume }))),
      undefined,
    );
    equal(await store.listVolumes(a), [volumes[3], volumes[2], volumes[1], volumes[0]]);
    equal(await store.listVolumes(b), [volumes[4]]);
    equal(await store.listVolumes(ids.job(3)), []);
    equal(await store.getVolume(v(2)), volumes[2]);
    strictEqual(await store.getVolume(v(9)), undefined);
    // Volumes have no version: a put replaces, even when repeated.
    const moved = makeVolume(v(1), a, 2, { hostname: "new-host", state: "DELETED" });
    strictEqual(await put(store, [{ kind: "volume.put", volume: moved }]), undefined);
    strictEqual(await put(store, [{ kind: "volume.put", volume: moved }]), undefined);
    equal(await store.getVolume(v(1)), moved);
    strictEqual(
      await put(store, [{ kind: "volume.delete", volumeId: v(3) }, {
        kind: "volume.delete",
        volumeId: v(9),
      }]),
      undefined,
    );
    equal(await store.listVolumes(a), [volumes[3], volumes[2], moved]);
    strictEqual(await store.getVolume(v(3)), undefined);
  },

  "job.delete also removes the job's configs, updates and volumes": async (store, ids) => {
    const jobId = ids.job(1);
    // A job whose id starts with the deleted one's keeps everything.
    const other = `${jobId}/2`;
    const [u1, u2] = [ids.update(1), ids.update(2)];
    const own = (id: string): StoreWrite[] => [
      { kind: "job.put", job: makeJob(id, {}, { version: 7 }) },
      { kind: "job.config", jobId: id, version: 1, config: configAt(id, 1) },
      { kind: "job.config", jobId: id, version: 2, config: configAt(id, 2) },
      { kind: "task.put", task: makeTask(id, 0) },
      { kind: "task.event", event: event(id, 0, "RUNNING", 1) },
      { kind: "volume.put", volume: makeVolume(`${id}-volume`, id, 0) },
    ];
    strictEqual(
      await put(store, [
        ...own(jobId),
        ...own(other),
        { kind: "update.put", update: makeUpdate(u1, jobId, { version: 7 }) },
        { kind: "update.put", update: makeUpdate(u2, other, { version: 7 }) },
      ]),
      undefined,
    );
    strictEqual(await put(store, [{ kind: "job.delete", jobId }]), undefined);
    strictEqual(await store.getJob(jobId), undefined);
    strictEqual(await store.getJobConfig(jobId, 1), undefined);
    strictEqual(await store.getJobConfig(jobId, 2), undefined);
    strictEqual(await store.getUpdate(u1), undefined);
    equal(await store.listUpdates(jobId), []);
    ok(!(await store.activeUpdates()).some((u) => u.updateId === u1), "a deleted job's update is not active");
    equal(await store.listVolumes(jobId), []);
    strictEqual(await store.getVolume(`${jobId}-volume`), undefined);
    equal(await store.getTaskEvents(jobId, 0), []);

    equal(await store.getJobConfig(other, 2), configAt(other, 2));
    equal(await store.getUpdate(u2), makeUpdate(u2, other, { version: 7 }));
    equal(await store.listVolumes(other), [makeVolume(`${other}-volume`, other, 0)]);
    equal(await store.getTaskEvents(other, 0), [event(other, 0, "RUNNING", 1)]);

    // Deleted and created again in one batch: the updates' versions went with the job, whether stored (u2 at
    // 7) or written earlier in the batch (u3 at 5), and the config versions are free again.
    const u3 = ids.update(3);
    strictEqual(
      await put(store, [
        { kind: "job.delete", jobId: other },
        { kind: "update.put", update: makeUpdate(u3, other, { version: 5 }) },
        { kind: "job.delete", jobId: other },
        { kind: "update.put", update: makeUpdate(u3, other) },
        { kind: "update.put", update: makeUpdate(u2, other) },
        { kind: "job.config", jobId: other, version: 1, config: configAt(other, 3) },
        { kind: "job.put", job: makeJob(other) },
      ]),
      undefined,
    );
    equal(await store.getUpdate(u2), makeUpdate(u2, other));
    equal(await store.getUpdate(u3), makeUpdate(u3, other));
    equal(await store.getJobConfig(other, 1), configAt(other, 3));
    strictEqual(await store.getJobConfig(other, 2), undefined);
    equal(await store.listVolumes(other), []);
    // The same across batches of one group.
    const results = await Promise.all([
      put(store, [{ kind: "update.put", update: makeUpdate(u2, other, { version: 9 }) }]),
      put(store, [{ kind: "job.delete", jobId: other }]),
      put(store, [{ kind: "update.put", update: makeUpdate(u2, other, { version: 2 }) }]),
    ]);
    equal(results, [undefined, undefined, undefined]);
    equal(await store.getUpdate(u2), makeUpdate(u2, other, { version: 2 }));
  },

  "done is never called synchronously": async (store, ids) => {
    let returned = false;
    const calls: (Error | undefined)[] = [];
    const check = (err?: Error) => {
      ok(returned, "done ran before write returned");
      calls.push(err);
    };
    store.write([{ kind: "job.put", job: makeJob(ids.job(1), {}, { version: 2 }) }], check);
    store.write([{ kind: "job.put", job: makeJob(ids.job(1), {}, { version: 1 }) }], check);
    store.write([], check);
    returned = true;
    await store.flush();
    equal(calls.map((e) => e?.name), [undefined, "StaleWriteError", undefined]);
  },

  "flush waits for every earlier write": async (store, ids) => {
    let done = 0;
    for (let i = 0; i < 200; i++) {
      store.write([{ kind: "task.put", task: makeTask(ids.job(1), i) }], () => done++);
    }
    await store.flush();
    strictEqual(done, 200);
    strictEqual((await store.getTasks(ids.job(1))).length, 200);
    await store.flush();
  },

  "writes after close fail": async (store, ids) => {
    await store.close();
    const err = await put(store, [{ kind: "job.put", job: makeJob(ids.job(1)) }]);
    ok(err instanceof Error && /closed/.test(err.message), String(err));
  },
};
