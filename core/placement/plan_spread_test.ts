import assert from "node:assert/strict";
import { type HostRow, place, tasks } from "./testing.ts";

/** Two racks of two 2-cpu hosts and a rack of one 3-cpu host. */
const RACKS: HostRow[] = [
  ["w0", { cpu: 2, attributes: { rack: "r1" } }],
  ["w1", { cpu: 2, attributes: { rack: "r1" } }],
  ["w2", { cpu: 2, attributes: { rack: "r2" } }],
  ["w3", { cpu: 2, attributes: { rack: "r2" } }],
  ["w4", { cpu: 3, attributes: { rack: "r3" } }],
];

const service = (n: number, jobId = "svc") =>
  tasks(n, {
    jobId,
    taskType: "STATELESS",
    resources: { cpuMilli: 200, memMb: 128, diskMb: 0, gpuMilli: 0 },
  });

function racks(where: Record<string, string | undefined>): Record<string, number> {
  const rackOf: Record<string, string> = { w0: "r1", w1: "r1", w2: "r2", w3: "r2", w4: "r3" };
  const out: Record<string, number> = {};
  for (const h of Object.values(where)) out[rackOf[h!]] = (out[rackOf[h!]] ?? 0) + 1;
  return out;
}

Deno.test("a service spreads over racks and most free hosts alike with one partition and with two", () => {
  const one = place(RACKS, service(6));
  assert.deepEqual(racks(one.where), { r1: 2, r2: 2, r3: 2 });
  for (const partitions of [2, 3]) {
    const split = place(RACKS, service(6), { partitions });
    assert.deepEqual(racks(split.where), { r1: 2, r2: 2, r3: 2 }, `${partitions} partitions`);
    assert.deepEqual(split.where, one.where, `${partitions} partitions place as one`);
  }
});

Deno.test("services are placed over all hosts beside batch work split over partitions", () => {
  const work = [
    ...tasks(4, { jobId: "batch", resources: { cpuMilli: 500, memMb: 128, diskMb: 0, gpuMilli: 0 } }),
    ...service(5),
  ];
  const r = place(RACKS, work, { partitions: 2 });
  assert.equal(Object.values(r.where).filter((h) => h === undefined).length, 0);
  const svc = Object.fromEntries(Object.entries(r.where).filter(([id]) => id.startsWith("svc")));
  const counts = racks(svc);
  assert.ok(
    Math.max(...Object.values(counts)) - Math.min(...Object.values(counts)) <= 1,
    JSON.stringify(counts),
  );
  assert.equal(Object.keys(counts).length, 3);
});
