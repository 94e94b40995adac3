/** Invariant checkers run during simulations: a broken invariant fails loudly with the seed. */
import { isActiveOnHost } from "../core/model/states.ts";
import type { Simulation } from "./runner.ts";

export class InvariantError extends Error {
  override readonly name = "InvariantError";
  constructor(message: string, readonly seed: number) {
    super(`${message} (rerun with --seed ${seed})`);
  }
}

/**
 * Hosts are never over-committed, the host manager and the cluster agree on what runs where,
 * and every task the job manager believes is on a host is known to that host.
 */
export function checkInvariants(sim: Simulation, seed: number): void {
  const usage = sim.cluster.usageByHost();
  for (const h of sim.hostmgr.hosts) {
    const f = h.free, t = h.info.resources;
    if (f.cpuMilli < 0 || f.memMb < 0 || f.diskMb < 0 || f.gpuMilli < 0) {
      throw new InvariantError(`host ${h.info.hostname} over-committed: free ${JSON.stringify(f)}`, seed);
    }
    const u = usage.get(h.info.hostname);
    if (
      u && (u.cpuMilli > t.cpuMilli || u.memMb > t.memMb || u.diskMb > t.diskMb || u.gpuMilli > t.gpuMilli)
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
