/** HostBackend over a Mesos master: offers become hosts, launches become ACCEPTs, updates become statuses. */
import { max, type Resources } from "../../core/model/resources.ts";
import type { MesosTaskState } from "../../core/model/states.ts";
import type {
  BackendEvent,
  HostBackend,
  LaunchSpec,
  TaskStatus as CoreStatus,
  VolumeRef,
} from "../../core/ports/host_backend.ts";
import { authorization, authRefusal, type MesosCredentials } from "./credentials.ts";
import { AgentDirectory, type Fit, type FittingLaunch, LaunchQueue, OfferPool } from "./mesos_agents.ts";
import {
  agentAddress,
  customExecutorId,
  executorProblem,
  type MaintenanceEvent,
  secretsProblem,
  toCoreStatus,
  toMaintenanceEvent,
  toTaskInfo,
} from "./mesos_convert.ts";
import {
  CONTENT_TYPE_JSON,
  type Event,
  type FrameworkInfo,
  type InverseOffer,
  isTerminalState,
  type MachineID,
  type Offer,
  type Operation,
  OPERATOR_PATH,
  type TaskStatus,
} from "./protocol.ts";
import {
  addBags,
  attributesToRecord,
  type Bag,
  bagFromMesos,
  bagToCore,
  bagToMesos,
  emptyBag,
  rangesOf,
  reservedFor,
  slackToCore,
} from "./resources.ts";
import {
  planDestroy,
  planUnreserve,
  planVolumeLaunch,
  type Reserver,
  takeForTask,
  volumeIdsOffered,
} from "./volume_plan.ts";
import { capacityToCore, persistenceId, volumeReservations } from "./volumes.ts";
import { ReservationReports } from "../../core/hostmgr/volume_holds.ts";
import {
  type FrameworkIdStore,
  isSubscriptionRefusal,
  MesosCallError,
  NotSubscribedError,
  SchedulerClient,
  type SchedulerClientOptions,
} from "./scheduler_client.ts";

export type { MaintenanceEvent };

export interface MesosBackendOptions {
  masterUrl: string;
  idStore?: FrameworkIdStore;
  framework?: Partial<FrameworkInfo>;
  /**
   * HTTP basic authentication, sent to the master (scheduler and operator API) and to the agents (`/files`);
   * its principal is the FrameworkInfo's and the one RESERVE and CREATE name.
   */
  credentials?: MesosCredentials;
  /** How long a launch waits for offers that cover it before it is TASK_DROPPED. */
  launchTimeoutMs?: number;
  /** Peloton reconciled every 1800 s. */
  implicitReconcileIntervalMs?: number;
  explicitReconcileBatchSize?: number;
  /** Filter for what an ACCEPT leaves unused: 0 lets the master re-offer the remainder at once. */
  acceptRefuseSeconds?: number;
  /**
   * Offers no launch used for this long are DECLINEd, so other frameworks may have them (Peloton's host
   * manager pruned offers held past its hold time); default 5 minutes.
   */
  offerHoldMs?: number;
  /** The DECLINE's filter: the master offers those resources to us again after this long (default 5). */
  declineRefuseSeconds?: number;
  /** Agent totals from GET_AGENTS (true) or from offers plus our tasks (false, or when it fails). */
  useOperatorApi?: boolean;
  /** ACKNOWLEDGE calls in flight at most (default 32); the others wait their turn, in order. */
  maxAcksInFlight?: number;
  onMaintenance?: (event: MaintenanceEvent) => void;
  /**
   * How long an operator API call (maintenance, GET_AGENTS) may take, and a sandbox read may wait for the
   * agent's answer, before it fails (default 30 s): a master or agent that stopped answering must not hold
   * a maintenance pass, or a stop waiting for one, for as long as TCP takes to notice.
   */
  httpTimeoutMs?: number;
  /** Client tuning (heartbeat misses, backoff, timeouts) and tracing. */
  client?:
    & Partial<Omit<SchedulerClientOptions, "masterUrl" | "framework" | "idStore" | "credentials" | "onEvent">>
    & {
      onEvent?: (event: Event) => void;
    };
  log?: (line: string) => void;
}

interface AgentView {
  hostname: string;
  lost: boolean;
  /** The slack last reported, so only changes are sent. */
  slack: string;
}

const NO_SLACK = JSON.stringify(bagToCore(emptyBag()));

/** A task we launched or were asked to reconcile, until it is terminal. */
interface KnownTask {
  agentId?: string;
  hostname: string;
  bag?: Bag;
}

const RECENT_TASKS = 10_000;

/** States only a registered agent reports (not the master's TASK_UNREACHABLE, TASK_LOST, ...). */
const ALIVE = new Set(["TASK_STARTING", "TASK_RUNNING", "TASK_KILLING"]);

/** What an ACKNOWLEDGE echoes. */
interface Ack {
  taskId: string;
  agentId: string;
  uuid: string;
}

export class MesosBackend implements HostBackend {
  readonly client: SchedulerClient;
  /** A Mesos persistent volume is matched whole, at its container path and size. */
  readonly fixedVolumes = true;
  readonly #o: MesosBackendOptions;
  readonly #role: string;
  readonly #httpTimeoutMs: number;
  readonly #agents = new Map<string, AgentView>();
  readonly #announcing = new Set<string>();
  /** Agents the master's list was read again for (`#seek`), since the last subscription. */
  readonly #sought = new Set<string>();
  readonly #offers = new OfferPool();
  readonly #directory: AgentDirectory;
  readonly #tasks = new Map<string, KnownTask>();
  /** Agent of recently seen tasks, so logs of ended tasks can still be found. */
  readonly #recent = new Map<string, string>();
  readonly #pending: LaunchQueue;
  readonly #inverse = new Map<string, InverseOffer>();
  #kills: { taskId: string; agentId: string; gracePeriodMs: number }[] = [];
  readonly #reserver: Reserver;
  /**
   * Persistent volumes known to be on a host (made here, or seen offered): volume id → host name. By host, not
   * agent: an agent registering under a new id (back from maintenance, rebooted) recovers its machine's volumes.
   */
  readonly #volumes = new Map<string, string>();
  /** Deleted volumes waiting for an offer that carries them, kept across re-subscriptions. */
  readonly #destroys = new Map<string, VolumeRef>();
  /** Volumes this backend destroyed: the operator API's agent totals may still list them for a while. */
  readonly #destroyed = new Set<string>();
  /** Volumes this run of the backend made (RESERVE + CREATE): the store may not have their records yet. */
  readonly #made = new Set<string>();
  /** Volumes reported `volumes-found` (once each): the host manager asks the store whether they are deleted. */
  readonly #found = new Set<string>();
  /**
   * What each host holds reserved for each of its volumes (the volume and the pieces reserved with its label),
   * by host name then volume id, from RESERVEs sent, offers and GET_AGENTS; reported (`volume-reservations`)
   * so that the host manager keeps an idle volume's reservation for its own task.
   */
  readonly #reservations = new Map<string, Map<string, Resources>>();
  /** The last `volume-reservations` of each host, so only changes go out. */
  readonly #reservationsSent = new ReservationReports();
  /** Acknowledgements not sent yet, from `#acksFrom` on. */
  #acks: Ack[] = [];
  #acksFrom = 0;
  #acksInFlight = 0;
  #sink?: (events: BackendEvent[]) => void;
  #events: BackendEvent[] = [];
  #flushTimer?: ReturnType<typeof setTimeout>;
  #reconcileTimer?: ReturnType<typeof setTimeout>;
  #pruneTimer?: ReturnType<typeof setInterval>;
  #stopped = false;

  constructor(options: MesosBackendOptions) {
    this.#o = options;
    this.#httpTimeoutMs = options.httpTimeoutMs ?? 30_000;
    const extra = options.client ?? {};
    this.client = new SchedulerClient({
      ...extra,
      masterUrl: options.masterUrl,
      framework: options.framework,
      idStore: options.idStore,
      credentials: options.credentials,
      log: options.log,
      onEvent: (e) => {
        extra.onEvent?.(e);
        this.#onEvent(e);
      },
      onDisconnected: (reason) => {
        extra.onDisconnected?.(reason);
        // The master discards outstanding offers and inverse offers on re-subscription, without RESCIND
        // events: answering an old inverse offer would answer nothing.
        this.#offers.clear();
        this.#inverse.clear();
        for (const agentId of this.#agents.keys()) this.#reportSlack(agentId);
      },
      onFatal: (message) => {
        extra.onFatal?.(message);
        this.#stoppedByMaster(message);
      },
      onFrameworkRemoved: (message, frameworkId) => {
        extra.onFrameworkRemoved?.(message, frameworkId);
        this.#frameworkRemoved(message, frameworkId);
      },
    });
    const f = this.client.framework;
    this.#role = f.roles?.[0] ?? f.role ?? "*";
    // Mesos holds a reservation's principal to the framework's authenticated one; Peloton's was `peloton`.
    this.#reserver = {
      role: this.#role,
      principal: options.credentials?.principal ?? f.principal ?? "peloton",
    };
    this.#pending = new LaunchQueue(options.launchTimeoutMs ?? 60_000, (spec) => this.#expired(spec));
    this.#directory = new AgentDirectory({
      masterUrl: () => this.client.masterUrl,
      role: this.#role,
      credentials: options.credentials,
      warn: (w, e) => this.#warn(w, e),
      refused: (e) =>
        this.#o.log?.(
          `mesos: ERROR: GET_AGENTS: ${e.message}. Until it is fixed, hosts have no IP (so maintenance is not ` +
            "carried to the master), their totals come from offers, and task logs cannot be read",
        ),
      timeoutMs: this.#httpTimeoutMs,
    });
  }

  start(sink: (events: BackendEvent[]) => void): void {
    if (this.#sink) throw new Error("Cannot start the Mesos backend: it was already started");
    this.#sink = sink;
    this.client.start();
    const holdMs = this.#o.offerHoldMs ?? 300_000;
    this.#pruneTimer = setInterval(
      () => this.#declineHeld(holdMs),
      Math.min(60_000, Math.max(20, holdMs / 2)),
    );
  }

  launch(specs: LaunchSpec[]): void {
    if (this.#stopped) throw new Error("Cannot launch tasks: the Mesos backend is stopped");
    const fatal = this.fatalError();
    if (fatal) {
      // No offer can ever come: the client has stopped for good.
      const message = `Cannot launch: the Mesos master stopped this scheduler: ${fatal}`;
      for (const spec of specs) this.#status(spec, "TASK_DROPPED", "REASON_INVALID_OFFERS", message);
      return;
    }
    for (const spec of specs) {
      const secret = secretsProblem(spec.secrets);
      const executor = executorProblem(spec.executor);
      if (secret) {
        this.#status(spec, "TASK_ERROR", "REASON_TASK_INVALID", `Task has an invalid secret: ${secret}`);
      } else if (executor) {
        this.#status(spec, "TASK_ERROR", "REASON_TASK_INVALID", `Task has an invalid executor: ${executor}`);
      } else this.#pending.add(spec);
    }
    for (const agentId of new Set(specs.map((s) => s.agentId))) this.#tryLaunch(agentId);
  }

  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void {
    if (this.#stopped) return;
    for (const t of tasks) {
      const pending = this.#pending.take(t.taskId);
      if (pending) {
        this.#status(
          pending,
          "TASK_KILLED",
          "REASON_TASK_KILLED_DURING_LAUNCH",
          "Killed before any offer was used",
        );
      } else this.#sendKill(t);
    }
  }

  /**
   * DESTROY then UNRESERVE of each deleted volume, once an offer from its agent carries it (a volume in use is
   * not offered): they wait until then, across re-subscriptions. Its data is gone from the agent after.
   */
  destroyVolumes(volumes: VolumeRef[]): void {
    if (this.#stopped) return;
    for (const v of volumes) this.#destroys.set(v.volumeId, v);
    for (const agentId of this.#offers.byAgent().keys()) this.#tryDestroy(agentId);
  }

  reconcile(taskIds?: string[]): void {
    if (this.#stopped) return;
    if (!taskIds || taskIds.length === 0) {
      if (this.client.subscribed) this.client.reconcile([]).catch((e) => this.#warn("implicit RECONCILE", e));
      return;
    }
    // Tasks recovered from the store become known, so every (re)subscription reconciles them again.
    for (const id of taskIds) if (!this.#tasks.has(id)) this.#tasks.set(id, { hostname: "" });
    if (this.client.subscribed) {
      this.#reconcileTasks(taskIds).catch((e) => this.#warn("explicit RECONCILE", e));
    }
  }

  /**
   * ACKNOWLEDGE, only when the host manager says the update was processed; never before. The v1 API takes
   * one update per call, so a burst (the host manager releases a whole store commit's worth at once) goes
   * out through a few calls at a time on kept-alive connections rather than thousands of requests at once,
   * which flooded both processes' event loops and the master.
   */
  acknowledge(acks: Ack[]): void {
    if (this.#stopped || !this.client.subscribed) return; // the agent resends unacknowledged updates
    for (const a of acks) this.#acks.push(a);
    this.#sendAcks();
  }

  #sendAcks(): void {
    if (this.#stopped || !this.client.subscribed) {
      // Resent by the agents after the next subscription, and acknowledged then.
      this.#acks = [];
      this.#acksFrom = 0;
      return;
    }
    const max = this.#o.maxAcksInFlight ?? 32;
    while (this.#acksInFlight < max && this.#acksFrom < this.#acks.length) {
      const a = this.#acks[this.#acksFrom++];
      this.#acksInFlight++;
      this.client.acknowledge(a.agentId, a.taskId, a.uuid)
        .catch((e) => this.#warn("ACKNOWLEDGE", e))
        .finally(() => {
          this.#acksInFlight--;
          this.#sendAcks();
        });
    }
    if (this.#acksFrom === this.#acks.length) {
      this.#acks = [];
      this.#acksFrom = 0;
    } else if (this.#acksFrom > 4096) {
      this.#acks = this.#acks.slice(this.#acksFrom);
      this.#acksFrom = 0;
    }
  }

  /** Closes the event stream; tasks keep running (no TEARDOWN) and the next start reconciles them. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#reconcileTimer);
    clearInterval(this.#pruneTimer);
    this.#pending.clear();
    await this.client.stop();
    clearTimeout(this.#flushTimer);
    this.#flush();
  }

  /**
   * The ERROR that stopped the scheduler for good (another instance took the framework over, or the master
   * refused its FrameworkInfo), if one did: it has no host then, and launches nothing, until it is restarted.
   * A removed framework is not such an error: the backend subscribes anew as a new framework.
   */
  fatalError(): string | undefined {
    return this.client.fatal;
  }

  /** Outstanding inverse offers (machines scheduled for maintenance that run our tasks). */
  inverseOffers(): InverseOffer[] {
    return [...this.#inverse.values()];
  }

  /** Ids of the outstanding inverse offers for a host. */
  inverseOffersOn(hostname: string): string[] {
    return [...this.#inverse.values()]
      .filter((io) => io.agent_id && this.#agents.get(io.agent_id.value)?.hostname === hostname)
      .map((io) => io.id.value);
  }

  async acceptInverseOffers(ids: string[]): Promise<void> {
    await this.client.acceptInverseOffers(ids);
    for (const id of ids) this.#inverse.delete(id);
  }

  async declineInverseOffers(ids: string[], refuseSeconds?: number): Promise<void> {
    await this.client.declineInverseOffers(
      ids,
      refuseSeconds === undefined ? undefined : { refuse_seconds: refuseSeconds },
    );
    for (const id of ids) this.#inverse.delete(id);
  }

  /** Calls the master's operator API (`/api/v1`) and returns its JSON answer (none for 202). */
  async operator<T = Record<string, unknown>>(call: Record<string, unknown>): Promise<T | undefined> {
    const res = await fetch(`${this.client.masterUrl}${OPERATOR_PATH}`, {
      method: "POST",
      headers: {
        "content-type": CONTENT_TYPE_JSON,
        accept: CONTENT_TYPE_JSON,
        ...authorization(this.#o.credentials),
      },
      body: JSON.stringify(call),
      signal: AbortSignal.timeout(this.#httpTimeoutMs),
    });
    const text = await res.text();
    if (!res.ok) {
      const refused = authRefusal(res.status, text, this.#o.credentials, "the master");
      throw new Error(`${call.type}: ${refused?.message ?? `HTTP ${res.status} ${text.trim()}`}`);
    }
    return text ? JSON.parse(text) : undefined;
  }

  /**
   * The machine a host is, as maintenance calls name it: its host name and the IP its agent announced, from
   * the operator API. Undefined while that IP is not known: Mesos matches both, so a machine named by its
   * host name alone is no agent's, and scheduling it would drain nothing.
   */
  async machineOf(hostname: string): Promise<MachineID | undefined> {
    let agent = this.#directory.byHostname(hostname);
    if (!agent) {
      await this.#directory.refresh();
      agent = this.#directory.byHostname(hostname);
    }
    const address = agent && agentAddress(agent);
    const ip = address?.split(":")[0];
    return ip && /^[0-9.]+$/.test(ip) ? { hostname, ip } : undefined;
  }

  /** Offers held per agent, for diagnostics and tests. */
  heldOffers(): Map<string, string[]> {
    return this.#offers.byAgent();
  }

  /** A task's sandbox file, fetched from its agent's `/files/download` (the agent address from GET_AGENTS). */
  async logs(taskId: string, file: "stdout" | "stderr", hint?: string): Promise<string | undefined> {
    const agentId = this.#tasks.get(taskId)?.agentId ?? this.#recent.get(taskId) ?? hint;
    const frameworkId = this.client.frameworkId;
    if (!agentId || !frameworkId) return undefined;
    await this.#directory.refresh();
    // A command task's sandbox is its executor's, named by the task id; a custom executor has Peloton's id.
    return await this.#directory.readSandbox(agentId, frameworkId, taskId, file) ??
      await this.#directory.readSandbox(agentId, frameworkId, customExecutorId(taskId), file);
  }

  #onEvent(e: Event): void {
    if (this.#stopped) return;
    switch (e.type) {
      case "SUBSCRIBED":
        return this.#onSubscribed();
      case "OFFERS":
        return this.#onOffers(e.offers.offers);
      case "RESCIND": {
        const agentId = this.#offers.remove(e.rescind.offer_id.value);
        if (agentId) this.#reportSlack(agentId);
        return;
      }
      case "UPDATE":
        return this.#onUpdate(e.update.status);
      case "INVERSE_OFFERS":
        return this.#onInverseOffers(e.inverse_offers.inverse_offers);
      case "RESCIND_INVERSE_OFFER": {
        const id = e.rescind_inverse_offer.inverse_offer_id.value;
        this.#inverse.delete(id);
        this.#o.onMaintenance?.({ kind: "inverse-offer-rescinded", id });
        return;
      }
      case "FAILURE":
        // Without an executor id, FAILURE means the agent was removed.
        if (e.failure.agent_id && !e.failure.executor_id) {
          this.#agentLost(e.failure.agent_id.value, "agent removed (FAILURE)");
        }
        return;
      case "MESSAGE":
      case "ERROR":
      case "HEARTBEAT":
      case "UPDATE_OPERATION_STATUS":
        return;
    }
  }

  /** DECLINEs, with a filter, the offers held past the hold time by agents that no launch waits for. */
  #declineHeld(holdMs: number): void {
    if (!this.client.subscribed) return;
    const ids = this.#offers.heldSince(Date.now() - holdMs, (agentId) => this.#pending.has(agentId));
    if (!ids.length) return;
    const agents = new Set<string>();
    for (const id of ids) {
      const agentId = this.#offers.remove(id);
      if (agentId) agents.add(agentId);
    }
    for (const agentId of agents) this.#reportSlack(agentId);
    const filters = { refuse_seconds: this.#o.declineRefuseSeconds ?? 5 };
    this.client.decline(ids, filters).catch((e) => this.#warn("DECLINE", e));
  }

  #onSubscribed(): void {
    this.#offers.clear();
    this.#inverse.clear();
    this.#sought.clear();
    // Offers name only agents with something free: a full agent (every resource used by our tasks) would
    // never be announced to a new leader. The master's agent list names every registered one.
    if (this.#o.useOperatorApi !== false) {
      void this.#directory.refresh().then(() => this.#announceRegistered());
    }
    const kills = this.#kills;
    this.#kills = [];
    for (const k of kills) this.#sendKill(k);
    // Master-generated updates sent while we were away are lost: ask again about every task we know.
    this.#reconcileTasks([...this.#tasks.keys()]).catch((e) => this.#warn("explicit RECONCILE", e));
    if (this.#reconcileTimer === undefined) this.#scheduleImplicit();
  }

  #scheduleImplicit(): void {
    this.#reconcileTimer = setTimeout(() => {
      if (this.client.subscribed) this.client.reconcile([]).catch((e) => this.#warn("implicit RECONCILE", e));
      this.#scheduleImplicit();
    }, this.#o.implicitReconcileIntervalMs ?? 1_800_000);
  }

  async #reconcileTasks(ids: string[]): Promise<void> {
    const size = this.#o.explicitReconcileBatchSize ?? 1000;
    for (let i = 0; i < ids.length; i += size) {
      const batch = ids.slice(i, i + size).map((taskId) => ({
        taskId,
        agentId: this.#tasks.get(taskId)?.agentId,
      }));
      await this.client.reconcile(batch);
    }
  }

  #onOffers(offers: Offer[]): void {
    const agents = new Set<string>();
    for (const offer of offers) {
      this.#offers.add(offer);
      agents.add(offer.agent_id.value);
      for (const r of offer.resources) {
        const id = persistenceId(r);
        if (id !== undefined && reservedFor(r) === this.#role) this.#volumes.set(id, offer.hostname);
      }
    }
    for (const agentId of agents) {
      this.#reportFound(
        agentId,
        offers.find((o) => o.agent_id.value === agentId)!,
      );
    }
    for (const agentId of agents) {
      const view = this.#agents.get(agentId);
      if (!view || view.lost) this.#announce(agentId);
      else {
        this.#seeReservations(view.hostname, this.#offers.total(agentId));
        this.#reportReservations(view.hostname);
        this.#reportSlack(agentId);
        this.#tryDestroy(agentId);
        this.#tryLaunch(agentId);
      }
    }
  }

  /** host-up for an agent seen for the first time (or back after being lost); `fresh` reads GET_AGENTS first. */
  #announce(agentId: string, fresh = false): void {
    if (this.#announcing.has(agentId)) return;
    if (
      this.#o.useOperatorApi === false || this.#directory.available === false ||
      (!fresh && this.#directory.get(agentId))
    ) {
      return this.#hostUp(agentId);
    }
    this.#announcing.add(agentId);
    this.#directory.refresh().finally(() => {
      this.#announcing.delete(agentId);
      this.#hostUp(agentId);
    });
  }

  /**
   * host-up for every active agent of the master's list not announced yet, offered or not (its resources may
   * all be used by our tasks), as a new leader must know every host its tasks run on.
   */
  #announceRegistered(): void {
    if (this.#stopped || !this.client.subscribed) return;
    for (const agent of this.#directory.agents()) {
      const id = agent.agent_info.id!.value;
      const view = this.#agents.get(id);
      if ((!view || view.lost) && !this.#announcing.has(id)) this.#hostUp(id);
      else if (view && !view.lost) {
        // Announced from its offers before the list came: its volumes in use are in the list only.
        this.#seeReservations(view.hostname, this.#directory.total(id)!);
        this.#reportReservations(view.hostname);
      }
    }
  }

  /**
   * A task of ours runs on an agent not announced (a full one back from a partition, say): the master's list
   * is read again for it, once per agent and subscription, so a host that never shows costs one call.
   */
  #seek(agentId: string): void {
    if (this.#o.useOperatorApi === false || this.#sought.has(agentId)) return;
    const view = this.#agents.get(agentId);
    if (view && !view.lost) return;
    this.#sought.add(agentId);
    this.#announce(agentId, true);
  }

  #hostUp(agentId: string): void {
    if (this.#stopped) return;
    const view = this.#agents.get(agentId);
    if (view && !view.lost) return; // announced already (by its offers, or by the master's list)
    const offers = this.#offers.of(agentId);
    const agent = this.#directory.get(agentId);
    // Known from its offers, or from the master's list when it is active there (offered or not).
    const listed = agent !== undefined && agent.active !== false;
    if (offers.length === 0 && !listed) return;
    const hostname = listed ? agent.agent_info.hostname : offers[0].offer.hostname;
    let total = this.#directory.total(agentId);
    if (!total) {
      // Without the operator API: what is offered plus what our own tasks there hold.
      total = this.#offers.total(agentId);
      for (const t of this.#tasks.values()) if (t.agentId === agentId && t.bag) total = addBags(total, t.bag);
    }
    // An agent of other roles' resources only, offered nothing, is no host of ours (as it never was).
    const core = capacityToCore(total, this.#role);
    if (offers.length === 0 && core.cpuMilli <= 0 && core.memMb <= 0) return;
    const attributes = agent?.agent_info.attributes ?? offers[0].offer.attributes;
    // The host's agent under a new id (a machine rebooted, or back from maintenance): launches still waiting
    // for the old agent's offers would wait out their deadline for an agent that is gone. They fail now, and
    // the job manager places them again.
    for (const [old, view] of this.#agents) {
      if (old === agentId || view.hostname !== hostname) continue;
      for (const spec of this.#pending.takeAgent(old)) {
        const message = `Agent ${old} of ${hostname} registered again as ${agentId}: the launch was ` +
          "for the old agent";
        this.#status(spec, "TASK_DROPPED", "REASON_INVALID_OFFERS", message);
      }
    }
    this.#agents.set(agentId, { hostname, lost: false, slack: NO_SLACK });
    const ip = agent && agentAddress(agent)?.split(":")[0];
    this.#push({
      kind: "host-up",
      host: {
        hostname,
        agentId,
        resources: core,
        attributes: attributesToRecord(attributes),
        portRanges: rangesOf(total, "ports"),
        ...(ip && /^[0-9.]+$/.test(ip) ? { ip } : {}),
      },
    });
    this.#reportSlack(agentId);
    this.#seeReservations(hostname, total);
    this.#reservationsSent.forget(hostname); // a host the host manager may know nothing of yet
    this.#reportReservations(hostname);
    this.#tryDestroy(agentId);
    this.#tryLaunch(agentId);
  }

  /**
   * Takes in the volumes' reservations a bag of the host shows (an agent's total, or its offers, which carry
   * those of idle volumes). A reservation never grows once made, so the largest seen is its size; one this
   * backend destroyed is gone, whatever a stale agent list says.
   */
  #seeReservations(hostname: string, bag: Bag): void {
    const seen = volumeReservations(bag, this.#role);
    if (!seen.size) return;
    let known = this.#reservations.get(hostname);
    if (!known) this.#reservations.set(hostname, known = new Map());
    for (const [volumeId, r] of seen) {
      if (this.#destroyed.has(volumeId)) continue;
      const was = known.get(volumeId);
      known.set(volumeId, was ? max(was, r) : r);
    }
  }

  #forgetReservation(hostname: string, volumeId: string): void {
    const known = this.#reservations.get(hostname);
    if (!known?.delete(volumeId)) return;
    if (!known.size) this.#reservations.delete(hostname);
    this.#reportReservations(hostname);
  }

  /** `volume-reservations` for a host the host manager knows, when they changed since the last report. */
  #reportReservations(hostname: string): void {
    if (![...this.#agents.values()].some((v) => v.hostname === hostname && !v.lost)) return;
    const event = this.#reservationsSent.next(hostname, this.#reservations.get(hostname));
    if (event) this.#push(event);
  }

  /** Launches the pending tasks of an agent that its held offers cover, all in one ACCEPT (as Peloton did). */
  #tryLaunch(agentId: string): void {
    if (!this.#pending.has(agentId) || !this.client.subscribed || !this.#agents.has(agentId)) return;
    const offers = this.#offers.of(agentId);
    if (offers.length === 0) return;
    const chosen = this.#pending.takeFitting(agentId, this.#offers.total(agentId), this.#fit);
    if (chosen.length === 0) return;
    for (const o of offers) this.#offers.remove(o.offer.id.value);
    for (const { spec, used, operations } of chosen) {
      if (spec.volume) this.#volumes.set(spec.volume.volumeId, spec.hostname);
      if (spec.volume && operations?.some((o) => o.type === "CREATE")) this.#made.add(spec.volume.volumeId);
      for (const o of operations ?? []) {
        if (o.type === "RESERVE") this.#seeReservations(spec.hostname, bagFromMesos(o.reserve!.resources));
      }
      if (operations?.length) this.#reportReservations(spec.hostname);
      this.#tasks.set(spec.taskId, { agentId, hostname: spec.hostname, bag: used });
      this.#remember(spec.taskId, agentId);
      // Reported as the ACCEPT goes out, not after its 202: the agent's TASK_STARTING can overtake the
      // 202 on a busy machine, and STAGING must not follow STARTING (nor be skipped because of it).
      this.#status(spec, "TASK_STAGING", undefined, "Launched with offers");
    }
    // Each piece as offered: reserved for our role or not, with the offer's allocation_info.
    const launch = { task_infos: chosen.map((c) => toTaskInfo(c.spec, bagToMesos(c.used))) };
    const filters = { refuse_seconds: this.#o.acceptRefuseSeconds ?? 0 };
    const offerIds = offers.map((o) => o.offer.id.value);
    // A stateful task's first run: its RESERVE and CREATE go first, in the same ACCEPT (as Peloton's).
    const operations: Operation[] = [...chosen.flatMap((c) => c.operations ?? []), {
      type: "LAUNCH",
      launch,
    }];
    this.client.accept(offerIds, operations, filters)
      .catch((e) => this.#acceptFailed(offerIds, chosen, e));
  }

  /** How a launch fits in an agent's offers: on its persistent volume, made first when it is not there yet. */
  readonly #fit: Fit = (avail, spec) => {
    if (!spec.volume) return takeForTask(avail, spec);
    return planVolumeLaunch(avail, spec, this.#reserver, this.#volumeExists(spec.volume.volumeId));
  };

  /**
   * Whether the volume exists, offered or not (its last run may still hold it), on any host: a persistence id
   * known to exist is never CREATEd again, so one id never names two volumes (a launch on another host than
   * the volume's waits, and is dropped at its deadline).
   */
  #volumeExists(volumeId: string): boolean {
    if (this.#volumes.has(volumeId)) return true;
    if (this.#destroyed.has(volumeId)) return false;
    return this.#directory.hasVolume(volumeId);
  }

  /** DESTROY + UNRESERVE of the deleted volumes an agent's held offers carry, in one ACCEPT of them all. */
  #tryDestroy(agentId: string): void {
    if (this.#destroys.size === 0 || !this.client.subscribed) return;
    const offers = this.#offers.of(agentId);
    if (offers.length === 0) return;
    const hostname = this.#agents.get(agentId)?.hostname;
    const avail = this.#offers.total(agentId);
    const operations: Operation[] = [];
    const done: string[] = [], released: string[] = [];
    for (const v of this.#destroys.values()) {
      if (v.agentId !== agentId && v.hostname !== hostname) continue;
      const ops = planDestroy(avail, v.volumeId, this.#role);
      if (ops) {
        operations.push(...ops);
        done.push(v.volumeId);
      } else if (!this.#volumes.has(v.volumeId) && !this.#directory.hasVolume(v.volumeId)) {
        // Reservations labelled for a volume that was never made (its CREATE dropped): released. The destroy
        // stays pending, in case the volume shows after all.
        const unreserve = planUnreserve(avail, v.volumeId, this.#role);
        if (unreserve) {
          operations.push(...unreserve);
          released.push(v.volumeId);
        }
      }
    }
    if (operations.length === 0) return;
    for (const o of offers) this.#offers.remove(o.offer.id.value);
    const offerIds = offers.map((o) => o.offer.id.value);
    for (const id of done) {
      this.#destroys.delete(id);
      this.#volumes.delete(id);
      this.#destroyed.add(id);
    }
    for (const id of [...done, ...released]) if (hostname) this.#forgetReservation(hostname, id);
    this.#o.log?.(`mesos: destroying volume(s) ${done.join(", ")} on agent ${agentId} (DESTROY + UNRESERVE)`);
    this.client.accept(offerIds, operations, { refuse_seconds: 0 }).catch((e) => {
      this.#warn("ACCEPT (DESTROY)", e);
      // Not processed: the destroys wait for the next offer carrying their volumes.
      for (const id of done) {
        const v = { volumeId: id, agentId, hostname: hostname ?? "" };
        this.#destroys.set(id, v);
        this.#destroyed.delete(id);
      }
      if (e instanceof MesosCallError && this.client.subscribed) {
        this.client.decline(offerIds, { refuse_seconds: 0 }).catch((err) => this.#warn("DECLINE", err));
      }
    });
  }

  /**
   * Reports the role's volumes (and volume-labelled reservations) an agent's offers carry that this run did not
   * make nor was asked to destroy: pending destroys live in memory, so after a restart only the store can say
   * whether a volume was deleted. The host manager asks it, and destroys those it does not know.
   */
  #reportFound(agentId: string, offer: Offer): void {
    const ids = volumeIdsOffered(this.#offers.total(agentId), this.#role).filter((id) =>
      !this.#made.has(id) && !this.#found.has(id) && !this.#destroys.has(id) && !this.#destroyed.has(id)
    );
    if (!ids.length) return;
    for (const id of ids) this.#found.add(id);
    this.#push({ kind: "volumes-found", hostname: offer.hostname, agentId, volumeIds: ids });
  }

  #acceptFailed(offerIds: string[], chosen: FittingLaunch[], e: unknown): void {
    this.#warn("ACCEPT", e);
    if (this.#stopped) return;
    if (e instanceof MesosCallError || e instanceof NotSubscribedError) {
      // Refused before processing: the offers are still ours at the master, so they go back at once, as
      // Peloton declines them when the call fails (those of a lost subscription went with it).
      if (this.client.subscribed) {
        this.client.decline(offerIds, { refuse_seconds: 0 }).catch((err) => this.#warn("DECLINE", err));
      }
      for (const { spec } of chosen) this.#tasks.delete(spec.taskId);
      // A CREATE refused with its call made no volume.
      for (const { spec, operations } of chosen) {
        if (operations && spec.volume) {
          this.#volumes.delete(spec.volume.volumeId);
          this.#forgetReservation(spec.hostname, spec.volume.volumeId);
        }
      }
      // A call the master finds invalid would be refused again: a task refused alone fails, and the tasks
      // of a refused batch are retried one per ACCEPT to find which.
      const invalid = e instanceof MesosCallError && e.status === 400 &&
        !isSubscriptionRefusal(e.status, e.body);
      for (const { spec, deadlineMs } of chosen) {
        if (invalid && chosen.length === 1) {
          this.#status(spec, "TASK_ERROR", "REASON_TASK_INVALID", `Mesos refused the launch: ${e.message}`);
        } else this.#pending.add(spec, deadlineMs, invalid);
      }
      return;
    }
    // The outcome is unknown (the connection broke): reconciliation tells whether the tasks exist.
    this.#reconcileTasks(chosen.map((c) => c.spec.taskId)).catch((err) =>
      this.#warn("explicit RECONCILE", err)
    );
  }

  #expired(spec: LaunchSpec): void {
    if (spec.volume && this.#volumes.get(spec.volume.volumeId) === spec.hostname) {
      // Never offered: its CREATE may have been dropped. The next launch asks the master's agent list again.
      this.#volumes.delete(spec.volume.volumeId);
      if (this.#o.useOperatorApi !== false) void this.#directory.refresh();
    }
    const waited = this.#pending.timeoutMs;
    const message = `No offer from agent ${spec.agentId} covered the task within ${waited} ms`;
    this.#status(spec, "TASK_DROPPED", "REASON_INVALID_OFFERS", message);
  }

  #sendKill(k: { taskId: string; agentId: string; gracePeriodMs: number }): void {
    if (!this.client.subscribed) {
      this.#kills.push(k);
      return;
    }
    const agentId = k.agentId || this.#tasks.get(k.taskId)?.agentId;
    this.client.kill(k.taskId, agentId, k.gracePeriodMs).catch((e) => {
      this.#warn("KILL", e);
      if (!this.#stopped) this.#kills.push(k); // sent again after the next SUBSCRIBED
    });
  }

  #onUpdate(s: TaskStatus): void {
    const id = s.task_id.value;
    const known = this.#tasks.get(id);
    const agentId = s.agent_id?.value ?? known?.agentId ?? "";
    const hostname = this.#agents.get(agentId)?.hostname || known?.hostname ||
      this.#directory.get(agentId)?.agent_info.hostname || "";
    if (isTerminalState(s.state)) {
      this.#tasks.delete(id);
      if (known?.bag && slackToCore(known.bag).cpuMilli > 0) this.#reportSlack(agentId);
    } else if (known) known.agentId ??= agentId || undefined;
    // A live task we did not know (implicit reconciliation after a lost store): keep asking about it.
    else this.#tasks.set(id, { agentId: agentId || undefined, hostname });
    if (agentId) this.#remember(id, agentId);
    this.#push({ kind: "task-status", status: toCoreStatus(s, hostname, agentId, Date.now()) });
    // A task that runs says its agent is registered, whether or not the agent has anything to offer.
    if (agentId && ALIVE.has(s.state)) this.#seek(agentId);
  }

  /** host-slack: the revocable resources offered on an agent plus those our revocable tasks hold there. */
  #reportSlack(agentId: string): void {
    const view = this.#agents.get(agentId);
    if (!view || view.lost) return;
    let bag = this.#offers.total(agentId);
    for (const t of this.#tasks.values()) if (t.agentId === agentId && t.bag) bag = addBags(bag, t.bag);
    const slack = slackToCore(bag);
    const key = JSON.stringify(slack);
    if (key === view.slack) return;
    view.slack = key;
    this.#push({ kind: "host-slack", hostname: view.hostname, slack });
  }

  #onInverseOffers(list: InverseOffer[]): void {
    for (const io of list) this.#inverse.set(io.id.value, io);
    this.#o.onMaintenance?.(toMaintenanceEvent(list, (agentId) => this.#agents.get(agentId)?.hostname));
  }

  #agentLost(agentId: string, reason: string): void {
    this.#offers.dropAgent(agentId);
    // The host manager answers the tasks it placed there with TASK_LOST; pending ones need no event.
    this.#pending.dropAgent(agentId);
    const view = this.#agents.get(agentId);
    if (!view || view.lost) return;
    view.lost = true;
    this.#push({ kind: "host-lost", hostname: view.hostname, agentId, reason });
  }

  /**
   * The master removed the framework (TEARDOWN, or its failover timeout passed): Mesos killed its every task
   * and the id can never subscribe again. Each task known here is reported gone, so that the job manager
   * runs it again; the client then subscribes as a new framework, whose offers the hosts take up again.
   * Launches still waiting for offers were never sent, and go with the new framework.
   */
  #frameworkRemoved(message: string, frameworkId: string | undefined): void {
    const tasks = [...this.#tasks];
    this.#o.log?.(
      `mesos: ERROR: the master removed framework ${frameworkId} (${message}), killing its tasks: ` +
        `${tasks.length} known here are reported TASK_GONE and run again; subscribing as a new framework`,
    );
    this.#tasks.clear();
    this.#kills = [];
    this.#acks = [];
    this.#acksFrom = 0;
    const now = Date.now();
    for (const [taskId, t] of tasks) {
      const agentId = t.agentId ?? "";
      this.#push({
        kind: "task-status",
        status: {
          taskId,
          state: "TASK_GONE",
          hostname: t.hostname || this.#agents.get(agentId)?.hostname || "",
          agentId,
          timeMs: now,
          reason: "REASON_FRAMEWORK_REMOVED",
          message: `The Mesos master removed framework ${frameworkId} (${message}) and killed its tasks`,
        },
      });
    }
  }

  /**
   * Any other ERROR stopped the client for good: no offer will come, so every host is lost (nothing is
   * placed on them, and their tasks say why), and launches fail at once, until the scheduler is restarted.
   */
  #stoppedByMaster(message: string): void {
    const reason = `the Mesos master stopped this scheduler (${message}); restart it`;
    this.#o.log?.(`mesos: ERROR: ${reason}: every host is unavailable until then`);
    for (const agentId of [...this.#agents.keys()]) this.#agentLost(agentId, reason);
    for (const spec of this.#pending.takeAll()) {
      this.#status(spec, "TASK_DROPPED", "REASON_INVALID_OFFERS", `Cannot launch: ${reason}`);
    }
  }

  /** A status the backend generates itself (no uuid: nothing to acknowledge). */
  #status(spec: LaunchSpec, state: MesosTaskState, reason: string | undefined, message: string): void {
    const status: CoreStatus = {
      taskId: spec.taskId,
      state,
      hostname: spec.hostname,
      agentId: spec.agentId,
      timeMs: Date.now(),
      message,
    };
    if (reason) status.reason = reason;
    this.#push({ kind: "task-status", status });
  }

  #remember(taskId: string, agentId: string): void {
    this.#recent.delete(taskId);
    this.#recent.set(taskId, agentId);
    if (this.#recent.size > RECENT_TASKS) this.#recent.delete(this.#recent.keys().next().value!);
  }

  #warn(what: string, e: unknown): void {
    this.#o.log?.(`mesos: ${what} failed: ${e instanceof Error ? e.message : e}`);
  }

  #push(event: BackendEvent): void {
    if (this.#stopped) return;
    this.#events.push(event);
    // Batched through a timer, which also keeps the sink out of launch/kill's call stack.
    this.#flushTimer ??= setTimeout(() => this.#flush(), 0);
  }

  #flush(): void {
    this.#flushTimer = undefined;
    if (!this.#sink || this.#events.length === 0) return;
    const batch = this.#events;
    this.#events = [];
    this.#sink(batch);
  }
}
