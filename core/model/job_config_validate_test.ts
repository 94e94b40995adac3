/** The job rules' cost and the port rules Peloton's validator lacks: huge counts, repeated port names. */
import assert from "node:assert/strict";
import type { JobConfig } from "./config_types.ts";
import { type Gaps, NO_GAPS } from "./config_issues.ts";
import { validateJobConfig } from "./job_config_validate.ts";
import { loadJobConfig, parseJobConfig, parseStatelessSpec } from "./load.ts";

const COMMAND = { command: { value: "x" } };

function makeJob(overrides: Record<string, unknown>): JobConfig {
  const r = parseJobConfig({ instanceCount: 3, defaultConfig: COMMAND, ...overrides }, "t", {
    validate: false,
  });
  if (!r.ok) throw new Error(r.errors.map((e) => e.message).join("\n"));
  return r.value;
}

const messages = (r: { ok: boolean; errors?: { message: string }[] }) => {
  assert.equal(r.ok, false, "expected the config to be refused");
  return (r.errors ?? []).map((e) => e.message);
};

/** The job with its instanceConfig counting the instance ids read; too many reads fail the test at once. */
function countingReads(config: JobConfig): { config: JobConfig; reads: () => number } {
  let reads = 0;
  const instanceConfig = new Proxy(config.instanceConfig, {
    get(target, key) {
      if (typeof key === "string" && /^\d+$/.test(key) && ++reads > 1000) {
        throw new Error(`read instance ${key}: the rules walk every instance`);
      }
      return Reflect.get(target, key);
    },
  });
  return { config: { ...config, instanceConfig }, reads: () => reads };
}

Deno.test("per-instance rules read no instance past the most a job may have, whatever the numbers", () => {
  const countMalformed: Gaps = { ...NO_GAPS, malformed: (p) => p.length === 1 && p[0] === "instanceCount" };
  const cases: [JobConfig, Gaps][] = [
    [makeJob({ instanceCount: 100_000_000_000 }), NO_GAPS],
    [makeJob({ type: "DAEMON", instanceCount: 300_000_000 }), NO_GAPS],
    [makeJob({ instanceCount: 0, instanceConfig: { 300000000: COMMAND } }), countMalformed],
    [makeJob({ instanceCount: 300_000_000, instanceConfig: { 5: COMMAND } }), NO_GAPS],
  ];
  for (const [job, gaps] of cases) {
    const { config, reads } = countingReads(job);
    validateJobConfig(config, { gaps });
    assert.ok(reads() <= 6, `${reads()} instance reads`);
  }
});

Deno.test("a huge instanceCount is refused at once, from a file or an API body", () => {
  const yaml = "instanceCount: 100000000000\ndefaultConfig:\n  command: {value: x}\n";
  assert.deepEqual(messages(loadJobConfig(yaml, "j.yaml")), [
    "j.yaml:1: instanceCount: got 100000000000, expected at most 100000 instances per job",
  ]);
  assert.deepEqual(messages(parseJobConfig({ instanceCount: 300000000, defaultConfig: COMMAND })), [
    "request: instanceCount: got 300000000, expected at most 100000 instances per job",
  ]);
  const spec = { instanceCount: 300000000, defaultSpec: { containers: [{ entrypoint: { value: "x" } }] } };
  assert.deepEqual(messages(parseStatelessSpec(spec)), [
    "request: instanceCount: got 300000000, expected at most 100000 instances per job",
  ]);
  // The default config is still checked, once, on instance 0.
  assert.deepEqual(messages(parseJobConfig({ instanceCount: 300000000, defaultConfig: {} })), [
    "request: instanceCount: got 300000000, expected at most 100000 instances per job",
    "request: defaultConfig.command: missing, expected a command: every instance needs one once " +
    "instanceConfig is merged over defaultConfig",
  ]);
});

Deno.test("an instance override no job could have is warned of, even beside a malformed count", () => {
  const r = parseJobConfig({
    instanceCount: "two",
    defaultConfig: COMMAND,
    instanceConfig: { "300000000": COMMAND },
  });
  assert.deepEqual(messages(r), [
    'request: instanceCount: got "two", expected a whole number, at least 1 (0 only for a DAEMON job)',
  ]);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "request: instanceConfig.300000000: got 300000000, expected an instance id below 100000, the most " +
    "instances a job may have; this override is never used",
  ]);
  const known = parseJobConfig({ instanceCount: 3, defaultConfig: COMMAND, instanceConfig: { 7: COMMAND } });
  assert.ok(known.ok);
  assert.deepEqual(known.warnings.map((w) => w.expected), [
    "an instance id below instanceCount (3); this override is never used",
  ]);
});

Deno.test("a port name or envName used twice in one task is refused, naming the second", () => {
  const job = (ports: unknown[], more: Record<string, unknown> = {}) =>
    parseJobConfig({ instanceCount: 3, defaultConfig: { ...COMMAND, ports }, ...more });
  assert.deepEqual(messages(job([{ name: "http", value: 31005 }, { name: "http", value: 31006 }])), [
    'request: defaultConfig.ports[1].name: got "http", expected a port name used once ' +
    '(ports[0] is also named "http")',
  ]);
  assert.deepEqual(messages(job([{ name: "http", envName: "A" }, { name: "http", envName: "B" }])), [
    'request: defaultConfig.ports[1].name: got "http", expected a port name used once ' +
    '(ports[0] is also named "http")',
  ]);
  assert.deepEqual(
    messages(job([{ name: "a", envName: "P1" }, { name: "b", envName: "P1" }, { name: "c", envName: "P1" }])),
    [
      'request: defaultConfig.ports[1].envName: got "P1", expected an envName used once (ports[0] also sets P1)',
      'request: defaultConfig.ports[2].envName: got "P1", expected an envName used once (ports[0] also sets P1)',
    ],
  );
  assert.ok(job([{ name: "a", envName: "P1" }, { name: "b", value: 80 }, { name: "c", value: 81 }]).ok);
  // A static port asked for twice fits no host.
  assert.deepEqual(messages(job([{ name: "a", value: 8080 }, { name: "b", value: 8080 }])), [
    "request: defaultConfig.ports[1].value: got 8080, expected a static port asked for once " +
    "(ports[0] also asks for 8080)",
  ]);
  // An override's ports replace the default's whole: each list is checked as the instance gets it.
  const twice = [{ name: "a", envName: "P1" }, { name: "a", envName: "P2" }];
  assert.deepEqual(
    messages(job([{ name: "a", envName: "P1" }], { instanceConfig: { 1: { ports: twice } } })),
    [
      'request: instanceConfig.1.ports[1].name: got "a", expected a port name used once (ports[0] is also named "a")',
    ],
  );
  assert.deepEqual(
    messages(job(twice, { instanceConfig: { 1: { ports: [{ name: "a", envName: "P1" }] } } })),
    [
      'request: defaultConfig.ports[1].name: got "a", expected a port name used once (ports[0] is also named "a") ' +
      "(instances 0, 2)",
    ],
  );
  const spec = {
    instanceCount: 1,
    defaultSpec: {
      containers: [{
        entrypoint: { value: "x" },
        ports: [{ name: "http", value: 1 }, { name: "http", value: 2 }],
      }],
    },
  };
  assert.deepEqual(messages(parseStatelessSpec(spec)), [
    'request: defaultSpec.containers[0].ports[1].name: got "http", expected a port name used once ' +
    '(ports[0] is also named "http")',
  ]);
});

Deno.test("an envName the executor, another port or the task's environment already sets is refused, naming it", () => {
  const job = (ports: unknown[], variables: unknown[] = [], more: Record<string, unknown> = {}) =>
    parseJobConfig({
      type: "SERVICE",
      instanceCount: 2,
      defaultConfig: { command: { value: "x", environment: { variables } }, ports },
      ...more,
    });
  const got = (j: number, name: string) =>
    `request: defaultConfig.ports[${j}].envName: got "${name}", expected`;
  for (const name of ["PELOTON_JOB_ID", "PELOTON_INSTANCE_ID", "PELOTON_TASK_ID", "MESOS_SANDBOX", "HOST"]) {
    assert.deepEqual(messages(job([{ name: "http", envName: name }])), [
      `${
        got(0, name)
      } an envName the executor does not set itself (it sets ${name} in every task, over the port)`,
    ]);
  }
  // Every port is also exported as PORT_<NAME> and by its name: another port's number would win or lose.
  assert.deepEqual(
    messages(job([{ name: "http", envName: "HTTP" }, { name: "admin", envName: "PORT_HTTP" }, {
      name: "grpc",
      envName: "http",
    }])),
    [
      `${got(1, "PORT_HTTP")} an envName no other port is exported in (ports[0] "http" is exported as ` +
      "PORT_HTTP too)",
      `${got(2, "http")} an envName no other port is exported in (ports[0] "http" is exported as http too)`,
    ],
  );
  const env = [{ name: "LOG", value: "1" }, { name: "HTTP_PORT", value: "8080" }];
  assert.deepEqual(messages(job([{ name: "http", envName: "HTTP_PORT" }], env)), [
    `${got(0, "HTTP_PORT")} an envName the task's environment does not set (it sets HTTP_PORT too, which ` +
    "the port would replace)",
  ]);
  // An instance whose own command sets the name is refused alone, named.
  const override = { instanceConfig: { 1: { command: { value: "y", environment: { variables: env } } } } };
  assert.deepEqual(messages(job([{ name: "http", envName: "HTTP_PORT" }], [], override)), [
    `${got(0, "HTTP_PORT")} an envName the task's environment does not set (it sets HTTP_PORT too, which ` +
    "the port would replace) (instance 1)",
  ]);
  // The same from a v1alpha spec, named where the spec says it.
  const spec = {
    instanceCount: 1,
    defaultSpec: {
      containers: [{
        entrypoint: { value: "x" },
        environment: [{ name: "P", value: "1" }],
        ports: [{ name: "http", envName: "P" }],
      }],
    },
  };
  assert.deepEqual(messages(parseStatelessSpec(spec)), [
    'request: defaultSpec.containers[0].ports[0].envName: got "P", expected an envName the task\'s ' +
    "environment does not set (it sets P too, which the port would replace)",
  ]);
  // Its own PORT_<NAME> or name holds the same number; other names, and ordinary variables, are fine.
  assert.ok(job([{ name: "http", envName: "PORT_HTTP" }, { name: "admin", envName: "admin" }], env).ok);
  assert.ok(
    job([{ name: "http", envName: "UBER_HTTP_PORT" }, { name: "x", envName: "PELOTON_PORT" }], env).ok,
  );
});

Deno.test("a command with nothing to run is refused as a missing one is, naming its value", () => {
  const expected = "expected the command to run: every instance needs one once instanceConfig is merged " +
    "over defaultConfig";
  assert.deepEqual(messages(parseJobConfig({ instanceCount: 1, defaultConfig: { command: {} } })), [
    `request: defaultConfig.command.value: missing, ${expected}`,
  ]);
  assert.deepEqual(
    messages(parseJobConfig({ instanceCount: 1, defaultConfig: { command: { value: "" } } })),
    [
      `request: defaultConfig.command.value: got "", ${expected}`,
    ],
  );
  // An instance's own command is blamed where it is; one that says nothing leaves it to the default's.
  const r = parseJobConfig({
    instanceCount: 2,
    defaultConfig: COMMAND,
    instanceConfig: { 1: { command: { shell: false } } },
  });
  assert.deepEqual(messages(r), [`request: instanceConfig.1.command.value: missing, ${expected}`]);

  // The v1alpha spec's container `command` (which replaces its entrypoint, as in Peloton), and an entrypoint
  // without a value (which is no command at all).
  const spec = (container: object, instance?: object) => ({
    instanceCount: 2,
    defaultSpec: { containers: [container] },
    ...(instance ? { instanceSpec: { 1: { containers: [instance] } } } : {}),
  });
  assert.deepEqual(messages(parseStatelessSpec(spec({ command: {} }))), [
    `request: defaultSpec.containers[0].command.value: missing, ${expected}`,
  ]);
  assert.deepEqual(
    messages(parseStatelessSpec(spec({ command: { value: "" }, entrypoint: { value: "x" } }))),
    [
      `request: defaultSpec.containers[0].command.value: got "", ${expected}`,
    ],
  );
  const missing = "request: defaultSpec.containers[0].entrypoint: missing, expected a command: every " +
    "instance needs one once instanceConfig is merged over defaultConfig";
  assert.deepEqual(messages(parseStatelessSpec(spec({ entrypoint: { value: "" } }))), [missing]);
  assert.deepEqual(messages(parseStatelessSpec(spec({ entrypoint: {} }))), [missing]);
  const x = { entrypoint: { value: "x" } };
  assert.deepEqual(messages(parseStatelessSpec(spec(x, { command: {} }))), [
    `request: instanceSpec.1.containers[0].command.value: missing, ${expected}`,
  ]);
  assert.deepEqual(messages(parseStatelessSpec(spec(x, { environment: [{ name: "A", value: "b" }] }))), [
    "request: instanceSpec.1.containers[0].entrypoint.value: missing, expected the command to run: an " +
    "instance's container that sets its environment, entrypoint or URIs runs a command of its own instead " +
    "of the default spec's",
  ]);
  // An instance's container that says nothing of a command runs the default spec's.
  const ok = parseStatelessSpec(spec(x, { resource: { cpuLimit: 2 } }));
  assert.ok(ok.ok, JSON.stringify(ok));
});

Deno.test("a port's envName or name that would replace PATH, HOME or an executor variable is refused or warned", () => {
  const job = (ports: unknown[], variables: unknown[] = []) =>
    parseJobConfig({
      type: "SERVICE",
      instanceCount: 1,
      defaultConfig: { command: { value: "x", environment: { variables } }, ports },
    });
  for (const name of ["PATH", "HOME", "PWD", "SHELL", "USER"]) {
    assert.deepEqual(messages(job([{ name: "http", envName: name }])), [
      `request: defaultConfig.ports[0].envName: got "${name}", expected an envName the task's processes do ` +
      `not rely on (${name} is the process environment's own, which the port would replace)`,
    ]);
  }
  // The agents export a port by its name too, but never over such a variable: the name is kept, with a word.
  for (const name of ["PATH", "HOST", "MESOS_SANDBOX", "PELOTON_TASK_ID"]) {
    const r = job([{ name, value: 0, envName: "MY_PORT" }]);
    assert.ok(r.ok, `${name}: ${JSON.stringify(r)}`);
    assert.deepEqual(r.warnings.map((w) => w.message), [
      `request: defaultConfig.ports[0].name: got "${name}", expected a port name the task's environment ` +
      `does not use; exported as MY_PORT and PORT_${name} only, not as ${name}, which the task relies on`,
    ]);
  }
  // The executor's own variables win over the task's, as over a port's.
  const r = job([], [{ name: "HOST", value: "myhost" }, { name: "MESOS_SANDBOX", value: "/x" }, {
    name: "PATH",
    value: "/opt/bin:/bin",
  }]);
  assert.ok(r.ok);
  assert.deepEqual(r.warnings.map((w) => w.message), [
    "request: defaultConfig.command.environment.variables[0].name: replaced: the executor sets HOST in every " +
    "task, over the task's own",
    "request: defaultConfig.command.environment.variables[1].name: replaced: the executor sets " +
    "MESOS_SANDBOX in every task, over the task's own",
  ]);
});
