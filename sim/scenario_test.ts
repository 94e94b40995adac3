/** The scenario format: every shipped scenario parses; bad files are refused with file, line, path and value. */
import assert from "node:assert/strict";
import { parseScenario } from "./scenario.ts";
import { loadScenarioFile, ScenarioError } from "./scenario_load.ts";
import { ROOT } from "./testing.ts";

const BASE = `name: t
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
`;

function errors(text: string): string[] {
  const res = parseScenario(text, "bad.yaml");
  assert.equal(res.ok, false, "expected the scenario to be refused");
  return res.ok ? [] : res.errors;
}

Deno.test("every scenario in scenarios/ loads, with the job, respool and trace files it names", async () => {
  const files = [...Deno.readDirSync(`${ROOT}/scenarios`)].filter((e) => e.name.endsWith(".yaml")).map((e) =>
    e.name
  );
  assert.ok(files.length >= 9, files.join(", "));
  for (const f of files) {
    const loaded = await loadScenarioFile(`${ROOT}/scenarios/${f}`);
    const text = await Deno.readTextFile(`${ROOT}/scenarios/${f}`);
    assert.match(text, /^# Question this scenario answers:/, `${f} starts with the question it answers`);
    assert.ok(loaded.scenario.name, f);
  }
});

Deno.test("a bad value names the file, the line, the field path and the value", () => {
  const e = errors(`${BASE}workloads:
  - name: w
    respool: /pool
    type: cronjob
    arrival: { ratePerSec: -2 }
`);
  assert.ok(
    e.some((x) => /^bad\.yaml:11: workloads\[0\]\.type: got "cronjob", .*BATCH/.test(x)),
    e.join("\n"),
  );
  assert.ok(e.some((x) => x.startsWith("bad.yaml:12: workloads[0].arrival")), e.join("\n"));
});

Deno.test("workload types are case-insensitive; distributions, gangs, constraints and elastic jobs are accepted", () => {
  const res = parseScenario(
    `${BASE}workloads:
  - name: a
    respool: /pool
    type: stateful
    instances: { lognormal: { median: 10, sigma: 0.5 } }
    cpu: { choice: [[1, 2], [4, 1]] }
    gang: 4
    hostAttributes: { zone: zone-1 }
    maxPerHost: 1
    arrival: { diurnal: { meanPerSec: 0.1, amplitude: 0.5, peakAtSec: 3600 } }
  - name: b
    respool: /pool
    type: Batch
    arrival: { bursts: { everySec: 60, jobs: 5 } }
    elastic: { maxInstances: 40, growBy: 10, everySec: 5 }
    revocable: true
    cpuUsage: { uniform: [0.2, 0.5] }
`,
    "ok.yaml",
  );
  assert.ok(res.ok, res.ok ? "" : res.errors.join("\n"));
  assert.deepEqual(res.scenario.workloads.map((w) => w.type), ["STATEFUL", "BATCH"]);
});

Deno.test("a pool in Peloton's respool shape is checked by the resource manager's own rules, with its line", () => {
  const e = errors(`name: t
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: pool
    owningteam: team6
    policy: 1
    controllerlimit: { maxpercent: 10 }
    resources:
      - {kind: cpu, reservation: 32, limit: 16}
      - {kind: memroy, reservation: 1, limit: 1}
`);
  assert.ok(
    e.some((x) => /^bad\.yaml:11: respools\[0\]\.resources\[1\]\.kind: got "memroy"/.test(x)),
    e.join("\n"),
  );
});

Deno.test("unknown pool keys are errors, not silently ignored", () => {
  const e = errors(BASE.replace("  - name: pool\n", "  - name: pool\n    reservaton: 3\n"));
  assert.ok(e.some((x) => /^bad\.yaml:6: respools\[0\]\.reservaton: unknown key/.test(x)), e.join("\n"));
});

Deno.test("an event needs exactly one action, and names classes and workloads that exist", () => {
  const e = errors(`${BASE}events:
  - { atSec: 10, failHosts: { class: std }, drain: { class: std } }
  - { atSec: 20 }
  - { atSec: 30, addHosts: { class: gpu, count: 2 } }
`);
  assert.ok(
    e.some((x) => /^bad\.yaml:9: events\[0\]: expected exactly one of .*; got failHosts, drain/.test(x)),
    e.join("\n"),
  );
  assert.ok(e.some((x) => /^bad\.yaml:10: events\[1\]: .*got none/.test(x)), e.join("\n"));
  assert.ok(
    e.some((x) => /^bad\.yaml:11: events\[2\]\.addHosts\.class: .*one of the host classes \(std\)/.test(x)),
    e.join("\n"),
  );
});

Deno.test("YAML syntax errors name the line", () => {
  const e = errors("name: t\nhostClasses: [\n  {name: a\n");
  assert.match(e[0], /^bad\.yaml:\d+: /);
});

Deno.test("missing files named by a scenario are reported with their path", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/s.yaml`,
    `${BASE}workloads:\n  - {name: t, respool: /pool, trace: {file: nope.csv, hostClass: std}}\n`,
  );
  await assert.rejects(() => loadScenarioFile(`${dir}/s.yaml`), (e: Error) => {
    assert.ok(e instanceof ScenarioError);
    assert.match(e.message, /nope\.csv/);
    return true;
  });
  await Deno.remove(dir, { recursive: true });
});
