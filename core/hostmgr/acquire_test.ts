import assert from "node:assert/strict";
import type { Constraint } from "../model/config_types.ts";
import { resources } from "../model/resources.ts";
import type { HostSpec } from "../testing/harness.ts";
import { hostmgrRig } from "./testing.ts";

const hostLabel = (key: string, value: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key, value }, requirement: 1 },
});

function sum(r: Record<string, number>): number {
  return Object.values(r).reduce((a, b) => a + b, 0);
}

Deno.test("a filter leases the tightest hosts that fit, until they hold the tasks asked for", () => {
  const { acquire } = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 2 }], ["c", { cpu: 4 }], ["d", {
    cpu: 1,
  }]]);
  const r = acquire({ minResources: resources(2000, 128), tasks: 3 });
  // b holds one task, c two: enough. Best fit takes them before the roomier a.
  assert.deepEqual(r.leases.map((l) => l.hostname), ["b", "c"]);
  assert.equal(r.exhausted, false, "a was never looked at");
  assert.deepEqual(r.rejections, {});
});

Deno.test("most-free order and one task per host spread the leases", () => {
  const { acquire } = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 2 }], ["c", { cpu: 4 }]]);
  const r = acquire({ minResources: resources(1000, 128), tasks: 2, tasksPerHost: 1, order: "most-free" });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["a", "c"]);
});

Deno.test("full hosts are never looked at: a filter visits only cells that can fit", () => {
  const hosts: [string, HostSpec][] = [];
  for (let i = 0; i < 5000; i++) hosts.push([`full-${i}`, { cpu: 0.5 }]);
  hosts.push(["roomy-1", { cpu: 16 }], ["roomy-2", { cpu: 16 }]);
  const { acquire } = hostmgrRig(hosts);
  const r = acquire({ minResources: resources(4000, 128), tasks: 1 });
  assert.equal(r.leases.length, 1);
  assert.deepEqual([r.rejections, r.exhausted], [{}, false], "no full host was looked at");
  // Once the search has covered every fitting host, the full ones are counted per index cell.
  const again = acquire({ minResources: resources(4000, 128), tasks: 5 });
  assert.deepEqual([again.leases.length, again.exhausted], [1, true]);
  assert.deepEqual(again.rejections, { "insufficient cpu": 5000, "host leased to another placement": 1 });
});

Deno.test("when no host fits, every host is counted once under a reason, from the index", () => {
  const { acquire, hm, backend } = hostmgrRig([
    ["small-1", { cpu: 1 }],
    ["small-2", { cpu: 1 }],
    ["lowmem", { cpu: 8, memMb: 64 }],
    ["gpu", { cpu: 8, gpu: 4 }],
    ["excl", { cpu: 8, attributes: { "peloton/exclusive": "ml" } }],
    ["drain", { cpu: 8 }],
    ["gone", { cpu: 8 }],
    ["taken", { cpu: 8 }],
  ]);
  hm.startMaintenance("drain");
  backend.emit({ kind: "host-lost", hostname: "gone", agentId: "agent-gone", reason: "x" });
  acquire({ requiredHost: "taken", minResources: resources(0, 0) });
  const r = acquire({ minResources: resources(2000, 1024), tasks: 1 });
  assert.deepEqual(r.leases, []);
  assert.equal(r.exhausted, true);
  assert.deepEqual(r.rejections, {
    "insufficient cpu": 2,
    "insufficient memory": 1,
    "GPU host kept for GPU work": 1,
    "exclusive host": 1,
    "host in maintenance": 1,
    "host lost": 1,
    "host leased to another placement": 1,
  });
  assert.equal(sum(r.rejections), 8);
});

Deno.test("a selective HOST constraint searches its attribute posting; the rest fail the constraint in one count", () => {
  const hosts: [string, HostSpec][] = [];
  for (let i = 0; i < 300; i++) {
    hosts.push([`s${i}`, { attributes: { host_pool: i < 3 ? "batch" : "shared" } }]);
  }
  const { acquire } = hostmgrRig(hosts);
  const r = acquire({ constraint: hostLabel("host_pool", "batch"), tasks: 100, maxHosts: 100 });
  assert.deepEqual(r.leases.map((l) => l.hostname).sort(), ["s0", "s1", "s2"]);
  assert.equal(r.exhausted, true);
  assert.deepEqual(r.rejections, { "constraint host_pool=batch failed": 297 });
});

Deno.test("exclusive hosts take only work whose constraint names peloton/exclusive", () => {
  const { acquire } = hostmgrRig([["excl", { attributes: { "peloton/exclusive": "ml" } }], ["plain"]]);
  assert.deepEqual(acquire().leases.map((l) => l.hostname), ["plain"]);
  const r = acquire({ constraint: hostLabel("peloton/exclusive", "ml") });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["excl"]);
});

Deno.test("GPU hosts are kept for GPU work only when scarce_resource_types has GPU", () => {
  const kept = hostmgrRig([["gpu", { gpu: 2 }]]);
  assert.deepEqual(kept.acquire().rejections, { "GPU host kept for GPU work": 1 });
  const gpuLease = kept.acquire({ minResources: resources(1000, 128, 0, 1000) }).leases[0];
  assert.equal(gpuLease.keptForGpu, true);
  kept.hm.receive({ kind: "release-hosts", leaseIds: [gpuLease.leaseId] });
  // A task pinned to the host (a daemon's instance) was given it, not choosing it: the host stays kept for others.
  const pinned = kept.acquire({ requiredHost: "gpu" }).leases[0];
  assert.deepEqual([pinned?.hostname, pinned?.keptForGpu], ["gpu", true]);
  const shared = hostmgrRig([["gpu", { gpu: 2 }]], { scarceGpu: false });
  assert.deepEqual(shared.acquire().leases.map((l) => l.hostname), ["gpu"]);
});

Deno.test("a required host is the only host looked at", () => {
  const { acquire } = hostmgrRig([["a"], ["b", { cpu: 1 }]]);
  assert.deepEqual(acquire({ requiredHost: "b" }).leases.map((l) => l.hostname), ["b"]);
  const r = acquire({ requiredHost: "a", minResources: resources(8000, 128) });
  assert.deepEqual([r.leases.length, r.rejections, r.exhausted], [0, { "insufficient cpu": 1 }, true]);
  assert.deepEqual(acquire({ requiredHost: "zz" }).rejections, { "required host zz unknown": 1 });
});

Deno.test("filters of one request lease disjoint hosts; hosts leased by an earlier filter are not rejections", () => {
  const { hm } = hostmgrRig([["a"], ["b"]]);
  const f = { minResources: resources(1000, 128), numPorts: 0, maxHosts: 5, gpu: false };
  const r = hm.acquire([f, f]);
  assert.deepEqual(r.leases.map((l) => l.hostname).sort(), ["a", "b"]);
  assert.deepEqual(r.rejections, [{}, {}]);
  assert.deepEqual(r.exhausted, [true, true]);
});

Deno.test("the host limit of a top-level TASK constraint rejects hosts whose tasks already reach it", () => {
  const { acquire, launch } = hostmgrRig([["a"], ["b"]]);
  launch("web-0-1", "a", 1, { labels: [{ key: "app", value: "web" }] });
  const limit: Constraint = {
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "TASK",
      condition: "EQUAL",
      label: { key: "app", value: "web" },
      requirement: 0,
    },
  };
  const r = acquire({ constraint: limit, countLabels: ["app=web"] });
  assert.deepEqual(r.leases.map((l) => [l.hostname, l.labelCounts]), [["b", undefined]]);
  assert.deepEqual(r.rejections, { "constraint tasks with app=web == 0 failed": 1 });
});

Deno.test("a host a later filter of the request leases is no rejection of an earlier one: each host is counted once", () => {
  const { hm, filter } = hostmgrRig([
    ["a", { cpu: 2 }],
    ["b", { cpu: 3 }],
    ["c", { cpu: 8, diskMb: 100 }],
    ["d", { cpu: 8, diskMb: 100 }],
  ]);
  // The large filter turns down a and b from the index (too little cpu), c and d on a visit (disk); the
  // small one, after it, leases b, c and d: they are the engine's to count, in its round.
  const large = filter({
    minResources: { cpuMilli: 6000, memMb: 128, diskMb: 1000, gpuMilli: 0 },
    maxHosts: 1,
  });
  const small = filter({ maxHosts: 3, tasksPerHost: 1, order: "most-free" });
  const r = hm.acquire([large, small]);
  assert.deepEqual(r.leases.map((l) => l.hostname).sort(), ["b", "c", "d"]);
  assert.deepEqual(r.rejections, [{ "insufficient cpu": 1 }, {}]);
  assert.deepEqual(r.exhausted, [true, false]);
});

Deno.test("hosts the engine holds for the round are not counted as leased to another placement", () => {
  const { hm, filter, acquire } = hostmgrRig([["a", { cpu: 2 }], ["b", { cpu: 3 }], ["c", { cpu: 4 }]]);
  const held = acquire({ requiredHost: "c", minResources: resources(0, 0) }).leases[0].leaseId;
  const other = acquire({ requiredHost: "b", minResources: resources(0, 0) }).leases[0].leaseId;
  const r = hm.acquire([filter({ minResources: resources(8000, 128) })], [held]);
  assert.deepEqual(r.rejections, [{ "insufficient cpu": 1, "host leased to another placement": 1 }]);
  // A held lease that has ended (released here) is no longer the engine's: its host is counted as it is.
  hm.receive({ kind: "release-hosts", leaseIds: [held, other] });
  const again = hm.acquire([filter({ minResources: resources(8000, 128) })], [held]);
  assert.deepEqual(again.rejections, [{ "insufficient cpu": 3 }]);
});
