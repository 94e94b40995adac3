/**
 * Peloton's `use_host_pool` placement option (`pkg/placement/plugins/helpers.go`): every task is placed in
 * the host pool its kind of work belongs to, by a HOST constraint `host_pool = <pool>` added to its own
 * (preemptible batch in `shared`, non-preemptible batch in `batch_reserved`, stateless in `stateless`).
 * Peloton sets a pool only for batch and stateless work; stateful and daemon tasks keep their constraints.
 */
import type { Gang, RmTask } from "../messages.ts";
import type { Constraint } from "../model/config_types.ts";
import { HOST_POOL_ATTRIBUTE } from "../hostmgr/host_pools.ts";

/** The pool each kind of work is placed in. */
export interface HostPoolPolicy {
  batchPreemptible: string;
  batchNonPreemptible: string;
  stateless: string;
}

/** Peloton's pools (`common.SharedHostPoolID`, `BatchReservedHostPoolID`, `StatelessHostPoolID`). */
export const PELOTON_HOST_POOLS: HostPoolPolicy = {
  batchPreemptible: "shared",
  batchNonPreemptible: "batch_reserved",
  stateless: "stateless",
};

/** The pool a task is placed in under `policy`, or undefined for work Peloton leaves to its constraints. */
export function hostPoolOf(t: RmTask, policy: HostPoolPolicy): string | undefined {
  if (t.taskType === "BATCH") return t.preemptible ? policy.batchPreemptible : policy.batchNonPreemptible;
  if (t.taskType === "STATELESS") return policy.stateless;
  return undefined;
}

/**
 * Adds the pool constraint to the tasks of dequeued gangs. Tasks sharing a constraint object keep sharing
 * one (placement groups tasks by constraint identity), so each (constraint, pool) pair is built once.
 */
export class HostPoolConstraints {
  readonly #alone = new Map<string, Constraint>();
  readonly #with = new Map<string, WeakMap<Constraint, Constraint>>();

  constructor(readonly policy: HostPoolPolicy) {}

  apply(gangs: Gang[]): Gang[] {
    return gangs.map((g) => ({ tasks: g.tasks.map((t) => this.#task(t)) }));
  }

  #task(t: RmTask): RmTask {
    const pool = hostPoolOf(t, this.policy);
    return pool === undefined ? t : { ...t, constraint: this.#constraint(pool, t.constraint) };
  }

  #constraint(pool: string, own: Constraint | undefined): Constraint {
    let alone = this.#alone.get(pool);
    if (!alone) {
      alone = {
        type: "LABEL_CONSTRAINT",
        labelConstraint: {
          kind: "HOST",
          condition: "EQUAL",
          label: { key: HOST_POOL_ATTRIBUTE, value: pool },
          requirement: 1,
        },
      };
      this.#alone.set(pool, alone);
    }
    if (!own) return alone;
    let byOwn = this.#with.get(pool);
    if (!byOwn) this.#with.set(pool, byOwn = new WeakMap());
    let both = byOwn.get(own);
    if (!both) {
      both = { type: "AND_CONSTRAINT", andConstraint: { constraints: [own, alone] } };
      byOwn.set(own, both);
    }
    return both;
  }
}
