/** Placement test helpers: rounds from host specs and tasks read back by task id, and an engine driven by hand. */
import type { Gang, HostLease, RmTask } from "../messages.ts";
import type { Constraint } from "../model/config_types.ts";
import { resources } from "../model/resources.ts";
import type { PlacementExecutor } from "../ports/placement_executor.ts";
import { type Prng, randomInt, seededPrng } from "../ports/prng.ts";
import { type HostSpec, makeHost, makeLease, makePorts, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_PLACEMENT_CONFIG, type PlacementConfig, PlacementEngine } from "./engine.ts";
import { placeRound } from "./plan.ts";
import { PELOTON_POLICIES, type TaskTypePolicy } from "./policy.ts";
import { failureReason, rejectionCounts } from "./reasons.ts";
import { gangFailure } from "./gang_reason.ts";
import { RoundBuilder, type UnitOfWork } from "./round_build.ts";
import type { PlacementResult, PlacementRound } from "./round.ts";

export type HostRow = [string, HostSpec?, Partial<HostLease>?];

/** The largest host of the engine tests' clusters: 32 cpus, 64 GB, 4 GPUs. */
export const LARGEST = resources(32_000, 65_536, 0, 4_000);

export const lease = (name: string, spec?: HostSpec): HostLease =>
  makeLease(makeHost(name, spec), { leaseId: `${name}#1` });

export const one = (t: Partial<RmTask>): Gang => ({ tasks: [makeRmTask(t)] });

/** A placement engine on test ports; the test answers its dequeues and acquires by hand. */
export function engineRig(config: Partial<PlacementConfig> = {}, executor?: PlacementExecutor) {
  const ports = makePorts();
  const pe = new PlacementEngine(
    { ...ports, self: "placement", resmgr: "resmgr", hostmgr: "hostmgr", executor },
    { ...DEFAULT_PLACEMENT_CONFIG, ...config },
  );
  const { transport } = ports;
  pe.start();
  /** Answers the pending dequeue with these gangs; returns the dequeue's timeout. */
  const gangs = (...list: Gang[]) => {
    const dq = transport.takeOne("dequeue-gangs", "resmgr");
    pe.receive({ kind: "gangs", reqId: dq.reqId, gangs: list });
    return dq.timeoutMs;
  };
  /** Answers the pending dequeue with no gangs and the resource manager's room epoch. */
  const roomEpoch = (roomEpoch: number) => {
    const dq = transport.takeOne("dequeue-gangs", "resmgr");
    pe.receive({ kind: "gangs", reqId: dq.reqId, gangs: [], roomEpoch });
  };
  /** Answers the pending acquire with leases, in a cluster whose largest host is `LARGEST`; returns the filters. */
  const hosts = (leases: HostLease[], rejections: Record<string, number> = {}, exhausted = true) => {
    const req = transport.takeOne("acquire-hosts", "hostmgr");
    const n = req.filters.length;
    pe.receive({
      kind: "hosts-acquired",
      reqId: req.reqId,
      leases,
      rejections: Array.from({ length: n }, () => rejections),
      exhausted: Array.from({ length: n }, () => exhausted),
      largestHost: LARGEST,
    });
    return req.filters;
  };
  return { ...ports, pe, gangs, roomEpoch, hosts };
}

export function leases(rows: HostRow[]): HostLease[] {
  return rows.map(([name, spec, extra]) =>
    makeLease(makeHost(name, spec), { leaseId: `${name}#1`, ...extra })
  );
}

/** `n` tasks of one job, instance ids from `from`. */
export function tasks(n: number, extra: Partial<RmTask> = {}, from = 0): RmTask[] {
  return Array.from({ length: n }, (_, i) => makeRmTask({ instanceId: from + i, ...extra }));
}

export interface Placed {
  round: PlacementRound;
  result: PlacementResult;
  /** Host of each task, or undefined. */
  where: Record<string, string | undefined>;
  ports: Record<string, Record<string, number>>;
  /** Failure reason of each unplaced task. */
  reasons: Record<string, string>;
  /** Tasks per host. */
  perHost: Record<string, number>;
}

/** Places single tasks and gangs (arrays) over the hosts in one round. */
export function place(
  rows: HostRow[],
  work: (RmTask | RmTask[])[],
  opts: { partitions?: number; policy?: TaskTypePolicy; scoreLimit?: number } = {},
): Placed {
  const units: UnitOfWork[] = work.map((w) => ({
    tasks: Array.isArray(w) ? w : [w],
    gang: Array.isArray(w),
    policy: opts.policy ?? PELOTON_POLICIES[(Array.isArray(w) ? w[0] : w).taskType],
  }));
  const b = new RoundBuilder(units);
  const round = b.build(leases(rows), opts.scoreLimit ?? 16);
  const result = placeRound(round, opts.partitions ?? 1);
  const out: Placed = { round, result, where: {}, ports: {}, reasons: {}, perHost: {} };
  for (const [u, o] of b.outcomes(result, round.groups)) {
    for (const { task, lease, ports } of o.placed) {
      out.where[task.taskId] = lease.hostname;
      out.ports[task.taskId] = ports;
      out.perHost[lease.hostname] = (out.perHost[lease.hostname] ?? 0) + 1;
    }
    for (const task of o.unplaced) {
      out.where[task.taskId] = undefined;
      const stages = result.failures[o.roundUnit];
      const counts = rejectionCounts(task, stages, {});
      const text = failureReason(task, counts);
      // As the engine words it.
      out.reasons[task.taskId] = u.gang
        ? gangFailure(u.tasks, text, counts, stages, round.hosts.count)
        : text;
    }
  }
  return out;
}

/** A random cluster slice: mixed sizes, some GPU and exclusive hosts, racks and pools, some slack. */
export function randomHosts(prng: Prng, n: number): HostRow[] {
  const rows: HostRow[] = [];
  for (let i = 0; i < n; i++) {
    const gpu = prng() < 0.15 ? 4 : 0;
    const attributes: Record<string, string> = { rack: `r${i % 5}`, pool: prng() < 0.3 ? "batch" : "shared" };
    if (prng() < 0.05) attributes["peloton/exclusive"] = "ml";
    const lo = 31000 + randomInt(prng, 0, 3);
    rows.push([`h${i}`, {
      cpu: randomInt(prng, 1, 16),
      memMb: randomInt(prng, 1, 32) * 1024,
      gpu,
      attributes,
      ports: [[lo, lo + randomInt(prng, 0, 6)]],
    }, {
      keptForGpu: gpu > 0,
      freeSlack: { cpuMilli: randomInt(prng, 0, 4) * 1000, memMb: 0, diskMb: 0, gpuMilli: 0 },
    }]);
  }
  return rows;
}

const LIMIT: Constraint = {
  type: "LABEL_CONSTRAINT",
  labelConstraint: {
    kind: "TASK",
    condition: "LESS_THAN",
    label: { key: "app", value: "svc" },
    requirement: 2,
  },
};
const POOL: Constraint = {
  type: "LABEL_CONSTRAINT",
  labelConstraint: {
    kind: "HOST",
    condition: "EQUAL",
    label: { key: "pool", value: "batch" },
    requirement: 1,
  },
};
const NOT_R0: Constraint = {
  type: "OR_CONSTRAINT",
  orConstraint: {
    constraints: [POOL, {
      type: "LABEL_CONSTRAINT",
      labelConstraint: {
        kind: "HOST",
        condition: "EQUAL",
        label: { key: "rack", value: "r0" },
        requirement: 0,
      },
    }],
  },
};

/** Random jobs: plain, constrained, GPU, revocable, with ports, host-limited, spread; some are gangs. */
export function randomWork(prng: Prng, jobs: number): (RmTask | RmTask[])[] {
  const work: (RmTask | RmTask[])[] = [];
  for (let j = 0; j < jobs; j++) {
    const kind = randomInt(prng, 0, 7);
    const n = randomInt(prng, 1, 12);
    const base: Partial<RmTask> = {
      jobId: `j${j}`,
      resources: {
        cpuMilli: randomInt(prng, 1, 8) * 500,
        memMb: randomInt(prng, 1, 8) * 512,
        diskMb: 0,
        gpuMilli: 0,
      },
    };
    if (kind === 1) base.constraint = POOL;
    if (kind === 2) base.resources = { ...base.resources!, gpuMilli: randomInt(prng, 1, 4) * 1000 };
    if (kind === 3) base.revocable = true;
    if (kind === 4) base.ports = [{ name: "http", value: 0 }, { name: "admin", value: 0 }];
    if (kind === 5) Object.assign(base, { labels: [{ key: "app", value: "svc" }], constraint: LIMIT });
    if (kind === 6) Object.assign(base, { placementStrategy: "SPREAD_JOB", constraint: NOT_R0 });
    if (kind === 7) base.ports = [{ name: "fixed", value: 31003 }];
    const gang = prng() < 0.2;
    const list = Array.from(
      { length: n },
      (_, i) => makeRmTask({ ...base, instanceId: i, minInstances: gang ? n : 1 }),
    );
    if (gang) work.push(list);
    else work.push(...list);
  }
  return work;
}

/** A random round (hosts, work) for a seed, built as the engine builds it. */
export function randomRound(seed: number, hosts = 40, jobs = 30): PlacementRound {
  const prng = seededPrng(seed);
  const rows = randomHosts(prng, randomInt(prng, 1, hosts));
  const work = randomWork(prng, randomInt(prng, 1, jobs));
  const units: UnitOfWork[] = work.map((w) => ({
    tasks: Array.isArray(w) ? w : [w],
    gang: Array.isArray(w),
    policy: PELOTON_POLICIES.BATCH,
  }));
  return new RoundBuilder(units).build(leases(rows), 1 + (seed % 16));
}
