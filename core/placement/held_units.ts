/** The work the placement engine holds between dequeue and hand-back, as units, oldest first. */
import type { Gang, HostFilter, HostLease, RmTask } from "../messages.ts";
import type { TaskType } from "../model/states.ts";
import type { TaskTypePolicy } from "./policy.ts";
import { sameNeeds, type UnitOfWork } from "./round_build.ts";

/** A gang, or tasks of one job with the same needs, held between dequeue and hand-back. */
export interface Pending extends UnitOfWork {
  id: number;
  deadlineMs: number;
  desiredDeadlineMs: number;
  /** Rounds in which a host was found (Peloton's `Rounds`). */
  rounds: number;
  failedRounds: number;
  /** When the last failed round ended. */
  failedAtMs?: number;
  quick: number;
  notBeforeMs: number;
  /** Part of a round that is out (its tasks are in no other round meanwhile). */
  inRound?: boolean;
  /** Tasks the resource manager dropped while the unit's round was out: taken out when the round ends. */
  stopped?: string[];
  reason?: string;
  /**
   * Why the host manager last refused to reserve a host for the unit's task (no ready host could ever hold
   * it): the unit's reason carries it after its round's own, until a reservation is granted.
   */
  refused?: string;
  /** The reason last sent to the resource manager while the unit is still tried, and when. */
  reported?: string;
  reportedAtMs?: number;
  /** Hosts found in a round that was not good enough yet: kept leased for the next round. */
  held?: HostLease[];
  /**
   * A host reserved for the unit's one task. The unit is still tried in rounds meanwhile (`asked`,
   * `waiting`); `ready`: the reserved host's lease came while the unit was in a round, which decides;
   * `ended`: cancelled after waiting too long, or ended by the host manager (its host lost or put into
   * maintenance), the task tried on until its own deadline; `refused`: no host could ever hold the task
   * when asked (it may reserve again later, as after `ended`).
   */
  reservation?: {
    state: "asked" | "waiting" | "ready" | "refused" | "ended";
    /** The engine's name for it on reserve, update and cancel messages (while asked, waiting or ready). */
    id?: string;
    hostname?: string;
    untilMs: number;
    filter?: HostFilter;
    lease?: HostLease;
    /** `ended`, `refused`: the unit's failed rounds then; a new reservation needs as many more as the first. */
    failedRounds?: number;
  };
}

export class HeldUnits {
  readonly #units = new Map<number, Pending>();
  readonly #byTask = new Map<string, Pending>();
  #next = 0;

  /** Tasks held. */
  get tasks(): number {
    return this.#byTask.size;
  }

  get(taskId: string): Pending | undefined {
    return this.#byTask.get(taskId);
  }

  all(): IterableIterator<Pending> {
    return this.#units.values();
  }

  /** Holds dequeued work: a gang as one unit; single tasks of a job with the same needs as one unit too. */
  admit(gangs: Gang[], now: number, policies: Record<TaskType, TaskTypePolicy>): void {
    const open = new Map<string, Pending>();
    for (const g of gangs) {
      const tasks = g.tasks.some((t) => this.#byTask.has(t.taskId))
        ? g.tasks.filter((t) => !this.#byTask.has(t.taskId))
        : g.tasks;
      if (!tasks.length) continue;
      const first = tasks[0];
      const policy = policies[first.taskType];
      const gang = tasks.length > 1 || first.minInstances > 1;
      const same = gang ? undefined : open.get(first.jobId);
      if (same && sameNeeds(same.tasks[0], first, same.policy, policy)) {
        same.tasks.push(first);
        this.#byTask.set(first.taskId, same);
        continue;
      }
      const u: Pending = {
        id: this.#next++,
        tasks: gang ? tasks : [first],
        gang,
        policy,
        deadlineMs: now + policy.maxDurationMs,
        desiredDeadlineMs: now + policy.desiredHostDurationMs,
        rounds: 0,
        failedRounds: 0,
        quick: 0,
        notBeforeMs: now,
      };
      this.#units.set(u.id, u);
      for (const t of u.tasks) this.#byTask.set(t.taskId, u);
      if (!gang) open.set(first.jobId, u);
    }
  }

  /** Units due for a round, oldest first, up to the round limit; one waiting for a reserved host too. */
  due(now: number, limit: number): Pending[] {
    const out: Pending[] = [];
    let n = 0;
    for (const u of this.#units.values()) {
      if (u.inRound || u.notBeforeMs > now) continue;
      if (n && n + u.tasks.length > limit) break;
      out.push(u);
      n += u.tasks.length;
    }
    return out;
  }

  /** When the next held unit is due (a retry or a reservation's deadline); Infinity with none. */
  nextDue(now: number): number {
    let next = Infinity;
    for (const u of this.#units.values()) {
      if (u.inRound) continue;
      const r = u.reservation;
      const at = r?.state === "waiting" ? Math.min(u.notBeforeMs, r.untilMs) : u.notBeforeMs;
      if (at < next && (next = at) <= now) break;
    }
    return next;
  }

  /**
   * Room may have appeared (tasks ended, hosts joined or came back): units backing off after failed rounds
   * are due once their first backoff step has passed since the failure, as Peloton retried every second,
   * rather than when their grown backoff ends. Without such news the backoff keeps growing.
   */
  retrySoon(now: number): void {
    for (const u of this.#units.values()) {
      if (u.failedAtMs === undefined || u.notBeforeMs <= now) continue;
      u.notBeforeMs = Math.min(u.notBeforeMs, Math.max(now, u.failedAtMs + u.policy.retryBackoffMs));
    }
  }

  /** Takes some (not all) tasks out of a unit. */
  remove(u: Pending, tasks: RmTask[]): void {
    const gone = new Set(tasks);
    u.tasks = u.tasks.filter((t) => !gone.has(t));
    for (const t of tasks) this.#byTask.delete(t.taskId);
  }

  forget(u: Pending): void {
    this.#units.delete(u.id);
    for (const t of u.tasks) this.#byTask.delete(t.taskId);
  }

  /** Moves one task into a unit of its own (a host reservation is for one task). */
  split(u: Pending, task: RmTask): Pending {
    u.tasks = u.tasks.filter((t) => t !== task);
    const v: Pending = { ...u, id: this.#next++, tasks: [task], held: undefined };
    this.#units.set(v.id, v);
    this.#byTask.set(task.taskId, v);
    return v;
  }
}
