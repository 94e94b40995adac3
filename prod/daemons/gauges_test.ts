/** The scrape-time gauges read from the daemons' state. */
import assert from "node:assert/strict";
import { hostmgrRig } from "../../core/hostmgr/testing.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "../../core/resmgr/resmgr.ts";
import { ROOT_ID } from "../../core/resmgr/respool_tree.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../../core/testing/harness.ts";
import { PromMetrics } from "../metrics.ts";
import { daemonGauges } from "./gauges.ts";

/** Every series of a gauge labelled by state only, of a scrape, by its state label. */
function byState(m: PromMetrics, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of m.render().split("\n")) {
    const match = /^(\w+)\{state="([^"]+)"\} (\S+)$/.exec(line);
    if (match && match[1] === name) out[match[2]] = Number(match[3]);
  }
  return out;
}

const hostsByState = (m: PromMetrics) => byState(m, "peloton_hostmgr_hosts");

Deno.test("peloton_hostmgr_hosts counts hosts by the state the API shows, DOWN ones without an agent too", () => {
  const rig = hostmgrRig([["h1"], ["h2"], ["h3"], ["h4"]]);
  // Stored before a restart: m9's agent has not registered (its machine is down), so it is listed DOWN.
  rig.hm.recover([{ hostname: "m9", state: "HOST_STATE_DOWN", startTimeMs: 0 }]);
  rig.launch("a-0-1", "h1", 1);
  rig.hm.startMaintenance("h1");
  rig.hm.startMaintenance("h2");
  rig.hm.startMaintenance("h3");
  rig.backend.emit({ kind: "host-lost", hostname: "h3", agentId: "agent-h3", reason: "machine down" });
  rig.store.settle();
  const m = new PromMetrics();
  daemonGauges(m, { hostmgr: rig.hm });
  assert.deepEqual(hostsByState(m), {
    HOST_STATE_UP: 1,
    HOST_STATE_DRAINING: 1,
    HOST_STATE_DRAINED: 1,
    // h3 lost while in maintenance and m9 not registered: both DOWN, as QueryHosts lists them.
    HOST_STATE_DOWN: 2,
    LOST: 0,
  });

  // Completed, they leave the DOWN count; a lost host that was not in maintenance is LOST.
  rig.hm.completeMaintenance("m9");
  rig.hm.completeMaintenance("h3");
  rig.backend.emit({ kind: "host-lost", hostname: "h4", agentId: "agent-h4", reason: "agent removed" });
  rig.store.settle();
  assert.deepEqual(hostsByState(m), {
    HOST_STATE_UP: 0,
    HOST_STATE_DRAINING: 1,
    HOST_STATE_DRAINED: 1,
    HOST_STATE_DOWN: 0,
    LOST: 2,
  });
});

Deno.test("peloton_resmgr_tasks_by_state reads 0 for a state whose last task left", () => {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, DEFAULT_RESMGR_CONFIG);
  assert.ok(rm.tree.create("a", ROOT_ID, makeRespoolConfig("a", { cpu: 10, memory: 100_000 })).ok);
  const task = makeRmTask({ respoolId: "a" });
  rm.receive({ kind: "track-tasks", tasks: [{ task, state: "RUNNING" }] });
  const m = new PromMetrics();
  daemonGauges(m, { resmgr: rm });
  const running = () => byState(m, "peloton_resmgr_tasks_by_state").RUNNING;
  assert.equal(running(), 1);
  rm.receive({
    kind: "task-updates",
    updates: [{ taskId: task.taskId, state: "SUCCEEDED", hostname: "h", timeMs: 1 }],
  });
  assert.equal(rm.tasks.size, 0);
  assert.equal(running(), 0);
});

/** A sample of a scrape, by name and exact labels (none for a series without labels). */
function sample(m: PromMetrics, series: string): number | undefined {
  for (const line of m.render().split("\n")) {
    const i = line.lastIndexOf(" ");
    if (line.slice(0, i) === series) return Number(line.slice(i + 1));
  }
  return undefined;
}

Deno.test("the resource manager's gauges give each pool's demand and GPUs, and fairness as the simulator's", () => {
  const rm = new ResourceManager(
    { ...makePorts(), self: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_RESMGR_CONFIG,
  );
  const elastic = { reservation: 0, limit: 10, share: 1 };
  for (const name of ["a", "b"]) {
    assert.ok(rm.tree.create(name, ROOT_ID, makeRespoolConfig(name, { cpu: elastic, memory: 100_000 })).ok);
  }
  const capacity = { cpuMilli: 10_000, memMb: 100_000, diskMb: 0, gpuMilli: 0 };
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: capacity, slack: { ...capacity, cpuMilli: 0 } },
  });
  // a runs 8 cores and wants no more; b holds nothing and has 5 one-core tasks queued (not admitted here: no
  // entitlement cycle runs). Preemptible, as work over a pool's reservation of 0 must be to be admitted.
  const running = [...Array(8).keys()].map((i) => ({
    task: makeRmTask({ jobId: "ja", instanceId: i, respoolId: "a", preemptible: true }),
    state: "RUNNING" as const,
  }));
  rm.receive({ kind: "track-tasks", tasks: running });
  const queued = [...Array(5).keys()].map((i) =>
    makeRmTask({ jobId: "jb", instanceId: i, respoolId: "b", preemptible: true })
  );
  rm.receive({ kind: "enqueue-gangs", gangs: queued.map((t) => ({ tasks: [t] })) });
  const m = new PromMetrics();
  daemonGauges(m, { resmgr: rm });
  assert.equal(sample(m, 'peloton_resmgr_allocation_cpus{pool="/a"}'), 8);
  assert.equal(sample(m, 'peloton_resmgr_demand_cpus{pool="/a"}'), 0);
  assert.equal(sample(m, 'peloton_resmgr_allocation_cpus{pool="/b"}'), 0);
  assert.equal(sample(m, 'peloton_resmgr_demand_cpus{pool="/b"}'), 5);
  assert.equal(sample(m, 'peloton_resmgr_demand_mem_mb{pool="/b"}'), 5 * 128);
  assert.equal(sample(m, 'peloton_resmgr_allocation_gpus{pool="/a"}'), 0);
  // By hand: both want at least 5 of the 10 cores, so each is due 5; a holds 8 (x = 1.6), b none (x = 0):
  // Jain's index (1.6 + 0)² / (2 · (1.6² + 0²)) = 0.5.
  assert.equal(sample(m, "peloton_resmgr_fairness"), 0.5);
});

Deno.test("the host manager's gauges give what tasks hold of the hosts, GPUs and revocable cpu apart", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.launch("a-0-1", "h1", 1);
  rig.launch("a-1-1", "h2", 2);
  rig.store.settle();
  const m = new PromMetrics();
  daemonGauges(m, { hostmgr: rig.hm });
  assert.equal(sample(m, "peloton_hostmgr_allocated_cpus"), 3);
  assert.equal(sample(m, "peloton_hostmgr_revocable_allocated_cpus"), 0);
  assert.equal(sample(m, "peloton_hostmgr_capacity_gpus"), 0);
  // A lost host's tasks hold nothing the cluster has.
  rig.backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "agent removed" });
  rig.store.settle();
  assert.equal(sample(m, "peloton_hostmgr_allocated_cpus"), 1);
});

Deno.test("a pool deleted, a pool no longer a leaf, a role no longer led: their series go at the next scrape", () => {
  const rm = new ResourceManager(
    { ...makePorts(), self: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_RESMGR_CONFIG,
  );
  let leading = true;
  const m = new PromMetrics();
  daemonGauges(m, () => leading ? { resmgr: rm } : {});
  // Scraped while the root is the only pool, it is a leaf.
  assert.equal(sample(m, 'peloton_resmgr_queued_tasks{pool="/"}'), 0);
  assert.ok(rm.tree.create("a", ROOT_ID, makeRespoolConfig("a")).ok);
  assert.ok(rm.tree.create("d", ROOT_ID, makeRespoolConfig("d")).ok);
  assert.equal(sample(m, 'peloton_resmgr_queued_tasks{pool="/"}'), undefined, "the root has children now");
  assert.equal(sample(m, 'peloton_resmgr_queued_tasks{pool="/d"}'), 0);
  assert.ok(rm.tree.delete("/d").ok);
  assert.equal(sample(m, 'peloton_resmgr_queued_tasks{pool="/d"}'), undefined, "a deleted pool");
  assert.equal(sample(m, 'peloton_resmgr_queued_tasks{pool="/a"}'), 0);
  // Stepped down: a standby shows none of the role's gauges, as one that never led.
  leading = false;
  const text = m.render();
  assert.doesNotMatch(text, /^peloton_resmgr_\w+(\{[^}]*\})? /m);
});

Deno.test("a pool's entitlement gauge is what regular work is admitted against; revocable work's is apart", () => {
  const rm = new ResourceManager(
    { ...makePorts(), self: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_RESMGR_CONFIG,
  );
  const memory = { reservation: 4096, limit: 8192 };
  assert.ok(rm.tree.create("a", ROOT_ID, makeRespoolConfig("a", { cpu: 8, memory })).ok);
  const physical = { cpuMilli: 8_000, memMb: 8192, diskMb: 0, gpuMilli: 0 };
  const slack = { cpuMilli: 2_000, memMb: 0, diskMb: 0, gpuMilli: 0 };
  rm.receive({ kind: "cluster-capacity", reqId: 0, capacity: { physical, slack } });
  const revocable = [...Array(2).keys()].map((i) =>
    makeRmTask({ jobId: "jr", instanceId: i, respoolId: "a", revocable: true, preemptible: true })
  );
  rm.receive({ kind: "enqueue-gangs", gangs: revocable.map((t) => ({ tasks: [t] })) });
  rm.recalculate();
  const m = new PromMetrics();
  daemonGauges(m, { resmgr: rm });
  const pool = rm.tree.get("a")!;
  assert.ok(pool.slackEntitlement.cpu > 0, "revocable demand gets a slack entitlement");
  assert.equal(sample(m, 'peloton_resmgr_entitlement_cpus{pool="/a"}'), pool.nonSlackEntitlement.cpu);
  assert.equal(sample(m, 'peloton_resmgr_revocable_entitlement_cpus{pool="/a"}'), pool.slackEntitlement.cpu);
  // The revocable tasks' memory is set aside from the pool's entitlement: regular work may not count on it.
  assert.equal(pool.entitlement.memory - pool.nonSlackEntitlement.memory, 2 * 128);
  assert.equal(sample(m, 'peloton_resmgr_entitlement_mem_mb{pool="/a"}'), pool.nonSlackEntitlement.memory);
});

Deno.test("every daemon's scrape carries the process's memory, JS heap and open file descriptors", () => {
  const m = new PromMetrics();
  daemonGauges(m, {});
  const value = (name: string) => {
    const line = m.render().split("\n").find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(" ")[1]);
  };
  const rss = value("process_resident_memory_bytes")!;
  assert.ok(rss > 10_000_000 && rss === Math.floor(rss), `rss ${rss}`);
  const used = value("nodejs_heap_size_used_bytes")!, total = value("nodejs_heap_size_total_bytes")!;
  assert.ok(used > 0 && used <= total, `heap ${used} of ${total}`);
  assert.ok(value("nodejs_external_memory_bytes")! >= 0);
  // stdin, stdout and stderr at least.
  assert.ok(value("process_open_fds")! >= 3, `fds ${value("process_open_fds")}`);
});
