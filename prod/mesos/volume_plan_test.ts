/** The backend's volume operations as data: what RESERVE/CREATE take, when a launch waits, a host's disk. */
import assert from "node:assert/strict";
import { makeSpec } from "../backend_testing.ts";
import { bagFromMesos, type ResourceKind } from "./resources.ts";
import type { Resource } from "./protocol.ts";
import { planDestroy, planVolumeLaunch, takeForTask } from "./volume_plan.ts";
import { capacityToCore } from "./volumes.ts";

const WHO = { role: "peloton", principal: "peloton" };
const alloc = { allocation_info: { role: "peloton" } };
const plain = (name: string, value: number): Resource => ({
  name,
  type: "SCALAR",
  scalar: { value },
  role: "*",
  ...alloc,
});
const reserved = (name: string, value: number, volumeId?: string): Resource => ({
  name,
  type: "SCALAR",
  scalar: { value },
  role: "peloton",
  reservation: {
    principal: "peloton",
    ...(volumeId ? { labels: { labels: [{ key: "peloton.volume_id", value: volumeId }] } } : {}),
  },
  ...alloc,
});
const volume = (id: string, size: number, role = "peloton"): Resource => ({
  ...reserved("disk", size, id),
  role,
  disk: { persistence: { id, principal: "peloton" }, volume: { container_path: "data", mode: "RW" } },
});
const host = { hostname: "h", agentId: "a1" };
const stateful = (volumeId: string) =>
  makeSpec(host, "true", {
    resources: { cpuMilli: 100, memMb: 32, diskMb: 26, gpuMilli: 0 },
    volume: { volumeId, containerPath: "data", sizeMb: 16 },
  });

Deno.test("planVolumeLaunch: a volume known on the agent but not offered waits; one never made is made", () => {
  const offers = bagFromMesos([plain("cpus", 1), plain("mem", 128), plain("disk", 100)]);
  assert.equal(planVolumeLaunch(offers, stateful("v1"), WHO, true), undefined, "its last run still holds it");
  const plan = planVolumeLaunch(offers, stateful("v1"), WHO, false)!;
  assert.deepEqual(plan.operations.map((o) => o.type), ["RESERVE", "CREATE"]);
  // Too little unreserved disk for the volume and the scratch: nothing now.
  const small = bagFromMesos([plain("cpus", 1), plain("mem", 128), plain("disk", 20)]);
  assert.equal(planVolumeLaunch(small, stateful("v1"), WHO, false), undefined);
});

Deno.test("planVolumeLaunch: an offered volume is used as it is, with its own reservations first", () => {
  const offers = bagFromMesos([
    plain("cpus", 1),
    reserved("cpus", 0.1, "v1"),
    reserved("mem", 32, "v1"),
    plain("mem", 128),
    plain("disk", 100),
    volume("v1", 16),
  ]);
  const plan = planVolumeLaunch(offers, stateful("v1"), WHO, true)!;
  assert.deepEqual(plan.operations, []);
  const keys = Object.keys(plan.used.scalars).filter((k) => plan.used.scalars[k] > 0).sort();
  const kinds = keys.map((k) => plan.used.kinds![k] as ResourceKind);
  assert.equal(kinds.filter((k) => k.reservation).length, 3, "its reserved cpus, mem and volume");
  assert.equal(plan.used.scalars["disk"], 10_000, "10 MB of scratch besides the 16 MB volume");
  // Another task takes the role's other pieces before a volume's reservations.
  const pieces = bagFromMesos([reserved("cpus", 0.1, "v1"), plain("cpus", 1), plain("mem", 64)]);
  const other = takeForTask(pieces, makeSpec(host, "true"))!;
  assert.deepEqual(Object.keys(other.used.scalars).sort(), ["cpus", "mem"], "unreserved cpus, not v1's");
});

Deno.test("planDestroy: DESTROY the volume, UNRESERVE what is reserved for it; nothing while it is not offered", () => {
  const offers = bagFromMesos([
    reserved("cpus", 0.1, "v1"),
    reserved("cpus", 0.2, "v2"),
    plain("disk", 5),
    volume("v1", 16),
  ]);
  const ops = planDestroy(offers, "v1", "peloton")!;
  assert.deepEqual(ops.map((o) => o.type), ["DESTROY", "UNRESERVE"]);
  assert.deepEqual(ops[0].destroy!.volumes, [volume("v1", 16)]);
  const { disk: _disk, ...disk } = volume("v1", 16);
  assert.deepEqual(ops[1].unreserve!.resources, [reserved("cpus", 0.1, "v1"), disk]);
  assert.equal(planDestroy(bagFromMesos([plain("disk", 5)]), "v1", "peloton"), undefined);
});

Deno.test("capacityToCore: the role's volumes count as the host's disk, once; other roles' do not", () => {
  const total = bagFromMesos([plain("disk", 100), volume("v1", 16), volume("v2", 50, "other")]);
  assert.equal(capacityToCore(total, "peloton").diskMb, 116);
});
