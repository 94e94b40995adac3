/** Turns dequeued tasks and leased hosts into a PlacementRound, and its result back into hosts and ports per task. */
import type { HostFilter, HostLease, RmTask } from "../messages.ts";
import type { Label } from "../model/config_types.ts";
import { compile, Dictionary, growing } from "./program.ts";
import { constraintKey, EXCLUSIVE_KEY, isNonExclusive, labelsOf, perHostLimit } from "./constraints.ts";
import type { TaskTypePolicy } from "./policy.ts";
import {
  F_EXCLUSIVE,
  F_KEPT_GPU,
  MOST_FREE,
  PACK,
  type PlacementResult,
  type PlacementRound,
  type RoundGroup,
  type RoundHosts,
  type RoundUnit,
  SPREAD_JOB,
} from "./round.ts";

/** The ports of a task that asks for none. */
const NO_PORTS: Record<string, number> = Object.freeze({});

/** Tasks the engine places together: a gang, or a single task. */
export interface UnitOfWork {
  tasks: RmTask[];
  gang: boolean;
  policy: TaskTypePolicy;
}

interface Group {
  task: RmTask;
  policy: TaskTypePolicy;
  strategy: number;
  count: number;
  /** The group's one task has a host reserved: it has a group (and host filter) of its own. */
  reservedFor?: string;
  /** `<jobId>-<instanceId>` of its tasks, when they are pinned to a host (their volumes' owners). */
  owners?: string[];
}

/** What a round did for one unit of work: tasks placed (with lease and ports) and tasks left over. */
export interface UnitOutcome {
  placed: { task: RmTask; lease: HostLease; ports: Record<string, number> }[];
  unplaced: RmTask[];
  /** Round unit and group of the first task left over: its rejection counts and host filter. */
  roundUnit: number;
  group: number;
}

interface Part<U> {
  group: number;
  tasks: RmTask[];
  /** Consecutive tasks of the part by owning unit. */
  runs: { unit: U; count: number }[];
}

export class RoundBuilder<U extends UnitOfWork> {
  readonly groups: Group[] = [];
  readonly #byKey = new Map<string, number>();
  readonly #lastOfJob = new Map<string, number>();
  /** Units in round order; a gang is one atomic unit, other work is merged per group. */
  readonly #units: { atomic: boolean; parts: Part<U>[] }[] = [];
  /** TASK labels any constraint of the round counts. */
  readonly taskLabels: string[] = [];
  #leases: HostLease[] = [];

  /** `reservedFor`: the task of a unit that has a host reserved for it, if any. */
  constructor(work: U[], reservedFor?: (u: U) => string | undefined) {
    const solo = new Map<number, number>();
    for (const u of work) {
      if (u.gang) {
        const parts = new Map<number, Part<U>>();
        for (const t of u.tasks) {
          const g = this.#group(t, u.policy);
          let part = parts.get(g);
          if (!part) parts.set(g, part = { group: g, tasks: [], runs: [{ unit: u, count: 0 }] });
          part.tasks.push(t);
          part.runs[0].count++;
        }
        this.#units.push({ atomic: true, parts: [...parts.values()] });
        continue;
      }
      // A unit's tasks nearly always share their needs (the engine merges only such tasks): the group
      // and run of the task before serve the next one without a lookup.
      let prev: RmTask | undefined, part: Part<U> | undefined, run: { unit: U; count: number } | undefined;
      const own = reservedFor?.(u);
      for (const t of u.tasks) {
        if (own === undefined && prev && part && run && sameNeeds(prev, t, u.policy, u.policy)) {
          this.groups[part.group].count++;
          this.#pinned(part.group, t);
          part.tasks.push(t);
          run.count++;
          prev = t;
          continue;
        }
        const g = this.#group(t, u.policy, t.taskId === own ? own : undefined);
        let at = solo.get(g);
        if (at === undefined) {
          solo.set(g, at = this.#units.length);
          this.#units.push({ atomic: false, parts: [{ group: g, tasks: [], runs: [] }] });
        }
        part = this.#units[at].parts[0];
        part.tasks.push(t);
        const last = part.runs[part.runs.length - 1];
        if (last?.unit === u) last.count++;
        else part.runs.push({ unit: u, count: 1 });
        run = part.runs[part.runs.length - 1];
        prev = t;
      }
    }
    for (const g of this.groups) labelsOf(g.task.constraint, "TASK", this.taskLabels);
  }

  /** The candidate hosts of the built round, by round host id. */
  get leases(): readonly HostLease[] {
    return this.#leases;
  }

  /** One host filter per group, in group order. */
  filters(maxHostsPerFilter: number): HostFilter[] {
    return this.groups.map((g) => {
      const t = g.task, r = t.resources;
      const onePerHost = g.strategy !== PACK || (g.policy.spreadAttribute !== undefined);
      const perHost = onePerHost ? 1 : perHostLimit(t.constraint, t.labels);
      return {
        minResources: r,
        numPorts: t.ports.length,
        staticPorts: staticPorts(t),
        maxHosts: Math.min(g.count, maxHostsPerFilter),
        gpu: r.gpuMilli > 0,
        hints: t.desiredHost ? [t.desiredHost] : undefined,
        constraint: t.constraint,
        reservedFor: g.reservedFor,
        revocable: t.revocable || undefined,
        // Ask for some room to spare: other groups of the round may take part of it.
        tasks: Math.ceil(g.count * 1.1) + 1,
        tasksPerHost: perHost,
        order: g.strategy === PACK ? "least-free" : "most-free",
        requiredHost: t.requiredHost,
        ...(g.owners ? { volumeOwners: g.owners } : {}),
        countLabels: this.taskLabels.length ? this.taskLabels : undefined,
      };
    });
  }

  /** The round over the given candidate hosts (their order is the round's host ids). */
  build(leases: HostLease[], scoreLimit: number): PlacementRound {
    this.#leases = leases;
    const dict = new Dictionary();
    leases.forEach((l, i) => dict.hostIds.set(l.hostname, i));
    for (const k of this.taskLabels) dict.labelCol(k);
    const groups: RoundGroup[] = this.groups.map((g) => this.#roundGroup(g, dict));
    const hosts = buildHosts(leases, dict);
    // Spreading over an attribute the candidates do not vary on would scan every host per task.
    for (const g of groups) if (g.domain >= 0 && distinct(hosts.attrs[g.domain]) < 2) g.domain = -1;
    const units: RoundUnit[] = this.#units.map((u) => ({
      atomic: u.atomic,
      parts: u.parts.map((p) => ({ group: p.group, count: p.tasks.length })),
    }));
    const norms: [number, number, number] = [1, 1, 1];
    for (const l of leases) {
      norms[0] = Math.max(norms[0], l.total.cpuMilli);
      norms[1] = Math.max(norms[1], l.total.memMb);
      norms[2] = Math.max(norms[2], l.total.gpuMilli);
    }
    return { hosts, groups, units, norms, scoreLimit };
  }

  /** Each unit's outcome. */
  outcomes(result: PlacementResult, groups: RoundGroup[]): Map<U, UnitOutcome> {
    const out = new Map<U, UnitOutcome>();
    let slot = 0, port = 0;
    this.#units.forEach((u, roundUnit) => {
      for (const p of u.parts) {
        const dyn = groups[p.group].dynamicPorts;
        let k = 0;
        for (const run of p.runs) {
          let o = out.get(run.unit);
          if (!o) out.set(run.unit, o = { placed: [], unplaced: [], roundUnit: -1, group: -1 });
          for (const end = k + run.count; k < end; k++, slot++, port += dyn) {
            const task = p.tasks[k], id = result.hosts[slot];
            if (id < 0) {
              if (!o.unplaced.length) [o.roundUnit, o.group] = [roundUnit, p.group];
              o.unplaced.push(task);
              continue;
            }
            // Most tasks ask for no ports: they share one empty map (a task's ports are replaced, never changed).
            const ports: Record<string, number> = task.ports.length ? {} : NO_PORTS;
            let d = 0;
            for (const q of task.ports) ports[q.name] = q.value || result.ports[port + d++];
            o.placed.push({ task, lease: this.#leases[id], ports });
          }
        }
      }
    });
    return out;
  }

  /**
   * `reservedFor`: the task has a host reserved, so the host manager must tell its own reserved host from
   * one reserved against it: it gets a group to itself.
   */
  #group(t: RmTask, policy: TaskTypePolicy, reservedFor?: string): number {
    // Tasks of a job nearly always share their needs: compare with the job's last group before keying.
    const last = reservedFor === undefined ? this.#lastOfJob.get(t.jobId) : undefined;
    if (last !== undefined && sameNeeds(this.groups[last].task, t, this.groups[last].policy, policy)) {
      this.groups[last].count++;
      this.#pinned(last, t);
      return last;
    }
    const strategy = t.placementStrategy === "SPREAD_JOB"
      ? SPREAD_JOB
      : policy.order === "most-free"
      ? MOST_FREE
      : PACK;
    const r = t.resources;
    const key = `${r.cpuMilli}/${r.memMb}/${r.diskMb}/${r.gpuMilli}/${t.revocable ? 1 : 0}/${portsKey(t)}/${
      constraintKey(t.constraint)
    }/${labelsKey(t.labels)}/${strategy}/${policy.spreadAttribute ?? ""}/${
      strategy === SPREAD_JOB || policy.spreadAttribute ? t.jobId : ""
    }/${t.desiredHost ?? ""}/${t.requiredHost ?? ""}${
      reservedFor === undefined ? "" : `/reserved:${reservedFor}`
    }`;
    let g = this.#byKey.get(key);
    if (g === undefined) {
      g = this.groups.length;
      this.groups.push({ task: t, policy, strategy, count: 0, reservedFor });
      this.#byKey.set(key, g);
    }
    this.groups[g].count++;
    this.#pinned(g, t);
    if (reservedFor === undefined) this.#lastOfJob.set(t.jobId, g);
    return g;
  }

  /**
   * A task pinned to a host may have its persistent volume there: the host manager gives an idle volume's
   * reservation only to its own task, known by job and instance (the volume is named after them).
   */
  #pinned(g: number, t: RmTask): void {
    if (t.requiredHost === undefined) return;
    (this.groups[g].owners ??= []).push(`${t.jobId}-${t.instanceId}`);
  }

  #roundGroup(g: Group, dict: Dictionary): RoundGroup {
    const t = g.task, r = t.resources;
    const constraint = t.constraint ? compile(t.constraint, dict) : null;
    const addLabels: number[] = [];
    for (const l of t.labels) {
      const col = dict.labelColIfUsed(`${l.key}=${l.value}`);
      if (col >= 0 && !addLabels.includes(col)) addLabels.push(col);
    }
    const host = (name?: string, absent = -1) => name === undefined ? -1 : dict.hostIds.get(name) ?? absent;
    return {
      cpu: r.cpuMilli,
      mem: r.memMb,
      disk: r.diskMb,
      gpu: r.gpuMilli,
      revocable: t.revocable,
      staticPorts: staticPorts(t) ?? [],
      dynamicPorts: t.ports.filter((p) => p.value === 0).length,
      constraint,
      growing: constraint ? growing(constraint) : false,
      exclusiveOk: !isNonExclusive(t.constraint),
      addLabels,
      strategy: g.strategy,
      domain: g.policy.spreadAttribute ? dict.attrCol(g.policy.spreadAttribute) : -1,
      preferHost: host(t.desiredHost),
      requireHost: host(t.requiredHost, -2),
    };
  }
}

function buildHosts(leases: HostLease[], dict: Dictionary): RoundHosts {
  const n = leases.length;
  let ranges = 0;
  for (const l of leases) ranges += l.freePorts.length;
  const h: RoundHosts = {
    count: n,
    ids: new Int32Array(n),
    cpu: new Int32Array(n),
    mem: new Int32Array(n),
    disk: new Int32Array(n),
    gpu: new Int32Array(n),
    slack: new Int32Array(n),
    flags: new Uint8Array(n),
    portStart: new Int32Array(n + 1),
    portRanges: new Int32Array(ranges * 2),
    portNext: new Int32Array(n),
    portFree: new Int32Array(n),
    portStatic: new Int32Array(0),
    attrs: dict.attrKeys.map(() => new Int32Array(n).fill(-1)),
    labels: dict.labelKeys.map(() => new Int32Array(n)),
  };
  const attrKeys = dict.attrKeys, labelKeys = dict.labelKeys;
  leases.forEach((l, i) => {
    h.ids[i] = i;
    h.cpu[i] = l.free.cpuMilli;
    h.mem[i] = l.free.memMb;
    h.disk[i] = l.free.diskMb;
    h.gpu[i] = l.free.gpuMilli;
    h.slack[i] = l.freeSlack.cpuMilli;
    h.flags[i] = (l.keptForGpu ? F_KEPT_GPU : 0) | (EXCLUSIVE_KEY in l.attributes ? F_EXCLUSIVE : 0);
    let k = h.portStart[i], free = 0;
    for (const [lo, hi] of l.freePorts) {
      h.portRanges[2 * k] = lo;
      h.portRanges[2 * k + 1] = hi;
      free += hi - lo + 1;
      k++;
    }
    h.portStart[i + 1] = k;
    h.portNext[i] = l.freePorts.length ? l.freePorts[0][0] : 0;
    h.portFree[i] = free;
    for (let col = 0; col < attrKeys.length; col++) {
      const v = l.attributes[attrKeys[col]];
      if (v !== undefined) h.attrs[col][i] = dict.valueId(col, v);
    }
    const counts = l.labelCounts;
    if (counts) {
      for (let col = 0; col < labelKeys.length; col++) h.labels[col][i] = counts[labelKeys[col]] ?? 0;
    }
  });
  return h;
}

/** Same group without building a key: same job, resources, and the very same port, label and constraint objects. */
export function sameNeeds(a: RmTask, b: RmTask, pa: TaskTypePolicy, pb: TaskTypePolicy): boolean {
  const x = a.resources, y = b.resources;
  return pa === pb && a.jobId === b.jobId && x.cpuMilli === y.cpuMilli && x.memMb === y.memMb &&
    x.diskMb === y.diskMb && x.gpuMilli === y.gpuMilli && a.revocable === b.revocable &&
    (a.ports === b.ports || portsKey(a) === portsKey(b)) && a.constraint === b.constraint &&
    (a.labels === b.labels || labelsKey(a.labels) === labelsKey(b.labels)) &&
    a.placementStrategy === b.placementStrategy && a.desiredHost === b.desiredHost &&
    a.requiredHost === b.requiredHost;
}

function distinct(col: Int32Array): number {
  const seen = new Set<number>();
  for (const v of col) {
    seen.add(v);
    if (seen.size > 1) return 2;
  }
  return seen.size;
}

const PORT_KEYS = new WeakMap<object, string>();
function portsKey(t: RmTask): string {
  if (!t.ports.length) return "";
  let k = PORT_KEYS.get(t.ports);
  if (k === undefined) PORT_KEYS.set(t.ports, k = t.ports.map((p) => `${p.name}:${p.value}`).join(","));
  return k;
}

/** The task's static port values, for the host filter; undefined when it asks for none. */
function staticPorts(t: RmTask): number[] | undefined {
  if (!t.ports.length) return undefined;
  const out = t.ports.filter((p) => p.value !== 0).map((p) => p.value);
  return out.length ? out : undefined;
}

const LABEL_KEYS = new WeakMap<object, string>();
function labelsKey(labels: Label[]): string {
  if (!labels.length) return "";
  let k = LABEL_KEYS.get(labels);
  if (k === undefined) LABEL_KEYS.set(labels, k = labels.map((l) => `${l.key}=${l.value}`).join(","));
  return k;
}
