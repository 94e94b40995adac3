/** A gang waiting in a pool's queue or in the ready queue; its resources are summed once. */
import { addInto, type Resources, zero } from "../model/resources.ts";
import { CONTROLLER, PREEMPTIBLE, REVOCABLE } from "./allocation.ts";
import type { TaskTable } from "./task_table.ts";

export class QueuedGang {
  readonly table: TaskTable;
  /** The gang's task rows; the pool drops a task from it in place when it goes while queued. */
  readonly rows: number[];
  readonly priority: number;
  /**
   * Replaced, never changed in place: a one-task gang shares its task's resources. `RespoolNode`'s
   * `dropQueuedTask` sets a new sum.
   */
  resources: Resources;
  readonly revocable: boolean;
  readonly preemptible: boolean;
  /** Peloton's `isController`: a gang of exactly one controller task. */
  controller: boolean;
  /** Set when an earlier attempt failed, so placement retries are paced. */
  notBeforeMs: number;
  /**
   * Queued and counted in its pool's `neverDemand` (or `neverSlackDemand`): the pool can never admit it as
   * its config stands (`admission_bounds.ts`).
   */
  neverAdmitted: boolean;

  /** `rows` is taken over, not copied; each row's gang is set to this one. */
  constructor(table: TaskTable, rows: number[]) {
    const first = rows[0];
    let resources = table.resources[first]!;
    if (rows.length > 1) {
      resources = zero();
      for (const row of rows) addInto(resources, table.resources[row]!);
    }
    for (const row of rows) table.gang[row] = this;
    const flags = table.flags[first];
    this.table = table;
    this.rows = rows;
    this.priority = table.priority[first];
    this.resources = resources;
    this.revocable = (flags & REVOCABLE) !== 0;
    this.preemptible = (flags & PREEMPTIBLE) !== 0;
    this.controller = rows.length === 1 && (flags & CONTROLLER) !== 0;
    this.notBeforeMs = 0;
    this.neverAdmitted = false;
  }

  /** After a drop: a gang of exactly one controller task is a controller gang. */
  updateController(): void {
    this.controller = this.rows.length === 1 && (this.table.flags[this.rows[0]] & CONTROLLER) !== 0;
  }
}
