/**
 * Job-file commands a scenario replays: a command the simulator cannot time is warned of at load, and the
 * commands it reads run for their time (GNU sleep's forms, endless loops) in a run.
 */
import assert from "node:assert/strict";
import { loadScenarioFile } from "./scenario_load.ts";
import { simulate } from "./testing.ts";

const SCENARIO = `name: s
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 16384, diskMb: 100000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 16, limit: 16}
      - {kind: memory, reservation: 32768, limit: 32768}
      - {kind: disk, reservation: 200000, limit: 200000}
workloads:
  - name: script
    respool: /p
    jobFile: jobs/script.yaml
  - name: timed
    respool: /p
    jobFile: jobs/script.yaml
    durationSec: 30
    failureRate: 0.1
  - name: sleeps
    respool: /p
    jobFile: jobs/sleeps.yaml
`;

/** A batch job file of `instances` tasks running `command`, `instanceConfig` YAML appended. */
const jobFile = (command: string, instances = 2, instanceConfig = "") =>
  `name: j
instanceCount: ${instances}
defaultConfig:
  resource: {cpuLimit: 1, memLimitMb: 64, diskLimitMb: 10}
  command:
    shell: true
    value: ${JSON.stringify(command)}
${instanceConfig}`;

async function withFiles(files: Record<string, string>, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/jobs`);
    for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text);
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a job file's command it cannot time is warned of once, unless durationSec models it", async () => {
  const script = jobFile(
    "./run.sh --input data",
    3,
    `instanceConfig:
  1:
    command: {shell: true, value: "echo one && sleep 1m"}
  2:
    command: {shell: true, value: "if [ -f x ]; then exit 1; fi; sleep $WAIT_SECONDS"}
`,
  );
  await withFiles({
    "s.yaml": SCENARIO,
    "jobs/script.yaml": script,
    "jobs/sleeps.yaml": jobFile("echo start; sleep 1m 30s; echo done"),
  }, async (dir) => {
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    const job = `${dir}/s.yaml:13: workloads[0].jobFile: ${dir}/jobs/script.yaml`;
    const model = "set the workload's durationSec (and failureRate) to model them";
    assert.deepEqual(loaded.warnings, [
      `${job}: defaultConfig.command "./run.sh --input data" runs what the simulator cannot time: ` +
      `./run.sh --input data. Its tasks would be taken to run for 0 s, the time of its readable sleeps ` +
      `only, and exit 0: ${model}`,
      `${job}: instanceConfig.2.command "if [ -f x ]; then exit 1; fi; sleep $WAIT_SECONDS" runs what the ` +
      `simulator cannot time: exit 1 (only under a condition it cannot decide), sleep $WAIT_SECONDS: an ` +
      `operand it cannot read. Its tasks would be taken to run for 0 s, the time of its readable sleeps ` +
      `only, and exit 0: ${model}`,
    ]);
  });
});

Deno.test("Peloton's echo-and-sleep and endless-loop job files load without a warning", async () => {
  const commands = [
    'echo "Job $PELOTON_JOB_ID instance $PELOTON_INSTANCE_ID: $PELOTON_TASK_ID" && sleep 240',
    "echo lol & sleep 3",
    "while :; do echo running; sleep 10; done",
    "sleep 2; echo I have control",
    "echo failing && exit 3",
  ];
  for (const command of commands) {
    await withFiles({
      "s.yaml": SCENARIO.slice(0, SCENARIO.indexOf("  - name: timed")),
      "jobs/script.yaml": jobFile(command),
    }, async (dir) => {
      assert.deepEqual((await loadScenarioFile(`${dir}/s.yaml`)).warnings, [], command);
    });
  }
  // The shipped scenarios' job files too.
  for await (const entry of Deno.readDir(new URL("../scenarios", import.meta.url))) {
    if (!entry.name.endsWith(".yaml")) continue;
    const loaded = await loadScenarioFile(new URL(`../scenarios/${entry.name}`, import.meta.url).pathname);
    assert.deepEqual(loaded.warnings.filter((w) => w.includes("cannot time")), [], entry.name);
  }
});

Deno.test("a job file's tasks run for their command's time: minutes, operands, environment", async () => {
  const timed = jobFile(
    "sleep 1m 30s",
    2,
    `instanceConfig:
  1:
    command:
      shell: true
      value: "sleep $WAIT"
      environment: {variables: [{name: WAIT, value: "1.5e1"}]}
`,
  );
  await withFiles({
    "s.yaml": SCENARIO.slice(0, SCENARIO.indexOf("  - name: timed")),
    "jobs/script.yaml": timed,
  }, async (dir) => {
    const sim = await simulate(`${dir}/s.yaml`, 1);
    const [job] = sim.jobmgr.jobs.values();
    assert.equal(job.runtime.state, "SUCCEEDED");
    const ran = [...job.tasks.values()].map((t) => (t.completionTimeMs! - t.startTimeMs!) / 1000);
    assert.deepEqual(ran, [90, 15]);
  });
});
