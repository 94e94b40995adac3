/** Carries the host manager's maintenance to a Mesos master: its schedule, machine down, machine up. */
import type { MesosBackend } from "./mesos_backend.ts";
import { errorText } from "./scheduler_client.ts";
import {
  type ID,
  isTerminalState,
  type MachineID,
  type MaintenanceSchedule,
  type MaintenanceStatus,
  type OperatorAgent,
} from "./protocol.ts";

/** What the sync needs of the host manager. */
export interface MaintainedHosts {
  readonly hosts: readonly { info: { hostname: string }; state: string }[];
  /** Hosts in maintenance that are not registered (their machines may be down). */
  unregisteredInMaintenance(): string[];
  /**
   * A machine the master has in maintenance goes into maintenance there too (stored), registered or not,
   * unless its maintenance was completed there and is still to be carried here.
   */
  adoptMaintenance(hostname: string, state: "HOST_STATE_DRAINING" | "HOST_STATE_DOWN"): void;
  /** Hosts whose completed maintenance is stored until the master has their machines up. */
  completedMaintenance(): string[];
  /** The master has the machine up: the stored completion can go. */
  completionCarried(hostname: string): void;
  /** The master has the machine of a DRAINED host down: the host is DOWN. */
  machineWentDown(hostname: string): void;
}

type Mode = "up" | "draining" | "down";

/**
 * Peloton's drain flow (`pkg/hostmgr/host/drainer`, `goalstate`) against the maintenance primitives: a host
 * put into maintenance joins the master's schedule (the master then sends inverse offers and offers with
 * unavailability); once the host manager has it DRAINED it goes down (START_MAINTENANCE, the agent leaves),
 * and the host manager has it DOWN from then on (Peloton's HostDown action); completing maintenance, which
 * Peloton accepts only for a DOWN host, brings the machine up (STOP_MAINTENANCE) and out of the schedule,
 * also when its host is not registered (a down machine's agent is gone). The schedule is replaced whole on
 * every change, so changes run one at a time. A new leader first adopts the machines the master has as
 * draining or down, except those whose completion the host manager stored and the master had not heard of
 * before a restart: those are brought up, so that an answered CompleteMaintenance is never undone by the
 * master's status.
 */
export class MesosMaintenance {
  readonly #modes = new Map<string, Mode>();
  /** The machine ids the master knows, by host name: a down machine's agent is gone, so not found by it. */
  readonly #machines = new Map<string, MachineID>();
  #timer?: ReturnType<typeof setInterval>;
  /** The pass in progress (changes run one at a time), which `stop` waits for. */
  #pass?: Promise<void>;
  #recovered = false;
  #stopped = false;
  /** Hosts DRAINED here whose machines still run our tasks at the master, with how many (logged on change). */
  readonly #held = new Map<string, number>();
  /** Hosts whose maintenance waits for their agent's IP address (logged once). */
  readonly #noAddress = new Set<string>();
  /** Hosts whose last attempt failed, with the error (logged when it changes). */
  readonly #failing = new Map<string, string>();
  /** Why the master's maintenance status could not be read last (logged when it changes). */
  #unread?: string;

  constructor(
    readonly backend: MesosBackend,
    readonly hm: MaintainedHosts,
    readonly log: (msg: string, fields?: Record<string, unknown>) => void = () => {},
  ) {}

  start(periodMs = 1000): void {
    // The first pass adopts the master's maintenance at once rather than a period later.
    void this.sync();
    this.#timer = setInterval(() => void this.sync(), periodMs);
  }

  /** No more passes; resolves once the one in progress is over, which carries no more hosts after this. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#pass;
  }

  /** One pass: every host whose maintenance mode differs from what the master was told is carried over. */
  sync(): Promise<void> {
    if (this.#pass) return Promise.resolve();
    this.#pass = this.#run().finally(() => (this.#pass = undefined));
    return this.#pass;
  }

  /**
   * Each host is carried on its own: one whose calls fail (refused, or the master not answering) is retried
   * at the next pass and holds up no other. Only the recovery comes first, without which no host is carried.
   */
  async #run(): Promise<void> {
    if (!this.#recovered) {
      try {
        await this.#recover();
      } catch (err) {
        const master = this.backend.client.masterUrl, error = errorText(err);
        // Retried every pass (a second): said again only when the master or the error changes.
        if (this.#unread !== `${master} ${error}`) {
          this.log("maintenance sync cannot read the master's maintenance status; retrying", {
            master,
            error,
          });
        }
        this.#unread = `${master} ${error}`;
        return;
      }
      this.#unread = undefined;
    }
    const registered = new Set<string>();
    for (const h of this.hm.hosts) {
      const name = h.info.hostname;
      registered.add(name);
      const want: Mode = h.state === "HOST_STATE_UP"
        ? "up"
        : h.state === "HOST_STATE_DRAINING"
        ? "draining"
        : "down";
      await this.#carry(name, want);
      // Down at the master (carried now, or already before a restart): DOWN in Peloton too.
      if (h.state === "HOST_STATE_DRAINED" && this.#modes.get(name) === "down") {
        this.hm.machineWentDown(name);
      }
    }
    // A host not registered stays as the master has it while in maintenance; out of it, it comes up.
    const inMaintenance = new Set(this.hm.unregisteredInMaintenance());
    for (const name of [...this.#modes.keys()]) {
      if (!registered.has(name) && !inMaintenance.has(name)) await this.#carry(name, "up");
    }
    // Completions the master has up now (carried above, or it never had the machine down) are done.
    for (const name of this.hm.completedMaintenance()) {
      if (!this.#modes.has(name)) this.hm.completionCarried(name);
    }
  }

  /** Carries one host; a failure is logged (once while it stays the same) and retried at the next pass. */
  async #carry(name: string, want: Mode): Promise<void> {
    try {
      await this.#carryHost(name, want);
      this.#failing.delete(name);
    } catch (err) {
      const error = errorText(err);
      if (this.#failing.get(name) !== error) {
        this.log("maintenance sync failed for the host; retrying", {
          host: name,
          want,
          master: this.backend.client.masterUrl,
          error,
        });
      }
      this.#failing.set(name, error);
    }
  }

  async #carryHost(name: string, want: Mode): Promise<void> {
    const have = this.#modes.get(name) ?? "up";
    // A stop waits for the pass: the host being carried finishes, the others wait for the next leader.
    if (want === have || this.#stopped) return;
    if (want === "down" && !(await this.#empty(name))) return;
    const machine = this.#machines.get(name) ?? await this.backend.machineOf(name);
    if (!machine) {
      // Mesos matches a machine by host name and IP: one named by its host name alone is no agent's.
      if (!this.#noAddress.has(name)) {
        this.log("maintenance waits for the agent's IP address from the master's GET_AGENTS; retrying", {
          host: name,
        });
      }
      this.#noAddress.add(name);
      return;
    }
    this.#noAddress.delete(name);
    this.#machines.set(name, machine);
    try {
      await this.#move(name, machine, have, want);
    } catch (err) {
      // Refused (or failed): the master's status says where the machine is; a goal it already meets is met.
      const actual = await this.#masterMode(machine).catch(() => undefined);
      if (actual === undefined) throw err;
      this.#record(name, actual);
      if (actual !== want) throw err;
      this.log("maintenance already as wanted at the Mesos master", {
        host: name,
        mode: want,
        refused: (err as Error).message,
      });
      return;
    }
    this.log("maintenance carried to the Mesos master", { host: name, from: have, to: want });
  }

  /** The mode the master has the machine in now (GET_MAINTENANCE_STATUS). */
  async #masterMode(machine: MachineID): Promise<Mode> {
    const status = await this.#status();
    const same = (id: MachineID) => sameMachine(id, machine);
    if (status.down_machines?.some(same)) return "down";
    if (status.draining_machines?.some((d) => same(d.id))) return "draining";
    return "up";
  }

  async #status(): Promise<MaintenanceStatus> {
    const got = await this.backend.operator<{ get_maintenance_status?: { status?: MaintenanceStatus } }>(
      { type: "GET_MAINTENANCE_STATUS" },
    );
    return got?.get_maintenance_status?.status ?? {};
  }

  /**
   * The calls that take the machine from one mode to the other. Each step records the mode the master has
   * the machine in once it succeeded, so a later step that fails is retried from there, whatever the host
   * manager wants by then (a machine scheduled whose machine-down failed is draining, and leaves the
   * schedule if its host is completed before the retry).
   */
  async #move(name: string, machine: MachineID, from: Mode, to: Mode): Promise<void> {
    if (from === "up") {
      await this.#schedule(machine, true);
      this.#record(name, "draining");
    }
    if (to === "down") {
      // Inverse offers are advisory; answering them tells the master this framework agrees.
      const mine = this.backend.inverseOffersOn(name);
      if (mine.length) await this.backend.acceptInverseOffers(mine).catch(() => {});
      await this.backend.operator({ type: "START_MAINTENANCE", start_maintenance: { machines: [machine] } });
    }
    if (to === "up") {
      if (from === "down") {
        await this.backend.operator({ type: "STOP_MAINTENANCE", stop_maintenance: { machines: [machine] } });
        // Up, and out of the schedule at Mesos; recorded as draining, from where a retry only unschedules.
        this.#record(name, "draining");
      }
      await this.#schedule(machine, false);
    }
    this.#record(name, to);
  }

  #record(name: string, mode: Mode): void {
    if (mode !== "up") return void this.#modes.set(name, mode);
    this.#modes.delete(name);
    this.#machines.delete(name);
  }

  /**
   * Whether the master runs none of our tasks on the host's agents. A restarted host manager hears of a
   * host's tasks only as the job managers hand them back, so a host put back into maintenance can look
   * DRAINED before they do: its machine must not go down (killing them undrained) meanwhile.
   */
  async #empty(name: string): Promise<boolean> {
    const [agents, tasks] = await Promise.all([
      this.backend.operator<{ get_agents?: { agents?: OperatorAgent[] } }>({ type: "GET_AGENTS" }),
      this.backend.operator<
        { get_tasks?: { tasks?: { framework_id?: ID; agent_id?: ID; state?: string }[] } }
      >(
        { type: "GET_TASKS" },
      ),
    ]);
    const ids = new Set(
      (agents?.get_agents?.agents ?? []).filter((a) => a.agent_info.hostname === name)
        .map((a) => a.agent_info.id?.value),
    );
    const mine = this.backend.client.frameworkId;
    const running =
      (tasks?.get_tasks?.tasks ?? []).filter((t) =>
        t.framework_id?.value === mine && ids.has(t.agent_id?.value) && !isTerminalState(t.state ?? "")
      ).length;
    if (running !== (this.#held.get(name) ?? 0)) {
      this.log("maintenance waits for tasks before taking the machine down", { host: name, tasks: running });
    }
    if (running) this.#held.set(name, running);
    else this.#held.delete(name);
    return running === 0;
  }

  /** Adds the machine to the schedule (a window starting now) or takes it out; either may be so already. */
  async #schedule(machine: MachineID, add: boolean): Promise<void> {
    const got = await this.backend.operator<
      { get_maintenance_schedule?: { schedule?: MaintenanceSchedule } }
    >(
      { type: "GET_MAINTENANCE_SCHEDULE" },
    );
    const current = got?.get_maintenance_schedule?.schedule?.windows ?? [];
    if (add && current.some((w) => w.machine_ids.some((m) => sameMachine(m, machine)))) return;
    const windows = current
      .map((w) => ({ ...w, machine_ids: w.machine_ids.filter((m) => m.hostname !== machine.hostname) }))
      .filter((w) => w.machine_ids.length > 0);
    if (add) {
      windows.push({
        machine_ids: [machine],
        unavailability: { start: { nanoseconds: Date.now() * 1e6 } },
      });
    } else if (windows.length === current.length) return;
    await this.backend.operator({
      type: "UPDATE_MAINTENANCE_SCHEDULE",
      update_maintenance_schedule: { schedule: { windows } },
    });
  }

  /**
   * What the master already has: its draining and down machines are in maintenance here too (a host
   * manager that stored none, or lost a race with a change), down ones listed DOWN until they come up.
   */
  async #recover(): Promise<void> {
    const status = await this.#status();
    const adopt = (id: MachineID, mode: Mode) => {
      if (!id.hostname) return;
      this.#modes.set(id.hostname, mode);
      this.#machines.set(id.hostname, id);
      this.hm.adoptMaintenance(id.hostname, mode === "down" ? "HOST_STATE_DOWN" : "HOST_STATE_DRAINING");
    };
    for (const d of status.draining_machines ?? []) adopt(d.id, "draining");
    for (const m of status.down_machines ?? []) adopt(m, "down");
    this.#recovered = true;
  }
}

/** Mesos compares machine ids by host name (case-insensitively) and IP. */
function sameMachine(a: MachineID, b: MachineID): boolean {
  return (a.hostname ?? "").toLowerCase() === (b.hostname ?? "").toLowerCase() &&
    (a.ip ?? "") === (b.ip ?? "");
}
