/**
 * SLA-aware host maintenance (Peloton's `pkg/jobmgr/cached/job.go` `filterRuntimeDiffsBySLA`): a service
 * with `sla.maximumUnavailableInstances` set loses at most that many instances at once to draining hosts.
 * An available instance on a draining host waits while the job already has that many instances
 * unavailable, and is drained as soon as one of them is available again (or its host leaves maintenance,
 * when it stays where it is).
 *
 * Availability follows Peloton's `getInstanceAvailability`: an instance is available when it runs the
 * run and config it should, is RUNNING with goal RUNNING, and is healthy or has no health check. Instances
 * an operator stopped or deleted count as neither available nor unavailable. Where Peloton counts an
 * instance being replaced for another reason than maintenance, an update or a failure as KILLED, this
 * counts it as unavailable too: it is down either way, and the SLA is about instances that are down.
 */
import type { TaskRecord } from "../model/records.ts";
import type { JobEntry } from "./job_entry.ts";

/** What the message of a task whose drain the SLA holds back says (the simulator's drain report looks for it). */
export const SLA_HOLD_TEXT = "draining waits for the job's SLA";

export type Availability = "AVAILABLE" | "UNAVAILABLE" | "KILLED" | "DELETED";

export function availability(t: TaskRecord): Availability {
  if (t.goalState === "DELETED") return "DELETED";
  if (t.goalState === "KILLED") return "KILLED";
  const replacing = (t.desiredRunId !== undefined && t.desiredRunId !== t.runId) ||
    (t.desiredConfigVersion !== undefined && t.desiredConfigVersion !== t.configVersion);
  if (
    !replacing && t.state === "RUNNING" && t.goalState === "RUNNING" &&
    (t.healthy === "HEALTHY" || t.healthy === "DISABLED")
  ) return "AVAILABLE";
  return "UNAVAILABLE";
}

/** Instances of the job that are unavailable now. */
export function unavailableCount(job: JobEntry): number {
  let n = 0;
  for (const t of job.tasks.values()) if (availability(t) === "UNAVAILABLE") n++;
  return n;
}

/** The job's SLA limit on instances drained at once, or 0 when it has none (not a service, or unset). */
export function maintenanceLimit(job: JobEntry): number {
  return job.config.type === "SERVICE" ? job.config.sla.maximumUnavailableInstances : 0;
}

/** Host states of maintenance: an instance pinned to such a host cannot run until it leaves maintenance. */
const IN_MAINTENANCE = new Set(["HOST_STATE_DRAINING", "HOST_STATE_DRAINED", "HOST_STATE_DOWN"]);

/** Instances named one by one in a held drain's message; more are counted. */
const NAMED_MAX = 3;

/**
 * Why a job's held drains wait: how many instances are down, which (with their state, which says why they
 * are not back), and for one pinned to a host in maintenance (by its volume), that it can only come back
 * when that host leaves maintenance: the drain then waits until an operator completes that maintenance.
 */
export function holdReason(
  job: JobEntry,
  limit: number,
  hostStateOf: (hostname: string) => string | undefined,
): string {
  const down = [...job.tasks.values()].filter((t) => availability(t) === "UNAVAILABLE")
    .sort((a, b) => a.instanceId - b.instanceId);
  const named = down.slice(0, NAMED_MAX).map((t) => {
    const text = `instance ${t.instanceId} (${t.state})`;
    const pin = t.requiredHost;
    const state = pin === undefined ? undefined : hostStateOf(pin);
    if (pin === undefined || state === undefined || !IN_MAINTENANCE.has(state)) return text;
    return `${text}, pinned ${t.volumeId ? "by its volume " : ""}to host ${pin}, which is in maintenance ` +
      `(${state}): it runs again only when ${pin} leaves maintenance`;
  });
  if (down.length > NAMED_MAX) named.push(`${down.length - NAMED_MAX} more`);
  return `${down.length} of at most ${limit} instances unavailable${
    named.length ? `: ${named.join("; ")}` : ""
  }`;
}

/** The message of a task whose drain off `hostname` the SLA holds back, for the `holdReason` of its job. */
export function holdMessage(hostname: string, reason: string): string {
  return `host ${hostname} is in maintenance: ${SLA_HOLD_TEXT}, ${reason}`;
}

/** A drain the SLA holds back: the run to drain and the host in maintenance it runs on. */
interface Waiting {
  taskId: string;
  hostname: string;
}

/** Drains held back by their jobs' SLA, per job and instance. */
export class SlaDrains {
  readonly #waiting = new Map<JobEntry, Map<number, Waiting>>();
  /** Jobs to look at again at the next flush: one of their instances changed. */
  readonly #recheck = new Set<JobEntry>();

  get size(): number {
    return this.#waiting.size;
  }

  /** Holds the task's drain; the next flush's `recheck` says why (once for all the job's held drains). */
  hold(job: JobEntry, task: TaskRecord, w: Waiting): void {
    let byInstance = this.#waiting.get(job);
    if (!byInstance) this.#waiting.set(job, byInstance = new Map());
    byInstance.set(task.instanceId, w);
    this.#recheck.add(job);
  }

  /** An instance of `job` changed: its held drains are looked at again. */
  changed(job: JobEntry): void {
    if (this.#waiting.has(job)) this.#recheck.add(job);
  }

  /**
   * Hosts changed state (maintenance completed, say): the jobs holding drains on them look again, and so do
   * those with an unavailable instance pinned to one (the reason they give names its host's state).
   */
  hostsChanged(hostnames: ReadonlySet<string>): void {
    for (const [job, byInstance] of this.#waiting) {
      const onChanged = [...byInstance.values()].some((w) => hostnames.has(w.hostname)) ||
        [...job.tasks.values()].some((t) =>
          t.requiredHost !== undefined && hostnames.has(t.requiredHost) && availability(t) === "UNAVAILABLE"
        );
      if (onChanged) this.#recheck.add(job);
    }
  }

  /** The job is no longer this job manager's (released, deleted or done). */
  forget(job: JobEntry): void {
    this.#waiting.delete(job);
    this.#recheck.delete(job);
  }

  /** The task is drained (or stopped) now: no longer held. */
  forgetTask(job: JobEntry, task: TaskRecord): void {
    const byInstance = this.#waiting.get(job);
    if (!byInstance?.delete(task.instanceId) || byInstance.size) return;
    this.#waiting.delete(job);
    this.#recheck.delete(job);
  }

  /**
   * The held drains of the jobs that changed, each either still held, dropped (`stale`: the run is gone,
   * or its host left maintenance) or handed to `drain` once the SLA allows; those still held go to `held`,
   * once per job, to say why anew (the instances down may have changed).
   */
  recheck(
    stale: (job: JobEntry, task: TaskRecord | undefined, w: Waiting) => boolean,
    drain: (job: JobEntry, task: TaskRecord) => void,
    held: (job: JobEntry, still: { task: TaskRecord; w: Waiting }[], limit: number) => void = () => {},
  ): void {
    if (!this.#recheck.size) return;
    const jobs = [...this.#recheck];
    this.#recheck.clear();
    for (const job of jobs) {
      const byInstance = this.#waiting.get(job);
      if (!byInstance) continue;
      let unavailable = unavailableCount(job);
      const limit = maintenanceLimit(job);
      const still: { task: TaskRecord; w: Waiting }[] = [];
      for (const [instanceId, w] of byInstance) {
        const task = job.tasks.get(instanceId);
        if (stale(job, task, w)) {
          byInstance.delete(instanceId);
          continue;
        }
        // Draining an instance that is down already takes nothing more away.
        const available = availability(task!) === "AVAILABLE";
        if (available && limit > 0 && unavailable >= limit) {
          still.push({ task: task!, w });
          continue;
        }
        byInstance.delete(instanceId);
        drain(job, task!);
        if (available) unavailable++;
      }
      if (!byInstance.size) this.#waiting.delete(job);
      // After the loop: drains in it change the states the reason names.
      if (still.length) held(job, still, limit);
    }
  }
}
