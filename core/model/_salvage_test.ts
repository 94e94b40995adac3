/** Salvage: malformed fields out, list indices mapped back, the caller's value untouched. */
import assert from "node:assert/strict";
import { z } from "zod";
import { salvage } from "./_salvage.ts";

const Item = z.object({ id: z.string(), size: z.number().default(0) });
const Doc = z.object({
  name: z.string().default(""),
  items: z.array(Item),
  groups: z.array(z.object({ members: z.array(Item).default([]) })).default([]),
});

function salvaged(input: unknown) {
  const first = Doc.safeParse(input);
  assert.ok(!first.success);
  return salvage(input, first.error.issues, (v) => Doc.safeParse(v));
}

Deno.test("bad keys fall back to defaults, entries without required fields leave their lists", () => {
  const input = {
    name: 7,
    items: [{ id: "a", size: "big" }, { size: 1 }, "junk", { id: "d" }],
    groups: [{ members: [{ size: 2 }, { id: "m" }] }],
  };
  const before = structuredClone(input);
  const s = salvaged(input);
  assert.ok(s);
  assert.deepEqual(s.value, {
    name: "",
    items: [{ id: "a", size: 0 }, { id: "d", size: 0 }],
    groups: [{ members: [{ id: "m", size: 0 }] }],
  });
  assert.deepEqual(input, before, "the input is not modified");
  assert.deepEqual(s.gaps.original(["items", 1, "id"]), ["items", 3, "id"]);
  assert.deepEqual(s.gaps.original(["groups", 0, "members", 0]), ["groups", 0, "members", 1]);
  assert.equal(s.gaps.malformed(["name"]), true);
  assert.equal(s.gaps.malformed(["items", 0, "size"]), true);
  assert.equal(s.gaps.malformed(["items", 0, "id"]), false, "a sibling of a malformed field parsed");
  assert.equal(s.gaps.malformed(["items", 1, "size"]), false, "items[1] is the input's items[3]");
  assert.equal(s.gaps.malformed(["items"]), false, "a list that lost entries is still there");
});

Deno.test("a required list that is missing or malformed is checked as empty", () => {
  for (const input of [{ name: "x" }, { name: "x", items: "a" }]) {
    const s = salvaged(input);
    assert.ok(s);
    assert.deepEqual(s.value.items, []);
    assert.equal(s.gaps.malformed(["items", 0]), true);
    assert.equal(s.gaps.malformed(["name"]), false);
  }
});

Deno.test("a document that is not a mapping cannot be salvaged", () => {
  assert.equal(salvaged([1, 2]), undefined);
  assert.equal(salvaged(null), undefined);
});
