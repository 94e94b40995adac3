/** Bad input: every issue names the file, line, field path, value and what was expected. */
import assert from "node:assert/strict";
import {
  type ConfigIssue,
  detectConfigKind,
  formatIssues,
  loadJobConfig,
  loadRespoolConfig,
  loadStatelessSpec,
  loadUpdateConfig,
  normalizeConfigObject,
  parseJobConfig,
  parseRespoolConfig,
} from "./load.ts";

const CLI_JOB = `name: bad
instancecount: 2
defaultconfig:
  resource:
    cpulimit: lots
    memlimitmb: 2.0
  command:
    value: echo hi
`;

function errors(r: { ok: boolean; errors?: ConfigIssue[] }): ConfigIssue[] {
  assert.equal(r.ok, false, "expected the config to be rejected");
  return r.errors ?? [];
}

Deno.test("a wrong type names file, line, path as written, value and expectation", () => {
  const [e, ...rest] = errors(loadJobConfig(CLI_JOB, "bad.yaml"));
  assert.equal(rest.length, 0);
  assert.deepEqual(e, {
    file: "bad.yaml",
    line: 5,
    column: 5,
    path: "defaultconfig.resource.cpulimit",
    value: "lots",
    expected: "a number (0 or more)",
    message: 'bad.yaml:5: defaultconfig.resource.cpulimit: got "lots", expected a number (0 or more)',
  });
  const camel = CLI_JOB.replace("cpulimit", "cpuLimit").replace("defaultconfig", "defaultConfig");
  assert.equal(
    errors(loadJobConfig(camel, "bad.yaml"))[0].message,
    'bad.yaml:5: defaultConfig.resource.cpuLimit: got "lots", expected a number (0 or more)',
  );
});

Deno.test("a bad enum lists the names and numbers it accepts", () => {
  const text = "type: WORKER\ninstanceCount: 1\ndefaultConfig:\n  command: {value: x}\n";
  assert.equal(
    errors(loadJobConfig(text, "j.yaml"))[0].message,
    'j.yaml:1: type: got "WORKER", expected one of BATCH (0), SERVICE (1) or DAEMON (2)',
  );
  const kind = `instanceCount: 1
defaultConfig:
  command: {value: x}
  constraint:
    type: 1
    labelConstraint:
      kind: 7
      condition: 2
      label: {key: a, value: b}
`;
  assert.equal(
    errors(loadJobConfig(kind, "k.yaml"))[0].message,
    "k.yaml:7: defaultConfig.constraint.labelConstraint.kind: got 7, expected one of TASK (1) or HOST (2)",
  );
  // The placement strategy's names are job.proto's, though the model keeps short ones and takes both.
  const placement = (p: unknown) =>
    parseJobConfig({ instanceCount: 1, defaultConfig: { command: { value: "x" } }, placementStrategy: p });
  assert.deepEqual(errors(placement("PACK")).map((e) => e.message), [
    'request: placementStrategy: got "PACK", expected one of PLACEMENT_STRATEGY_INVALID (0), ' +
    "PLACEMENT_STRATEGY_PACK_HOST (1) or PLACEMENT_STRATEGY_SPREAD_JOB (2)",
  ]);
  for (
    const [given, read] of [["PACK_HOST", "PACK_HOST"], ["PLACEMENT_STRATEGY_SPREAD_JOB", "SPREAD_JOB"], [
      2,
      "SPREAD_JOB",
    ]]
  ) {
    const r = placement(given);
    assert.ok(r.ok, JSON.stringify(given));
    assert.equal(r.value.placementStrategy, read);
  }
});

Deno.test("respool rules: negative reservation, limit < reservation, bad kinds, percentages", () => {
  const text = `name: pool
resources:
- kind: cpu
  reservation: -1
  limit: 5
- kind: memory
  reservation: 10
  limit: 5
- kind: cpu
  limit: 1
controllerlimit:
  maxpercent: 150
`;
  assert.deepEqual(errors(loadRespoolConfig(text, "pool.yaml")).map((e) => e.message), [
    "pool.yaml:4: resources[0].reservation: got -1, expected a reservation of 0 or more",
    "pool.yaml:8: resources[1].limit: got 5, expected a limit of at least the reservation (10)",
    'pool.yaml:9: resources[2].kind: got "cpu", expected each kind once (also resources[0])',
    "pool.yaml:12: controllerlimit.maxpercent: got 150, expected a percentage between 0 and 100",
  ]);
  assert.equal(
    errors(loadRespoolConfig("resources:\n- kind: tpu\n", "p.yaml"))[0].message,
    'p.yaml:2: resources[0].kind: got "tpu", expected one of cpu, memory, disk or gpu',
  );
});

Deno.test("missing command and a controller other than instance 0", () => {
  const text = `instanceCount: 3
defaultConfig:
  resource: {cpuLimit: 1}
instanceConfig:
  0:
    command: {value: first}
  2:
    controller: true
    command: {value: third}
`;
  assert.deepEqual(errors(loadJobConfig(text, "job.yaml")).map((e) => e.message), [
    "job.yaml:2: defaultConfig.command: missing, expected a command: every instance needs one once " +
    "instanceConfig is merged over defaultConfig (instance 1)",
    "job.yaml:8: instanceConfig.2.controller: got true, expected false: only instance 0 may be a controller",
  ]);
});

Deno.test("an enabled health check that could never run is refused: no command, no httpCheck, GRPC", () => {
  const service = (check: string) =>
    `type: SERVICE\ninstanceCount: 1\ndefaultConfig:\n  command: {value: serve}\n  healthCheck: ${check}\n`;
  const cases: [string, string][] = [
    [
      "{enabled: true, type: COMMAND, commandCheck: {command: ''}}",
      'job.yaml:5: defaultConfig.healthCheck.commandCheck.command: got "", expected a command to run for the ' +
      "enabled check (or type HTTP with an httpCheck)",
    ],
    [
      "{enabled: true, type: HTTP}",
      "job.yaml:5: defaultConfig.healthCheck.httpCheck: missing, expected an httpCheck (port, path) for an HTTP check",
    ],
    [
      "{enabled: true, type: GRPC, commandCheck: {command: 'true'}}",
      'job.yaml:5: defaultConfig.healthCheck.type: got "GRPC", expected COMMAND or HTTP: a GRPC check is run by ' +
      "no agent, and the task would never be healthy",
    ],
  ];
  for (const [check, message] of cases) {
    assert.deepEqual(
      errors(loadJobConfig(service(check), "job.yaml")).map((e) => e.message),
      [message],
      check,
    );
  }
  // Disabled, or runnable: accepted (Peloton's own files carry a disabled check with an empty command).
  for (
    const check of [
      "{type: COMMAND, commandCheck: {command: ''}}",
      "{enabled: true, type: COMMAND, commandCheck: {command: 'true'}}",
      "{enabled: true, type: HTTP, httpCheck: {port: 8080, path: /health}}",
    ]
  ) {
    const r = loadJobConfig(service(check), "job.yaml");
    assert.ok(r.ok, r.ok ? "" : formatIssues(r.errors));
  }
});

Deno.test("a YAML syntax error is reported with file and line", () => {
  const [e] = errors(
    loadJobConfig("name: x\ndefaultConfig:\n  command: [echo, hi\ninstanceCount: 1\n", "s.yaml"),
  );
  assert.equal(e.file, "s.yaml");
  assert.equal(e.line, 4);
  assert.equal(e.expected, "valid YAML");
  assert.match(e.message, /^s\.yaml:4: invalid YAML: /);
  assert.equal(
    errors(loadJobConfig("- a\n- b\n", "l.yaml"))[0].message,
    "l.yaml:1: (top level): got a list, expected a mapping",
  );
  assert.equal(
    errors(loadJobConfig("", "e.yaml"))[0].message,
    "e.yaml:1: (top level): missing, expected a mapping",
  );
});

Deno.test("all schema errors are reported together with the rules they do not hide, in file order", () => {
  const text = `instanceCount: many
sla:
  preemptible: maybe
defaultConfig:
  container:
    docker: {image: debian}
instanceConfig:
  first:
    name: x
`;
  assert.deepEqual(errors(loadJobConfig(text, "m.yaml")).map((e) => e.message), [
    'm.yaml:1: instanceCount: got "many", expected a whole number, at least 1 (0 only for a DAEMON job)',
    'm.yaml:3: sla.preemptible: got "maybe", expected true or false',
    // Whatever the count, instance 0 runs the default config, which has no command.
    "m.yaml:4: defaultConfig.command: missing, expected a command: every instance needs one once " +
    "instanceConfig is merged over defaultConfig",
    "m.yaml:5: defaultConfig.container.type: missing, expected one of DOCKER (1) or MESOS (2)",
    'm.yaml:8: instanceConfig.first: got "first", expected an instance id (a whole number, 0 or more)',
  ]);
});

Deno.test("a misspelt key is refused with a suggestion; a key far from every known one only warns", () => {
  const text = "instanceCont: 3\ninstanceCount: 1\ndefaultConfig:\n  command: {value: x, shel: true}\n";
  const r = loadJobConfig(text, "u.yaml");
  assert.ok(!r.ok, "a typo would otherwise leave its field at the default");
  assert.deepEqual(r.errors.map((w) => [w.line, w.path, w.value]), [
    [1, "instanceCont", "instanceCont"],
    [4, "defaultConfig.command.shel", "shel"],
  ]);
  assert.match(r.errors[0].message, /^u\.yaml:1: instanceCont: unknown key; did you mean instanceCount\?/);
  assert.match(formatIssues(r.errors), /\n.*did you mean shell\?/);

  // Keys Peloton dropped, which its own files still carry, are ignored with a warning.
  const old = "instanceCount: 1\nsla:\n  minimumInstanceCount: 1\ndefaultConfig:\n  command: {value: x}\n";
  const kept = loadJobConfig(old, "o.yaml");
  assert.ok(kept.ok);
  assert.deepEqual(kept.warnings.map((w) => [w.line, w.path]), [[3, "sla.minimumInstanceCount"]]);
  assert.match(kept.warnings[0].message, /unknown key, ignored \(known keys:/);

  // A stored config was accepted once: it is read as it is.
  assert.ok(loadJobConfig(text, "u.yaml", { validate: false }).ok);
});

Deno.test("duplicate keys warn; explicit nulls are absent values", () => {
  const text =
    "instanceCount: 1\ninstancecount: 2\ndefaultConfig:\n  command: {value: x}\n  healthCheck: null\n";
  const r = loadJobConfig(text, "d.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.instanceCount, 2);
  assert.equal(r.value.defaultConfig.healthCheck, undefined);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "d.yaml:2: instancecount: duplicate key; this value replaces the one on line 1",
  ]);
});

Deno.test("an instance given twice in instanceConfig or instanceSpec warns as a duplicate key, naming both lines", () => {
  // YAML's `1:` and `"1":` are the same instance: one of the two configs is dropped, so it is said which.
  const text = "instanceCount: 3\ndefaultConfig:\n  command: {value: x}\ninstanceConfig:\n" +
    '  1: {name: x}\n  "1": {name: y}\n  2: {name: z}\n';
  const r = loadJobConfig(text, "d.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.instanceConfig[1].name, "y");
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "d.yaml:6: instanceConfig.1: duplicate key; this value replaces the one on line 5",
  ]);
  const spec = "instanceCount: 2\ndefaultSpec:\n  containers: [{entrypoint: {value: x}}]\ninstanceSpec:\n" +
    '  "0": {revocable: true}\n  0: {revocable: false}\n';
  const s = loadStatelessSpec(spec, "s.yaml");
  assert.ok(s.ok, JSON.stringify(!s.ok && s.errors));
  assert.deepEqual(s.warnings.map((w) => w.message), [
    "s.yaml:6: instanceSpec.0: duplicate key; this value replaces the one on line 5",
  ]);
  // A key merged in by `<<:` is overridden silently by one written in the map, as for other keys.
  const merged = "base: &b {1: {name: m}}\ninstanceCount: 2\ndefaultConfig:\n  command: {value: x}\n" +
    "instanceConfig:\n  <<: *b\n  1: {name: own}\n";
  const m = loadJobConfig(merged, "m.yaml", { validate: false });
  assert.ok(m.ok, JSON.stringify(!m.ok && m.errors));
  assert.equal(m.value.instanceConfig[1].name, "own");
  assert.deepEqual(m.warnings.filter((w) => /duplicate/.test(w.message)), []);
});

Deno.test("API bodies: snake_case, proto-JSON numbers as strings, enum names, string instance keys", () => {
  const body = {
    name: "api",
    type: "SERVICE",
    instance_count: "3",
    sla: { priority: 5, preemptible: true, revocable: true },
    default_config: { command: { value: "run" }, resource: { cpu_limit: 0.5, mem_limit_mb: "128" } },
    instanceConfig: { "2": { name: "last" } },
    respoolID: { value: "pool-1" },
    placementStrategy: "PLACEMENT_STRATEGY_SPREAD_JOB",
    changeLog: null,
  };
  const r = parseJobConfig(body);
  assert.ok(r.ok, r.ok ? "" : formatIssues(r.errors));
  assert.equal(r.value.instanceCount, 3);
  assert.equal(r.value.defaultConfig.resource?.memLimitMb, 128);
  assert.equal(r.value.instanceConfig[2].name, "last");
  assert.equal(r.value.respoolId, "pool-1");
  assert.equal(r.value.placementStrategy, "SPREAD_JOB");
  assert.deepEqual(r.warnings, []);
  const bad = parseJobConfig({ ...body, sla: { revocable: true } }, "POST /api/v1/jobs");
  assert.deepEqual(errors(bad).map((e) => e.message), [
    "POST /api/v1/jobs: sla.preemptible: missing, expected true, since sla.revocable is true: " +
    "a revocable SERVICE job must be preemptible",
  ]);
  const norm = normalizeConfigObject("respool", { Name: "p", RESOURCES: [{ Kind: "cpu" }], extra: 1 });
  assert.deepEqual(norm.value, { name: "p", resources: [{ kind: "cpu" }] });
  assert.deepEqual(norm.warnings.map((w) => w.path), ["extra"]);
  assert.equal(parseRespoolConfig({ resources: [{ kind: "cpu", reservation: 1, limit: 2 }] }).ok, true);
});

Deno.test("update configs, and kind detection", () => {
  const r = loadUpdateConfig("batchsize: 2\nrollbackonfailure: true\nmax_instance_retries: 3\n", "u.yaml");
  assert.ok(r.ok);
  assert.equal(r.value.batchSize, 2);
  assert.equal(r.value.rollbackOnFailure, true);
  assert.equal(r.value.maxInstanceAttempts, 3);
  assert.equal(r.value.batchPercentage, 0);
  assert.equal(
    errors(loadUpdateConfig("batchPercentage: 150\n", "u.yaml"))[0].message,
    "u.yaml:1: batchPercentage: got 150, expected a number between 0 and 100",
  );
  assert.equal(detectConfigKind("batchSize: 1\n"), "update");
  assert.equal(detectConfigKind("defaultSpec: {}\ninstanceCount: 1\n"), "stateless-spec");
  assert.equal(detectConfigKind("instancecount: 1\n"), "job");
  assert.equal(detectConfigKind("resources: []\n"), "respool");
  assert.equal(detectConfigKind("users: []\n"), "unknown");
  assert.equal(detectConfigKind("a: [\n"), "unknown");
});

Deno.test("odd API bodies are rejected with issues, never thrown", () => {
  const cyclic: Record<string, unknown> = { instanceCount: 1 };
  cyclic.defaultConfig = cyclic;
  for (const body of [null, "job", 42, [1, 2], { sla: [] }, cyclic]) {
    const r = parseJobConfig(body);
    assert.equal(r.ok, false, JSON.stringify(body === cyclic ? "cyclic" : body));
  }
  assert.equal(
    errors(parseJobConfig("job"))[0].message,
    'request: (top level): got "job", expected a mapping',
  );
});

Deno.test("a pool's misspelt share is refused, not read as share 0", () => {
  const text = "name: p\nresources:\n  - {kind: cpu, reservation: 1, limit: 2, shares: 3}\n";
  const r = loadRespoolConfig(text, "p.yaml");
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => e.message), [
    "p.yaml:3: resources[0].shares: unknown key; did you mean share? (known keys: kind, reservation, limit, share, type)",
  ]);
});
