/** A job's view: its secrets by path and id (v0 Get's or v1alpha GetJob's shape), and only when it has any. */
import assert from "node:assert/strict";
import type { JobInfoJson, SecretJson, Snapshot } from "./api_types.ts";
import { parseTaskListQuery, TaskFilter } from "./client_tasks.ts";
import { jobView, secretsView } from "./client_views.ts";
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
  disabled: b.attributes.has("disabled"),
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
