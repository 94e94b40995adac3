/**
 * Ends an open-ended run (no `durationSec`) that can make no more progress: jobs no host or pool can ever
 * take would otherwise keep it going forever. Says which jobs were left and why.
 *
 * The rule: nothing runs on the cluster, no arrival, timed event or job manager action is still to come,
 * every unfinished task waits before launch, and since the run went quiet each waiting task was either
 * refused by placement (on the empty cluster) or left unadmitted by its pool through a whole entitlement
 * period. Nothing can change after that: the cluster, the pools and the demand stay as they are.
 */
import type { JobEntry } from "../core/jobmgr/jobmgr.ts";
import type { Message, RmTask } from "../core/messages.ts";
import { mesosTaskId, type TaskRecord } from "../core/model/records.ts";
import type { Resources } from "../core/model/resources.ts";
import type { Constraint } from "../core/model/config_types.ts";
import {
  constraintKey,
  describeConstraint,
  evaluate,
  HOST_KIND,
  isNonExclusive,
} from "../core/placement/constraints.ts";
import { type HostEntry, POOL_EXCLUSIVE, POOL_GPU, POOL_NORMAL } from "../core/hostmgr/host_table.ts";
import { isTerminalJobState, isTerminalTaskState, type TaskState } from "../core/model/states.ts";
import { gangSize } from "../core/jobmgr/task_build.ts";
import {
  admissionBounds,
  canAdmit,
  controllerAdmits,
  entitlementAdmits,
  kindsOver,
  neverAdmits,
  reservationAdmits,
  sideQueueFor,
} from "../core/resmgr/admission.ts";
import type { QueuedGang } from "../core/resmgr/queued_gang.ts";
import { ADMISSION_ORDER, type QueueKind, type RespoolNode } from "../core/resmgr/respool_node.ts";
import { RESOURCE_EPSILON, type ResourceKind, type Scalar } from "../core/resmgr/scalar.ts";
import type { Scenario } from "./scenario.ts";
import type { Simulation } from "./runner.ts";

/** A job the run stopped waiting for. */
export interface StuckJob {
  jobId: string;
  workload: string;
  /** Its instances still waiting to launch. */
  waitingTasks: number;
  /** Why nothing can start them (the first waiting instance's reason). */
  reason: string;
}

/** Task states before the job manager hands a task to a host. */
const WAITING = new Set<TaskState>(["INITIALIZED", "PENDING", "READY", "PLACING"]);

type Tap = Simulation["transport"]["tap"];

export class StallWatch {
  /** When the run was first seen quiet with its current progress; undefined while it is busy. */
  #quietSinceMs: number | undefined;
  #progress = "";
  /** Tasks placement refused since the run went quiet, with the reason. */
  readonly #refused = new Map<string, string>();
  /** The transport's own tap while this one watches placements (only while the run is quiet). */
  #baseTap: Tap | null = null;
  readonly #lastEventMs: number;
  readonly #admissionMs: number;

  constructor(private readonly sim: Simulation) {
    const s = sim.scenario.settings;
    this.#lastEventMs = lastEventMs(sim.scenario);
    // An entitlement pass after the run went quiet, and a scheduling pass after that, decide admission.
    this.#admissionMs = (s.entitlementPeriodSec + s.sampleIntervalSec) * 1000;
  }

  /**
   * Called at each sample: the jobs left when the run can make no more progress (none when nothing was
   * ever submitted, e.g. a trace whose jobs all fall outside the replayed window), else undefined.
   */
  check(nowMs: number): StuckJob[] | undefined {
    if (!this.#quiet(nowMs)) {
      this.#unwatch();
      return undefined;
    }
    const progress = this.#progressKey();
    if (this.#quietSinceMs === undefined || progress !== this.#progress) {
      this.#watch(nowMs, progress);
      return undefined;
    }
    const stuck = this.#stuckJobs(nowMs - this.#quietSinceMs);
    if (stuck) this.#unwatch();
    return stuck;
  }

  /** Nothing runs, nothing is still to come from outside, nothing is answered or retried later. */
  #quiet(nowMs: number): boolean {
    const sim = this.sim, jm = sim.jobmgr;
    return sim.pendingArrivals === 0 && nowMs >= this.#lastEventMs && sim.cluster.runningTasks === 0 &&
      jm.taskEngine.size === 0 && jm.jobEngine.size === 0 && jm.updateEngine.size === 0 &&
      sim.submissions.every((s) => s.accepted !== undefined);
  }

  /** What the run has done so far: any change means it is still making progress. */
  #progressKey(): string {
    const t = this.sim.stats.tasks;
    return [
      t.submitted,
      t.launched,
      t.succeeded + t.failed + t.killed + t.lost,
      this.sim.submissions.length,
      this.sim.events.length,
    ].join();
  }

  #watch(nowMs: number, progress: string): void {
    this.#quietSinceMs = nowMs;
    this.#progress = progress;
    this.#refused.clear();
    if (this.#baseTap !== null) return;
    const transport = this.sim.transport;
    const base = this.#baseTap = transport.tap;
    transport.tap = (to, msg) => {
      base?.(to, msg);
      this.#see(msg);
    };
  }

  #unwatch(): void {
    this.#quietSinceMs = undefined;
    this.#refused.clear();
    if (this.#baseTap === null) return;
    this.sim.transport.tap = this.#baseTap;
    this.#baseTap = null;
  }

  #see(msg: Message): void {
    if (msg.kind !== "set-placements") return;
    // A placement is progress: the watch starts over at the next sample.
    if (msg.placements.length) this.#quietSinceMs = undefined;
    for (const f of msg.failed) this.#refused.set(f.taskId, f.reason);
  }

  /** Every unfinished job with why it cannot start, or undefined while some task may still move. */
  #stuckJobs(quietMs: number): StuckJob[] | undefined {
    const sim = this.sim;
    const workloads = new Map(sim.submissions.map((s) => [s.jobId, s.workload]));
    const stuck: StuckJob[] = [];
    for (const job of sim.jobmgr.jobs.values()) {
      if (isTerminalJobState(job.runtime.state)) continue;
      let waitingTasks = 0, reason: string | undefined;
      for (const task of job.tasks.values()) {
        if (isTerminalTaskState(task.state)) continue;
        if (!WAITING.has(task.state)) return undefined;
        const why = this.#whyWaiting(job, task, quietMs);
        if (why === undefined) return undefined;
        waitingTasks++;
        reason ??= why;
      }
      if (reason === undefined) return undefined;
      stuck.push({ jobId: job.jobId, workload: workloads.get(job.jobId) ?? "", waitingTasks, reason });
    }
    return stuck;
  }

  /** Why a waiting task cannot start, or undefined while it may still. */
  #whyWaiting(job: JobEntry, task: TaskRecord, quietMs: number): string | undefined {
    const maxRunning = job.config.sla.maximumRunningInstances;
    if (task.state === "INITIALIZED") {
      return maxRunning > 0
        ? `not started: the job runs at most ${maxRunning} instances at once and the others cannot start`
        : undefined;
    }
    const id = mesosTaskId(job.jobId, task.instanceId, task.runId);
    const refused = this.#refused.get(id);
    if (refused !== undefined) return `placement: ${refused}`;
    const view = this.sim.resmgr.tasks.get(id);
    if (view?.state === "PENDING" && quietMs >= this.#admissionMs) return admissionReason(this.sim, id);
    return undefined;
  }
}

/**
 * Jobs a run with a durationSec ended with that nothing in it could have started: waiting in any of their
 * pool's queues for a gang the pool never admits, as it asks for more than an admitter's bound allows
 * whatever frees up (`admissionBounds`, as the resource manager's admission waits say: its limit, slack
 * limit, controller limit, or reservation for non-preemptible work) or more than the cluster's capacity
 * lets its entitlement be (a gang is admitted whole or not at all); or queued behind such a gang where it
 * stops its queue: one too big for the cluster stops any queue, while one over a bound is passed over in any
 * queue (`neverAdmits`), and one in the pending queue with a side queue moves there: they hold no one up.
 * And work no placement can ever take (`unplaceableRows`), admitted or not, with what its pool, its
 * allocation held by such admitted work, admits no more of. Work that merely waited when the run ended is not
 * listed. An open-ended run finds its stuck jobs as it goes (`StallWatch`).
 */
export function neverStartingJobs(sim: Simulation): StuckJob[] {
  const why = new Map<QueuedGang, string>();
  /** Gangs that wait only behind other work: what keeps them from starting is not their own. */
  const behind = new Set<QueuedGang>();
  const preemption = sim.scenario.settings.preemption.enabled;
  for (const pool of sim.resmgr.tree.leaves()) {
    for (const kind of ADMISSION_ORDER) {
      let blocked: string | undefined;
      for (const gang of pool.queue(kind)) {
        if (!gang.rows.length) continue;
        if (blocked) {
          why.set(gang, blocked);
          behind.add(gang);
          continue;
        }
        const over = neverOver(pool, gang, preemption, sim.resmgr.capacity.physical);
        if (over === undefined) continue;
        const what = gang.rows.length > 1 ? `its gang of ${gang.rows.length} tasks` : "it";
        why.set(gang, `pool ${pool.path} can never admit ${what}: ${over}`);
        const passed = neverAdmits(pool, gang) ||
          (kind === "pending" && sideQueueFor(gang, preemption) !== undefined);
        if (!passed) {
          blocked = `waits in pool ${pool.path}'s ${QUEUE_NAMES[kind]} behind work the pool can never admit`;
        }
      }
    }
  }
  const table = sim.resmgr.tasks;
  const unplaceable = unplaceableRows(sim);
  // What waits in those pools' queues, not admitted while their allocation stays, waits behind them.
  const holding = [...unplaceable].filter(([, u]) => u.admitted).map(([row]) => table.pool[row]!);
  for (const pool of new Set(holding)) {
    for (const kind of ADMISSION_ORDER) {
      for (const gang of pool.queue(kind)) {
        if (!gang.rows.length || why.has(gang) || canAdmit(pool, gang, preemption)) continue;
        why.set(
          gang,
          `waits in pool ${pool.path}'s ${QUEUE_NAMES[kind]} behind admitted work that can never be placed`,
        );
        behind.add(gang);
      }
    }
  }
  if (!why.size && !unplaceable.size) return [];
  const workloads = new Map(sim.submissions.map((s) => [s.jobId, s.workload]));
  const stuck: StuckJob[] = [];
  for (const job of sim.jobmgr.jobs.values()) {
    if (isTerminalJobState(job.runtime.state)) continue;
    let waitingTasks = 0, reason: string | undefined, startable = false;
    for (const task of job.tasks.values()) {
      if (isTerminalTaskState(task.state)) continue;
      const row = table.rowOf(mesosTaskId(job.jobId, task.instanceId, task.runId));
      const gang = row < 0 ? null : table.gang[row];
      // Why it can never start itself comes first: admitted and unplaceable, then never admitted by its
      // pool, then unplaceable once admitted; waiting behind other work last.
      const u = unplaceable.get(row), pooled = gang ? why.get(gang) : undefined;
      const never = (u?.admitted ? u.why : undefined) ?? (gang && !behind.has(gang) ? pooled : undefined) ??
        u?.why ?? pooled;
      if (never === undefined) {
        startable = true;
        break;
      }
      waitingTasks++;
      reason ??= never;
    }
    if (!startable && reason !== undefined) {
      stuck.push({ jobId: job.jobId, workload: workloads.get(job.jobId) ?? "", waitingTasks, reason });
    }
  }
  return stuck;
}

/**
 * Tasks waiting in the resource manager (admitted, READY or PLACING, or PENDING in a pool's queue) that no
 * placement can ever take: alone or with the rest of their gang (the instances below the job's
 * `minimumRunningInstances`) they ask for more than the cluster has at the end, the capacity the queued
 * gangs are measured by; or one of them alone fits no host of the cluster at the end (`EndHosts`), or the
 * hosts could never hold all of a gang's members at once (`EndHosts.tooFew`). By row,
 * with why ("admitted, but no placement can take its gang of 4 tasks: needs gpu 16, the cluster has 12")
 * and whether it was admitted (holding its pool's allocation).
 */
function unplaceableRows(sim: Simulation): Map<number, { why: string; admitted: boolean }> {
  const table = sim.resmgr.tasks;
  const capacity = sim.resmgr.capacity.physical;
  const hosts = new EndHosts(sim);
  const out = new Map<number, { why: string; admitted: boolean }>();
  for (const job of sim.jobmgr.jobs.values()) {
    if (isTerminalJobState(job.runtime.state)) continue;
    const groups = new Map<number, number[]>(), pending = new Set<number>();
    for (const task of job.tasks.values()) {
      if (isTerminalTaskState(task.state)) continue;
      const id = mesosTaskId(job.jobId, task.instanceId, task.runId);
      const state = table.get(id)?.state;
      if (state !== "READY" && state !== "PLACING" && state !== "PENDING") continue;
      if (state === "PENDING") pending.add(table.rowOf(id));
      const size = gangSize(job.config, task.instanceId, false);
      // A gang's members share the key of its first instance; other tasks are one each.
      const key = size > 1 ? -1 : task.instanceId;
      groups.set(key, [...groups.get(key) ?? [], table.rowOf(id)]);
    }
    for (const rows of groups.values()) {
      const need = { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 };
      for (const row of rows) {
        const r = table.resources[row]!;
        need.cpuMilli += r.cpuMilli;
        need.memMb += r.memMb;
        need.diskMb += r.diskMb;
        need.gpuMilli += r.gpuMilli;
      }
      const gang = rows.length > 1;
      let over = overCaps(need, NO_LIMIT, capacity);
      // A gang is placed whole: a member no host takes holds the others back.
      for (let k = 0; k < rows.length && over === undefined; k++) {
        const task = table.task[rows[k]];
        const alone = task ? hosts.why(task) : undefined;
        if (alone !== undefined) over = gang ? `instance ${task!.instanceId}: ${alone}` : alone;
      }
      // Each member fits some host, but the hosts may be too few to take them all at once.
      if (over === undefined && gang) over = hosts.tooFew(rows.flatMap((row) => table.task[row] ?? []));
      if (over === undefined) continue;
      const what = gang ? `its gang of ${rows.length} tasks` : "it";
      for (const row of rows) {
        const admitted = !pending.has(row);
        const when = admitted ? "admitted" : "waits for admission";
        out.set(row, { why: `${when}, but no placement can take ${what}: ${over}`, admitted });
      }
    }
  }
  return out;
}

/**
 * The hosts of the cluster at the end as placement looks at a task: those not lost (whose capacity the
 * resource manager counts), in the index pools it searches (GPU hosts kept for GPU work, exclusive hosts for
 * work whose constraint names them: `acquire.ts`), meeting its HOST constraint, with their whole resources
 * free. What no such host could ever take never starts. A task bound to one host (a daemon's instance, a
 * stateful task's volume) is not judged here.
 */
class EndHosts {
  readonly #hosts: HostEntry[];
  readonly #registry: Simulation["hostmgr"]["registry"];
  /** Per constraint and index pools: the distinct resources of the hosts that may take its tasks. */
  readonly #candidates = new Map<string, Candidates>();
  /** Per constraint and resources asked for: why no host takes such a task (undefined: some host does). */
  readonly #why = new Map<string, string | undefined>();

  /** How many of the hosts are in each index pool. */
  readonly #inPool = [0, 0, 0];

  constructor(sim: Simulation) {
    this.#hosts = sim.hostmgr.hosts.filter((h) => !h.lost);
    this.#registry = sim.hostmgr.registry;
    for (const h of this.#hosts) this.#inPool[this.#registry.poolOf(h)]++;
  }

  /** Why no host of the cluster can ever take the task alone; undefined when one can. */
  why(task: RmTask): string | undefined {
    if (task.requiredHost !== undefined) return undefined;
    const { key, need, c, pools } = this.#askOf(task);
    if (!this.#why.has(key)) this.#why.set(key, this.#judge(need, c, pools));
    return this.#why.get(key);
  }

  /**
   * Why the hosts could never hold all of a gang's members at once, each host its whole resources' worth of
   * them; undefined when they could. Members asking alike (resources, index pools, HOST constraint) are
   * counted together against the hosts they may use: exact for a gang of like members; one whose members
   * differ is judged by each kind of member alone, so it is never called unplaceable when it is not. Members
   * bound to a host are not judged.
   */
  tooFew(members: RmTask[]): string | undefined {
    const asks = new Map<string, Ask & { count: number }>();
    for (const task of members) {
      if (task.requiredHost !== undefined) continue;
      const ask = this.#askOf(task), seen = asks.get(ask.key);
      if (seen) seen.count++;
      else asks.set(ask.key, { ...ask, count: 1 });
    }
    for (const { need, c, pools, count } of asks.values()) {
      const { shapes, usable, meeting } = this.#candidatesFor(c, pools);
      let room = 0, most = 0;
      for (const { has, hosts } of shapes) {
        const each = Math.min(
          ...RESOURCE_KINDS.filter((k) => amountOf(need, k) > 0)
            .map((k) => Math.floor(amountOf(has, k) / amountOf(need, k))),
        );
        room += each * hosts;
        most = Math.max(most, each);
      }
      if (room >= count) continue;
      const kept = this.#kept(pools);
      const where = `${kept.length ? " it may use" : ""}${
        meeting < usable ? ` where ${describeConstraint(c!)}` : ""
      }`;
      const whose = count === members.length ? "its" : `${count} of its`;
      const few = most > 1
        ? `the hosts${where} could hold only ${room} of them at once`
        : `only ${room} host${room === 1 ? "" : "s"}${where} could ever take one`;
      return `needs ${asksText(need)} for each of ${whose} ${members.length} tasks, but ${few}` +
        (kept.length ? ` (${kept.join("; ")})` : "");
    }
    return undefined;
  }

  /** What a task asks of a host, and a key shared by the tasks that ask alike. */
  #askOf(task: RmTask): Ask {
    const need = task.resources, c = hostPart(task.constraint);
    const pools = searchedPools(need, task.constraint, this.#registry.scarceGpu);
    const key = `${need.cpuMilli},${need.memMb},${need.diskMb},${need.gpuMilli}|${pools.join()}|` +
      constraintKey(c);
    return { key, need, c, pools };
  }

  /** Why hosts outside the index pools searched are not used (only pools with hosts). */
  #kept(pools: number[]): string[] {
    return [
      [POOL_GPU, "GPU hosts are kept for GPU work"] as const,
      [POOL_EXCLUSIVE, "exclusive hosts take only work whose constraint names them"] as const,
    ].flatMap(([pool, why]) => !pools.includes(pool) && this.#inPool[pool] > 0 ? [why] : []);
  }

  #judge(need: Resources, c: Constraint | undefined, pools: number[]): string | undefined {
    if (!this.#hosts.length) return "no host is up";
    const kept = this.#kept(pools);
    const { shapes, usable, meeting } = this.#candidatesFor(c, pools);
    if (!usable) return `no host it may use: ${kept.join("; ")}`;
    const end = kept.length ? ` (${kept.join("; ")})` : "";
    const mayUse = kept.length ? " it may use" : "";
    if (!meeting) return `no host${mayUse} meets its constraint ${describeConstraint(c!)}${end}`;
    if (shapes.some((h) => fits(need, h.has))) return undefined;
    const scope = `no host${mayUse}${meeting < usable ? ` where ${describeConstraint(c!)}` : ""}`;
    const most = (k: ResourceKind) => Math.max(...shapes.map((h) => amountOf(h.has, k)));
    const over = RESOURCE_KINDS.filter((k) => amountOf(need, k) > most(k));
    if (over.length) {
      return over.map((k) =>
        `needs ${UNITS[k]} ${round(amountOf(need, k))}, ${scope} has more than ${round(most(k))}`
      )
        .join("; ") + end;
    }
    // Each resource fits some host, but none has them all.
    return `needs ${asksText(need)}, which ${scope} has at once${end}`;
  }

  /** The hosts in the index pools that meet the constraint: their distinct resources, and how many. */
  #candidatesFor(c: Constraint | undefined, pools: number[]): Candidates {
    const key = `${pools.join()}|${constraintKey(c)}`;
    let found = this.#candidates.get(key);
    if (found) return found;
    const shapes = new Map<string, { has: Resources; hosts: number }>();
    let usable = 0, meeting = 0;
    const target = { hostname: "", attributes: {} as Record<string, string>, taskLabels: [] };
    for (const h of this.#hosts) {
      if (!pools.includes(this.#registry.poolOf(h))) continue;
      usable++;
      target.hostname = h.info.hostname;
      target.attributes = h.info.attributes;
      if (c && evaluate(c, target, HOST_KIND) === "mismatch") continue;
      meeting++;
      const r = h.info.resources, shape = `${r.cpuMilli},${r.memMb},${r.diskMb},${r.gpuMilli}`;
      const seen = shapes.get(shape);
      if (seen) seen.hosts++;
      else shapes.set(shape, { has: r, hosts: 1 });
    }
    this.#candidates.set(key, found = { shapes: [...shapes.values()], usable, meeting });
    return found;
  }
}

/** What a task asks of a host: its resources, HOST constraint part and index pools, keyed alike. */
interface Ask {
  key: string;
  need: Resources;
  c: Constraint | undefined;
  pools: number[];
}

/** The hosts that may take a task: their distinct resources with how many have each, and how many there are. */
interface Candidates {
  shapes: { has: Resources; hosts: number }[];
  /** In the index pools searched. */
  usable: number;
  /** Of those, meeting the constraint. */
  meeting: number;
}

/** "cpu 8, memory MB 65536, gpu 8": what resources ask for, the kinds asked for only. */
function asksText(need: Resources): string {
  return RESOURCE_KINDS.filter((k) => amountOf(need, k) > 0)
    .map((k) => `${UNITS[k]} ${round(amountOf(need, k))}`).join(", ");
}

/** Each constraint's `hostPart` (null: none), once per constraint object (a job's tasks share one). */
const HOST_PARTS = new WeakMap<Constraint, Constraint | null>();

/**
 * The part of a constraint a host's own labels decide, undefined when none: its TASK labels (how many tasks
 * of a kind a host runs, which placements change) left out, as the host manager leaves them out; an OR with
 * one may always pass, so it goes whole. It fails on a host where the whole constraint does, and the tasks of
 * jobs whose constraints differ only in their TASK labels (`maxPerHost`'s, a job's own) are judged once.
 */
function hostPart(c: Constraint | undefined): Constraint | undefined {
  if (!c) return undefined;
  let part = HOST_PARTS.get(c);
  if (part === undefined) HOST_PARTS.set(c, part = hostPartOf(c) ?? null);
  return part ?? undefined;
}

function hostPartOf(c: Constraint): Constraint | undefined {
  switch (c.type) {
    case "LABEL_CONSTRAINT":
      return c.labelConstraint.kind === "HOST" ? c : undefined;
    case "AND_CONSTRAINT": {
      const parts = c.andConstraint.constraints.flatMap((p) => hostPartOf(p) ?? []);
      return parts.length > 1 ? { type: "AND_CONSTRAINT", andConstraint: { constraints: parts } } : parts[0];
    }
    case "OR_CONSTRAINT": {
      const parts = c.orConstraint.constraints.map(hostPartOf);
      return parts.every((p) => p !== undefined)
        ? { type: "OR_CONSTRAINT", orConstraint: { constraints: parts as Constraint[] } }
        : undefined;
    }
  }
}

/**
 * The index pools placement may take a task's host from (`acquire.ts`'s `pools`): GPU work searches only the
 * GPU hosts kept for it, but the others, having no GPU, could not take it anyway, so they count too.
 */
function searchedPools(need: Resources, c: Constraint | undefined, scarceGpu: boolean): number[] {
  const pools = need.gpuMilli > 0 || !scarceGpu ? [POOL_NORMAL, POOL_GPU] : [POOL_NORMAL];
  if (!isNonExclusive(c)) pools.push(POOL_EXCLUSIVE);
  return pools;
}

function fits(need: Resources, has: Resources): boolean {
  return need.cpuMilli <= has.cpuMilli && need.memMb <= has.memMb && need.diskMb <= has.diskMb &&
    need.gpuMilli <= has.gpuMilli;
}

const RESOURCE_KINDS: ResourceKind[] = ["cpu", "memory", "disk", "gpu"];

const NO_LIMIT: Scalar = { cpu: Infinity, memory: Infinity, disk: Infinity, gpu: Infinity };

/** How stuck jobs name a pool's queues ("waits in pool /a's queue behind ..."). */
const QUEUE_NAMES: Record<QueueKind, string> = {
  pending: "queue",
  nonPreemptible: "non-preemptible queue",
  controller: "controller queue",
  revocable: "revocable queue",
};

/**
 * How a gang asks for more than its pool can ever admit, e.g. "needs gpu 48, its limit is 32": the first of
 * its admitters' bounds it exceeds (`admissionBounds`), the limit together with the cluster's capacity for
 * non-revocable work (the smaller caps its entitlement); undefined when it exceeds none.
 */
function neverOver(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean,
  capacity: Resources,
): string | undefined {
  const need = gang.resources;
  for (const { name, bound } of admissionBounds(pool, gang, preemptionEnabled)) {
    if (name === "limit") {
      const over = overCaps(need, bound, capacity);
      if (over !== undefined) return over;
      continue;
    }
    const kinds = kindsOver(need, bound);
    if (kinds.length) {
      return kinds.map((k) =>
        `needs ${UNITS[k]} ${round(amountOf(need, k))}, its ${name} is ${round(bound[k])}`
      )
        .join("; ");
    }
  }
  return undefined;
}

const UNITS: Record<ResourceKind, string> = { cpu: "cpu", memory: "memory MB", disk: "disk MB", gpu: "gpu" };

function amountOf(r: Resources, kind: ResourceKind): number {
  return kind === "cpu"
    ? r.cpuMilli / 1000
    : kind === "memory"
    ? r.memMb
    : kind === "disk"
    ? r.diskMb
    : r.gpuMilli / 1000;
}

/**
 * How resources ask for more than a pool's entitlement can ever be (its limit, in the pool's units, and
 * the cluster's capacity), e.g. "needs gpu 48, its limit is 32"; undefined when they do not.
 */
function overCaps(need: Resources, limit: Scalar, capacity: Resources): string | undefined {
  const kinds: [string, number, number, number][] = [
    ["cpu", need.cpuMilli / 1000, limit.cpu, capacity.cpuMilli / 1000],
    ["memory MB", need.memMb, limit.memory, capacity.memMb],
    ["disk MB", need.diskMb, limit.disk, capacity.diskMb],
    ["gpu", need.gpuMilli / 1000, limit.gpu, capacity.gpuMilli / 1000],
  ];
  const parts = kinds.flatMap(([k, n, l, c]) => {
    if (n - Math.min(l, c) < RESOURCE_EPSILON) return [];
    const cap = l <= c ? `its limit is ${round(l)}` : `the cluster has ${round(c)}`;
    return [`needs ${k} ${round(n)}, ${cap}`];
  });
  return parts.length ? parts.join("; ") : undefined;
}

/** When the scenario's last timed event (a recovery or maintenance end included) happens. */
export function lastEventMs(scenario: Scenario): number {
  let last = 0;
  for (const e of scenario.events) {
    last = Math.max(last, (e.atSec + (e.recoverAfterSec ?? 0) + (e.durationSec ?? 0)) * 1000);
  }
  return last;
}

/** Why the pool holding a PENDING task does not admit it, by Peloton's admitters in their order. */
function admissionReason(sim: Simulation, taskId: string): string {
  const table = sim.resmgr.tasks;
  const row = table.rowOf(taskId);
  const pool = table.pool[row]!, gang = table.gang[row];
  if (!gang) return `waits in pool ${pool.path}'s queue`;
  const what = gang.rows.length > 1 ? `its gang of ${gang.rows.length} tasks` : "it";
  if (!entitlementAdmits(pool, gang)) {
    const a = pool.allocation;
    const short = gang.revocable
      ? shortfall(a.slack, gang.resources, pool.slackEntitlement)
      : shortfall(a.nonSlack, gang.resources, pool.nonSlackEntitlement);
    return `pool ${pool.path} cannot admit ${what}: ${short} (the entitlement is capped by the pool's ` +
      `limit and the cluster's capacity)`;
  }
  if (!controllerAdmits(pool, gang)) return `pool ${pool.path}'s controller limit cannot admit ${what}`;
  if (!reservationAdmits(pool, gang, sim.scenario.settings.preemption.enabled)) {
    return `pool ${pool.path} cannot admit ${what}: non-preemptible work must fit in the pool's reservation`;
  }
  return `waits in pool ${pool.path}'s queue behind work the pool cannot admit`;
}

/** "needs cpu 9, entitled to 8" for each kind that does not fit. */
function shortfall(used: Resources, need: Resources, cap: Scalar): string {
  const kinds: [string, number, number, number][] = [
    ["cpu", need.cpuMilli / 1000, used.cpuMilli / 1000, cap.cpu],
    ["memory MB", need.memMb, used.memMb, cap.memory],
    ["disk MB", need.diskMb, used.diskMb, cap.disk],
    ["gpu", need.gpuMilli / 1000, used.gpuMilli / 1000, cap.gpu],
  ];
  // Admission's own test: over by the epsilon or more.
  const parts = kinds.filter(([, n, u, c]) => n + u - c >= RESOURCE_EPSILON).map(([k, n, u, c]) =>
    `needs ${k} ${round(n)}, entitled to ${round(c)}${u > 0 ? ` with ${round(u)} already admitted` : ""}`
  );
  return parts.join("; ") || "does not fit its entitlement";
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
