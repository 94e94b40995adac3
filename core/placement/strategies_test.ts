import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import { makeRmTask } from "../testing/harness.ts";
import { PELOTON_POLICIES } from "./policy.ts";
import { type HostRow, place, tasks } from "./testing.ts";

const res = (cpu: number, memMb = 128, gpu = 0) => ({
  cpuMilli: cpu * 1000,
  memMb,
  diskMb: 0,
  gpuMilli: gpu * 1000,
});
const STATELESS = PELOTON_POLICIES.STATELESS;

Deno.test("batch packs by best fit: the tightest host that fits, filled before the next", () => {
  const rows: HostRow[] = [["roomy", { cpu: 16 }], ["tight", { cpu: 3 }], ["mid", { cpu: 8 }]];
  const p = place(rows, tasks(5));
  assert.deepEqual(p.perHost, { tight: 3, mid: 2 });
  const big = place(rows, [makeRmTask({ resources: res(6) })]);
  assert.equal(big.where["job-a-0-1"], "mid", "8 cores is the tightest fit for 6");
});

Deno.test("best fit weighs memory too: a memory-heavy task goes where memory is tight but enough", () => {
  const p = place([["fat", { cpu: 4, memMb: 65_536 }], ["lean", { cpu: 4, memMb: 9_000 }]], [
    makeRmTask({ resources: res(1, 8_192) }),
  ]);
  assert.equal(p.where["job-a-0-1"], "lean");
});

Deno.test("SPREAD_JOB puts one task of a job per host while there are unused hosts, then shares", () => {
  const rows: HostRow[] = [["h1"], ["h2"], ["h3"]];
  assert.deepEqual(place(rows, tasks(3, { placementStrategy: "SPREAD_JOB" })).perHost, {
    h1: 1,
    h2: 1,
    h3: 1,
  });
  const more = place(rows.slice(0, 2), tasks(3, { placementStrategy: "SPREAD_JOB" }));
  assert.deepEqual(Object.values(more.perHost).sort(), [1, 2]);
  // Each job spreads on its own: two jobs may share hosts.
  const two = place(rows.slice(0, 2), [
    ...tasks(2, { jobId: "a", placementStrategy: "SPREAD_JOB" }),
    ...tasks(2, { jobId: "b", placementStrategy: "SPREAD_JOB" }),
  ]);
  assert.deepEqual(two.perHost, { h1: 2, h2: 2 });
});

Deno.test("services go to the most free host first, one task per decision", () => {
  const p = place(
    [["small", { cpu: 4 }], ["big", { cpu: 16 }], ["mid", { cpu: 8 }]],
    tasks(4, { taskType: "STATELESS" }),
    {
      policy: { ...STATELESS, spreadAttribute: undefined },
    },
  );
  // big (16) takes tasks until it is no longer the most free: 16, 15, 14, 13 > 8.
  assert.deepEqual(p.perHost, { big: 4 });
  const even = place([["a", { cpu: 4 }], ["b", { cpu: 4 }]], tasks(4, { taskType: "STATELESS" }), {
    policy: { ...STATELESS, spreadAttribute: undefined },
  });
  assert.deepEqual(even.perHost, { a: 2, b: 2 });
});

Deno.test("failure-domain spreading: a job's tasks go round-robin over racks", () => {
  const rows: HostRow[] = [];
  for (const rack of ["r1", "r2", "r3"]) {
    for (let i = 0; i < 4; i++) {
      rows.push([`${rack}-${i}`, { cpu: rack === "r1" ? 32 : 4, attributes: { rack } }]);
    }
  }
  const p = place(rows, tasks(9, { taskType: "STATELESS" }), { policy: STATELESS });
  const perRack: Record<string, number> = {};
  for (const host of Object.values(p.where)) {
    perRack[host!.split("-")[0]] = (perRack[host!.split("-")[0]] ?? 0) + 1;
  }
  assert.deepEqual(perRack, { r1: 3, r2: 3, r3: 3 }, "even though r1's hosts are far roomier");
});

Deno.test("a gang is placed whole, across hosts, or not at all, and a failed gang holds nothing", () => {
  const gang = (n: number, gpu: number, jobId = "tf"): RmTask[] =>
    Array.from(
      { length: n },
      (_, i) => makeRmTask({ jobId, instanceId: i, minInstances: n, resources: res(8, 1024, gpu) }),
    );
  const rows: HostRow[] = [];
  for (let i = 0; i < 8; i++) rows.push([`g${i}`, { cpu: 48, memMb: 393_216, gpu: 8 }, { keptForGpu: true }]);
  const ok = place(rows, [gang(8, 8)]);
  assert.equal(Object.keys(ok.perHost).length, 8, "8 × 8-GPU workers need 8 whole GPU hosts");
  // One host short: none of the gang is placed, and the hosts stay free for the next work.
  const short = place(rows.slice(0, 7), [
    gang(8, 8),
    ...tasks(7, { jobId: "solo", resources: res(1, 128, 8) }),
  ]);
  assert.ok(
    Object.keys(short.where).filter((t) => t.startsWith("tf-")).every((t) => short.where[t] === undefined),
  );
  // Every host had room for one worker, counted before the gang's own workers filled them: none lacks it.
  assert.equal(
    short.reasons["tf-0-1"],
    "gang of 8 could not be placed whole: too few hosts with room for its tasks (8 cpus, 1024 MB memory, " +
      "8 GPUs each): room for one on 7 hosts, not for all 8",
  );
  assert.equal(Object.keys(short.perHost).length, 7, "the solo tasks got the hosts the gang gave back");
});

Deno.test("gangs come first in a round; partitions never split a gang's atomicity", () => {
  const rows: HostRow[] = [];
  for (let i = 0; i < 6; i++) rows.push([`h${i}`, { cpu: 4 }]);
  const gang = Array.from(
    { length: 6 },
    (_, i) => makeRmTask({ jobId: "g", instanceId: i, minInstances: 6, resources: res(4) }),
  );
  for (const partitions of [1, 2, 3, 4]) {
    const p = place(rows, [...tasks(3, { jobId: "early" }), gang], { partitions });
    assert.equal(
      Object.keys(p.where).filter((t) => t.startsWith("g-") && p.where[t]).length,
      6,
      `partitions ${partitions}`,
    );
    assert.ok(["early-0-1", "early-1-1", "early-2-1"].every((t) => p.where[t] === undefined));
  }
});

Deno.test("partitions are disjoint and leftovers move on: the same work is placed for any partition count", () => {
  const rows: HostRow[] = [];
  for (let i = 0; i < 12; i++) rows.push([`h${i}`, { cpu: i % 3 === 0 ? 16 : 2 }]);
  const work = [...tasks(20, { jobId: "a" }), ...tasks(5, { jobId: "b", resources: res(8) })];
  for (const partitions of [1, 2, 3, 5]) {
    const p = place(rows, work, { partitions });
    const placed = Object.values(p.where).filter(Boolean).length;
    assert.equal(placed, 25, `partitions ${partitions}`);
    const again = place(rows, work, { partitions });
    assert.deepEqual(again.where, p.where, "deterministic for a given partition count");
  }
});
