/** Host state in integer columns (one row per host), plus one small object per host for what is not a number. */
import { grownColumn } from "../model/columns.ts";
import type { Label } from "../model/config_types.ts";
import { type Resources, zero } from "../model/resources.ts";
import type { HostState } from "../model/states.ts";
import type { HostInfo } from "../ports/host_backend.ts";
import { heldOf, idleHold } from "./volume_holds.ts";

/** What the host manager keeps of a launched task. */
export interface HostTask {
  resources: Resources;
  ports: number[];
  labels: Label[];
  /** Its cpu comes from the host's slack, not its regular free cpu. */
  revocable: boolean;
  /** The persistent volume it mounts: while it runs, the volume's reservation is its own, not held. */
  volumeId?: string;
}

/** Index pools: GPU hosts and exclusive hosts are searched only by work that may use them. */
export const POOL_NORMAL = 0;
export const POOL_GPU = 1;
export const POOL_EXCLUSIVE = 2;
export const POOLS = 3;

export const EXCLUSIVE_ATTRIBUTE = "peloton/exclusive";
const NO_PORTS: ReadonlySet<number> = new Set();

/** One host: identity, state, and its tasks. Numbers live in the table's columns. */
export class HostEntry {
  lost = false;
  state: HostState = "HOST_STATE_UP";
  leaseId?: string;
  leaseExpiresMs = 0;
  /** Task the host is reserved for (a large task waiting for room); no one else gets it meanwhile. */
  reservedFor?: string;
  /**
   * The backend's reservations of the host's persistent volumes (Mesos, the minicluster, the simulator), by
   * volume id: an idle one's is held out of the free columns (`HostTable.rehold`), for the volume's own task.
   */
  volumes?: ReadonlyMap<string, Resources>;
  readonly tasks = new Map<string, HostTask>();
  /** Ports tasks on the host use (allocated with the first one: most hosts run tasks without ports). */
  #usedPorts?: Set<number>;
  /** Tasks per label `key=value`, for TASK-kind constraints (only labels some task carries). */
  labelCounts?: Map<string, number>;
  isGpu = false;
  isExclusive = false;
  #free?: Resources;
  #info!: HostInfo;

  constructor(readonly index: number, info: HostInfo, private readonly table: HostTable) {
    this.info = info;
  }

  get usedPorts(): ReadonlySet<number> {
    return this.#usedPorts ?? NO_PORTS;
  }

  /** The mutable set, for the table's accounting. */
  portsInUse(): Set<number> {
    return this.#usedPorts ??= new Set();
  }

  get info(): HostInfo {
    return this.#info;
  }

  set info(info: HostInfo) {
    this.#info = info;
    this.isGpu = info.resources.gpuMilli > 0;
    this.isExclusive = EXCLUSIVE_ATTRIBUTE in info.attributes;
  }

  /** Free regular resources: one object per host, refreshed from the columns on every read. */
  get free(): Resources {
    const f = this.#free ??= zero();
    const t = this.table, i = this.index;
    f.cpuMilli = t.freeCpu[i];
    f.memMb = t.freeMem[i];
    f.diskMb = t.freeDisk[i];
    f.gpuMilli = t.freeGpu[i];
    return f;
  }

  /** Slack (revocable) resources the host lends now, and the part revocable tasks use. */
  get slack(): Resources {
    return this.table.slack(this.index);
  }

  /** The port is in the host's ranges and no task on the host uses it. */
  portFree(port: number): boolean {
    return inRanges(this.#info.portRanges, port) && !this.usedPorts.has(port);
  }

  leased(now: number): boolean {
    return this.leaseId !== undefined && this.leaseExpiresMs > now;
  }
}

/** Columns grow by doubling; a host keeps its row for the life of the host manager. */
export class HostTable {
  readonly entries: HostEntry[] = [];
  freeCpu = new Int32Array(0);
  freeMem = new Int32Array(0);
  freeDisk = new Int32Array(0);
  freeGpu = new Int32Array(0);
  /** Slack the host lends (cpu is what revocable tasks use; the rest is reported as capacity). */
  slackCpu = new Int32Array(0);
  slackMem = new Int32Array(0);
  slackDisk = new Int32Array(0);
  slackGpu = new Int32Array(0);
  slackUsedCpu = new Int32Array(0);
  /** Ports in the host's ranges not used by a task. */
  freePorts = new Int32Array(0);
  /** What the free columns leave out for idle volumes' reservations (not allocated, not free to others). */
  heldCpu = new Int32Array(0);
  heldMem = new Int32Array(0);
  heldDisk = new Int32Array(0);
  heldGpu = new Int32Array(0);

  get size(): number {
    return this.entries.length;
  }

  add(info: HostInfo): HostEntry {
    const i = this.entries.length;
    if (i >= this.freeCpu.length) this.#grow(Math.max(64, i * 2));
    const h = new HostEntry(i, info, this);
    this.entries.push(h);
    this.recount(h);
    return h;
  }

  free(i: number): Resources {
    return {
      cpuMilli: this.freeCpu[i],
      memMb: this.freeMem[i],
      diskMb: this.freeDisk[i],
      gpuMilli: this.freeGpu[i],
    };
  }

  held(i: number): Resources {
    return {
      cpuMilli: this.heldCpu[i],
      memMb: this.heldMem[i],
      diskMb: this.heldDisk[i],
      gpuMilli: this.heldGpu[i],
    };
  }

  /**
   * Holds the reservations of the host's idle volumes out of its free columns, again after its tasks or its
   * volumes changed. Hosts without volumes (every host but a Mesos one with stateful tasks) skip it.
   */
  rehold(h: HostEntry): void {
    const i = h.index;
    if (!h.volumes?.size && !this.heldCpu[i] && !this.heldMem[i] && !this.heldDisk[i] && !this.heldGpu[i]) {
      return;
    }
    this.freeCpu[i] += this.heldCpu[i];
    this.freeMem[i] += this.heldMem[i];
    this.freeDisk[i] += this.heldDisk[i];
    this.freeGpu[i] += this.heldGpu[i];
    const held = h.volumes?.size ? heldOf(idleHold(h.volumes, volumesInUse(h)), this.free(i)) : zero();
    this.heldCpu[i] = held.cpuMilli;
    this.heldMem[i] = held.memMb;
    this.heldDisk[i] = held.diskMb;
    this.heldGpu[i] = held.gpuMilli;
    this.freeCpu[i] -= held.cpuMilli;
    this.freeMem[i] -= held.memMb;
    this.freeDisk[i] -= held.diskMb;
    this.freeGpu[i] -= held.gpuMilli;
  }

  /**
   * What the host holds for the volumes `owned` accepts, that their own task may have on top of the free
   * columns: the hold less what would be held without them.
   */
  ownHold(h: HostEntry, owned: (volumeId: string) => boolean): Resources {
    const i = h.index;
    if (!h.volumes?.size) return zero();
    const held = this.held(i);
    const unheld = this.free(i);
    unheld.cpuMilli += held.cpuMilli;
    unheld.memMb += held.memMb;
    unheld.diskMb += held.diskMb;
    unheld.gpuMilli += held.gpuMilli;
    const rest = heldOf(idleHold(h.volumes, volumesInUse(h), owned), unheld);
    return {
      cpuMilli: held.cpuMilli - rest.cpuMilli,
      memMb: held.memMb - rest.memMb,
      diskMb: held.diskMb - rest.diskMb,
      gpuMilli: held.gpuMilli - rest.gpuMilli,
    };
  }

  slack(i: number): Resources {
    return {
      cpuMilli: this.slackCpu[i],
      memMb: this.slackMem[i],
      diskMb: this.slackDisk[i],
      gpuMilli: this.slackGpu[i],
    };
  }

  /** Free slack: slack cpu minus what revocable tasks use (Peloton treats only cpu as revocable). */
  freeSlack(i: number): Resources {
    const r = this.slack(i);
    r.cpuMilli -= this.slackUsedCpu[i];
    return r;
  }

  setSlack(i: number, s: Resources): void {
    this.slackCpu[i] = s.cpuMilli;
    this.slackMem[i] = s.memMb;
    this.slackDisk[i] = s.diskMb;
    this.slackGpu[i] = s.gpuMilli;
  }

  /** Takes a task's resources from the host (revocable cpu from slack). */
  take(h: HostEntry, t: HostTask): void {
    const i = h.index, r = t.resources;
    if (t.revocable) this.slackUsedCpu[i] += r.cpuMilli;
    else this.freeCpu[i] -= r.cpuMilli;
    this.freeMem[i] -= r.memMb;
    this.freeDisk[i] -= r.diskMb;
    this.freeGpu[i] -= r.gpuMilli;
    for (const l of t.labels) {
      const k = labelKey(l);
      const m = h.labelCounts ??= new Map();
      m.set(k, (m.get(k) ?? 0) + 1);
    }
    for (const p of t.ports) {
      const used = h.portsInUse();
      if (!used.has(p)) {
        used.add(p);
        if (inRanges(h.info.portRanges, p)) this.freePorts[i]--;
      }
    }
    this.rehold(h);
  }

  /** Gives a task's resources back. */
  give(h: HostEntry, t: HostTask): void {
    const i = h.index, r = t.resources;
    if (t.revocable) this.slackUsedCpu[i] -= r.cpuMilli;
    else this.freeCpu[i] += r.cpuMilli;
    this.freeMem[i] += r.memMb;
    this.freeDisk[i] += r.diskMb;
    this.freeGpu[i] += r.gpuMilli;
    for (const l of t.labels) {
      const k = labelKey(l), n = h.labelCounts?.get(k) ?? 0;
      if (n > 1) h.labelCounts!.set(k, n - 1);
      else h.labelCounts?.delete(k);
    }
    for (const p of t.ports) {
      if (h.portsInUse().delete(p) && inRanges(h.info.portRanges, p)) this.freePorts[i]++;
    }
    this.rehold(h);
  }

  /** Recomputes a host's free resources from its total and its tasks. */
  recount(h: HostEntry): void {
    const i = h.index, t = h.info.resources;
    this.freeCpu[i] = t.cpuMilli;
    this.freeMem[i] = t.memMb;
    this.freeDisk[i] = t.diskMb;
    this.freeGpu[i] = t.gpuMilli;
    this.heldCpu[i] =
      this.heldMem[i] =
      this.heldDisk[i] =
      this.heldGpu[i] =
        0;
    this.slackUsedCpu[i] = 0;
    let ports = 0;
    for (const [lo, hi] of h.info.portRanges) ports += hi - lo + 1;
    this.freePorts[i] = ports;
    if (h.usedPorts.size) h.portsInUse().clear();
    h.labelCounts = undefined;
    for (const task of h.tasks.values()) this.take(h, task);
    this.rehold(h);
  }

  /** Sum of slack over hosts that are not lost. */
  totalSlack(): Resources {
    const s = zero();
    for (const h of this.entries) {
      if (h.lost) continue;
      s.cpuMilli += this.slackCpu[h.index];
      s.memMb += this.slackMem[h.index];
      s.diskMb += this.slackDisk[h.index];
      s.gpuMilli += this.slackGpu[h.index];
    }
    return s;
  }

  #grow(cap: number): void {
    this.freeCpu = grownColumn(this.freeCpu, cap);
    this.freeMem = grownColumn(this.freeMem, cap);
    this.freeDisk = grownColumn(this.freeDisk, cap);
    this.freeGpu = grownColumn(this.freeGpu, cap);
    this.slackCpu = grownColumn(this.slackCpu, cap);
    this.slackMem = grownColumn(this.slackMem, cap);
    this.slackDisk = grownColumn(this.slackDisk, cap);
    this.slackGpu = grownColumn(this.slackGpu, cap);
    this.slackUsedCpu = grownColumn(this.slackUsedCpu, cap);
    this.freePorts = grownColumn(this.freePorts, cap);
    this.heldCpu = grownColumn(this.heldCpu, cap);
    this.heldMem = grownColumn(this.heldMem, cap);
    this.heldDisk = grownColumn(this.heldDisk, cap);
    this.heldGpu = grownColumn(this.heldGpu, cap);
  }
}

/** The volumes the host's running tasks mount. */
function volumesInUse(h: HostEntry): Set<string> {
  const out = new Set<string>();
  for (const t of h.tasks.values()) if (t.volumeId !== undefined) out.add(t.volumeId);
  return out;
}

export function inRanges(ranges: [number, number][], p: number): boolean {
  for (const [lo, hi] of ranges) if (p >= lo && p <= hi) return true;
  return false;
}

/** `key=value`, built once per label object (tasks of a job share theirs). */
export function labelKey(l: Label): string {
  let k = LABEL_KEYS.get(l);
  if (k === undefined) LABEL_KEYS.set(l, k = `${l.key}=${l.value}`);
  return k;
}
const LABEL_KEYS = new WeakMap<Label, string>();
