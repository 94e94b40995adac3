/** The placement engine daemon: dequeue gangs, lease hosts, place in rounds (with deadlines and backoff), hand back. */
import type {
  Gang,
  HostFilter,
  HostLease,
  HostPlacement,
  Message,
  PlacementFailure,
  PlacementPending,
  ReplyMessage,
  RmTask,
} from "../messages.ts";
import type { Resources } from "../model/resources.ts";
import { rfc3339 } from "../model/time_format.ts";
import type { TaskType } from "../model/states.ts";
import type { Clock, TimerId } from "../ports/clock.ts";
import type { Metrics } from "../ports/metrics.ts";
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import type { Address, Receiver, Transport } from "../ports/transport.ts";
import { PendingCalls } from "../rpc.ts";
import { pickPorts } from "../hostmgr/ports.ts";
import { InProcessExecutor } from "./in_process_executor.ts";
import {
  backoffMs,
  DEFAULT_RESERVATION,
  isLarge,
  PELOTON_POLICIES,
  type ReservationPolicy,
  type TaskTypePolicy,
} from "./policy.ts";
import { failureReason, rejectionCounts, roomIsMissing } from "./reasons.ts";
import { gangFailure } from "./gang_reason.ts";
import { RoundBuilder, type UnitOutcome } from "./round_build.ts";
import { HeldUnits, type Pending } from "./held_units.ts";
import { HostPoolConstraints, type HostPoolPolicy } from "./host_pool_policy.ts";
import type { PlacementResult, PlacementRound } from "./round.ts";

export interface PlacementConfig {
  /** Tasks per dequeue (Peloton dequeues 10 gangs; batching more keeps rounds cheap at scale). */
  dequeueLimit: number;
  /** Long-poll timeout of DequeueGangs (Peloton's `task_dequeue_timeout`). */
  dequeueTimeoutMs: number;
  /**
   * A request not answered within this is taken for lost (the request or its answer), so that one lost
   * message does not stop the engine for good: a DequeueGangs is sent again (gangs in a late answer are
   * still placed), and a round whose AcquireHosts went unanswered is given up (its tasks go in the next
   * round; leases in a late answer are given back).
   */
  requestRetryMs: number;
  /** Tasks placed in one round at most (retries first, then newly dequeued). */
  roundLimit: number;
  policies: Record<TaskType, TaskTypePolicy>;
  /** Host reservation for large tasks; null turns it off. */
  reservation: ReservationPolicy | null;
  /** Feasible hosts scored per placement decision. */
  scoreLimit: number;
  maxHostsPerFilter: number;
  /** Immediate retries of a task that failed while the host manager held more matching hosts. */
  quickRetries: number;
  /** Rounds out at once: the next round is leased and built while workers place the last one. */
  pipelineDepth: number;
  /**
   * A task still tried has its latest failure reason sent to the resource manager (for `task list`) after
   * its first failed round, then, while the reason changes, at most this often.
   */
  reasonIntervalMs: number;
  /** Peloton's `use_host_pool`: each kind of work placed in its host pool; null (the default) turns it off. */
  hostPools?: HostPoolPolicy | null;
}

export const DEFAULT_PLACEMENT_CONFIG: PlacementConfig = {
  dequeueLimit: 1000,
  dequeueTimeoutMs: 100,
  requestRetryMs: 30_000,
  roundLimit: 5000,
  policies: PELOTON_POLICIES,
  reservation: DEFAULT_RESERVATION,
  scoreLimit: 16,
  maxHostsPerFilter: 10_000,
  quickRetries: 2,
  pipelineDepth: 2,
  reasonIntervalMs: 30_000,
};

export interface PlacementDeps {
  clock: Clock;
  transport: Transport;
  metrics: Metrics;
  self: Address;
  resmgr: Address;
  hostmgr: Address;
  /** Where rounds are computed; in process unless the mode wires workers. */
  executor?: PlacementExecutor;
}

type Reply<K extends ReplyMessage["kind"]> = Extract<ReplyMessage, { kind: K }>;

export class PlacementEngine implements Receiver {
  readonly #calls = new PendingCalls<ReplyMessage>();
  readonly #held = new HeldUnits();
  readonly #executor: PlacementExecutor;
  #running = false;
  #dequeuing = false;
  /** Counts dequeues: an answer to one the retry timer gave up on only hands its gangs over. */
  #dequeueGen = 0;
  #dequeueTimer: TimerId | undefined;
  /** Retry timers of the rounds waiting for hosts. */
  readonly #acquireTimers = new Set<TimerId>();
  #roundsOut = 0;
  #activeReservations = 0;
  /**
   * Reservation ids are this incarnation's name and a counter: a lease or end of a reservation the engine
   * cancelled is told from one of the task's later reservations however late it comes, even across restarts.
   */
  readonly #incarnation: string;
  #reservationSeq = 0;
  /** The host manager's largest host, per dimension, from its last acquire reply: what "large" means. */
  #largestHost: Resources | undefined;
  /** The resource manager's room epoch last seen: a change means tasks ended or hosts joined or came back. */
  #roomEpoch = 0;
  readonly #placed;
  readonly #failed;
  readonly #rounds;
  readonly #hostPools?: HostPoolConstraints;

  constructor(
    private readonly deps: PlacementDeps,
    readonly config: PlacementConfig = DEFAULT_PLACEMENT_CONFIG,
  ) {
    this.#executor = deps.executor ?? new InProcessExecutor();
    this.#incarnation = `${deps.self}@${deps.clock.now()}`;
    this.#placed = deps.metrics.counter("placement_tasks_placed_total");
    this.#failed = deps.metrics.counter("placement_tasks_failed_total");
    this.#rounds = deps.metrics.counter("placement_rounds_total");
    if (config.hostPools) this.#hostPools = new HostPoolConstraints(config.hostPools);
  }

  /** Tasks held by the engine (dequeued, not yet handed back). */
  get holding(): number {
    return this.#held.tasks;
  }

  start(): void {
    this.#running = true;
    this.#dequeue();
  }

  stop(): void {
    this.#running = false;
    if (this.#dequeueTimer !== undefined) this.deps.clock.cancelTimer(this.#dequeueTimer);
    this.#dequeueTimer = undefined;
    for (const t of this.#acquireTimers) this.deps.clock.cancelTimer(t);
    this.#acquireTimers.clear();
  }

  receive(msg: Message): void {
    if (msg.kind === "gangs") {
      // Gangs in a reply to a dequeue no one waits for (its request was delivered twice, or sent again to a
      // new leader that had it already) are this engine's to place all the same: the resource manager has
      // them PLACING with this engine and would otherwise wait out its placing timeout.
      if (!this.#calls.resolve(msg) && this.#running) {
        this.#admit(msg.gangs);
      }
    } else if (msg.kind === "hosts-acquired" || msg.kind === "host-reserved") {
      this.#calls.resolve(msg);
    } else if (msg.kind === "reservation-update") {
      this.#reservationUpdate(msg.taskId, msg.reservationId, msg.lease, msg.reason);
    } else if (msg.kind === "tasks-dropped") {
      this.#tasksDropped(msg.taskIds);
    }
  }

  /**
   * Tasks the resource manager dropped (stopped) while held here: taken out at once, or when their round
   * ends (its outcome for them is not used). A gang is placed whole, so the rest of one that lost a member
   * is handed back at once rather than tried with the dead member until its deadline; the resource manager
   * offers it again as a gang of the members left.
   */
  #tasksDropped(taskIds: string[]): void {
    const byUnit = new Map<Pending, string[]>();
    for (const id of taskIds) {
      const u = this.#held.get(id);
      if (!u) continue;
      const ids = byUnit.get(u);
      if (ids) ids.push(id);
      else byUnit.set(u, [id]);
    }
    const failed: PlacementFailure[] = [];
    for (const [u, ids] of byUnit) {
      if (u.inRound) (u.stopped ??= []).push(...ids);
      else this.#dropStopped(u, ids, failed);
    }
    this.#handBack([], failed);
  }

  /**
   * Takes stopped tasks out of their unit; a gang's other members are handed back (`failed`). Returns
   * whether the unit is still held (the other tasks of a job's unit of single tasks go on).
   */
  #dropStopped(u: Pending, ids: string[], failed: PlacementFailure[]): boolean {
    const gone = new Set(ids);
    const stopped = u.tasks.filter((t) => gone.has(t.taskId));
    if (!u.gang) {
      if (stopped.length) this.#remove(u, stopped);
      return u.tasks.length > 0 && this.#held.get(u.tasks[0].taskId) === u;
    }
    const names = stopped.map((t) => t.taskId).join(", ");
    const reason =
      (stopped.length === 1 ? `task ${names} of the gang was` : `tasks ${names} of the gang were`) +
      " stopped while it was being placed; the other members go back to the resource manager to be placed " +
      "as a gang without " + (stopped.length === 1 ? "it" : "them");
    for (const t of u.tasks) if (!gone.has(t.taskId)) failed.push({ taskId: t.taskId, reason });
    this.#forget(u);
    return false;
  }

  /** Takes dequeued gangs into the work held, in their host pools when the engine places by pool. */
  #admit(gangs: Gang[]): void {
    const pooled = this.#hostPools ? this.#hostPools.apply(gangs) : gangs;
    this.#held.admit(pooled, this.deps.clock.now(), this.config.policies);
  }

  #call<K extends ReplyMessage["kind"]>(
    to: Address,
    make: (reqId: number) => Message,
    onReply: (r: Reply<K>) => void,
  ) {
    const reqId = this.#calls.register((r) => onReply(r as Reply<K>));
    this.deps.transport.send(to, make(reqId));
  }

  /** Fetches new work; without anything due it long-polls until the next retry is due. */
  #dequeue(): void {
    if (!this.#running || this.#dequeuing || this.#roundsOut >= this.config.pipelineDepth) return;
    this.#dequeuing = true;
    const gen = ++this.#dequeueGen;
    const now = this.deps.clock.now();
    this.#dequeueTimer = this.deps.clock.setTimer(this.config.requestRetryMs, () => {
      this.#dequeueTimer = undefined;
      if (gen !== this.#dequeueGen || !this.#dequeuing) return;
      this.#dequeuing = false;
      this.#dequeue();
    });
    if (this.#activeReservations > 0) this.#expireReservations(now);
    const timeoutMs = Math.max(0, Math.min(this.config.dequeueTimeoutMs, this.#held.nextDue(now) - now));
    this.#call<"gangs">(
      this.deps.resmgr,
      (reqId) => ({
        kind: "dequeue-gangs",
        reqId,
        replyTo: this.deps.self,
        limit: this.config.dequeueLimit,
        timeoutMs,
      }),
      (reply) => {
        if (gen !== this.#dequeueGen) {
          if (this.#running) this.#admit(reply.gangs);
          return;
        }
        this.deps.clock.cancelTimer(this.#dequeueTimer!);
        this.#dequeueTimer = undefined;
        this.#dequeuing = false;
        if (reply.roomEpoch !== undefined && reply.roomEpoch !== this.#roomEpoch) {
          // Room may have appeared: work backing off after failed rounds need not wait its backoff out.
          this.#roomEpoch = reply.roomEpoch;
          this.#held.retrySoon(this.deps.clock.now());
        }
        this.#admit(reply.gangs);
        const due = this.#held.due(this.deps.clock.now(), this.config.roundLimit);
        if (due.length) this.#round(due);
        else this.#dequeue();
      },
    );
  }

  /** Gives leases back to the host manager. */
  #release(leaseIds: string[]): void {
    this.deps.transport.send(this.deps.hostmgr, { kind: "release-hosts", leaseIds });
  }

  /** One round: lease hosts for every group, place in the executor, classify, hand back. */
  #round(due: Pending[]): void {
    const now = this.deps.clock.now();
    due = this.#desiredFirst(due, now);
    // Work waiting for its desired host is placed as bound to it: any other host would only be leased, found
    // not good enough and given back, round after round, while another task may want it.
    const views = due.map((u) => waitsForDesiredHost(u, now) ? boundToDesiredHost(u) : u);
    // A task with a host reserved is a group of its own, so the host manager counts that host by what it
    // lacks rather than as reserved against the task.
    const builder = new RoundBuilder(views, (u) => {
      const r = u.reservation;
      return r?.state === "asked" || r?.state === "waiting" ? u.tasks[0].taskId : undefined;
    });
    const filters = builder.filters(this.config.maxHostsPerFilter);
    const held: HostLease[] = [];
    for (const u of due) {
      if (u.held) held.push(...u.held);
      u.held = undefined;
      u.inRound = true;
    }
    this.#roundsOut++;
    let given = false, answered = false;
    const timer = this.deps.clock.setTimer(this.config.requestRetryMs, () => {
      this.#acquireTimers.delete(timer);
      if (answered) return;
      given = true;
      this.#roundsOut--;
      const failed: PlacementFailure[] = [];
      for (const u of due) {
        u.inRound = false;
        const stopped = u.stopped;
        u.stopped = undefined;
        if (stopped) this.#dropStopped(u, stopped, failed);
      }
      this.#handBack([], failed);
      // Leases kept from an earlier round go back; those of the lost answer end at their lease timeout.
      if (held.length) this.#release(held.map((l) => l.leaseId));
      this.#dequeue();
    });
    this.#acquireTimers.add(timer);
    this.#call<"hosts-acquired">(
      this.deps.hostmgr,
      (reqId) => ({
        kind: "acquire-hosts",
        reqId,
        replyTo: this.deps.self,
        filters,
        // Hosts held for the round are counted by the engine; the host manager leaves them out of its counts.
        ...(held.length ? { held: held.map((l) => l.leaseId) } : {}),
      }),
      (reply) => {
        if (given) {
          if (reply.leases.length) this.#release(reply.leases.map((l) => l.leaseId));
          return;
        }
        answered = true;
        this.#acquireTimers.delete(timer);
        this.deps.clock.cancelTimer(timer);
        if (reply.largestHost) this.#largestHost = reply.largestHost;
        // Held hosts are still leased to this engine, so the host manager cannot hand them out again.
        const leases = held.length ? held.concat(reply.leases) : reply.leases;
        const round = builder.build(leases, this.config.scoreLimit);
        this.#rounds.inc();
        let back = false;
        this.#executor.place(round, (result) => {
          back = true;
          this.#finish(due, views, builder, round, result, reply, filters);
        });
        // While workers place this round, lease and build the next one.
        if (!back) this.#dequeue();
      },
    );
  }

  /**
   * The round's units, those waiting for their desired host first, so their filters lease (and their tasks
   * take) those hosts before other work does. A unit whose wait is over falls back to any host: units still
   * waiting join its round, so it does not lease a host one of them waits for.
   */
  #desiredFirst(due: Pending[], now: number): Pending[] {
    const desired = (u: Pending) => u.tasks.some((t) => t.desiredHost !== undefined);
    if (!due.some(desired)) return due;
    const first = due.filter((u) => waitsForDesiredHost(u, now));
    if (due.some((u) => desired(u) && !waitsForDesiredHost(u, now))) {
      const inDue = new Set(due);
      for (const u of this.#held.all()) {
        if (!u.inRound && !inDue.has(u) && waitsForDesiredHost(u, now)) first.push(u);
      }
    }
    const waiting = new Set(first);
    return first.length ? first.concat(due.filter((u) => !waiting.has(u))) : due;
  }

  #finish(
    due: Pending[],
    views: Pending[],
    builder: RoundBuilder<Pending>,
    round: PlacementRound,
    result: PlacementResult,
    reply: Reply<"hosts-acquired">,
    filters: HostFilter[],
  ): void {
    const now = this.deps.clock.now();
    this.#roundsOut--;
    for (const u of due) u.inRound = false;
    const outcomes = builder.outcomes(result, round.groups);
    const placements = new Map<string, HostPlacement>();
    const failed: PlacementFailure[] = [];
    const pending: PlacementPending[] = [];
    const notYet: [Pending, UnitOutcome["placed"]][] = [];
    const reasons = new Map<number, { text: string; room: boolean; gang?: string }>();
    for (const [i, u] of due.entries()) {
      let o = views[i] === u ? outcomes.get(u) : withOwnTasks(outcomes.get(views[i]), u);
      if (u.stopped) {
        // Stopped while the round was out: what the round found for those tasks (a gang's: all) is not used.
        const ids = u.stopped;
        u.stopped = undefined;
        if (!this.#dropStopped(u, ids, failed)) continue;
        o = o && withoutTasks(o, ids);
      }
      if (u.reservation?.state === "ready") {
        this.#reservedOrHere(u, o?.placed ?? [], now, placements);
        continue;
      }
      if (!o) continue;
      if (o.placed.length) {
        u.rounds++;
        if (this.#goodEnough(u, o.placed, now)) this.#assign(u, o.placed, placements);
        else notYet.push([u, o.placed]);
      }
      if (!o.unplaced.length) continue;
      if (views[i] !== u) {
        // Bound to its desired host, which had no room: it waits for it (never handed back for it).
        u.failedRounds++;
        u.failedAtMs = now;
        this.#awaitDesiredHost(u, o.unplaced[0].desiredHost!, now, pending);
        continue;
      }
      // Tasks of one round unit share their counts: word them once.
      let why = reasons.get(o.roundUnit);
      if (!why) {
        const task = o.unplaced[0];
        const stages = result.failures[o.roundUnit];
        const counts = rejectionCounts(task, stages, reply.rejections[o.group]);
        // A round the executor could not run (a placement worker died) says nothing about room.
        why = result.error === undefined
          ? { text: failureReason(task, counts), room: roomIsMissing(counts) }
          : { text: result.error, room: false };
        if (u.gang) {
          const counted = result.error === undefined ? stages : null;
          why.gang = gangFailure(u.tasks, why.text, counts, counted, builder.leases.length);
        }
        reasons.set(o.roundUnit, why);
      }
      const reason = withRefusal(u, why.gang ?? why.text);
      u.reason = reason;
      u.failedRounds++;
      u.failedAtMs = now;
      if (now >= u.deadlineMs) {
        for (const t of o.unplaced) failed.push({ taskId: t.taskId, reason });
        this.#remove(u, o.unplaced);
        continue;
      }
      if (this.#report(u, reason, now)) pending.push({ reason, taskIds: o.unplaced.map((t) => t.taskId) });
      if (!reply.exhausted[o.group] && u.quick < this.config.quickRetries) {
        u.quick++;
        u.notBeforeMs = now;
      } else u.notBeforeMs = now + backoffMs(u.policy, u.failedRounds);
      if (why.room && !u.gang) this.#maybeReserve(u, o.unplaced[0], filters[o.group]);
    }
    // Peloton's rule: a task whose host another task already launches on goes there too.
    // A lease is held by one unit at most, and never one that goes out with this round's placements: its
    // launch uses the lease up, so a unit placing on it next round would launch on a lease that is gone.
    const claimed = new Set(placements.keys());
    for (const [u, placed] of notYet) {
      const desired = placed.some((p) => p.task.desiredHost !== undefined);
      if (!desired && placed.every((p) => placements.has(p.lease.leaseId))) {
        this.#assign(u, placed, placements);
      } else if (desired) {
        const missed = placed.find((p) => p.task.desiredHost && p.lease.hostname !== p.task.desiredHost);
        this.#awaitDesiredHost(u, (missed ?? placed[0]).task.desiredHost!, now, pending);
      } else {
        u.held = [];
        for (const { lease } of placed) {
          if (claimed.has(lease.leaseId)) continue;
          claimed.add(lease.leaseId);
          u.held.push(lease);
        }
        u.notBeforeMs = now;
      }
    }
    const keep = new Set<string>();
    for (const u of due) for (const l of u.held ?? []) keep.add(l.leaseId);
    const unused = builder.leases.filter((l) => !placements.has(l.leaseId) && !keep.has(l.leaseId))
      .map((l) => l.leaseId);
    this.#handBack([...placements.values()], failed, pending);
    if (unused.length) this.#release(unused);
    this.#dequeue();
  }

  /** Good enough: on the desired host (or past waiting for it), else past max rounds or the deadline. */
  #goodEnough(u: Pending, placed: UnitOutcome["placed"], now: number): boolean {
    if (now >= u.deadlineMs) return true;
    if (placed.some((p) => p.task.desiredHost !== undefined)) {
      return now >= u.desiredDeadlineMs ||
        placed.every((p) => !p.task.desiredHost || p.lease.hostname === p.task.desiredHost);
    }
    return u.rounds >= u.policy.maxRounds;
  }

  /**
   * A unit whose desired host had no room (busy, drained, not offered) before its wait ends: it tries again
   * after a backoff, never past the end of its wait (when any host will do), saying what it waits for and
   * until when (the earlier of the desired-host deadline and its own, past which `#goodEnough` takes any).
   */
  #awaitDesiredHost(u: Pending, host: string, now: number, pending: PlacementPending[]): void {
    const untilMs = desiredWaitEndMs(u);
    u.notBeforeMs = Math.min(untilMs, now + backoffMs(u.policy, u.rounds + u.failedRounds));
    const reason = `waiting for desired host ${host} until ${rfc3339(untilMs)}`;
    u.reason = reason;
    if (this.#report(u, reason, now)) pending.push({ reason, taskIds: u.tasks.map((t) => t.taskId) });
  }

  #assign(u: Pending, placed: UnitOutcome["placed"], placements: Map<string, HostPlacement>): void {
    for (const { task, lease: l, ports } of placed) {
      let p = placements.get(l.leaseId);
      if (!p) {
        placements.set(
          l.leaseId,
          p = { leaseId: l.leaseId, hostname: l.hostname, agentId: l.agentId, tasks: [] },
        );
      }
      p.tasks.push({ taskId: task.taskId, ports });
    }
    this.#remove(u, placed.length === u.tasks.length ? u.tasks : placed.map((p) => p.task));
  }

  #handBack(placements: HostPlacement[], failed: PlacementFailure[], pending: PlacementPending[] = []): void {
    if (!placements.length && !failed.length && !pending.length) return;
    this.#placed.inc(placements.reduce((n, p) => n + p.tasks.length, 0));
    this.#failed.inc(failed.length);
    this.deps.transport.send(
      this.deps.resmgr,
      pending.length
        ? { kind: "set-placements", placements, failed, pending }
        : { kind: "set-placements", placements, failed },
    );
  }

  /**
   * Whether to send a held unit's failure reason to the resource manager: after its first failed round,
   * then when the reason changed and the last report is `reasonIntervalMs` old.
   */
  #report(u: Pending, reason: string, now: number): boolean {
    if (u.reported === reason) return false;
    if (u.reportedAtMs !== undefined && now - u.reportedAtMs < this.config.reasonIntervalMs) return false;
    u.reported = reason;
    u.reportedAtMs = now;
    return true;
  }

  /**
   * A unit goes (placed or handed back): its reservation ends, or its reserved host's lease is given back,
   * and hosts it kept leased from a round that was not good enough (placed on its reserved host meanwhile).
   */
  #forget(u: Pending): void {
    this.#held.forget(u);
    if (u.held?.length) this.#release(u.held.map((l) => l.leaseId));
    u.held = undefined;
    const r = u.reservation;
    u.reservation = undefined;
    if (r?.state === "waiting" || r?.state === "asked") {
      this.#activeReservations--;
      this.#cancelReservation(u.tasks[0].taskId, r.id!);
    } else if (r?.state === "ready") {
      this.#release([r.lease!.leaseId]);
    }
  }

  /** Takes tasks out of a unit (placed or handed back); the unit goes when it has none left. */
  #remove(u: Pending, tasks: RmTask[]): void {
    if (tasks.length >= u.tasks.length) this.#forget(u);
    else this.#held.remove(u, tasks);
  }

  /**
   * After repeated rounds without room, a large task (`isLarge`) gets a host reserved until it fits. It is
   * still tried in rounds meanwhile: placed elsewhere first, its reservation is cancelled. After one ended
   * (timed out, or its host lost or put into maintenance) or was refused (no host could ever hold the task),
   * another needs as many failed rounds again: the task competes for every host for a while first.
   */
  #maybeReserve(unit: Pending, task: RmTask, filter: HostFilter): void {
    const p = this.config.reservation;
    if (!p || unit.failedRounds < p.afterFailedRounds) return;
    const r = unit.reservation;
    const over = r?.state === "ended" || r?.state === "refused";
    if (r && (!over || unit.failedRounds - r.failedRounds! < p.afterFailedRounds)) return;
    if (this.#activeReservations >= p.maxActive) return;
    if (!isLarge(task.resources, this.#largestHost, p.largeShare)) return;
    // A reservation is for one task: it leaves its unit (tasks of a job share one until then).
    const u = unit.tasks.length === 1 ? unit : this.#held.split(unit, task);
    const f: HostFilter = { ...filter, maxHosts: 1, tasks: 1, hints: undefined };
    const id = `${this.#incarnation}/${++this.#reservationSeq}`;
    this.#activeReservations++;
    u.reservation = { state: "asked", id, untilMs: Infinity, filter: f };
    this.#call<"host-reserved">(
      this.deps.hostmgr,
      (reqId) => ({
        kind: "reserve-host",
        reqId,
        replyTo: this.deps.self,
        taskId: task.taskId,
        reservationId: id,
        filter: f,
      }),
      (reply) => {
        if (u.reservation?.id !== id || u.reservation.state !== "asked") {
          // Cancelled while asked: the cancel may have reached the host manager before the request did.
          if (reply.hostname !== undefined && u.reservation?.id !== id) {
            this.#cancelReservation(task.taskId, id);
          }
          return;
        }
        if (reply.hostname === undefined) {
          this.#activeReservations--;
          this.#reservationRefused(u, reply.reason ?? "the host manager refused it");
          return;
        }
        u.refused = undefined;
        u.reservation = {
          state: "waiting",
          id,
          hostname: reply.hostname,
          untilMs: this.deps.clock.now() + p.timeoutMs,
        };
      },
    );
  }

  /**
   * A reserved host has room now (place the task there) or the reservation ended without it. An update of
   * a reservation that is not the task's current one (cancelled, perhaps replaced by another) changes
   * nothing; its lease is given back.
   */
  #reservationUpdate(taskId: string, reservationId: string, lease?: HostLease, reason?: string): void {
    const u = this.#held.get(taskId);
    const r = u?.reservation;
    const waiting = r?.id === reservationId && (r.state === "waiting" || r.state === "asked");
    if (!u || !waiting) {
      if (lease) this.#release([lease.leaseId]);
      return;
    }
    this.#activeReservations--;
    if (!lease) {
      this.#reservationEnded(u, reason ?? "the host manager ended the task's host reservation");
      return;
    }
    if (u.inRound) {
      // The round may place the task elsewhere too: the round's end decides (`#reservedOrHere`).
      u.reservation = { ...u.reservation!, state: "ready", lease };
      return;
    }
    const placements = new Map<string, HostPlacement>();
    this.#placeReserved(u, lease, placements);
    this.#handBack([...placements.values()], []);
  }

  /**
   * A round ends for a unit whose reserved host's lease came meanwhile: a good enough place found in the
   * round is taken and the reserved host given back; otherwise the task goes to the reserved host.
   */
  #reservedOrHere(
    u: Pending,
    placed: UnitOutcome["placed"],
    now: number,
    placements: Map<string, HostPlacement>,
  ): void {
    if (placed.length) u.rounds++;
    if (placed.length && placed.length === u.tasks.length && this.#goodEnough(u, placed, now)) {
      this.#assign(u, placed, placements);
    } else this.#placeReserved(u, u.reservation!.lease!, placements);
  }

  /** Places a unit's one task on its reserved host's lease. */
  #placeReserved(u: Pending, lease: HostLease, placements: Map<string, HostPlacement>): void {
    const task: RmTask = u.tasks[0];
    u.reservation = undefined;
    this.#forget(u);
    const ports = pickPorts(task.ports, lease.freePorts, new Set()) ?? {};
    placements.set(lease.leaseId, {
      leaseId: lease.leaseId,
      hostname: lease.hostname,
      agentId: lease.agentId,
      tasks: [{ taskId: task.taskId, ports }],
    });
  }

  /**
   * Reservations that waited too long end: the host goes back to the host manager (a lease it sent before
   * the cancel reached it is given back, `#reservationUpdate`) and the task is tried on until its own
   * deadline, as any other. The resource manager hears at once why it still waits.
   */
  #expireReservations(now: number): void {
    const pending: PlacementPending[] = [];
    for (const u of this.#held.all()) {
      const r = u.reservation;
      // A unit in a round is decided when the round ends; it expires after, if still waiting.
      if (r?.state !== "waiting" || r.untilMs > now || u.inRound) continue;
      this.#activeReservations--;
      u.reservation = { state: "ended", hostname: r.hostname, untilMs: 0, failedRounds: u.failedRounds };
      this.#cancelReservation(u.tasks[0].taskId, r.id!);
      const reason = `host ${r.hostname} was reserved for the task but did not free up in time; ${u.reason}`;
      u.reported = reason;
      u.reportedAtMs = now;
      pending.push({ reason, taskIds: [u.tasks[0].taskId] });
    }
    this.#handBack([], [], pending);
  }

  /**
   * The host manager ended the reservation (its host was lost or put into maintenance): as after a timeout,
   * the task competes for every host and may reserve another after as many failed rounds as the first
   * time. The resource manager hears at once why the task still waits.
   */
  #reservationEnded(u: Pending, why: string): void {
    const now = this.deps.clock.now();
    u.reservation = {
      state: "ended",
      hostname: u.reservation?.hostname,
      untilMs: 0,
      failedRounds: u.failedRounds,
    };
    u.notBeforeMs = now;
    const reason = u.reason ? `${why}; ${u.reason}` : why;
    u.reported = reason;
    u.reportedAtMs = now;
    this.#handBack([], [], [{ reason, taskIds: [u.tasks[0].taskId] }]);
  }

  /**
   * No host could ever hold the task now: the resource manager hears so at once, and, as after a reservation
   * ended, the task may ask again after as many failed rounds as the first time (capacity may grow). The
   * refusal stays on the task's reason after its rounds' own (which stays the headline), so a refusal
   * repeated for the same reason changes nothing the resource manager has heard.
   */
  #reservationRefused(u: Pending, why: string): void {
    const now = this.deps.clock.now();
    u.reservation = { state: "refused", untilMs: 0, failedRounds: u.failedRounds };
    u.reason = roundReason(u);
    u.refused = why;
    const reason = withRefusal(u, u.reason);
    u.reason = reason;
    if (u.reported === reason) return;
    u.reported = reason;
    u.reportedAtMs = now;
    this.#handBack([], [], [{ reason, taskIds: [u.tasks[0].taskId] }]);
  }

  #cancelReservation(taskId: string, reservationId: string): void {
    this.deps.transport.send(this.deps.hostmgr, { kind: "cancel-reservation", taskId, reservationId });
  }
}

/** When a unit stops waiting for its desired host and takes any: the earlier of its two deadlines. */
function desiredWaitEndMs(u: Pending): number {
  return Math.min(u.desiredDeadlineMs, u.deadlineMs);
}

/** Whether a unit with a desired host still waits for it (is placed on it or nowhere). */
function waitsForDesiredHost(u: Pending, now: number): boolean {
  return now < desiredWaitEndMs(u) && u.tasks.some((t) => t.desiredHost !== undefined);
}

/** The unit as a round places it while it waits: its tasks bound to their desired hosts. */
function boundToDesiredHost(u: Pending): Pending {
  const tasks = u.tasks.map((t) =>
    t.desiredHost !== undefined && t.requiredHost === undefined ? { ...t, requiredHost: t.desiredHost } : t
  );
  return { ...u, tasks };
}

/** A round's outcome for a unit's view (`boundToDesiredHost`) in the unit's own tasks. */
function withOwnTasks(o: UnitOutcome | undefined, u: Pending): UnitOutcome | undefined {
  if (!o) return o;
  const own = new Map(u.tasks.map((t) => [t.taskId, t]));
  const back = (t: RmTask) => own.get(t.taskId) ?? t;
  return {
    ...o,
    placed: o.placed.map((p) => ({ ...p, task: back(p.task) })),
    unplaced: o.unplaced.map(back),
  };
}

/** A round's outcome for a unit without the tasks stopped while the round was out. */
function withoutTasks(o: UnitOutcome, taskIds: string[]): UnitOutcome {
  const gone = new Set(taskIds);
  return {
    ...o,
    placed: o.placed.filter((p) => !gone.has(p.task.taskId)),
    unplaced: o.unplaced.filter((t) => !gone.has(t.taskId)),
  };
}

function refusalNote(why: string): string {
  return `; no host could be reserved for the task: ${why}`;
}

/** A round's reason for a unit, followed by the host manager's last refusal to reserve a host for it. */
function withRefusal(u: Pending, reason: string | undefined): string {
  if (u.refused === undefined) return reason ?? "";
  return reason ? reason + refusalNote(u.refused) : `no host could be reserved for the task: ${u.refused}`;
}

/** A unit's reason without the refusal `withRefusal` added to it. */
function roundReason(u: Pending): string | undefined {
  if (u.refused === undefined || !u.reason) return u.reason;
  const note = refusalNote(u.refused);
  return u.reason.endsWith(note) ? u.reason.slice(0, -note.length) : undefined;
}
