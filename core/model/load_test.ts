/** Every Peloton config fixture loads (or fails as Peloton would), with values checked on a handful. */
import assert from "node:assert/strict";
import {
  detectConfigKind,
  detectConfigKindOf,
  loadJobConfig,
  type LoadOptions,
  loadRespoolConfig,
  type LoadResult,
  loadStatelessSpec,
  loadUpdateConfig,
} from "./load.ts";
import { mergeTaskConfig } from "./job_config.ts";

const FIXTURES = new URL("./testdata/peloton/", import.meta.url);
const fixture = (rel: string) => Deno.readTextFileSync(new URL(rel, FIXTURES));

function yamlFiles(rel: string): string[] {
  return [...Deno.readDirSync(new URL(rel, FIXTURES))].flatMap((e) =>
    e.isDirectory ? yamlFiles(`${rel}${e.name}/`) : e.name.endsWith(".yaml") ? [`${rel}${e.name}`] : []
  ).sort();
}

const WALKED = [
  "example/",
  "tests/integration/test_configs/",
  "pkg/jobmgr/job/config/testdata/",
  "pkg/cli/testdata/",
  "tests/integration/canary_test/",
  "tests/integration/aurorabridge_test/",
  "tests/performance/test_configs/",
];

/**
 * Aurora `JobUpdateRequest`s (Peloton's aurorabridge takes them; this scheduler does not serve Aurora's
 * API): refused as a job config with an error that says what they are, not one about a missing command.
 */
const AURORA = new Set([
  "tests/integration/aurorabridge_test/test_configs/test_dc_labrat.yaml",
  "tests/performance/test_configs/test_dc_labrat.yaml",
]);

/** Not a job, respool, spec or update config: Peloton's basic-auth users and roles. */
const NOT_CONFIGS = new Set(["example/auth/basic/security_example.yaml"]);

/** Fixtures Peloton (or we) would reject, with a piece of the expected message. */
const INVALID: Record<string, string> = {
  // A BATCH job with per-instance health checks: validate.go's errIncorrectHealthCheck.
  "example/test_http_health.yaml":
    "instanceconfig.0.healthcheck: got a mapping, expected no healthCheck on a BATCH job",
  // Templates without an instance count (generate_instance_config.py / the Python tests add it).
  "example/performance/testjob_base.yaml": "instanceCount: missing, expected at least 1 instance",
  "tests/integration/test_configs/test_task.yaml": "instanceCount: missing, expected at least 1 instance",
  // Revocable but not preemptible: errIncorrectRevocableSLA.
  "tests/integration/test_configs/test_stateless_job_spec_invalid.yaml":
    "test_stateless_job_spec_invalid.yaml:18: sla.preemptible: got false, expected true, since sla.revocable",
  // Invalid as an update of old_config.yaml in Peloton; on its own it has no instance count.
  "pkg/jobmgr/job/config/testdata/invalid_new_config.yaml": "instanceCount: missing",
  "pkg/jobmgr/job/config/testdata/invalid_new_config_without_cmd.yaml":
    "invalid_new_config_without_cmd.yaml:24: defaultconfig.command: missing, expected a command",
};

function loaderFor(kind: string): (text: string, file: string, opts?: LoadOptions) => LoadResult<unknown> {
  switch (kind) {
    case "job":
      return loadJobConfig;
    case "respool":
      return loadRespoolConfig;
    case "stateless-spec":
      return loadStatelessSpec;
    case "update":
      return loadUpdateConfig;
  }
  throw new Error(`no loader for kind ${kind}`);
}

Deno.test("every Peloton YAML fixture parses, and exactly the listed ones fail validation", () => {
  const files = WALKED.flatMap(yamlFiles);
  assert.ok(files.length >= 80, `only ${files.length} fixtures found`);
  for (const rel of Object.keys(INVALID)) assert.ok(files.includes(rel), `stale INVALID entry ${rel}`);
  const kinds = new Map<string, number>();
  for (const rel of files) {
    const text = fixture(rel);
    const kind = detectConfigKind(text);
    if (NOT_CONFIGS.has(rel)) {
      assert.equal(kind, "unknown", rel);
      continue;
    }
    assert.notEqual(kind, "unknown", `${rel}: kind not detected`);
    const load = loaderFor(kind);
    if (AURORA.has(rel)) {
      for (const opts of [{ validate: false }, {}]) {
        const r = load(text, rel, opts);
        assert.ok(!r.ok, rel);
        assert.deepEqual(r.errors.map((e) => e.message), [
          `${rel}:1: taskConfig: expected a Peloton job config (defaultConfig, instanceCount, ...); this file ` +
          "is an Aurora JobUpdateRequest (taskConfig, instanceCount, settings), the shape Peloton's " +
          "aurorabridge takes, which this scheduler does not serve",
        ]);
      }
      continue;
    }
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    const shape = load(text, rel, { validate: false });
    assert.ok(
      shape.ok,
      `${rel} does not parse:\n${shape.ok ? "" : shape.errors.map((e) => e.message).join("\n")}`,
    );
    const full = load(text, rel);
    const want = INVALID[rel];
    if (want === undefined) {
      assert.ok(
        full.ok,
        `${rel} fails validation:\n${full.ok ? "" : full.errors.map((e) => e.message).join("\n")}`,
      );
    } else {
      assert.ok(!full.ok, `${rel} should fail validation`);
      const messages = full.errors.map((e) => e.message).join("\n");
      assert.ok(messages.includes(want), `${rel}: expected "${want}" in:\n${messages}`);
    }
  }
  assert.deepEqual(Object.fromEntries(kinds), { job: 49, respool: 10, "stateless-spec": 23 });
  for (const rel of AURORA) assert.ok(files.includes(rel), `stale AURORA entry ${rel}`);
});

Deno.test("the Mesos task-group JSON fixture is not a Peloton config", () => {
  assert.equal(detectConfigKindOf(JSON.parse(fixture("example/mesos-execute-taskgroup.json"))), "unknown");
});

function ok<T>(r: LoadResult<T>): { value: T; warnings: LoadResult<T>["warnings"] } {
  if (!r.ok) throw new Error(r.errors.map((e) => e.message).join("\n"));
  return r;
}

Deno.test("testjob.yaml (Go CLI keys): values, controller instance, merge, unknown SLA keys", () => {
  const { value: job, warnings } = ok(loadJobConfig(fixture("example/testjob.yaml"), "testjob.yaml"));
  assert.equal(job.name, "TestPelotonJob_123");
  assert.equal(job.type, "BATCH");
  assert.equal(job.instanceCount, 10);
  assert.deepEqual(job.ldapGroups, ["money", "team6", "otto"]);
  assert.equal(job.sla.priority, 22);
  assert.equal(job.sla.maxRunningTime, 300);
  assert.equal(job.sla.preemptible, false);
  assert.equal(job.instanceConfig[0].controller, true);
  assert.equal(job.instanceConfig[0].killGracePeriodSeconds, 40);
  assert.equal(job.defaultConfig.healthCheck, undefined);
  assert.equal(job.defaultConfig.container, undefined);
  const five = mergeTaskConfig(job, 5);
  assert.equal(five.resource?.cpuLimit, 1);
  assert.equal(five.resource?.memLimitMb, 2);
  assert.match(five.command?.value ?? "", /sleep 30$/);
  assert.equal(five.controller, undefined);
  const zero = mergeTaskConfig(job, 0);
  assert.equal(zero.name, "controller0");
  assert.equal(zero.resource?.cpuLimit, 1);
  assert.equal(zero.command?.value, "echo Hello instance 0 && sleep 100");
  assert.deepEqual(
    warnings.map((w) => [w.line, w.path]),
    [[19, "sla.minimuminstancecount"], [20, "sla.minimuminstancepercent"]],
  );
  assert.match(warnings[0].message, /^testjob\.yaml:19: sla\.minimuminstancecount: unknown key, ignored \(/);
  assert.match(warnings[0].message, /maximumRunningInstances/);
});

Deno.test("test_job.yaml (camelCase keys): docker container, labels, instance overrides", () => {
  const { value: job, warnings } = ok(
    loadJobConfig(fixture("tests/integration/test_configs/test_job.yaml"), "t"),
  );
  assert.deepEqual(warnings, []);
  assert.equal(job.owningTeam, "team6");
  assert.equal(job.sla.maximumRunningInstances, 1);
  assert.equal(job.sla.preemptible, true);
  assert.deepEqual(job.defaultConfig.labels?.map((l) => l.key), ["testKey3", "testKey4", "testKey5"]);
  assert.equal(job.defaultConfig.resource?.fdLimit, 2);
  assert.equal(job.defaultConfig.container?.type, "DOCKER");
  assert.equal(job.defaultConfig.container?.docker?.image, "debian");
  assert.deepEqual(job.defaultConfig.container?.docker?.parameters?.[2], {
    key: "volume",
    value: "/tmp:/test-tmp:rw",
  });
  assert.deepEqual(job.defaultConfig.ports, []);
  assert.equal(job.instanceConfig[1].name, "instance1");
  assert.equal(mergeTaskConfig(job, 2).command?.value, "echo lol & sleep 3");
});

Deno.test("default_respool.yaml and the CLI's respool fixture", () => {
  const { value: pool } = ok(loadRespoolConfig(fixture("example/default_respool.yaml"), "p"));
  const cpu = pool.resources.find((r) => r.kind === "cpu");
  assert.deepEqual(cpu, { kind: "cpu", reservation: 12, limit: 12, share: 1, type: "ELASTIC" });
  assert.equal(pool.resources.find((r) => r.kind === "disk")?.limit, 20480);
  assert.deepEqual(pool.slackLimit, { maxPercent: 30 });
  assert.deepEqual(pool.controllerLimit, { maxPercent: 10 });
  assert.equal(pool.policy, "PriorityFIFO");
  assert.equal(pool.parent, undefined);
  const { value: child } = ok(loadRespoolConfig(fixture("pkg/cli/testdata/test_respool_parent.yaml"), "c"));
  assert.equal(child.parent, "root");
  assert.equal(child.resources.find((r) => r.kind === "memory")?.share, 2);
  const { value: hello } = ok(loadRespoolConfig(fixture("example/helloworld_pool.yaml"), "h"));
  assert.equal(hello.resources[0].share, 1, "a missing share reads as 1, as a kind the pool leaves out gets");
});

Deno.test("numbered enums with comments, wrapped ids and Mesos containers from the Go CLI examples", () => {
  const { value: job } = ok(loadJobConfig(fixture("example/testjob_host_affinity_constraint.yaml"), "a"));
  assert.equal(job.respoolId, "/respool11");
  assert.equal(job.instanceCount, 200);
  assert.deepEqual(job.defaultConfig.constraint, {
    type: "LABEL_CONSTRAINT",
    labelConstraint: {
      kind: "HOST",
      condition: "EQUAL",
      label: { key: "hostname", value: "peloton-mesos-agent0" },
      requirement: 1,
    },
  });
  const { value: gpu } = ok(loadJobConfig(fixture("example/testjob_gpu_mesos_containerizer.yaml"), "g"));
  const container = gpu.defaultConfig.container;
  assert.equal(container?.type, "MESOS");
  assert.deepEqual(container?.mesos, { image: { type: "DOCKER", docker: { name: "nvidia/cuda" } } });
  assert.deepEqual(container?.volumes?.map((v) => v.mode), ["RW", "RO"]);
  assert.equal(gpu.defaultConfig.resource?.gpuLimit, 1);
  const { value: preempt } = ok(
    loadJobConfig(
      fixture("tests/integration/test_configs/test_preemptible_job_preemption_override.yaml"),
      "o",
    ),
  );
  assert.deepEqual(preempt.instanceConfig[4].preemptionPolicy, {
    type: "NON_PREEMPTIBLE",
    killOnPreempt: false,
  });
  assert.deepEqual(mergeTaskConfig(preempt, 3).preemptionPolicy, { type: "INVALID", killOnPreempt: true });
});

Deno.test("health checks, shell-less commands and the duplicate changeLog key", () => {
  const { value: hc } = ok(loadJobConfig(fixture("example/test_http_health.yaml"), "h", { validate: false }));
  assert.deepEqual(hc.defaultConfig.ports, [{ name: "http", value: 0, envName: "UBER_HTTP_PORT" }]);
  assert.deepEqual(hc.instanceConfig[0].healthCheck, {
    enabled: false,
    initialIntervalSecs: 70,
    intervalSecs: 1,
    maxConsecutiveFailures: 3,
    timeoutSecs: 1,
    type: "COMMAND",
    commandCheck: { command: "date && curl -f localhost:$UBER_HTTP_PORT" },
  });
  assert.deepEqual(hc.defaultConfig.command?.environment.variables[0], {
    name: "INITIAL_COOLOFF_SECS",
    value: "60",
  });
  assert.deepEqual(hc.defaultConfig.command?.uris[0].executable, false);
  const path = "tests/integration/test_configs/";
  const { value: plain } = ok(loadJobConfig(fixture(`${path}test_job_no_container.yaml`), "n"));
  assert.equal(plain.defaultConfig.command?.shell, false);
  assert.deepEqual(plain.defaultConfig.command?.arguments, ["batch"]);
  const { value: svc, warnings } = ok(loadJobConfig(fixture(`${path}test_stateless_job.yaml`), "s"));
  assert.equal(svc.type, "SERVICE");
  assert.deepEqual(warnings, [], "changeLog is server-set and ignored, twice");
});

Deno.test("a container a Mesos master would refuse at launch is refused when the job is created, naming the field", () => {
  const job = (container: string) =>
    `name: c\ninstancecount: 1\ndefaultconfig:\n  resource: { cpulimit: 1, memlimitmb: 8 }\n  command: { value: "true" }\n` +
    `  container:\n${container}`;
  const problems = (yaml: string) => {
    const r = loadJobConfig(yaml, "job.yaml");
    return r.ok ? [] : r.errors.map((e) => e.message);
  };
  assert.deepEqual(problems(job("    type: 1\n")), [
    "job.yaml:6: defaultconfig.container.docker.image: missing, expected a Docker image, as type is DOCKER",
  ]);
  assert.match(
    problems(job("    type: 2\n    mesos: { image: { type: 2 } }\n")).join("\n"),
    /defaultconfig\.container\.mesos\.image\.docker\.name: .*expected an image name, as type is DOCKER/i,
  );
  assert.match(
    problems(
      job("    type: 1\n    docker: { image: debian }\n    volumes: [{ containerpath: /tmp, mode: 1 }]\n"),
    )
      .join("\n"),
    /defaultconfig\.container\.volumes\[?\.?0\]?\.hostPath: .*expected exactly one of hostPath, image or source \(got 0\)/i,
  );
  assert.match(
    problems(job("    type: 2\n    mesos: { image: { type: 3, docker: { name: x } } }\n")).join("\n"),
    /defaultconfig\.container\.mesos\.image\.type: .*APPC \(1\) or DOCKER \(2\)/i,
  );
  // Peloton's lower-case keys inside a port mapping are read as the proto's, so they reach Mesos right.
  const r = loadJobConfig(
    job(
      "    type: 1\n    docker: { image: debian, portmappings: [{ hostport: 31000, containerport: 80 }] }\n",
    ),
    "job.yaml",
  );
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  assert.deepEqual(r.value.defaultConfig.container?.docker?.portMappings, [{
    hostPort: 31000,
    containerPort: 80,
  }]);
  // A fetched file's name in the sandbox, as Peloton's files spell it.
  const uris = loadJobConfig(
    "name: u\ninstancecount: 1\ndefaultconfig:\n  resource: { cpulimit: 1, memlimitmb: 8 }\n  command:\n" +
      "    value: ./run.sh\n    uris: [{ value: 'http://a/r', executable: true, outputfile: run.sh }]\n",
    "job.yaml",
  );
  assert.ok(uris.ok, JSON.stringify(!uris.ok && uris.errors));
  assert.deepEqual(uris.warnings, []);
  assert.deepEqual(uris.value.defaultConfig.command?.uris, [
    { value: "http://a/r", executable: true, outputFile: "run.sh" },
  ]);
});
