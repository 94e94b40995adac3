/** The host manager daemon: host summaries, leases to placement, launch/kill, maintenance, slack and status fan-out. */
import type {
  ClusterCapacity,
  HostFilter,
  HostInventory,
  HostLease,
  MappedTaskStatus,
  Message,
  TaskUpdate,
} from "../messages.ts";
import type { HostMaintenanceRecord } from "../model/records.ts";
import { addInto, type Resources, zero } from "../model/resources.ts";
import { type HostState, isTerminalTaskState, MESOS_TO_TASK_STATE } from "../model/states.ts";
import type { Clock } from "../ports/clock.ts";
import type {
  BackendEvent,
  HostBackend,
  HostInfo,
  LaunchSpec,
  MachineBackend,
  TaskStatus,
  VolumeReservation,
} from "../ports/host_backend.ts";
import type { Metrics } from "../ports/metrics.ts";
import type { Store, StoredHostPools, StoreWrite } from "../ports/store.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";
import { FilterSearch } from "./acquire.ts";
import { apiState, hostApi, type MaintenanceRefusal } from "./host_api.ts";
import { type HostPoolChange, HostPools, withPool } from "./host_pools.ts";
import type { HostEntry } from "./host_table.ts";
import { HostRegistry } from "./registry.ts";
import { Reservations } from "./reservations.ts";

export type { HostEntry, HostTask } from "./host_table.ts";

export interface HostmgrConfig {
  /** A lease not used by a launch within this time returns to the pool (Peloton: 300 s). */
  leaseTimeoutMs: number;
  /** GPU hosts only take work that needs GPUs (Peloton's `scarce_resource_types: [GPU]`). */
  scarceGpu: boolean;
  /** Remember which engine holds each lease, so a dead engine's hosts come back at once (separate daemons). */
  trackLeases?: boolean;
  /**
   * The cluster manager keeps maintenance of its own (Mesos): a drained host is DOWN once its sync has the
   * machine down (`machineWentDown`), and a completion stays stored until it has the machine up as well
   * (`completionCarried`), so that a restart carries the completion there instead of adopting the machine
   * back into maintenance from the cluster manager's status.
   */
  clusterMaintenance?: boolean;
  /**
   * After a restart, how long a host stored DRAINING keeps that state while its agent has not
   * registered again (its tasks may still run there), before it is taken for DOWN and can be completed.
   * Mesos gives agents 10 minutes to re-register after a failover (`--agent_reregister_timeout`).
   */
  reregisterGraceMs?: number;
  /**
   * A new leader's hosts register after it starts (separate daemons): its full inventory is held until
   * `releaseInventory`, once they have, so the job manager never takes an empty list for every host gone (it
   * would remove every daemon instance, then add them back). What changes meanwhile still goes out.
   */
  holdInventory?: boolean;
}

/** Mesos's `--agent_reregister_timeout` default. */
export const REREGISTER_GRACE_MS = 600_000;

export const DEFAULT_HOSTMGR_CONFIG: HostmgrConfig = { leaseTimeoutMs: 60_000, scarceGpu: true };

/** The backend's machine maintenance, when it has both calls. */
function machinesOf(backend: HostBackend): MachineBackend | undefined {
  const { machineDown, machineUp } = backend;
  return machineDown && machineUp
    ? { machineDown: (h) => machineDown.call(backend, h), machineUp: (h) => machineUp.call(backend, h) }
    : undefined;
}

export interface HostmgrDeps {
  clock: Clock;
  transport: Transport;
  backend: HostBackend;
  metrics: Metrics;
  /** Where maintenance is kept, so that it outlives a restart. */
  store: Store;
  self: Address;
  jobmgr: Address;
  resmgr: Address;
}

export class HostManager implements Receiver {
  readonly registry: HostRegistry;
  readonly reservations: Reservations;
  /** Recovered tasks whose host has not registered yet. */
  readonly #waitingForHost = new Map<string, LaunchSpec[]>();
  /** Hosts whose inventory entry changed in the current batch, for the job manager. */
  readonly #changed = new Set<HostEntry>();
  /** Status batches waiting for both managers before the backend may acknowledge them. */
  readonly #pendingAcks = new Map<
    number,
    { acks: { taskId: string; agentId: string; uuid: string }[]; waiting: number }
  >();
  #ackSeq = 0;
  /** A graceful stop began (`stopLaunching`). */
  #launchesStopped = false;
  /** A full inventory waits for `releaseInventory` (`holdInventory`), which sends one. */
  #inventoryHeld = false;
  /** Leases split between job managers: launches still to come before the lease is used up. */
  readonly #partsLeft = new Map<string, number>();
  /** The engine each outstanding lease went to, kept only when engines can go away (`trackLeases`). */
  readonly #leaseEngine = new Map<string, Address>();
  /**
   * Hosts in maintenance, as stored. A registered one also shows it in its state; one not registered (its
   * agent is gone, or has not come back since a restart) is DOWN, and drains when it registers.
   */
  readonly #maintenance = new Map<string, HostMaintenanceRecord>();
  /**
   * Completed maintenance the cluster manager may not have yet (`clusterMaintenance`): UP here, and its
   * record kept until `completionCarried`. `stored` once the completion's record is durable.
   */
  readonly #completed = new Map<string, { record: HostMaintenanceRecord; stored: boolean }>();
  /**
   * Until when, after `recover` put back the maintenance stored before a restart, a host stored DRAINING is
   * waited for (`reregisterGraceMs`).
   */
  #reregisterBy?: number;
  /** Set while a request puts a host into maintenance: it stores the record, with the state reached. */
  #entering = false;
  /** Which pool each host is in (its `host_pool` label), and the pools operators created. */
  readonly hostPools = new HostPools();
  /**
   * Who takes a drained host's machine down: the backend, when it can (the minicluster). With neither it nor
   * a cluster manager keeping maintenance (the simulator) there is no machine to take down, and a drained
   * host is DOWN at once.
   */
  readonly #machines?: MachineBackend;

  constructor(private readonly deps: HostmgrDeps, readonly config: HostmgrConfig = DEFAULT_HOSTMGR_CONFIG) {
    this.#inventoryHeld = config.holdInventory === true;
    this.registry = new HostRegistry(config.scarceGpu, config.leaseTimeoutMs);
    this.reservations = new Reservations(this.registry);
    if (!config.clusterMaintenance) this.#machines = machinesOf(deps.backend);
  }

  get hosts(): readonly HostEntry[] {
    return this.registry.hosts;
  }

  /**
   * Puts back the maintenance stored before a restart (before `start`). Completions not yet carried to the
   * cluster manager are kept to be carried; without one that keeps maintenance, they are forgotten.
   */
  recover(maintenance: HostMaintenanceRecord[]): void {
    this.#reregisterBy = this.deps.clock.now() + (this.config.reregisterGraceMs ?? REREGISTER_GRACE_MS);
    for (const m of maintenance) {
      if (m.state === "HOST_STATE_UP") {
        if (this.config.clusterMaintenance) this.#completed.set(m.hostname, { record: m, stored: true });
        else this.deps.store.write([{ kind: "maintenance.delete", hostname: m.hostname }]);
        continue;
      }
      this.#maintenance.set(m.hostname, m);
      const h = this.host(m.hostname);
      if (h?.state === "HOST_STATE_UP") this.#enterMaintenance(h);
    }
    this.#placeAgentless();
  }

  /** Puts back the host pools and the hosts' places in them stored before a restart (before `start`). */
  recoverHostPools(stored: StoredHostPools): void {
    this.hostPools.recover(stored);
    this.#placeAgentless();
  }

  /**
   * Lists each host in maintenance whose agent has not registered in its stored pool: its agent may never
   * come back (its machine is down), and it is in a pool all the same. Either recovery may come first.
   */
  #placeAgentless(): void {
    for (const name of this.unregisteredInMaintenance()) this.hostPools.placeAgentless(name);
  }

  now(): number {
    return this.deps.clock.now();
  }

  /**
   * Moves the hosts a host pool request moved (their `host_pool` label, which placement and daemon jobs
   * see from now on) and stores the change; `done` once it is stored.
   */
  applyHostPoolChange(change: HostPoolChange, done: (err?: Error) => void): void {
    this.#moveHosts(change.moved);
    if (!change.writes.length) return done();
    this.#store(change.writes, done, () => this.#moveHosts(change.undo()));
  }

  #moveHosts(moves: { hostname: string; pool: string }[]): void {
    for (const m of moves) {
      const h = this.host(m.hostname);
      if (!h) continue;
      this.registry.update(h, { ...h.info, attributes: withPool(h.info.attributes, m.pool) });
      this.#changed.add(h);
    }
  }

  /** Hosts in maintenance that are not registered: the API lists them with `unregisteredState`. */
  unregisteredInMaintenance(): string[] {
    return [...this.#maintenance.keys()].filter((name) => !this.host(name));
  }

  /**
   * The state of a host in maintenance that is not registered: DOWN (its agent is gone), except one stored
   * DRAINING before a restart, whose agent has not come back yet: it may still run tasks, so it stays
   * DRAINING until it registers (and drains), or until `reregisterGraceMs` after the restart.
   */
  unregisteredState(hostname: string): HostState {
    const stored = this.#maintenance.get(hostname);
    const waiting = this.#reregisterBy !== undefined && this.deps.clock.now() < this.#reregisterBy;
    return stored?.state === "HOST_STATE_DRAINING" && waiting ? "HOST_STATE_DRAINING" : "HOST_STATE_DOWN";
  }

  /** Hosts whose maintenance was completed and stored, but may not be carried to the cluster manager yet. */
  completedMaintenance(): string[] {
    return [...this.#completed].filter(([, c]) => c.stored).map(([name]) => name);
  }

  /**
   * The cluster manager has the machine of a completed maintenance up: the completion's record goes. If
   * deleting it fails, it is carried again later; one not stored yet waits for a later pass.
   */
  completionCarried(hostname: string): void {
    const c = this.#completed.get(hostname);
    if (!c?.stored) return;
    this.#completed.delete(hostname);
    this.#store([{ kind: "maintenance.delete", hostname }], undefined, () => {
      if (!this.#maintenance.has(hostname) && !this.#completed.has(hostname)) {
        this.#completed.set(hostname, c);
      }
    });
  }

  start(): void {
    this.deps.backend.start((events) => this.onBackendEvents(events));
    this.#pushInventory(true);
  }

  /** The hosts have registered (`holdInventory`): the full inventory held back goes out now. */
  releaseInventory(): void {
    if (!this.#inventoryHeld) return;
    this.#inventoryHeld = false;
    // `start` asked for one, and so may a job manager that came meanwhile: one full list answers them all.
    this.#pushInventory(true);
  }

  host(hostname: string): HostEntry | undefined {
    return this.registry.byName.get(hostname);
  }

  receive(msg: Message): void {
    switch (msg.kind) {
      case "statuses-processed":
        return this.#processed(msg.ackToken);
      case "acquire-hosts": {
        // Stopping: no host is leased, as if none had room (the rounds' work waits for the next leader).
        const { leases, rejections, exhausted } = this.#launchesStopped
          ? { leases: [], rejections: msg.filters.map(() => ({})), exhausted: msg.filters.map(() => true) }
          : this.acquire(msg.filters, msg.held);
        if (this.config.trackLeases) {
          for (const l of leases) {
            this.#leaseEngine.set(l.leaseId, msg.replyTo);
          }
        }
        // The norms are each dimension's largest host: placement measures "large" tasks by them.
        const { normCpu: cpuMilli, normMem: memMb, normGpu: gpuMilli } = this.registry;
        const largestHost = { cpuMilli, memMb, diskMb: 0, gpuMilli };
        return this.deps.transport.send(msg.replyTo, {
          kind: "hosts-acquired",
          reqId: msg.reqId,
          leases,
          rejections,
          exhausted,
          largestHost,
        });
      }
      case "release-hosts":
        for (const id of msg.leaseIds) {
          this.registry.release(id);
          this.#leaseEngine.delete(id);
        }
        return;
      case "launch-tasks":
        return this.#launch(msg.leaseId, msg.hostname, msg.tasks, msg.parts ?? 1);
      case "kill-tasks":
        return this.#kill(msg.tasks);
      case "reconcile-tasks":
        return this.#reconcile(msg.tasks);
      case "destroy-volumes":
        return this.#destroyVolumes(msg.volumes);
      case "remove-sandboxes":
        return this.deps.backend.removeSandboxes?.(msg.jobIds);
      case "get-cluster-capacity":
        this.deps.transport.send(msg.replyTo, {
          kind: "cluster-capacity",
          reqId: msg.reqId,
          capacity: this.clusterCapacity(),
        });
        // The resource manager asks every entitlement period and when it starts: a drain request it missed
        // (it did not know the task yet, or restarted since) is sent again, as Peloton's drainer re-sent them.
        return this.#drainAgain(msg.replyTo);
      case "reserve-host":
        return this.#reserve(msg.reqId, msg.replyTo, msg.taskId, msg.reservationId, msg.filter);
      case "cancel-reservation":
        this.reservations.cancel(msg.taskId, msg.reservationId);
        return;
      case "peer-changed":
        if (msg.role === "placement" && msg.gone !== undefined) return this.#engineGone(msg.gone);
        // A new job manager knows no hosts yet; a new resource manager no capacity.
        if (msg.role === "jobmgr") return this.#pushInventory(true);
        if (msg.role === "resmgr") {
          const capacity = this.clusterCapacity();
          this.deps.transport.send(this.deps.resmgr, { kind: "cluster-capacity", reqId: 0, capacity });
        }
        return;
      case "api":
        hostApi(this, msg, (res) => {
          this.deps.transport.send(msg.replyTo, { kind: "api-reply", reqId: msg.reqId, ...res });
          // Answered later (once maintenance is stored), the reply comes with the host changes it made.
          this.#pushInventory(false);
        });
        return this.#pushInventory(false);
    }
  }

  /** Total resources of the hosts that are up. */
  capacity(): Resources {
    const total = zero();
    for (const h of this.hosts) if (!h.lost) addInto(total, h.info.resources);
    return total;
  }

  /**
   * What tasks hold on hosts that are not lost: the cpu of regular tasks and the memory, disk and GPUs of all
   * (capacity less what is free), and apart the cpu revocable tasks use of the hosts' slack.
   */
  allocated(): { regular: Resources; revocableCpuMilli: number } {
    const regular = zero(), t = this.registry.table;
    let revocableCpuMilli = 0;
    for (const h of this.hosts) {
      if (h.lost) continue;
      const r = h.info.resources, i = h.index;
      // An idle volume's hold is neither free nor allocated.
      regular.cpuMilli += r.cpuMilli - t.freeCpu[i] - t.heldCpu[i];
      regular.memMb += r.memMb - t.freeMem[i] - t.heldMem[i];
      regular.diskMb += r.diskMb - t.freeDisk[i] - t.heldDisk[i];
      regular.gpuMilli += r.gpuMilli - t.freeGpu[i] - t.heldGpu[i];
      revocableCpuMilli += t.slackUsedCpu[i];
    }
    return { regular, revocableCpuMilli };
  }

  clusterCapacity(): ClusterCapacity {
    return { physical: this.capacity(), slack: this.registry.table.totalSlack() };
  }

  /**
   * Leases hosts for each filter in turn; a host goes to the first filter that matches it. `held`: leases
   * the engine brings into the round from an earlier one. Rejections are counted once every filter has
   * leased, so that no host of the round (which the engine counts itself) is counted here too.
   */
  acquire(
    filters: HostFilter[],
    held: string[] = [],
  ): { leases: HostLease[]; rejections: Record<string, number>[]; exhausted: boolean[] } {
    const now = this.deps.clock.now();
    this.registry.sweep(now);
    const leases: HostLease[] = [], exhausted: boolean[] = [];
    const inRound = new Set<number>();
    for (const id of held) {
      const h = this.registry.byName.get(id.slice(0, id.lastIndexOf("#")));
      if (h?.leaseId === id) inRound.add(h.index);
    }
    const searches = filters.map((f) => {
      const own = f.reservedFor === undefined ? undefined : this.reservations.of(f.reservedFor)?.host;
      return new FilterSearch(this.registry, f, now, inRound, own);
    });
    for (const s of searches) {
      const out = s.run();
      for (const l of out.leases) leases.push(l);
      exhausted.push(out.exhausted);
    }
    return { leases, rejections: searches.map((s) => s.count()), exhausted };
  }

  /**
   * Why a start or completion of maintenance on the host would be refused, or undefined if it would be
   * accepted; changes nothing (the API checks every host of a call before it changes any).
   */
  maintenanceRefusal(
    method: "StartMaintenance" | "CompleteMaintenance",
    hostname: string,
  ): MaintenanceRefusal | undefined {
    const h = this.host(hostname);
    const stored = this.#maintenance.get(hostname);
    if (!h && !stored) return { code: "not-found", message: `host ${hostname} is not registered` };
    const state = h ? apiState(h) : this.unregisteredState(hostname);
    if (method === "CompleteMaintenance") {
      if (!stored && h!.state === "HOST_STATE_UP") {
        return { code: "invalid-argument", message: `host ${hostname} is not in maintenance` };
      }
      // Peloton completes only a DOWN host (`drainer.CompleteMaintenance`: "Host is not DOWN").
      if (state === "HOST_STATE_DOWN") return undefined;
      const why = !h
        ? `as stored before the host manager restarted, and its agent has not registered since (its tasks ` +
          `may still run); it drains when it registers, and is taken for DOWN if it has not by ` +
          `${new Date(this.#reregisterBy!).toISOString()}`
        : state === "HOST_STATE_DRAINING"
        ? `${h.tasks.size} task(s) still to move off`
        : "its machine is not down yet";
      return {
        code: "failed-precondition",
        message: `cannot complete maintenance on host ${hostname}: it is ${state}, ${why}; ` +
          "complete it once it is HOST_STATE_DOWN",
      };
    }
    if (state === "HOST_STATE_DRAINED" || state === "HOST_STATE_DOWN") {
      return {
        code: "failed-precondition",
        message: `cannot start maintenance on host ${hostname}: it is ${state}, already in maintenance; ` +
          "complete its maintenance to bring it UP first",
      };
    }
    if (h?.lost) {
      // Peloton puts only current agents into maintenance: one whose agent went away may never drain.
      return {
        code: "failed-precondition",
        message:
          `cannot start maintenance on host ${hostname}: it is ${state}, its agent is not registered; ` +
          "only a registered agent can be put into maintenance",
      };
    }
    return undefined;
  }

  /**
   * Peloton's StartMaintenance: the host takes no new work; DRAINING until its tasks are gone, then
   * DRAINED, and DOWN once its machine is down (`#drained`). A DRAINING host is left draining, as Peloton
   * drains it again; a DRAINED or DOWN one is refused, as is one whose agent is lost (UNKNOWN): Peloton puts
   * only registered agents into maintenance.
   * Returns why it was refused, or undefined: then the maintenance is being stored, and `done` is called
   * once it is (with the error if it could not be, the host then back as it was).
   */
  startMaintenance(hostname: string, done?: (err?: Error) => void): MaintenanceRefusal | undefined {
    const refused = this.maintenanceRefusal("StartMaintenance", hostname);
    if (refused) return refused;
    const h = this.host(hostname);
    const stored = this.#maintenance.get(hostname);
    if (stored) {
      // Already draining: answered once its record (maybe still being written) is stored.
      this.#store([{ kind: "maintenance.put", maintenance: stored }], done);
      return undefined;
    }
    const record: HostMaintenanceRecord = {
      hostname,
      state: "HOST_STATE_DRAINING",
      startTimeMs: this.deps.clock.now(),
    };
    // A completion not yet carried is replaced: the cluster manager is to have the machine in maintenance.
    const completed = this.#completed.get(hostname);
    this.#completed.delete(hostname);
    this.#maintenance.set(hostname, record);
    // Its pool is stored with it: a restart that does not see its agent again lists it there.
    const pool = this.hostPools.keep(hostname, record.startTimeMs);
    const put: StoreWrite = { kind: "maintenance.put", maintenance: this.#entered(h!, record) };
    this.#store([put, ...pool.writes], done, () => {
      pool.undo();
      if (this.#maintenance.get(hostname) !== record) return;
      this.#leaveMaintenance(hostname);
      // An empty host's machine was being taken down already: it comes back up.
      this.#machines?.machineUp(hostname);
      if (completed) this.#completed.set(hostname, completed);
    });
    return undefined;
  }

  /**
   * A host the cluster manager has in maintenance (a Mesos master's draining or down machines, seen by a
   * new leader): into maintenance here too, and stored, unless it already is, or its maintenance was
   * completed here and the cluster manager is yet to hear of it (the completion wins). One not registered
   * is listed DOWN until it registers. One whose agent is lost is adopted too (StartMaintenance would refuse
   * it): left UP here, the sync would bring its machine up again.
   */
  adoptMaintenance(hostname: string, state: "HOST_STATE_DRAINING" | "HOST_STATE_DOWN"): void {
    if (this.#maintenance.has(hostname) || this.#completed.has(hostname)) return;
    const h = this.host(hostname);
    if (h && !h.lost) {
      this.startMaintenance(hostname);
      return;
    }
    const record: HostMaintenanceRecord = { hostname, state, startTimeMs: this.deps.clock.now() };
    this.#maintenance.set(hostname, record);
    // Stored as the cluster manager has it: a lost host is DOWN here, and the sync says when it is back.
    if (h) this.#entered(h, record);
    else this.hostPools.placeAgentless(hostname);
    // The pool of a host whose agent never registered here is not known: none is stored for it.
    const pool = h ? this.hostPools.keep(hostname, record.startTimeMs) : undefined;
    this.#store(
      [{ kind: "maintenance.put", maintenance: record }, ...pool?.writes ?? []],
      undefined,
      () => {
        pool?.undo();
        if (this.#maintenance.get(hostname) !== record) return;
        this.#leaveMaintenance(hostname);
        if (!this.host(hostname)) this.hostPools.remove(hostname);
      },
    );
  }

  /**
   * Peloton's CompleteMaintenance: the host is UP again and takes work; one not registered leaves the
   * DOWN list and takes work when it registers. Only a DOWN host is completed, as in Peloton: one still
   * DRAINING, or DRAINED with its machine not down yet, is refused. Once the completion is stored, a backend
   * that took the machine down brings it up (its agent registers again). `done` as for `startMaintenance`.
   */
  completeMaintenance(hostname: string, done?: (err?: Error) => void): MaintenanceRefusal | undefined {
    const refused = this.maintenanceRefusal("CompleteMaintenance", hostname);
    if (refused) return refused;
    const stored = this.#maintenance.get(hostname);
    this.#leaveMaintenance(hostname);
    // One whose agent has not registered is no longer listed, nor in a pool, until it registers.
    if (!this.host(hostname)) this.hostPools.remove(hostname);
    // With a cluster manager that keeps maintenance, the completion is stored until it is carried there.
    const completion = this.config.clusterMaintenance
      ? {
        record: { hostname, state: "HOST_STATE_UP", startTimeMs: this.deps.clock.now() } as const,
        stored: false,
      }
      : undefined;
    if (completion) this.#completed.set(hostname, completion);
    const write: StoreWrite = completion
      ? { kind: "maintenance.put", maintenance: completion.record }
      : { kind: "maintenance.delete", hostname };
    this.#store([write], (err) => {
      if (!err && completion) completion.stored = true;
      // Up only once stored: a completion the store refused leaves the machine down, as the record says.
      if (!err && !this.#maintenance.has(hostname)) this.#machines?.machineUp(hostname);
      done?.(err);
    }, () => {
      if (completion && this.#completed.get(hostname) === completion) this.#completed.delete(hostname);
      // Still stored: back into maintenance (it was DOWN), unless it was started again meanwhile.
      if (!stored || this.#maintenance.has(hostname)) return;
      this.#maintenance.set(hostname, stored);
      const again = this.host(hostname);
      if (!again) this.hostPools.placeAgentless(hostname);
      else if (again.state === "HOST_STATE_UP") this.#enterMaintenance(again, true);
    });
    return undefined;
  }

  /** Puts the host into maintenance for a request; its record to store says whether it is DOWN already. */
  #entered(h: HostEntry, record: HostMaintenanceRecord): HostMaintenanceRecord {
    this.#entering = true;
    try {
      this.#enterMaintenance(h);
    } finally {
      this.#entering = false;
    }
    return h.state === "HOST_STATE_DOWN" ? { ...record, state: "HOST_STATE_DOWN" } : record;
  }

  /**
   * The host takes no new work; the resource manager preempts what runs there, so it drains (Peloton's
   * drainer). `wasDown`: it was DOWN until now (listed DOWN while not registered), so an empty one stays so.
   */
  #enterMaintenance(h: HostEntry, wasDown = false): void {
    if (h.tasks.size) {
      h.state = "HOST_STATE_DRAINING";
      this.deps.transport.send(this.deps.resmgr, { kind: "drain-tasks", taskIds: [...h.tasks.keys()] });
    } else this.#drained(h, wasDown);
    this.#endReservation(h, `host ${h.info.hostname} reserved for the task went into maintenance`);
    this.registry.reindex(h);
    this.#changed.add(h);
  }

  /**
   * A host in maintenance has no task left: its machine goes down (Peloton: DRAINED, then DOWN once
   * `/machine/down` went through). DOWN at once when its agent is gone already, or when there is no machine
   * to take down; otherwise DRAINED until it is down: the backend is asked (the minicluster, whose agent then
   * leaves: `#hostLost`), or the cluster manager's sync takes it down and says so (`machineWentDown`). One
   * DOWN before (`wasDown`: its agent is back, or registered after a restart) stays DOWN while the backend
   * takes it down again.
   */
  #drained(h: HostEntry, wasDown: boolean): void {
    let down = h.lost || (!this.#machines && !this.config.clusterMaintenance);
    if (!h.lost && this.#machines) {
      this.#machines.machineDown(h.info.hostname);
      down ||= wasDown;
    }
    this.#setState(h, down ? "HOST_STATE_DOWN" : "HOST_STATE_DRAINED");
  }

  /**
   * The cluster manager has the host's machine down (the Mesos sync's `/machine/down` went through): a
   * DRAINED host is DOWN. Safe to call again; any other state is left as it is.
   */
  machineWentDown(hostname: string): void {
    const h = this.host(hostname);
    if (h?.state !== "HOST_STATE_DRAINED") return;
    this.#setState(h, "HOST_STATE_DOWN");
    this.#pushInventory(false);
  }

  #setState(h: HostEntry, state: HostState): void {
    if (h.state === state) return;
    const was = h.state;
    h.state = state;
    this.registry.reindex(h);
    this.#changed.add(h);
    // Whether the host went DOWN is stored too, so a restart that does not see its agent again knows it
    // is down rather than still draining (`unregisteredState`). The record in memory stays the one started.
    // A request that puts the host into maintenance writes the state it reached itself (`#entered`).
    const m = this.#maintenance.get(h.info.hostname);
    if (
      m && !this.#entering &&
      (state === "HOST_STATE_DOWN" || was === "HOST_STATE_DOWN" && state === "HOST_STATE_DRAINING")
    ) {
      this.#store([{ kind: "maintenance.put", maintenance: { ...m, state } }]);
    }
  }

  /** Asks for the tasks still on DRAINING hosts to be drained; the resource manager skips those it already is. */
  #drainAgain(resmgr: Address): void {
    const taskIds: string[] = [];
    for (const h of this.registry.hosts) {
      if (h.state === "HOST_STATE_DRAINING") { for (const id of h.tasks.keys()) taskIds.push(id); }
    }
    if (taskIds.length) this.deps.transport.send(resmgr, { kind: "drain-tasks", taskIds });
  }

  #leaveMaintenance(hostname: string): void {
    this.#maintenance.delete(hostname);
    const h = this.host(hostname);
    if (!h || h.state === "HOST_STATE_UP") return;
    h.state = "HOST_STATE_UP";
    this.registry.reindex(h);
    this.#changed.add(h);
    // Capacity is the same, but the host is room work held back for lack of it may use now.
    if (!h.lost) {
      const capacity = this.clusterCapacity();
      this.deps.transport.send(this.deps.resmgr, {
        kind: "cluster-capacity",
        reqId: 0,
        capacity,
        roomFreed: true,
      });
    }
  }

  /** Writes maintenance or host pools; `undo` puts memory back as the store has it if the write fails. */
  #store(writes: StoreWrite[], done?: (err?: Error) => void, undo?: () => void): void {
    this.deps.store.write(writes, (err) => {
      if (err) undo?.();
      done?.(err);
    });
  }

  #reserve(reqId: number, replyTo: Address, taskId: string, reservationId: string, filter: HostFilter): void {
    this.registry.sweep(this.deps.clock.now());
    const out = this.reservations.reserve(taskId, reservationId, replyTo, filter);
    if ("reason" in out) {
      return this.deps.transport.send(replyTo, { kind: "host-reserved", reqId, reason: out.reason });
    }
    this.deps.transport.send(replyTo, { kind: "host-reserved", reqId, hostname: out.host.info.hostname });
    this.#completeReservation(out.host);
  }

  #completeReservation(h: HostEntry): void {
    const done = this.reservations.complete(h, this.deps.clock.now());
    if (!done) return;
    // Its engine's lease like any other: given back at once if that engine goes.
    if (this.config.trackLeases) this.#leaseEngine.set(done.lease.leaseId, done.res.replyTo);
    this.deps.transport.send(done.res.replyTo, {
      kind: "reservation-update",
      taskId: done.res.taskId,
      reservationId: done.res.id,
      lease: done.lease,
    });
  }

  /** The host can no longer be the task's: its engine hears why (worded for the task's placement reason). */
  #endReservation(h: HostEntry, reason: string): void {
    const taskId = h.reservedFor;
    if (taskId === undefined) return;
    const res = this.reservations.of(taskId);
    if (!res) return;
    this.reservations.cancel(taskId, res.id);
    this.deps.transport.send(res.replyTo, {
      kind: "reservation-update",
      taskId,
      reservationId: res.id,
      reason,
    });
  }

  /**
   * A graceful stop began: no host is leased and no task launched any more (each launch asked for is refused
   * at once, TASK_LOST, so its job manager runs it again elsewhere or on the next leader, rather than one that
   * would start only to be ended by the stop). Statuses are still taken and passed on.
   */
  stopLaunching(): void {
    this.#launchesStopped = true;
  }

  #launch(leaseId: string, hostname: string, tasks: LaunchSpec[], parts: number): void {
    const h = this.host(hostname);
    const now = this.deps.clock.now();
    const valid = h !== undefined && h.leaseId === leaseId && h.leased(now) && !h.lost;
    const why = this.#launchesStopped
      ? "the host manager is stopping"
      : !valid
      ? `lease ${leaseId} expired or unknown`
      : h.state !== "HOST_STATE_UP"
      ? `host ${hostname} is in maintenance`
      : undefined;
    if (h && h.leaseId === leaseId) this.#useLease(h, leaseId, parts);
    const ok: LaunchSpec[] = [];
    const failed: TaskStatus[] = [];
    const t = this.registry.table;
    // A volume's own task first: its volume's hold is its to take, and what it leaves is the others'.
    const ordered = h?.volumes?.size
      ? [...tasks].sort((a, b) => (b.volume ? 1 : 0) - (a.volume ? 1 : 0))
      : tasks;
    for (const spec of ordered) {
      if (why) {
        failed.push(this.#synthetic(spec, why));
        continue;
      }
      const i = h!.index, r = spec.resources, volumeId = spec.volume?.volumeId;
      const o = volumeId !== undefined && h!.volumes?.has(volumeId)
        ? t.ownHold(h!, (id) => id === volumeId)
        : NO_HOLD;
      const cpu = spec.revocable ? t.slackCpu[i] - t.slackUsedCpu[i] : t.freeCpu[i] + o.cpuMilli;
      const room = r.cpuMilli <= cpu && r.memMb <= t.freeMem[i] + o.memMb &&
        r.diskMb <= t.freeDisk[i] + o.diskMb &&
        r.gpuMilli <= t.freeGpu[i] + o.gpuMilli;
      if (!room || portsOf(spec).some((p) => h!.usedPorts.has(p))) {
        failed.push(this.#synthetic(spec, `host ${hostname} no longer fits the task`));
      } else {
        this.#register(h!, spec);
        ok.push(spec);
      }
    }
    if (h) this.registry.reindex(h);
    if (ok.length) this.deps.backend.launch(ok);
    if (failed.length) this.#forward(failed);
  }

  /**
   * A placement engine is gone: the hosts it had leased are free again now, not at their lease timeout, and
   * those reserved for its tasks too (no one would take the lease or cancel the reservation).
   */
  #engineGone(engine: Address): void {
    this.reservations.cancelFor(engine);
    const leased = new Set<string>();
    for (const h of this.hosts) if (h.leaseId !== undefined) leased.add(h.leaseId);
    for (const [leaseId, owner] of this.#leaseEngine) {
      if (owner === engine && leased.has(leaseId)) this.registry.release(leaseId);
      if (owner === engine || !leased.has(leaseId)) this.#leaseEngine.delete(leaseId);
    }
  }

  /** A lease ends with its launch, or with the last of its parts when job managers share it. */
  #useLease(h: HostEntry, leaseId: string, parts: number): void {
    if (parts > 1) {
      const left = (this.#partsLeft.get(leaseId) ?? parts) - 1;
      if (left > 0) {
        this.#partsLeft.set(leaseId, left);
        return;
      }
      this.#partsLeft.delete(leaseId);
    }
    h.leaseId = undefined;
    this.#leaseEngine.delete(leaseId);
  }

  #register(h: HostEntry, spec: LaunchSpec): void {
    // Re-registering (a restarted job manager reconciles what it launched) must not count a task twice.
    // A run never changes host, so only this host can have it already.
    if (h.tasks.has(spec.taskId)) this.#unregisterFrom(h, spec.taskId);
    const task = {
      resources: spec.resources,
      ports: portsOf(spec),
      labels: spec.labels,
      revocable: spec.revocable === true,
      ...(spec.volume ? { volumeId: spec.volume.volumeId } : {}),
    };
    h.tasks.set(spec.taskId, task);
    this.registry.table.take(h, task);
  }

  /**
   * The host a task is registered on. Statuses and kills name it (a run never changes host), so no map of
   * every task in the cluster is kept (a million entries, and a cache miss per lookup at that size); only
   * a status or kill that names no host, or one the task is not on, looks through every host.
   */
  #hostOfTask(taskId: string, hostname: string | undefined): HostEntry | undefined {
    if (hostname) {
      const h = this.host(hostname);
      if (h?.tasks.has(taskId)) return h;
    }
    for (const h of this.registry.hosts) if (h.tasks.has(taskId)) return h;
    return undefined;
  }

  #unregister(taskId: string, hostname: string | undefined): void {
    const h = this.#hostOfTask(taskId, hostname);
    if (h) this.#unregisterFrom(h, taskId);
  }

  #unregisterFrom(h: HostEntry, taskId: string): void {
    const t = h.tasks.get(taskId);
    if (!t) return;
    h.tasks.delete(taskId);
    this.registry.table.give(h, t);
    if (h.state === "HOST_STATE_DRAINING" && !h.tasks.size) this.#drained(h, false);
    if (h.reservedFor !== undefined) this.#completeReservation(h);
    this.registry.reindex(h);
  }

  #kill(tasks: { taskId: string; gracePeriodMs: number; hostname?: string }[]): void {
    const kills = [];
    for (const t of tasks) {
      const h = this.#hostOfTask(t.taskId, t.hostname);
      kills.push({ taskId: t.taskId, agentId: h?.info.agentId ?? "", gracePeriodMs: t.gracePeriodMs });
    }
    if (kills.length) this.deps.backend.kill(kills);
  }

  /**
   * Deleted volumes go to the backend with their host's agent (a lost host's last one; none for a host not
   * registered since a restart: the backend finds it by name).
   */
  #destroyVolumes(volumes: { volumeId: string; hostname: string }[]): void {
    const backend = this.deps.backend;
    if (!backend.destroyVolumes || !volumes.length) return;
    backend.destroyVolumes(
      volumes.map((v) => ({ ...v, agentId: this.host(v.hostname)?.info.agentId ?? "" })),
    );
  }

  #reconcile(tasks: LaunchSpec[]): void {
    const drain: string[] = [];
    for (const spec of tasks) {
      const h = this.host(spec.hostname);
      if (h) {
        this.#register(h, spec);
        // A host in maintenance (put back after a restart, maybe DRAINED while it seemed empty) drains it too.
        if (h.state !== "HOST_STATE_UP") {
          h.state = "HOST_STATE_DRAINING";
          drain.push(spec.taskId);
          this.#changed.add(h);
        }
        this.registry.reindex(h);
      } else {
        const list = this.#waitingForHost.get(spec.hostname) ?? [];
        list.push(spec);
        this.#waitingForHost.set(spec.hostname, list);
      }
    }
    if (drain.length) this.deps.transport.send(this.deps.resmgr, { kind: "drain-tasks", taskIds: drain });
    this.deps.backend.reconcile(tasks.map((t) => t.taskId));
  }

  onBackendEvents(events: BackendEvent[]): void {
    const statuses: TaskStatus[] = [];
    let capacityChanged = false;
    for (const e of events) {
      if (e.kind === "task-status") statuses.push(e.status);
      else {
        capacityChanged = true;
        if (e.kind === "host-up") this.#hostUp(e.host);
        else if (e.kind === "host-lost") this.#hostLost(e.hostname, e.reason, statuses);
        else if (e.kind === "host-slack") this.#hostSlack(e.hostname, e.slack);
        else if (e.kind === "volume-reservations") this.#volumeReservations(e.hostname, e.volumes);
        else this.#volumesFound(e.hostname, e.agentId, e.volumeIds);
      }
    }
    if (statuses.length) this.#forward(statuses);
    // The resource manager recalculates entitlement whenever capacity changes.
    if (capacityChanged) {
      const capacity = this.clusterCapacity();
      this.deps.transport.send(this.deps.resmgr, { kind: "cluster-capacity", reqId: 0, capacity });
    }
    this.#pushInventory(false);
  }

  #hostUp(info: HostInfo): void {
    // The host's pool is its `host_pool` label, whatever its agent says (an operator may have moved it).
    const pool = this.hostPools.poolFor(info.hostname, info.attributes);
    const attributes = withPool(info.attributes, pool);
    if (attributes !== info.attributes) info = { ...info, attributes };
    this.hostPools.place(info.hostname, pool);
    const known = this.host(info.hostname);
    if (known) {
      this.registry.update(known, info);
      known.lost = false;
      this.registry.reindex(known);
      this.#changed.add(known);
      // Its agent is back though its machine was down: taken down again (with a sync: DRAINED until it is).
      if (known.state === "HOST_STATE_DOWN") this.#drained(known, true);
      return;
    }
    const h = this.registry.add(info);
    for (const spec of this.#waitingForHost.get(info.hostname) ?? []) this.#register(h, spec);
    this.#waitingForHost.delete(info.hostname);
    this.registry.reindex(h);
    this.#changed.add(h);
    // Maintenance stored before a restart, or adopted from the cluster manager, applies from the start; it
    // was listed DOWN until now.
    if (this.#maintenance.has(info.hostname)) this.#enterMaintenance(h, true);
  }

  #hostLost(hostname: string, reason: string, out: TaskStatus[]): void {
    const h = this.host(hostname);
    if (!h) return;
    h.lost = true;
    h.leaseId = undefined;
    // A drained host whose agent left is DOWN: its machine was taken down (or went down by itself).
    if (h.state === "HOST_STATE_DRAINED") this.#drained(h, false);
    this.#endReservation(h, `host ${hostname} reserved for the task was lost: ${reason}`);
    this.registry.reindex(h);
    this.#changed.add(h);
    const now = this.deps.clock.now();
    for (const taskId of [...h.tasks.keys()]) {
      out.push({
        taskId,
        state: "TASK_LOST",
        hostname,
        agentId: h.info.agentId,
        timeMs: now,
        reason: "REASON_AGENT_REMOVED",
        message: `host ${hostname} lost: ${reason}`,
      });
    }
  }

  /**
   * Volumes the backend found on a host that it did not make (a destroy a restart kept from being sent): each
   * the store does not have (deleted, or its job deleted) is destroyed. The store decides, not what is in
   * memory, so a volume whose job is still being recovered is kept; one whose lookup fails is kept too.
   */
  #volumesFound(hostname: string, agentId: string, volumeIds: string[]): void {
    const backend = this.deps.backend;
    if (!backend.destroyVolumes) return;
    for (const volumeId of volumeIds) {
      this.deps.store.getVolume(volumeId).then((v) => {
        if (v && v.state === "CREATED") return;
        backend.destroyVolumes!([{ volumeId, hostname, agentId }]);
      }, () => {/* kept: found again after the next restart */});
    }
  }

  /**
   * The host's volumes' reservations (Mesos's, and the minicluster's and simulator's alike): an idle volume's
   * (its task not running here) is held from other work, which could not use it (RESERVE takes unreserved
   * resources only) or would keep the volume's task from coming back, and given to the volume's own task
   * (`HostFilter.volumeOwners`, a launch mounting it).
   */
  #volumeReservations(hostname: string, volumes: VolumeReservation[]): void {
    const h = this.host(hostname);
    if (!h) return;
    h.volumes = volumes.length ? new Map(volumes.map((v) => [v.volumeId, v.resources])) : undefined;
    this.registry.table.rehold(h);
    this.registry.reindex(h);
  }

  #hostSlack(hostname: string, slack: Resources): void {
    const h = this.host(hostname);
    if (h) this.registry.table.setSlack(h.index, slack);
  }

  /** Maps statuses to Peloton states, frees resources of ended tasks, and tells jobmgr and resmgr. */
  #forward(statuses: TaskStatus[]): void {
    const toJob: MappedTaskStatus[] = [];
    const toRm: TaskUpdate[] = [];
    for (const s of statuses) {
      const state = MESOS_TO_TASK_STATE[s.state];
      if (isTerminalTaskState(state)) {
        this.#unregister(s.taskId, s.hostname);
        if (this.#waitingForHost.size) this.#stopWaiting(s.taskId);
      }
      // The backend hands its statuses over: mapped in place rather than copied (millions at scale).
      const mapped = s as MappedTaskStatus;
      mapped.pelotonState = state;
      toJob.push(mapped);
      toRm.push({ taskId: s.taskId, state, hostname: s.hostname, timeMs: s.timeMs });
    }
    // Updates the backend wants acknowledged wait until both managers have handled them.
    const acks = statuses.filter((s) => s.uuid !== undefined)
      .map((s) => ({ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid! }));
    let ackToken: number | undefined;
    if (acks.length && this.deps.backend.acknowledge) {
      ackToken = ++this.#ackSeq;
      this.#pendingAcks.set(ackToken, { acks, waiting: 2 });
    }
    this.deps.transport.send(this.deps.jobmgr, { kind: "task-statuses", statuses: toJob, ackToken });
    this.deps.transport.send(this.deps.resmgr, { kind: "task-updates", updates: toRm, ackToken });
  }

  /**
   * A recovered task that ended before its host registered (reconciliation can answer before the first
   * offer): it must not be accounted on the host when the host comes.
   */
  #stopWaiting(taskId: string): void {
    for (const [hostname, list] of this.#waitingForHost) {
      const i = list.findIndex((spec) => spec.taskId === taskId);
      if (i < 0) continue;
      list.splice(i, 1);
      if (!list.length) this.#waitingForHost.delete(hostname);
      return;
    }
  }

  /** One of the two managers handled a batch; the second answer releases the acknowledgements. */
  #processed(token: number): void {
    const p = this.#pendingAcks.get(token);
    if (!p || --p.waiting > 0) return;
    this.#pendingAcks.delete(token);
    this.deps.backend.acknowledge?.(p.acks);
  }

  /** Tells the job manager (daemon jobs) which hosts exist and their state. */
  #pushInventory(full: boolean): void {
    if (full && this.#inventoryHeld) return;
    if (!full && !this.#changed.size) return;
    const hosts: HostInventory["hosts"] = [];
    for (const h of full ? this.hosts : this.#changed) {
      hosts.push({
        hostname: h.info.hostname,
        attributes: h.info.attributes,
        state: h.lost ? "LOST" : h.state,
      });
    }
    this.#changed.clear();
    const fixed = full && this.deps.backend.fixedVolumes === true;
    this.deps.transport.send(
      this.deps.jobmgr,
      fixed
        ? { kind: "host-inventory", full, hosts, fixedVolumes: true }
        : { kind: "host-inventory", full, hosts },
    );
  }

  #synthetic(spec: LaunchSpec, message: string): TaskStatus {
    return {
      taskId: spec.taskId,
      state: "TASK_LOST",
      hostname: spec.hostname,
      agentId: spec.agentId,
      timeMs: this.deps.clock.now(),
      reason: "REASON_INVALID_OFFERS",
      message,
    };
  }
}

const NO_PORTS: number[] = [];
const NO_HOLD: Resources = Object.freeze(zero());
function portsOf(spec: LaunchSpec): number[] {
  for (const _ in spec.ports) return Object.values(spec.ports);
  return NO_PORTS;
}
