/** A host manager on test ports with a fake backend, for the host manager's tests. */
import type { HostFilter } from "../messages.ts";
import { resources } from "../model/resources.ts";
import type {
  BackendEvent,
  HostBackend,
  LaunchSpec,
  MachineBackend,
  VolumeRef,
} from "../ports/host_backend.ts";
import { type HostSpec, makeHost, makePorts } from "../testing/harness.ts";
import { HostManager, type HostmgrConfig } from "./hostmgr.ts";

/** A backend that records what the host manager asks of it; tests push events through `emit`. */
export class FakeBackend implements HostBackend {
  sink?: (events: BackendEvent[]) => void;
  readonly launched: LaunchSpec[][] = [];
  readonly killed: { taskId: string; agentId: string; gracePeriodMs: number }[][] = [];
  readonly reconciled: (string[] | undefined)[] = [];
  readonly acked: { taskId: string; agentId: string; uuid: string }[][] = [];
  readonly destroyed: VolumeRef[][] = [];

  start(sink: (events: BackendEvent[]) => void): void {
    this.sink = sink;
  }
  launch(tasks: LaunchSpec[]): void {
    this.launched.push(tasks);
  }
  kill(tasks: { taskId: string; agentId: string; gracePeriodMs: number }[]): void {
    this.killed.push(tasks);
  }
  reconcile(taskIds?: string[]): void {
    this.reconciled.push(taskIds);
  }
  acknowledge(acks: { taskId: string; agentId: string; uuid: string }[]): void {
    this.acked.push(acks);
  }
  destroyVolumes(volumes: VolumeRef[]): void {
    this.destroyed.push(volumes);
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
  emit(...events: BackendEvent[]): void {
    this.sink!(events);
  }
}

/** A backend that takes machines down itself, as the minicluster does: it records what it is asked. */
export class MachineFakeBackend extends FakeBackend implements MachineBackend {
  /** `down <host>` and `up <host>`, in order. */
  readonly machineCalls: string[] = [];

  machineDown(hostname: string): void {
    this.machineCalls.push(`down ${hostname}`);
  }
  machineUp(hostname: string): void {
    this.machineCalls.push(`up ${hostname}`);
  }
}

/**
 * A host manager over a fake backend with `hosts` registered. The backend takes machines down, as the
 * minicluster does (a `MachineFakeBackend`: a drained host is DRAINED until the test has its agent leave);
 * `machines: false`, and no `clusterMaintenance`, leaves no machine to take down (a drained host is DOWN at
 * once, as in the simulator).
 */
export function hostmgrRig(
  hosts: [string, HostSpec?][],
  config?: Partial<HostmgrConfig>,
  opts: { machines?: boolean } = {},
) {
  const ports = makePorts();
  const backend = opts.machines === false ? new FakeBackend() : new MachineFakeBackend();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { leaseTimeoutMs: 60_000, scarceGpu: true, ...config },
  );
  hm.start();
  backend.emit(
    ...hosts.map(([name, spec]): BackendEvent => ({ kind: "host-up", host: makeHost(name, spec) })),
  );
  ports.transport.drain();
  const filter = (f: Partial<HostFilter> = {}): HostFilter => ({
    minResources: resources(1000, 128),
    numPorts: 0,
    maxHosts: 10,
    gpu: (f.minResources?.gpuMilli ?? 0) > 0,
    ...f,
  });
  /** One filter through the acquire path; its leases, rejections and whether it covered every match. */
  const acquire = (f: Partial<HostFilter> = {}) => {
    const r = hm.acquire([filter(f)]);
    return { leases: r.leases, rejections: r.rejections[0], exhausted: r.exhausted[0] };
  };
  /** Launches a task of `cpu` cores on a host through a fresh lease. */
  const launch = (taskId: string, hostname: string, cpu: number, extra: Partial<LaunchSpec> = {}) => {
    const lease = hm.acquire([filter({ requiredHost: hostname, minResources: resources(0, 0) })]).leases[0];
    if (!lease) throw new Error(`Cannot launch ${taskId}: ${hostname} could not be leased`);
    hm.receive({
      kind: "launch-tasks",
      leaseId: lease.leaseId,
      hostname,
      tasks: [spec(taskId, hostname, cpu, extra)],
    });
  };
  /** What the backend was asked of its machines; always empty with `machines: false`. */
  const machineCalls = backend instanceof MachineFakeBackend ? backend.machineCalls : [];
  return { ...ports, hm, backend, machineCalls, acquire, filter, launch };
}

export function spec(taskId: string, hostname: string, cpu = 1, extra: Partial<LaunchSpec> = {}): LaunchSpec {
  return {
    taskId,
    jobId: "job",
    instanceId: 0,
    hostname,
    agentId: `agent-${hostname}`,
    resources: resources(cpu * 1000, 128),
    ports: {},
    command: { shell: true, value: "true", arguments: [] },
    env: {},
    killGracePeriodMs: 30_000,
    labels: [],
    ...extra,
  };
}

export function finished(taskId: string, hostname: string): BackendEvent {
  return {
    kind: "task-status",
    status: { taskId, state: "TASK_FINISHED", hostname, agentId: `agent-${hostname}`, timeMs: 1 },
  };
}
