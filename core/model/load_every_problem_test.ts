/** One pass finds every problem: type and shape problems, and the rules of every part that parsed. */
import assert from "node:assert/strict";
import {
  type ConfigIssue,
  loadJobConfig,
  loadRespoolConfig,
  loadStatelessSpec,
  parseJobConfig,
  parseRespoolConfig,
} from "./load.ts";

function messages(r: { ok: boolean; errors?: ConfigIssue[] }): string[] {
  assert.equal(r.ok, false, "expected the config to be rejected");
  return (r.errors ?? []).map((e) => e.message);
}

/** A wrong type, two unknown enums and four rule violations, each in a different part of the file. */
const SEVERAL_JOB = `name: several
instanceCount: 2
sla:
  priority: high
  maximumRunningInstances: 3
defaultConfig:
  resource: {cpuLimit: 1}
  command: {value: run}
  container:
    type: DOCKR
  ports:
  - name: http
  constraint:
    type: AND_CONSTRAINT
    labelConstraint:
      kind: RACK
      condition: EQUAL
      label: {key: zone, value: a}
instanceConfig:
  1:
    controller: true
`;

const SEVERAL_JOB_PROBLEMS = [
  'j.yaml:4: sla.priority: got "high", expected a whole number (0 or more)',
  "j.yaml:5: sla.maximumRunningInstances: got 3, expected at most instanceCount (2)",
  'j.yaml:10: defaultConfig.container.type: got "DOCKR", expected one of DOCKER (1) or MESOS (2)',
  'j.yaml:12: defaultConfig.ports[0].envName: missing, expected an envName for dynamic port "http" ' +
  "(value 0 is picked at launch)",
  "j.yaml:13: defaultConfig.constraint.andConstraint: missing, expected an andConstraint, " +
  "as type is AND_CONSTRAINT",
  'j.yaml:16: defaultConfig.constraint.labelConstraint.kind: got "RACK", expected one of TASK (1) or HOST (2)',
  "j.yaml:21: instanceConfig.1.controller: got true, expected false: only instance 0 may be a controller",
];

Deno.test("a job file lists its type, enum, constraint, port, SLA and per-instance problems together", () => {
  const r = loadJobConfig(SEVERAL_JOB, "j.yaml");
  assert.deepEqual(messages(r), SEVERAL_JOB_PROBLEMS);
  const [priority] = r.ok ? [] : r.errors;
  assert.deepEqual([priority.line, priority.column, priority.path], [4, 3, "sla.priority"]);
});

Deno.test("an API body gets the same full list, and is still refused", () => {
  const body = {
    instanceCount: 2,
    sla: { priority: "high", maximumRunningInstances: 3 },
    defaultConfig: { command: { value: "run" }, ports: [{ name: "http" }] },
  };
  assert.deepEqual(messages(parseJobConfig(body, "req")), [
    'req: sla.priority: got "high", expected a whole number (0 or more)',
    "req: sla.maximumRunningInstances: got 3, expected at most instanceCount (2)",
    'req: defaultConfig.ports[0].envName: missing, expected an envName for dynamic port "http" ' +
    "(value 0 is picked at launch)",
  ]);
});

Deno.test("shape-only loading (validate: false) reports the shape problems and no rules", () => {
  assert.deepEqual(messages(loadJobConfig(SEVERAL_JOB, "j.yaml", { validate: false })), [
    SEVERAL_JOB_PROBLEMS[0],
    SEVERAL_JOB_PROBLEMS[2],
    SEVERAL_JOB_PROBLEMS[4],
    SEVERAL_JOB_PROBLEMS[5],
  ]);
});

Deno.test("a rule that reads a malformed field is not judged; the others are, at the input's indices", () => {
  const text = `type: WORKER
instanceCount: many
sla:
  maxRunningTime: 60
  maximumRunningInstances: 5
defaultConfig:
  command: {value: x}
  healthCheck: {type: 1}
  ports:
  - {name: "", value: 80}
  - web
  - {name: "", value: 81}
  - {name: http, value: lots}
`;
  // The type decides the SLA and health-check rules and the count bounds the running instances: neither
  // parsed. A port entry that is not a mapping does not shift the entries after it; a port whose value
  // did not parse cannot be called dynamic.
  assert.deepEqual(messages(loadJobConfig(text, "u.yaml")), [
    'u.yaml:1: type: got "WORKER", expected one of BATCH (0), SERVICE (1) or DAEMON (2)',
    'u.yaml:2: instanceCount: got "many", expected a whole number, at least 1 (0 only for a DAEMON job)',
    'u.yaml:10: defaultConfig.ports[0].name: got "", expected a port name',
    'u.yaml:11: defaultConfig.ports[1]: got "web", expected a mapping',
    'u.yaml:12: defaultConfig.ports[2].name: got "", expected a port name',
    'u.yaml:13: defaultConfig.ports[3].value: got "lots", expected a whole number between 0 and 65535',
  ]);
});

Deno.test("a malformed instance override hides only that instance's merged rules", () => {
  const text = `instanceCount: 3
defaultConfig:
  resource: {cpuLimit: 1}
instanceConfig:
  0:
    command: {value: a}
  1:
    command: echo b
`;
  // Instance 1 gave a command, just not as a mapping; instance 2 has none at all.
  assert.deepEqual(messages(loadJobConfig(text, "o.yaml")), [
    "o.yaml:2: defaultConfig.command: missing, expected a command: every instance needs one once " +
    "instanceConfig is merged over defaultConfig (instance 2)",
    'o.yaml:8: instanceConfig.1.command: got "echo b", expected a mapping',
  ]);
});

Deno.test("a constraint without a type whose only sub-constraint is malformed names just that", () => {
  const text = `instanceCount: 1
defaultConfig:
  command: {value: x}
  constraint:
    andConstraint:
      constraints:
      - labelConstraint: {kind: 9, condition: 1, label: {key: a}}
      - type: OR
        labelConstraint: {kind: 1, condition: 1, label: {key: b}}
`;
  assert.deepEqual(messages(loadJobConfig(text, "c.yaml")), [
    "c.yaml:7: defaultConfig.constraint.andConstraint.constraints[0].labelConstraint.kind: got 9, " +
    "expected one of TASK (1) or HOST (2)",
    "c.yaml:8: defaultConfig.constraint.andConstraint.constraints[1].orConstraint: missing, " +
    "expected an orConstraint, as type is OR_CONSTRAINT",
  ]);
});

Deno.test("a pool file lists its enum, type, limit, duplicate-kind and percentage problems together", () => {
  const text = `name: pool
resources:
- kind: tpu
  reservation: 1
- kind: cpu
  reservation: lots
  limit: 4
- kind: memory
  reservation: 10
  limit: 5
- kind: cpu
  limit: 1
controllerLimit: {maxPercent: 150}
slackLimit: {maxPercent: half}
`;
  // resources[1]'s limit is not compared with a reservation that did not parse; the duplicate names
  // resources[1] as in the file, although the unknown kind took resources[0] out of the checked pool.
  assert.deepEqual(messages(loadRespoolConfig(text, "pool.yaml")), [
    'pool.yaml:3: resources[0].kind: got "tpu", expected one of cpu, memory, disk or gpu',
    'pool.yaml:6: resources[1].reservation: got "lots", expected a number',
    "pool.yaml:10: resources[2].limit: got 5, expected a limit of at least the reservation (10)",
    'pool.yaml:11: resources[3].kind: got "cpu", expected each kind once (also resources[1])',
    "pool.yaml:13: controllerLimit.maxPercent: got 150, expected a percentage between 0 and 100",
    'pool.yaml:14: slackLimit.maxPercent: got "half", expected a number',
  ]);
});

Deno.test("a pool without usable resources still has its limits checked", () => {
  assert.deepEqual(messages(loadRespoolConfig("name: p\ncontrollerLimit: {maxPercent: 150}\n", "p.yaml")), [
    "p.yaml:1: resources: missing, expected a list of cpu, memory, disk and gpu entries",
    "p.yaml:2: controllerLimit.maxPercent: got 150, expected a percentage between 0 and 100",
  ]);
  assert.deepEqual(
    messages(parseRespoolConfig({ resources: "cpu", slackLimit: { maxPercent: -1 } }, "req")),
    [
      'req: resources: got "cpu", expected a list of cpu, memory, disk and gpu entries',
      "req: slackLimit.maxPercent: got -1, expected a percentage between 0 and 100",
    ],
  );
});

Deno.test("a stateless spec lists its type problems and the rules of the job it becomes", () => {
  const text = `name: s
instanceCount: -1
sla: {revocable: true, preemptible: maybe}
defaultSpec:
  containers:
  - name: c
    entrypoint: {value: x}
    resource: {cpuLimit: x}
    ports:
    - name: http
  - name: d
`;
  assert.deepEqual(messages(loadStatelessSpec(text, "s.yaml")), [
    "s.yaml:2: instanceCount: got -1, expected a whole number, at least 1",
    's.yaml:3: sla.preemptible: got "maybe", expected true or false',
    "s.yaml:5: defaultSpec.containers: got a list, expected at most one container: several containers " +
    "per pod are not supported",
    's.yaml:8: defaultSpec.containers[0].resource.cpuLimit: got "x", expected a number (0 or more)',
    "s.yaml:10: defaultSpec.containers[0].ports[0].envName: missing, expected an envName for dynamic port " +
    '"http" (value 0 is picked at launch)',
  ]);
});

Deno.test("a document that is not a mapping has nothing more to check", () => {
  assert.deepEqual(messages(loadJobConfig("- a\n", "l.yaml")), [
    "l.yaml:1: (top level): got a list, expected a mapping",
  ]);
});
