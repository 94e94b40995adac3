/** Leasing hosts for a filter: walk the free index (or an attribute posting) and count why hosts were passed over. */
import type { HostFilter, HostLease } from "../messages.ts";
import type { Constraint } from "../model/config_types.ts";
import {
  type ConstraintTarget,
  describeConstraint,
  evaluate,
  HOST_KIND,
  hostLimitExceeded,
  isNonExclusive,
} from "../placement/constraints.ts";
import { cellCpuLevel, cellMemLevel, cellOf, CELLS, CPU_LADDER, level, MEM_LADDER } from "./free_index.ts";
import { type HostEntry, POOL_EXCLUSIVE, POOL_GPU, POOL_NORMAL } from "./host_table.ts";
import { type HostRegistry, LEASED, LOST, MAINTENANCE, READY, RESERVED } from "./registry.ts";
import type { Resources } from "../model/resources.ts";
import { ownedBy } from "./volume_holds.ts";

/** Rejection reasons, shared with the placement engine so reports count one vocabulary. */
export const REJECT = {
  cpu: "insufficient cpu",
  mem: "insufficient memory",
  disk: "insufficient disk",
  gpu: "insufficient gpu",
  slack: "insufficient revocable cpu",
  ports: "insufficient ports",
  gpuKept: "GPU host kept for GPU work",
  exclusive: "exclusive host",
  leased: "host leased to another placement",
  reserved: "host reserved for a large task",
  maintenance: "host in maintenance",
  lost: "host lost",
  notRequired: "not the required host",
} as const;

const NOTHING: Resources = Object.freeze({ cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 });

export function constraintFailed(c: Constraint): string {
  return `constraint ${describeConstraint(c)} failed`;
}

/** A host without a static port the work asks for: outside its ranges, or used by a task there. */
export function staticPortTaken(port: number): string {
  return `static port ${port} taken or not offered`;
}

const CATEGORY_REASON = [
  "",
  REJECT.leased,
  REJECT.reserved,
  REJECT.maintenance,
  REJECT.lost,
];

export interface AcquireOutcome {
  leases: HostLease[];
  exhausted: boolean;
}

/** The host's counts of the labels asked for (labels no task on the host carries are left out: zero). */
export function labelCounts(h: HostEntry, wanted: ReadonlySet<string>): Record<string, number> | undefined {
  if (!h.labelCounts?.size) return undefined;
  let out: Record<string, number> | undefined;
  // forEach, not for-of: no entry array per label (this runs for every host leased in a round with TASK labels).
  h.labelCounts.forEach((n, k) => {
    if (wanted.has(k)) (out ??= {})[k] = n;
  });
  return out;
}

/**
 * One filter's search; the registry is mutated only by leasing. `run` leases; `count`, once every filter of
 * the request has leased, says why the other hosts were passed over. Each host is counted at most once: a
 * host of the engine's round (leased by any filter of the request, or held from an earlier round) is not a
 * rejection here, as the engine counts every host of its round itself.
 */
export class FilterSearch {
  readonly leases: HostLease[] = [];
  readonly rejections: Record<string, number> = {};
  #tasks = 0;
  #exhausted = false;
  #posting?: readonly number[];
  /** Ready hosts rejected on a visit, and why: a later filter of the request may lease one. */
  readonly #rejectedRows: number[] = [];
  readonly #rejectedWhy: string[] = [];
  /** The host reserved for the filter's task (`reservedFor`) was looked at. */
  #ownSeen = false;
  readonly #target: number;
  readonly #perHost: number;
  readonly #nonExclusive: boolean;
  /** Hinted hosts, looked at first (the walks skip them; every other host is seen at most once per walk). */
  readonly #hinted = new Set<number>();
  /** Hosts rejected for their state (leased, reserved, ...), by category. */
  readonly #byStatus = new Int32Array(5);
  readonly #ct: ConstraintTarget = { hostname: "", attributes: {}, taskLabels: [] };
  #host?: HostEntry;
  readonly #wanted?: ReadonlySet<string>;
  /** The required host's hold for the filter's own idle volumes, free to this filter only. */
  #own?: Resources;

  /**
   * `requestLeased` holds the hosts of the engine's round: those the request's filters lease (a filter adds
   * its own) and those it holds from an earlier round. `own` is the host reserved for the filter's one
   * task (`reservedFor`), if there is one: it is counted by what it lacks, not as reserved for a large task.
   */
  constructor(
    private readonly reg: HostRegistry,
    private readonly f: HostFilter,
    private readonly now: number,
    private readonly requestLeased: Set<number> = new Set(),
    private readonly own?: HostEntry,
  ) {
    this.#target = f.tasks ?? Infinity;
    this.#perHost = f.tasksPerHost ?? Infinity;
    this.#nonExclusive = isNonExclusive(f.constraint);
    this.#ct.labelCount = (k, v) => this.#host?.labelCounts?.get(`${k}=${v}`) ?? 0;
    if (f.countLabels?.length) this.#wanted = new Set(f.countLabels);
  }

  get done(): boolean {
    return this.leases.length >= this.f.maxHosts || this.#tasks >= this.#target;
  }

  /** Leases hosts for the filter; true `exhausted`: every matching host was looked at. */
  run(): AcquireOutcome {
    const f = this.f, reg = this.reg;
    if (f.requiredHost !== undefined) {
      const h = reg.byName.get(f.requiredHost);
      const owners = f.volumeOwners;
      if (h && owners?.length && h.volumes?.size) {
        this.#own = reg.table.ownHold(h, (volumeId) => ownedBy(volumeId, owners));
      }
      if (!h) this.#reject(`required host ${f.requiredHost} unknown`);
      // The one host the task may use: which maintenance state it is in says how long the task waits.
      else if (reg.category(h) === MAINTENANCE) {
        this.#passOver(h, MAINTENANCE, `${REJECT.maintenance} (${h.state})`);
      } else this.#visit(h);
      return { leases: this.leases, exhausted: true };
    }
    for (const name of f.hints ?? []) {
      const h = reg.byName.get(name);
      if (!h || this.#hinted.has(h.index) || this.done) continue;
      this.#hinted.add(h.index);
      this.#visit(h);
    }
    const posting = this.#selectivePosting();
    this.#exhausted = posting ? this.#walkPosting(posting) : this.#walkCells();
    this.#posting = posting;
    return { leases: this.leases, exhausted: this.#exhausted };
  }

  /**
   * Why hosts were passed over, once every filter of the request has leased: a host this filter turned down
   * that a later one leased is taken out again, and, when the search covered every match, the hosts it
   * never looked at are counted as they are now (so without any of the round's).
   */
  count(): Record<string, number> {
    const rows = this.#rejectedRows;
    for (let k = 0; k < rows.length; k++) {
      if (!this.requestLeased.has(rows[k])) continue;
      const why = this.#rejectedWhy[k];
      if (--this.rejections[why] === 0) delete this.rejections[why];
    }
    if (this.#exhausted) this.#countUnseen(this.#posting);
    return this.rejections;
  }

  /** Pools a filter searches: GPU work the kept GPU hosts, exclusive hosts only with a constraint naming them. */
  pools(): number[] {
    const gpuWork = this.f.minResources.gpuMilli > 0;
    const pools = gpuWork && this.reg.scarceGpu ? [POOL_GPU] : [POOL_NORMAL];
    if (!this.#nonExclusive) pools.unshift(POOL_EXCLUSIVE);
    return pools;
  }

  /** Why a host does not fit the filter, or "" when it does (its state is checked by the caller). */
  mismatch(h: HostEntry): string {
    const f = this.f, t = this.reg.table, i = h.index, r = f.minResources, o = this.#ownOn(h);
    if (h.isExclusive) {
      if (this.#nonExclusive) return REJECT.exclusive;
    } else if (this.reg.scarceGpu && h.isGpu && r.gpuMilli <= 0 && f.requiredHost === undefined) {
      // Keeping GPU hosts steers work that picks its host; a task pinned to one (a daemon's instance, a
      // volume's host) was given it by what it is, and has nowhere else to go.
      return REJECT.gpuKept;
    }
    if (f.revocable) {
      if (t.slackCpu[i] - t.slackUsedCpu[i] < r.cpuMilli) return REJECT.slack;
    } else if (t.freeCpu[i] + o.cpuMilli < r.cpuMilli) return REJECT.cpu;
    if (t.freeMem[i] + o.memMb < r.memMb) return REJECT.mem;
    if (t.freeDisk[i] + o.diskMb < r.diskMb) return REJECT.disk;
    if (t.freeGpu[i] + o.gpuMilli < r.gpuMilli) return REJECT.gpu;
    if (f.numPorts > 0 && t.freePorts[i] < f.numPorts) return REJECT.ports;
    // Only work with static ports pays for this: the rest never looks at a host's ranges.
    if (f.staticPorts !== undefined) {
      for (const p of f.staticPorts) if (!h.portFree(p)) return staticPortTaken(p);
    }
    return this.constraintMismatch(h);
  }

  /** What the filter may have of the host beyond its free columns: its own idle volumes' hold. */
  #ownOn(h: HostEntry): Resources {
    return this.#own !== undefined && h.info.hostname === this.f.requiredHost ? this.#own : NOTHING;
  }

  /** The filter's constraint (HOST labels and the host limit) against a host, or "" when it passes. */
  constraintMismatch(h: HostEntry): string {
    const f = this.f;
    this.#host = h;
    if (h.isExclusive && this.#nonExclusive) return REJECT.exclusive;
    const c = f.constraint;
    if (c) {
      const ct = this.#ct;
      ct.hostname = h.info.hostname;
      ct.attributes = h.info.attributes;
      if (evaluate(c, ct, HOST_KIND) === "mismatch") return constraintFailed(c);
      if (this.#wanted && hostLimitExceeded(c, ct.labelCount!)) return constraintFailed(c);
    }
    return "";
  }

  /** How many of the filter's tasks fit on the host. */
  room(h: HostEntry): number {
    const f = this.f, t = this.reg.table, i = h.index, r = f.minResources, o = this.#ownOn(h);
    let k = this.#perHost;
    const cpu = f.revocable ? t.slackCpu[i] - t.slackUsedCpu[i] : t.freeCpu[i] + o.cpuMilli;
    if (r.cpuMilli > 0) k = Math.min(k, Math.floor(cpu / r.cpuMilli));
    if (r.memMb > 0) k = Math.min(k, Math.floor((t.freeMem[i] + o.memMb) / r.memMb));
    if (r.diskMb > 0) k = Math.min(k, Math.floor((t.freeDisk[i] + o.diskMb) / r.diskMb));
    if (r.gpuMilli > 0) k = Math.min(k, Math.floor((t.freeGpu[i] + o.gpuMilli) / r.gpuMilli));
    if (f.numPorts > 0) k = Math.min(k, Math.floor(t.freePorts[i] / f.numPorts));
    // Two tasks cannot share a static port on one host.
    if (f.staticPorts?.length) k = Math.min(k, 1);
    return Number.isFinite(k) ? Math.max(1, k) : 1_000_000;
  }

  /** Looks at a host once: rejected for its state or its fit, or leased. */
  #visit(h: HostEntry): void {
    const cat = this.reg.category(h);
    if (cat !== READY) return this.#passOver(h, cat);
    const why = this.mismatch(h);
    if (why) return this.#rejectReady(h, why);
    this.#lease(h);
  }

  /**
   * A host that is not ready: a host of the round is none of this filter's business; the rest by state, in
   * the category's words unless `why` says more.
   */
  #passOver(h: HostEntry, cat: number, why = CATEGORY_REASON[cat]): void {
    if (cat === LEASED && this.requestLeased.has(h.index)) return;
    this.#byStatus[cat]++;
    if (cat === RESERVED && h === this.own) {
      // Reserved for this very task: it waits for room there, so what the host lacks is the reason.
      this.#ownSeen = true;
      const lacks = this.mismatch(h);
      if (lacks) this.#reject(lacks);
      return;
    }
    this.#reject(why);
  }

  #rejectReady(h: HostEntry, why: string): void {
    this.#rejectedRows.push(h.index);
    this.#rejectedWhy.push(why);
    this.#reject(why);
  }

  #lease(h: HostEntry): void {
    this.#tasks += this.room(h);
    this.requestLeased.add(h.index);
    const own = this.#ownOn(h);
    const extra = own === NOTHING ? undefined : own;
    this.leases.push(this.reg.lease(h, this.now, this.#wanted && labelCounts(h, this.#wanted), extra));
  }

  #reject(why: string, n = 1): void {
    if (n > 0) this.rejections[why] = (this.rejections[why] ?? 0) + n;
  }

  /** A posting of a HOST equality the constraint requires, when it is much smaller than the ready hosts. */
  #selectivePosting(): readonly number[] | undefined {
    const c = this.f.constraint;
    if (!c) return undefined;
    let best: readonly number[] | undefined;
    for (const [k, v] of requiredEqualities(c)) {
      const p = this.reg.posting(k, v);
      if (!best || p.length < best.length) best = p;
    }
    if (!best || best.length > Math.max(64, this.reg.count(READY) / 8)) return undefined;
    return best;
  }

  /** Leases fitting hosts of a posting, best first in the filter's order; true when it ran out of hosts. */
  #walkPosting(posting: readonly number[]): boolean {
    const reg = this.reg, t = reg.table, hosts = reg.hosts;
    const fit: HostEntry[] = [];
    for (const i of posting) {
      if (this.#hinted.has(i)) continue;
      const h = hosts[i];
      const cat = reg.category(h);
      if (cat !== READY) {
        this.#passOver(h, cat);
        continue;
      }
      const why = this.mismatch(h);
      if (why) this.#rejectReady(h, why);
      else fit.push(h);
    }
    const score = (h: HostEntry) => t.freeCpu[h.index] / reg.normCpu + t.freeMem[h.index] / reg.normMem;
    const sign = this.f.order === "most-free" ? -1 : 1;
    fit.sort((a, b) => sign * (score(a) - score(b)) || a.index - b.index);
    for (let j = 0; j < fit.length; j++) {
      if (this.done) return false;
      this.#lease(fit[j]);
    }
    return true;
  }

  /** Walks index cells that can fit, in best-fit (or most-free) order; true when it ran out of hosts. */
  #walkCells(): boolean {
    const reg = this.reg, r = this.f.minResources;
    const lc = this.f.revocable ? 0 : level(CPU_LADDER, r.cpuMilli);
    const lm = level(MEM_LADDER, r.memMb);
    const order = reg.order, hosts = reg.hosts, index = reg.index;
    const desc = this.f.order === "most-free";
    for (const pool of this.pools()) {
      for (let j = 0; j < CELLS; j++) {
        const cell = order[desc ? CELLS - 1 - j : j];
        if (cellCpuLevel(cell) < lc || cellMemLevel(cell) < lm || index.count(pool, cell) === 0) continue;
        for (let h = index.first(pool, cell); h >= 0;) {
          const next = index.next(h);
          if (!this.#hinted.size || !this.#hinted.has(h)) {
            if (this.done) return false;
            this.#visit(hosts[h]);
          }
          h = next;
        }
      }
    }
    return true;
  }

  /**
   * When the search covered every candidate, the hosts it never looked at are counted from the
   * index: by state, by pool, by cells too small, or outside the constraint's posting.
   */
  #countUnseen(posting: readonly number[] | undefined): void {
    const reg = this.reg, index = reg.index;
    const own = this.own;
    const ownUnseen = own !== undefined && !this.#ownSeen && reg.category(own) === RESERVED;
    for (const cat of [LEASED, RESERVED, MAINTENANCE, LOST]) {
      // Every host of the round is leased (the host manager adds a held one only while its lease lasts).
      const mine = cat === LEASED ? this.requestLeased.size : cat === RESERVED && ownUnseen ? 1 : 0;
      this.#reject(CATEGORY_REASON[cat], reg.count(cat) - this.#byStatus[cat] - mine);
    }
    if (ownUnseen) {
      const why = this.mismatch(own);
      if (why) this.#reject(why);
    }
    // Ready hosts already seen (hints) sit in the buckets counted below: take them out again.
    const seenReady: HostEntry[] = [];
    for (const i of this.#hinted) if (reg.category(reg.hosts[i]) === READY) seenReady.push(reg.hosts[i]);
    if (posting) {
      const inPosting = new Set(posting);
      let outside = reg.count(READY);
      for (const i of posting) if (reg.category(reg.hosts[i]) === READY) outside--;
      for (const h of seenReady) if (!inPosting.has(h.index)) outside--;
      this.#reject(constraintFailed(this.f.constraint!), outside);
      return;
    }
    const r = this.f.minResources;
    const lc = this.f.revocable ? 0 : level(CPU_LADDER, r.cpuMilli);
    const lm = level(MEM_LADDER, r.memMb);
    const searched = this.pools();
    const bucket = (pool: number, cell: number): string | undefined => {
      if (!searched.includes(pool)) {
        return pool === POOL_GPU ? REJECT.gpuKept : pool === POOL_EXCLUSIVE ? REJECT.exclusive : REJECT.gpu;
      }
      if (cellCpuLevel(cell) < lc) return REJECT.cpu;
      if (cellMemLevel(cell) < lm) return REJECT.mem;
      return undefined;
    };
    for (const pool of [POOL_NORMAL, POOL_GPU, POOL_EXCLUSIVE]) {
      for (let cell = 0; cell < CELLS; cell++) {
        const n = index.count(pool, cell);
        const why = n ? bucket(pool, cell) : undefined;
        if (why) this.#reject(why, n);
      }
    }
    const t = reg.table;
    for (const h of seenReady) {
      const why = bucket(reg.poolOf(h), cellOf(t.freeCpu[h.index], t.freeMem[h.index]));
      if (why) this.rejections[why]--;
    }
  }
}

/** HOST equalities every match must satisfy (AND of `key=value`); OR gives none. */
export function requiredEqualities(c: Constraint): [string, string][] {
  switch (c.type) {
    case "LABEL_CONSTRAINT": {
      const l = c.labelConstraint;
      const eq = (l.condition === "EQUAL" && l.requirement === 1) ||
        (l.condition === "GREATER_THAN" && l.requirement === 0);
      return l.kind === "HOST" && eq ? [[l.label.key, l.label.value]] : [];
    }
    case "AND_CONSTRAINT":
      return c.andConstraint.constraints.flatMap(requiredEqualities);
    case "OR_CONSTRAINT":
      return [];
  }
}
