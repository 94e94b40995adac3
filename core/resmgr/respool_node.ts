/** One resource pool: its config, four admission queues, demand, allocation, entitlements. */
import type { RespoolConfig, RespoolResourceConfig, RespoolResourceKind } from "../model/config_types.ts";
import { addInto, copy, type Resources, subtractInto, zero } from "../model/resources.ts";
import { ActiveList } from "./active_list.ts";
import { neverAdmits } from "./admission_bounds.ts";
import { type Allocation, isZeroAllocation, zeroAllocation } from "./allocation.ts";
import { PriorityFifo } from "./queue.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { type Scalar, zeroScalar } from "./scalar.ts";

export const ROOT_ID = "root";

/** Peloton's `QueueType`s; every gang enters `pending` and may move once to one of the others. */
export type QueueKind = "pending" | "nonPreemptible" | "controller" | "revocable";

/** The order a pool's queues are admitted from (`resPool.DequeueGangs`). */
export const ADMISSION_ORDER: readonly QueueKind[] = ["nonPreemptible", "controller", "revocable", "pending"];

/** Integer accounting units → Peloton's scalar units (cores, MB, MB, GPUs), the calculator's domain. */
export function toScalar(r: Resources): Scalar {
  return { cpu: r.cpuMilli / 1000, memory: r.memMb, disk: r.diskMb, gpu: r.gpuMilli / 1000 };
}

const byPriority = (g: QueuedGang) => g.priority;

export class RespoolNode {
  parent?: RespoolNode;
  readonly children: RespoolNode[] = [];
  /** Queued non-revocable demand and revocable (slack) demand, summed over all four queues. */
  demand: Resources = zero();
  slackDemand: Resources = zero();
  /**
   * The parts of `demand` and `slackDemand` in gangs the pool can never admit (`admission_bounds.ts`'s
   * `neverAdmits`: over its limit, controller limit, reservation or slack limit, whichever applies). They
   * are left out of the demand entitlement is calculated for: an entitlement such work could never use
   * would be taken from other pools, preempting their tasks for nothing.
   */
  neverDemand: Resources = zero();
  neverSlackDemand: Resources = zero();
  allocation: Allocation = zeroAllocation();
  entitlement: Scalar = zeroScalar();
  nonSlackEntitlement: Scalar = zeroScalar();
  slackEntitlement: Scalar = zeroScalar();
  readonly pending = new PriorityFifo<QueuedGang>(byPriority);
  readonly nonPreemptible = new PriorityFifo<QueuedGang>(byPriority);
  readonly controller = new PriorityFifo<QueuedGang>(byPriority);
  readonly revocable = new PriorityFifo<QueuedGang>(byPriority);
  /** Tasks in the queues. Gangs emptied by drops stay queued until admission skips them. */
  queuedTasks = 0;
  /** Admitted tasks not yet terminal: what the preemption ranker chooses from. */
  readonly active = new ActiveList();
  /** Consecutive preemption checks that found the pool above its entitlement. */
  overAllocatedChecks = 0;
  /** Tasks preempted from this pool so far (running ones killed, waiting ones sent back to PENDING). */
  preempted = 0;
  #config!: RespoolConfig;
  #reservation: Scalar = zeroScalar();
  #limit: Scalar = zeroScalar();
  #controllerLimit: Scalar | undefined;
  #preemptionEnabled = true;

  constructor(public readonly id: string, public path: string, config: RespoolConfig) {
    this.config = config;
  }

  get config(): RespoolConfig {
    return this.#config;
  }

  /**
   * Setting the config also sets the reservation, limit and controller limit admission checks against, and
   * sorts the queued gangs again into those the pool can admit some day and those it never can.
   */
  set config(config: RespoolConfig) {
    this.#config = config;
    this.#reservation = zeroScalar();
    this.#limit = zeroScalar();
    for (const r of config.resources) {
      this.#reservation[r.kind] = r.reservation;
      this.#limit[r.kind] = r.limit;
    }
    const percent = config.controllerLimit?.maxPercent;
    if (percent === undefined) {
      this.#controllerLimit = undefined;
    } else {
      // Peloton's `initControllerLimit`: reservation × (maxPercent / 100), for the kinds configured.
      const multiplier = percent / 100;
      this.#controllerLimit = zeroScalar();
      for (const r of config.resources) this.#controllerLimit[r.kind] = r.reservation * multiplier;
    }
    this.#recountAll();
  }

  get isLeaf(): boolean {
    return this.children.length === 0;
  }

  get isRoot(): boolean {
    return this.id === ROOT_ID;
  }

  resource(kind: RespoolResourceKind): RespoolResourceConfig | undefined {
    return this.config.resources.find((r) => r.kind === kind);
  }

  /** Reservation in scalar units, for kinds the pool configures (shared: do not modify). */
  reservation(): Scalar {
    return this.#reservation;
  }

  /** What controller tasks may hold, or undefined when the pool sets no controller limit. */
  controllerLimit(): Scalar | undefined {
    return this.#controllerLimit;
  }

  /** The limit in scalar units (a copy: the caller may keep or change it). */
  limit(): Scalar {
    return { ...this.#limit };
  }

  /**
   * Whether the resource manager preempts (Peloton's `preemption.enabled`, on by default): with it on,
   * non-preemptible work is held to the reservation, so work over the reservation is never admitted.
   */
  get preemptionEnabled(): boolean {
    return this.#preemptionEnabled;
  }

  /** Sorts the queued gangs again, as a config change does: the reservation bound comes and goes with it. */
  set preemptionEnabled(on: boolean) {
    if (on === this.#preemptionEnabled) return;
    this.#preemptionEnabled = on;
    this.#recountAll();
  }

  /** What the pool's queued non-revocable work asks of its entitlement: `demand` less `neverDemand`. */
  admissibleDemand(): Resources {
    const d = copy(this.demand);
    subtractInto(d, this.neverDemand);
    return d;
  }

  /** What the pool's queued revocable work asks of its slack entitlement: `slackDemand` less the never part. */
  admissibleSlackDemand(): Resources {
    const d = copy(this.slackDemand);
    subtractInto(d, this.neverSlackDemand);
    return d;
  }

  queue(kind: QueueKind): PriorityFifo<QueuedGang> {
    return this[kind];
  }

  /** Peloton's `EnqueueGang`: into the pending queue, its resources into demand or slack demand. */
  enqueue(gang: QueuedGang): void {
    this.pending.push(gang);
    addInto(gang.revocable ? this.slackDemand : this.demand, gang.resources);
    gang.neverAdmitted = false;
    this.#recount(gang);
    this.queuedTasks += gang.rows.length;
  }

  /** Admission took the gang out of its queue: its resources leave demand (they go into allocation). */
  admitted(gang: QueuedGang): void {
    subtractInto(gang.revocable ? this.slackDemand : this.demand, gang.resources);
    this.#uncount(gang);
    this.queuedTasks -= gang.rows.length;
  }

  /**
   * Takes one task out of a queued gang, leaving the gang where it is in its queue (Peloton re-enqueued
   * the rest at the back; a gang keeps its place here). An emptied gang is skipped at admission.
   */
  dropQueuedTask(gang: QueuedGang, row: number): void {
    const i = gang.rows.indexOf(row);
    if (i < 0) return;
    gang.rows.splice(i, 1);
    const r = gang.table.resources[row]!;
    this.#uncount(gang);
    // A new sum: a one-task gang's resources are its task's own.
    const left = copy(gang.resources);
    subtractInto(left, r);
    gang.resources = left;
    subtractInto(gang.revocable ? this.slackDemand : this.demand, r);
    gang.updateController();
    // A smaller gang may fit the limit now.
    this.#recount(gang);
    this.queuedTasks--;
  }

  #recountAll(): void {
    for (const kind of ADMISSION_ORDER) {
      for (const gang of this.queue(kind)) this.#recount(gang);
    }
  }

  /**
   * Counts a queued gang in `neverDemand` (`neverSlackDemand` if revocable) when the pool can never admit
   * it, and only then.
   */
  #recount(gang: QueuedGang): void {
    const never = neverAdmits(this, gang, this.#preemptionEnabled);
    if (never === gang.neverAdmitted) return;
    const sum = gang.revocable ? this.neverSlackDemand : this.neverDemand;
    if (never) addInto(sum, gang.resources);
    else subtractInto(sum, gang.resources);
    gang.neverAdmitted = never;
  }

  #uncount(gang: QueuedGang): void {
    if (!gang.neverAdmitted) return;
    subtractInto(gang.revocable ? this.neverSlackDemand : this.neverDemand, gang.resources);
    gang.neverAdmitted = false;
  }

  /** Tasks the pool holds, queued or admitted, in any resource dimension. */
  busy(): boolean {
    return this.queuedTasks > 0 || this.active.size > 0 || !isZeroAllocation(this.allocation);
  }
}
