/**
 * Fixtures for daemon tests: hosts, leases, resmgr tasks, job and pool configs with valid defaults, and
 * stored job records.
 */
import type { HostLease, RmTask } from "../messages.ts";
import type {
  JobConfig,
  RespoolConfig,
  RespoolResourceConfig,
  RespoolResourceKind,
  TaskConfig,
} from "../model/config_types.ts";
import type { JobRecord, JobRuntime } from "../model/records.ts";
import type { HostInfo } from "../ports/host_backend.ts";
import { QueuedGang } from "../resmgr/queued_gang.ts";
import type { RespoolNode } from "../resmgr/respool_node.ts";
import { PENDING, type TaskTable } from "../resmgr/task_table.ts";

export interface HostSpec {
  /** Cores. */
  cpu?: number;
  memMb?: number;
  diskMb?: number;
  /** GPUs. */
  gpu?: number;
  attributes?: Record<string, string>;
  /** Inclusive port ranges. */
  ports?: [number, number][];
  /** The IP address the backend reports. */
  ip?: string;
}

/** A host of 4 cores, 8 GiB, 100 GiB disk, no GPU and ports 31000-31009 unless told otherwise. */
export function makeHost(name: string, spec: HostSpec = {}): HostInfo {
  return {
    hostname: name,
    agentId: `agent-${name}`,
    resources: {
      cpuMilli: Math.round((spec.cpu ?? 4) * 1000),
      memMb: spec.memMb ?? 8192,
      diskMb: spec.diskMb ?? 102_400,
      gpuMilli: Math.round((spec.gpu ?? 0) * 1000),
    },
    attributes: spec.attributes ?? {},
    portRanges: spec.ports ?? [[31000, 31009]],
    ...(spec.ip ? { ip: spec.ip } : {}),
  };
}

/** A lease of a whole, empty host, as the host manager would hand it to placement. */
export function makeLease(host: HostInfo, overrides: Partial<HostLease> = {}): HostLease {
  return {
    leaseId: `${host.hostname}#1`,
    hostname: host.hostname,
    agentId: host.agentId,
    free: { ...host.resources },
    total: { ...host.resources },
    attributes: host.attributes,
    freeSlack: { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 },
    freePorts: host.portRanges.map(([lo, hi]) => [lo, hi]),
    ...overrides,
  };
}

/** A 1-core, 128 MB batch task of job `job-a`; the task id follows the job, instance and run. */
export function makeRmTask(overrides: Partial<RmTask> = {}): RmTask {
  const jobId = overrides.jobId ?? "job-a";
  const instanceId = overrides.instanceId ?? 0;
  return {
    taskId: `${jobId}-${instanceId}-1`,
    jobId,
    instanceId,
    respoolId: "pool-a",
    resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 0 },
    priority: 0,
    preemptible: false,
    revocable: false,
    controller: false,
    taskType: "BATCH",
    ports: [],
    labels: [],
    placementStrategy: "PACK_HOST",
    minInstances: 1,
    ...overrides,
  };
}

let gangSeq = 0;
/**
 * A gang of `n` preemptible one-core, 128 MB tasks of a new job (`j1`, `j2`, …), PENDING in `pool` of
 * `table`; `extra` overrides every task. The caller enqueues it (or not).
 */
export function makeQueuedGang(
  table: TaskTable,
  pool: RespoolNode,
  n: number,
  extra: Partial<RmTask> = {},
): QueuedGang {
  const jobId = `j${++gangSeq}`;
  const rows = [];
  for (let i = 0; i < n; i++) {
    const task = makeRmTask({
      jobId,
      instanceId: i,
      respoolId: pool.id,
      preemptible: true,
      minInstances: n,
      ...extra,
    });
    rows.push(table.add(task, pool, PENDING, undefined));
  }
  return new QueuedGang(table, rows);
}

/** The SLA of `makeJobConfig`: priority 0, not preemptible, not revocable, no limits. */
export const DEFAULT_SLA: Readonly<JobConfig["sla"]> = {
  priority: 0,
  preemptible: false,
  revocable: false,
  maximumRunningInstances: 0,
  minimumRunningInstances: 0,
  maxRunningTime: 0,
  maximumUnavailableInstances: 0,
};

/** A valid BATCH job: `instanceCount` tasks of 1 core and 128 MB running `echo hello`. */
export function makeJobConfig(
  overrides: Partial<JobConfig> & { task?: Partial<TaskConfig> } = {},
): JobConfig {
  const { task, ...rest } = overrides;
  return {
    name: "test-job",
    type: "BATCH",
    owningTeam: "team",
    ldapGroups: [],
    description: "",
    owner: "tester",
    labels: [],
    instanceCount: 1,
    sla: { ...DEFAULT_SLA },
    defaultConfig: {
      resource: { cpuLimit: 1, memLimitMb: 128, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 },
      command: { shell: true, value: "echo hello", arguments: [], environment: { variables: [] }, uris: [] },
      ...task,
    },
    instanceConfig: {},
    respoolId: "pool-a",
    placementStrategy: "PACK_HOST",
    ...rest,
  };
}

/** A v1alpha stateless JobSpec as a client sends it: `instanceCount` pods of one `sleep 100` container. */
export function makeStatelessSpec(instanceCount: number) {
  return {
    name: "svc",
    instanceCount,
    respoolId: { value: "pool-a" },
    defaultSpec: {
      containers: [{
        name: "main",
        entrypoint: { value: "sleep 100" },
        resource: { cpuLimit: 1, memLimitMb: 64 },
      }],
    },
  };
}

/** A job as a store holds it: `makeJobConfig(config)`, a PENDING runtime created at 0, version 1. */
export function makeJobRecord(
  jobId: string,
  config: Parameters<typeof makeJobConfig>[0] = {},
  runtime: Partial<JobRuntime> = {},
): JobRecord {
  return {
    jobId,
    configVersion: 1,
    config: makeJobConfig(config),
    runtime: {
      state: "PENDING",
      goalState: "SUCCEEDED",
      creationTimeMs: 0,
      taskStats: {},
      version: 1,
      ...runtime,
    },
  };
}

/** Reservation, limit and share of one kind; a number means reservation = limit = n, share 1. */
export type PoolAmount = number | { reservation: number; limit: number; share?: number };

/** A pool config with the given kinds (cores, MB, MB, GPUs); kinds left out stay out. */
export function makeRespoolConfig(
  name: string,
  amounts: Partial<Record<RespoolResourceKind, PoolAmount>> = { cpu: 10, memory: 10_240 },
  overrides: Partial<RespoolConfig> = {},
): RespoolConfig {
  const resources: RespoolResourceConfig[] = [];
  for (const kind of ["cpu", "memory", "disk", "gpu"] as const) {
    const a = amounts[kind];
    if (a === undefined) continue;
    const r = typeof a === "number" ? { reservation: a, limit: a, share: 1 } : a;
    resources.push({
      kind,
      reservation: r.reservation,
      limit: r.limit,
      share: r.share ?? 1,
      type: "ELASTIC",
    });
  }
  return {
    name,
    owningTeam: "team",
    ldapGroups: [],
    description: "",
    resources,
    policy: "PriorityFIFO",
    ...overrides,
  };
}
