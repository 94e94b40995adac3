/** Tasks stopped while the engine holds them (`tasks-dropped`): dropped at once; a gang's rest goes back. */
import assert from "node:assert/strict";
import type { Gang } from "../messages.ts";
import { makeRmTask } from "../testing/harness.ts";
import { engineRig, lease, one } from "./testing.ts";

const gangOf3 = (): Gang => ({
  tasks: [0, 1, 2].map((i) => makeRmTask({ jobId: "g", instanceId: i, minInstances: 3 })),
});

Deno.test("a gang backing off whose member is stopped hands the rest back at once, saying why", () => {
  const { pe, gangs, hosts, transport } = engineRig();
  gangs(gangOf3());
  hosts([]);
  transport.take("set-placements");
  assert.equal(pe.holding, 3);
  pe.receive({ kind: "tasks-dropped", taskIds: ["g-1-1"] });
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements, []);
  assert.deepEqual(set.failed.map((f) => f.taskId), ["g-0-1", "g-2-1"]);
  assert.match(set.failed[0].reason, /^task g-1-1 of the gang was stopped/);
  assert.equal(pe.holding, 0);
});

Deno.test("a gang whose member is stopped while its round is out is not placed; its hosts go back", () => {
  const { pe, gangs, hosts, transport } = engineRig();
  gangs(gangOf3(), one({ jobId: "solo" }));
  pe.receive({ kind: "tasks-dropped", taskIds: ["g-2-1"] });
  assert.deepEqual(transport.take("set-placements"), [], "decided when the round ends");
  hosts([lease("h1", { cpu: 4 }), lease("h2", { cpu: 4 })]);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.placements.map((p) => p.tasks.map((t) => t.taskId)), [["solo-0-1"]]);
  assert.deepEqual(set.failed.map((f) => f.taskId), ["g-0-1", "g-1-1"]);
  assert.match(set.failed[0].reason, /^task g-2-1 of the gang was stopped/);
  assert.deepEqual(transport.take("release-hosts").flatMap((m) => m.leaseIds), ["h2#1"]);
  assert.equal(pe.holding, 0);
});

Deno.test("a stopped task of a job's unit leaves it; the job's other tasks go on", () => {
  const { pe, gangs, hosts, transport } = engineRig();
  gangs(one({ instanceId: 0 }), one({ instanceId: 1 }));
  hosts([]);
  transport.take("set-placements");
  pe.receive({ kind: "tasks-dropped", taskIds: ["job-a-0-1", "unknown-0-1"] });
  assert.deepEqual(transport.take("set-placements"), [], "nothing to hand back");
  assert.equal(pe.holding, 1);
});

Deno.test("a gang whose member is stopped while its hosts are still being leased, and the lease is lost, goes back then", () => {
  const { pe, gangs, transport, clock } = engineRig();
  gangs(gangOf3());
  transport.takeOne("acquire-hosts", "hostmgr");
  pe.receive({ kind: "tasks-dropped", taskIds: ["g-0-1"] });
  clock.advance(pe.config.requestRetryMs);
  const [set] = transport.take("set-placements", "resmgr");
  assert.deepEqual(set.failed.map((f) => f.taskId), ["g-1-1", "g-2-1"]);
  assert.equal(pe.holding, 0);
});
