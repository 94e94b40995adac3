/** The minicluster's agent ids by host name, kept in its data dir so a host keeps its directory across restarts. */
import { isSafeId } from "./agent.ts";

/**
 * `<dataDir>/agent_ids.json`: `{hostname: agentId}`. An agent's sandboxes and persistent volumes live under
 * `<dataDir>/agents/<agentId>/`, so a host must come back under the id it had, whatever order agents are
 * added in (as a Mesos agent registers again under the id checkpointed in its work dir). Each id is
 * recorded before its agent is used, and no two hosts share one.
 */
export class AgentIdMap {
  readonly #path: string;
  readonly #ids: Map<string, string>;
  /** Whether the file was there when read: a data dir used before ids were kept has none. */
  readonly existed: boolean;

  /** Throws if the file is there but cannot be read as a map: the agents would lose their directories. */
  constructor(dataDir: string) {
    this.#path = `${dataDir}/agent_ids.json`;
    const read = readIds(this.#path);
    this.existed = read !== undefined;
    this.#ids = read ?? new Map();
  }

  /** The id `hostname`'s agent had on this data dir. */
  saved(hostname: string): string | undefined {
    return this.#ids.get(hostname);
  }

  /** Whether some host has `agentId`. */
  taken(agentId: string): boolean {
    for (const id of this.#ids.values()) if (id === agentId) return true;
    return false;
  }

  /**
   * Records `agentId` as `hostname`'s, taking it from any other host that had it (its directory is this
   * host's now). Throws if the file cannot be written, which the caller must not ignore: an agent used
   * under an id not recorded would have its data under another host's directory after a restart.
   */
  record(hostname: string, agentId: string): void {
    if (this.#ids.get(hostname) === agentId) return;
    const next = new Map(this.#ids);
    for (const [host, id] of next) if (id === agentId) next.delete(host);
    next.set(hostname, agentId);
    // Written whole, synced and renamed into place: a crash mid-write leaves the previous map.
    const tmp = `${this.#path}.tmp`;
    const text = JSON.stringify(Object.fromEntries([...next].sort(([a], [b]) => a < b ? -1 : 1)), null, 1);
    try {
      const file = Deno.openSync(tmp, { write: true, create: true, truncate: true });
      try {
        file.writeSync(new TextEncoder().encode(text + "\n"));
        file.syncSync();
      } finally {
        file.close();
      }
      Deno.renameSync(tmp, this.#path);
    } catch (e) {
      throw new Error(
        `Cannot record agent id ${agentId} of host ${hostname} in ${this.#path}: ${(e as Error).message}`,
      );
    }
    this.#ids.clear();
    for (const [host, id] of next) this.#ids.set(host, id);
  }
}

/** The map, or undefined when there is no file yet. */
function readIds(path: string): Map<string, string> | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot read the agent ids in ${path}: ${(e as Error).message}`);
  }
  const bad = (why: string) =>
    new Error(
      `Cannot read the agent ids in ${path}: ${why}; expected a JSON object of host names to agent ids ` +
        "(remove the file to give every host a new agent id and directory)",
    );
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw bad((e as Error).message);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw bad("not a JSON object");
  const ids = new Map<string, string>();
  for (const [hostname, id] of Object.entries(raw)) {
    // An id names the agent's directory: one that could not be a directory's name is not an id.
    if (typeof id !== "string" || !isSafeId(id)) throw bad(`host ${hostname}: got ${JSON.stringify(id)}`);
    const other = [...ids].find(([, had]) => had === id);
    if (other) throw bad(`hosts ${other[0]} and ${hostname} both have agent id ${id}`);
    ids.set(hostname, id);
  }
  return ids;
}
