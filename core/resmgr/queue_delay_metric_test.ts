/** `peloton_resmgr_queue_delay_seconds`: from a task's enqueue to its first RUNNING, by leaf pool. */
import assert from "node:assert/strict";
import type { MetricLabels, Metrics } from "../ports/metrics.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

/** Every histogram observation, by name and labels. */
function recording(): { metrics: Metrics; observed: Map<string, number[]> } {
  const observed = new Map<string, number[]>();
  const noop = { inc() {}, set() {} };
  return {
    observed,
    metrics: {
      counter: () => noop,
      gauge: () => noop,
      histogram(name: string, labels?: MetricLabels) {
        const key = `${name}${JSON.stringify(labels ?? {})}`;
        const list = observed.get(key) ?? [];
        observed.set(key, list);
        return { observe: (v: number) => void list.push(v) };
      },
    },
  };
}

Deno.test("a task's queue delay runs from its enqueue to its first RUNNING, once per run", () => {
  const ports = makePorts();
  const { metrics, observed } = recording();
  const rm = new ResourceManager(
    { ...ports, metrics, self: "resmgr", hostmgr: "hostmgr" },
    DEFAULT_RESMGR_CONFIG,
  );
  assert.ok(rm.tree.create("a", ROOT_ID, makeRespoolConfig("a", { cpu: 10, memory: 10_000 })).ok);
  const run1 = makeRmTask({ respoolId: "a" });
  ports.clock.set(1_000);
  rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks: [run1] }] });
  const running = (taskId: string, timeMs: number) =>
    rm.receive({ kind: "task-updates", updates: [{ taskId, state: "RUNNING", hostname: "h", timeMs }] });
  running(run1.taskId, 3_500);
  // A RUNNING seen again (a reconciliation echo) is not a second start.
  running(run1.taskId, 9_000);
  const key = 'peloton_resmgr_queue_delay_seconds{"pool":"/a"}';
  assert.deepEqual(observed.get(key), [2.5]);

  // The next run is enqueued again and waits again.
  rm.receive({
    kind: "task-updates",
    updates: [{ taskId: run1.taskId, state: "FAILED", hostname: "h", timeMs: 10_000 }],
  });
  const run2 = { ...run1, taskId: "job-a-0-2" };
  ports.clock.set(10_000);
  rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks: [run2] }] });
  running(run2.taskId, 10_250);
  assert.deepEqual(observed.get(key), [2.5, 0.25]);

  // A task tracked as it was after a restart has no enqueue here: no delay is made up for it.
  const adopted = makeRmTask({ jobId: "job-b", respoolId: "a" });
  rm.receive({ kind: "track-tasks", tasks: [{ task: adopted, state: "LAUNCHED" }] });
  running(adopted.taskId, 20_000);
  assert.deepEqual(observed.get(key), [2.5, 0.25]);
});
