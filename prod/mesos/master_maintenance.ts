/** Maintenance primitives of the emulator: the schedule, machine modes UP → DRAINING → DOWN, inverse offers. */
import type { MachineMode, MaintenanceFile, MaintenanceState } from "./master_maintenance_file.ts";
import type { AgentRec, Framework, MasterTask } from "./master_types.ts";
import type {
  Event,
  InverseOffer,
  MachineID,
  MaintenanceSchedule,
  MaintenanceStatus,
  MaintenanceWindow,
  Unavailability,
} from "./protocol.ts";

export interface MaintenanceHost {
  agents(): Iterable<AgentRec>;
  frameworks(): Iterable<Framework>;
  masterId(): string;
  send(fw: Framework, event: Event): void;
  tasksOn(agentId: string): MasterTask[];
  /** Offers of draining agents are re-made with `unavailability`. */
  rescindAgentOffers(agentId: string): void;
  /** START_MAINTENANCE: the machine's agents are shut down and removed. */
  removeAgent(rec: AgentRec): void;
  /** STOP_MAINTENANCE: the machine's agents register again (with new ids, as restarted agents do). */
  restoreAgent(rec: AgentRec): void;
}

type Mode = MachineMode;
type Modes = Map<string, { id: MachineID; mode: Mode }>;
type Response = "ACCEPT" | "DECLINE";
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Mesos compares machine ids by both parts, the host name case-insensitively. */
function key(m: MachineID): string {
  return `${m.hostname?.toLowerCase() ?? ""}/${m.ip ?? ""}`;
}

function describe(m: MachineID): string {
  return m.hostname && m.ip ? `${m.hostname} (${m.ip})` : m.hostname || m.ip || "";
}

/**
 * A machine id names an agent when it equals the agent's machine (its host name and IP, as the agent
 * announced them): Mesos keys machines by both, so an id giving the host name alone names no agent.
 */
function matches(m: MachineID, rec: AgentRec): boolean {
  const c = rec.agent.config;
  return key(m) === key({ hostname: c.hostname, ip: c.ip });
}

export class Maintenance {
  readonly #host: MaintenanceHost;
  readonly #file?: MaintenanceFile;
  #windows: MaintenanceWindow[] = [];
  readonly #modes: Modes = new Map();
  readonly #responses = new Map<string, Map<string, { status: Response; timeMs: number }>>();
  readonly #inverse = new Map<string, { frameworkId: string; agentId: string }>();
  #seq = 0;

  /**
   * With `file`, the schedule and the machines' modes are those it last stored (a master restarted on its
   * data dir), and every change is stored there before it is made.
   */
  constructor(host: MaintenanceHost, file?: MaintenanceFile) {
    this.#host = host;
    this.#file = file;
    const saved = file?.load();
    if (!saved) return;
    this.#windows = saved.windows;
    for (const m of saved.machines) this.#modes.set(key(m.id), { id: m.id, mode: m.mode });
  }

  schedule(): MaintenanceSchedule {
    return { windows: structuredClone(this.#windows) };
  }

  status(): MaintenanceStatus {
    const draining = [...this.#modes.values()].filter((m) => m.mode === "DRAINING").map((m) => ({
      id: m.id,
      statuses: [...(this.#responses.get(key(m.id)) ?? new Map())].map(([fw, r]) => ({
        framework_id: { value: fw },
        status: r.status,
        timestamp: { nanoseconds: r.timeMs * 1e6 },
      })),
    }));
    const down = [...this.#modes.values()].filter((m) => m.mode === "DOWN").map((m) => m.id);
    return { draining_machines: draining, down_machines: down };
  }

  /** The window of the draining machine an agent is on. */
  unavailability(agentId: string): Unavailability | undefined {
    const rec = [...this.#host.agents()].find((a) => a.agent.id === agentId);
    if (!rec) return undefined;
    for (const w of this.#windows) {
      for (const m of w.machine_ids) {
        if (matches(m, rec) && this.#modes.get(key(m))?.mode === "DRAINING") return w.unavailability;
      }
    }
    return undefined;
  }

  /** Replaces the whole schedule (Mesos has no partial update); returns why it was refused, if it was. */
  updateSchedule(schedule: MaintenanceSchedule): string | undefined {
    const windows = schedule.windows ?? [];
    const seen = new Set<string>();
    for (const w of windows) {
      if (!w.machine_ids?.length) return "List of machines in the maintenance window is empty";
      if (w.unavailability?.start?.nanoseconds === undefined) {
        return "Maintenance window has no unavailability start";
      }
      for (const m of w.machine_ids) {
        if (!m.hostname && !m.ip) return "Both 'hostname' and 'ip' for a machine are empty";
        if (m.ip && !IPV4.test(m.ip)) return `Machine IP '${m.ip}' is not a valid IPv4 address`;
        if (seen.has(key(m))) return `Machine '${describe(m)}' appears more than once in the schedule`;
        seen.add(key(m));
      }
    }
    for (const [k, m] of this.#modes) {
      if (m.mode === "DOWN" && !seen.has(k)) {
        return `Machine '${describe(m.id)}' is deactivated and cannot be removed from the schedule`;
      }
    }
    const next: Modes = new Map([...this.#modes].filter(([k]) => seen.has(k)));
    for (const w of windows) {
      for (const m of w.machine_ids) if (!next.has(key(m))) next.set(key(m), { id: m, mode: "DRAINING" });
    }
    this.#store(windows, next);
    this.#windows = structuredClone(windows);
    for (const [k, m] of [...this.#modes]) if (!seen.has(k)) this.#up(k, m.id);
    for (const w of windows) {
      for (const m of w.machine_ids) {
        if (this.#modes.has(key(m))) continue;
        this.#modes.set(key(m), { id: m, mode: "DRAINING" });
        for (const rec of this.#agentsOf(m)) this.#host.rescindAgentOffers(rec.agent.id);
      }
    }
    this.sendInverseOffers();
    return undefined;
  }

  /** machine/down: DRAINING machines go DOWN and their agents are removed. */
  startMaintenance(machines: MachineID[]): string | undefined {
    for (const m of machines) {
      const mode = this.#modes.get(key(m));
      if (!mode) return `Machine '${describe(m)}' is not part of a maintenance schedule`;
      if (mode.mode !== "DRAINING") {
        return `Machine '${describe(m)}' is not in DRAINING mode and cannot be brought down`;
      }
    }
    const next: Modes = new Map(this.#modes);
    for (const m of machines) next.set(key(m), { id: m, mode: "DOWN" });
    this.#store(this.#windows, next);
    for (const m of machines) {
      this.#modes.set(key(m), { id: m, mode: "DOWN" });
      this.#responses.delete(key(m));
      for (const rec of this.#agentsOf(m)) {
        this.#rescindInverse((io) => io.agentId === rec.agent.id);
        if (rec.state !== "gone") this.#host.removeAgent(rec);
      }
    }
    return undefined;
  }

  /** machine/up: DOWN machines leave the schedule and their agents register again. */
  stopMaintenance(machines: MachineID[]): string | undefined {
    for (const m of machines) {
      if (this.#modes.get(key(m))?.mode !== "DOWN") {
        return `Machine '${describe(m)}' is not in DOWN mode and cannot be brought up`;
      }
    }
    const ups = new Set(machines.map(key));
    const windows = this.#windows.map((w) => ({
      ...w,
      machine_ids: w.machine_ids.filter((m) => !ups.has(key(m))),
    }))
      .filter((w) => w.machine_ids.length > 0);
    this.#store(windows, new Map([...this.#modes].filter(([k]) => !ups.has(k))));
    this.#windows = windows;
    for (const m of machines) this.#up(key(m), m);
    return undefined;
  }

  #up(k: string, id: MachineID): void {
    const was = this.#modes.get(k);
    this.#modes.delete(k);
    this.#responses.delete(k);
    for (const rec of this.#agentsOf(id)) {
      this.#rescindInverse((io) => io.agentId === rec.agent.id);
      if (was?.mode === "DOWN" && rec.state === "gone") this.#host.restoreAgent(rec);
      else this.#host.rescindAgentOffers(rec.agent.id);
    }
  }

  /** Inverse offers to every connected framework with tasks on a draining agent, once per (framework, agent). */
  sendInverseOffers(): void {
    for (const fw of this.#host.frameworks()) {
      if (!fw.sub) continue;
      const made: InverseOffer[] = [];
      for (const rec of this.#host.agents()) {
        const unavailability = rec.state === "active" ? this.unavailability(rec.agent.id) : undefined;
        if (!unavailability) continue;
        if (!this.#host.tasksOn(rec.agent.id).some((t) => t.frameworkId === fw.id)) continue;
        const machine = this.#machineOf(rec);
        if (machine && this.#responses.get(machine)?.has(fw.id)) continue;
        const outstanding = [...this.#inverse.values()].some((io) =>
          io.frameworkId === fw.id && io.agentId === rec.agent.id
        );
        if (outstanding) continue;
        const id = `${this.#host.masterId()}-I${this.#seq++}`;
        this.#inverse.set(id, { frameworkId: fw.id, agentId: rec.agent.id });
        made.push({
          id: { value: id },
          framework_id: { value: fw.id },
          agent_id: { value: rec.agent.id },
          unavailability,
        });
      }
      if (made.length) {
        this.#host.send(fw, { type: "INVERSE_OFFERS", inverse_offers: { inverse_offers: made } });
      }
    }
  }

  /** ACCEPT_/DECLINE_INVERSE_OFFERS: advisory answers, shown in the maintenance status. */
  respond(fw: Framework, inverseOfferIds: string[], status: Response, now: number): void {
    for (const id of inverseOfferIds) {
      const io = this.#inverse.get(id);
      if (!io || io.frameworkId !== fw.id) continue;
      this.#inverse.delete(id);
      const rec = [...this.#host.agents()].find((a) => a.agent.id === io.agentId);
      const machine = rec && this.#machineOf(rec);
      if (!machine) continue;
      const answers = this.#responses.get(machine) ?? new Map();
      answers.set(fw.id, { status, timeMs: now });
      this.#responses.set(machine, answers);
    }
  }

  /** Outstanding inverse offers of a framework vanish when it disconnects or re-subscribes. */
  discard(frameworkId: string): void {
    for (const [id, io] of [...this.#inverse]) if (io.frameworkId === frameworkId) this.#inverse.delete(id);
  }

  /** Whether an agent may register: agents of DOWN machines may not. */
  isDown(rec: AgentRec): boolean {
    const m = this.#machineOf(rec);
    return m !== undefined && this.#modes.get(m)?.mode === "DOWN";
  }

  /** Whether the machine an agent announces (its host name and IP) is DOWN: its agent may not register. */
  machineIsDown(hostname: string, ip: string): boolean {
    return this.#modes.get(key({ hostname, ip }))?.mode === "DOWN";
  }

  /** Stores the state a change leads to before it is made: a change that cannot be stored is not made. */
  #store(windows: MaintenanceWindow[], modes: Modes): void {
    const state: MaintenanceState = { windows, machines: [...modes.values()] };
    this.#file?.save(state);
  }

  #machineOf(rec: AgentRec): string | undefined {
    for (const [k, m] of this.#modes) if (matches(m.id, rec)) return k;
    return undefined;
  }

  #agentsOf(m: MachineID): AgentRec[] {
    return [...this.#host.agents()].filter((rec) => matches(m, rec));
  }

  #rescindInverse(match: (io: { frameworkId: string; agentId: string }) => boolean): void {
    for (const [id, io] of [...this.#inverse]) {
      if (!match(io)) continue;
      this.#inverse.delete(id);
      const fw = [...this.#host.frameworks()].find((f) => f.id === io.frameworkId);
      if (fw) {
        this.#host.send(fw, {
          type: "RESCIND_INVERSE_OFFER",
          rescind_inverse_offer: { inverse_offer_id: { value: id } },
        });
      }
    }
  }
}
