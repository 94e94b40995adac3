import assert from "node:assert/strict";
import type { Constraint } from "../model/config_types.ts";
import { makeRmTask } from "../testing/harness.ts";
import { place, tasks } from "./testing.ts";
import { requiredHostLacksRoom } from "./reasons.ts";

const res = (cpu: number, memMb = 128, diskMb = 0, gpu = 0) => ({
  cpuMilli: cpu * 1000,
  memMb,
  diskMb,
  gpuMilli: gpu * 1000,
});
const hostLabel = (
  key: string,
  value: string,
  requirement = 1,
  condition: "EQUAL" | "LESS_THAN" | "GREATER_THAN" = "EQUAL",
): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition, label: { key, value }, requirement },
});
const taskLabel = (
  key: string,
  value: string,
  requirement: number,
  condition: "EQUAL" | "LESS_THAN" | "GREATER_THAN" = "EQUAL",
): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "TASK", condition, label: { key, value }, requirement },
});

Deno.test("fit stage: cpu, memory, disk and gpu each reject with their own count", () => {
  const p = place(
    [["cpu", { cpu: 1 }], ["mem", { memMb: 64 }], ["disk", { diskMb: 10 }], ["ok", {
      cpu: 8,
      memMb: 16_384,
    }]],
    [makeRmTask({ resources: res(2, 1024, 100) })],
  );
  assert.equal(p.where["job-a-0-1"], "ok");
  const big = place([["cpu", { cpu: 1 }], ["mem", { memMb: 64 }], ["disk", { diskMb: 10 }]], [
    makeRmTask({ resources: res(2, 1024, 100) }),
  ]);
  assert.equal(
    big.reasons["job-a-0-1"],
    "no host with 2 free cpus: insufficient cpu on 1 hosts, insufficient disk on 1 hosts, insufficient memory on 1 hosts",
  );
});

Deno.test("GPU work needs free GPUs; GPU hosts are kept for it and exclusive hosts for work that targets them", () => {
  const rows = [["gpu", { cpu: 16, gpu: 4 }, { keptForGpu: true }], ["plain", { cpu: 16 }], [
    "excl",
    { cpu: 16, attributes: { "peloton/exclusive": "ml" } },
  ]] as const;
  const p = place(rows.map((r) => [...r]), [
    makeRmTask({ instanceId: 0, resources: res(1, 128, 0, 2) }),
    makeRmTask({ instanceId: 1 }),
    makeRmTask({ instanceId: 2, jobId: "ml", constraint: hostLabel("peloton/exclusive", "ml") }),
  ]);
  assert.deepEqual(p.where, { "job-a-0-1": "gpu", "job-a-1-1": "plain", "ml-2-1": "excl" });
  const none = place([
    ["gpu", { cpu: 16, gpu: 4 }, { keptForGpu: true }],
    ["gpu2", { cpu: 16, gpu: 2 }, { keptForGpu: true }],
    ["excl", { attributes: { "peloton/exclusive": "x" } }],
  ], [
    makeRmTask({ resources: res(1, 128, 0, 8) }),
    makeRmTask({ instanceId: 1 }),
  ]);
  assert.equal(
    none.reasons["job-a-0-1"],
    "no host with 8 free GPUs: insufficient gpu on 2 hosts, exclusive host on 1 hosts",
  );
  assert.equal(
    none.reasons["job-a-1-1"],
    "no host fits: GPU host kept for GPU work on 2 hosts, exclusive host on 1 hosts",
  );
});

Deno.test("ports: static ports must be free; dynamic ports take the lowest free port, never twice", () => {
  const ports = [{ name: "http", value: 31001 }, { name: "debug", value: 0 }];
  const p = place([["h1", { ports: [[31000, 31002]] }], ["h2", { ports: [[32000, 32009]] }]], [
    makeRmTask({ instanceId: 0, ports }),
    makeRmTask({ instanceId: 1, ports }),
    ...tasks(3, { jobId: "d", ports: [{ name: "p", value: 0 }] }),
  ]);
  assert.deepEqual(p.ports["job-a-0-1"], { http: 31001, debug: 31000 });
  assert.equal(p.where["job-a-1-1"], undefined, "31001 is taken on h1 and not in h2's ranges");
  assert.equal(
    p.reasons["job-a-1-1"],
    "no host with port 31001 free: static port 31001 taken or not offered on 2 hosts",
  );
  const dyn = ["d-0-1", "d-1-1", "d-2-1"].map((id) => `${p.where[id]}:${p.ports[id].p}`);
  assert.deepEqual(dyn, ["h1:31002", "h2:32000", "h2:32001"]);
});

Deno.test("HOST label constraints: equality, hostname, counts, AND and OR", () => {
  const rows: [string, { attributes: Record<string, string> }][] = [
    ["h1", { attributes: { rack: "a", zone: "z1" } }],
    ["h2", { attributes: { rack: "b", zone: "z1" } }],
    ["h3", { attributes: { rack: "c", zone: "z2" } }],
  ];
  const and: Constraint = {
    type: "AND_CONSTRAINT",
    andConstraint: { constraints: [hostLabel("zone", "z1"), hostLabel("rack", "a", 0)] },
  };
  const or: Constraint = {
    type: "OR_CONSTRAINT",
    orConstraint: { constraints: [hostLabel("rack", "c"), hostLabel("rack", "zz")] },
  };
  const p = place(rows, [
    makeRmTask({ instanceId: 0, constraint: hostLabel("rack", "b") }),
    makeRmTask({ instanceId: 1, constraint: hostLabel("hostname", "h3") }),
    makeRmTask({ instanceId: 2, constraint: and }),
    makeRmTask({ instanceId: 3, constraint: or }),
    makeRmTask({ instanceId: 4, constraint: hostLabel("zone", "z2", 1, "LESS_THAN"), resources: res(3) }),
    makeRmTask({ instanceId: 5, constraint: hostLabel("rack", "nowhere") }),
  ]);
  assert.deepEqual(p.where, {
    "job-a-0-1": "h2",
    "job-a-1-1": "h3",
    "job-a-2-1": "h2",
    "job-a-3-1": "h3",
    "job-a-4-1": "h1",
    "job-a-5-1": undefined,
  });
  assert.equal(p.reasons["job-a-5-1"], "no host fits: constraint rack=nowhere failed on 3 hosts");
});

Deno.test("TASK label constraints count tasks on the host, including those placed in the round (host limit)", () => {
  const web = [{ key: "app", value: "web" }];
  const limitOne = taskLabel("app", "web", 1, "LESS_THAN");
  const p = place(
    [["h1"], ["h2"], ["h3", {}, { labelCounts: { "app=web": 1 } }]],
    tasks(3, { labels: web, constraint: limitOne }),
  );
  assert.deepEqual(p.perHost, { h1: 1, h2: 1 }, "at most one web task per host, and h3 already runs one");
  assert.equal(
    p.reasons["job-a-2-1"],
    "no host fits: constraint tasks with app=web < 1 failed on 3 hosts",
  );
  // Affinity: a host already running a cache task, or one the round puts there.
  const cache = [{ key: "app", value: "cache" }];
  const near = taskLabel("app", "cache", 0, "GREATER_THAN");
  const q = place([["h1"], ["h2", {}, { labelCounts: { "app=cache": 0 } }]], [
    makeRmTask({ jobId: "c", labels: cache }),
    ...tasks(2, { jobId: "w", constraint: near }),
  ]);
  assert.equal(q.where["w-0-1"], q.where["c-0-1"]);
  assert.equal(q.where["w-1-1"], q.where["c-0-1"]);
});

Deno.test("revocable tasks take cpu from slack and the rest from regular free resources", () => {
  const p = place([["noslack", { cpu: 8 }], ["slack", { cpu: 1 }, { freeSlack: res(4) }]], [
    ...tasks(5, { revocable: true, resources: res(1) }),
  ]);
  assert.deepEqual(p.perHost, { slack: 4 });
  assert.match(
    p.reasons["job-a-4-1"],
    /^no host with 1 free revocable cpus: insufficient revocable cpu on 2 hosts$/,
  );
});

Deno.test("a required host is the only choice; a desired host is tried first", () => {
  const p = place([["h1", { cpu: 8 }], ["h2", { cpu: 2 }], ["h3", { cpu: 1 }]], [
    makeRmTask({ instanceId: 0, requiredHost: "h2", resources: res(2) }),
    makeRmTask({ instanceId: 1, requiredHost: "h3", resources: res(2) }),
    makeRmTask({ instanceId: 2, requiredHost: "gone" }),
    makeRmTask({ instanceId: 3, desiredHost: "h1" }),
  ]);
  assert.deepEqual(p.where, {
    "job-a-0-1": "h2",
    "job-a-1-1": undefined,
    "job-a-2-1": undefined,
    "job-a-3-1": "h1",
  });
  assert.equal(p.reasons["job-a-1-1"], "required host h3: insufficient cpu");
  assert.equal(p.reasons["job-a-2-1"], "required host gone could not be leased");
  assert.ok(requiredHostLacksRoom(p.reasons["job-a-1-1"], "h3"), "the job manager's updates read it so");
  assert.ok(!requiredHostLacksRoom(p.reasons["job-a-2-1"], "gone"), "a host not leased is no lack of room");
});
