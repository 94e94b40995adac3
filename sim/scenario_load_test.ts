/** Loading a scenario's files: a file a field names that cannot be read is one error at that field's line. */
import assert from "node:assert/strict";
import { loadScenarioFile, ScenarioError } from "./scenario_load.ts";

const SCENARIO = `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 1, cpu: 8, memoryMb: 16384}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 4, limit: 8}
      - name: b
        file: pools/b.yaml
workloads:
  - {name: w, respool: /org/a, arrival: {at: [0]}, instances: 1, durationSec: 10}
  - name: j
    respool: /org/a
    jobFile: jobs/nope.yaml
  - {name: t, respool: /org/a, trace: {file: nope.csv.gz, hostClass: std}}
`;

Deno.test("a job, respool or trace file that cannot be read is one error naming the scenario's line and field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/s.yaml`, SCENARIO);
    const errors = await loadScenarioFile(`${dir}/s.yaml`).then(
      () => assert.fail("loaded a scenario whose files are missing"),
      (e: Error) => {
        assert.ok(e instanceof ScenarioError, String(e));
        return e.errors;
      },
    );
    assert.deepEqual(errors, [
      `${dir}/s.yaml:19: workloads[1].jobFile: cannot read job file ${dir}/jobs/nope.yaml: no such file`,
      `${dir}/s.yaml:20: workloads[2].trace.file: cannot read trace ${dir}/nope.csv.gz: no such file`,
      `${dir}/s.yaml:14: respools[0].children[1].file: cannot read respool file ${dir}/pools/b.yaml: no such file`,
    ]);
    // A directory where the job file should be says so, once.
    await Deno.mkdir(`${dir}/jobs/nope.yaml`, { recursive: true });
    await assert.rejects(() => loadScenarioFile(`${dir}/s.yaml`), (e: ScenarioError) => {
      assert.equal(e.errors.filter((x) => x.includes("jobFile")).length, 1, e.message);
      assert.match(e.message, /s\.yaml:19: workloads\[1\]\.jobFile: cannot read job file .*nope\.yaml: /);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
