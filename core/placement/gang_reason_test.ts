import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import type { HostSpec } from "../testing/harness.ts";
import { resources } from "../model/resources.ts";
import { makeRmTask } from "../testing/harness.ts";
import { engineRig } from "./testing.ts";

/** An engine wired to a real host manager over `hosts`, `busy` cores in use on some; the reasons it sent. */
function wired(hosts: Record<string, HostSpec>, busy: Record<string, number> = {}) {
  // GPU hosts are not kept for GPU work, so a plain task can take g2's core.
  const hm = hostmgrRig(Object.entries(hosts), { scarceGpu: false });
  for (const [name, cpu] of Object.entries(busy)) hm.launch(`busy-${name}`, name, cpu);
  hm.transport.drain();
  const pe = engineRig();
  const relay = () => {
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
  };
  /** The reason the resource manager heard for each task still placing. */
  const pending = () =>
    Object.fromEntries(
      pe.transport.take("set-placements", "resmgr").flatMap((s) => s.pending ?? [])
        .flatMap((p) => p.taskIds.map((id) => [id, p.reason])),
    );
  return { pe, relay, pending };
}

/** A gang of `n` tasks of job `jobId`, each asking for `cpu` cores, 1024 MB and `gpu` GPUs. */
function gang(jobId: string, n: number, cpu: number, gpu = 0) {
  return {
    tasks: Array.from(
      { length: n },
      (_, i) =>
        makeRmTask({
          jobId,
          instanceId: i,
          minInstances: n,
          resources: resources(cpu * 1000, 1024, 0, gpu * 1000),
        }),
    ),
  };
}

const GPU_HOSTS = { g1: { cpu: 4, gpu: 2 }, g2: { cpu: 4, gpu: 2 }, c1: { cpu: 4 } };

Deno.test("a gang with room for some of its tasks is told how many hosts had room, not that none had", () => {
  // g1 has 4 free cores and 2 GPUs, g2 3 cores, c1 no GPU: one host takes one of the two tasks.
  const { pe, relay, pending } = wired(GPU_HOSTS, { g2: 1 });
  const g = gang("g", 2, 4, 1);
  pe.gangs(g);
  relay();
  const reason =
    "gang of 2 could not be placed whole: too few hosts with room for its tasks (4 cpus, 1024 MB " +
    "memory, 1 GPU each): room for one on 1 host, not for all 2; insufficient cpu on 1 hosts, insufficient " +
    "gpu on 1 hosts";
  assert.deepEqual(pending(), { [g.tasks[0].taskId]: reason, [g.tasks[1].taskId]: reason });
});

Deno.test("hosts a gang's own earlier tasks filled count as having had room", () => {
  // Two hosts of 4 cores, three tasks of 4: the third finds both hosts full of its own gang.
  const { pe, relay, pending } = wired({ a: { cpu: 4 }, b: { cpu: 4 } });
  const g = gang("g", 3, 4);
  pe.gangs(g);
  relay();
  assert.equal(
    pending()[g.tasks[0].taskId],
    "gang of 3 could not be placed whole: too few hosts with room for its tasks (4 cpus, 1024 MB memory " +
      "each): room for one on 2 hosts, not for all 3",
  );
});

Deno.test("a gang no host has room for one task of is told so, as a single task is", () => {
  const { pe, relay, pending } = wired({ a: { cpu: 4 }, b: { cpu: 4 } });
  const g = gang("g", 2, 8);
  pe.gangs(g);
  relay();
  assert.equal(
    pending()[g.tasks[0].taskId],
    "gang of 2 could not be placed whole: no host with 8 free cpus: insufficient cpu on 2 hosts",
  );
});
