import assert from "node:assert/strict";
import { countFree, freePortRanges, pickPorts } from "./ports.ts";

Deno.test("free port ranges cut used ports out", () => {
  const used = new Set([31000, 31002, 31010]);
  assert.deepEqual(freePortRanges([[31000, 31010]], used), [[31001, 31001], [31003, 31009]]);
  assert.equal(countFree([[31000, 31010], [32000, 32000]], used), 9);
});

Deno.test("pickPorts takes static ports as given and dynamic ports lowest-first", () => {
  const taken = new Set<number>([31001]);
  const got = pickPorts(
    [{ name: "http", value: 0 }, { name: "admin", value: 31005 }],
    [[31000, 31010]],
    taken,
  );
  assert.deepEqual(got, { http: 31000, admin: 31005 });
  assert.ok(taken.has(31000) && taken.has(31005));
  assert.deepEqual(pickPorts([{ name: "x", value: 0 }], [[31000, 31010]], taken), { x: 31002 });
});

Deno.test("pickPorts fails when a static port is taken or ranges run out", () => {
  assert.equal(pickPorts([{ name: "a", value: 31001 }], [[31000, 31001]], new Set([31001])), undefined);
  assert.equal(
    pickPorts([{ name: "a", value: 0 }, { name: "b", value: 0 }], [[31000, 31000]], new Set()),
    undefined,
  );
  assert.equal(pickPorts([{ name: "a", value: 80 }], [[31000, 31010]], new Set()), undefined);
});
