/** Tests of a plan target's value: any finite number as JavaScript writes one, and a named refusal. */
import assert from "node:assert/strict";
import { parsePlanTarget } from "./plan.ts";

const names = { workloads: ["web"], pools: ["/p"], poolsWithWorkloads: ["/p"], hostClasses: ["std"] };

Deno.test("a target's value may be written with an exponent, a leading dot or a sign", () => {
  const cases: [string, number][] = [
    ["queueDelaySeconds.p99<=1e1", 10],
    ["queueDelaySeconds.p99 <= 2.5E-1", 0.25],
    ["queueDelaySeconds.p99<.5", 0.5],
    ["queueDelaySeconds.p99<=60.", 60],
    ["utilization.cpu>=+0.75", 0.75],
    ["tasks.unplaced==0", 0],
    ["queueDelaySeconds.p99>=-1e-3", -0.001],
  ];
  for (const [text, value] of cases) {
    const t = parsePlanTarget(text, names);
    assert.equal(t.value, value, text);
    assert.deepEqual(t.keys, t.path.split("."), text);
  }
  // The value is kept as written in the plan's lines.
  assert.equal(parsePlanTarget("queueDelaySeconds.p99<=1e1", names).text, "queueDelaySeconds.p99<=1e1");
});

Deno.test("a target whose value is no number says so, naming the value", () => {
  for (const value of ["abc", "1e", "1..2", "60s", "1 2", "NaN"]) {
    assert.throws(
      () => parsePlanTarget(`queueDelaySeconds.p99<=${value}`, names),
      new RegExp(`^Error: --target: the value "${value.replace(/\./g, "\\.")}" is not a number; `),
      value,
    );
  }
  for (const value of ["Infinity", "1e999"]) {
    assert.throws(
      () => parsePlanTarget(`queueDelaySeconds.p99<=${value}`, names),
      new RegExp(`^Error: --target: the value "${value}" is not a finite number$`),
      value,
    );
  }
  // A doubled or missing operator is still no target at all.
  for (const bad of ["tasks.unplaced<<0", "tasks.unplaced<=", "tasks.unplaced"]) {
    assert.throws(() => parsePlanTarget(bad, names), /^Error: --target: expected a target like /, bad);
  }
});
