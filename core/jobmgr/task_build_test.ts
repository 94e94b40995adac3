/** The launch spec a task's config makes: its custom executor and its health check's environment rule. */
import assert from "node:assert/strict";
import { loadJobConfig, loadStatelessSpec } from "../model/load.ts";
import { statelessSpecToJobConfig } from "../model/stateless_spec.ts";
import type { JobConfig } from "../model/config_types.ts";
import type { TaskRecord } from "../model/records.ts";
import { makeJobConfig } from "../testing/fixtures.ts";
import { buildLaunchSpec, TaskConfigs } from "./task_build.ts";

const placement = { hostname: "h1", agentId: "agent-h1" };

function launchSpecOf(config: JobConfig, instanceId = 0) {
  const task = { jobId: "job-1", instanceId, runId: 1 } as TaskRecord;
  return buildLaunchSpec({ config }, task, new TaskConfigs(config).get(instanceId), placement, {});
}

function loaded(yaml: string): JobConfig {
  const result = loadJobConfig(yaml, "job.yaml");
  assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
  return result.value;
}

const THERMOS = btoa('{"task": {"name": "hello"}}');

Deno.test("a CUSTOM executor of a Peloton job file reaches the launch spec as given; other tasks have none", () => {
  const config = loaded(`
name: thermos
type: SERVICE
instanceCount: 2
defaultConfig:
  resource: {cpuLimit: 0.5, memLimitMb: 64}
  command: {value: "./thermos_executor.pex --nosetuid"}
  executor:
    type: CUSTOM
    name: MyExecutor
    data: "${THERMOS}"
instanceConfig:
  1:
    executor: {type: EXECUTOR_TYPE_CUSTOM, data: "e30="}
`);
  const first = launchSpecOf(config);
  assert.deepEqual(first.executor, { type: "CUSTOM", name: "MyExecutor", data: THERMOS });
  // The command stays the task's: the backend decides where it goes.
  assert.equal(first.command.value, "./thermos_executor.pex --nosetuid");
  assert.deepEqual(launchSpecOf(config, 1).executor, { type: "CUSTOM", data: "e30=" });
  assert.equal(launchSpecOf(makeJobConfig()).executor, undefined);
});

Deno.test("only a CUSTOM executor is launched, as Peloton's host manager does (others are ignored)", () => {
  const config = makeJobConfig({ type: "SERVICE", task: { executor: { type: "DEFAULT", data: "e30=" } } });
  assert.equal(launchSpecOf(config).executor, undefined);
});

Deno.test("a v1alpha pod's mesos_spec.executor_spec reaches the launch spec", () => {
  const result = loadStatelessSpec(
    `
name: svc
instance_count: 1
default_spec:
  containers:
    - name: main
      resource: {cpu_limit: 0.5, mem_limit_mb: 64}
      entrypoint: {value: "./thermos_executor.pex"}
  mesos_spec:
    executor_spec: {type: EXECUTOR_TYPE_CUSTOM, executor_id: thermos, data: "${THERMOS}"}
`,
    "spec.yaml",
  );
  assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
  const spec = launchSpecOf(statelessSpecToJobConfig(result.value));
  assert.deepEqual(spec.executor, { type: "CUSTOM", executorId: { value: "thermos" }, data: THERMOS });
});

Deno.test("a command health check unshares the task's environment only when commandCheck.unshareEnvironments says so", () => {
  const check = (unshare: string) =>
    loaded(`
name: web
type: SERVICE
instanceCount: 1
defaultConfig:
  resource: {cpuLimit: 0.5, memLimitMb: 64}
  command: {value: "sleep 100"}
  healthCheck:
    enabled: true
    type: COMMAND
    commandCheck: {command: "test -n \\"$PELOTON_JOB_ID\\""${unshare}}
`);
  const shared = launchSpecOf(check("")).healthCheck;
  assert.equal(shared?.command, 'test -n "$PELOTON_JOB_ID"');
  assert.equal(shared?.unshareEnvironments, undefined);
  assert.equal(
    launchSpecOf(check(", unshareEnvironments: false")).healthCheck?.unshareEnvironments,
    undefined,
  );
  assert.equal(launchSpecOf(check(", unshareEnvironments: true")).healthCheck?.unshareEnvironments, true);
});
