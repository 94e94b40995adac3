import assert from "node:assert/strict";
import { makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { ActiveList } from "./active_list.ts";
import { RespoolNode } from "./respool_node.ts";
import { READY, TaskTable } from "./task_table.ts";

const pool = new RespoolNode("a", "/a", makeRespoolConfig("a"));

Deno.test("the active list keeps insertion order like a Set: adding twice is a no-op, re-adding goes last", () => {
  const t = new TaskTable();
  const [a, b, c, d] = [0, 1, 2, 3].map((i) => t.add(makeRmTask({ instanceId: i }), pool, READY, undefined));
  const list = new ActiveList();
  const ids = () => [...list.rows(t)].map((row) => t.task[row]!.instanceId);
  for (const row of [a, b, c, b]) list.add(t, row);
  assert.deepEqual(ids(), [0, 1, 2]);
  assert.equal(list.size, 3);
  assert.ok(list.delete(t, b));
  assert.ok(!list.delete(t, b), "a second delete finds nothing");
  assert.ok(!list.delete(t, d), "nor does deleting a row never added");
  list.add(t, b);
  assert.deepEqual(ids(), [0, 2, 1]);
  for (const row of [a, b]) list.delete(t, row);
  assert.deepEqual(ids(), [2]);
  assert.ok(list.has(t, c) && !list.has(t, a));
  list.delete(t, c);
  assert.deepEqual([list.size, ids()], [0, []]);
  list.add(t, d);
  assert.deepEqual(ids(), [3]);
});
