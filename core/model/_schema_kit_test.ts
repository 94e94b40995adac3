/** The shared schema pieces: every proto uint32 field of a job config or spec refuses what a uint32 cannot hold. */
import assert from "node:assert/strict";
import { parseJobConfig, parseRespoolConfig, parseStatelessSpec } from "./load.ts";
import { fromLimits } from "./resources.ts";
import { MAX_AMOUNT, MAX_UINT32 } from "./_schema_kit.ts";

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

Deno.test("a resource amount past 1e12 is refused naming the field and the bound: 1e308 cores is Infinity milli-cores", () => {
  const BOUND = "a number from 0 to 1000000000000 (1e12)";
  const r = parseJobConfig({
    instanceCount: 1,
    defaultConfig: {
      command: { value: "x" },
      resource: { cpuLimit: 1e308, memLimitMb: 1e13, diskLimitMb: 1e300, gpuLimit: 2e12 },
    },
  });
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => [e.path, e.expected]).sort(), [
    ["defaultConfig.resource.cpuLimit", BOUND],
    ["defaultConfig.resource.diskLimitMb", BOUND],
    ["defaultConfig.resource.gpuLimit", BOUND],
    ["defaultConfig.resource.memLimitMb", BOUND],
  ]);
  assert.match(r.errors.find((e) => e.path.endsWith("cpuLimit"))!.message, /cpuLimit: got 1e\+308, expected/);
  // A negative amount still says what it is; the bound itself is taken, and its thousandths are whole.
  const neg = parseJobConfig({
    instanceCount: 1,
    defaultConfig: { command: { value: "x" }, resource: { cpuLimit: -1 } },
  });
  assert.ok(!neg.ok);
  assert.equal(neg.errors[0].expected, "a number (0 or more)");
  const top = parseJobConfig({
    instanceCount: 1,
    defaultConfig: { command: { value: "x" }, resource: { cpuLimit: MAX_AMOUNT, memLimitMb: MAX_AMOUNT } },
  });
  assert.ok(top.ok, JSON.stringify(!top.ok && top.errors));
  assert.ok(Number.isSafeInteger(fromLimits(top.value.defaultConfig.resource!).cpuMilli));
});

Deno.test("a v1alpha pod's resources and a pool's reservation, limit and share are bounded the same", () => {
  const pod = parseStatelessSpec({
    instanceCount: 1,
    defaultSpec: { containers: [{ entrypoint: { value: "x" }, resource: { cpuLimit: 1e308 } }] },
  });
  assert.ok(!pod.ok);
  assert.match(
    pod.errors[0].message,
    /resource\.cpuLimit: got 1e\+308, expected a number from 0 to 1000000000000/,
  );
  const pool = parseRespoolConfig({
    name: "p",
    resources: [{ kind: "cpu", reservation: 1e13, limit: 1e308, share: Infinity }],
  }, "config");
  assert.ok(!pool.ok);
  assert.deepEqual(pool.errors.map((e) => [e.path, e.expected]).sort(), [
    ["resources[0].limit", "a number of at most 1000000000000 (1e12)"],
    ["resources[0].reservation", "a number of at most 1000000000000 (1e12)"],
    ["resources[0].share", "a number"],
  ]);
  const ok = parseRespoolConfig({
    name: "p",
    resources: [{ kind: "cpu", reservation: MAX_AMOUNT, limit: MAX_AMOUNT, share: 1 }],
  }, "config");
  assert.ok(ok.ok, JSON.stringify(!ok.ok && ok.errors));
});
