import assert from "node:assert/strict";
import { admissionWaits } from "../core/resmgr/admission_waits.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

/** A 300 s run on ten 10-core hosts with one pool /A of the given resources, and the given workloads. */
async function run(resources: string, workloads: string) {
  const scenario = inlineScenario(`
name: stall
durationSec: 300
hostClasses: [{ name: std, count: 10, cpu: 10, memoryMb: 100000, diskMb: 100000, racks: 1 }]
respools: [{ name: A, resources: [${resources}] }]
workloads:
${workloads}
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const pool = sim.resmgr.tree.lookup("/A")!;
  const said = admissionWaits(pool, scenario.settings.preemption.enabled, true).queues;
  return { stuck: sim.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), said };
}

const CPU_MEM =
  "{kind: cpu, reservation: 20, limit: LIMIT}, {kind: memory, reservation: 100000, limit: 200000}";

Deno.test("a non-preemptible gang over its pool's limit waits in the pending queue: never starts", async () => {
  const { stuck, said } = await run(
    CPU_MEM.replace("LIMIT", "20"),
    `  - { name: bignp2, respool: /A, arrival: {at: [1]}, instances: 3, gang: true, durationSec: 100, cpu: 8,
      memoryMb: 100, preemptible: false }`,
  );
  assert.deepEqual(stuck, [[
    "bignp2",
    3,
    "pool /A can never admit its gang of 3 tasks: needs cpu 24, its limit is 20",
  ]]);
  assert.match(said.pending!, /^resource pool \/A can never admit the first gang in line \(3 tasks\)/);
});

Deno.test("a non-preemptible gang over the reservation never starts; what waits behind it is not held up", async () => {
  const { stuck, said } = await run(
    CPU_MEM.replace("LIMIT", "100"),
    `  - { name: np, respool: /A, arrival: {at: [0]}, instances: 2, durationSec: 1000, cpu: 8, memoryMb: 100,
      preemptible: false }
  - { name: bignp2, respool: /A, arrival: {at: [1]}, instances: 3, gang: true, durationSec: 100, cpu: 8,
      memoryMb: 100, preemptible: false }
  - { name: late, respool: /A, arrival: {at: [2]}, instances: 1, durationSec: 100, cpu: 8, memoryMb: 100,
      preemptible: false }`,
  );
  // 16 of the 20 reserved cores are held by np: late's 8 are refused and it moves to the non-preemptible
  // queue. The gang the pool never admits stays passed over in the pending queue, so late waits only for
  // np's cores (until np ends, after the run), not for ever behind the gang.
  assert.deepEqual(stuck, [
    ["bignp2", 3, "pool /A can never admit its gang of 3 tasks: needs cpu 24, its reservation is 20"],
  ]);
  assert.equal(
    said.pending,
    "resource pool /A can never admit the first gang in line (3 tasks): it asks for cpu 24, more than its " +
      "reservation of 20",
  );
  assert.match(
    said.nonPreemptible!,
    /^resource pool \/A has no room in its reservation .*: cpu 16 of 20 in use;/,
  );
});

Deno.test("revocable tasks over their pool's slack limit never start", async () => {
  const { stuck, said } = await run(
    "{kind: cpu, reservation: 20, limit: 100}, {kind: memory, reservation: 0, limit: 200000}",
    `  - { name: rev, respool: /A, arrival: {at: [1]}, instances: 60, durationSec: 100, cpu: 1, memoryMb: 1000,
      revocable: true, preemptible: true }`,
  );
  assert.deepEqual(stuck, [
    [
      "rev",
      60,
      "pool /A can never admit it: needs memory MB 1000, its slack limit (20% of its reservation) is 0",
    ],
  ]);
  assert.equal(
    said.pending,
    "resource pool /A can never admit the first task in line: it asks for memory 1000 MB, more than its slack " +
      "limit (20% of its reservation) of 0 MB",
  );
});

Deno.test("an admitted gang the cluster shrank below never starts, nor what waits behind its allocation", async () => {
  // 4 hosts of 4 GPUs, one removed at 60 s; a gang of 4 × 4 GPUs at 100 s fits the pool's reservation.
  const scenario = inlineScenario(`
name: shrunk
durationSec: 600
hostClasses:
  - { name: gpu, count: 4, cpu: 8, memoryMb: 65536, diskMb: 100000, gpu: 4, racks: 2 }
respools:
  - name: ml
    resources:
      - { kind: cpu, reservation: 32, limit: 32 }
      - { kind: memory, reservation: 262144, limit: 262144 }
      - { kind: disk, reservation: 0, limit: 1000000 }
      - { kind: gpu, reservation: 16, limit: 16 }
workloads:
  - name: train
    respool: /ml
    type: batch
    arrival: { at: [100] }
    instances: 4
    gang: true
    durationSec: 200
    cpu: 2
    memoryMb: 8192
    gpu: 4
  - name: small
    respool: /ml
    type: batch
    arrival: { at: [150] }
    instances: 1
    durationSec: 100
    cpu: 1
    memoryMb: 1024
    gpu: 1
events:
  - { atSec: 60, removeHosts: { hosts: [gpu-1] } }
settings:
  sampleIntervalSec: 10
  warmupSec: 0
`);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  assert.deepEqual(sim.stuck.map((j) => [j.workload, j.waitingTasks, j.reason]), [
    ["train", 4, "admitted, but no placement can take its gang of 4 tasks: needs gpu 16, the cluster has 12"],
    ["small", 1, "waits in pool /ml's queue behind admitted work that can never be placed"],
  ]);
});
