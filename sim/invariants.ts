/** Invariant checkers run during simulations: a broken invariant fails loudly with the seed. */
import type { JobEntry } from "../core/jobmgr/job_entry.ts";
import { availability, maintenanceLimit } from "../core/jobmgr/sla_drain.ts";
import type { Message } from "../core/messages.ts";
import { parseMesosTaskId } from "../core/model/records.ts";
import { isActiveOnHost } from "../core/model/states.ts";
import type { Simulation } from "./runner.ts";

export class InvariantError extends Error {
  override readonly name = "InvariantError";
  constructor(message: string, readonly seed: number) {
    super(`${message} (rerun with --seed ${seed})`);
  }
}

/**
 * Hosts are never over-committed (revocable cpu aside, which is slack), the host manager and the cluster agree on what runs where,
 * every task the job manager believes is on a host is known to that host, and no service lost more
 * instances at once to host maintenance than its SLA allows (`MaintenanceSlaCheck`).
 */
export function checkInvariants(sim: Simulation, seed: number): void {
  const sla = sim.maintenanceSla?.broken;
  if (sla) throw new InvariantError(sla, seed);
  const usage = sim.cluster.usageByHost();
  for (const h of sim.hostmgr.hosts) {
    const f = h.free, t = h.info.resources;
    if (f.cpuMilli < 0 || f.memMb < 0 || f.diskMb < 0 || f.gpuMilli < 0) {
      throw new InvariantError(`host ${h.info.hostname} over-committed: free ${JSON.stringify(f)}`, seed);
    }
    const u = usage.get(h.info.hostname);
    // Revocable tasks run on cpu that others were allocated and do not use (slack, at most the host's cpu);
    // their memory, disk and gpu are allocated as any task's.
    if (
      u && (u.cpuMilli > t.cpuMilli || u.revocableCpuMilli > t.cpuMilli || u.memMb > t.memMb ||
        u.diskMb > t.diskMb || u.gpuMilli > t.gpuMilli)
    ) {
      throw new InvariantError(
        `tasks on ${h.info.hostname} use ${JSON.stringify(u)} of ${JSON.stringify(t)}`,
        seed,
      );
    }
  }
  const seen = new Map<string, string>();
  for (const h of sim.hostmgr.hosts) {
    for (const taskId of h.tasks.keys()) {
      const other = seen.get(taskId);
      if (other) {
        throw new InvariantError(`task ${taskId} is on two hosts: ${other} and ${h.info.hostname}`, seed);
      }
      seen.set(taskId, h.info.hostname);
    }
  }
  // Task states cross daemons in messages; compare them only when nothing is in flight.
  if (sim.transport.inFlight > 0) return;
  for (const job of sim.jobmgr.jobs.values()) {
    for (const task of job.tasks.values()) {
      if (!isActiveOnHost(task.state) || task.state === "LAUNCHING") continue;
      const id = `${task.jobId}-${task.instanceId}-${task.runId}`;
      if (!seen.has(id)) {
        throw new InvariantError(`task ${id} is ${task.state} in the job manager but on no host`, seed);
      }
    }
  }
}

/**
 * A service with `sla.maximumUnavailableInstances` N never has more than N instances down at once because
 * host maintenance took them: each instance the job manager drains while it is available (its kill, as the
 * host manager is sent it) is followed until it is available again, or stopped, or gone. An instance
 * drained while already down takes nothing more away and is not counted, as the job manager counts it.
 * Those followed are always among the job's unavailable instances, of which the job manager lets a drain
 * leave at most N; so more than N of them means the SLA was broken. Checked at each maintenance kill,
 * when the count can grow; the first breach is kept for `checkInvariants` to throw.
 */
export class MaintenanceSlaCheck {
  /** Per job, instances drained while available and not available since. */
  readonly #down = new Map<string, Set<number>>();
  #broken: string | undefined;

  constructor(private readonly jobs: ReadonlyMap<string, JobEntry>) {}

  /** The first breach, said with when, which job and which instances. */
  get broken(): string | undefined {
    return this.#broken;
  }

  /** Sees every message sent; the job manager's kills are where drains show. */
  observe(msg: Message, nowMs: number): void {
    if (msg.kind !== "kill-tasks") return;
    for (const { taskId } of msg.tasks) {
      const id = parseMesosTaskId(taskId);
      const job = id === undefined ? undefined : this.jobs.get(id.jobId);
      if (!id || !job) continue;
      const limit = maintenanceLimit(job);
      const task = job.tasks.get(id.instanceId);
      if (
        !limit || !task || task.runId !== id.runId || task.terminationReason !== "KILLED_HOST_MAINTENANCE"
      ) {
        continue;
      }
      // Evicted to run again (not killed for good, which the SLA does not count); its state until the
      // eviction is the RUNNING one it left, its health and versions as they were.
      if (task.goalState !== "PREEMPTING") continue;
      if (availability({ ...task, state: "RUNNING", goalState: "RUNNING" }) !== "AVAILABLE") continue;
      let down = this.#down.get(id.jobId);
      if (!down) this.#down.set(id.jobId, down = new Set());
      down.add(id.instanceId);
      for (const i of down) {
        const t = job.tasks.get(i);
        if (!t || availability(t) !== "UNAVAILABLE") down.delete(i);
      }
      if (down.size > limit && this.#broken === undefined) {
        this.#broken = `at ${nowMs / 1000} s job ${id.jobId} had ${down.size} instances down for host ` +
          `maintenance (${[...down].join(", ")}), more than its sla.maximumUnavailableInstances (${limit})`;
      }
    }
  }
}
