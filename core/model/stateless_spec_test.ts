/** The v1alpha stateless spec: parsing, conversion to a SERVICE JobConfig, errors pointing into the spec. */
import assert from "node:assert/strict";
import type { StatelessJobSpec } from "./config_types.ts";
import { loadStatelessSpec, parseStatelessSpec } from "./load.ts";
import { specPathOf, statelessSpecToJobConfig } from "./stateless_spec.ts";

const FIXTURES = new URL("./testdata/peloton/", import.meta.url);
const fixture = (rel: string) => Deno.readTextFileSync(new URL(rel, FIXTURES));

function spec(body: unknown): StatelessJobSpec {
  const r = parseStatelessSpec(body, "t", { validate: false });
  if (!r.ok) throw new Error(r.errors.map((e) => e.message).join("\n"));
  return r.value;
}

Deno.test("a spec with entrypoint and mesosSpec.shell becomes a SERVICE job with a shell command", () => {
  const r = loadStatelessSpec(
    fixture("tests/integration/test_configs/test_stateless_job_spec.yaml"),
    "s.yaml",
  );
  assert.ok(r.ok);
  assert.deepEqual(r.warnings, []);
  const job = statelessSpecToJobConfig(r.value);
  assert.equal(job.type, "SERVICE");
  assert.equal(job.name, "TestSpec");
  assert.equal(job.owner, "testUser");
  assert.equal(job.instanceCount, 3);
  assert.deepEqual(job.defaultConfig, {
    resource: { cpuLimit: 0.1, memLimitMb: 2, diskLimitMb: 10, fdLimit: 0, gpuLimit: 0 },
    command: {
      shell: true,
      value: "while :; do echo running 3; sleep 10; done",
      arguments: [],
      environment: { variables: [] },
      uris: [],
    },
    revocable: false,
  });
});

Deno.test("an explicit command wins over the entrypoint; liveness check becomes the health check", () => {
  const r = loadStatelessSpec(fixture("example/stateless/testspec_sla.yaml"), "sla.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.sla.maximumUnavailableInstances, 2);
  const job = statelessSpecToJobConfig(r.value);
  assert.equal(job.sla.maximumUnavailableInstances, 2);
  assert.equal(job.defaultConfig.command?.value, "while :; do echo running 3; sleep 10; done");
  assert.deepEqual(job.defaultConfig.healthCheck, {
    enabled: true,
    initialIntervalSecs: 1,
    intervalSecs: 3,
    maxConsecutiveFailures: 3,
    timeoutSecs: 5,
    type: "COMMAND",
    commandCheck: { command: "ls" },
  });
  const both = loadStatelessSpec(fixture("example/stateless/testspec.yaml"), "t.yaml");
  assert.ok(both.ok);
  assert.equal(statelessSpecToJobConfig(both.value).defaultConfig.command?.arguments.length, 0);
});

Deno.test("pod constraints with POD kind, container info, labels and respool id carry over", () => {
  const r = loadStatelessSpec(
    fixture("tests/integration/test_configs/test_stateless_job_spec_sla.yaml"),
    "c.yaml",
  );
  assert.ok(r.ok);
  const job = statelessSpecToJobConfig(r.value);
  assert.deepEqual(job.defaultConfig.labels, [{ key: "instance", value: "test-sla" }]);
  assert.deepEqual(job.defaultConfig.constraint, {
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "TASK",
      condition: "EQUAL",
      label: { key: "instance", value: "test-sla" },
      requirement: 0,
    },
  });
  const k8s = loadStatelessSpec(
    fixture("tests/integration/test_configs/test_stateless_job_spec_k8s.yaml"),
    "k",
  );
  assert.ok(k8s.ok);
  const k8sJob = statelessSpecToJobConfig(k8s.value);
  assert.deepEqual(k8sJob.defaultConfig.container, { type: "DOCKER", docker: { image: "busybox" } });
  assert.equal(k8sJob.defaultConfig.command?.shell, true, "no mesosSpec: Mesos's default shell");
  assert.equal(k8sJob.defaultConfig.command?.value, "/bin/top");
});

Deno.test("images, volumes, executor spec, preemption policy, sla.revocable and instance specs", () => {
  const job = statelessSpecToJobConfig(spec({
    name: "svc",
    instance_count: 2,
    respool_id: { value: "pool" },
    sla: { priority: 3, preemptible: true, revocable: true },
    default_spec: {
      pod_name: { value: "p" },
      containers: [{
        name: "main",
        image: "nginx",
        entrypoint: { value: "nginx", arguments: ["-g", "daemon off;"] },
        environment: [{ name: "A", value: "1" }],
        ports: [{ name: "http", value: 0, env_name: "PORT" }],
        volume_mounts: [{ name: "logs", mount_path: "/logs", read_only: true }],
      }],
      volumes: [{ name: "logs", type: "VOLUME_TYPE_HOST_PATH", host_path: { path: "/var/log" } }],
      mesos_spec: {
        type: "CONTAINER_TYPE_DOCKER",
        docker_parameters: [{ key: "env", value: "X=1" }],
        shell: false,
        executor_spec: { type: "EXECUTOR_TYPE_CUSTOM", executor_id: "thermos", data: "e30=" },
      },
      preemption_policy: { kill_on_preempt: false },
      kill_grace_period_seconds: 15,
    },
    instance_spec: { "1": { containers: [{ name: "other", entrypoint: { value: "run" } }] } },
  }));
  assert.equal(job.respoolId, "pool");
  assert.deepEqual(job.defaultConfig, {
    name: "main",
    container: {
      type: "DOCKER",
      docker: { image: "nginx", network: "HOST", parameters: [{ key: "env", value: "X=1" }] },
      volumes: [{ containerPath: "/logs", hostPath: "/var/log", mode: "RO" }],
    },
    command: {
      shell: false,
      value: "nginx",
      arguments: ["-g", "daemon off;"],
      environment: { variables: [{ name: "A", value: "1" }] },
      uris: [],
    },
    executor: { type: "CUSTOM", executorId: { value: "thermos" }, data: "e30=" },
    ports: [{ name: "http", value: 0, envName: "PORT" }],
    preemptionPolicy: { type: "NON_PREEMPTIBLE", killOnPreempt: false },
    killGracePeriodSeconds: 15,
    revocable: true,
  });
  assert.equal(job.instanceConfig[1].name, "other");
  assert.equal(job.instanceConfig[1].revocable, true);
  assert.equal(job.instanceConfig[1].command?.shell, true);
});

Deno.test("errors in the converted job point back into the spec", () => {
  const text = `name: s
instanceCount: 2
sla:
  revocable: true
defaultSpec:
  labels: []
instanceSpec:
  1:
    containers:
    - entrypoint: {value: a}
    - entrypoint: {value: b}
`;
  const r = loadStatelessSpec(text, "spec.yaml");
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => e.message), [
    "spec.yaml:3: sla.preemptible: missing, expected true, since sla.revocable is true: " +
    "a revocable SERVICE job must be preemptible",
    "spec.yaml:5: defaultSpec.containers[0].entrypoint: missing, expected a command: every instance needs " +
    "one once instanceConfig is merged over defaultConfig (instance 0)",
    "spec.yaml:9: instanceSpec.1.containers: got a list, expected at most one container: " +
    "several containers " +
    "per pod are not supported",
  ]);
  assert.deepEqual(specPathOf(["instanceConfig", "2", "healthCheck", "type"]), [
    "instanceSpec",
    "2",
    "containers",
    0,
    "livenessCheck",
    "type",
  ]);
});

Deno.test("a restart policy above 100 failures is capped in the loaded spec, with a warning", () => {
  const text =
    "instanceCount: 1\ndefaultSpec:\n  restartPolicy: {maxFailures: 300}\n  containers:\n  - name: c\n";
  const r = loadStatelessSpec(text, "r.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.defaultSpec.restartPolicy?.maxFailures, 100);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "r.yaml:3: defaultSpec.restartPolicy.maxFailures: got 300, expected at most 100; capped at 100",
  ]);
});
