/** The emulator's agent ids by host name, kept in its data dir so an agent keeps its id across restarts. */
import { isSafeId } from "../minicluster/agent.ts";

/**
 * `<dataDir>/agent_ids.json`: `{hostname: agentId}`, the latest agent of each host. A Mesos agent checkpoints
 * its id in its work dir (`meta/slaves/latest`) and registers under it again when its process restarts; an
 * emulator started after a crash does the same for the agents it starts with. A scheduler then finds the
 * crashed run's tasks gone from a host it knows (reconciliation's TASK_GONE, or TASK_LOST), and its next
 * launch there is not held for offers of an agent id that never comes back.
 */
export class AgentIds {
  readonly #path: string;
  readonly #ids: Record<string, string>;

  constructor(dataDir: string) {
    this.#path = `${dataDir}/agent_ids.json`;
    this.#ids = readIds(this.#path);
  }

  /** The id `hostname`'s agent had when the emulator last ran on this data dir. */
  saved(hostname: string): string | undefined {
    return Object.hasOwn(this.#ids, hostname) ? this.#ids[hostname] : undefined;
  }

  /**
   * Records `agentId` as `hostname`'s agent. Failing to is not an error: the agent only gets a new id at the
   * next start, and a scheduler waits longer to place on it.
   */
  record(hostname: string, agentId: string): void {
    if (this.#ids[hostname] === agentId) return;
    this.#ids[hostname] = agentId;
    // Written whole and renamed into place, so a crash mid-write leaves the previous file.
    const tmp = `${this.#path}.tmp`;
    try {
      Deno.writeTextFileSync(tmp, JSON.stringify(this.#ids) + "\n");
      Deno.renameSync(tmp, this.#path);
    } catch { /* see above */ }
  }
}

function readIds(path: string): Record<string, string> {
  let raw: unknown;
  try {
    raw = JSON.parse(Deno.readTextFileSync(path));
  } catch {
    return {}; // none yet, or unreadable: every agent gets a new id
  }
  const ids: Record<string, string> = {};
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return ids;
  for (const [hostname, id] of Object.entries(raw)) {
    // An id names the agent's directory: one that could not be a directory's name is not taken.
    if (typeof id === "string" && isSafeId(id)) ids[hostname] = id;
  }
  return ids;
}
