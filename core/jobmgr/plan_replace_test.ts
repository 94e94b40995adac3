/** What an update does to each instance: compared with the config the instance runs, not the job's latest. */
import assert from "node:assert/strict";
import type { TaskRecord } from "../model/records.ts";
import { makeJobConfig } from "../testing/harness.ts";
import { TaskConfigs } from "./task_build.ts";
import { planReplace } from "./workflow.ts";

const v1 = makeJobConfig({ type: "SERVICE", instanceCount: 3 });
const v2 = makeJobConfig({
  type: "SERVICE",
  instanceCount: 3,
  task: {
    command: { shell: true, value: "echo v2", arguments: [], environment: { variables: [] }, uris: [] },
  },
});
const versions = new Map([[1, new TaskConfigs(v1)], [2, new TaskConfigs(v2)]]);
const task = (instanceId: number, configVersion: number, over: Partial<TaskRecord> = {}) =>
  ({ instanceId, configVersion, goalState: "RUNNING", ...over }) as TaskRecord;

Deno.test("after an aborted update left instances on two versions, each is compared with its own", () => {
  // Instance 0 moved to v2 before the abort; 1 and 2 still run v1.
  const tasks = [task(0, 2), task(1, 1), task(2, 1)];
  const plan = (next: typeof v1) => planReplace(tasks, next, new TaskConfigs(next), (v) => versions.get(v));
  assert.deepEqual(plan(v2), { added: [], removed: [], updated: [1, 2] }, "to v2: the two still on v1");
  assert.deepEqual(plan(v1), { added: [], removed: [], updated: [0] }, "back to v1: the one on v2");
  assert.deepEqual(
    planReplace(
      tasks,
      { ...v1, instanceCount: 4 },
      new TaskConfigs({ ...v1, instanceCount: 4 }),
      (v) => versions.get(v),
    ),
    { added: [3], removed: [], updated: [0] },
  );
});

Deno.test("an instance still to move to another version, or of a version not at hand, counts as updated", () => {
  const tasks = [task(0, 1, { desiredConfigVersion: 2 }), task(1, 7), task(2, 1, { goalState: "DELETED" })];
  assert.deepEqual(planReplace(tasks, v1, new TaskConfigs(v1), (v) => versions.get(v)), {
    added: [2],
    removed: [],
    updated: [0, 1],
  });
  assert.deepEqual(
    planReplace(tasks, { ...v1, instanceCount: 1 }, new TaskConfigs(v1), (v) => versions.get(v)),
    {
      added: [],
      removed: [1],
      updated: [0],
    },
  );
});

Deno.test("a config whose fields come in another order is the same config", () => {
  // The same command, its keys in another order (as a merge patch or another client writes them).
  const reordered = makeJobConfig({
    type: "SERVICE",
    instanceCount: 3,
    task: {
      command: { uris: [], environment: { variables: [] }, arguments: [], value: "echo v2", shell: true },
    },
  });
  const onV2 = [task(0, 2), task(1, 2), task(2, 2)];
  assert.deepEqual(planReplace(onV2, reordered, new TaskConfigs(reordered), (v) => versions.get(v)), {
    added: [],
    removed: [],
    updated: [],
  });
});
