/**
 * The v1alpha stateless spec: parsing, conversion to a SERVICE JobConfig and back, errors pointing into the
 * spec.
 */
import assert from "node:assert/strict";
import type { JobConfig, StatelessJobSpec } from "./config_types.ts";
import { detectConfigKind, loadStatelessSpec, parseStatelessSpec } from "./load.ts";
import {
  jobConfigToStatelessSpec,
  specPathOf,
  statelessSpecToJobConfig,
  taskConfigToPodSpec,
} from "./stateless_spec.ts";

const FIXTURES = new URL("./testdata/peloton/", import.meta.url);
const fixture = (rel: string) => Deno.readTextFileSync(new URL(rel, FIXTURES));

function yamlFiles(rel: string): string[] {
  return [...Deno.readDirSync(new URL(rel, FIXTURES))].flatMap((e) =>
    e.isDirectory ? yamlFiles(`${rel}${e.name}/`) : e.name.endsWith(".yaml") ? [`${rel}${e.name}`] : []
  ).sort();
}

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
    "instanceCount: 1\ndefaultSpec:\n  restartPolicy: {maxFailures: 300}\n  containers:\n  - name: c\n" +
    "    entrypoint: {value: x}\n";
  const r = loadStatelessSpec(text, "r.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.defaultSpec.restartPolicy?.maxFailures, 100);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "r.yaml:3: defaultSpec.restartPolicy.maxFailures: got 300, expected at most 100; capped at 100",
  ]);
});

/**
 * Checks that the spec made back from `spec`'s config makes the same config, both as it is and after a trip
 * through JSON and the parser (as a client would send back what GetJob showed); returns the spec made back.
 */
function assertRoundTrip(spec: StatelessJobSpec, what: string): StatelessJobSpec {
  const config = statelessSpecToJobConfig(spec);
  const back = jobConfigToStatelessSpec(config);
  assert.deepEqual(
    statelessSpecToJobConfig(back),
    config,
    `${what}: the spec made back makes another config`,
  );
  const reparsed = parseStatelessSpec(JSON.parse(JSON.stringify(back)), what, { validate: false });
  assert.ok(reparsed.ok, `${what}: the spec made back does not parse: ${JSON.stringify(reparsed)}`);
  assert.deepEqual(reparsed.warnings, [], `${what}: the spec made back has keys the parser drops`);
  assert.deepEqual(statelessSpecToJobConfig(reparsed.value), config, `${what}: the reparsed spec differs`);
  return back;
}

Deno.test("every stateless spec fixture makes the same JobConfig again through the spec made back", () => {
  const specs = ["example/", "tests/integration/test_configs/", "tests/integration/canary_test/"].flatMap(
    yamlFiles,
  )
    .filter((rel) => detectConfigKind(fixture(rel)) === "stateless-spec");
  assert.equal(specs.length, 23, "the fixtures load_test.ts counts as stateless specs");
  for (const rel of specs) {
    const r = loadStatelessSpec(fixture(rel), rel, { validate: false });
    assert.ok(r.ok, `${rel} does not parse`);
    assertRoundTrip(r.value, rel);
  }
});

/** A valid spec with every part a pod can have, and two instances with specs of their own. */
const FULL = {
  name: "full",
  owner: "owner",
  owning_team: "team",
  ldap_groups: ["g1", "g2"],
  description: "every field",
  labels: [{ key: "app", value: "web" }, { key: "tier", value: "front" }],
  instance_count: 4,
  respool_id: { value: "pool-a" },
  sla: { priority: 7, preemptible: true, revocable: true, maximum_unavailable_instances: 2 },
  default_spec: {
    labels: [{ key: "pod", value: "default" }],
    containers: [{
      name: "web",
      resource: { cpu_limit: 0.5, mem_limit_mb: 256, disk_limit_mb: 100, fd_limit: 1000, gpu_limit: 1 },
      image: "nginx:1.17",
      entrypoint: { value: "nginx", arguments: ["-g", "daemon off;"] },
      environment: [{ name: "MODE", value: "prod" }],
      ports: [
        { name: "http", value: 8080, type: "PORT_TYPE_STATIC" },
        { name: "admin", value: 0, env_name: "ADMIN_PORT", type: "PORT_TYPE_DYNAMIC_ENV_VAR" },
      ],
      liveness_check: {
        enabled: true,
        initial_interval_secs: 5,
        interval_secs: 7,
        max_consecutive_failures: 4,
        timeout_secs: 2,
        type: "HEALTH_CHECK_TYPE_HTTP",
        http_check: { scheme: "http", port: 8080, path: "/health" },
      },
      volume_mounts: [{ name: "logs", mount_path: "/logs", read_only: false }],
    }],
    volumes: [{ name: "logs", type: "VOLUME_TYPE_HOST_PATH", host_path: { path: "/var/log/web" } }],
    mesos_spec: {
      type: "CONTAINER_TYPE_DOCKER",
      docker_parameters: [{ key: "label", value: "x=y" }],
      shell: true,
      uris: [{ value: "http://example.com/app.tgz" }],
      executor_spec: { type: "EXECUTOR_TYPE_CUSTOM", executor_id: "thermos", data: "e30=" },
    },
    constraint: {
      type: "CONSTRAINT_TYPE_AND",
      and_constraint: {
        constraints: [
          {
            type: "CONSTRAINT_TYPE_LABEL",
            label_constraint: {
              kind: "LABEL_CONSTRAINT_KIND_POD",
              condition: "LABEL_CONSTRAINT_CONDITION_LESS_THAN",
              label: { key: "app", value: "web" },
              requirement: 1,
            },
          },
          {
            type: "CONSTRAINT_TYPE_OR",
            or_constraint: {
              constraints: [
                {
                  type: "CONSTRAINT_TYPE_LABEL",
                  label_constraint: {
                    kind: "LABEL_CONSTRAINT_KIND_HOST",
                    condition: "LABEL_CONSTRAINT_CONDITION_EQUAL",
                    label: { key: "zone", value: "a" },
                    requirement: 1,
                  },
                },
                {
                  type: "CONSTRAINT_TYPE_LABEL",
                  label_constraint: {
                    kind: "LABEL_CONSTRAINT_KIND_HOST",
                    condition: "LABEL_CONSTRAINT_CONDITION_GREATER_THAN",
                    label: { key: "rack", value: "r1" },
                    requirement: 0,
                  },
                },
              ],
            },
          },
        ],
      },
    },
    restart_policy: { max_failures: 5 },
    preemption_policy: { kill_on_preempt: false },
    controller: false,
    kill_grace_period_seconds: 30,
  },
  instance_spec: {
    "0": {
      containers: [{
        name: "canary",
        command: { shell: false, value: "/bin/app", arguments: ["--canary"], user: "www" },
        liveness_check: {
          enabled: true,
          type: "HEALTH_CHECK_TYPE_COMMAND",
          command_check: { command: "curl -f localhost:8080", unshare_environments: true },
        },
      }],
      labels: [{ key: "pod", value: "canary" }],
    },
    "3": {
      containers: [],
      restart_policy: { max_failures: 0 },
      volume: { container_path: "/data", size_m_b: 1024 },
      constraint: {
        type: "CONSTRAINT_TYPE_LABEL",
        label_constraint: {
          kind: "LABEL_CONSTRAINT_KIND_HOST",
          condition: "LABEL_CONSTRAINT_CONDITION_EQUAL",
          label: { key: "disk", value: "ssd" },
          requirement: 1,
        },
      },
    },
  },
};

Deno.test("a spec with constraints, ports, health checks, labels, containers, restart policy and SLA comes back whole", () => {
  const parsed = parseStatelessSpec(FULL, "FULL");
  assert.ok(parsed.ok, JSON.stringify(parsed));
  assert.deepEqual(parsed.warnings, [], "FULL is a spec Peloton would take as it is");
  const full = parsed.value;
  const back = assertRoundTrip(full, "FULL");
  assert.deepEqual(back.labels, full.labels);
  assert.deepEqual(back.sla, {
    priority: 7,
    preemptible: true,
    revocable: true,
    maximumUnavailableInstances: 2,
  });
  assert.equal(back.respoolId, "pool-a");
  assert.deepEqual(back.defaultSpec.constraint, full.defaultSpec.constraint);
  assert.deepEqual(back.defaultSpec.restartPolicy, { maxFailures: 5 });
  assert.deepEqual(back.defaultSpec.preemptionPolicy, { killOnPreempt: false });
  assert.equal(back.defaultSpec.revocable, undefined, "the SLA says it: not repeated on every pod");
  const [web] = back.defaultSpec.containers;
  assert.deepEqual(web.ports, [
    { name: "http", value: 8080 },
    { name: "admin", value: 0, envName: "ADMIN_PORT" },
  ]);
  assert.deepEqual(web.livenessCheck, full.defaultSpec.containers[0].livenessCheck);
  // The image, mounts and mesosSpec come back as the container, command and executor they made.
  assert.deepEqual(web.container, {
    type: "DOCKER",
    docker: { image: "nginx:1.17", network: "HOST", parameters: [{ key: "label", value: "x=y" }] },
    volumes: [{ containerPath: "/logs", hostPath: "/var/log/web", mode: "RW" }],
  });
  assert.deepEqual(web.command, {
    shell: true,
    value: "nginx",
    arguments: ["-g", "daemon off;"],
    environment: { variables: [{ name: "MODE", value: "prod" }] },
    uris: [{ value: "http://example.com/app.tgz" }],
  });
  assert.deepEqual(web.executor, { type: "CUSTOM", executorId: { value: "thermos" }, data: "e30=" });
  assert.deepEqual(Object.keys(back.instanceSpec), ["0", "3"]);
  assert.equal(back.instanceSpec[0].containers[0].command?.user, "www");
  assert.deepEqual(back.instanceSpec[3].containers, [], "an instance without a container of its own");
  assert.deepEqual(back.instanceSpec[3].volume, { containerPath: "/data", sizeMB: 1024 });
});

Deno.test("small specs come back: no containers, an empty container, SLA defaults, no pool", () => {
  const cases: Record<string, unknown> = {
    "no containers": { name: "a", instanceCount: 1 },
    "an empty container": { name: "b", instanceCount: 1, defaultSpec: { containers: [{}] } },
    "a named container only": { name: "c", instanceCount: 2, defaultSpec: { containers: [{ name: "m" }] } },
    "revocable pods": {
      name: "d",
      instanceCount: 1,
      sla: { revocable: true, preemptible: true },
      defaultSpec: { revocable: false, containers: [{ entrypoint: { value: "x" } }] },
    },
    "a controller pod": {
      name: "e",
      instanceCount: 1,
      defaultSpec: { controller: true, preemptionPolicy: { killOnPreempt: false }, containers: [{}] },
    },
    "pods killed on preemption": {
      name: "f",
      instanceCount: 1,
      defaultSpec: { preemptionPolicy: { killOnPreempt: true }, containers: [{}] },
    },
  };
  for (const [what, body] of Object.entries(cases)) assertRoundTrip(spec(body), what);
});

Deno.test("a v0 JobConfig shows as a spec: what a spec cannot say is left out", () => {
  const config: JobConfig = {
    name: "v0",
    type: "BATCH",
    owningTeam: "t",
    ldapGroups: [],
    description: "",
    owner: "o",
    labels: [],
    instanceCount: 2,
    sla: {
      priority: 1,
      preemptible: false,
      revocable: false,
      maximumRunningInstances: 1,
      minimumRunningInstances: 1,
      maxRunningTime: 60,
      maximumUnavailableInstances: 0,
    },
    defaultConfig: {
      name: "task",
      resource: { cpuLimit: 1, memLimitMb: 64, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 },
      command: { shell: true, value: "echo", arguments: [], environment: { variables: [] }, uris: [] },
      preemptionPolicy: { type: "INVALID", killOnPreempt: false },
      revocable: true,
    },
    instanceConfig: { 1: { ports: [{ name: "p", value: 0, envName: "P" }] } },
    respoolId: "pool-a",
    placementStrategy: "SPREAD_JOB",
  };
  assert.deepEqual(jobConfigToStatelessSpec(config), {
    name: "v0",
    owner: "o",
    owningTeam: "t",
    ldapGroups: [],
    description: "",
    labels: [],
    instanceCount: 2,
    sla: { priority: 1, preemptible: false, revocable: false, maximumUnavailableInstances: 0 },
    defaultSpec: {
      containers: [{
        name: "task",
        resource: { cpuLimit: 1, memLimitMb: 64, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 },
        command: { shell: true, value: "echo", arguments: [], environment: { variables: [] }, uris: [] },
        entrypoint: { value: "echo", arguments: [] },
      }],
      mesosSpec: { shell: true },
      preemptionPolicy: { killOnPreempt: false },
      revocable: true,
    },
    instanceSpec: { 1: { containers: [{ ports: [{ name: "p", value: 0, envName: "P" }] }] } },
    respoolId: "pool-a",
  });
  assert.deepEqual(taskConfigToPodSpec({}), { containers: [] });
});

Deno.test("a readiness check is accepted with a warning that it is not kept; a liveness check has none", () => {
  const check = { enabled: true, type: "HEALTH_CHECK_TYPE_COMMAND", commandCheck: { command: "true" } };
  const body = (container: Record<string, unknown>) => ({
    name: "web",
    instanceCount: 1,
    defaultSpec: { containers: [{ name: "c", entrypoint: { value: "serve" }, ...container }] },
  });
  const ready = parseStatelessSpec(body({ readinessCheck: check }), "t");
  assert.ok(ready.ok);
  assert.deepEqual(ready.warnings.map((w) => w.path), ["defaultSpec.containers[0].readinessCheck"]);
  assert.match(ready.warnings[0].message, /it is not used and not kept .* GetJob will not show it/);
  assert.equal(statelessSpecToJobConfig(ready.value).defaultConfig.healthCheck, undefined);
  const live = parseStatelessSpec(body({ livenessCheck: check }), "t");
  assert.ok(live.ok);
  assert.deepEqual(live.warnings, []);
});

Deno.test("a spec's name, owner and owning team are refused past the widths the store indexes", () => {
  const r = parseStatelessSpec(
    { name: "n".repeat(513), owner: "o".repeat(256), owningTeam: "t".repeat(256), instanceCount: 1 },
    "t",
    { validate: false },
  );
  assert.ok(!r.ok);
  const messages = r.errors.map((e) => e.message).join("\n");
  assert.match(messages, /name: .*expected text of at most 512 characters/);
  assert.match(messages, /owner: .*expected text of at most 255 characters/);
  assert.match(messages, /owningTeam: .*expected text of at most 255 characters/);
  assert.equal(
    spec({ name: "n".repeat(512), owningTeam: "t".repeat(255), instanceCount: 1 }).name.length,
    512,
  );
});

Deno.test("a pod's mesosSpec URIs carry every field, as Peloton's ConvertPodSpecToMesosCommand copies them", () => {
  const job = statelessSpecToJobConfig(spec({
    name: "uris",
    instanceCount: 1,
    defaultSpec: {
      containers: [{
        name: "main",
        entrypoint: { value: "./run.sh" },
        resource: { cpuLimit: 1, memLimitMb: 8 },
      }],
      mesosSpec: {
        shell: true,
        uris: [
          { value: "http://a/run.sh", executable: true, cache: false },
          { value: "http://a/data.tgz", extract: true, output_file: "data.tgz" },
        ],
      },
    },
  }));
  assert.deepEqual(job.defaultConfig.command?.uris, [
    { value: "http://a/run.sh", executable: true, cache: false },
    { value: "http://a/data.tgz", extract: true, outputFile: "data.tgz" },
  ]);
});

Deno.test("a task's container, command and executor are said again in the spec's own fields, as Peloton's converter does", () => {
  const pod = taskConfigToPodSpec({
    container: {
      type: "DOCKER",
      docker: { image: "busybox", network: "HOST", parameters: [{ key: "cpus", value: "1" }] },
      volumes: [{ containerPath: "/data", hostPath: "/srv/data", mode: "RO" }],
    },
    command: {
      shell: false,
      value: "/bin/top",
      arguments: ["-b"],
      environment: { variables: [{ name: "MODE", value: "prod" }] },
      uris: [{ value: "http://x/app.tgz", extract: true }],
    },
    executor: { type: "CUSTOM", executorId: { value: "thermos" }, data: "e30=" },
  });
  const [main] = pod.containers;
  assert.deepEqual(
    [main.image, main.entrypoint, main.environment, main.volumeMounts],
    [
      "busybox",
      { value: "/bin/top", arguments: ["-b"] },
      [{ name: "MODE", value: "prod" }],
      [{ name: "/srv/data", readOnly: true, mountPath: "/data" }],
    ],
  );
  assert.deepEqual(pod.volumes, [{
    name: "/srv/data",
    type: "VOLUME_TYPE_HOST_PATH",
    hostPath: { path: "/srv/data" },
  }]);
  assert.deepEqual(pod.mesosSpec, {
    type: "CONTAINER_TYPE_DOCKER",
    dockerParameters: [{ key: "cpus", value: "1" }],
    uris: [{ value: "http://x/app.tgz", extract: true }],
    shell: false,
    executorSpec: { type: "EXECUTOR_TYPE_CUSTOM", executorId: "thermos", data: "e30=" },
  });
  // The Mesos messages stay as they are, so the spec read back makes the same task again.
  assert.deepEqual(main.command?.value, "/bin/top");
  const mesosImage = taskConfigToPodSpec({
    container: {
      type: "MESOS",
      mesos: { image: { type: "DOCKER", docker: { name: "alpine" }, cached: true } },
    },
  });
  assert.deepEqual([mesosImage.containers[0].image, mesosImage.mesosSpec], ["alpine", {
    type: "CONTAINER_TYPE_MESOS",
  }]);
});

Deno.test("Peloton's stateless spec files read back with the entrypoint, mesosSpec and image they gave", () => {
  const back = (rel: string) => {
    const r = loadStatelessSpec(fixture(`tests/integration/test_configs/${rel}`), rel);
    assert.ok(r.ok, rel);
    return assertRoundTrip(r.value, rel).defaultSpec;
  };
  const shell = back("test_stateless_job_spec.yaml");
  assert.deepEqual(shell.containers[0].entrypoint, {
    value: "while :; do echo running 3; sleep 10; done",
    arguments: [],
  });
  assert.deepEqual(shell.mesosSpec, { shell: true });
  const k8s = back("test_stateless_job_spec_k8s.yaml");
  assert.deepEqual(
    [k8s.containers[0].image, k8s.containers[0].entrypoint, k8s.mesosSpec],
    // Without a mesosSpec the command runs in a shell, Mesos's default, and reads back so.
    ["busybox", { value: "/bin/top", arguments: [] }, { type: "CONTAINER_TYPE_DOCKER", shell: true }],
  );
});
