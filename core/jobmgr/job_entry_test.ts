import assert from "node:assert/strict";
import { InstanceMap } from "./job_entry.ts";

Deno.test("InstanceMap: a job's tasks by instance id, as a Map of them would answer", () => {
  const m = new InstanceMap<string>([[2, "c"], [0, "a"]]);
  assert.equal(m.size, 2);
  assert.equal(m.get(0), "a");
  assert.equal(m.get(1), undefined);
  assert.equal(m.has(1), false);
  assert.equal(m.get(7), undefined);

  m.set(1, "b").set(2, "C");
  assert.equal(m.size, 3, "replacing an instance does not count it twice");
  assert.deepEqual([...m.keys()], [0, 1, 2], "instance order, whatever order they were added in");
  assert.deepEqual([...m.values()], ["a", "b", "C"]);
  assert.deepEqual([...m], [[0, "a"], [1, "b"], [2, "C"]]);

  assert.equal(m.delete(1), true);
  assert.equal(m.delete(1), false);
  assert.equal(m.delete(9), false);
  assert.equal(m.size, 2);
  assert.deepEqual([...m.entries()], [[0, "a"], [2, "C"]]);

  m.set(5, "f");
  assert.deepEqual([...m.keys()], [0, 2, 5], "a gap left by a jump is no instance");
  assert.equal(m.size, 3);
  assert.throws(() => m.set(-1, "x"), /non-negative integer, got -1/);
  assert.throws(() => m.set(1.5, "x"), /non-negative integer, got 1.5/);
  assert.equal(m.size, 3);
});
