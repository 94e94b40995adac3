/** Statuses split by job shard, inventories to every job manager, acknowledgements joined back. */
import assert from "node:assert/strict";
import type { MappedTaskStatus, Message } from "../../core/messages.ts";
import { shardAddress, shardOf } from "../cluster/registry.ts";
import { JobmgrRouter } from "./jobmgr_router.ts";

const status = (jobId: string): MappedTaskStatus => ({
  taskId: `${jobId}-0-1`,
  state: "TASK_RUNNING",
  pelotonState: "RUNNING",
  hostname: "h",
  agentId: "a",
  timeMs: 1,
});

Deno.test("a status batch goes to its jobs' shards; the host manager hears once all parts were processed", () => {
  const r = new JobmgrRouter("hostmgr", () => ["jobmgr@1", "jobmgr@2"]);
  // Two jobs in different shards.
  let j2 = "job-b";
  for (let i = 0; shardOf(j2) === shardOf("job-a"); i++) j2 = `job-b${i}`;
  const out = r.outgoing("jobmgr", {
    kind: "task-statuses",
    statuses: [status("job-a"), status(j2)],
    ackToken: 5,
  })!;
  assert.deepEqual(
    out.map(([to]) => to).sort(),
    [shardAddress(shardOf("job-a")), shardAddress(shardOf(j2))].sort(),
  );
  const tokens = out.map(([, m]) => (m as { ackToken: number }).ackToken);
  const processed = (t: number): Message | undefined =>
    r.incoming("hostmgr", { kind: "statuses-processed", ackToken: t });
  assert.equal(processed(tokens[0]), undefined);
  assert.deepEqual(processed(tokens[1]), { kind: "statuses-processed", ackToken: 5 });
  assert.equal(processed(tokens[1]), undefined, "once");
  // The resource manager's own answer passes through untouched.
  assert.deepEqual(r.incoming("hostmgr", { kind: "statuses-processed", ackToken: 5 }), {
    kind: "statuses-processed",
    ackToken: 5,
  });
  const inventory = r.outgoing("jobmgr", { kind: "host-inventory", full: true, hosts: [] })!;
  assert.deepEqual(inventory.map(([to]) => to), ["jobmgr@1", "jobmgr@2"]);
  assert.equal(r.outgoing("resmgr", { kind: "drop-tasks", taskIds: [] }), undefined);
});
