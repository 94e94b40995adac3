/** The emulator's maintenance registry: the schedule and the machines' modes, kept in its data dir. */
import type { MachineID, MaintenanceWindow } from "./protocol.ts";

export type MachineMode = "DRAINING" | "DOWN";

/** What the master keeps of maintenance across restarts. */
export interface MaintenanceState {
  windows: MaintenanceWindow[];
  machines: { id: MachineID; mode: MachineMode }[];
}

/**
 * `<dataDir>/maintenance.json`. Mesos keeps the schedule and each machine's mode in its registry, so a master
 * that restarts (or fails over) still drains the machines scheduled and keeps the agents of DOWN machines
 * from registering. A change is written whole and renamed into place before the call is answered; unlike
 * agent ids, failing to write it fails the call, as Mesos fails a registry operation it cannot store.
 */
export class MaintenanceFile {
  readonly path: string;

  constructor(dataDir: string) {
    this.path = `${dataDir}/maintenance.json`;
  }

  /** The state last written on this data dir; none when there is no file or it cannot be read. */
  load(): MaintenanceState {
    let raw: unknown;
    try {
      raw = JSON.parse(Deno.readTextFileSync(this.path));
    } catch {
      return { windows: [], machines: [] };
    }
    const obj = isObj(raw) ? raw : {};
    const windows = (Array.isArray(obj.windows) ? obj.windows : []).filter((w): w is MaintenanceWindow =>
      isObj(w) && Array.isArray(w.machine_ids) && w.machine_ids.every(isMachine) && isObj(w.unavailability)
    );
    const machines = (Array.isArray(obj.machines) ? obj.machines : []).filter(isSavedMachine);
    return { windows, machines };
  }

  /** Writes `state` atomically; throws, saying so, when it cannot. */
  save(state: MaintenanceState): void {
    const tmp = `${this.path}.tmp`;
    try {
      Deno.writeTextFileSync(tmp, JSON.stringify(state) + "\n");
      Deno.renameSync(tmp, this.path);
    } catch (e) {
      throw new Error(`Cannot store the maintenance state in ${this.path}: ${(e as Error).message}`);
    }
  }
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isSavedMachine(v: unknown): v is MaintenanceState["machines"][number] {
  return isObj(v) && isMachine(v.id) && (v.mode === "DRAINING" || v.mode === "DOWN");
}

function isMachine(v: unknown): v is MachineID {
  return isObj(v) && (typeof v.hostname === "string" || typeof v.ip === "string");
}
