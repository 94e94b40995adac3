/** JobConfig schema (key styles, enums), Peloton's instance merge, and the semantic rules. */
import assert from "node:assert/strict";
import type { JobConfig, TaskConfig } from "./config_types.ts";
import {
  capRestartPolicies,
  JobConfigSchema,
  mergeTaskConfig,
  mergeTaskConfigs,
  validateJobConfig,
} from "./job_config.ts";
import { loadJobConfig, loadStatelessSpec, parseJobConfig } from "./load.ts";
import { formatPath } from "./config_issues.ts";

/** A valid job built from an API-style body, overridable per test. */
function makeJob(overrides: Record<string, unknown> = {}): JobConfig {
  const r = parseJobConfig(
    { instanceCount: 3, defaultConfig: { command: { value: "x" } }, ...overrides },
    "t",
    {
      validate: false,
    },
  );
  if (!r.ok) throw new Error(r.errors.map((e) => e.message).join("\n"));
  return r.value;
}

const problems = (config: JobConfig, opts = {}) =>
  validateJobConfig(config, opts).map((i) => `${i.severity} ${formatPath(i.path)}: ${i.expected}`);

Deno.test("the three key styles give the same JobConfig", () => {
  const lower = `instancecount: 2
defaultconfig:
  resource: {cpulimit: 1, memlimitmb: 2.0}
  killgraceperiodseconds: 5
  command: {value: x}
  restartpolicy: {maxfailures: 1}
sla: {maximumrunninginstances: 1, priority: 3}
`;
  const camel = lower.replaceAll("instancecount", "instanceCount").replaceAll(
    "defaultconfig",
    "defaultConfig",
  )
    .replaceAll("cpulimit", "cpuLimit").replaceAll("memlimitmb", "memLimitMb")
    .replaceAll("killgraceperiodseconds", "killGracePeriodSeconds").replaceAll(
      "restartpolicy",
      "restartPolicy",
    )
    .replaceAll("maxfailures", "maxFailures").replaceAll(
      "maximumrunninginstances",
      "maximumRunningInstances",
    );
  const snake = camel.replaceAll(/([a-z])([A-Z])/g, (_, a, b) => `${a}_${b.toLowerCase()}`);
  assert.match(snake, /instance_count: 2/);
  const [a, b, c] = [lower, camel, snake].map((t) => loadJobConfig(t, "k.yaml"));
  assert.ok(a.ok && b.ok && c.ok);
  assert.deepEqual(a.value, b.value);
  assert.deepEqual(a.value, c.value);
  assert.deepEqual(a.warnings, []);
  assert.equal(a.value.defaultConfig.resource?.memLimitMb, 2);
  assert.equal(a.value.defaultConfig.killGracePeriodSeconds, 5);
});

Deno.test("enums read from numbers or names in several spellings", () => {
  const type = (t: unknown) => JobConfigSchema.parse({ type: t }).type;
  assert.deepEqual([0, 1, 2, "SERVICE", "service", "JOB_TYPE_DAEMON", "1"].map(type), [
    "BATCH",
    "SERVICE",
    "DAEMON",
    "SERVICE",
    "SERVICE",
    "DAEMON",
    "SERVICE",
  ]);
  const constraint = (kind: unknown, condition: unknown) =>
    JobConfigSchema.parse({
      defaultConfig: {
        constraint: { type: "LABEL", labelConstraint: { kind, condition, label: { key: "k" } } },
      },
    }).defaultConfig.constraint;
  for (
    const [kind, condition] of [
      [2, 2],
      ["HOST", "EQUAL"],
      ["LABEL_CONSTRAINT_KIND_HOST", "CONDITION_EQUAL"],
      [
        "host",
        "LABEL_CONSTRAINT_CONDITION_EQUAL",
      ],
    ]
  ) {
    assert.deepEqual(constraint(kind, condition), {
      type: "LABEL_CONSTRAINT",
      labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key: "k", value: "" }, requirement: 0 },
    });
  }
  const placement = (p: unknown) => JobConfigSchema.parse({ placementStrategy: p }).placementStrategy;
  assert.deepEqual([0, 1, "SPREAD_JOB", "PLACEMENT_STRATEGY_PACK_HOST"].map(placement), [
    "PLACEMENT_STRATEGY_INVALID",
    "PACK_HOST",
    "SPREAD_JOB",
    "PACK_HOST",
  ]);
  // Through the key pre-pass, which also maps v1alpha's `httpGet` onto `httpCheck`.
  const task = makeJob({
    defaultConfig: {
      container: { type: 2 },
      preemptionPolicy: { type: "TYPE_NON_PREEMPTIBLE" },
      healthCheck: { type: "HEALTH_CHECK_TYPE_HTTP", http_get: { port: 8080 } },
    },
  }).defaultConfig;
  assert.equal(task.container?.type, "MESOS");
  assert.equal(task.preemptionPolicy?.type, "NON_PREEMPTIBLE");
  assert.equal(task.healthCheck?.type, "HTTP");
  assert.deepEqual(task.healthCheck?.httpCheck, { port: 8080 });
  assert.deepEqual(
    [task.healthCheck?.initialIntervalSecs, task.healthCheck?.intervalSecs, task.healthCheck?.timeoutSecs],
    [15, 10, 20],
  );
});

Deno.test("defaults follow the protos: BATCH, zeros, false, shell true", () => {
  const job = JobConfigSchema.parse({ defaultConfig: { command: { value: "x" } } });
  assert.equal(job.type, "BATCH");
  assert.equal(job.instanceCount, 0);
  assert.equal(job.placementStrategy, "PLACEMENT_STRATEGY_INVALID");
  assert.deepEqual(job.sla, {
    priority: 0,
    preemptible: false,
    revocable: false,
    maximumRunningInstances: 0,
    minimumRunningInstances: 0,
    maxRunningTime: 0,
    maximumUnavailableInstances: 0,
  });
  assert.deepEqual(job.defaultConfig.command, {
    shell: true,
    value: "x",
    arguments: [],
    environment: { variables: [] },
    uris: [],
  });
  assert.deepEqual(job.instanceConfig, {});
});

Deno.test("merge: top-level fields, override wins when set; bools always from the override", () => {
  const base: TaskConfig = {
    name: "base",
    labels: [{ key: "a", value: "1" }],
    resource: { cpuLimit: 1, memLimitMb: 100, diskLimitMb: 10, fdLimit: 0, gpuLimit: 0 },
    killGracePeriodSeconds: 30,
    controller: true,
    revocable: true,
  };
  assert.equal(mergeTaskConfigs(base, undefined), base);
  assert.deepEqual(mergeTaskConfigs(base, {}), { ...base, controller: false, revocable: false });
  const merged = mergeTaskConfigs(base, {
    name: "",
    labels: [],
    resource: { cpuLimit: 2, memLimitMb: 0, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 },
    killGracePeriodSeconds: 0,
    revocable: true,
  });
  assert.equal(merged.name, "base", "an empty name does not override");
  assert.deepEqual(merged.labels, base.labels, "an empty list does not override");
  assert.deepEqual(merged.resource, { cpuLimit: 2, memLimitMb: 0, diskLimitMb: 0, fdLimit: 0, gpuLimit: 0 });
  assert.equal(merged.killGracePeriodSeconds, 30, "0 does not override");
  assert.equal(merged.controller, false);
  assert.equal(merged.revocable, true);
  const withName = mergeTaskConfigs(base, {
    name: "i3",
    killGracePeriodSeconds: 5,
    labels: [{ key: "b", value: "" }],
  });
  assert.deepEqual([withName.name, withName.killGracePeriodSeconds, withName.labels], ["i3", 5, [{
    key: "b",
    value: "",
  }]]);
  assert.deepEqual(mergeTaskConfigs({}, {}), {}, "bools left out on both sides stay absent");
  const job = makeJob({ instanceConfig: { "1": { name: "one" } } });
  assert.equal(mergeTaskConfig(job, 1).name, "one");
  assert.equal(mergeTaskConfig(job, 1).command?.value, "x");
  assert.equal(mergeTaskConfig(job, 2), job.defaultConfig);
});

Deno.test("SERVICE/DAEMON: no running-instance limits or running time; revocable needs preemptible", () => {
  const sla = { maximumRunningInstances: 2, minimumRunningInstances: 1, maxRunningTime: 60, revocable: true };
  for (const type of ["SERVICE", "DAEMON"]) {
    assert.deepEqual(problems(makeJob({ type, sla })), [
      `error sla.maximumRunningInstances: 0 for a ${type} job`,
      `error sla.minimumRunningInstances: 0 for a ${type} job`,
      `error sla.maxRunningTime: 0 for a ${type} job`,
      `error sla.preemptible: true, since sla.revocable is true: a revocable ${type} job must be preemptible`,
    ]);
  }
  assert.deepEqual(problems(makeJob({ type: "DAEMON" })), [], "DAEMON is accepted");
  assert.deepEqual(problems(makeJob({ sla: { ...sla, maxRunningTime: 60 } })), [], "all fine for BATCH");
});

Deno.test("instance counts and running-instance bounds", () => {
  assert.deepEqual(problems(makeJob({ instanceCount: 0 })), ["error instanceCount: at least 1 instance"]);
  assert.deepEqual(problems(makeJob({ instanceCount: 11 }), { maxTasksPerJob: 10 }), [
    "error instanceCount: at most 10 instances per job",
  ]);
  assert.deepEqual(problems(makeJob({ sla: { maximumRunningInstances: 4 } })), [
    "error sla.maximumRunningInstances: at most instanceCount (3)",
  ]);
  assert.deepEqual(problems(makeJob({ sla: { maximumRunningInstances: 2, minimumRunningInstances: 3 } })), [
    "error sla.minimumRunningInstances: at most sla.maximumRunningInstances (2)",
  ]);
  assert.deepEqual(problems(makeJob({ sla: { minimumRunningInstances: 4 } })), [
    "error sla.minimumRunningInstances: at most instanceCount (3)",
  ]);
});

Deno.test("a bad instance count is told what the rules accept: at least 1, 0 only for a DAEMON job", () => {
  const load = (count: string, type = "BATCH") =>
    loadJobConfig(`type: ${type}\ninstanceCount: ${count}\ndefaultConfig: {command: {value: x}}\n`, "c.yaml");
  for (const bad of ["-1", "2.5", "many"]) {
    const r = load(bad);
    assert.ok(!r.ok);
    assert.deepEqual(r.errors.map((e) => e.expected), [
      "a whole number, at least 1 (0 only for a DAEMON job)",
    ]);
  }
  for (const type of ["BATCH", "SERVICE"]) {
    const r = load("0", type);
    assert.ok(!r.ok);
    assert.deepEqual(r.errors.map((e) => e.message), [
      "c.yaml:2: instanceCount: got 0, expected at least 1 instance",
    ]);
  }
  assert.ok(load("0", "DAEMON").ok);
  assert.ok(load("1").ok);
  const spec = (count: string) =>
    loadStatelessSpec(
      `instanceCount: ${count}\ndefaultSpec: {containers: [{name: c, entrypoint: {value: x}}]}\n`,
      "s.yaml",
    );
  const bad = spec("-1");
  assert.ok(!bad.ok);
  assert.deepEqual(bad.errors.map((e) => e.expected), ["a whole number, at least 1"]);
  const zero = spec("0");
  assert.ok(!zero.ok);
  assert.deepEqual(zero.errors.map((e) => e.expected), ["at least 1 instance"]);
  assert.ok(spec("2").ok);
});

Deno.test("task rules: ports, batch-only and service-only restrictions; a batch job may have a volume", () => {
  const ports = [{ name: "http" }, { name: "", value: 80 }];
  assert.deepEqual(problems(makeJob({ defaultConfig: { command: { value: "x" }, ports } })), [
    'error defaultConfig.ports[0].envName: an envName for dynamic port "http" (value 0 is picked at launch)',
    "error defaultConfig.ports[1].name: a port name",
  ]);
  const custom = { type: "CUSTOM", data: "e30=" };
  const service = (task: Record<string, unknown>) =>
    makeJob({ type: "SERVICE", defaultConfig: { command: { value: "x" }, ...task } });
  assert.deepEqual(
    problems(service({ ports: [{ name: "http" }], executor: custom })),
    [],
    "custom executor ports",
  );
  assert.deepEqual(problems(service({ executor: { type: "CUSTOM", data: "thermos config" } })), [
    "error defaultConfig.executor.data: the executor's data in base64 (bytes, as Peloton's ExecutorInfo.data)",
  ]);
  assert.deepEqual(problems(service({ executor: { type: 1 }, preemptionPolicy: { killOnPreempt: true } })), [
    "error defaultConfig.preemptionPolicy.killOnPreempt: false for a SERVICE job",
    "error defaultConfig.executor.type: CUSTOM (2), the only executor type supported",
    "error defaultConfig.executor.data: executor data",
  ]);
  const batch = makeJob({
    defaultConfig: {
      command: { value: "x" },
      healthCheck: { type: 1 },
      executor: custom,
      volume: { containerPath: "/data", sizeMB: 10 },
    },
  });
  assert.deepEqual(problems(batch), [
    "error defaultConfig.healthCheck: no healthCheck on a BATCH job",
    "error defaultConfig.executor: no executor on a BATCH job",
  ]);
  const stateful = makeJob({
    type: 1,
    defaultConfig: { command: { value: "x" }, volume: { containerPath: "/d" } },
  });
  assert.deepEqual(problems(stateful), []);
});

Deno.test("controllers, commands, preemption overrides: checked per instance, blaming their source", () => {
  const job = makeJob({
    instanceCount: 4,
    defaultConfig: { controller: true },
    instanceConfig: { "0": { command: { value: "a" }, controller: true }, "3": { command: { value: "b" } } },
  });
  assert.deepEqual(problems(job), [
    "error defaultConfig.command: a command: every instance needs one once instanceConfig is merged over " +
    "defaultConfig (instances 1-2)",
    "error defaultConfig.controller: false: only instance 0 may be a controller (instances 1-2)",
  ]);
  const gang = makeJob({
    instanceCount: 4,
    sla: { preemptible: true, minimumRunningInstances: 2 },
    instanceConfig: { "1": { preemptionPolicy: { type: 2 } }, "2": { preemptionPolicy: { type: 2 } } },
  });
  assert.deepEqual(problems(gang), [
    "error instanceConfig.1.preemptionPolicy.type: " +
    "no preemption override below sla.minimumRunningInstances (2): " +
    "one gang would mix preemptible and non-preemptible tasks",
  ]);
  assert.deepEqual(problems(makeJob({ instanceConfig: { "7": { name: "x" } } })), [
    "warning instanceConfig.7: an instance id below instanceCount (3); this override is never used",
  ]);
});

Deno.test("restartPolicy.maxFailures above 100 warns and is capped in the loaded config", () => {
  const job = makeJob({ defaultConfig: { command: { value: "x" }, restartPolicy: { maxFailures: 500 } } });
  assert.deepEqual(problems(job), [
    "warning defaultConfig.restartPolicy.maxFailures: at most 100; capped at 100",
  ]);
  assert.equal(capRestartPolicies(job).defaultConfig.restartPolicy?.maxFailures, 100);
  assert.equal(job.defaultConfig.restartPolicy?.maxFailures, 500, "the input is not mutated");
  const text =
    "instanceCount: 1\ndefaultConfig:\n  command: {value: x}\n  restartPolicy: {maxFailures: 500}\n";
  const r = loadJobConfig(text, "r.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.defaultConfig.restartPolicy?.maxFailures, 100);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "r.yaml:4: defaultConfig.restartPolicy.maxFailures: got 500, expected at most 100; capped at 100",
  ]);
});

Deno.test("an environment variable may say its Mesos type VALUE, by name or number; SECRET is refused", () => {
  const job = (type: unknown) => ({
    instanceCount: 1,
    defaultConfig: {
      resource: { cpuLimit: 1, memLimitMb: 10 },
      command: { value: "env", environment: { variables: [{ name: "A", value: "1", type }] } },
    },
  });
  for (const type of ["VALUE", "value", 1, "1", 0, "UNKNOWN"]) {
    const r = parseJobConfig(job(type));
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(r.warnings, [], `no warning for type ${type}`);
    // Kept as the variable it is: a name and a value.
    assert.deepEqual(r.value.defaultConfig.command?.environment.variables, [{ name: "A", value: "1" }]);
  }
  const secret = parseJobConfig(job("SECRET"));
  assert.ok(!secret.ok);
  assert.match(
    secret.errors[0].message,
    /variables\[0\]\.type: got "SECRET", expected VALUE \(1\): .*`secrets`/,
  );
});
