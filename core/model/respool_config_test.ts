/** Resource pool config: enum spellings, parent forms, defaults and the self-contained rules. */
import assert from "node:assert/strict";
import { RespoolConfigSchema, validateRespoolConfig } from "./respool_config.ts";
import { loadRespoolConfig, parseRespoolConfig } from "./load.ts";
import { formatPath } from "./config_issues.ts";

Deno.test("reservation type by name or number, ELASTIC by default; parent as text or {value}", () => {
  const r = parseRespoolConfig({
    name: "p",
    parent: "root",
    resources: [{ kind: "cpu", type: "STATIC" }, { kind: "memory", type: 2 }, { kind: "GPU" }],
    policy: "SCHEDULING_POLICY_PRIORITY_FIFO",
  });
  assert.ok(r.ok);
  assert.deepEqual(r.value.resources.map((x) => [x.kind, x.type]), [
    ["cpu", "STATIC"],
    ["memory", "STATIC"],
    ["gpu", "ELASTIC"],
  ]);
  assert.equal(r.value.parent, "root");
  assert.equal(r.value.policy, "PriorityFIFO");
  const wrapped = RespoolConfigSchema.parse({ parent: { value: "/a/b" }, policy: 0, resources: [] });
  assert.equal(wrapped.parent, "/a/b");
  assert.equal(wrapped.policy, "PriorityFIFO", "an unset (UNKNOWN) policy runs as PriorityFIFO");
  assert.deepEqual(wrapped.resources, []);
});

Deno.test("validateRespoolConfig reports every self-contained rule", () => {
  const pool = RespoolConfigSchema.parse({
    resources: [
      { kind: "cpu", reservation: 4, limit: 2, share: -1 },
      { kind: "cpu", reservation: -2, limit: 0 },
    ],
    slackLimit: { maxPercent: -5 },
  });
  assert.deepEqual(validateRespoolConfig(pool).map((i) => `${formatPath(i.path)}: ${i.expected}`), [
    "resources[0].share: a share of 0 or more",
    "resources[0].limit: a limit of at least the reservation (4)",
    "resources[1].kind: each kind once (also resources[0])",
    "resources[1].reservation: a reservation of 0 or more",
    "slackLimit.maxPercent: a percentage between 0 and 100",
  ]);
  const unknown = {
    ...pool,
    resources: [{ ...pool.resources[0], kind: "tpu" as "cpu", limit: 4, share: 1 }],
  };
  assert.deepEqual(validateRespoolConfig({ ...unknown, slackLimit: undefined }).map((i) => i.expected), [
    "one of cpu, memory, disk or gpu",
  ]);
});

Deno.test("a pool config without resources is an error naming the field, not an all-zero pool", () => {
  // A job file given as a pool config: every key unknown, and no resources.
  const r = loadRespoolConfig(
    "name: j\ninstancecount: 10\ndefaultconfig:\n  command: {value: x}\n",
    "j.yaml",
  );
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => e.message), [
    "j.yaml:1: resources: missing, expected a list of cpu, memory, disk and gpu entries",
  ]);
  assert.equal(parseRespoolConfig({ name: "p" }).ok, false);
  assert.equal(parseRespoolConfig({ name: "p", resources: [] }).ok, true, "an empty list is explicit");
});
