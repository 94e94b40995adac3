/** A real host manager and placement engine together: hosts that come back or free up are used at once. */
import assert from "node:assert/strict";
import type { Gang, RmTask } from "../messages.ts";
import { fits, resources } from "../model/resources.ts";
import { isTerminalTaskState } from "../model/states.ts";
import { finished, hostmgrRig, spec } from "../hostmgr/testing.ts";
import { makeHost, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_PLACEMENT_CONFIG, PlacementEngine } from "./engine.ts";

/** `n` hosts of 4 cpus, each full with four 1-cpu tasks, an engine, and the test as the resource manager. */
function fullCluster(n: number) {
  const rig = hostmgrRig(Array.from({ length: n }, (_, i) => [`h-${i}`, { cpu: 4 }]));
  for (let i = 0; i < n; i++) for (let k = 0; k < 4; k++) rig.launch(`run-${i * 4 + k}-1`, `h-${i}`, 1);
  rig.transport.drain();
  const pe = new PlacementEngine(
    { ...rig, self: "placement", resmgr: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_PLACEMENT_CONFIG,
  );
  pe.start();
  const tasks = new Map<string, RmTask>();
  /** Task id → hosts it was placed on (more than one would be a double placement). */
  const placed = new Map<string, string[]>();
  let capacity = rig.hm.clusterCapacity().physical, roomEpoch = 0;

  /** Lets the daemons talk until only messages to the resource manager are left. */
  const pump = () => {
    while (rig.transport.sent.some((s) => s.to === "hostmgr" || s.to === "placement")) {
      rig.transport.deliverTo("hostmgr", rig.hm);
      rig.transport.deliverTo("placement", pe);
    }
  };
  /** 100 ms on; the engine's dequeue answered with `gangs`; its placements launched on their hosts. */
  const step = (...gangs: Gang[]) => {
    rig.clock.advance(100);
    pump();
    // As the resource manager does: ended tasks and grown capacity bump the epoch every dequeue carries.
    for (const c of rig.transport.take("cluster-capacity", "resmgr")) {
      if (!fits(c.capacity.physical, capacity)) roomEpoch++;
      capacity = c.capacity.physical;
    }
    for (const m of rig.transport.take("task-updates", "resmgr")) {
      if (m.updates.some((u) => isTerminalTaskState(u.state))) roomEpoch++;
    }
    for (const g of gangs) for (const t of g.tasks) tasks.set(t.taskId, t);
    const dq = rig.transport.takeOne("dequeue-gangs", "resmgr");
    pe.receive({ kind: "gangs", reqId: dq.reqId, gangs, roomEpoch });
    pump();
    for (const set of rig.transport.take("set-placements", "resmgr")) {
      for (const p of set.placements) {
        const specs = p.tasks.map((t) => {
          placed.set(t.taskId, [...placed.get(t.taskId) ?? [], p.hostname]);
          return spec(t.taskId, p.hostname, tasks.get(t.taskId)!.resources.cpuMilli / 1000);
        });
        rig.hm.receive({ kind: "launch-tasks", leaseId: p.leaseId, hostname: p.hostname, tasks: specs });
      }
    }
    rig.transport.take("task-statuses");
  };
  return { ...rig, pe, step, placed };
}

Deno.test("a host that fails and comes back empty takes the lost small tasks at once, with no reservation", () => {
  const c = fullCluster(4);
  c.step();
  c.backend.emit({ kind: "host-lost", hostname: "h-0", agentId: "agent-h-0", reason: "agent gone" });
  const lost = [0, 1, 2, 3].map((i): Gang => ({
    tasks: [makeRmTask({ jobId: "run", instanceId: i, taskId: `run-${i}-2` })],
  }));
  c.step(...lost);
  for (let t = 0; t < 1000; t++) c.step(); // 100 s with h-0 away: no room anywhere
  assert.equal(c.placed.size, 0);
  assert.equal(c.hm.reservations.size, 0, "1-cpu tasks are not large: no host is reserved for them");
  c.backend.emit({ kind: "host-up", host: makeHost("h-0", { cpu: 4 }) });
  let steps = 0;
  while (c.placed.size < 4 && steps < 200) {
    c.step();
    steps++;
  }
  assert.deepEqual([...c.placed.values()], [["h-0"], ["h-0"], ["h-0"], ["h-0"]]);
  assert.ok(steps <= 10, `placed ${steps * 100} ms after h-0 came back, not within a second`);
  assert.equal(c.pe.holding, 0);
});

Deno.test("a large task with a reserved host takes another host that frees up first, and the reservation ends", () => {
  const c = fullCluster(4);
  const big = makeRmTask({ jobId: "big", resources: resources(4000, 1024) });
  c.step({ tasks: [big] });
  for (let t = 0; t < 100 && c.hm.reservations.size === 0; t++) c.step();
  const reserved = c.hm.reservations.of(big.taskId)!.host.info.hostname;
  const other = reserved === "h-1" ? "h-2" : "h-1";
  const at = Number(other.slice(2)) * 4;
  c.backend.emit(...[0, 1, 2, 3].map((k) => finished(`run-${at + k}-1`, other)));
  for (let t = 0; t < 200 && !c.placed.size; t++) c.step();
  assert.deepEqual(c.placed.get(big.taskId), [other], `placed on ${other}, not kept waiting for ${reserved}`);
  assert.equal(c.hm.reservations.size, 0, "the reservation is cancelled");
  assert.equal(c.hm.host(reserved)!.reservedFor, undefined);
  const first = Number(reserved.slice(2)) * 4;
  c.backend.emit(finished(`run-${first}-1`, reserved));
  c.step();
  assert.equal(
    c.hm.host(reserved)!.leaseId,
    undefined,
    "the freed host is back in the pool, leased to no one",
  );
  for (let t = 0; t < 50; t++) c.step();
  assert.deepEqual([...c.placed.values()], [[other]], "placed once");
});
