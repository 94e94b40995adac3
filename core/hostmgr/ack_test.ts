import assert from "node:assert/strict";
import { hostmgrRig } from "./testing.ts";

const status = (taskId: string, uuid?: string) => ({
  kind: "task-status" as const,
  status: { taskId, state: "TASK_RUNNING" as const, hostname: "h1", agentId: "agent-h1", timeMs: 0, uuid },
});

Deno.test("updates with a uuid are acknowledged only after both jobmgr and resmgr processed them", () => {
  const { backend, hm, transport } = hostmgrRig([["h1"]]);
  backend.emit(status("job-0-1", "u1"), status("job-1-1", "u2"));
  const [toJob] = transport.take("task-statuses", "jobmgr");
  const [toRm] = transport.take("task-updates", "resmgr");
  assert.equal(toJob.ackToken, toRm.ackToken);
  assert.ok(toJob.ackToken !== undefined);
  hm.receive({ kind: "statuses-processed", ackToken: toJob.ackToken! });
  assert.deepEqual(backend.acked, [], "one manager is not enough");
  hm.receive({ kind: "statuses-processed", ackToken: toJob.ackToken! });
  assert.deepEqual(backend.acked, [[
    { taskId: "job-0-1", agentId: "agent-h1", uuid: "u1" },
    { taskId: "job-1-1", agentId: "agent-h1", uuid: "u2" },
  ]]);
  hm.receive({ kind: "statuses-processed", ackToken: toJob.ackToken! });
  assert.equal(backend.acked.length, 1, "a late or repeated answer acknowledges nothing twice");
});

Deno.test("updates without a uuid (minicluster, simulator) carry no token", () => {
  const { backend, transport } = hostmgrRig([["h1"]]);
  backend.emit(status("job-0-1"));
  assert.equal(transport.take("task-statuses", "jobmgr")[0].ackToken, undefined);
});
