import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import { resources } from "../model/resources.ts";
import { makeRmTask } from "../testing/harness.ts";
import type { PlacementConfig } from "./engine.ts";
import { DEFAULT_RESERVATION, PELOTON_POLICIES } from "./policy.ts";
import { engineRig } from "./testing.ts";

/**
 * An engine wired by hand to a real host manager over three 32-core hosts, `busy` cores in use on each:
 * the counts in a reason come from both, so only together do they show a host counted twice.
 */
function wired(busy: Record<string, number>, config: Partial<PlacementConfig> = {}) {
  const hm = hostmgrRig(Object.keys(busy).map((name) => [name, { cpu: 32, memMb: 65_536 }]));
  for (const [name, cpu] of Object.entries(busy)) hm.launch(`busy-${name}`, name, cpu);
  hm.transport.drain();
  const pe = engineRig(config);
  /** Carries messages between the engine and the host manager until neither has any for the other. */
  const relay = () => {
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
  };
  /** The reasons the resource manager heard, for tasks handed back and for tasks still placing. */
  const reasons = () => {
    const sets = pe.transport.take("set-placements", "resmgr");
    return {
      failed: Object.fromEntries(sets.flatMap((s) => s.failed).map((f) => [f.taskId, f.reason])),
      pending: Object.fromEntries(
        sets.flatMap((s) => s.pending ?? []).flatMap((p) => p.taskIds.map((id) => [id, p.reason])),
      ),
    };
  };
  return { hm, pe, relay, reasons };
}

const batch = (maxDurationMs: number) => ({
  ...PELOTON_POLICIES,
  BATCH: { ...PELOTON_POLICIES.BATCH, maxDurationMs },
});

Deno.test("a host another group of the round leases is counted once for a task no host fits", () => {
  const { pe, relay, reasons } = wired({ a: 28, b: 16, c: 24 });
  const large = makeRmTask({ jobId: "large", resources: resources(32_000, 1024) });
  const small = makeRmTask({ jobId: "small", resources: resources(1000, 1024) });
  pe.gangs({ tasks: [large] }, { tasks: [small] });
  relay();
  // The large task's filter turned down all three hosts; the small one's then leased a, in the round.
  const { pending } = reasons();
  assert.deepEqual(pending, { [large.taskId]: "no host with 32 free cpus: insufficient cpu on 3 hosts" });
});

Deno.test("hosts a unit holds for its next round are counted once, not also as leased to another placement", () => {
  const { pe, relay, reasons, hm } = wired({ a: 28, b: 24, c: 16 }, {
    policies: { ...batch(1_000), STATELESS: { ...PELOTON_POLICIES.STATELESS, maxRounds: 3 } },
  });
  const service = makeRmTask({ jobId: "svc", taskType: "STATELESS", resources: resources(1000, 1024) });
  const large = makeRmTask({ jobId: "large", resources: resources(32_000, 1024) });
  pe.gangs({ tasks: [service] }, { tasks: [large] });
  relay();
  // The service found c (most free) but looks on for a better host: the engine holds c, round after round.
  pe.gangs();
  relay();
  assert.equal(hm.hm.host("c")!.leaseId !== undefined, true, "c still held");
  pe.clock.advance(1_000);
  pe.gangs();
  relay();
  // Past its 1 s deadline the large task goes back with the reason of a round that held c.
  const { failed } = reasons();
  assert.deepEqual(failed, { [large.taskId]: "no host with 32 free cpus: insufficient cpu on 3 hosts" });
});

Deno.test("a task's own reserved host does not count against it as reserved for a large task", () => {
  const { pe, relay, reasons } = wired({ a: 28, b: 24, c: 16 }, {
    policies: batch(1_000),
    reservation: { ...DEFAULT_RESERVATION, afterFailedRounds: 1, maxActive: 1 },
  });
  const mine = makeRmTask({ jobId: "mine", resources: resources(32_000, 1024) });
  const other = makeRmTask({ jobId: "other", resources: resources(32_000, 1024) });
  pe.gangs({ tasks: [mine] }, { tasks: [other] });
  relay();
  assert.deepEqual(Object.values(reasons().pending), [
    "no host with 32 free cpus: insufficient cpu on 3 hosts",
    "no host with 32 free cpus: insufficient cpu on 3 hosts",
  ]);
  pe.clock.advance(1_000);
  pe.gangs();
  relay();
  // c, closest to fitting, was reserved for the first task (only one reservation at a time).
  const { failed } = reasons();
  assert.deepEqual(failed, {
    [mine.taskId]: "no host with 32 free cpus: insufficient cpu on 3 hosts",
    [other.taskId]:
      "no host with 32 free cpus: insufficient cpu on 2 hosts, host reserved for a large task on 1 hosts",
  });
});
