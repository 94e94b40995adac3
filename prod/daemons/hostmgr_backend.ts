/**
 * The host manager's backend across its terms in one process: the minicluster kept running while the process
 * does not lead (its agents and their tasks live in this process), and when a new term knows its hosts.
 */
import type { HostManager } from "../../core/hostmgr/hostmgr.ts";
import type { Message } from "../../core/messages.ts";
import type { Clock } from "../../core/ports/clock.ts";
import type { Resources } from "../../core/model/resources.ts";
import type { BackendEvent, HostInfo, VolumeReservation } from "../../core/ports/host_backend.ts";
import type { Receiver } from "../../core/ports/transport.ts";
import type { SandboxBackend } from "../backends.ts";
import type { Minicluster } from "../minicluster/minicluster.ts";

/**
 * The minicluster, started once and kept while the process steps down and leads again: stopping it would end
 * every task it runs. Each term's host manager gets a `view` whose `start` attaches it (the hosts up are told
 * to it again, in a batch of their own); events while no term is attached are dropped, as they would be for a
 * host manager that died: the next term learns the tasks' states from the reconciliation the job managers ask
 * for when they see a new leader.
 */
export class KeptMinicluster {
  #sink?: (events: BackendEvent[]) => void;
  readonly #up = new Map<string, HostInfo>();
  readonly #slack = new Map<string, Resources>();
  /** Each host's last `volume-reservations`, kept while its agent is away, as the host manager keeps it. */
  readonly #volumes = new Map<string, VolumeReservation[]>();
  #started = false;

  constructor(readonly minicluster: Minicluster) {}

  /** The backend a term's host manager drives; it stops being attached at `detach`. */
  view(): SandboxBackend {
    const mc = this.minicluster;
    const view: SandboxBackend = {
      start: (sink) => this.#attach(sink),
      launch: (tasks) => mc.launch(tasks),
      kill: (tasks) => mc.kill(tasks),
      reconcile: (ids) => mc.reconcile(ids),
      machineDown: (hostname) => mc.machineDown(hostname),
      machineUp: (hostname) => mc.machineUp(hostname),
      destroyVolumes: (volumes) => void mc.destroyVolumes(volumes),
      removeSandboxes: (jobIds) => void mc.removeSandboxes(jobIds),
      logs: (taskId, file, agentId) => mc.logs(taskId, file, agentId),
      // The daemon stops the minicluster itself: a term ending leaves it running.
      stop: () => Promise.resolve(),
    };
    return view;
  }

  detach(): void {
    this.#sink = undefined;
  }

  stop(): Promise<void> {
    this.#sink = undefined;
    return this.minicluster.stop();
  }

  #attach(sink: (events: BackendEvent[]) => void): void {
    this.#sink = sink;
    if (!this.#started) {
      this.#started = true;
      this.minicluster.start((events) => this.#events(events));
      return;
    }
    const again: BackendEvent[] = [...this.#up.values()].map((host) => ({ kind: "host-up", host }));
    for (const [hostname, slack] of this.#slack) again.push({ kind: "host-slack", hostname, slack });
    // A new term's host manager holds idle volumes' reservations only once told them (after their host-up).
    for (const [hostname, volumes] of this.#volumes) {
      if (this.#up.has(hostname)) again.push({ kind: "volume-reservations", hostname, volumes });
    }
    // Never from inside start, as a backend's events come.
    if (again.length) setTimeout(() => this.#sink === sink && sink(again), 0);
  }

  #events(events: BackendEvent[]): void {
    for (const e of events) {
      if (e.kind === "host-up") this.#up.set(e.host.hostname, e.host);
      else if (e.kind === "host-lost") {
        this.#up.delete(e.hostname);
        this.#slack.delete(e.hostname);
      } else if (e.kind === "host-slack") this.#slack.set(e.hostname, e.slack);
      else if (e.kind === "volume-reservations") {
        if (e.volumes.length) this.#volumes.set(e.hostname, e.volumes);
        else this.#volumes.delete(e.hostname);
      }
    }
    this.#sink?.(events);
  }
}

/**
 * A backend whose first host event is told (`onHosts`): a new host manager knows its hosts once its backend
 * has reported them (the minicluster's agents, Mesos's first offers).
 */
export function watchHosts(backend: SandboxBackend, onHosts: () => void): SandboxBackend {
  let seen = false;
  // Delegated method by method: a backend's methods use its private fields, so they must run on it.
  const watched: SandboxBackend = {
    start: (sink) =>
      backend.start((events) => {
        sink(events);
        // Told once the host manager has taken them in.
        if (!seen && events.some((e) => e.kind === "host-up" || e.kind === "host-lost")) {
          seen = true;
          onHosts();
        }
      }),
    launch: (tasks) => backend.launch(tasks),
    kill: (tasks) => backend.kill(tasks),
    reconcile: (ids) => backend.reconcile(ids),
    logs: (taskId, file, agentId) => backend.logs(taskId, file, agentId),
    stop: () => backend.stop(),
  };
  if (backend.acknowledge) watched.acknowledge = (acks) => backend.acknowledge!(acks);
  if (backend.machineDown && backend.machineUp) {
    watched.machineDown = (hostname) => backend.machineDown!(hostname);
    watched.machineUp = (hostname) => backend.machineUp!(hostname);
  }
  if (backend.destroyVolumes) watched.destroyVolumes = (volumes) => backend.destroyVolumes!(volumes);
  if (backend.removeSandboxes) watched.removeSandboxes = (jobIds) => backend.removeSandboxes!(jobIds);
  return backend.fixedVolumes ? { ...watched, fixedVolumes: true } : watched;
}

/**
 * The host manager as the other daemons reach it while a new term's hosts register: requests for hosts
 * (a placement engine's AcquireHosts, a reservation) wait here, so no round is answered "no hosts
 * registered" by a leader that has not heard of its hosts yet; everything else goes through at once.
 */
export class HostsGate implements Receiver {
  #held: Message[] | undefined = [];

  constructor(readonly hm: Receiver) {}

  get open(): boolean {
    return this.#held === undefined;
  }

  receive(msg: Message): void {
    if (this.#held && (msg.kind === "acquire-hosts" || msg.kind === "reserve-host")) {
      this.#held.push(msg);
      return;
    }
    this.hm.receive(msg);
  }

  /** The hosts are in: the requests held go to the host manager, in order. */
  openNow(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const m of held) this.hm.receive(m);
  }
}

/**
 * A new leader whose backend is connected but has reported no host this long serves its (empty) host list:
 * a cluster without agents is answered too.
 */
export const INVENTORY_WAIT_MS = 5_000;

/** What a call to the host API is answered (`unavailable`) while the hosts register. */
export const HOSTS_REGISTERING =
  "the host manager is taking over; its hosts are registering; try again shortly";

export interface HostsRegistrationOptions {
  clock: Clock;
  /**
   * Whether the backend is connected (Mesos: subscribed; the minicluster always): a backend connected without
   * a host for `INVENTORY_WAIT_MS` has none to report.
   */
  connected(): boolean;
  /** The term ended: its wait is over, the gate stays as it is. */
  ended?(): boolean;
  log(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * A host manager's hosts registering, from its start (a new leader's term, or `peloton up`'s start) until its
 * backend has reported them: the minicluster's agents at once, Mesos's first offers once subscribed; or, the
 * backend connected, none for `INVENTORY_WAIT_MS`. Meanwhile requests for hosts wait at the gate, the full
 * inventory is held back (`holdInventory`), and the host API is to be answered `HOSTS_REGISTERING`.
 *
 * The host manager is built on `backend`, whose first host event ends the wait; `hold` puts the gate in front
 * of it before it starts, and `watch`, once it has, begins the wait.
 */
export class HostsRegistration {
  readonly backend: SandboxBackend;
  #seen = false;
  #hm?: HostManager;
  #gate?: HostsGate;
  /** When the wait began (`watch`), on the monotonic clock. */
  #since?: number;
  #connectedSince?: number;

  constructor(backend: SandboxBackend, readonly o: HostsRegistrationOptions) {
    // Checked on the next turn: the host manager has taken the hosts in, and the backend's callback is over.
    this.backend = watchHosts(backend, () => {
      this.#seen = true;
      queueMicrotask(() => this.#check());
    });
  }

  /** Whether the hosts are in (or were waited for long enough): the host API is served. */
  get open(): boolean {
    return this.#gate?.open === true;
  }

  /** The gate to register for `hm`: its requests for hosts go on to `to` (`hm` itself by default) once open. */
  hold(hm: HostManager, to: Receiver = hm): HostsGate {
    this.#hm = hm;
    this.#gate = new HostsGate(to);
    return this.#gate;
  }

  /** Begins the wait (the host manager has started); the gate opens as soon as the hosts are in. */
  watch(): void {
    this.#since = performance.now();
    this.#check();
  }

  #check(): void {
    const g = this.#gate, hm = this.#hm;
    if (!g || !hm || g.open || this.#since === undefined || this.o.ended?.()) return;
    const now = performance.now();
    if (this.#connectedSince === undefined && this.o.connected()) this.#connectedSince = now;
    if (
      this.#seen || (this.#connectedSince !== undefined && now - this.#connectedSince >= INVENTORY_WAIT_MS)
    ) {
      g.openNow();
      hm.releaseInventory();
      this.o.log("hosts registered", { hosts: hm.hosts.length, waitedMs: Math.round(now - this.#since) });
      return;
    }
    this.o.clock.setTimer(100, () => this.#check());
  }
}
