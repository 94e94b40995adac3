/** The resource manager's view of a task and of a queued gang. */
import type { Gang, RmTask } from "../messages.ts";
import { addInto, type Resources, zero } from "../model/resources.ts";
import type { TaskState } from "../model/states.ts";
import type { Address } from "../ports/transport.ts";
import type { RespoolNode } from "./respool_node.ts";

/** A gang waiting in a pool's queue or in the ready queue; its resources are summed once. */
export interface QueuedGang extends Gang {
  priority: number;
  resources: Resources;
  revocable: boolean;
  preemptible: boolean;
  /** Peloton's `isController`: a gang of exactly one controller task. */
  controller: boolean;
  enqueuedAtMs: number;
  /** Set when an earlier attempt failed, so placement retries are paced. */
  notBeforeMs: number;
}

export interface RmTaskEntry {
  task: RmTask;
  state: TaskState;
  pool: RespoolNode;
  /** When the task entered its state. */
  sinceMs: number;
  /** When the task first reported RUNNING: the preemption ranker takes the most recently started first. */
  startedMs?: number;
  /** Dequeues to placement so far; a PLACING timeout or answer belongs to one attempt. */
  placementAttempts: number;
  /**
   * The gang the task is queued or ready in. A task moved out (preempted back to PENDING, retried) gets a
   * new gang, so a copy left in an older gang is recognised as stale and skipped.
   */
  gang?: QueuedGang;
  /**
   * The attempt still out with a placement engine when the task was preempted back to PENDING: its answer
   * (placement or failure) is dropped rather than taken for a later attempt.
   */
  staleAttempt?: number;
  /** Why the last placement attempt failed, shown by `task list`. */
  lastFailure?: string;
  /** The job manager driving the task, when several run (production); unset: any job manager. */
  owner?: Address;
}

/** A queued gang over `tasks` (copied: the pool may drop tasks from it in place). */
export function queuedGang(gang: Gang, nowMs: number): QueuedGang {
  const tasks = gang.tasks.slice();
  const resources = zero();
  for (const t of tasks) addInto(resources, t.resources);
  const first = tasks[0];
  return {
    tasks,
    priority: first.priority,
    resources,
    revocable: first.revocable,
    preemptible: first.preemptible,
    controller: tasks.length === 1 && first.controller,
    enqueuedAtMs: nowMs,
    notBeforeMs: 0,
  };
}
