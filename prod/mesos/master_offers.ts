/** The emulator's allocator and ACCEPT handling: offers, decline filters, suppression, offer and task validation. */
import { isSafeId } from "../minicluster/agent.ts";
import type {
  Call,
  Filters,
  Offer,
  Operation,
  Resource,
  TaskInfo,
  TaskState,
  Unavailability,
} from "./protocol.ts";
import { applyOperation, isVolumeOperation, type OperationType, volumeIds } from "./master_volumes.ts";
import { containerProblem, executorInfoProblem } from "./master_validation.ts";
import {
  type AgentRec,
  type Framework,
  isPartitionAware,
  type MasterTask,
  type OfferRec,
} from "./master_types.ts";
import {
  addBags,
  type Bag,
  bagFromMesos,
  bagToMesos,
  cloneBag,
  describeBag,
  emptyBag,
  filterBag,
  isEmptyBag,
  reservedFor,
  scalarOf,
  subtractBags,
} from "./resources.ts";

/** Frameworks without REVOCABLE_RESOURCES are never offered revocable resources. */
export function withoutRevocable(bag: Bag): Bag {
  return filterBag(bag, (kind) => kind.revocable === undefined);
}

/**
 * What a framework may be offered of an agent's free resources: unreserved ones and those reserved for its
 * role (never another role's), revocable ones only with REVOCABLE_RESOURCES.
 */
function offerable(bag: Bag, fw: Framework): Bag {
  const revocable = fw.capabilities.has("REVOCABLE_RESOURCES");
  return filterBag(bag, (kind) => {
    const owner = reservedFor(kind);
    return (owner === undefined || owner === fw.role) && (revocable || kind.revocable === undefined);
  });
}

function invalidResource(resources: Resource[]): Resource | undefined {
  return resources.find((r) =>
    (r.type === "SCALAR" && !(Number(r.scalar?.value) >= 0)) ||
    (r.type === "RANGES" && (r.ranges?.range ?? []).some((x) => x.begin > x.end))
  );
}

/** The master fills in the framework id of a LAUNCH's executor (`Master::accept`); the call is not changed. */
function withFrameworkId(info: TaskInfo, frameworkId: string): TaskInfo {
  if (!info.executor || info.executor.framework_id) return info;
  return { ...info, executor: { ...info.executor, framework_id: { value: frameworkId } } };
}

/** What the allocator needs from the master. */
export interface AllocatorHost {
  frameworks(): Iterable<Framework>;
  agents(): Iterable<AgentRec>;
  masterId(): string;
  /** Tasks still holding resources on an agent, of every framework. */
  tasksOn(agentId: string): MasterTask[];
  send(fw: Framework, event: Parameters<NonNullable<Framework["sub"]>["send"]>[0]): void;
  unavailability(agentId: string): Unavailability | undefined;
  launch(fw: Framework, rec: AgentRec, info: TaskInfo, bag: Bag): void;
  masterUpdate(
    fw: Framework,
    taskId: string,
    agentId: string | undefined,
    state: TaskState,
    reason: string,
    message: string,
  ): void;
  /** Hook after each allocation round (inverse offers for draining agents). */
  afterAllocation(): void;
  log?: (line: string) => void;
}

export interface AllocatorOptions {
  allocationIntervalMs: number;
  /** Rescind offers outstanding longer than this (`--offer_timeout`; unset by default). */
  offerTimeoutMs?: number;
  now: () => number;
}

// Mesos's MIN_CPUS and MIN_MEM: smaller leftovers are not worth an offer.
const MIN_CPUS_MILLI = 10;
const MIN_MEM_MILLI = 32_000;
const DEFAULT_REFUSE_SECONDS = 5;

export class Allocator {
  readonly offers = new Map<string, OfferRec>();
  readonly #host: AllocatorHost;
  readonly #o: AllocatorOptions;
  #seq = 0;
  #timer?: ReturnType<typeof setTimeout>;
  readonly #filterTimers = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;
  /** Fault hook: rescind an offer of the next ACCEPT just before it is processed. */
  rescindOnNextAccept = false;
  /** The latest operations dropped as invalid (the master only logs them), newest last, for tests. */
  readonly dropped: { type: string; message: string }[] = [];

  constructor(host: AllocatorHost, options: AllocatorOptions) {
    this.#host = host;
    this.#o = options;
  }

  /** Runs an allocation round soon; repeated requests share one round. */
  schedule(delayMs = this.#o.allocationIntervalMs): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.allocate();
    }, delayMs);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const t of this.#filterTimers) clearTimeout(t);
    for (const o of this.offers.values()) clearTimeout(o.timer);
    this.offers.clear();
  }

  /** Free resources of an agent: total − tasks holding resources − outstanding offers. */
  available(rec: AgentRec): Bag {
    let bag = cloneBag(rec.agent.total);
    const used = [
      ...this.#host.tasksOn(rec.agent.id).map((t) => t.bag),
      ...this.offersOn(rec.agent.id).map((o) => o.bag),
    ];
    for (const b of used) bag = subtractBags(bag, b) ?? emptyBag();
    return bag;
  }

  offersOn(agentId: string): OfferRec[] {
    return [...this.offers.values()].filter((o) => o.agentId === agentId);
  }

  allocate(): void {
    if (this.#stopped) return;
    const now = this.#o.now();
    for (const fw of this.#host.frameworks()) {
      if (!fw.sub || fw.suppressed.has(fw.role)) continue;
      const made: Offer[] = [];
      for (const rec of this.#host.agents()) {
        if (rec.state !== "active") continue;
        const bag = offerable(this.available(rec), fw);
        if (!fw.capabilities.has("GPU_RESOURCES") && scalarOf(rec.agent.config.resources, "gpus") > 0) {
          continue;
        }
        if ((fw.filters.get(rec.agent.id) ?? 0) > now) continue;
        if (scalarOf(bag, "cpus") < MIN_CPUS_MILLI && scalarOf(bag, "mem") < MIN_MEM_MILLI) continue;
        made.push(this.#offer(fw, rec, bag));
      }
      if (made.length) this.#host.send(fw, { type: "OFFERS", offers: { offers: made } });
    }
    this.#host.afterAllocation();
  }

  #offer(fw: Framework, rec: AgentRec, bag: Bag): Offer {
    const id = `${this.#host.masterId()}-O${this.#seq++}`;
    const multiRole = fw.capabilities.has("MULTI_ROLE");
    const offer: Offer = {
      id: { value: id },
      framework_id: { value: fw.id },
      agent_id: { value: rec.agent.id },
      hostname: rec.agent.config.hostname,
      // Frameworks without MULTI_ROLE get offers without allocation_info (MESOS-8237).
      ...(multiRole ? { allocation_info: { role: fw.role } } : {}),
      // Reservations in the pre-refinement format (`role`) unless the framework has RESERVATION_REFINEMENT.
      resources: bagToMesos(bag, {
        refinement: fw.capabilities.has("RESERVATION_REFINEMENT"),
        allocationRole: multiRole ? fw.role : undefined,
      }),
      attributes: rec.agent.config.attributes,
    };
    const unavailability = this.#host.unavailability(rec.agent.id);
    if (unavailability) offer.unavailability = unavailability;
    const stored: OfferRec = { id, frameworkId: fw.id, agentId: rec.agent.id, bag, role: fw.role };
    if (this.#o.offerTimeoutMs !== undefined) {
      stored.timer = setTimeout(() => this.rescind(id), this.#o.offerTimeoutMs);
    }
    this.offers.set(id, stored);
    return offer;
  }

  /** Removes an offer and tells its framework (agent removed, timeout, maintenance, fault injection). */
  rescind(offerId: string): void {
    const offer = this.#remove(offerId);
    if (!offer) return;
    const fw = [...this.#host.frameworks()].find((f) => f.id === offer.frameworkId);
    if (fw) this.#host.send(fw, { type: "RESCIND", rescind: { offer_id: { value: offerId } } });
    this.schedule();
  }

  rescindAgent(agentId: string): void {
    for (const o of this.offersOn(agentId)) this.rescind(o.id);
  }

  /** Drops a framework's offers without RESCIND events (re-subscription, disconnection). */
  discard(frameworkId: string): void {
    for (const o of [...this.offers.values()]) if (o.frameworkId === frameworkId) this.#remove(o.id);
    this.schedule();
  }

  decline(fw: Framework, offerIds: string[], filters?: Filters): void {
    for (const id of offerIds) {
      const offer = this.offers.get(id);
      if (!offer || offer.frameworkId !== fw.id) continue;
      this.#remove(id);
      this.#filter(fw, offer.agentId, filters);
    }
    this.schedule();
  }

  /** REVIVE: clears decline filters and unsuppresses the roles (all when none are named). */
  revive(fw: Framework, roles: string[] | undefined): void {
    fw.filters.clear();
    for (const r of roles?.length ? roles : [...fw.suppressed, fw.role]) fw.suppressed.delete(r);
    this.schedule(0);
  }

  suppress(fw: Framework, roles: string[] | undefined): void {
    for (const r of roles?.length ? roles : [fw.role]) fw.suppressed.add(r);
  }

  accept(fw: Framework, accept: Extract<Call, { type: "ACCEPT" }>["accept"]): void {
    const offerIds = (accept.offer_ids ?? []).map((o) => o.value);
    if (this.rescindOnNextAccept && offerIds.length > 0) {
      this.rescindOnNextAccept = false;
      this.rescind(offerIds[0]);
    }
    const tasks = (accept.operations ?? []).flatMap((op) =>
      op.type === "LAUNCH" ? op.launch?.task_infos ?? [] : []
    );
    const invalid = this.#validateOffers(fw, offerIds);
    if (invalid) {
      // Valid offers in the call go back to the pool; every task is answered by the master.
      for (const id of offerIds) if (this.offers.get(id)?.frameworkId === fw.id) this.#remove(id);
      const state = isPartitionAware(fw) ? "TASK_DROPPED" : "TASK_LOST";
      for (const t of tasks) {
        this.#host.masterUpdate(
          fw,
          t.task_id.value,
          t.agent_id?.value,
          state,
          "REASON_INVALID_OFFERS",
          `Task launched with invalid offers: ${invalid}`,
        );
      }
      this.schedule();
      return;
    }
    const offers = offerIds.map((id) => this.#remove(id)!);
    const agentId = offers[0].agentId;
    const role = offers[0].role;
    const rec = [...this.#host.agents()].find((a) => a.agent.id === agentId)!;
    let pool = offers.reduce((b, o) => addBags(b, o.bag), emptyBag());
    for (const op of accept.operations ?? []) {
      if (isVolumeOperation(op)) {
        pool = this.#applyOperation(fw, rec, op, pool, role);
        continue;
      }
      const infos = op.type === "LAUNCH" ? op.launch?.task_infos ?? [] : [];
      if (op.type === "LAUNCH_GROUP") {
        for (
          const t of ((op.launch_group as { task_group?: { tasks?: TaskInfo[] } })?.task_group?.tasks ?? [])
        ) {
          this.#host.masterUpdate(
            fw,
            t.task_id.value,
            agentId,
            "TASK_ERROR",
            "REASON_TASK_GROUP_INVALID",
            "LAUNCH_GROUP is not supported by this emulator",
          );
        }
      }
      for (const given of infos) {
        const info = withFrameworkId(given, fw.id);
        // What the task holds while it runs: its resources and its executor's, allocated to the offers'
        // role where they do not say (the master's `injectAllocationInfo`).
        const resources = [...info.resources ?? [], ...info.executor?.resources ?? []]
          .map((r) => r.allocation_info ? r : { ...r, allocation_info: { role } });
        const bag = bagFromMesos(resources);
        const problem = this.#validateTask(fw, info, agentId, bag, pool, role);
        if (problem) {
          const message = `Task ${info.task_id?.value} is invalid: ${problem}`;
          this.#host.masterUpdate(
            fw,
            info.task_id?.value ?? "",
            agentId,
            "TASK_ERROR",
            "REASON_TASK_INVALID",
            message,
          );
          continue;
        }
        pool = subtractBags(pool, bag)!;
        this.#host.launch(fw, rec, info, bag);
      }
    }
    // What the operations did not use is declined with the call's filter (5 s by default).
    if (!isEmptyBag(pool)) this.#filter(fw, agentId, accept.filters);
    this.schedule();
  }

  /**
   * RESERVE, UNRESERVE, CREATE or DESTROY: applied to the pool and the agent's checkpointed total, or dropped
   * with the master's message. CREATE makes the volume's directory on the agent, DESTROY removes it.
   */
  #applyOperation(
    fw: Framework,
    rec: AgentRec,
    op: Operation & { type: OperationType },
    pool: Bag,
    role: string,
  ) {
    const result = applyOperation(op, {
      role: fw.role,
      principal: fw.info.principal,
      allocationRole: role,
      pool,
      total: rec.agent.total,
      used: this.#host.tasksOn(rec.agent.id).map((t) => t.bag),
    });
    if ("error" in result) {
      this.#host.log?.(
        `emulator: Dropping ${op.type} offer operation from framework ${fw.id}: ${result.error}`,
      );
      this.dropped.push({ type: op.type, message: result.error });
      if (this.dropped.length > 100) this.dropped.shift();
      return pool;
    }
    rec.agent.convert(result.consumed, result.converted);
    if (op.type === "DESTROY") {
      for (const id of volumeIds(result.consumed)) {
        rec.agent.destroyVolume(id).catch((e) =>
          this.#host.log?.(`emulator: cannot remove volume ${id} on ${rec.agent.id}: ${(e as Error).message}`)
        );
      }
    }
    return result.pool;
  }

  #validateOffers(fw: Framework, offerIds: string[]): string | undefined {
    if (offerIds.length === 0) return "No offers specified";
    const seen = new Set<string>();
    let agentId: string | undefined, role: string | undefined;
    for (const id of offerIds) {
      const offer = this.offers.get(id);
      if (seen.has(id)) return `Duplicate offer ${id} in offer list`;
      seen.add(id);
      if (!offer) return `Offer ${id} is no longer valid`;
      if (offer.frameworkId !== fw.id) {
        return `Offer ${id} has invalid framework ${offer.frameworkId} while framework ${fw.id} is expected`;
      }
      if (agentId !== undefined && offer.agentId !== agentId) {
        return "Aggregated offers must belong to one single agent";
      }
      if (role !== undefined && offer.role !== role) {
        return "Aggregated offers must be allocated to the same role";
      }
      agentId = offer.agentId;
      role = offer.role;
    }
    return undefined;
  }

  #validateTask(
    fw: Framework,
    info: TaskInfo,
    agentId: string,
    bag: Bag,
    pool: Bag,
    role: string,
  ): string | undefined {
    const id = info.task_id?.value ?? "";
    if (!isSafeId(id)) return `TaskID '${id}' contains invalid characters`;
    if (fw.tasks.has(id)) return `Task has duplicate ID: ${id}`;
    if (info.agent_id?.value !== agentId) return `Task uses invalid agent: ${info.agent_id?.value}`;
    if ((info.command === undefined) === (info.executor === undefined)) {
      return "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present";
    }
    if (info.executor) {
      const executorId = info.executor.executor_id.value;
      const running = this.#host.tasksOn(agentId).find((t) =>
        t.frameworkId === fw.id && t.info.executor?.executor_id.value === executorId
      );
      const problem = executorInfoProblem(info.executor, fw.id, running?.info.executor);
      if (problem) return problem;
    } else if (!info.command?.value) return "CommandInfo has no value";
    const container = containerProblem(info.container);
    if (container) return container;
    if (!info.resources?.length) return "Task uses no resources";
    const bad = invalidResource(info.resources);
    if (bad) return `Invalid resource ${bad.name}`;
    const badExecutor = invalidResource(info.executor?.resources ?? []);
    if (badExecutor) return `Executor uses invalid resources: Invalid resource ${badExecutor.name}`;
    const grace = info.kill_policy?.grace_period?.nanoseconds;
    if (grace !== undefined && !(Number(grace) >= 0)) {
      return "Task's kill policy must have a non-negative grace period";
    }
    const roles = [...new Set(Object.values(bag.kinds ?? {}).map((k) => k.allocation_info?.role))];
    if (roles.length > 1) {
      return `Invalid task resources: The resources have multiple allocation roles ('${roles[1]}' and '${
        roles[0]
      }') but only one allocation role is allowed`;
    }
    // Offered resources contain the task's only piece by piece: the same reservation (whichever format
    // it is written in) and the same allocation role, not just the same name.
    if (!subtractBags(pool, bag) || roles.some((r) => r !== role)) {
      const [wanted, offered] = [describeBag(bag), describeBag(pool)];
      return info.executor
        ? `Total resources ${wanted} required by task and its executor is more than available ${offered}`
        : `Task uses more resources ${wanted} than available ${offered}`;
    }
    return undefined;
  }

  #filter(fw: Framework, agentId: string, filters: Filters | undefined): void {
    const seconds = Math.min(filters?.refuse_seconds ?? DEFAULT_REFUSE_SECONDS, 365 * 24 * 3600);
    if (!(seconds > 0)) return;
    const until = this.#o.now() + seconds * 1000;
    fw.filters.set(agentId, until);
    // Re-offer when the filter expires, if the timer fits (a year-long filter just never expires here).
    if (seconds * 1000 < 2 ** 31 - 1) {
      const t = setTimeout(() => {
        this.#filterTimers.delete(t);
        this.schedule();
      }, seconds * 1000);
      this.#filterTimers.add(t);
    }
  }

  #remove(offerId: string): OfferRec | undefined {
    const offer = this.offers.get(offerId);
    if (!offer) return undefined;
    clearTimeout(offer.timer);
    this.offers.delete(offerId);
    return offer;
  }
}
