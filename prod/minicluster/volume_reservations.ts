/**
 * What each agent's persistent volumes reserve on its host, kept in the data dir so that a restart reports
 * them again: the minicluster has no reservations of its own, so it holds a volume's from the launch that
 * makes it until it is destroyed, as Mesos holds a volume's RESERVE until its UNRESERVE.
 */
import type { Resources } from "../../core/model/resources.ts";
import { volumePath } from "./agent.ts";

interface Entry {
  resources: Resources;
  /** Changes at every reserve: a destroy releases only the reservation it found (`release`). */
  seq: number;
}

/**
 * `<dataDir>/agents/<agentId>/volume_reservations.json`: `{volumeId: Resources}`. Read once per agent, at
 * its first use; a reservation whose volume's directory is gone is left out (its destroy ended, or the
 * process died between the launch that reserved it and the run that would have made it: the task's next
 * run reserves it again).
 */
export class VolumeReservationBook {
  readonly #dataDir: string;
  readonly #byAgent = new Map<string, Map<string, Entry>>();
  #seq = 0;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  /** The agent's volumes' reservations, by volume id. */
  of(agentId: string): Map<string, Resources> {
    return new Map([...this.#entries(agentId)].map(([id, e]) => [id, e.resources]));
  }

  /** The current reservation's token, for a `release` that must not undo a later `reserve`. */
  token(agentId: string, volumeId: string): number | undefined {
    return this.#entries(agentId).get(volumeId)?.seq;
  }

  /**
   * The volume's reservation is `resources` from now on (a launch mounting it: its latest run's, as the
   * minicluster lets an update change a volume's size). Recorded on disk; a failed write is said on stderr
   * (the reservation holds until this process ends). True when it changed.
   */
  reserve(agentId: string, volumeId: string, resources: Resources): boolean {
    const entries = this.#entries(agentId);
    const was = entries.get(volumeId);
    entries.set(volumeId, { resources: { ...resources }, seq: ++this.#seq });
    if (was && sameResources(was.resources, resources)) return false;
    this.#write(agentId, entries);
    return true;
  }

  /**
   * The volume was destroyed: its reservation goes, unless reserved again since `token` was taken (a launch
   * of the same id after the destroy began). True when it went.
   */
  release(agentId: string, volumeId: string, token?: number): boolean {
    const entries = this.#entries(agentId);
    const was = entries.get(volumeId);
    if (!was || (token !== undefined && was.seq !== token)) return false;
    entries.delete(volumeId);
    this.#write(agentId, entries);
    return true;
  }

  #path(agentId: string): string {
    return `${this.#dataDir}/agents/${agentId}/volume_reservations.json`;
  }

  #entries(agentId: string): Map<string, Entry> {
    let entries = this.#byAgent.get(agentId);
    if (!entries) {
      entries = new Map();
      for (const [volumeId, resources] of this.#read(agentId)) {
        if (exists(volumePath(this.#dataDir, agentId, volumeId))) {
          entries.set(volumeId, { resources, seq: ++this.#seq });
        }
      }
      this.#byAgent.set(agentId, entries);
    }
    return entries;
  }

  /** The recorded reservations; none when the file is missing or unreadable (said on stderr). */
  #read(agentId: string): [string, Resources][] {
    const path = this.#path(agentId);
    let text: string;
    try {
      text = Deno.readTextFileSync(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) warn(`cannot read ${path}: ${(e as Error).message}`);
      return [];
    }
    try {
      const raw = JSON.parse(text);
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new Error("not a JSON object");
      const out: [string, Resources][] = [];
      for (const [volumeId, r] of Object.entries(raw)) {
        if (!isResources(r)) throw new Error(`volume ${volumeId}: got ${JSON.stringify(r)}`);
        out.push([volumeId, r]);
      }
      return out;
    } catch (e) {
      warn(`cannot read ${path}: ${(e as Error).message}; its volumes hold nothing until their next run`);
      return [];
    }
  }

  /** Written whole, synced and renamed into place: a crash mid-write leaves the previous record. */
  #write(agentId: string, entries: Map<string, Entry>): void {
    const path = this.#path(agentId);
    const sorted = [...entries].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    const text = JSON.stringify(Object.fromEntries(sorted.map(([id, e]) => [id, e.resources])), null, 1);
    const tmp = `${path}.tmp`;
    try {
      Deno.mkdirSync(`${this.#dataDir}/agents/${agentId}`, { recursive: true });
      const file = Deno.openSync(tmp, { write: true, create: true, truncate: true });
      try {
        file.writeSync(new TextEncoder().encode(text + "\n"));
        file.syncSync();
      } finally {
        file.close();
      }
      Deno.renameSync(tmp, path);
    } catch (e) {
      warn(`cannot record volume reservations in ${path}: ${(e as Error).message}`);
    }
  }
}

function sameResources(a: Resources, b: Resources): boolean {
  return a.cpuMilli === b.cpuMilli && a.memMb === b.memMb && a.diskMb === b.diskMb &&
    a.gpuMilli === b.gpuMilli;
}

function isResources(r: unknown): r is Resources {
  if (r === null || typeof r !== "object") return false;
  const o = r as Record<string, unknown>;
  return ["cpuMilli", "memMb", "diskMb", "gpuMilli"].every((k) =>
    typeof o[k] === "number" && (o[k] as number) >= 0
  );
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function warn(message: string): void {
  console.error(`minicluster: ${message}`);
}
