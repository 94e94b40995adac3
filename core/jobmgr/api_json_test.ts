/** The v0 API's JSON: every enum it outputs in the name Peloton's protos give it. */
import assert from "node:assert/strict";
import type { Constraint, TaskConfig } from "../model/config_types.ts";
import { parseJobConfig } from "../model/load.ts";
import { DEFAULT_SLA, makeJobConfig } from "../testing/fixtures.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson, taskConfigJson, terminationReasonName } from "./api_json.ts";

type Body = Record<string, unknown>;

const label = (kind: "TASK" | "HOST", condition: "LESS_THAN" | "EQUAL" | "GREATER_THAN", key: string) => ({
  type: "LABEL_CONSTRAINT" as const,
  labelConstraint: { kind, condition, label: { key, value: "x" }, requirement: 1 },
});

/** A host constraint AND an OR of task constraints: every condition, nested. */
const CONSTRAINT: Constraint = {
  type: "AND_CONSTRAINT",
  andConstraint: {
    constraints: [
      label("HOST", "EQUAL", "rack"),
      {
        type: "OR_CONSTRAINT",
        orConstraint: {
          constraints: [label("TASK", "LESS_THAN", "app"), label("TASK", "GREATER_THAN", "db")],
        },
      },
    ],
  },
};

/** task.proto's names: `CONDITION_*` conditions, type and kind as the model has them. */
const CONSTRAINT_JSON = {
  type: "AND_CONSTRAINT",
  andConstraint: {
    constraints: [
      {
        type: "LABEL_CONSTRAINT",
        labelConstraint: {
          kind: "HOST",
          condition: "CONDITION_EQUAL",
          label: { key: "rack", value: "x" },
          requirement: 1,
        },
      },
      {
        type: "OR_CONSTRAINT",
        orConstraint: {
          constraints: [
            {
              type: "LABEL_CONSTRAINT",
              labelConstraint: {
                kind: "TASK",
                condition: "CONDITION_LESS_THAN",
                label: { key: "app", value: "x" },
                requirement: 1,
              },
            },
            {
              type: "LABEL_CONSTRAINT",
              labelConstraint: {
                kind: "TASK",
                condition: "CONDITION_GREATER_THAN",
                label: { key: "db", value: "x" },
                requirement: 1,
              },
            },
          ],
        },
      },
    ],
  },
};

const TASK: Partial<TaskConfig> = {
  constraint: CONSTRAINT,
  preemptionPolicy: { type: "NON_PREEMPTIBLE", killOnPreempt: false },
};

Deno.test("jobConfigJson: placement strategy, constraint conditions and preemption type in v0's proto names", () => {
  const config = makeJobConfig({
    instanceCount: 2,
    placementStrategy: "SPREAD_JOB",
    task: TASK,
    instanceConfig: { 1: { preemptionPolicy: { type: "PREEMPTIBLE", killOnPreempt: true } } },
  });
  const json = jobConfigJson(config);
  assert.equal(json.placementStrategy, "PLACEMENT_STRATEGY_SPREAD_JOB");
  const task = json.defaultConfig as Body;
  assert.deepEqual(task.constraint, CONSTRAINT_JSON);
  assert.deepEqual(task.preemptionPolicy, { type: "TYPE_NON_PREEMPTIBLE", killOnPreempt: false });
  assert.deepEqual((json.instanceConfig as Record<string, Body>)[1].preemptionPolicy, {
    type: "TYPE_PREEMPTIBLE",
    killOnPreempt: true,
  });
  assert.equal(jobConfigJson(makeJobConfig()).placementStrategy, "PLACEMENT_STRATEGY_PACK_HOST");
  const unset = jobConfigJson(makeJobConfig({ placementStrategy: "PLACEMENT_STRATEGY_INVALID" }));
  assert.equal(unset.placementStrategy, "PLACEMENT_STRATEGY_INVALID");
  assert.deepEqual(
    taskConfigJson({ preemptionPolicy: { type: "INVALID", killOnPreempt: false } }).preemptionPolicy,
    { type: "TYPE_INVALID", killOnPreempt: false },
  );
  // What the API gives, a client may send back: the parser reads the proto names as the model's.
  const parsed = parseJobConfig(json);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  assert.deepEqual(parsed.value, config);
  // The model keeps its names: only the output is spelled so.
  assert.equal(config.defaultConfig.preemptionPolicy?.type, "NON_PREEMPTIBLE");
});

Deno.test("terminationStatus.reason is TerminationStatus.Reason's name; a system failure is FAILED", () => {
  const cases: [string, string][] = [
    ["DEADLINE_TIMEOUT_EXCEEDED", "TERMINATION_STATUS_REASON_DEADLINE_TIMEOUT_EXCEEDED"],
    ["KILLED_HOST_MAINTENANCE", "TERMINATION_STATUS_REASON_KILLED_HOST_MAINTENANCE"],
    ["PREEMPTED_RESOURCES", "TERMINATION_STATUS_REASON_PREEMPTED_RESOURCES"],
    ["KILLED_ON_REQUEST", "TERMINATION_STATUS_REASON_KILLED_ON_REQUEST"],
    ["SYSTEM_FAILURE", "TERMINATION_STATUS_REASON_FAILED"],
    ["TERMINATION_STATUS_REASON_KILLED_FOR_UPDATE", "TERMINATION_STATUS_REASON_KILLED_FOR_UPDATE"],
    ["SOMETHING_ELSE", "TERMINATION_STATUS_REASON_INVALID"],
  ];
  assert.deepEqual(cases.map(([r]) => [r, terminationReasonName(r)]), cases);
});

/** A job of two RUNNING tasks with CONSTRAINT and a non-preemptible policy, spread. */
function runningJob(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 2, placementStrategy: "SPREAD_JOB", task: TASK });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.replies();
  return rig;
}

function body(rig: JobmgrRig): Body {
  const [r] = rig.replies();
  assert.ok(r, "expected a reply");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.body as Body;
}

function assertV0Names(config: Body, where: string): void {
  assert.deepEqual(config.constraint, CONSTRAINT_JSON, `${where}: constraint`);
  assert.deepEqual(
    config.preemptionPolicy,
    { type: "TYPE_NON_PREEMPTIBLE", killOnPreempt: false },
    `${where}: preemptionPolicy`,
  );
}

Deno.test("JobManager Get and Query answer a job's config in v0's enum names", async () => {
  const rig = runningJob();
  rig.api("job", "Get", { id: { value: JOB_ID } });
  const got = body(rig);
  const configs: [string, Body][] = [
    ["jobInfo.config", (got.jobInfo as Body).config as Body],
    ["config", got.config as Body],
  ];
  for (const [where, config] of configs) {
    assert.equal(config.placementStrategy, "PLACEMENT_STRATEGY_SPREAD_JOB", where);
    assertV0Names(config.defaultConfig as Body, `${where}.defaultConfig`);
  }
  rig.api("job", "Query", { spec: {} });
  await rig.reads();
  const [record] = body(rig).records as Body[];
  assert.equal((record.config as Body).placementStrategy, "PLACEMENT_STRATEGY_SPREAD_JOB");
  assertV0Names((record.config as Body).defaultConfig as Body, "Query records[0].config.defaultConfig");
});

Deno.test("TaskManager Get, List and Query answer task configs in v0's enum names", async () => {
  const rig = runningJob();
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const got = body(rig);
  assertV0Names((got.result as Body).config as Body, "Get result");
  for (const r of got.results as Body[]) assertV0Names(r.config as Body, "Get results");
  rig.api("task", "List", { jobId: { value: JOB_ID } });
  const listed = (body(rig).result as Body).value as Record<string, Body>;
  assert.deepEqual(Object.keys(listed), ["0", "1"]);
  for (const t of Object.values(listed)) assertV0Names(t.config as Body, "List");
  rig.api("task", "Query", { jobId: { value: JOB_ID }, spec: {} });
  await rig.reads();
  const records = body(rig).records as Body[];
  assert.equal(records.length, 2);
  for (const t of records) assertV0Names(t.config as Body, "Query");
});

Deno.test("TaskManager Get: a run killed past sla.maxRunningTime ends with TERMINATION_STATUS_REASON_DEADLINE_TIMEOUT_EXCEEDED", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1, sla: { ...DEFAULT_SLA, maxRunningTime: 60 } });
  rig.launch([0]);
  rig.status(rig.taskId(0), "TASK_RUNNING");
  rig.tick(60_000);
  rig.status(rig.taskId(0), "TASK_KILLED");
  rig.replies();
  rig.api("task", "Get", { jobId: { value: JOB_ID }, instanceId: 0 });
  const runtime = (body(rig).result as Body).runtime as Body;
  assert.equal(runtime.state, "KILLED");
  assert.deepEqual(runtime.terminationStatus, {
    reason: "TERMINATION_STATUS_REASON_DEADLINE_TIMEOUT_EXCEEDED",
  });
  // The record keeps its own name.
  assert.equal(rig.task(0).terminationReason, "DEADLINE_TIMEOUT_EXCEEDED");
});
