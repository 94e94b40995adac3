/**
 * A filter with static ports leases only hosts that offer every one free, and counts the others under a
 * reason naming the port, so a task asking for a port is never left with the one busy host best fit picked.
 */
import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { hostmgrRig } from "./testing.ts";

const small = resources(500, 10);

Deno.test("a static port outside the best-fit host's ranges: the host that offers it is leased", () => {
  // As the minicluster's agents: each its own range; best fit would pick the tightest, a2.
  const { acquire } = hostmgrRig([
    ["a0", { cpu: 4, ports: [[31000, 31999]] }],
    ["a1", { cpu: 4, ports: [[32000, 32999]] }],
    ["a2", { cpu: 2, ports: [[33000, 33999]] }],
  ]);
  const r = acquire({ minResources: small, numPorts: 1, staticPorts: [31003], maxHosts: 1, tasks: 2 });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["a0"]);
  assert.deepEqual(r.rejections, { "static port 31003 taken or not offered": 2 });
});

Deno.test("a static port a task uses on the busiest host: a free one elsewhere is leased, and each host holds one", () => {
  const { acquire, launch } = hostmgrRig([
    ["a0", { ports: [[31000, 31004]] }],
    ["a1", { ports: [[31000, 31004]] }],
    ["a2", { ports: [[31000, 31004]] }],
    ["a3", { ports: [[31000, 31004]] }],
  ]);
  launch("web-0-1", "a2", 1, { ports: { http: 31003 } });
  const one = acquire({ minResources: small, numPorts: 1, staticPorts: [31003], maxHosts: 1, tasks: 2 });
  assert.equal(one.leases.length, 1);
  assert.notEqual(one.leases[0].hostname, "a2", "best fit would lease the busier a2");
  // Two tasks with the same static port cannot share a host: the filter leases a host per task.
  const two = acquire({ minResources: small, numPorts: 1, staticPorts: [31003], maxHosts: 2, tasks: 3 });
  assert.equal(two.leases.length, 2);
  assert.equal(two.exhausted, true);
  assert.deepEqual(two.rejections, {
    "static port 31003 taken or not offered": 1,
    "host leased to another placement": 1,
  });
});

Deno.test("no host offers the static port free: every ready host is counted under the port's reason", () => {
  const { acquire, launch } = hostmgrRig([
    ["a0", { ports: [[31000, 31004]] }],
    ["a1", { ports: [[32000, 32004]] }],
  ]);
  launch("web-0-1", "a0", 1, { ports: { http: 31003 } });
  const r = acquire({ minResources: small, numPorts: 2, staticPorts: [31001, 31003], maxHosts: 1, tasks: 2 });
  assert.deepEqual(r.leases, []);
  assert.equal(r.exhausted, true);
  assert.deepEqual(r.rejections, {
    "static port 31003 taken or not offered": 1,
    "static port 31001 taken or not offered": 1,
  });
});

Deno.test("work without static ports is leased by its port count alone", () => {
  const { acquire } = hostmgrRig([["a0", { ports: [[31000, 31000]] }], ["a1", { ports: [] }]]);
  const r = acquire({ minResources: small, numPorts: 1, maxHosts: 2, tasks: 2 });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["a0"]);
  assert.deepEqual(r.rejections, { "insufficient ports": 1 });
});
