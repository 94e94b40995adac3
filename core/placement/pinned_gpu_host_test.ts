/** Tasks pinned to a host (daemons, volumes) may use a GPU host kept for GPU work; tasks that choose may not. */
import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import { resources } from "../model/resources.ts";
import { makeRmTask } from "../testing/harness.ts";
import { engineRig, place } from "./testing.ts";

const res = (cpu: number, gpu = 0) => resources(cpu * 1000, 1024, 0, gpu * 1000);

/** An engine wired to a real host manager that keeps GPU hosts for GPU work; where each task was placed. */
function wired() {
  const hm = hostmgrRig([
    ["s1", { cpu: 4 }],
    ["s2", { cpu: 4 }],
    ["g1", { cpu: 8, gpu: 2 }],
    ["g2", { cpu: 8, gpu: 2 }],
  ], { scarceGpu: true });
  hm.transport.drain();
  const pe = engineRig();
  const relay = () => {
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
  };
  const sets = () => pe.transport.take("set-placements", "resmgr");
  return { pe, relay, sets };
}

Deno.test("a daemon's instance pinned to a GPU host is placed there; a task that chooses still avoids GPU hosts", () => {
  const { pe, relay, sets } = wired();
  const daemon = ["s1", "s2", "g1", "g2"].map((h, i) =>
    makeRmTask({ jobId: "logs", instanceId: i, requiredHost: h, resources: res(1) })
  );
  const free = Array.from(
    { length: 4 },
    (_, i) => makeRmTask({ jobId: "web", instanceId: i, resources: res(1) }),
  );
  pe.gangs(...daemon.map((t) => ({ tasks: [t] })), ...free.map((t) => ({ tasks: [t] })));
  relay();
  const where = Object.fromEntries(
    sets().flatMap((s) => s.placements).flatMap((p) => p.tasks.map((t) => [t.taskId, p.hostname])),
  );
  for (const t of daemon) assert.equal(where[t.taskId], t.requiredHost, `${t.taskId} on its host`);
  for (const t of free) {
    assert.ok(["s1", "s2"].includes(where[t.taskId]), `${t.taskId} on ${where[t.taskId]}`);
  }
});

Deno.test("a pinned task's reason names its host and what it lacks, not that the host is unavailable", () => {
  const { pe, relay, sets } = wired();
  const big = makeRmTask({ jobId: "logs", requiredHost: "g1", resources: res(16) });
  pe.gangs({ tasks: [big] });
  relay();
  const pending = sets().flatMap((s) => s.pending ?? []);
  assert.deepEqual(pending, [{ reason: "required host g1: insufficient cpu", taskIds: [big.taskId] }]);
});

Deno.test("the engine's stages let a pinned task onto a kept GPU host, and no one else", () => {
  const p = place([["g", { cpu: 16, gpu: 4 }, { keptForGpu: true }], ["plain", { cpu: 1 }]], [
    makeRmTask({ instanceId: 0, requiredHost: "g", resources: res(1) }),
    makeRmTask({ instanceId: 1, resources: res(1) }),
    makeRmTask({ instanceId: 2, resources: res(1) }),
  ]);
  assert.deepEqual(p.where, { "job-a-0-1": "g", "job-a-1-1": "plain", "job-a-2-1": undefined });
  assert.equal(
    p.reasons["job-a-2-1"],
    "no host fits: GPU host kept for GPU work on 1 hosts, insufficient cpu on 1 hosts",
  );
});
