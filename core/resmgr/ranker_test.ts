import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import { TASK_STATES, type TaskState } from "../model/states.ts";
import { makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { filterTasks, tasksToEvict } from "./ranker.ts";
import { RespoolNode } from "./respool_node.ts";
import { TaskTable } from "./task_table.ts";
import { scalar } from "./scalar.ts";

const pool = new RespoolNode("a", "/a", makeRespoolConfig("a"));
const t = new TaskTable();
let seq = 0;

/** A task row in `state`; `startedMs` as the table keeps it (NaN: never started). */
function entry(state: TaskState, extra: Partial<RmTask> = {}, startedMs = NaN): number {
  const task = makeRmTask({ jobId: `t${++seq}`, respoolId: "a", preemptible: true, ...extra });
  const row = t.add(task, pool, TASK_STATES[state], undefined);
  t.startedMs[row] = startedMs;
  return row;
}

const ids = (list: number[]) => list.map((row) => t.task[row]!.jobId);
const cpu = (n: number) => scalar({ cpu: n });

Deno.test("victims: READY, then PLACING, then RUNNING; lower priority first; latest started first", () => {
  const runOld = entry("RUNNING", { priority: 1 }, 100);
  const runNew = entry("RUNNING", { priority: 1 }, 500);
  const runLow = entry("RUNNING", { priority: 0 }, 50);
  const placing = entry("PLACING", { priority: 9 });
  const readyHigh = entry("READY", { priority: 5 });
  const readyLow = entry("READY", { priority: 2 });
  const all = [runOld, runNew, runLow, placing, readyHigh, readyLow];
  assert.deepEqual(
    ids(tasksToEvict(t, all, cpu(0), cpu(100))),
    ids([readyLow, readyHigh, placing, runLow, runNew, runOld]),
  );
});

Deno.test("revocable tasks are taken first, against the slack to free; then non-revocable against the rest", () => {
  const rev1 = entry("RUNNING", { revocable: true }, 1);
  const rev2 = entry("RUNNING", { revocable: true }, 2);
  const plain = entry("READY");
  const all = [plain, rev1, rev2];
  assert.deepEqual(ids(tasksToEvict(t, all, cpu(1), cpu(1))), ids([rev2, plain]));
  assert.deepEqual(
    ids(tasksToEvict(t, all, cpu(2), cpu(0))),
    ids([rev2, rev1]),
    "no non-slack excess: no plain victim",
  );
});

Deno.test("non-preemptible tasks and tasks in other states are never chosen", () => {
  const np = entry("RUNNING", { preemptible: false }, 9);
  const npRev = entry("READY", { preemptible: false, revocable: true });
  const others = (["PENDING", "PLACED", "LAUNCHING", "LAUNCHED", "PREEMPTING", "KILLING"] as const).map((s) =>
    entry(s)
  );
  assert.deepEqual(tasksToEvict(t, [np, npRev, ...others], cpu(100), cpu(100)), []);
});

Deno.test("victims are taken until the excess is covered, and only if they free a still-needed resource", () => {
  const big = entry("RUNNING", { resources: { cpuMilli: 2000, memMb: 0, diskMb: 0, gpuMilli: 0 } }, 3);
  const memOnly = entry("RUNNING", { resources: { cpuMilli: 0, memMb: 512, diskMb: 0, gpuMilli: 0 } }, 2);
  const small = entry("RUNNING", { resources: { cpuMilli: 1000, memMb: 0, diskMb: 0, gpuMilli: 0 } }, 1);
  assert.deepEqual(
    ids(filterTasks(t, cpu(2.5), [big, memOnly, small])),
    ids([big, small]),
    "memory is not needed",
  );
  assert.deepEqual(ids(filterTasks(t, cpu(2), [big, memOnly, small])), ids([big]), "covered: stop");
  // cpu is covered by `big`; a task that would only free more cpu does not help the memory still needed.
  const need = scalar({ cpu: 1, memory: 256 });
  assert.deepEqual(ids(filterTasks(t, need, [big, small, memOnly])), ids([big, memOnly]));
  assert.deepEqual(filterTasks(t, scalar(), [big]), [], "nothing to free: no victim");
});
