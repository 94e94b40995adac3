/** Scrape-time gauges read from the daemons' state: queue depths, entitlement and allocation per pool, hosts. */
import { apiState } from "../../core/hostmgr/host_api.ts";
import type { HostManager } from "../../core/hostmgr/hostmgr.ts";
import type { JobManager } from "../../core/jobmgr/jobmgr.ts";
import type { PlacementEngine } from "../../core/placement/engine.ts";
import { TASK_STATES, type TaskState } from "../../core/model/states.ts";
import { jain, poolShares } from "../../core/resmgr/fairness.ts";
import type { ResourceManager } from "../../core/resmgr/resmgr.ts";
import type { PromMetrics } from "../metrics.ts";

/** The states `peloton_hostmgr_hosts` counts hosts under: the API's, and LOST for a lost host not in maintenance. */
const HOSTS_GAUGE_STATES = [
  "HOST_STATE_UP",
  "HOST_STATE_DRAINING",
  "HOST_STATE_DRAINED",
  "HOST_STATE_DOWN",
  "LOST",
] as const;

export interface Daemons {
  jobmgr?: JobManager;
  resmgr?: ResourceManager;
  hostmgr?: HostManager;
  placement?: PlacementEngine;
}

/** Registers a collector; `get` is read at every scrape, so daemons that come and go (leaders) are fine. */
export function daemonGauges(m: PromMetrics, d: Daemons | (() => Daemons)): void {
  const get = typeof d === "function" ? d : () => d;
  m.collect(() => processGauges(m));
  m.collect(() => {
    const { jobmgr, resmgr, hostmgr, placement } = get();
    if (jobmgr) {
      m.gauge("peloton_jobmgr_jobs").set(jobmgr.jobs.size);
      m.gauge("peloton_jobmgr_task_queue_depth").set(jobmgr.taskEngine.size);
      m.gauge("peloton_jobmgr_job_queue_depth").set(jobmgr.jobEngine.size);
    }
    if (placement) m.gauge("peloton_placement_tasks_held").set(placement.holding);
    if (resmgr) {
      m.gauge("peloton_resmgr_tasks").set(resmgr.tasks.size);
      // Every state is set, so one its last task left reads 0 rather than its old count.
      const byState = new Map((Object.keys(TASK_STATES) as TaskState[]).map((s) => [s, 0]));
      for (const e of resmgr.tasks.values()) byState.set(e.state, byState.get(e.state)! + 1);
      for (const [state, n] of byState) m.gauge("peloton_resmgr_tasks_by_state", { state }).set(n);
      for (const pool of resmgr.tree.all()) {
        if (!pool.isLeaf) continue;
        const labels = { pool: pool.path };
        const { nonSlack, slack } = pool.allocation;
        m.gauge("peloton_resmgr_queued_tasks", labels).set(pool.queuedTasks);
        // What regular work is admitted against (the simulator's entitlement); revocable work has its own.
        const e = pool.nonSlackEntitlement;
        m.gauge("peloton_resmgr_entitlement_cpus", labels).set(e.cpu);
        m.gauge("peloton_resmgr_entitlement_mem_mb", labels).set(e.memory);
        m.gauge("peloton_resmgr_entitlement_gpus", labels).set(e.gpu);
        m.gauge("peloton_resmgr_revocable_entitlement_cpus", labels).set(pool.slackEntitlement.cpu);
        m.gauge("peloton_resmgr_allocation_cpus", labels).set(nonSlack.cpuMilli / 1000);
        m.gauge("peloton_resmgr_allocation_mem_mb", labels).set(nonSlack.memMb);
        m.gauge("peloton_resmgr_allocation_gpus", labels).set(nonSlack.gpuMilli / 1000);
        m.gauge("peloton_resmgr_revocable_allocation_cpus", labels).set(slack.cpuMilli / 1000);
        // Queued work the pool does not hold yet (regular and revocable), as entitlement weighs it.
        m.gauge("peloton_resmgr_demand_cpus", labels).set(
          (pool.demand.cpuMilli + pool.slackDemand.cpuMilli) / 1000,
        );
        m.gauge("peloton_resmgr_demand_mem_mb", labels).set(pool.demand.memMb + pool.slackDemand.memMb);
        m.gauge("peloton_resmgr_demand_gpus", labels).set(
          (pool.demand.gpuMilli + pool.slackDemand.gpuMilli) / 1000,
        );
      }
      // The simulator's `fairness`: Jain's index over (leaf pool, kind) of allocation against the fair share.
      m.gauge("peloton_resmgr_fairness").set(jain(poolShares(resmgr.tree, resmgr.capacity)));
    }
    if (hostmgr) {
      // Every state is set, so one its last host left reads 0 rather than its old count.
      const byState = new Map<string, number>(HOSTS_GAUGE_STATES.map((s) => [s, 0]));
      for (const h of hostmgr.hosts) {
        // As QueryHosts shows them: a lost host in maintenance is DOWN; one not in maintenance is LOST.
        const s = !h.lost ? h.state : apiState(h) === "HOST_STATE_DOWN" ? "HOST_STATE_DOWN" : "LOST";
        byState.set(s, (byState.get(s) ?? 0) + 1);
      }
      // Hosts in maintenance without an agent count as QueryHosts lists them, though not registered.
      for (const name of hostmgr.unregisteredInMaintenance()) {
        const s = hostmgr.unregisteredState(name);
        byState.set(s, (byState.get(s) ?? 0) + 1);
      }
      for (const [state, n] of byState) m.gauge("peloton_hostmgr_hosts", { state }).set(n);
      const cap = hostmgr.capacity();
      m.gauge("peloton_hostmgr_capacity_cpus").set(cap.cpuMilli / 1000);
      m.gauge("peloton_hostmgr_capacity_mem_mb").set(cap.memMb);
      m.gauge("peloton_hostmgr_capacity_gpus").set(cap.gpuMilli / 1000);
      // Held by tasks on hosts that are not lost (utilization is this over capacity); revocable cpu apart.
      const used = hostmgr.allocated();
      m.gauge("peloton_hostmgr_allocated_cpus").set(used.regular.cpuMilli / 1000);
      m.gauge("peloton_hostmgr_allocated_mem_mb").set(used.regular.memMb);
      m.gauge("peloton_hostmgr_allocated_gpus").set(used.regular.gpuMilli / 1000);
      m.gauge("peloton_hostmgr_revocable_allocated_cpus").set(used.revocableCpuMilli / 1000);
    }
  });
}

/**
 * The process's own memory and file descriptors, under Prometheus's standard names (and the JS heap's, as
 * Node's client names them): what an operator watches for a leak, next to what the daemons hold.
 */
function processGauges(m: PromMetrics): void {
  const mem = Deno.memoryUsage();
  m.gauge("process_resident_memory_bytes").set(mem.rss);
  m.gauge("nodejs_heap_size_used_bytes").set(mem.heapUsed);
  m.gauge("nodejs_heap_size_total_bytes").set(mem.heapTotal);
  m.gauge("nodejs_external_memory_bytes").set(mem.external);
  try {
    let fds = 0;
    for (const _ of Deno.readDirSync("/proc/self/fd")) fds++;
    m.gauge("process_open_fds").set(fds);
  } catch { /* no /proc (not Linux): not exported */ }
}
