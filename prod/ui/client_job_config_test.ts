/**
 * A job's Configuration section: the instances that still run another config version than the one it shows,
 * and what places the tasks and what they keep (volume, placement constraint, health check, ports).
 */
import assert from "node:assert/strict";
import type { ConstraintJson, JobInfoJson, Snapshot, TaskInfoJson, TaskListQuery } from "./api_types.ts";
import { configView, constraintText, healthCheckText, taskFieldText } from "./client_job_config.ts";
import { parseTaskListQuery, TaskFilter, taskListHash } from "./client_tasks.ts";
import { jobView } from "./client_views.ts";
import { fake, type FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

/** A service of `instanceCount` instances whose last update, to config version 5, was aborted. */
function job(instanceCount = 10): JobInfoJson {
  return {
    id: { value: "j1" },
    config: {
      name: "web",
      type: "SERVICE",
      instanceCount,
      defaultConfig: { command: { value: "serve --v5" } },
    },
    runtime: { state: "RUNNING", goalState: "RUNNING", configurationVersion: 5, taskStats: { RUNNING: 10 } },
  };
}

function task(instanceId: number, configVersion: number): TaskInfoJson {
  return {
    instanceId,
    config: { name: "web" },
    runtime: { state: "RUNNING", goalState: "RUNNING", configVersion, desiredConfigVersion: configVersion },
  };
}

/** The job's page with `records` as its tasks table's page for `q`, out of `total` tasks that match. */
function page(records: TaskInfoJson[], total = records.length, q = parseTaskListQuery("")): FakeElement {
  const snap: Snapshot = {
    job: {
      info: job(),
      updates: [],
      tasks: { records, pagination: { offset: (q.page - 1) * q.size, limit: q.size, total } },
      tasksFor: taskListHash("j1", q),
    },
  };
  const rows = { open: new Set<number>(), toggle: () => {} };
  return fake(jobView(snap, "j1", () => {}, rows, q, new TaskFilter(() => {}).form));
}

const note = (v: FakeElement) => v.select("p[id=config-versions]")[0]?.textContent;

Deno.test("the configuration says which instances run another config version than the one it shows", () => {
  // Instance 0 took version 5 before the update was aborted; 1 to 9 still run version 2.
  const tasks = [task(0, 5), ...Array.from({ length: 9 }, (_, i) => task(i + 1, 2))];
  const v = page(tasks);
  assert.equal(note(v), "Instances 1–9 run config version 2, not the job's config version 5 shown here.");
  // Under the section's heading, above the facts that show version 5.
  const config = v.select("div.config")[0];
  assert.deepEqual(config.children.slice(0, 2).map((c) => (c as FakeElement).tag), ["p", "dl"]);

  // Several older versions, each named.
  assert.equal(
    note(page([task(0, 5), task(1, 2), task(2, 2), task(3, 4)])),
    "Instances 1, 2 run config version 2; instance 3 runs config version 4, not the job's config version 5 " +
      "shown here.",
  );
  // Every task on the job's version: nothing to say.
  assert.equal(note(page([task(0, 5), task(1, 5)])), undefined);
});

Deno.test("a page of the tasks, or a filtered one, is named as such: other tasks may run another version", () => {
  const text =
    "Of the tasks on the tasks table's page below, instances 1–9 run config version 2, not the job's " +
    "config version 5 shown here. Other pages may hold more.";
  const tasks = [task(0, 5), ...Array.from({ length: 9 }, (_, i) => task(i + 1, 2))];
  assert.equal(note(page(tasks, 150)), text, "one page of 150 tasks");
  const running: TaskListQuery = parseTaskListQuery("state=RUNNING");
  assert.equal(note(page(tasks, 10, running)), text, "the tasks in one state");
});

Deno.test("the configuration shows the volume, placement constraint, health check and ports the job sets", () => {
  const info = job();
  info.config.defaultConfig = {
    command: { value: "serve" },
    volume: { containerPath: "/data", sizeMB: 1024 },
    constraint: {
      type: "LABEL_CONSTRAINT",
      labelConstraint: {
        kind: "HOST",
        condition: "CONDITION_EQUAL",
        label: { key: "rack", value: "zeta" },
        requirement: 1,
      },
    },
    healthCheck: {
      enabled: true,
      type: "COMMAND",
      commandCheck: { command: "curl -f localhost:8080/health" },
      initialIntervalSecs: 15,
      intervalSecs: 10,
      maxConsecutiveFailures: 3,
      timeoutSecs: 20,
    },
    ports: [{ name: "http", value: 0, envName: "PORT_HTTP" }, { name: "admin", value: 8081 }],
  };
  const facts = (i: JobInfoJson) => {
    const dl = fake(configView(i, "/web")).select("dl")[0];
    const dd = dl.select("dd");
    return new Map(dl.select("dt").map((dt, k) => [dt.textContent, dd[k].textContent]));
  };
  const shown = facts(info);
  assert.equal(shown.get("Persistent volume"), "/data, 1024 MB");
  assert.equal(shown.get("Placement constraint"), "rack = zeta (host)");
  assert.equal(
    shown.get("Health check"),
    "command curl -f localhost:8080/health, every 10 s after 15 s, timeout 20 s, unhealthy after 3 failures " +
      "in a row",
  );
  assert.equal(shown.get("Ports"), "http: dynamic (env PORT_HTTP), admin: 8081");
  // A job without them has no such rows.
  const plain = facts(job());
  for (const label of ["Persistent volume", "Placement constraint", "Health check", "Ports"]) {
    assert.equal(plain.has(label), false, label);
  }
});

const label = (kind: string, key: string, value: string, condition: string, requirement?: number) => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind, condition: `CONDITION_${condition}`, label: { key, value }, requirement },
});

Deno.test("a placement constraint reads as its labels, kinds, conditions and requirements, AND and OR nested", () => {
  assert.equal(constraintText(label("HOST", "rack", "zeta", "EQUAL", 1)), "rack = zeta (host)");
  // Proto3 JSON leaves a requirement of 0 out.
  assert.equal(constraintText(label("HOST", "rack", "zeta", "EQUAL")), "rack ≠ zeta (host)");
  assert.equal(
    constraintText(label("TASK", "app", "web", "LESS_THAN", 1)),
    "no task with app = web on the host (task)",
  );
  assert.equal(
    constraintText(label("TASK", "app", "web", "LESS_THAN", 3)),
    "fewer than 3 tasks with app = web on the host (task)",
  );
  assert.equal(
    constraintText(label("HOST", "gpus", "yes", "GREATER_THAN", 2)),
    "more than 2 of gpus = yes on the host (host)",
  );
  const tree: ConstraintJson = {
    type: "AND_CONSTRAINT",
    andConstraint: {
      constraints: [
        {
          type: "OR_CONSTRAINT",
          orConstraint: {
            constraints: [
              label("HOST", "rack", "zeta", "EQUAL", 1),
              label("HOST", "rack", "eta", "EQUAL", 1),
            ],
          },
        },
        label("TASK", "app", "web", "EQUAL"),
      ],
    },
  };
  assert.equal(
    constraintText(tree),
    "(rack = zeta (host) or rack = eta (host)) and no task with app = web on the host (task)",
  );
  // An instance's override of it reads the same way.
  assert.equal(
    taskFieldText("constraint", tree.andConstraint!.constraints![1]),
    "placement constraint: no task with app = web on the host (task)",
  );
  assert.equal(taskFieldText("volume", { containerPath: "/data", sizeMB: 10 }), "volume: /data, 10 MB");
});

Deno.test("a health check that is not enabled reads as disabled; an HTTP one names its port and path", () => {
  assert.equal(healthCheckText({ type: "COMMAND", commandCheck: { command: "true" } }), "disabled");
  assert.equal(
    healthCheckText({
      enabled: true,
      type: "HTTP",
      httpCheck: { port: 8080, path: "/health" },
      intervalSecs: 5,
    }),
    "HTTP GET on port 8080, path /health, every 5 s",
  );
});
