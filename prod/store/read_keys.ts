/**
 * What a read must wait for: the rows each write touches and each read observes, named by keys, so a read
 * waits for the pending writes it could see and not for the whole queue (a large job's task writes).
 */
import type { StoreWrite } from "../../core/ports/store.ts";

/**
 * Tables a read takes whole or by something other than a job (a query, recovery's active rows, an update or
 * a volume by its own id): such a read waits for every pending write of the table.
 */
export type WholeTable =
  | "jobs"
  | "tasks"
  | "updates"
  | "volumes"
  | "respools"
  | "maintenance"
  | "hostPools"
  | "adminLocks";

/** A job's rows in one table (its own row: `job`), for reads that name the job. */
export type JobRows = "job" | "tasks" | "taskEvents" | "configs" | "updates" | "workflowEvents" | "secrets";

/** A key read and written: a whole table's, or one job's rows in a table (with a space: never a table's). */
export type ReadKey = WholeTable | `${JobRows} ${string}`;

export function ofJob(rows: JobRows, jobId: string): ReadKey {
  return `${rows} ${jobId}`;
}

/** The keys of every row a batch writes or deletes. */
export function writeKeys(batch: readonly StoreWrite[]): Set<ReadKey> {
  const keys = new Set<ReadKey>();
  for (const w of batch) for (const key of keysOf(w)) keys.add(key);
  return keys;
}

function keysOf(w: StoreWrite): ReadKey[] {
  switch (w.kind) {
    case "job.put":
      return ["jobs", ofJob("job", w.job.jobId)];
    case "job.delete":
      // Every table keyed by the job; a volume or an update read by its own id may be one of them.
      return [
        "jobs",
        "tasks",
        "updates",
        "volumes",
        ...(["job", "tasks", "taskEvents", "configs", "updates", "workflowEvents", "secrets"] as const)
          .map((rows) => ofJob(rows, w.jobId)),
      ];
    case "job.config":
      return [ofJob("configs", w.jobId)];
    case "task.put":
      // `tasks` too: recovery's active jobs are found through the tasks with work left.
      return ["tasks", ofJob("tasks", w.task.jobId)];
    case "task.delete":
      return ["tasks", ofJob("tasks", w.jobId)];
    case "task.event":
      return [ofJob("taskEvents", w.event.jobId)];
    case "task.events.delete":
      return [ofJob("taskEvents", w.jobId)];
    case "update.put":
      return ["updates", ofJob("updates", w.update.jobId)];
    case "workflow.event":
      return [ofJob("workflowEvents", w.event.jobId)];
    case "workflow.events.delete":
      return [ofJob("workflowEvents", w.jobId)];
    case "secret.put":
      return [ofJob("secrets", w.secret.jobId)];
    case "volume.put":
    case "volume.delete":
      return ["volumes"];
    case "respool.put":
    case "respool.delete":
      return ["respools"];
    case "maintenance.put":
    case "maintenance.delete":
      return ["maintenance"];
    case "hostpool.put":
    case "hostpool.delete":
    case "hostpool.assign":
      return ["hostPools"];
    case "admin.lock":
    case "admin.unlock":
      return ["adminLocks"];
    default:
      throw new Error(`Cannot key ${(w satisfies never as StoreWrite).kind}: unknown kind of write`);
  }
}
