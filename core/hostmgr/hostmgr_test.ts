import assert from "node:assert/strict";
import type { HostFilter } from "../messages.ts";
import { resources } from "../model/resources.ts";
import type { BackendEvent, LaunchSpec, TaskStatus } from "../ports/host_backend.ts";
import { type HostSpec, makeHost, makePorts } from "../testing/harness.ts";
import { DEFAULT_HOSTMGR_CONFIG, HostManager } from "./hostmgr.ts";
import { FakeBackend } from "./testing.ts";

function setup(hosts: [string, HostSpec?][] = [["h1"], ["h2"]]) {
  const ports = makePorts();
  const backend = new FakeBackend();
  const hm = new HostManager({
    ...ports,
    backend,
    self: "hostmgr",
    jobmgr: "jobmgr",
    resmgr: "resmgr",
  });
  hm.start();
  backend.emit(
    ...hosts.map(([name, spec]): BackendEvent => ({ kind: "host-up", host: makeHost(name, spec) })),
  );
  ports.transport.drain();
  let reqId = 0;
  const acquire = (f: Partial<HostFilter> = {}) => {
    const filter: HostFilter = {
      minResources: resources(1000, 128),
      numPorts: 0,
      maxHosts: 10,
      gpu: false,
      ...f,
    };
    hm.receive({ kind: "acquire-hosts", reqId: ++reqId, replyTo: "placement", filters: [filter] });
    const r = ports.transport.takeOne("hosts-acquired", "placement");
    return { leases: r.leases, rejections: r.rejections[0], exhausted: r.exhausted[0] };
  };
  return { ...ports, hm, backend, acquire };
}

function spec(taskId: string, hostname: string, cpu = 1, ports: Record<string, number> = {}): LaunchSpec {
  return {
    taskId,
    jobId: "job",
    instanceId: 0,
    hostname,
    agentId: `agent-${hostname}`,
    resources: resources(cpu * 1000, 128),
    ports,
    command: { shell: true, value: "true", arguments: [] },
    env: {},
    killGracePeriodMs: 30_000,
    labels: [{ key: "app", value: "web" }],
  };
}

function status(taskId: string, state: TaskStatus["state"], hostname = "h1"): BackendEvent {
  return {
    kind: "task-status",
    status: { taskId, state, hostname, agentId: `agent-${hostname}`, timeMs: 1 },
  };
}

Deno.test("acquire-hosts leases only hosts with the free resources asked for", () => {
  const { acquire } = setup([["big", { cpu: 4 }], ["small", { cpu: 1 }]]);
  const r = acquire({ minResources: resources(2000, 128) });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["big"]);
  assert.deepEqual(r.rejections, { "insufficient cpu": 1 });
  assert.equal(r.exhausted, true);
  const lease = r.leases[0];
  assert.equal(lease.agentId, "agent-big");
  assert.deepEqual(lease.free, resources(4000, 8192, 102_400, 0));
  assert.deepEqual(lease.freePorts, [[31000, 31009]]);
});

Deno.test("acquire-hosts stops at maxHosts", () => {
  const { acquire } = setup([["h1"], ["h2"], ["h3"]]);
  assert.equal(acquire({ maxHosts: 2 }).leases.length, 2);
  assert.equal(acquire({ maxHosts: 2 }).leases.length, 1, "only one host is left unleased");
});

Deno.test("hosts without enough free ports are rejected", () => {
  const { acquire } = setup([["few", { ports: [[31000, 31001]] }], ["many"]]);
  const r = acquire({ numPorts: 3 });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["many"]);
  assert.deepEqual(r.rejections, { "insufficient ports": 1 });
});

Deno.test("GPU hosts are kept for GPU work", () => {
  const { acquire, hm } = setup([["gpu", { gpu: 2 }], ["cpu"]]);
  const plain = acquire();
  assert.deepEqual(plain.leases.map((l) => l.hostname), ["cpu"]);
  assert.deepEqual(plain.rejections, { "GPU host kept for GPU work": 1 });
  hm.receive({ kind: "release-hosts", leaseIds: plain.leases.map((l) => l.leaseId) });
  const gpu = acquire({ minResources: resources(1000, 128, 0, 1000), gpu: true });
  assert.deepEqual(gpu.leases.map((l) => l.hostname), ["gpu"]);
});

Deno.test("hosts in maintenance or lost are not leased", () => {
  const { acquire, hm, backend } = setup([["h1"], ["h2"], ["h3"]]);
  assert.equal(hm.startMaintenance("h1"), undefined);
  backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "gone" });
  const r = acquire();
  assert.deepEqual(r.leases.map((l) => l.hostname), ["h3"]);
  assert.deepEqual(r.rejections, { "host in maintenance": 1, "host lost": 1 });
});

Deno.test("a leased host is not leased again until released or its lease expires", () => {
  const { acquire, hm, clock } = setup([["h1"]]);
  const first = acquire();
  assert.equal(first.leases.length, 1);
  assert.deepEqual(acquire().rejections, { "host leased to another placement": 1 });
  hm.receive({ kind: "release-hosts", leaseIds: [first.leases[0].leaseId] });
  const second = acquire();
  assert.equal(second.leases.length, 1);
  assert.notEqual(second.leases[0].leaseId, first.leases[0].leaseId);
  hm.receive({ kind: "release-hosts", leaseIds: [first.leases[0].leaseId] });
  assert.equal(acquire().leases.length, 0, "releasing an old lease id does not free the new lease");
  clock.advance(DEFAULT_HOSTMGR_CONFIG.leaseTimeoutMs);
  assert.equal(acquire().leases.length, 1, "an expired lease frees the host");
});

Deno.test("hinted hosts are tried first", () => {
  const { acquire } = setup([["h1"], ["h2"], ["h3"]]);
  assert.deepEqual(acquire({ hints: ["h3"], maxHosts: 1 }).leases.map((l) => l.hostname), ["h3"]);
  assert.deepEqual(acquire({ hints: ["h3", "nope"], maxHosts: 3 }).leases.map((l) => l.hostname).sort(), [
    "h1",
    "h2",
  ]);
});

Deno.test("each rejected host is counted once, also when it was hinted", () => {
  const { acquire } = setup([["h1", { cpu: 1 }], ["h2", { cpu: 1 }], ["h3"]]);
  const r = acquire({ minResources: resources(2000, 128), hints: ["h1"] });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["h3"]);
  assert.deepEqual(r.rejections, { "insufficient cpu": 2 });
});

Deno.test("a launch with a valid lease deducts resources and ports and calls the backend", () => {
  const { acquire, hm, backend, transport } = setup([["h1"]]);
  const [lease] = acquire().leases;
  const tasks = [spec("t-0-1", "h1", 1, { http: 31000 }), spec("t-1-1", "h1", 2)];
  hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: "h1", tasks });
  assert.deepEqual(backend.launched, [tasks]);
  const h = hm.host("h1")!;
  assert.equal(h.free.cpuMilli, 1000);
  assert.equal(h.free.memMb, 8192 - 256);
  assert.ok(h.usedPorts.has(31000));
  assert.equal(h.leaseId, undefined, "the launch consumes the lease");
  assert.deepEqual(transport.drain(), [], "nothing is reported until the backend sends statuses");
  const next = acquire({ numPorts: 10 });
  assert.deepEqual(next.rejections, { "insufficient ports": 1 });
  const [l2] = acquire({ countLabels: ["app=web", "app=db"] }).leases;
  assert.deepEqual(l2.freePorts, [[31001, 31009]]);
  assert.deepEqual(l2.labelCounts, { "app=web": 2 }, "labels no task carries count zero and are left out");
});

Deno.test("a stopping host manager leases no host and refuses launches at once, TASK_LOST, saying why", () => {
  const { acquire, hm, backend, transport } = setup([["h1"], ["h2"]]);
  const [lease] = acquire().leases;
  hm.stopLaunching();
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: lease.hostname,
    tasks: [spec("a-0-1", "h1")],
  });
  assert.deepEqual(backend.launched, [], "a task launched now would only be ended by the stop");
  const toJob = transport.take("task-statuses", "jobmgr").flatMap((m) => m.statuses);
  assert.deepEqual(toJob.map((s) => [s.taskId, s.state, s.message]), [
    ["a-0-1", "TASK_LOST", "the host manager is stopping"],
  ]);
  const after = acquire();
  assert.deepEqual([after.leases, after.exhausted], [[], true], "h2 is free, but not leased");
});

Deno.test("a launch with an unknown or expired lease is TASK_LOST with REASON_INVALID_OFFERS", () => {
  const { acquire, hm, backend, transport, clock } = setup([["h1"]]);
  hm.receive({ kind: "launch-tasks", leaseId: "h1#99", hostname: "h1", tasks: [spec("a-0-1", "h1")] });
  const [lease] = acquire().leases;
  clock.advance(DEFAULT_HOSTMGR_CONFIG.leaseTimeoutMs);
  hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: "h1", tasks: [spec("b-0-1", "h1")] });
  assert.deepEqual(backend.launched, []);
  const toJob = transport.take("task-statuses", "jobmgr").flatMap((m) => m.statuses);
  assert.deepEqual(toJob.map((s) => [s.taskId, s.state, s.pelotonState, s.reason]), [
    ["a-0-1", "TASK_LOST", "LOST", "REASON_INVALID_OFFERS"],
    ["b-0-1", "TASK_LOST", "LOST", "REASON_INVALID_OFFERS"],
  ]);
  const toRm = transport.take("task-updates", "resmgr").flatMap((m) => m.updates);
  assert.deepEqual(toRm.map((u) => [u.taskId, u.state]), [["a-0-1", "LOST"], ["b-0-1", "LOST"]]);
  assert.equal(hm.host("h1")!.free.cpuMilli, 4000);
});

Deno.test("tasks that no longer fit the host are LOST; the rest launch", () => {
  const { acquire, hm, backend, transport } = setup([["h1"]]);
  const [lease] = acquire().leases;
  const tasks = [spec("a-0-1", "h1", 3), spec("b-0-1", "h1", 3), spec("c-0-1", "h1", 1)];
  hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: "h1", tasks });
  assert.deepEqual(backend.launched.flat().map((t) => t.taskId), ["a-0-1", "c-0-1"]);
  const [lost] = transport.take("task-statuses", "jobmgr");
  assert.deepEqual(lost.statuses.map((s) => [s.taskId, s.reason]), [["b-0-1", "REASON_INVALID_OFFERS"]]);
  assert.equal(hm.host("h1")!.free.cpuMilli, 0);
});

Deno.test("a static port already in use makes the launch LOST", () => {
  const { acquire, hm, backend, transport } = setup([["h1"]]);
  let [lease] = acquire().leases;
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: "h1",
    tasks: [spec("a-0-1", "h1", 1, { p: 31005 })],
  });
  [lease] = acquire().leases;
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: "h1",
    tasks: [spec("b-0-1", "h1", 1, { p: 31005 })],
  });
  assert.deepEqual(backend.launched.flat().map((t) => t.taskId), ["a-0-1"]);
  assert.equal(transport.takeOne("task-statuses").statuses[0].taskId, "b-0-1");
});

Deno.test("statuses are mapped and forwarded; terminal ones free the task's resources and ports", () => {
  const { acquire, hm, backend, transport } = setup([["h1"]]);
  const [lease] = acquire().leases;
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: "h1",
    tasks: [spec("a-0-1", "h1", 2, { p: 31000 })],
  });
  backend.emit(status("a-0-1", "TASK_STAGING"), status("a-0-1", "TASK_RUNNING"));
  const [running] = transport.take("task-statuses", "jobmgr");
  assert.deepEqual(running.statuses.map((s) => s.pelotonState), ["LAUNCHED", "RUNNING"]);
  assert.deepEqual(transport.takeOne("task-updates", "resmgr").updates.map((u) => u.state), [
    "LAUNCHED",
    "RUNNING",
  ]);
  assert.equal(hm.host("h1")!.free.cpuMilli, 2000);
  backend.emit(status("a-0-1", "TASK_FINISHED"));
  assert.equal(transport.takeOne("task-statuses").statuses[0].pelotonState, "SUCCEEDED");
  assert.equal(hm.host("h1")!.free.cpuMilli, 4000);
  assert.equal(hm.host("h1")!.usedPorts.size, 0);
  backend.emit(status("a-0-1", "TASK_FINISHED"));
  assert.equal(hm.host("h1")!.free.cpuMilli, 4000, "a repeated terminal status frees nothing twice");
});

Deno.test("kill-tasks reaches the backend with the task's agent id and grace period", () => {
  const { acquire, hm, backend } = setup([["h1"], ["h2"]]);
  const [lease] = acquire({ maxHosts: 1 }).leases;
  const host = lease.hostname, other = host === "h1" ? "h2" : "h1";
  hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: host, tasks: [spec("a-0-1", host)] });
  hm.receive({
    kind: "kill-tasks",
    tasks: [
      { taskId: "a-0-1", gracePeriodMs: 5000, hostname: host },
      { taskId: "a-0-1", gracePeriodMs: 1000 },
      { taskId: "a-0-1", gracePeriodMs: 0, hostname: other },
      { taskId: "x-0-1", gracePeriodMs: 0 },
    ],
  });
  assert.deepEqual(backend.killed, [[
    { taskId: "a-0-1", agentId: `agent-${host}`, gracePeriodMs: 5000 },
    { taskId: "a-0-1", agentId: `agent-${host}`, gracePeriodMs: 1000 },
    { taskId: "a-0-1", agentId: `agent-${host}`, gracePeriodMs: 0 },
    { taskId: "x-0-1", agentId: "", gracePeriodMs: 0 },
  ]], "a kill naming no host, or the wrong one, still finds the task's agent");
});

Deno.test("a terminal status that names no host, or another one, still frees the task", () => {
  const { acquire, hm, backend } = setup([["h1"], ["h2"]]);
  const [lease] = acquire({ maxHosts: 1 }).leases;
  const host = lease.hostname;
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: host,
    tasks: [spec("a-0-1", host), spec("b-0-1", host)],
  });
  assert.equal(hm.host(host)!.free.cpuMilli, 2000);
  backend.emit(status("a-0-1", "TASK_LOST", ""));
  assert.equal(hm.host(host)!.free.cpuMilli, 3000);
  backend.emit(status("b-0-1", "TASK_FAILED", host === "h1" ? "h2" : "h1"));
  assert.equal(hm.host(host)!.free.cpuMilli, 4000);
});

Deno.test("a lost host turns its tasks LOST, frees them and lowers the capacity", () => {
  const { acquire, hm, backend, transport } = setup([["h1"], ["h2"]]);
  const leases = acquire().leases;
  const l1 = leases.find((l) => l.hostname === "h1")!;
  hm.receive({
    kind: "launch-tasks",
    leaseId: l1.leaseId,
    hostname: "h1",
    tasks: [spec("a-0-1", "h1"), spec("b-0-1", "h1")],
  });
  backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "agent removed" });
  const [lost] = transport.take("task-statuses", "jobmgr");
  assert.deepEqual(lost.statuses.map((s) => [s.taskId, s.pelotonState, s.reason]), [
    ["a-0-1", "LOST", "REASON_AGENT_REMOVED"],
    ["b-0-1", "LOST", "REASON_AGENT_REMOVED"],
  ]);
  assert.equal(hm.host("h1")!.tasks.size, 0);
  const [cap] = transport.take("cluster-capacity", "resmgr");
  assert.equal(cap.capacity.physical.cpuMilli, 4000);
  backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.equal(transport.takeOne("cluster-capacity", "resmgr").capacity.physical.cpuMilli, 8000);
  assert.equal(hm.host("h1")!.free.cpuMilli, 4000, "a host that comes back starts empty");
});

Deno.test("reconcile-tasks registers recovered tasks and asks the backend for their status", () => {
  const { hm, backend, acquire } = setup([["h1"]]);
  hm.receive({
    kind: "reconcile-tasks",
    tasks: [spec("a-0-1", "h1", 3, { p: 31000 }), spec("b-0-1", "later", 2)],
  });
  assert.deepEqual(backend.reconciled, [["a-0-1", "b-0-1"]]);
  assert.equal(hm.host("h1")!.free.cpuMilli, 1000);
  assert.deepEqual(acquire({ minResources: resources(2000, 128) }).rejections, { "insufficient cpu": 1 });
  backend.emit({ kind: "host-up", host: makeHost("later") });
  assert.equal(hm.host("later")!.free.cpuMilli, 2000, "registered when the host shows up");
  backend.emit(status("b-0-1", "TASK_KILLED", "later"));
  assert.equal(hm.host("later")!.free.cpuMilli, 4000);
});

Deno.test("capacity is pushed to resmgr when hosts change and answered on request", () => {
  const { hm, backend, transport } = setup([]);
  backend.emit({ kind: "host-up", host: makeHost("h1", { cpu: 8, memMb: 1000 }) });
  assert.deepEqual(
    transport.takeOne("cluster-capacity", "resmgr").capacity.physical,
    resources(8000, 1000, 102_400),
  );
  backend.emit(status("x-0-1", "TASK_RUNNING"));
  assert.deepEqual(transport.take("cluster-capacity"), [], "task statuses alone do not push capacity");
  hm.receive({ kind: "get-cluster-capacity", reqId: 7, replyTo: "resmgr" });
  const reply = transport.takeOne("cluster-capacity", "resmgr");
  assert.equal(reply.reqId, 7);
  assert.equal(reply.capacity.physical.cpuMilli, 8000);
});

Deno.test("reconciling a task the host manager already holds does not count it twice", () => {
  const { hm, acquire } = setup([["h1"]]);
  const [lease] = acquire().leases;
  hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: "h1",
    tasks: [spec("a-0-1", "h1", 3)],
  });
  // A restarted job manager re-registers what it launched; the host manager kept running.
  hm.receive({ kind: "reconcile-tasks", tasks: [spec("a-0-1", "h1", 3)] });
  hm.receive({ kind: "reconcile-tasks", tasks: [spec("b-0-1", "later", 1), spec("b-0-1", "later", 1)] });
  assert.equal(hm.host("h1")!.free.cpuMilli, 1000);
  hm.onBackendEvents([{ kind: "host-up", host: makeHost("later") }]);
  assert.equal(hm.host("later")!.free.cpuMilli, 3000);
});
