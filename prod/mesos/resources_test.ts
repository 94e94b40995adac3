/** Resource arithmetic: pieces kept apart by reservation and kind, capacity, Peloton's way of taking them. */
import assert from "node:assert/strict";
import { operatorTotal } from "./mesos_convert.ts";
import type { OperatorAgent, Resource } from "./protocol.ts";
import {
  bagFromCore,
  bagFromMesos,
  bagToCore,
  bagToMesos,
  parseResourceText,
  pieceKey,
  rangesOf,
  takeResources,
} from "./resources.ts";

const scalar = (name: string, value: number, extra: Partial<Resource> = {}): Resource => ({
  name,
  type: "SCALAR",
  scalar: { value },
  ...extra,
});

Deno.test("resources: only plain disk is scratch capacity (no volumes, MOUNT or PATH disks, shared disk)", () => {
  const agent: OperatorAgent = {
    agent_info: { hostname: "h", id: { value: "S1" } },
    total_resources: [
      scalar("cpus", 4, { role: "*" }),
      scalar("disk", 1000, { role: "*" }),
      scalar("disk", 500, { role: "peloton" }),
      scalar("disk", 2000, { role: "*", disk: { source: { type: "MOUNT", mount: { root: "/mnt/d1" } } } }),
      scalar("disk", 3000, { role: "*", disk: { source: { type: "PATH", path: { root: "/mnt/p" } } } }),
      scalar("disk", 64, {
        role: "peloton",
        reservation: { principal: "peloton" },
        disk: { persistence: { id: "v1" }, volume: { container_path: "data", mode: "RW" } },
      }),
      scalar("disk", 128, { role: "peloton", shared: {}, disk: { persistence: { id: "v2" } } }),
    ],
  } as OperatorAgent;
  assert.deepEqual(bagToCore(operatorTotal(agent, "peloton")), {
    cpuMilli: 4000,
    memMb: 0,
    diskMb: 1500,
    gpuMilli: 0,
  });
  // Kept apart, each under its own key, so a task asking for scratch disk never takes them.
  const bag = bagFromMesos(agent.total_resources!);
  assert.equal(Object.keys(bag.scalars).filter((k) => k.startsWith("disk")).length, 6);
  assert.equal(
    takeResources(bag, bagFromCore({ cpuMilli: 0, memMb: 0, diskMb: 1600, gpuMilli: 0 })),
    undefined,
  );
});

Deno.test("resources: a reservation in either format is one piece, apart from unreserved ones", () => {
  const legacy = scalar("cpus", 1, { role: "peloton" });
  const refined = scalar("cpus", 1, { reservations: [{ type: "STATIC", role: "peloton" }] });
  assert.equal(pieceKey(legacy), "cpus(peloton)");
  assert.equal(pieceKey(refined), pieceKey(legacy));
  assert.equal(pieceKey(scalar("cpus", 1, { role: "*" })), "cpus");
  assert.notEqual(pieceKey(scalar("cpus", 1, { role: "peloton", reservation: {} })), pieceKey(legacy));
  assert.deepEqual(bagFromMesos([legacy, refined]).scalars, { "cpus(peloton)": 2000 });
});

Deno.test("resources: an agent's --resources text, as Peloton's minicluster writes it", () => {
  const bag = parseResourceText(
    "cpus(peloton):0.5;cpus(*):3.5;mem(peloton):1024;disk:20000;ports(peloton):[31000-31999, 33000-33001]",
  );
  assert.deepEqual(bag.scalars, {
    "cpus(peloton)": 500,
    cpus: 3500,
    "mem(peloton)": 1024_000,
    disk: 20_000_000,
  });
  assert.deepEqual(rangesOf(bag, "ports"), [[31000, 31999], [33000, 33001]]);
  assert.deepEqual(bagToMesos(bag, { allocationRole: "peloton" })[0], {
    name: "cpus",
    type: "SCALAR",
    scalar: { value: 3.5 },
    role: "*",
    allocation_info: { role: "peloton" },
  });
  assert.throws(() => parseResourceText("cpus(peloton)=1"), /Cannot read the resource "cpus\(peloton\)=1"/);
  assert.throws(() => parseResourceText("ports:[2-1]"), /"2-1" is not a range/);
});

Deno.test("resources: a task takes reserved pieces first, then unreserved ones, each as offered", () => {
  const allocation_info = { role: "peloton" };
  const offered = bagFromMesos([
    scalar("cpus", 3.5, { role: "*", allocation_info }),
    scalar("cpus", 0.5, { role: "peloton", allocation_info }),
    scalar("cpus", 2, { role: "*", allocation_info, revocable: {} }),
    {
      name: "ports",
      type: "RANGES",
      ranges: { range: [{ begin: 31000, end: 31004 }] },
      role: "peloton",
      allocation_info,
    },
    {
      name: "ports",
      type: "RANGES",
      ranges: { range: [{ begin: 31005, end: 31010 }] },
      role: "*",
      allocation_info,
    },
  ]);
  const want = bagFromCore({ cpuMilli: 1000, memMb: 0, diskMb: 0, gpuMilli: 0 }, [31004, 31005]);
  const taken = takeResources(offered, want)!;
  assert.deepEqual(bagToMesos(taken.used), [
    scalar("cpus", 0.5, { role: "*", allocation_info }),
    scalar("cpus", 0.5, { role: "peloton", allocation_info }),
    {
      name: "ports",
      type: "RANGES",
      ranges: { range: [{ begin: 31005, end: 31005 }] },
      role: "*",
      allocation_info,
    },
    {
      name: "ports",
      type: "RANGES",
      ranges: { range: [{ begin: 31004, end: 31004 }] },
      role: "peloton",
      allocation_info,
    },
  ]);
  assert.deepEqual(taken.left.scalars, { cpus: 3000, "cpus(peloton)": 0, "cpus@revocable": 2000 });
  // Revocable cpus for a revocable task; not more than all of them together.
  const revocable = takeResources(
    offered,
    bagFromCore({ cpuMilli: 1500, memMb: 0, diskMb: 0, gpuMilli: 0 }, [], true),
  );
  assert.deepEqual(revocable?.used.scalars, { "cpus@revocable": 1500 });
  assert.equal(
    takeResources(offered, bagFromCore({ cpuMilli: 4001, memMb: 0, diskMb: 0, gpuMilli: 0 })),
    undefined,
  );
  assert.equal(
    takeResources(offered, bagFromCore({ cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 }, [31011])),
    undefined,
  );
});
