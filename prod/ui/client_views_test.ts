/**
 * A job's view: its secrets by path and id (v0 Get's or v1alpha GetJob's shape), and only when it has any; its
 * configuration's description and instance overrides; its actions, each disabled one saying why, and what Stop
 * does to a workflow in progress.
 */
import assert from "node:assert/strict";
import type { JobInfoJson, SecretJson, Snapshot, UiAction, UpdateInfoJson } from "./api_types.ts";
import { instanceRanges } from "./client_job_config.ts";
import { parseTaskListQuery, TaskFilter } from "./client_tasks.ts";
import { jobView, secretsView, workflowActions } from "./client_views.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

const JOB: JobInfoJson = {
  id: { value: "j1" },
  config: { name: "web", type: "BATCH", instanceCount: 2 },
  runtime: { state: "RUNNING", goalState: "SUCCEEDED", taskStats: { RUNNING: 2 } },
};

/** The job's page for a snapshot whose Get answered `secrets`. */
function page(secrets: SecretJson[] | undefined): FakeElement {
  const snap: Snapshot = { job: { info: JOB, secrets, updates: [] } };
  const filter = new TaskFilter(() => {});
  return fake(
    jobView(snap, "j1", () => {}, { open: new Set(), toggle: () => {} }, parseTaskListQuery(""), filter.form),
  );
}

const rowsOf = (section: FakeElement) =>
  section.select("tbody")[0].select("tr").map((tr) => tr.select("td").map((td) => td.textContent));

Deno.test("a job's secrets are listed by path with their ids, after its configuration", () => {
  const v = page([
    { id: { value: "5c1e9d9a-0000-4000-8000-000000000001" }, path: "/etc/app/token" },
    { id: { value: "db-password" }, path: "/etc/app/db" },
  ]);
  const section = v.select("section[id=secrets]")[0];
  assert.ok(section, "the job view has a Secrets section");
  assert.equal(section.select("h3")[0].textContent, "Secrets");
  assert.deepEqual(section.select("th").map((th) => th.textContent), ["Path", "Secret ID"]);
  assert.deepEqual(rowsOf(section), [
    ["/etc/app/db", "db-password"],
    ["/etc/app/token", "5c1e9d9a-0000-4000-8000-000000000001"],
  ]);
  assert.match(section.textContent, /Their data is not shown/);
  // Right after the configuration's facts.
  const headings = v.select("h3").map((h3) => h3.textContent);
  assert.deepEqual(headings.slice(0, 3), ["Configuration", "Secrets", "Workflow"]);
});

Deno.test("v1alpha's secretId is read as v0's id", () => {
  const section = fake(secretsView([{ secretId: { value: "s-1" }, path: "certs/ca.pem" }]) ?? undefined);
  assert.deepEqual(rowsOf(section), [["certs/ca.pem", "s-1"]]);
  assert.deepEqual(rowsOf(fake(secretsView([{ path: "/x" }]) ?? undefined)), [["/x", "—"]]);
});

Deno.test("a job without secrets has no Secrets section", () => {
  for (const secrets of [undefined, []]) {
    const v = page(secrets);
    assert.equal(v.select("section[id=secrets]").length, 0);
    assert.ok(!v.select("h3").some((h3) => h3.textContent === "Secrets"));
    assert.ok(v.select("h3").some((h3) => h3.textContent === "Configuration"), "the job is shown");
  }
});

/** The job page's action button labelled `label`, for a job in `state` with `goalState`. */
function button(label: string, runtime: JobInfoJson["runtime"], type = "BATCH"): FakeElement {
  const info: JobInfoJson = { ...JOB, config: { ...JOB.config, type }, runtime };
  const snap: Snapshot = { job: { info, updates: [] } };
  const v = fake(
    jobView(
      snap,
      "j1",
      () => {},
      { open: new Set(), toggle: () => {} },
      parseTaskListQuery(""),
      new TaskFilter(() => {}).form,
    ),
  );
  const found = v.select(`button[data-action=${label}]`);
  assert.equal(found.length, 1, `one ${label} button`);
  return found[0];
}

const shown = (b: FakeElement) => ({
  disabled: b.getAttribute("aria-disabled") === "true",
  title: b.getAttribute("title"),
});

Deno.test("Start is disabled, saying why, on a batch job that ended FAILED or SUCCEEDED without a stop", () => {
  // The API answers Start on such a job with no instance started and leaves it as it is.
  for (const state of ["FAILED", "SUCCEEDED"]) {
    assert.deepEqual(shown(button("Start job", { state, goalState: "SUCCEEDED" })), {
      disabled: true,
      title: `Batch job has ended (${state}) and was not stopped: Start starts stopped tasks only, ` +
        "so it would start none",
    });
  }
  // Stopped ones (goal KILLED) run again on Start, whatever state their tasks ended in.
  for (const state of ["KILLED", "FAILED", "SUCCEEDED"]) {
    assert.deepEqual(shown(button("Start job", { state, goalState: "KILLED" })), {
      disabled: false,
      title: undefined,
    });
  }
  // A job still running, and other types, keep it.
  assert.equal(shown(button("Start job", { state: "RUNNING", goalState: "SUCCEEDED" })).disabled, false);
  assert.equal(
    shown(button("Start job", { state: "FAILED", goalState: "RUNNING" }, "SERVICE")).disabled,
    false,
  );
});

Deno.test("Stop is disabled, saying why, on a job that has ended or is being stopped", () => {
  assert.deepEqual(shown(button("Stop job", { state: "FAILED", goalState: "SUCCEEDED" })), {
    disabled: true,
    title: "Job has ended (FAILED): there is nothing to stop",
  });
  assert.deepEqual(shown(button("Stop job", { state: "KILLING", goalState: "KILLED" })), {
    disabled: true,
    title: "Job is being stopped already (goal KILLED)",
  });
  assert.deepEqual(shown(button("Stop job", { state: "RUNNING", goalState: "SUCCEEDED" })), {
    disabled: false,
    title: undefined,
  });
});

Deno.test("Stop is enabled on a service in a crash loop: FAILED while its goal RUNNING restarts it", () => {
  // It has not ended: the job manager restarts its failed tasks, and stopping it is what ends it (as the
  // CLI's `job stop` does).
  for (const state of ["FAILED", "SUCCEEDED", "KILLED"]) {
    assert.deepEqual(shown(button("Stop job", { state, goalState: "RUNNING" }, "SERVICE")), {
      disabled: false,
      title: undefined,
    });
  }
  // Ended with its goal: nothing to stop.
  for (const goalState of ["SUCCEEDED", "FAILED", "KILLED"]) {
    assert.equal(
      shown(button("Stop job", { state: "FAILED", goalState }, "SERVICE")).disabled,
      true,
      `FAILED, goal ${goalState}`,
    );
  }
});

Deno.test("Start is disabled, saying why, when every task is already running or on its way", () => {
  const service = (taskStats: Record<string, number>, goalState = "RUNNING") =>
    shown(button("Start job", { state: "RUNNING", goalState, taskStats }, "SERVICE"));
  assert.deepEqual(service({ RUNNING: 2 }), {
    disabled: true,
    title: "Every task is running or starting already (RUNNING 2): Start starts stopped tasks only, so it " +
      "would start none",
  });
  assert.equal(service({ RUNNING: 1, LAUNCHED: 1 }).disabled, true);
  // A task stopped, ended or not yet counted leaves Start something to start.
  assert.equal(service({ RUNNING: 1, KILLED: 1 }).disabled, false);
  assert.equal(service({ RUNNING: 1, FAILED: 1 }).disabled, false);
  assert.equal(service({ RUNNING: 1 }).disabled, false, "one of the two instances has no task counted");
  assert.equal(service({ RUNNING: 2 }, "KILLED").disabled, false, "a stop asked for: Start undoes it");
});

/** The job page's actions for `info`, with `updates`, as the buttons ask for them. */
function asked(info: JobInfoJson, updates: UpdateInfoJson[]): UiAction[] {
  const out: UiAction[] = [];
  const v = fake(
    jobView(
      { job: { info, updates } },
      "j1",
      (a) => out.push(a),
      { open: new Set(), toggle: () => {} },
      parseTaskListQuery(""),
      new TaskFilter(() => {}).form,
    ),
  );
  // A disabled one asks for nothing (see actionButton).
  for (const b of v.select("button.action")) b.click();
  return out;
}

const workflow = (state: string): UpdateInfoJson => ({
  updateId: { value: "u-7" },
  jobId: { value: "j1" },
  type: "UPDATE",
  status: { state, numTasksDone: 1, numTasksFailed: 0, numTasksRemaining: 2 },
});

Deno.test("Stop job's question names a workflow in progress and says Stop aborts it", () => {
  for (const state of ["ROLLING_FORWARD", "ROLLING_BACKWARD", "PAUSED", "INITIALIZED"]) {
    const stop = asked(JOB, [workflow(state)]).find((a) => a.label === "Stop job")!;
    assert.equal(
      stop.question,
      "Stop every task of job web (j1)? Running tasks get SIGTERM, then SIGKILL after their grace period. " +
        `Its UPDATE workflow u-7 (${state}, 1 of 3 instances done) will be aborted.`,
    );
  }
  // One that has ended is not mentioned.
  const stop = asked(JOB, [workflow("SUCCEEDED")]).find((a) => a.label === "Stop job")!;
  assert.equal(
    stop.question,
    "Stop every task of job web (j1)? Running tasks get SIGTERM, then SIGKILL after their grace period.",
  );
});

Deno.test("a disabled action stays in the Tab order, described by why it is disabled; pressing it asks nothing", () => {
  const asked: UiAction[] = [];
  // Ended, and stopped: Stop has nothing to stop, Start starts it again.
  const info: JobInfoJson = { ...JOB, runtime: { state: "FAILED", goalState: "KILLED" } };
  const v = fake(
    jobView(
      { job: { info, updates: [] } },
      "j1",
      (a) => asked.push(a),
      { open: new Set(), toggle: () => {} },
      parseTaskListQuery(""),
      new TaskFilter(() => {}).form,
    ),
  );
  const stop = v.select("button[data-action=Stop job]")[0];
  // `disabled` would take it out of the Tab order: a keyboard user would never reach it to learn why.
  assert.equal(stop.attributes.has("disabled"), false);
  assert.equal(stop.getAttribute("aria-disabled"), "true");
  const described = v.findAll((el) => el.id !== "" && el.id === stop.getAttribute("aria-describedby"));
  assert.equal(described.length, 1, "its description is in the page");
  assert.equal(described[0].textContent, "Job has ended (FAILED): there is nothing to stop");
  assert.ok(described[0].hasClass("why"), "shown beside the button while it has the focus");
  assert.equal(
    stop.getAttribute("title"),
    "Job has ended (FAILED): there is nothing to stop",
    "and its tooltip",
  );
  stop.click();
  assert.equal(asked.length, 0, "pressing it does nothing");
  // An enabled one is neither marked nor described, and asks.
  const start = v.select("button[data-action=Start job]")[0];
  assert.equal(start.getAttribute("aria-disabled"), undefined);
  assert.equal(start.getAttribute("aria-describedby"), undefined);
  start.click();
  assert.deepEqual(asked.map((a) => a.label), ["Start job"]);
});

Deno.test("every disabled workflow button says why", () => {
  const why = (state: string) =>
    workflowActions(workflow(state)).map((a) => a.disabled ? a.disabledWhy : "ok");
  assert.deepEqual(why("ROLLING_FORWARD"), [
    "ok",
    "Workflow is not paused (ROLLING_FORWARD): there is nothing to resume",
    "ok",
  ]);
  assert.deepEqual(why("PAUSED"), ["Workflow is paused already", "ok", "ok"]);
  assert.deepEqual(why("SUCCEEDED"), [
    "Workflow has ended (SUCCEEDED)",
    "Workflow has ended (SUCCEEDED)",
    "Workflow has ended (SUCCEEDED)",
  ]);
});

Deno.test("the configuration shows the job's description and which instances override the default, in what", () => {
  const info: JobInfoJson = {
    ...JOB,
    config: {
      ...JOB.config,
      instanceCount: 10,
      description: "Serves the web tier.\nPaged on failure.",
      defaultConfig: { command: { value: "serve" }, killGracePeriodSeconds: 10 },
      instanceConfig: {
        "7": { command: { value: "serve --canary" } },
        "0": { command: { value: "serve --canary" } },
        "1": { command: { value: "serve --canary" } },
        "2": { command: { value: "serve --canary" } },
        "5": { name: "web-five", killGracePeriodSeconds: 60 },
        "9": {},
      },
    },
  };
  const v = fake(
    jobView(
      { job: { info, updates: [] } },
      "j1",
      () => {},
      { open: new Set(), toggle: () => {} },
      parseTaskListQuery(""),
      new TaskFilter(() => {}).form,
    ),
  );
  const facts = v.select("dl")[0];
  const value = (label: string) => {
    const dts = facts.select("dt");
    const i = dts.findIndex((dt) => dt.textContent === label);
    assert.ok(i >= 0, `the configuration has ${label}`);
    return facts.select("dd")[i].textContent;
  };
  assert.equal(value("Description"), "Serves the web tier.\nPaged on failure.");
  assert.equal(value("Kill grace period"), "10 s");
  const overrides = v.select("section[id=instance-overrides]")[0];
  assert.ok(overrides, "a section of instance overrides");
  assert.equal(overrides.select("h4")[0].textContent, "Instance overrides (5 of 10 instances)");
  assert.deepEqual(rowsOf(overrides), [
    ["0–2, 7", "command: serve --canary"],
    ["5", "kill grace period: 60 sname: web-five"],
  ]);
  assert.deepEqual(overrides.select("li").map((li) => li.textContent), [
    "command: serve --canary",
    "kill grace period: 60 s",
    "name: web-five",
  ]);
  // A job without overrides says every instance runs the default.
  assert.match(
    page(undefined).select("p[id=instance-overrides]")[0].textContent,
    /^Every instance runs the default/,
  );
  assert.equal(instanceRanges([4, 0, 1, 2, 3, 9, 11, 12]), "0–4, 9, 11, 12");
});
