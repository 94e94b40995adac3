/** Carries the host manager's maintenance to a Mesos master: its schedule, machine down, machine up. */
import type { MesosBackend } from "./mesos_backend.ts";
import type { MachineID, MaintenanceSchedule, MaintenanceStatus } from "./protocol.ts";

/** What the sync needs of the host manager. */
export interface MaintainedHosts {
  readonly hosts: readonly { info: { hostname: string }; state: string }[];
  startMaintenance(hostname: string): string | undefined;
}

type Mode = "up" | "draining" | "down";

/**
 * Peloton's drain flow (`pkg/hostmgr/host/drainer`, `goalstate`) against the maintenance primitives: a host
 * put into maintenance joins the master's schedule (the master then sends inverse offers and offers with
 * unavailability); once the host manager has it DRAINED it goes down (START_MAINTENANCE, the agent leaves);
 * completing maintenance brings the machine up (STOP_MAINTENANCE) and out of the schedule. The schedule
 * is replaced whole on every change, so changes run one at a time. A new leader first adopts the
 * machines the master still has as draining.
 */
export class MesosMaintenance {
  readonly #modes = new Map<string, Mode>();
  #timer?: ReturnType<typeof setInterval>;
  #busy = false;
  #recovered = false;
  /** Draining machines from before a restart, until their hosts registered. */
  #adopt = new Set<string>();

  constructor(
    readonly backend: MesosBackend,
    readonly hm: MaintainedHosts,
    readonly log: (msg: string, fields?: Record<string, unknown>) => void = () => {},
  ) {}

  start(periodMs = 1000): void {
    this.#timer = setInterval(() => void this.sync(), periodMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** One pass: every host whose maintenance mode differs from what the master was told is carried over. */
  async sync(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      if (!this.#recovered) await this.#recover();
      for (const name of [...this.#adopt]) {
        // Adopted once its host registered; a host already in maintenance here needs nothing more.
        const inMaintenance = this.hm.hosts.some((h) =>
          h.info.hostname === name && h.state !== "HOST_STATE_UP"
        );
        if (inMaintenance || this.hm.startMaintenance(name) === undefined) this.#adopt.delete(name);
      }
      for (const h of this.hm.hosts) {
        const name = h.info.hostname;
        const want: Mode = h.state === "HOST_STATE_UP"
          ? "up"
          : h.state === "HOST_STATE_DRAINING"
          ? "draining"
          : "down";
        const have = this.#modes.get(name) ?? "up";
        if (want === have) continue;
        await this.#move(name, have, want);
        this.#modes.set(name, want);
        this.log("maintenance carried to the Mesos master", { host: name, from: have, to: want });
      }
    } catch (err) {
      this.log("maintenance sync failed; retrying", { error: (err as Error).message });
    } finally {
      this.#busy = false;
    }
  }

  async #move(name: string, from: Mode, to: Mode): Promise<void> {
    const machine = await this.backend.machineOf(name);
    if (from === "up") await this.#schedule(machine, true);
    if (to === "down") {
      // Inverse offers are advisory; answering them tells the master this framework agrees.
      const mine = this.backend.inverseOffersOn(name);
      if (mine.length) await this.backend.acceptInverseOffers(mine).catch(() => {});
      await this.backend.operator({ type: "START_MAINTENANCE", start_maintenance: { machines: [machine] } });
    }
    if (to === "up") {
      if (from === "down") {
        await this.backend.operator({ type: "STOP_MAINTENANCE", stop_maintenance: { machines: [machine] } });
      }
      await this.#schedule(machine, false);
    }
  }

  /** Adds the machine to the schedule (a window starting now) or takes it out. */
  async #schedule(machine: MachineID, add: boolean): Promise<void> {
    const got = await this.backend.operator<
      { get_maintenance_schedule?: { schedule?: MaintenanceSchedule } }
    >(
      { type: "GET_MAINTENANCE_SCHEDULE" },
    );
    const windows = (got?.get_maintenance_schedule?.schedule?.windows ?? [])
      .map((w) => ({ ...w, machine_ids: w.machine_ids.filter((m) => m.hostname !== machine.hostname) }))
      .filter((w) => w.machine_ids.length > 0);
    if (add) {
      windows.push({
        machine_ids: [machine],
        unavailability: { start: { nanoseconds: Date.now() * 1e6 } },
      });
    } else if (windows.length === (got?.get_maintenance_schedule?.schedule?.windows ?? []).length) return;
    await this.backend.operator({
      type: "UPDATE_MAINTENANCE_SCHEDULE",
      update_maintenance_schedule: { schedule: { windows } },
    });
  }

  /** What the master already has: draining machines go back into maintenance here; down ones stay down. */
  async #recover(): Promise<void> {
    const got = await this.backend.operator<{ get_maintenance_status?: { status?: MaintenanceStatus } }>(
      { type: "GET_MAINTENANCE_STATUS" },
    );
    const status = got?.get_maintenance_status?.status ?? {};
    for (const d of status.draining_machines ?? []) {
      if (!d.id.hostname) continue;
      this.#modes.set(d.id.hostname, "draining");
      this.#adopt.add(d.id.hostname);
    }
    for (const m of status.down_machines ?? []) if (m.hostname) this.#modes.set(m.hostname, "down");
    this.#recovered = true;
  }
}
