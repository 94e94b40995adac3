/** Daemon jobs: one instance on every host that matches the job's constraints, following hosts as they come and go. */
import type { HostInventory } from "../messages.ts";
import type { HostState } from "../model/states.ts";
import { evaluate } from "../placement/constraints.ts";
import type { JobEntry } from "./job_entry.ts";
import type { JobManager } from "./jobmgr.ts";

interface KnownHost {
  attributes: Record<string, string>;
  state: HostState | "LOST";
}

const HOST_ONLY = new Set<"HOST" | "TASK">(["HOST"]);

export class DaemonHosts {
  readonly #hosts = new Map<string, KnownHost>();
  /** Set once the host manager sent a full inventory; daemons wait for it. */
  known = false;

  update(msg: HostInventory): void {
    if (msg.full) this.#hosts.clear();
    for (const h of msg.hosts) this.#hosts.set(h.hostname, { attributes: h.attributes, state: h.state });
    if (msg.full) this.known = true;
  }

  /** A host's state as the host manager last said (LOST when its agent is gone), or undefined if unknown. */
  stateOf(hostname: string): string | undefined {
    return this.#hosts.get(hostname)?.state;
  }

  /** Hosts that are up (not lost, not in maintenance) and pass the daemon's HOST constraints. */
  #targets(job: JobEntry): Set<string> {
    const template = job.versions.get(job.configVersion)!.tasks.defaults;
    const out = new Set<string>();
    for (const [hostname, h] of this.#hosts) {
      if (h.state !== "HOST_STATE_UP") continue;
      const c = template.constraint;
      if (
        c && evaluate(c, { hostname, attributes: h.attributes, taskLabels: [] }, HOST_ONLY) === "mismatch"
      ) continue;
      out.add(hostname);
    }
    return out;
  }

  /** Adds an instance for each new matching host and deletes instances whose host left. */
  reconcile(jm: JobManager, job: JobEntry): undefined {
    if (!this.known) return undefined;
    const targets = this.#targets(job);
    const covered = new Set<string>();
    for (const task of job.tasks.values()) {
      if (task.goalState === "DELETED" || !task.requiredHost) continue;
      if (targets.has(task.requiredHost) && !covered.has(task.requiredHost)) {
        covered.add(task.requiredHost);
        continue;
      }
      task.goalState = "DELETED";
      jm.putTask(task);
      jm.taskEngine.enqueue(task);
    }
    const missing = [...targets].filter((h) => !covered.has(h)).sort();
    let i = 0;
    if (missing.length) jm.addInstances(job, missing.length, (t) => (t.requiredHost = missing[i++]));
    return undefined;
  }
}
