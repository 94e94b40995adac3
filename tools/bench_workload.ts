/** The placement benchmark's cluster and workload: a busy, mixed 50,000-host cluster and a saturating task mix. */
import type { Gang, HostLease, RmTask } from "../core/messages.ts";
import { PELOTON_POLICIES } from "../core/placement/policy.ts";
import { RoundBuilder } from "../core/placement/round_build.ts";
import type { PlacementRound } from "../core/placement/round.ts";
import type { Constraint, Label } from "../core/model/config_types.ts";
import type { TaskType } from "../core/model/states.ts";
import type { HostInfo, LaunchSpec } from "../core/ports/host_backend.ts";
import { type Prng, randomInt } from "../core/ports/prng.ts";

export interface BenchCluster {
  hosts: HostInfo[];
  /** Tasks already running (a busy cluster), registered with the host manager before the clock starts. */
  running: LaunchSpec[];
}

const GB = 1024;

/** Host classes: share of hosts, cores, memory, GPUs. */
const CLASSES = [
  { name: "std", share: 0.70, cpu: 32, mem: 128 * GB, gpu: 0 },
  { name: "big", share: 0.13, cpu: 64, mem: 256 * GB, gpu: 0 },
  { name: "small", share: 0.07, cpu: 16, mem: 64 * GB, gpu: 0 },
  { name: "gpu", share: 0.08, cpu: 48, mem: 384 * GB, gpu: 8 },
  { name: "excl", share: 0.02, cpu: 32, mem: 128 * GB, gpu: 0 },
];

const pick = <T>(prng: Prng, xs: readonly T[]): T => xs[Math.floor(prng() * xs.length)];

/** Hosts in racks of 40 and ten zones; pools shared (70%), batch (20%), stateless (10%). */
export function benchHosts(prng: Prng, n: number): HostInfo[] {
  const hosts: HostInfo[] = [];
  let i = 0;
  for (const c of CLASSES) {
    const count = c === CLASSES[0] ? n - Math.round(n * (1 - c.share)) : Math.round(n * c.share);
    for (let k = 0; k < count && i < n; k++, i++) {
      const r = prng();
      const attributes: Record<string, string> = {
        rack: `rack-${Math.floor(i / 40)}`,
        zone: `zone-${i % 10}`,
        host_pool: r < 0.7 ? "shared" : r < 0.9 ? "batch" : "stateless",
      };
      if (c.name === "excl") attributes["peloton/exclusive"] = "ml";
      hosts.push({
        hostname: `${c.name}-${k}`,
        agentId: `${c.name}-${k}-S0`,
        resources: { cpuMilli: c.cpu * 1000, memMb: c.mem, diskMb: 1_000_000, gpuMilli: c.gpu * 1000 },
        attributes,
        portRanges: [[31000, 31099]],
      });
    }
  }
  return hosts;
}

/** Fills each host to a random share around `busy` with running tasks (some labelled for host limits). */
export function prefill(prng: Prng, hosts: HostInfo[], busy: number): LaunchSpec[] {
  const out: LaunchSpec[] = [];
  for (const h of hosts) {
    const target = Math.min(0.95, Math.max(0, busy + (prng() - 0.5) * 0.5));
    let cpu = Math.floor((h.resources.cpuMilli * target) / 500) * 500;
    let mem = Math.floor((h.resources.memMb * target) / 1024) * 1024;
    let gpu = h.resources.gpuMilli > 0 ? randomInt(prng, 0, 6) * 1000 : 0;
    for (let t = 0; cpu > 0; t++) {
      const c = Math.min(cpu, randomInt(prng, 1, 8) * 1000);
      const m = Math.min(mem, Math.round((mem * c) / cpu));
      const labels: Label[] = prng() < 0.2 ? [{ key: "app", value: `svc-${randomInt(prng, 0, 199)}` }] : [];
      out.push(
        launchSpec(`bg-${h.hostname}-${t}`, h, { cpuMilli: c, memMb: m, diskMb: 0, gpuMilli: gpu }, labels),
      );
      cpu -= c;
      mem -= m;
      gpu = 0;
    }
  }
  return out;
}

function launchSpec(
  taskId: string,
  h: HostInfo,
  resources: LaunchSpec["resources"],
  labels: Label[],
): LaunchSpec {
  return {
    taskId,
    jobId: "background",
    instanceId: 0,
    hostname: h.hostname,
    agentId: h.agentId,
    resources,
    ports: {},
    command: { shell: true, value: "sleep 3600", arguments: [] },
    env: {},
    killGracePeriodMs: 0,
    labels,
  };
}

const host = (key: string, value: string, requirement = 1): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key, value }, requirement },
});

/**
 * Jobs in arrival order until `tasks` tasks: about 75% plain batch, 20% with constraints (host pool,
 * zones, rack exclusion, host limits on services, spread jobs, exclusive hosts), 5% GPU; GPU
 * training jobs and some CPU jobs are gangs (`minimumRunningInstances`).
 */
export function benchWorkload(prng: Prng, tasks: number): Gang[] {
  const gangs: Gang[] = [];
  let n = 0, job = 0;
  while (n < tasks) {
    const jobId = `job-${job++}`;
    const r = prng();
    let count = Math.min(tasks - n, randomInt(prng, 1, 120));
    const cpu = pick(prng, [500, 1000, 2000, 2000, 4000, 4000, 8000, 16000]);
    const base: Omit<RmTask, "taskId" | "instanceId"> = {
      jobId,
      respoolId: "bench",
      resources: {
        cpuMilli: cpu,
        memMb: (cpu / 1000) * pick(prng, [1, 2, 4, 4, 8]) * GB,
        diskMb: 1024,
        gpuMilli: 0,
      },
      priority: 0,
      preemptible: true,
      revocable: false,
      controller: false,
      taskType: "BATCH" as TaskType,
      ports: [],
      labels: [],
      placementStrategy: "PACK_HOST",
      minInstances: 1,
    };
    let gang = false;
    if (r < 0.05) {
      // GPU training: whole-host 8-GPU gangs (Horovod) or smaller GPU jobs.
      const g = pick(prng, [1, 2, 4, 8]);
      base.resources = { cpuMilli: g * 4000, memMb: g * 32 * GB, diskMb: 1024, gpuMilli: g * 1000 };
      gang = g >= 4;
      count = Math.min(count, gang ? 8 : 16);
    } else if (r < 0.09) base.constraint = host("host_pool", "batch");
    else if (r < 0.12) {
      base.constraint = {
        type: "OR_CONSTRAINT",
        orConstraint: { constraints: [host("zone", "zone-1"), host("zone", "zone-2")] },
      };
    } else if (r < 0.15) {
      // A service: at most one instance per host, spread over racks, in the stateless pool or shared.
      const app = `svc-${job % 200}`;
      Object.assign(base, {
        taskType: "STATELESS",
        labels: [{ key: "app", value: app }],
        ports: [{ name: "http", value: 0 }],
        constraint: {
          type: "LABEL_CONSTRAINT",
          labelConstraint: {
            kind: "TASK",
            condition: "EQUAL",
            label: { key: "app", value: app },
            requirement: 0,
          },
        },
      });
    } else if (r < 0.17) base.placementStrategy = "SPREAD_JOB";
    else if (r < 0.19) base.constraint = host("rack", `rack-${randomInt(prng, 0, 50)}`, 0);
    else if (r < 0.20) base.constraint = host("peloton/exclusive", "ml");
    else if (r < 0.22) {
      gang = true;
      count = Math.min(count, 16);
    }
    if (prng() < 0.08 && !base.ports.length) base.ports = [{ name: "p", value: 0 }, { name: "q", value: 0 }];
    const list: RmTask[] = [];
    for (let i = 0; i < count; i++) {
      list.push({ ...base, taskId: `${jobId}-${i}-1`, instanceId: i, minInstances: gang ? count : 1 });
    }
    if (gang) gangs.push({ tasks: list });
    else for (const t of list) gangs.push({ tasks: [t] });
    n += count;
  }
  return gangs;
}

/** How busy to make the cluster so that the workload asks for `overcommit` times the free cpu. */
export function busyFor(hosts: HostInfo[], gangs: Gang[], overcommit: number): number {
  let total = 0, demand = 0;
  for (const h of hosts) total += h.resources.cpuMilli;
  for (const g of gangs) for (const t of g.tasks) demand += t.resources.cpuMilli;
  return Math.min(0.9, Math.max(0, 1 - demand / (overcommit * total)));
}

/** The whole workload as one round over every host in its starting state, for the full-scan yardstick. */
export function baselineRound(
  hosts: HostInfo[],
  running: LaunchSpec[],
  gangs: Gang[],
  scoreLimit = 1,
): PlacementRound {
  const used = new Map<
    string,
    { cpu: number; mem: number; disk: number; gpu: number; labels: Map<string, number> }
  >();
  for (const s of running) {
    const u = used.get(s.hostname) ?? { cpu: 0, mem: 0, disk: 0, gpu: 0, labels: new Map() };
    u.cpu += s.resources.cpuMilli;
    u.mem += s.resources.memMb;
    u.disk += s.resources.diskMb;
    u.gpu += s.resources.gpuMilli;
    for (const l of s.labels) {
      u.labels.set(`${l.key}=${l.value}`, (u.labels.get(`${l.key}=${l.value}`) ?? 0) + 1);
    }
    used.set(s.hostname, u);
  }
  const units = gangs.map((g) => ({
    tasks: g.tasks,
    gang: g.tasks.length > 1 || g.tasks[0].minInstances > 1,
    policy: PELOTON_POLICIES[g.tasks[0].taskType],
  }));
  const builder = new RoundBuilder(units);
  const leases: HostLease[] = hosts.map((h) => {
    const u = used.get(h.hostname), r = h.resources;
    const labelCounts: Record<string, number> = {};
    for (const k of builder.taskLabels) labelCounts[k] = u?.labels.get(k) ?? 0;
    return {
      leaseId: h.hostname,
      hostname: h.hostname,
      agentId: h.agentId,
      free: {
        cpuMilli: r.cpuMilli - (u?.cpu ?? 0),
        memMb: r.memMb - (u?.mem ?? 0),
        diskMb: r.diskMb - (u?.disk ?? 0),
        gpuMilli: r.gpuMilli - (u?.gpu ?? 0),
      },
      total: r,
      freeSlack: { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 },
      attributes: h.attributes,
      freePorts: h.portRanges,
      labelCounts,
      keptForGpu: r.gpuMilli > 0 && !("peloton/exclusive" in h.attributes),
    };
  });
  return builder.build(leases, scoreLimit);
}
