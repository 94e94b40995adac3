/** The v1alpha JobService answers in v1alpha's enum names (api/v1alpha protos); v0 responses keep v0's. */
import assert from "node:assert/strict";
import type { Constraint } from "../model/config_types.ts";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { entityVersion } from "./api_json.ts";
import { JOB_SERVICE, TASK_SERVICE } from "./job_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { UPDATE_SERVICE } from "./update_api.ts";
import { jobStateName, POD_STATE_NUMBERS, podSpecJson, podStatsJson } from "./v1alpha_json.ts";

type Json = Record<string, unknown>;

const label = (kind: "TASK" | "HOST", condition: "LESS_THAN" | "EQUAL" | "GREATER_THAN"): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind, condition, label: { key: "zone", value: "a" }, requirement: 1 },
});

/** AND(host EQUAL, OR(pod LESS_THAN, pod GREATER_THAN)): every v0 constraint enum value once. */
const CONSTRAINT: Constraint = {
  type: "AND_CONSTRAINT",
  andConstraint: {
    constraints: [label("HOST", "EQUAL"), {
      type: "OR_CONSTRAINT",
      orConstraint: { constraints: [label("TASK", "LESS_THAN"), label("TASK", "GREATER_THAN")] },
    }],
  },
};

const HEALTH = {
  enabled: true,
  initialIntervalSecs: 15,
  intervalSecs: 10,
  maxConsecutiveFailures: 3,
  timeoutSecs: 20,
  type: "HTTP" as const,
  httpCheck: { scheme: "http", port: 8080, path: "/health" },
};

/** A service of 2 instances with a constraint and an HTTP health check, both RUNNING. */
function service(): JobmgrRig {
  const rig = runningService(2, { job: { task: { constraint: CONSTRAINT, healthCheck: HEALTH } } });
  rig.transport.drain();
  return rig;
}

async function call(rig: JobmgrRig, service: string, method: string, body: Json): Promise<Json> {
  rig.call(service, method, body);
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, `${method}: ${JSON.stringify(reply.error)}`);
  return reply.body as Json;
}

const jobId = { value: JOB_ID };

/** The job's entity version, which a JobService write must name. */
const version = (rig: JobmgrRig) => ({ value: entityVersion(rig.job()) });

/** A stats map without its zero counts (the runtime keeps a state's count once it had one). */
const counted = (stats: unknown) =>
  Object.fromEntries(Object.entries(stats as Json).filter(([, n]) => n !== 0));

Deno.test("GetJob's status and spec carry v1alpha enum names", async () => {
  const rig = service();
  const { jobInfo } = await call(rig, STATELESS_SERVICE, "GetJob", { jobId }) as {
    jobInfo: { status: Json; spec: { defaultSpec: { constraint: Json; containers: Json[] } } };
  };
  assert.equal(jobInfo.status.state, "JOB_STATE_RUNNING");
  assert.equal(jobInfo.status.desiredState, "JOB_STATE_RUNNING");
  assert.deepEqual(counted(jobInfo.status.podStats), { POD_STATE_RUNNING: 2 });
  assert.ok(Object.keys(jobInfo.status.podStats as Json).every((s) => s.startsWith("POD_STATE_")));
  const v1Label = (kind: string, condition: string) => ({
    type: "CONSTRAINT_TYPE_LABEL",
    labelConstraint: { kind, condition, label: { key: "zone", value: "a" }, requirement: 1 },
  });
  assert.deepEqual(jobInfo.spec.defaultSpec.constraint, {
    type: "CONSTRAINT_TYPE_AND",
    andConstraint: {
      constraints: [v1Label("LABEL_CONSTRAINT_KIND_HOST", "LABEL_CONSTRAINT_CONDITION_EQUAL"), {
        type: "CONSTRAINT_TYPE_OR",
        orConstraint: {
          constraints: [
            v1Label("LABEL_CONSTRAINT_KIND_POD", "LABEL_CONSTRAINT_CONDITION_LESS_THAN"),
            v1Label("LABEL_CONSTRAINT_KIND_POD", "LABEL_CONSTRAINT_CONDITION_GREATER_THAN"),
          ],
        },
      }],
    },
  });
  assert.deepEqual(jobInfo.spec.defaultSpec.containers[0].livenessCheck, {
    ...HEALTH,
    type: "HEALTH_CHECK_TYPE_HTTP",
  });
});

Deno.test("ListJobs, QueryJobs and a workflow's status and info carry v1alpha enum names", async () => {
  const rig = service();
  const { jobs } = await call(rig, STATELESS_SERVICE, "ListJobs", {}) as { jobs: { status: Json }[] };
  assert.deepEqual([jobs[0].status.state, jobs[0].status.desiredState, counted(jobs[0].status.podStats)], [
    "JOB_STATE_RUNNING",
    "JOB_STATE_RUNNING",
    { POD_STATE_RUNNING: 2 },
  ]);
  const query = await call(rig, STATELESS_SERVICE, "QueryJobs", {
    spec: { jobStates: ["JOB_STATE_RUNNING"] },
  });
  assert.deepEqual((query.records as { status: Json }[]).map((j) => j.status.state), ["JOB_STATE_RUNNING"]);

  await call(rig, STATELESS_SERVICE, "RestartJob", {
    jobId,
    version: version(rig),
    restartSpec: { batchSize: 1 },
  });
  await call(rig, STATELESS_SERVICE, "PauseJobWorkflow", { jobId, version: version(rig) });
  const { jobInfo, workflowInfo } = await call(rig, STATELESS_SERVICE, "GetJob", { jobId }) as {
    jobInfo: { status: { workflowStatus: Json } };
    workflowInfo: { status: Json };
  };
  const names = (s: Json) => [s.type, s.state, s.prevState];
  const paused = ["WORKFLOW_TYPE_RESTART", "WORKFLOW_STATE_PAUSED", "WORKFLOW_STATE_ROLLING_FORWARD"];
  assert.deepEqual(names(jobInfo.status.workflowStatus), paused);
  assert.deepEqual(names(workflowInfo.status), paused);

  const { workflowInfos } = await call(rig, STATELESS_SERVICE, "ListJobWorkflows", { jobId }) as {
    workflowInfos: { workflowId: { value: string }; status: Json; restartSpec: Json }[];
  };
  assert.equal(workflowInfos.length, 1);
  assert.deepEqual(names(workflowInfos[0].status), paused);
  assert.deepEqual(workflowInfos[0].restartSpec, {
    batchSize: 1,
    ranges: [{ from: 0, to: 1 }],
    inPlace: false,
  });
  assert.equal(workflowInfos[0].workflowId.value, rig.job().runtime.updateId);
});

Deno.test("v0 responses keep v0's names: JobManager.Get, TaskManager.List, UpdateService.ListUpdates", async () => {
  const rig = service();
  await call(rig, STATELESS_SERVICE, "RestartJob", {
    jobId,
    version: version(rig),
    restartSpec: { batchSize: 1 },
  });
  await call(rig, STATELESS_SERVICE, "PauseJobWorkflow", { jobId, version: version(rig) });
  const { jobInfo } = await call(rig, JOB_SERVICE, "Get", { id: jobId }) as {
    jobInfo: {
      runtime: Json;
      config: { type: string; defaultConfig: { constraint: Json; healthCheck: Json } };
    };
  };
  assert.equal(jobInfo.runtime.state, "RUNNING");
  assert.equal(jobInfo.runtime.goalState, "RUNNING");
  assert.equal(jobInfo.config.type, "SERVICE");
  assert.equal(jobInfo.config.defaultConfig.constraint.type, "AND_CONSTRAINT");
  assert.equal(jobInfo.config.defaultConfig.healthCheck.type, "HTTP");
  const tasks = await call(rig, TASK_SERVICE, "List", { jobId }) as {
    result: { value: Record<string, { runtime: Json }> };
  };
  assert.deepEqual(Object.values(tasks.result.value).map((t) => t.runtime.goalState), ["RUNNING", "RUNNING"]);
  const { updateInfo } = await call(rig, UPDATE_SERVICE, "ListUpdates", { jobID: jobId }) as {
    updateInfo: { type: string; status: Json }[];
  };
  assert.deepEqual([updateInfo[0].type, updateInfo[0].status.state], ["RESTART", "PAUSED"]);
});

Deno.test("a START workflow, which v1alpha's WorkflowType does not name, shows as Peloton's number, 3", async () => {
  const rig = service();
  await call(rig, TASK_SERVICE, "Stop", { jobId });
  await call(rig, JOB_SERVICE, "Start", { id: jobId, batchSize: 1 });
  const { jobInfo } = await call(rig, STATELESS_SERVICE, "GetJob", { jobId }) as {
    jobInfo: { status: { workflowStatus: Json } };
  };
  assert.equal(jobInfo.status.workflowStatus.type, 3);
  assert.equal(jobInfo.status.workflowStatus.state, "WORKFLOW_STATE_ROLLING_FORWARD");
});

Deno.test("v0's UNKNOWN is v1alpha's INVALID and RESERVED its POD_STATE_RESERVED; a pod's volume has v1alpha's sizeMb", () => {
  assert.equal(jobStateName("UNKNOWN"), "JOB_STATE_INVALID");
  assert.equal(jobStateName("KILLING"), "JOB_STATE_KILLING");
  assert.deepEqual(podStatsJson({ UNKNOWN: 1, RUNNING: 2, RESERVED: 1 }), {
    POD_STATE_INVALID: 1,
    POD_STATE_RUNNING: 2,
    POD_STATE_RESERVED: 1,
  });
  assert.equal(POD_STATE_NUMBERS.indexOf("RESERVED"), 17, "pod.proto's POD_STATE_RESERVED = 17");
  assert.deepEqual(podSpecJson({ containers: [], volume: { containerPath: "data", sizeMB: 8 } }), {
    containers: [],
    volume: { containerPath: "data", sizeMb: 8 },
  });
});

Deno.test("a v1alpha summary carries the job's SLA as an SlaSpec; v0's summary keeps its SlaConfig", async () => {
  const rig = new JobmgrRig();
  const sla = {
    priority: 7,
    preemptible: true,
    revocable: true,
    // A service's running limits must be 0.
    maximumRunningInstances: 0,
    minimumRunningInstances: 0,
    maxRunningTime: 0,
    maximumUnavailableInstances: 2,
  };
  rig.create({ type: "SERVICE", instanceCount: 2, sla });
  const expected = { priority: 7, preemptible: true, revocable: true, maximumUnavailableInstances: 2 };
  const { jobs } = await call(rig, STATELESS_SERVICE, "ListJobs", {}) as { jobs: { sla: Json }[] };
  assert.deepEqual(jobs[0].sla, expected);
  const { summary } = await call(rig, STATELESS_SERVICE, "GetJob", { jobId, summaryOnly: true }) as {
    summary: { sla: Json };
  };
  assert.deepEqual(summary.sla, expected);
  const { results } = await call(rig, JOB_SERVICE, "Query", { spec: {} }) as { results: { sla: Json }[] };
  assert.deepEqual(results[0].sla, sla, "v0 answers its own SlaConfig, all seven fields");
});

Deno.test("a v1alpha status carries the runtime's revision: its write count and creation time in ns", async () => {
  const rig = new JobmgrRig();
  rig.tick(5_123);
  rig.create({ type: "SERVICE", instanceCount: 2 });
  const revision = async () =>
    ((await call(rig, STATELESS_SERVICE, "GetJob", { jobId })) as { jobInfo: { status: { revision: Json } } })
      .jobInfo.status.revision;
  const first = await revision();
  assert.deepEqual(first, { version: rig.job().runtime.version, createdAt: "5123000000" });
  rig.launch([0, 1]);
  for (const i of [0, 1]) rig.status(rig.taskId(i), "TASK_RUNNING");
  rig.transport.drain();
  const later = await revision();
  assert.ok((later.version as number) > (first.version as number), "each runtime write bumps the version");
  assert.equal(later.createdAt, first.createdAt);

  const { jobInfo } = await call(rig, JOB_SERVICE, "Get", { id: jobId }) as { jobInfo: { runtime: Json } };
  assert.equal(jobInfo.runtime.revision, undefined, "v0's runtime is unchanged");
  assert.equal(jobInfo.runtime.podStatsByConfigurationVersion, undefined);
});

Deno.test("a GRPC health check (v0's 3, none in v1alpha's enum) is written as the number, as proto3 JSON does", () => {
  const check = (type: string) =>
    podSpecJson({ containers: [{ livenessCheck: { ...HEALTH, type } }] } as never).containers as Json[];
  assert.equal((check("GRPC")[0].livenessCheck as Json).type, 3);
  assert.equal((check("HTTP")[0].livenessCheck as Json).type, "HEALTH_CHECK_TYPE_HTTP");
});
