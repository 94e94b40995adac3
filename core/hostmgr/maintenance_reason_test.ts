/**
 * Why a host in maintenance is not leased says so, its agent gone or not: "host lost" is for a host whose
 * agent is gone without maintenance. A task pinned to the host (a stateful task's volume) hears which state
 * it is in.
 */
import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { hostmgrRig } from "./testing.ts";

const pinnedTo = (hostname: string) => ({ requiredHost: hostname, minResources: resources(100, 16) });

Deno.test("the required host in maintenance is named in its state: DRAINING with its task, DRAINED, DOWN once its agent left", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.launch("a-0-1", "h1", 1);
  assert.equal(rig.hm.startMaintenance("h1"), undefined);
  assert.deepEqual(rig.acquire(pinnedTo("h1")).rejections, {
    "host in maintenance (HOST_STATE_DRAINING)": 1,
  });
  rig.backend.emit({
    kind: "task-status",
    status: { taskId: "a-0-1", state: "TASK_KILLED", hostname: "h1", agentId: "agent-h1", timeMs: 1 },
  });
  assert.deepEqual(rig.machineCalls, ["down h1"]);
  assert.deepEqual(rig.acquire(pinnedTo("h1")).rejections, { "host in maintenance (HOST_STATE_DRAINED)": 1 });
  // Its machine is down: the agent leaves with it, and the host is still in maintenance, not lost.
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");
  assert.deepEqual(rig.acquire(pinnedTo("h1")).rejections, { "host in maintenance (HOST_STATE_DOWN)": 1 });
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).rejections, { "host in maintenance": 1 }, "counted as such");
});

Deno.test("a host whose agent is gone without maintenance is lost; completed, a DOWN host without its agent is lost too", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], {}, { machines: false });
  rig.backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "powered off" });
  assert.deepEqual(rig.acquire(pinnedTo("h2")).rejections, { "host lost": 1 });
  assert.equal(rig.hm.startMaintenance("h1"), undefined);
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).rejections, { "host in maintenance": 1, "host lost": 1 });
  assert.equal(rig.hm.completeMaintenance("h1"), undefined);
  rig.store.settle();
  assert.deepEqual(rig.acquire(pinnedTo("h1")).rejections, { "host lost": 1 }, "UP, waiting for its agent");
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).rejections, { "host lost": 2 });
});
