/** The shared schema pieces: every proto uint32 field of a job config or spec refuses what a uint32 cannot hold. */
import assert from "node:assert/strict";
import { parseJobConfig, parseStatelessSpec } from "./load.ts";
import { MAX_UINT32 } from "./_schema_kit.ts";

const UINT32 = `a whole number from 0 to ${MAX_UINT32} (a uint32)`;
const BIG = 2 ** 40;

Deno.test("the uint32 fields of a v0 job config refuse a number past uint32, naming each", () => {
  const r = parseJobConfig({
    type: "SERVICE",
    instanceCount: 1,
    sla: { priority: BIG, maxRunningTime: BIG, maximumUnavailableInstances: BIG },
    defaultConfig: {
      command: { value: "x" },
      resource: { fdLimit: BIG },
      restartPolicy: { maxFailures: BIG },
      volume: { containerPath: "data", sizeMB: BIG },
      killGracePeriodSeconds: BIG,
      healthCheck: { intervalSecs: BIG },
      constraint: {
        type: "LABEL_CONSTRAINT",
        labelConstraint: {
          kind: "HOST",
          condition: "EQUAL",
          label: { key: "k", value: "v" },
          requirement: BIG,
        },
      },
    },
  });
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => [e.path, e.expected]).sort(), [
    ["defaultConfig.constraint.labelConstraint.requirement", UINT32],
    ["defaultConfig.healthCheck.intervalSecs", UINT32],
    ["defaultConfig.killGracePeriodSeconds", UINT32],
    ["defaultConfig.resource.fdLimit", UINT32],
    ["defaultConfig.restartPolicy.maxFailures", UINT32],
    ["defaultConfig.volume.sizeMB", UINT32],
    ["sla.maxRunningTime", UINT32],
    ["sla.maximumUnavailableInstances", UINT32],
    ["sla.priority", UINT32],
  ]);
  assert.ok(r.errors.every((e) => e.value === BIG));
});

Deno.test("a v1alpha spec's uint32 fields are capped the same; the largest uint32 is taken", () => {
  const spec = (sla: Record<string, unknown>, grace: unknown) =>
    parseStatelessSpec({
      instanceCount: 1,
      sla,
      defaultSpec: { killGracePeriodSeconds: grace, containers: [{ entrypoint: { value: "x" } }] },
    });
  const r = spec({ priority: MAX_UINT32 + 1 }, 1e15);
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => e.message), [
    `request: sla.priority: got ${MAX_UINT32 + 1}, expected ${UINT32}`,
    `request: defaultSpec.killGracePeriodSeconds: got 1000000000000000, expected ${UINT32}`,
  ]);
  const top = spec({ priority: MAX_UINT32 }, MAX_UINT32);
  assert.ok(top.ok, JSON.stringify(!top.ok && top.errors));
  assert.equal(top.value.sla.priority, MAX_UINT32);
});
