/** Update configs: the uint32 fields (`batchSize`, ...) take no number a uint32 cannot hold. */
import assert from "node:assert/strict";
import { loadUpdateConfig, parseUpdateConfig } from "./load.ts";
import { MAX_UINT32 } from "./_schema_kit.ts";

const UINT32 = `a whole number from 0 to ${MAX_UINT32} (a uint32)`;

Deno.test("a batchSize past uint32 is refused naming it, from a file or an API body", () => {
  const file = loadUpdateConfig("batchSize: 1000000000000000\n", "u.yaml");
  assert.ok(!file.ok);
  assert.deepEqual(file.errors.map((e) => e.message), [
    `u.yaml:1: batchSize: got 1000000000000000, expected ${UINT32}`,
  ]);
  for (const batchSize of [MAX_UINT32 + 1, 1e15, 1e20, "4294967296"]) {
    const body = parseUpdateConfig({ batchSize });
    assert.ok(!body.ok, String(batchSize));
    assert.deepEqual(body.errors.map((e) => e.expected), [UINT32], String(batchSize));
  }
  const top = parseUpdateConfig({ batchSize: MAX_UINT32 });
  assert.ok(top.ok);
  assert.equal(top.value.batchSize, MAX_UINT32);
  // Below the range keeps its message.
  assert.deepEqual(
    (parseUpdateConfig({ batchSize: -1 }) as { errors: { expected: string }[] }).errors[0].expected,
    "a whole number (0 or more)",
  );
});

Deno.test("the other uint32 fields of an update, by their v0 and v1alpha names, are capped too", () => {
  const r = parseUpdateConfig({ maxInstanceRetries: 2 ** 40, maxFailureInstances: 2 ** 32 });
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => e.message), [
    `request: maxInstanceRetries: got ${2 ** 40}, expected ${UINT32}`,
    `request: maxFailureInstances: got ${2 ** 32}, expected ${UINT32}`,
  ]);
});
