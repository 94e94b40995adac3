import assert from "node:assert/strict";
import type { Constraint } from "../model/config_types.ts";
import { PELOTON_HOST_POOLS } from "./host_pool_policy.ts";
import { engineRig, lease, one } from "./testing.ts";

const onPool = (value: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key: "host_pool", value }, requirement: 1 },
});
const RACK: Constraint = {
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key: "rack", value: "r1" }, requirement: 1 },
};

Deno.test("use_host_pool: batch and stateless work asks for its host pool, on top of its own constraint", () => {
  const { gangs, hosts } = engineRig({ hostPools: PELOTON_HOST_POOLS });
  gangs(
    one({ jobId: "b", instanceId: 0, taskType: "BATCH", preemptible: true }),
    one({ jobId: "r", instanceId: 0, taskType: "BATCH", preemptible: false }),
    one({ jobId: "s", instanceId: 0, taskType: "STATELESS", constraint: RACK }),
    one({ jobId: "s2", instanceId: 0, taskType: "STATELESS", constraint: RACK }),
    one({ jobId: "f", instanceId: 0, taskType: "STATEFUL", constraint: RACK }),
  );
  const filters = hosts([lease("h1")]);
  const asked = filters.map((f) => f.constraint);
  const both = { type: "AND_CONSTRAINT", andConstraint: { constraints: [RACK, onPool("stateless")] } };
  assert.deepEqual(asked, [onPool("shared"), onPool("batch_reserved"), both, both, RACK]);
  assert.equal(asked[2], asked[3], "tasks sharing a constraint share its pooled one");
});

Deno.test("use_host_pool: a task is placed only on a host of its pool; off by default", () => {
  const pooled = engineRig({ hostPools: PELOTON_HOST_POOLS });
  pooled.gangs(one({ taskType: "BATCH", preemptible: true }));
  pooled.hosts([
    lease("h1", { attributes: { host_pool: "stateless" } }),
    lease("h2", { attributes: { host_pool: "shared" } }),
  ]);
  const placed = pooled.transport.takeOne("set-placements", "resmgr");
  assert.deepEqual(placed.placements.map((p) => p.hostname), ["h2"]);

  const plain = engineRig();
  plain.gangs(one({ taskType: "BATCH", preemptible: true }));
  assert.deepEqual(plain.hosts([lease("h1")]).map((f) => f.constraint), [undefined]);
});
