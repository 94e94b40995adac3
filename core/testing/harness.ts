/** Test doubles of the ports (clock, transport, store), after Nomad's scheduler harness; plus fixtures. */
import type { Message } from "../messages.ts";
import type { JobConfig } from "../model/config_types.ts";
import {
  type AdminLockRecord,
  type HostMaintenanceRecord,
  isTerminalUpdateState,
  type JobRecord,
  type RespoolRecord,
  type SecretRecord,
  type TaskEventRecord,
  type TaskRecord,
  type UpdateRecord,
  type VolumeRecord,
  type WorkflowEventRecord,
} from "../model/records.ts";
import type { Clock, TimerId } from "../ports/clock.ts";
import { type Metrics, noMetrics } from "../ports/metrics.ts";
import { type Prng, seededPrng } from "../ports/prng.ts";
import {
  AdminLockRows,
  compareJobs,
  HostPoolRows,
  isActiveJob,
  type JobPage,
  type JobQuery,
  nameContains,
  SecretRows,
  type Store,
  type StoredHostPools,
  type StoreWrite,
  type WorkflowEventsQuery,
  workflowSteps,
} from "../ports/store.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";

export * from "./fixtures.ts";

// ---------------------------------------------------------------------------------------------
// Clock

interface ManualTimer {
  id: TimerId;
  atMs: number;
  fn: () => void;
}

/** Time that moves only when the test says so; `advance` runs due timers in (time, creation) order. */
export class ManualClock implements Clock {
  #nowMs: number;
  #nextId = 1;
  readonly #timers = new Map<TimerId, ManualTimer>();

  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  /** Moves time to `ms` without running timers (use `advance` to run them). */
  set(ms: number): void {
    this.#nowMs = ms;
  }

  setTimer(delayMs: number, fn: () => void): TimerId {
    const id = this.#nextId++;
    this.#timers.set(id, { id, atMs: this.#nowMs + Math.max(0, delayMs), fn });
    return id;
  }

  cancelTimer(id: TimerId): void {
    this.#timers.delete(id);
  }

  /** Pending timers. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, running every timer due by then, including ones set while running. */
  advance(ms: number): void {
    const target = this.#nowMs + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const t of this.#timers.values()) {
        if (t.atMs > target) continue;
        if (!next || t.atMs < next.atMs || (t.atMs === next.atMs && t.id < next.id)) next = t;
      }
      if (!next) break;
      this.#timers.delete(next.id);
      this.#nowMs = next.atMs;
      next.fn();
    }
    this.#nowMs = target;
  }
}

// ---------------------------------------------------------------------------------------------
// Transport

export interface Sent {
  to: Address;
  msg: Message;
}

type Kind = Message["kind"];
type Of<K extends Kind> = Extract<Message, { kind: K }>;

/** Records every message sent; tests pull them out by kind or deliver them by hand. */
export class CaptureTransport implements Transport {
  sent: Sent[] = [];

  send(to: Address, msg: Message): void {
    this.sent.push({ to, msg });
  }

  /** Removes and returns the messages of a kind (optionally only those to `to`), oldest first. */
  take<K extends Kind>(kind: K, to?: Address): Of<K>[] {
    const out: Of<K>[] = [];
    this.sent = this.sent.filter((s) => {
      if (s.msg.kind !== kind || (to !== undefined && s.to !== to)) return true;
      out.push(s.msg as Of<K>);
      return false;
    });
    return out;
  }

  /** Removes and returns the only message of a kind; throws when there is none or more than one. */
  takeOne<K extends Kind>(kind: K, to?: Address): Of<K> {
    const found = this.take(kind, to);
    if (found.length !== 1) {
      throw new Error(`Cannot take one ${kind} message${to ? ` to ${to}` : ""}: found ${found.length}`);
    }
    return found[0];
  }

  /** Messages of a kind still held, without removing them. */
  peek<K extends Kind>(kind: K, to?: Address): Of<K>[] {
    return this.sent.filter((s) => s.msg.kind === kind && (to === undefined || s.to === to))
      .map((s) => s.msg as Of<K>);
  }

  /** Removes and returns everything recorded. */
  drain(): Sent[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }

  /**
   * Delivers the messages held for `address` to `receiver`, in order, and returns them. Messages the
   * receiver sends meanwhile are recorded, not delivered: one hop per call, as the test chooses.
   */
  deliverTo(address: Address, receiver: Receiver): Message[] {
    const mine = this.sent.filter((s) => s.to === address).map((s) => s.msg);
    this.sent = this.sent.filter((s) => s.to !== address);
    for (const msg of mine) receiver.receive(msg);
    return mine;
  }
}

// ---------------------------------------------------------------------------------------------
// Store

/** In-memory store whose writes apply at once but become durable (call `done`) only on `settle()`. */
export class TestStore implements Store {
  readonly batches: StoreWrite[][] = [];
  readonly jobs = new Map<string, JobRecord>();
  readonly tasks = new Map<string, TaskRecord>();
  readonly events: TaskEventRecord[] = [];
  readonly workflowEvents: WorkflowEventRecord[] = [];
  readonly pools = new Map<string, RespoolRecord>();
  readonly configs = new Map<string, JobConfig>();
  readonly updates = new Map<string, UpdateRecord>();
  readonly volumes = new Map<string, VolumeRecord>();
  readonly maintenance = new Map<string, HostMaintenanceRecord>();
  readonly hostPoolRows = new HostPoolRows();
  readonly adminLockRows = new AdminLockRows();
  readonly secretRows = new SecretRows();
  #pending: { done?: (err?: Error) => void; err?: Error }[] = [];
  #failNext?: Error;
  #flushWaiters: (() => void)[] = [];

  /** The next write is not applied and its `done` gets `err`. */
  failNextWrite(err: Error): void {
    this.#failNext = err;
  }

  /** Batches written but not yet durable. */
  get unsettled(): number {
    return this.#pending.length;
  }

  write(batch: StoreWrite[], done?: (err?: Error) => void): void {
    const err = this.#failNext;
    this.#failNext = undefined;
    if (!err) {
      this.batches.push(batch);
      for (const w of batch) this.#apply(w);
    }
    this.#pending.push({ done, err });
  }

  /** Makes every write so far durable, calling `done` in order (also for writes made by those callbacks). */
  settle(): void {
    while (this.#pending.length) {
      const { done, err } = this.#pending.shift()!;
      done?.(err);
    }
    const waiters = this.#flushWaiters;
    this.#flushWaiters = [];
    for (const w of waiters) w();
  }

  task(jobId: string, instanceId: number): TaskRecord | undefined {
    return this.tasks.get(`${jobId}/${instanceId}`);
  }

  getJob(jobId: string): Promise<JobRecord | undefined> {
    const j = this.jobs.get(jobId);
    return Promise.resolve(j && structuredClone(j));
  }

  queryJobs(q: JobQuery): Promise<JobPage> {
    const found = [...this.jobs.values()].filter((j) =>
      (!q.states?.length || q.states.includes(j.runtime.state)) &&
      (q.respoolId === undefined || j.config.respoolId === q.respoolId) &&
      (q.owner === undefined || (j.config.owningTeam ?? "") === q.owner) &&
      (q.name === undefined || nameContains(j.config.name, q.name)) &&
      (q.labels ?? []).every((l) => j.config.labels.some((x) => x.key === l.key && x.value === l.value))
    ).sort(compareJobs(q.order ?? []));
    const from = q.offset ?? 0;
    const page = found.slice(from, q.limit === undefined ? undefined : from + q.limit);
    return Promise.resolve({ jobs: page.map((j) => structuredClone(j)), total: found.length });
  }

  activeJobs(): Promise<JobRecord[]> {
    const active = [...this.jobs.values()].filter((j) =>
      isActiveJob(j, (has) => [...this.tasks.values()].some((t) => t.jobId === j.jobId && has(t)))
    );
    return Promise.resolve(active.map((j) => structuredClone(j)));
  }

  getTasks(jobId: string): Promise<TaskRecord[]> {
    const list = [...this.tasks.values()].filter((t) => t.jobId === jobId);
    return Promise.resolve(list.sort((a, b) => a.instanceId - b.instanceId).map((t) => structuredClone(t)));
  }

  getTask(jobId: string, instanceId: number): Promise<TaskRecord | undefined> {
    const t = this.task(jobId, instanceId);
    return Promise.resolve(t && structuredClone(t));
  }

  getTaskEvents(jobId: string, instanceId: number): Promise<TaskEventRecord[]> {
    const list = this.events.filter((e) => e.jobId === jobId && e.instanceId === instanceId);
    return Promise.resolve(list.map((e) => ({ ...e })));
  }

  respools(): Promise<RespoolRecord[]> {
    return Promise.resolve([...this.pools.values()].map((p) => structuredClone(p)));
  }

  getJobConfig(jobId: string, version: number): Promise<JobConfig | undefined> {
    const c = this.configs.get(`${jobId}/${version}`);
    return Promise.resolve(c && structuredClone(c));
  }

  getUpdate(updateId: string): Promise<UpdateRecord | undefined> {
    const u = this.updates.get(updateId);
    return Promise.resolve(u && structuredClone(u));
  }

  listUpdates(jobId: string): Promise<UpdateRecord[]> {
    const list = [...this.updates.values()].filter((u) => u.jobId === jobId).reverse();
    return Promise.resolve(list.map((u) => structuredClone(u)));
  }

  activeUpdates(): Promise<UpdateRecord[]> {
    const list = [...this.updates.values()].filter((u) => !isTerminalUpdateState(u.state));
    return Promise.resolve(list.map((u) => structuredClone(u)));
  }

  getWorkflowEvents(
    jobId: string,
    workflowId: string,
    { instanceId, limit }: WorkflowEventsQuery = {},
  ): Promise<WorkflowEventRecord[]> {
    const list = this.workflowEvents.filter((e) =>
      e.jobId === jobId && e.workflowId === workflowId &&
      (instanceId === undefined || e.instanceId === instanceId)
    );
    return Promise.resolve(workflowSteps(list, limit).map((e) => ({ ...e })));
  }

  getSecrets(jobId: string): Promise<SecretRecord[]> {
    return Promise.resolve(this.secretRows.read(jobId));
  }

  listVolumes(jobId: string): Promise<VolumeRecord[]> {
    return Promise.resolve(
      [...this.volumes.values()].filter((v) => v.jobId === jobId).map((v) => ({ ...v })),
    );
  }

  getVolume(volumeId: string): Promise<VolumeRecord | undefined> {
    const v = this.volumes.get(volumeId);
    return Promise.resolve(v && { ...v });
  }

  hostMaintenance(): Promise<HostMaintenanceRecord[]> {
    return Promise.resolve([...this.maintenance.values()].map((m) => ({ ...m })));
  }
  hostPools(): Promise<StoredHostPools> {
    return Promise.resolve(this.hostPoolRows.read());
  }
  adminLocks(): Promise<AdminLockRecord[]> {
    return Promise.resolve(this.adminLockRows.read());
  }

  flush(): Promise<void> {
    if (!this.#pending.length) return Promise.resolve();
    return new Promise((resolve) => this.#flushWaiters.push(resolve));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #apply(w: StoreWrite): void {
    switch (w.kind) {
      case "job.put":
        this.jobs.set(w.job.jobId, structuredClone(w.job));
        return;
      case "job.delete":
        this.jobs.delete(w.jobId);
        for (const [k, t] of this.tasks) if (t.jobId === w.jobId) this.tasks.delete(k);
        for (const [id, v] of this.volumes) if (v.jobId === w.jobId) this.volumes.delete(id);
        this.#dropWorkflowEvents((e) => e.jobId === w.jobId);
        this.secretRows.apply(w);
        return;
      case "task.put":
        this.tasks.set(`${w.task.jobId}/${w.task.instanceId}`, structuredClone(w.task));
        return;
      case "task.event":
        this.events.push({ ...w.event });
        return;
      case "respool.put":
        this.pools.set(w.pool.id, structuredClone(w.pool));
        return;
      case "respool.delete":
        this.pools.delete(w.id);
        return;
      case "job.config":
        if (!this.configs.has(`${w.jobId}/${w.version}`)) {
          this.configs.set(`${w.jobId}/${w.version}`, structuredClone(w.config));
        }
        return;
      case "task.delete":
        this.tasks.delete(`${w.jobId}/${w.instanceId}`);
        return;
      case "task.events.delete": {
        const keep = this.events.filter((e) =>
          e.jobId !== w.jobId || e.instanceId !== w.instanceId || e.runId > w.runId
        );
        this.events.splice(0, this.events.length, ...keep);
        return;
      }
      case "update.put":
        this.updates.set(w.update.updateId, structuredClone(w.update));
        return;
      case "workflow.event":
        this.workflowEvents.push({ ...w.event });
        return;
      case "workflow.events.delete":
        this.#dropWorkflowEvents((e) => e.jobId === w.jobId && e.workflowId === w.workflowId);
        return;
      case "secret.put":
        this.secretRows.apply(w);
        return;
      case "volume.put":
        this.volumes.set(w.volume.volumeId, { ...w.volume });
        return;
      case "volume.delete":
        this.volumes.delete(w.volumeId);
        return;
      case "maintenance.put":
        this.maintenance.set(w.maintenance.hostname, { ...w.maintenance });
        return;
      case "maintenance.delete":
        this.maintenance.delete(w.hostname);
        return;
      case "hostpool.put":
      case "hostpool.delete":
      case "hostpool.assign":
        this.hostPoolRows.apply(w);
        return;
      case "admin.lock":
      case "admin.unlock":
        this.adminLockRows.apply(w);
        return;
    }
  }

  #dropWorkflowEvents(match: (e: WorkflowEventRecord) => boolean): void {
    const keep = this.workflowEvents.filter((e) => !match(e));
    this.workflowEvents.splice(0, this.workflowEvents.length, ...keep);
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring

/** The ports every daemon needs, as test doubles. */
export interface TestPorts {
  clock: ManualClock;
  transport: CaptureTransport;
  store: TestStore;
  prng: Prng;
  metrics: Metrics;
}

export function makePorts(seed = 1): TestPorts {
  return {
    clock: new ManualClock(),
    transport: new CaptureTransport(),
    store: new TestStore(),
    prng: seededPrng(seed),
    metrics: noMetrics,
  };
}
