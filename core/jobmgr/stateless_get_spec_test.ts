/** GetJob's spec is made from the job's stored config: it survives a restart, and v0 jobs have one too. */
import assert from "node:assert/strict";
import { parseStatelessSpec } from "../model/load.ts";
import { parseYamlValue } from "../model/yaml_load.ts";
import { statelessSpecToJobConfig } from "../model/stateless_spec.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import type { JobManager } from "./jobmgr.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";
import { entityVersion } from "./api_json.ts";

/** A spec with a constraint, ports, a health check, labels, a restart policy, an SLA and an instance spec. */
const SPEC = {
  name: "web",
  owner: "alice",
  owningTeam: "team-web",
  ldapGroups: ["web-admins"],
  description: "the front end",
  labels: [{ key: "app", value: "web" }],
  instanceCount: 3,
  respoolId: { value: "pool-a" },
  sla: { priority: 5, preemptible: true, maximumUnavailableInstances: 1 },
  defaultSpec: {
    labels: [{ key: "app", value: "web" }],
    containers: [{
      name: "server",
      resource: { cpuLimit: 0.5, memLimitMb: 128, diskLimitMb: 10 },
      entrypoint: { value: "serve", arguments: ["--port", "8080"] },
      environment: [{ name: "MODE", value: "prod" }],
      ports: [{ name: "http", value: 0, envName: "PORT" }],
      livenessCheck: {
        enabled: true,
        type: "HEALTH_CHECK_TYPE_COMMAND",
        commandCheck: { command: "true" },
        intervalSecs: 5,
      },
    }],
    constraint: {
      type: "CONSTRAINT_TYPE_LABEL",
      labelConstraint: {
        kind: "LABEL_CONSTRAINT_KIND_POD",
        condition: "LABEL_CONSTRAINT_CONDITION_LESS_THAN",
        label: { key: "app", value: "web" },
        requirement: 1,
      },
    },
    restartPolicy: { maxFailures: 3 },
    killGracePeriodSeconds: 20,
  },
  instanceSpec: { "2": { containers: [{ name: "canary", entrypoint: { value: "serve --canary" } }] } },
};

/** The JobConfig a spec body makes, as CreateJob and ReplaceJob make it. */
function configOf(body: unknown) {
  const r = parseStatelessSpec(body, "spec");
  if (!r.ok) throw new Error(`Cannot parse the spec: ${r.errors.map((e) => e.message).join("; ")}`);
  return statelessSpecToJobConfig(r.value);
}

function createStateless(rig: JobmgrRig): void {
  rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, spec: SPEC });
  rig.answerPool();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
}

let reqId = 1000;

/** GetJob's `jobInfo.spec`, asked of `jm` (the rig's own job manager unless given). */
async function getSpec(rig: JobmgrRig, jm = rig.jm): Promise<Record<string, unknown>> {
  jm.receive({
    kind: "api",
    reqId: ++reqId,
    replyTo: "api/1",
    procedure: `${STATELESS_SERVICE}::GetJob`,
    body: { jobId: { value: JOB_ID } },
  });
  rig.tick();
  await rig.reads();
  const [reply] = rig.replies();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return (reply.body as { jobInfo: { spec: Record<string, unknown> } }).jobInfo.spec;
}

/** The process dies; a new job manager recovers the active jobs and workflows from the store. */
async function crashAndRecover(rig: JobmgrRig): Promise<JobManager> {
  rig.store.settle();
  rig.transport.drain();
  const jm = await rig.restartJobManager();
  rig.tick();
  rig.transport.drain();
  return jm;
}

Deno.test("GetJob after a job manager restart gives the whole spec the job was created with", async () => {
  const rig = new JobmgrRig();
  createStateless(rig);
  const before = await getSpec(rig);
  assert.deepEqual(configOf(before), configOf(SPEC), "the spec shown makes the job's config");

  const jm = await crashAndRecover(rig);
  assert.notEqual(jm.jobs.get(JOB_ID), undefined, "the job was recovered");
  const after = await getSpec(rig, jm);
  assert.deepEqual(after, before, "the same spec as before the restart");
  assert.deepEqual(after.sla, {
    priority: 5,
    preemptible: true,
    revocable: false,
    maximumUnavailableInstances: 1,
  });
  const pod = after.defaultSpec as {
    constraint: unknown;
    restartPolicy: unknown;
    containers: { ports: [] }[];
  };
  assert.deepEqual(pod.constraint, {
    type: "CONSTRAINT_TYPE_LABEL",
    labelConstraint: {
      kind: "LABEL_CONSTRAINT_KIND_POD",
      condition: "LABEL_CONSTRAINT_CONDITION_LESS_THAN",
      label: { key: "app", value: "web" },
      requirement: 1,
    },
  });
  assert.deepEqual(pod.restartPolicy, { maxFailures: 3 });
  assert.deepEqual(pod.containers[0].ports, [{ name: "http", value: 0, envName: "PORT" }]);
  assert.deepEqual(Object.keys(after.instanceSpec as object), ["2"]);
});

Deno.test("GetJob of a job created with v0 job.JobManager::Create gives its spec in v1alpha's shape", async () => {
  const rig = new JobmgrRig();
  const command = { shell: true, value: "serve", arguments: [], environment: { variables: [] }, uris: [] };
  rig.create({
    type: "SERVICE",
    instanceCount: 2,
    labels: [{ key: "app", value: "v0" }],
    sla: {
      priority: 2,
      preemptible: false,
      revocable: false,
      maximumRunningInstances: 0,
      minimumRunningInstances: 0,
      maxRunningTime: 0,
      maximumUnavailableInstances: 1,
    },
    task: {
      name: "main",
      ports: [{ name: "http", value: 8080 }],
      healthCheck: {
        enabled: true,
        initialIntervalSecs: 15,
        intervalSecs: 10,
        maxConsecutiveFailures: 3,
        timeoutSecs: 20,
        type: "COMMAND",
        commandCheck: { command: "true" },
      },
      restartPolicy: { maxFailures: 2 },
    },
    instanceConfig: { 1: { command: { ...command, value: "serve --other" } } },
  });
  const spec = await getSpec(rig);
  assert.deepEqual(spec, {
    revision: { version: 1 },
    name: "test-job",
    owner: "tester",
    owningTeam: "team",
    ldapGroups: [],
    description: "",
    labels: [{ key: "app", value: "v0" }],
    instanceCount: 2,
    sla: { priority: 2, preemptible: false, revocable: false, maximumUnavailableInstances: 1 },
    defaultSpec: {
      containers: [{
        name: "main",
        resource: { cpuLimit: 1, memLimitMb: 128, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 },
        command: { ...command, value: "echo hello" },
        // Said again in the spec's own fields, as Peloton's ConvertTaskConfigToPodSpec does.
        entrypoint: { value: "echo hello", arguments: [] },
        ports: [{ name: "http", value: 8080 }],
        livenessCheck: {
          enabled: true,
          initialIntervalSecs: 15,
          intervalSecs: 10,
          maxConsecutiveFailures: 3,
          timeoutSecs: 20,
          type: "HEALTH_CHECK_TYPE_COMMAND",
          commandCheck: { command: "true" },
        },
      }],
      mesosSpec: { shell: true },
      restartPolicy: { maxFailures: 2 },
    },
    instanceSpec: {
      1: {
        containers: [{
          command: { ...command, value: "serve --other" },
          entrypoint: { value: "serve --other", arguments: [] },
        }],
        mesosSpec: { shell: true },
      },
    },
    respoolId: { value: "pool-a" },
  });
  assert.equal(configOf(spec).instanceConfig[1].command?.value, "serve --other", "a spec the API takes");
});

Deno.test("after a ReplaceJob, GetJob shows the new spec, in its pool, during the update and after a restart", async () => {
  const rig = new JobmgrRig();
  createStateless(rig);
  const next = {
    ...SPEC,
    respoolId: undefined,
    instanceCount: 4,
    labels: [{ key: "app", value: "web" }, { key: "release", value: "2" }],
    defaultSpec: {
      ...SPEC.defaultSpec,
      containers: [{
        ...SPEC.defaultSpec.containers[0],
        entrypoint: { value: "serve", arguments: ["--v2"] },
      }],
    },
    instanceSpec: {},
  };
  const version = { value: entityVersion(rig.job()) };
  rig.call(STATELESS_SERVICE, "ReplaceJob", { jobId: { value: JOB_ID }, version, spec: next });
  const [replaced] = rig.replies();
  assert.equal(replaced.error, undefined, JSON.stringify(replaced.error));
  assert.equal(rig.jm.updates.size, 1, "the update is in progress");

  const spec = await getSpec(rig);
  assert.deepEqual(spec.revision, { version: 2 });
  assert.equal(spec.instanceCount, 4);
  assert.deepEqual(spec.labels, next.labels);
  assert.deepEqual(spec.respoolId, { value: "pool-a" }, "a spec without a pool keeps the job's");
  assert.deepEqual(spec.instanceSpec, {}, "the old instance spec is gone");
  assert.deepEqual(configOf(spec), { ...configOf(next), respoolId: "pool-a" });

  const jm = await crashAndRecover(rig);
  assert.deepEqual(await getSpec(rig, jm), spec);
});

Deno.test("CreateJob refuses a bad pool or a taken job id with v1alpha errors, not v0's in-body ones", () => {
  const rig = new JobmgrRig();
  const create = () => rig.call(STATELESS_SERVICE, "CreateJob", { jobId: { value: JOB_ID }, spec: SPEC });
  const error = () => {
    const [reply] = rig.replies();
    assert.equal(reply.body, undefined, JSON.stringify(reply.body));
    return reply.error;
  };
  create();
  rig.answerPoolMissing();
  assert.deepEqual(error(), {
    code: "invalid-argument",
    message: "spec.respoolId: resource pool pool-a not found",
  });
  create();
  rig.answerPool(["pool-b"]);
  assert.deepEqual(error(), {
    code: "invalid-argument",
    message: "spec.respoolId: resource pool pool-a is not a leaf pool",
  });
  assert.equal(rig.jm.jobs.size, 0, "nothing created");
  createStateless(rig);
  create();
  rig.answerPool();
  assert.deepEqual(error(), { code: "already-exists", message: `jobId: job ${JOB_ID} already exists` });
});

Deno.test("GetJob of a job made from Peloton's spec files gives back the entrypoint, mesosSpec and image they gave", async () => {
  const dir = new URL("../model/testdata/peloton/tests/integration/test_configs/", import.meta.url);
  const pod = async (file: string) => {
    const rig = new JobmgrRig();
    const spec = parseYamlValue(Deno.readTextFileSync(new URL(file, dir))) as Record<string, unknown>;
    const created = rig.createStateless({ spec: { ...spec, respoolId: { value: "pool-a" } } });
    assert.equal(created.error, undefined, JSON.stringify(created.error));
    return (await getSpec(rig)).defaultSpec as {
      containers: Record<string, unknown>[];
      mesosSpec?: Record<string, unknown>;
    };
  };
  const shell = await pod("test_stateless_job_spec.yaml");
  assert.deepEqual(shell.containers[0].entrypoint, {
    value: "while :; do echo running 3; sleep 10; done",
    arguments: [],
  });
  assert.deepEqual(shell.containers[0].resource, {
    cpuLimit: 0.1,
    memLimitMb: 2,
    diskLimitMb: 10,
    fdLimit: 0,
    gpuLimit: 0,
  });
  assert.deepEqual(shell.mesosSpec, { shell: true });
  const k8s = await pod("test_stateless_job_spec_k8s.yaml");
  assert.equal(k8s.containers[0].image, "busybox");
  assert.deepEqual(k8s.containers[0].entrypoint, { value: "/bin/top", arguments: [] });
  assert.deepEqual(k8s.mesosSpec, { type: "CONTAINER_TYPE_DOCKER", shell: true });
});
