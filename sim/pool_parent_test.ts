/** A scenario's pool names no parent: its parent is where the scenario nests it, as PATH is in production. */
import assert from "node:assert/strict";
import { parseScenario } from "./scenario.ts";
import { loadScenarioFile, ScenarioError } from "./scenario_load.ts";

const scenario = (pools: string) =>
  `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 1, cpu: 8, memoryMb: 16384}
respools:
${pools}workloads:
  - {name: w, respool: /org/a, durationSec: 10}
`;

const WHY = "expected no parent: a pool's parent is where the scenario nests it (the pool whose children " +
  "list it, or the root for a pool in respools)";

Deno.test("an inline pool naming its parent is refused, in any key style, with its line", () => {
  const res = parseScenario(
    scenario(`  - name: org
    resources: [{kind: cpu, reservation: 8, limit: 8}]
    children:
      - name: a
        parent: /other
        resources: [{kind: cpu, reservation: 4, limit: 8}]
      - name: b
        Parent: {value: root}
        resources: [{kind: cpu, reservation: 4, limit: 8}]
  - name: c
    parent: ""
    resources: [{kind: cpu, reservation: 0, limit: 8}]
`),
    "s.yaml",
  );
  assert.ok(!res.ok, "a pool naming its parent was taken");
  // An empty parent is none, as Peloton's CLI reads it.
  assert.deepEqual(res.errors, [
    `s.yaml:10: respools[0].children[0].parent: got "/other", ${WHY}; remove it`,
    `s.yaml:13: respools[0].children[1].parent: ${WHY}; remove it`,
  ]);
});

Deno.test("a pool file naming its parent is refused, as `peloton respool validate` refuses it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      scenario(`  - name: org
    resources: [{kind: cpu, reservation: 8, limit: 8}]
    children:
      - {name: a, file: a.yaml}
      - {name: b, file: b.yaml, parent: /elsewhere}
`),
    );
    await Deno.writeTextFile(
      `${dir}/a.yaml`,
      "name: a\nparent: root\nresources:\n  - {kind: cpu, reservation: 4, limit: 8}\n",
    );
    await Deno.writeTextFile(
      `${dir}/b.yaml`,
      "name: b\nresources:\n  - {kind: cpu, reservation: 4, limit: 8}\n",
    );
    // Beside a file, the scenario's own entry is refused before the file is read.
    await assert.rejects(() => loadScenarioFile(`${dir}/s.yaml`), (e: ScenarioError) => {
      assert.deepEqual(e.errors, [
        `${dir}/s.yaml:10: respools[0].children[1].parent: got "/elsewhere", ${WHY}; remove it`,
      ]);
      return true;
    });
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      (await Deno.readTextFile(`${dir}/s.yaml`)).replace(", parent: /elsewhere", ""),
    );
    await assert.rejects(() => loadScenarioFile(`${dir}/s.yaml`), (e: ScenarioError) => {
      assert.deepEqual(e.errors, [
        `${dir}/s.yaml:9: respools[0].children[0].file: ${dir}/a.yaml:2: parent: got "root", ${WHY}; remove it ` +
        "from the file",
      ]);
      return true;
    });
    // Without it, the file's pool is taken.
    await Deno.writeTextFile(
      `${dir}/a.yaml`,
      "name: a\nresources:\n  - {kind: cpu, reservation: 4, limit: 8}\n",
    );
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    assert.equal(loaded.scenario.respools[0].children?.[0].name, "a");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
