import assert from "node:assert/strict";
import { makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { PREEMPTIBLE, REVOCABLE } from "./allocation.ts";
import { RespoolNode } from "./respool_node.ts";
import { NONE, PENDING, RUNNING, TaskTable } from "./task_table.ts";

const pool = new RespoolNode("a", "/a", makeRespoolConfig("a"));

Deno.test("a freed row is reused with a new generation; what the old task left there is gone", () => {
  const t = new TaskTable();
  const task = makeRmTask({ jobId: "j", revocable: true, preemptible: true, priority: 7 });
  const row = t.add(task, pool, PENDING, "jobmgr@a");
  t.setLastFailure(row, "no host fits");
  t.state[row] = RUNNING;
  t.startedMs[row] = 5;
  assert.deepEqual([t.size, t.rowOf(task.taskId), t.rowOf("nope")], [1, row, NONE]);
  assert.deepEqual([t.flags[row], t.priority[row], t.resources[row]], [
    REVOCABLE | PREEMPTIBLE,
    7,
    task.resources,
  ]);
  const view = t.get(task.taskId)!;
  assert.deepEqual(
    [view.taskId, view.state, view.pool, view.startedMs, view.lastFailure, view.owner],
    [task.taskId, "RUNNING", pool, 5, "no host fits", "jobmgr@a"],
  );
  const generation = t.generation[row];
  t.remove(row);
  assert.deepEqual([t.size, t.rowOf(task.taskId), t.holds(row, generation)], [0, NONE, false]);
  assert.throws(() => view.state, /task that has ended/);

  const next = makeRmTask({ jobId: "k" });
  assert.equal(t.add(next, pool, PENDING, undefined), row, "the row is reused");
  assert.deepEqual(
    [t.get(next.taskId)!.lastFailure, t.get(next.taskId)!.owner, t.get(next.taskId)!.startedMs],
    [undefined, undefined, undefined],
  );
  assert.deepEqual([...t].map(([id, v]) => [id, v.state]), [[next.taskId, "PENDING"]]);
});

Deno.test("the table grows past its first columns and keeps every row", () => {
  const t = new TaskTable();
  const rows = [];
  for (let i = 0; i < 5000; i++) {
    rows.push(t.add(makeRmTask({ instanceId: i, priority: i }), pool, PENDING, undefined));
  }
  assert.equal(t.size, 5000);
  assert.ok(rows.every((row, i) => t.priority[row] === i && t.task[row]!.instanceId === i));
  assert.deepEqual([...t.values()].filter((v) => v.state === "PENDING").length, 5000);
});
