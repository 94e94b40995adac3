/** Each instance's progress in a job's workflow: what the page asks for, and the view it builds. */
import assert from "node:assert/strict";
import type { JobInfoJson, RowToggle, UpdateInfoJson, WorkflowInfoJson } from "./api_types.ts";
import {
  InstanceProgress,
  instanceProgressRequest,
  instanceProgressView,
  instanceStepsLimit,
  instanceTable,
} from "./client_workflow.ts";
import { parseTaskListQuery, TaskFilter } from "./client_tasks.ts";
import { jobView } from "./client_views.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const T0 = Date.parse("2024-05-01T10:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

/** A workflow whose instance `id` went through `states` (oldest first), a second apart. */
function workflow(instances: [number, string[]][], state = "ROLLING_FORWARD"): WorkflowInfoJson {
  return {
    workflowId: { value: "wf-1" },
    status: { type: "WORKFLOW_TYPE_UPDATE", state: `WORKFLOW_STATE_${state}` },
    instanceEvents: instances.map(([instanceId, states]) => ({
      instanceId,
      events: states.map((s, i) => ({
        type: "WORKFLOW_TYPE_UPDATE",
        state: `WORKFLOW_STATE_${s}`,
        timestamp: at(instanceId * 10 + i),
      })).reverse(),
    })),
  };
}

const job = (instanceCount = 3): JobInfoJson => ({
  id: { value: "j1" },
  config: { name: "web", type: "SERVICE", instanceCount },
  runtime: { state: "RUNNING", goalState: "RUNNING" },
});

const update: UpdateInfoJson = {
  updateId: { value: "wf-1" },
  jobId: { value: "j1" },
  type: "UPDATE",
  status: { state: "ROLLING_FORWARD", numTasksDone: 1, numTasksFailed: 1, numTasksRemaining: 1 },
};

function toggles(open: number[] = []): RowToggle & { toggled: number[] } {
  const toggled: number[] = [];
  return { open: new Set(open), toggle: (i) => toggled.push(i), toggled };
}

const rowsOf = (view: FakeElement) => view.select("tr.instance");
const cells = (row: FakeElement) => row.select("td").map((td) => td.textContent);

const ROLLING = workflow([
  [0, ["INITIALIZED", "ROLLING_FORWARD", "SUCCEEDED"]],
  [1, ["INITIALIZED", "ROLLING_FORWARD", "FAILED"]],
  [2, ["INITIALIZED", "ROLLING_FORWARD"]],
]);

Deno.test("the page asks for the newest workflow with its steps, fewer of them per instance for a big job", () => {
  assert.deepEqual(instanceProgressRequest("j1", 3), {
    jobId: { value: "j1" },
    updatesLimit: 1,
    instanceEvents: true,
    instanceEventsLimit: InstanceProgress.MAX_STEPS,
  });
  assert.deepEqual(
    [0, 1, 1000, 2000, 5000, 100_000].map(instanceStepsLimit),
    [10, 10, 10, 5, 2, 2],
  );
});

Deno.test("instances are listed in order with their latest state and when they got there; failed ones counted and named", () => {
  const t = instanceTable(ROLLING);
  assert.deepEqual(t.rows.map((r) => [r.instanceId, r.state, r.at]), [
    [0, "SUCCEEDED", at(2)],
    [1, "FAILED", at(12)],
    [2, "ROLLING_FORWARD", at(21)],
  ]);
  assert.deepEqual(t.rows[0].steps.map((s) => s.state), ["SUCCEEDED", "ROLLING_FORWARD", "INITIALIZED"]);
  assert.equal(t.rows[0].steps[0].type, "UPDATE");
  assert.deepEqual(t.counts, { SUCCEEDED: 1, FAILED: 1, ROLLING_FORWARD: 1 });
  assert.deepEqual(t.failed, [1]);
  assert.equal(t.capped, false);
  // START and STOP come as enum numbers; an instance without steps has no state.
  const start = instanceTable({
    status: { state: "WORKFLOW_STATE_SUCCEEDED" },
    instanceEvents: [{ instanceId: 4, events: [{ type: 3, state: "WORKFLOW_STATE_SUCCEEDED" }] }, {
      instanceId: 5,
    }],
  });
  assert.equal(start.rows[0].steps[0].type, "START");
  assert.deepEqual(start.rows.map((r) => r.state), ["SUCCEEDED", undefined]);
  assert.deepEqual(start.counts, { SUCCEEDED: 1 });
});

Deno.test("past the row cap, failed instances come first, then those in flight, then the rest by id", () => {
  const w = workflow([
    [0, ["INITIALIZED", "ROLLING_FORWARD", "SUCCEEDED"]],
    [1, ["INITIALIZED"]],
    [2, ["INITIALIZED", "ROLLING_FORWARD"]],
    [3, ["INITIALIZED", "ROLLING_FORWARD", "FAILED"]],
    [4, ["INITIALIZED"]],
  ]);
  const t = instanceTable(w, 3);
  assert.deepEqual(t.rows.map((r) => r.instanceId), [3, 2, 0]);
  assert.equal(t.total, 5);
  assert.equal(t.capped, true);
  assert.deepEqual(t.counts, { SUCCEEDED: 1, INITIALIZED: 2, ROLLING_FORWARD: 1, FAILED: 1 });
});

Deno.test("a batch job without workflows shows nothing new; a failed load says so", () => {
  assert.equal(instanceProgressView(job(), undefined, undefined, toggles()), undefined);
  assert.equal(instanceProgressView(job(), [], undefined, toggles()), undefined);
  const failed = fake(instanceProgressView(job(), [update], undefined, toggles()));
  assert.equal(failed.id, "instance-progress");
  assert.match(failed.textContent, /Instance progress could not be loaded \(see the error above\)/);
  assert.equal(rowsOf(failed).length, 0);
  // In the job's page: after the workflow, for a job with workflows only.
  const page = (updates?: UpdateInfoJson[]) =>
    fake(
      jobView(
        { job: { info: job(), updates, workflows: [ROLLING] } },
        "j1",
        () => {},
        toggles(),
        parseTaskListQuery(""),
        new TaskFilter(() => {}).form,
      ),
    );
  assert.equal(page([]).select("section[id=instance-progress]").length, 0);
  assert.equal(page([update]).select("section[id=instance-progress]").length, 1);
});

Deno.test("the view: a row per instance with its state badge and time, failed rows marked, counts above", () => {
  const view = fake(instanceProgressView(job(), [update], [ROLLING], toggles()));
  const line = view.select("p.workflow-line")[0];
  assert.equal(line.getAttribute("data-workflow-id"), "wf-1");
  assert.match(line.textContent, /^Workflow wf-1 \(UPDATE\)ROLLING_FORWARD· instances by state:/);
  assert.deepEqual(line.select("span.stat").map((s) => s.textContent), [
    "SUCCEEDED 1",
    "FAILED 1",
    "ROLLING_FORWARD 1",
  ]);
  const rows = rowsOf(view);
  assert.deepEqual(rows.map((r) => r.select("span.badge")[0].getAttribute("data-state")), [
    "SUCCEEDED",
    "FAILED",
    "ROLLING_FORWARD",
  ]);
  assert.deepEqual(
    cells(rows[0]).map((c, i) => i === 2 ? /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/.test(c) : c),
    [
      "0",
      "SUCCEEDED",
      true,
      "▸ 3 steps",
    ],
  );
  assert.deepEqual(rows.map((r) => r.hasClass("failed")), [false, true, false]);
  assert.equal(view.select("p[id=failed-instances]")[0].textContent, "1 instance failed: 1");
  assert.equal(view.select("p[id=instances-capped]").length, 0, "all rows fit");
  assert.equal(view.select("tr.steps").length, 0, "steps stay closed until asked for");
});

Deno.test("a row opens to its steps, newest first; the button asks the app to toggle it", () => {
  const t = toggles([1]);
  const view = fake(instanceProgressView(job(), [update], [ROLLING], t));
  const steps = view.select("tr.steps");
  assert.equal(steps.length, 1);
  assert.equal(steps[0].getAttribute("data-steps-of"), "1");
  assert.deepEqual(steps[0].select("li").map((li) => li.getAttribute("data-state")), [
    "FAILED",
    "ROLLING_FORWARD",
    "INITIALIZED",
  ]);
  assert.match(steps[0].select("li")[0].textContent, /^FAILED \d{4}-.* UTC UPDATE$/);
  assert.doesNotMatch(steps[0].textContent, /older ones are not loaded/);
  const buttons = view.select("button.steps-toggle");
  assert.deepEqual(buttons.map((b) => b.getAttribute("aria-expanded")), ["false", "true", "false"]);
  assert.equal(buttons[1].textContent, "▾ 3 steps");
  buttons[2].click();
  assert.deepEqual(t.toggled, [2]);
});

Deno.test("a job of thousands draws the row cap and says so; steps cut at the limit say so", () => {
  const n = 5000;
  const instances: [number, string[]][] = Array.from({ length: n }, (_, i) => [
    i,
    i === 4321
      ? ["INITIALIZED", "ROLLING_FORWARD", "FAILED"]
      : ["INITIALIZED", "ROLLING_FORWARD", "SUCCEEDED"],
  ]);
  const view = fake(instanceProgressView(job(n), [update], [workflow(instances)], toggles([4321])));
  const rows = rowsOf(view);
  assert.equal(rows.length, InstanceProgress.MAX_ROWS);
  assert.equal(rows[0].getAttribute("data-instance"), "4321", "the failed instance is drawn first");
  assert.equal(rows[1].getAttribute("data-instance"), "0");
  assert.match(
    view.select("p[id=instances-capped]")[0].textContent,
    /^Showing 200 of 5000 instances: failed ones first/,
  );
  assert.deepEqual(view.select("span.stat").map((s) => s.textContent), ["SUCCEEDED 4999", "FAILED 1"]);
  // 5000 instances get 2 steps each: an instance with more says its older ones are not loaded.
  assert.match(view.select("tr.steps")[0].textContent, /The newest 2 steps; older ones are not loaded/);
  const many = Array.from({ length: 60 }, (_, i): [number, string[]] => [i, ["FAILED"]]);
  const failed = fake(instanceProgressView(job(60), [update], [workflow(many)], toggles()));
  assert.match(
    failed.select("p[id=failed-instances]")[0].textContent,
    /^60 instances failed: 0, 1, .*, 49 and 10 more$/,
  );
});

Deno.test("the workflow's own states show as its history, oldest first, each with its time", () => {
  const w: WorkflowInfoJson = {
    ...ROLLING,
    events: ["INITIALIZED", "ROLLING_FORWARD", "PAUSED", "ROLLING_FORWARD"].map((state, i) => ({
      type: "WORKFLOW_TYPE_UPDATE",
      state: `WORKFLOW_STATE_${state}`,
      timestamp: at(i * 60),
    })).reverse(),
  };
  const view = fake(instanceProgressView(job(), [update], [w], toggles()));
  const history = view.select("p[id=workflow-history]")[0];
  assert.deepEqual(history.select("span.badge").map((b) => b.getAttribute("data-state")), [
    "INITIALIZED",
    "ROLLING_FORWARD",
    "PAUSED",
    "ROLLING_FORWARD",
  ]);
  assert.match(history.textContent, /^History: INITIALIZED \S+ \S+ UTC → ROLLING_FORWARD /);
  const none = fake(instanceProgressView(job(), [update], [ROLLING], toggles()));
  assert.equal(none.select("p[id=workflow-history]").length, 0, "a record stored before states were kept");
});
