/** Why a drain is not over when a run ends: what holds the tasks still on its hosts, by workload. */
import type { JobEntry } from "../core/jobmgr/job_entry.ts";
import type { JobManager } from "../core/jobmgr/jobmgr.ts";
import { availability, maintenanceLimit, SLA_HOLD_TEXT } from "../core/jobmgr/sla_drain.ts";
import type { TaskRecord } from "../core/model/records.ts";
import type { SimCluster } from "./cluster.ts";
import type { DrainPending } from "./events.ts";

type Why = "sla" | "killing" | string;

/**
 * The tasks on `hosts` and what holds them: the job's SLA (with its unavailable instances by state, which
 * say why they are not back: PENDING for room, say), a kill still under way, or the task's own state and
 * message. Grouped by workload and reason, most tasks first.
 */
export function explainDrain(
  hosts: string[],
  cluster: SimCluster,
  jobmgr: JobManager,
  workloadOf: (jobId: string) => string | undefined,
): DrainPending {
  const groups = new Map<
    string,
    { workload: string; why: Why; jobs: Map<string, JobEntry>; tasks: number }
  >();
  let tasks = 0;
  for (const host of hosts) {
    for (const taskId of cluster.taskIdsOn(host)) {
      tasks++;
      const found = jobmgr.find(taskId, true);
      const workload = found ? workloadOf(found.job.jobId) ?? found.job.config.name : "(unknown)";
      const why = found ? reasonOf(found.task) : "not a task the job manager knows";
      const key = `${workload}\n${why}`;
      let g = groups.get(key);
      if (!g) groups.set(key, g = { workload, why, jobs: new Map(), tasks: 0 });
      g.tasks++;
      if (found) g.jobs.set(found.job.jobId, found.job);
    }
  }
  const holding = [...groups.values()]
    .sort((a, b) => b.tasks - a.tasks || a.workload.localeCompare(b.workload))
    .map((g) => ({ workload: g.workload, jobs: g.jobs.size, tasks: g.tasks, why: describe(g.why, g.jobs) }));
  return { hosts: hosts.length, tasks, holding };
}

function reasonOf(task: TaskRecord): Why {
  if (task.state === "KILLING" || task.state === "PREEMPTING") return "killing";
  if (task.message?.includes(SLA_HOLD_TEXT)) return "sla";
  return task.message ? `${task.state}: ${task.message}` : task.state;
}

function describe(why: Why, jobs: Map<string, JobEntry>): string {
  if (why === "killing") return "being killed: the drain ends when the kill does";
  if (why !== "sla") return why;
  const limits = [...new Set([...jobs.values()].map(maintenanceLimit))].sort((a, b) => a - b);
  const down = new Map<string, number>();
  for (const job of jobs.values()) {
    for (const t of job.tasks.values()) {
      if (availability(t) === "UNAVAILABLE") down.set(t.state, (down.get(t.state) ?? 0) + 1);
    }
  }
  const states = [...down].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${n} ${s}`).join(", ");
  return `held by the job's SLA (sla.maximumUnavailableInstances ${limits.join(" or ")}): its instances ` +
    `already unavailable are not back (${states || "none now"})`;
}
