/** The scenario format: every shipped scenario parses; bad files are refused with file, line, path and value. */
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { parseRespoolConfig } from "../core/model/load.ts";
import { RespoolTree, ROOT_ID } from "../core/resmgr/respool_tree.ts";
import { parseScenario, poolConfig, type ScenarioPool } from "./scenario.ts";
import { loadScenarioFile, ScenarioError } from "./scenario_load.ts";
import { runScenario } from "./runner.ts";
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
    assert.deepEqual(loaded.warnings, [], `${f} has nothing the run ignores`);
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
    `${BASE}durationSec: 600
workloads:
  - name: a
    respool: /pool
    type: stateful
    instances: { uniform: [4, 16] }
    durationSec: { lognormal: { median: 10, sigma: 0.5 } }
    cpu: { choice: [[1, 2], [4, 1]] }
    hostAttributes: { zone: zone-1 }
    maxPerHost: 1
    arrival: { diurnal: { meanPerSec: 0.1, amplitude: 0.5, peakAtSec: 3600 } }
  - name: c
    respool: /pool
    instances: { uniform: [4, 16] }
    gang: 4
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
  assert.deepEqual(res.scenario.workloads.map((w) => w.type), ["STATEFUL", "BATCH", "BATCH"]);
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

Deno.test("a pool key one typo from a known one is an error with a suggestion", () => {
  const e = errors(BASE.replace("  - name: pool\n", "  - name: pool\n    owningTeem: t\n"));
  assert.ok(
    e.some((x) => /^bad\.yaml:6: respools\[0\]\.owningTeem: unknown key; did you mean owningTeam\?/.test(x)),
    e.join("\n"),
  );
  // The scenario's own keys, which the resource manager's rules never see, are known keys too.
  const own = [
    ...errors(
      `${BASE}    childern:\n      - {name: a, resources: [{kind: cpu, reservation: 1, limit: 1}]}\n`,
    ),
    ...errors(`${BASE}  - {name: b, fiel: b.yaml}\n`),
  ];
  assert.ok(
    own.some((x) =>
      /^bad\.yaml:8: respools\[0\]\.childern: unknown key; did you mean children\? \(known keys: name, .*, children, file\)$/
        .test(x)
    ),
    own.join("\n"),
  );
  assert.ok(
    own.some((x) => /^bad\.yaml:8: respools\[1\]\.fiel: unknown key; did you mean file\?/.test(x)),
    own.join("\n"),
  );
  // Also below the pool's top level, and in an event's pool change.
  const shares = [
    ...errors(BASE.replace("limit: 32}", "limit: 32, shares: 2}")),
    ...errors(`${BASE}events:\n  - {atSec: 10, updatePool: {path: /pool, descripton: x}}\n`),
  ];
  assert.ok(
    shares.some((x) => /^bad\.yaml:7: respools\[0\]\.resources\[0\]\.shares: .*did you mean share\?/.test(x)),
    shares.join("\n"),
  );
  assert.ok(
    shares.some((x) =>
      /^bad\.yaml:9: events\[0\]\.updatePool\.descripton: .*did you mean description\?/.test(x)
    ),
    shares.join("\n"),
  );
});

Deno.test("a key refused with a block value is reported on the key's line, not its value's", () => {
  const e = [
    ...errors(`${BASE}    slackLimt:
      maxPercent: 30
workloads:
  - name: w
    respool: /pool
    durationSec: 5
    arival:
      # a comment
      # another
      ratePerSec: 1
`),
    ...errors(`${BASE}events:
  - atSec: 10
    updatePool:
      path: /pool
      children:
        - {name: a, resources: [{kind: cpu, reservation: 1, limit: 1}]}
`),
  ];
  for (
    const line of [
      /^bad\.yaml:8: respools\[0\]\.slackLimt: unknown key; did you mean slackLimit\?/,
      /^bad\.yaml:14: workloads\[0\]\.arival: unknown key; expected one of /,
      /^bad\.yaml:12: events\[0\]\.updatePool\.children: expected no children: /,
    ]
  ) assert.ok(e.some((x) => line.test(x)), `${line}\n${e.join("\n")}`);
});

Deno.test("other unknown pool keys are ignored with a warning naming the line: the scenario runs", async () => {
  const text = `${BASE.replace("  - name: pool\n", "  - name: pool\n    foo: 3\n")}events:
  - {atSec: 10, updatePool: {path: /pool, bar: 1}}
`;
  const res = parseScenario(text, "warn.yaml");
  assert.ok(res.ok, res.ok ? "" : res.errors.join("\n"));
  assert.equal(res.warnings.length, 2, res.warnings.join("\n"));
  assert.match(
    res.warnings[0],
    /^warn\.yaml:6: respools\[0\]\.foo: unknown key, ignored \(known keys: name, .*, children, file\)$/,
  );
  assert.match(res.warnings[1], /^warn\.yaml:10: events\[0\]\.updatePool\.bar: unknown key, ignored/);
  // The resource manager ignores the keys too: the pool is made and updated.
  const sim = await runScenario(res.scenario, { seed: 1, checkInvariants: true });
  assert.deepEqual(sim.events.map((e) => e.error), [undefined]);
  assert.ok([...sim.resmgr.tree.all()].some((p) => p.path === "/pool"));
});

Deno.test("updatePool takes force without a warning, and refuses children and file, which an update would drop", () => {
  const ok = parseScenario(
    `${BASE}events:\n  - {atSec: 10, updatePool: {path: /pool, force: true}}\n`,
    "ok.yaml",
  );
  assert.ok(ok.ok, ok.ok ? "" : ok.errors.join("\n"));
  assert.deepEqual(ok.warnings, [], "force is UpdateResourcePool's own field");
  assert.deepEqual(
    errors(
      `${BASE}events:\n  - {atSec: 10, updatePool: {path: /pool, file: p.yaml, children: [], force: yes}}\n`,
    ),
    [
      "bad.yaml:9: events[0].updatePool.children: expected no children: an update changes this pool's own config; its children are in respools",
      'bad.yaml:9: events[0].updatePool.file: got "p.yaml", expected no file: give the fields to change here',
      'bad.yaml:9: events[0].updatePool.force: got "yes", expected true or false',
    ],
  );
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

Deno.test("aliases are bounded as in Peloton's files: a billion laughs or an alias with no anchor is one error", () => {
  const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
  for (const [k, name] of [..."bcdefghi"].entries()) {
    levels.push(`${name}: &${name} [${Array(10).fill(`*${"abcdefghi"[k]}`).join(", ")}]`);
  }
  assert.deepEqual(errors(`${BASE}${levels.join("\n")}\n`), [
    "bad.yaml:12: aliases expand to more than 100000 values (nested aliases multiply)",
  ]);
  assert.deepEqual(errors(BASE.replace("respools:", "workloads: *w\nrespools:")), [
    "bad.yaml:4: alias *w has no anchor &w before it",
  ]);
  // The yaml library's own bound would refuse this: one anchor used more than 100 times. Each failed host
  // is back before the next event, which has a host to fail.
  const many = Array.from(
    { length: 150 },
    (_, i) => `  - {atSec: ${i + 1}, failHosts: *one, recoverAfterSec: 0.5}`,
  );
  accepted(`${TREE}events:\n  - {atSec: 0.5, failHosts: &one {class: std, count: 1}}\n${many.join("\n")}\n`);
});

Deno.test("a value quoted in an error is cut short: a file that is not a scenario is not echoed back", async () => {
  const line = Array.from({ length: 2000 }, (_, i) => `${i},,user,0.25`).join(",");
  const e = errors(`${line}\n${line}\n`);
  assert.equal(e.length, 1, e.join("\n"));
  assert.equal(
    e[0],
    'bad.yaml:1: (top level): got "0,,user,0.25,1,,user,0.25,2,,user,0.25,3,,user,0.25,4,,user,..." ' +
      "(61,779 characters), expected a mapping",
  );
  const long = errors(
    `${BASE}workloads:\n  - {name: w, respool: /pool, durationSec: 1, type: ${"x".repeat(500)}}\n`,
  );
  assert.ok(
    long.some((x) => x.includes(`got "${"x".repeat(60)}..." (500 characters), expected one of`)),
    long.join("\n"),
  );
  await assert.rejects(
    () => loadScenarioFile(`${ROOT}/scenarios/traces/google-2011-sample.csv`),
    (err: Error) => {
      assert.ok(err instanceof ScenarioError);
      assert.ok(err.message.length < 300, err.message);
      assert.match(
        err.message,
        /google-2011-sample\.csv:1: \(top level\): got "600764178,.*\.\.\." \(.* characters\), expected a mapping$/,
      );
      return true;
    },
  );
});

Deno.test("rules across fields say what they expected, and a field the schema refuses is not judged again", () => {
  const e = errors(`${TREE}workloads:
  - {name: w, respool: spark, durationSec: 10}
  - {name: w, respool: /org/a, trace: {file: t.csv, hostClass: ""}}
events:
  - {atSec: 10, updatePool: {path: org}}
  - {atSec: 20, usage: {workload: nope, level: 2}}
`);
  assert.deepEqual(e, [
    'bad.yaml:18: workloads[1].trace.hostClass: got "", expected text that is not empty',
    'bad.yaml:17: workloads[0].respool: got "spark", expected one of the leaf pools (/org/a, /org/b); a pool path ' +
    'starts with "/"',
    'bad.yaml:18: workloads[1].name: got "w", expected a name no other workload has',
    'bad.yaml:20: events[0].updatePool.path: got "org", expected one of the pools (/org, /org/a, /org/b)',
    'bad.yaml:21: events[1].usage.workload: got "nope", expected one of the workloads (w, w)',
  ]);
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

/** Two racks over two zones, a parent pool with two leaves, and a run length. */
const TREE = `name: t
durationSec: 600
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384, racks: 2, zones: 2}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
      - name: b
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
`;

const accepted = (text: string) => {
  const res = parseScenario(text, "ok.yaml");
  assert.ok(res.ok, res.ok ? "" : res.errors.join("\n"));
};

Deno.test("a workload's respool must be a leaf pool of the scenario's tree", () => {
  const e = errors(`${TREE}workloads:
  - {name: w, respool: /nope, durationSec: 10}
  - {name: x, respool: /org, durationSec: 10}
`);
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:17: workloads\[0\]\.respool: got "\/nope", expected one of the leaf pools \(\/org\/a, \/org\/b\)$/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:18: workloads\[1\]\.respool: got "\/org", .*\(\/org\/a, \/org\/b\); \/org has child pools, and jobs go to leaf pools/
        .test(x)
    ),
    e.join("\n"),
  );
  accepted(`${TREE}workloads:\n  - {name: w, respool: /org/b, durationSec: 10}\n`);
});

Deno.test("work that never ends needs a durationSec; work that ends does not", () => {
  const noDuration = TREE.replace("durationSec: 600\n", "");
  const e = errors(`${noDuration}workloads:
  - {name: web, respool: /org/a, type: stateless}
  - {name: etl, respool: /org/b, arrival: {ratePerSec: 1}, durationSec: 10}
  - {name: sleepy, respool: /org/b}
`);
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:16: workloads\[0\]\.type: got "stateless", STATELESS jobs never end: set the run's durationSec$/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.ok(
    e.some((x) =>
      /workloads\[1\]\.arrival: ratePerSec arrivals never stop without stopSec or maxJobs: set the run's durationSec/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.ok(
    e.some((x) => /workloads\[2\]\.durationSec: tasks without a durationSec run until/.test(x)),
    e.join("\n"),
  );
  assert.equal(e.length, 3, e.join("\n"));
  accepted(`${noDuration}workloads:
  - {name: etl, respool: /org/b, arrival: {ratePerSec: 1}, stopSec: 60, durationSec: 10}
  - {name: once, respool: /org/a, arrival: {bursts: {everySec: 10, jobs: 2}}, maxJobs: 4, durationSec: 10}
`);
  accepted(`${TREE}workloads:\n  - {name: web, respool: /org/a, type: daemon, arrival: {ratePerSec: 1}}\n`);
});

Deno.test("a job file of a service without a durationSec is refused once the file is read", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    `name: svc
type: SERVICE
instanceCount: 2
defaultConfig:
  resource: {cpuLimit: 1, memLimitMb: 128}
  command: {value: "sleep 10"}
`,
  );
  await Deno.writeTextFile(
    `${dir}/s.yaml`,
    `${
      TREE.replace("durationSec: 600\n", "")
    }workloads:\n  - {name: w, respool: /org/a, jobFile: svc.yaml}\n`,
  );
  await assert.rejects(() => loadScenarioFile(`${dir}/s.yaml`), (e: Error) => {
    assert.ok(e instanceof ScenarioError);
    assert.match(
      e.message,
      /s\.yaml:\d+: workloads\[0\]\.jobFile: .*svc\.yaml is a SERVICE job, which never ends: set the run's durationSec/,
    );
    return true;
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("events name racks, zones, hosts and pools that exist, with pool values the pool rules accept", () => {
  const e = errors(`${TREE}events:
  - {atSec: 10, drain: {rack: std-rack-99}}
  - {atSec: 20, loseRack: nope-rack-1}
  - {atSec: 30, failHosts: {zone: zone-9}}
  - {atSec: 40, failHosts: {hosts: [std-3, ghost-1]}}
  - {atSec: 50, updatePool: {path: /nope}}
  - atSec: 60
    updatePool:
      path: /org/a
      resources:
        - {kind: cpu, reservation: -10}
`);
  const has = (re: RegExp) => assert.ok(e.some((x) => re.test(x)), `${re}\n${e.join("\n")}`);
  has(
    /^bad\.yaml:17: events\[0\]\.drain\.rack: got "std-rack-99", expected one of the racks \(std-rack-0 … std-rack-1\)$/,
  );
  has(
    /^bad\.yaml:18: events\[1\]\.loseRack: got "nope-rack-1", expected one of the racks \(std-rack-0 … std-rack-1\)$/,
  );
  has(
    /^bad\.yaml:19: events\[2\]\.failHosts\.zone: got "zone-9", expected one of the zones \(zone-0 … zone-1\)$/,
  );
  has(
    /^bad\.yaml:20: events\[3\]\.failHosts\.hosts\[1\]: got "ghost-1", expected one of the hosts \(std-0 … std-3\)$/,
  );
  has(
    /^bad\.yaml:21: events\[4\]\.updatePool\.path: got "\/nope", expected one of the pools \(\/org, \/org\/a, \/org\/b\)$/,
  );
  has(
    /^bad\.yaml:26: events\[5\]\.updatePool\.resources\[0\]\.reservation: got -10, expected a reservation of 0/,
  );
  assert.equal(e.length, 6, e.join("\n"));
});

Deno.test("events may name the racks, zones and hosts of classes and hosts added before them", () => {
  accepted(`${TREE}events:
  - {atSec: 10, addHostClass: {name: big, count: 2, cpu: 32, memoryMb: 65536, racks: 2, zones: 3}}
  - {atSec: 20, addHosts: {class: std, count: 2}}
  - {atSec: 30, drain: {rack: big-rack-1}, durationSec: 10}
  - {atSec: 40, failHosts: {hosts: [big-1, std-5]}}
  - {atSec: 50, updatePool: {path: /org/b, resources: [{kind: cpu, reservation: 8, limit: 8}]}}
`);
  // Before the class comes, its names do not exist yet; std's third zone never does (two racks).
  const e = errors(`${TREE}events:
  - {atSec: 5, removeHosts: {hosts: [big-0, std-4]}}
  - {atSec: 10, addHostClass: {name: big, count: 2, cpu: 32, memoryMb: 65536, racks: 2, zones: 3}}
  - {atSec: 20, failHosts: {zone: zone-2}}
`);
  assert.ok(
    e.some((x) =>
      /events\[0\]\.removeHosts\.hosts\[0\]: got "big-0", expected one of the hosts \(std-0 … std-3\) at 5 s/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.ok(e.some((x) => /events\[0\]\.removeHosts\.hosts\[1\]: got "std-4"/.test(x)), e.join("\n"));
  assert.ok(
    e.some((x) =>
      /events\[2\]\.failHosts\.zone: got "zone-2", expected one of the zones \(zone-0 … zone-1\) at 20 s/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.equal(e.length, 3, e.join("\n"));
});

/** Two classes of two racks each, for host selectors. */
const TWO_CLASSES = `name: t
durationSec: 300
hostClasses:
  - {name: std, count: 20, cpu: 8, memoryMb: 16384, racks: 2}
  - {name: big, count: 10, cpu: 32, memoryMb: 65536, racks: 2, zones: 2}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
`;

Deno.test("a host selector that picks no host is refused, naming the event; so is a named host the rest leaves out", () => {
  const e = errors(`${TWO_CLASSES}events:
  - { atSec: 60, failHosts: { class: std, fraction: 0.01 } }
  - { atSec: 70, drain: { hosts: [std-3], class: big }, durationSec: 30 }
  - { atSec: 80, removeHosts: { rack: std-rack-0, class: big } }
  - { atSec: 90, drain: { class: std, rack: big-rack-1 } }
  - { atSec: 100, failHosts: { hosts: [std-0, big-3], class: std } }
  - { atSec: 110, drain: { hosts: [big-2], zone: zone-1 } }
`);
  assert.deepEqual(e, [
    "bad.yaml:11: events[0].failHosts.fraction: got 0.01, expected a fraction that picks at least one of the 20 " +
    "hosts (20 × 0.01 rounds to 0)",
    'bad.yaml:12: events[1].drain.hosts[0]: got "std-3", expected a host of class big: std-3 is of class std',
    "bad.yaml:13: events[2].removeHosts: expected a selector that picks a host: no host is of class big and in " +
    "rack std-rack-0",
    "bad.yaml:14: events[3].drain: expected a selector that picks a host: no host is of class std and in rack " +
    "big-rack-1",
    'bad.yaml:15: events[4].failHosts.hosts[1]: got "big-3", expected a host of class std: big-3 is of class big',
    'bad.yaml:16: events[5].drain.hosts[0]: got "big-2", expected a host in zone zone-1: big-2 is in zone zone-0',
  ]);
  // Those that pick hosts: a fraction of at least half a host, a class's rack, zone and named hosts.
  accepted(`${TWO_CLASSES}events:
  - { atSec: 60, failHosts: { class: std, fraction: 0.025 } }
  - { atSec: 70, drain: { hosts: [big-3], class: big, rack: big-rack-1, zone: zone-1 }, durationSec: 30 }
  - { atSec: 80, removeHosts: { rack: std-rack-0, count: 1 } }
  - { atSec: 90, drain: { class: big, zone: zone-0 } }
`);
});

Deno.test("a host selector is judged on the hosts there are when it runs: those events added before count", () => {
  const big = "{name: gpu, count: 2, cpu: 8, memoryMb: 16384, racks: 2}";
  // A class added later, and hosts added to it, are picked once they are there.
  accepted(`${TWO_CLASSES}events:
  - { atSec: 10, addHostClass: ${big} }
  - { atSec: 20, addHosts: { class: gpu, count: 2 } }
  - { atSec: 30, failHosts: { class: gpu, rack: gpu-rack-1, fraction: 0.25 } }
  - { atSec: 40, drain: { hosts: [gpu-3], rack: gpu-rack-1 } }
`);
  // Before the hosts are added, the rack has one of them: a quarter of it rounds to none.
  const e = errors(`${TWO_CLASSES}events:
  - { atSec: 10, addHostClass: ${big} }
  - { atSec: 30, addHosts: { class: gpu, count: 2 } }
  - { atSec: 20, failHosts: { class: gpu, rack: gpu-rack-1, fraction: 0.25 } }
`);
  assert.deepEqual(e, [
    "bad.yaml:13: events[2].failHosts.fraction: got 0.25, expected a fraction that picks the one host at 20 s " +
    "(1 × 0.25 rounds to 0)",
  ]);
  // A class with no hosts yet has none to pick.
  const none = errors(`${TWO_CLASSES.replace("count: 10", "count: 0")}events:
  - { atSec: 10, drain: { class: big } }
  - { atSec: 20, addHosts: { class: big, count: 1 } }
  - { atSec: 30, drain: { class: big } }
`);
  assert.deepEqual(none, [
    "bad.yaml:11: events[0].drain: expected a selector that picks a host: no host is of class big at 10 s",
  ]);
});

Deno.test("addHostClass needs a new class name; a host selector cannot be empty", () => {
  const e = errors(`${TREE}events:
  - {atSec: 10, addHostClass: {name: std, count: 1, cpu: 1, memoryMb: 1024}}
  - {atSec: 20, failHosts: {}}
  - {atSec: 30, removeHosts: {}}
`);
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:17: events\[0\]\.addHostClass\.name: got "std", expected a class name not in use yet \(std\)$/
        .test(
          x,
        )
    ),
    e.join("\n"),
  );
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:18: events\[1\]\.failHosts: expected a selector: one or more of class, rack, zone, hosts/
        .test(x)
    ),
    e.join("\n"),
  );
  assert.ok(
    e.some((x) => /^bad\.yaml:19: events\[2\]\.removeHosts: expected a selector/.test(x)),
    e.join("\n"),
  );
  accepted(`${TREE}events:\n  - {atSec: 20, failHosts: {fraction: 0.5}}\n`);
});

Deno.test("events are checked in the order they run: by time, then list order", () => {
  const big = "{name: big, count: 1, cpu: 32, memoryMb: 65536}";
  const e = errors(`${TREE}events:
  - {atSec: 100, addHostClass: ${big}}
  - {atSec: 10, addHosts: {class: big, count: 1}}
`);
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:18: events\[1\]\.addHosts\.class: got "big", expected one of the host classes \(std\) at 10 s; big is added by an addHostClass event that runs after this one \(at 100 s\)$/
        .test(x)
    ),
    e.join("\n"),
  );
  accepted(`${TREE}events:
  - {atSec: 100, addHosts: {class: big, count: 1}}
  - {atSec: 10, addHostClass: ${big}}
`);
  // At the same time, list order decides.
  const tie = errors(`${TREE}events:
  - {atSec: 10, addHosts: {class: big, count: 1}}
  - {atSec: 10, addHostClass: ${big}}
`);
  assert.ok(tie.some((x) => /events\[0\]\.addHosts\.class: got "big"/.test(x)), tie.join("\n"));
  accepted(`${TREE}events:
  - {atSec: 10, addHostClass: ${big}}
  - {atSec: 10, addHosts: {class: big, count: 1}}
`);
});

Deno.test("events less than a millisecond apart are checked in the order they run: by their exact time", () => {
  // Virtual time moves in whole ms, yet the run applies them by atSec: the removal, then the drain.
  const e = errors(`${TWO_CLASSES}events:
  - { atSec: 100.0002, drain: { hosts: [std-0] }, durationSec: 50 }
  - { atSec: 100.0001, removeHosts: { hosts: [std-0] } }
`);
  assert.deepEqual(e, [
    'bad.yaml:11: events[0].drain.hosts[0]: got "std-0", expected a host that is up and not in maintenance at ' +
    "100.0002 s: std-0 is gone, removed by event 1 at 100.0001 s",
  ]);
  accepted(`${TWO_CLASSES}events:
  - { atSec: 100.0002, removeHosts: { hosts: [std-0] } }
  - { atSec: 100.0001, drain: { hosts: [std-0] }, durationSec: 50 }
`);
});

Deno.test("the warm-up must be shorter than the run", () => {
  const e = errors(`${TREE}settings: {warmupSec: 600}\n`);
  assert.ok(
    e.some((x) =>
      /^bad\.yaml:16: settings\.warmupSec: got 600, expected less than durationSec \(600\)$/.test(x)
    ),
    e.join("\n"),
  );
  accepted(`${TREE}settings: {warmupSec: 599}\n`);
});

Deno.test("each event takes only its own duration field: others would be ignored and hosts never come back", () => {
  const e = errors(`${TREE}events:
  - {atSec: 10, failHosts: {class: std, count: 1}, durationSec: 100}
  - {atSec: 20, drain: {rack: std-rack-0}, recoverAfterSec: 100}
  - {atSec: 30, loseRack: std-rack-1, durationSec: 100}
  - {atSec: 40, removeHosts: {class: std, count: 1}, recoverAfterSec: 100}
  - {atSec: 50, addHosts: {class: std, count: 1}, durationSec: 100}
`);
  assert.deepEqual(e, [
    "bad.yaml:17: events[0].durationSec: got 100, expected no durationSec on failHosts events (durationSec is for drain); its hosts come back after recoverAfterSec",
    "bad.yaml:18: events[1].recoverAfterSec: got 100, expected no recoverAfterSec on drain events (recoverAfterSec is for failHosts and loseRack); its hosts come back after durationSec",
    "bad.yaml:19: events[2].durationSec: got 100, expected no durationSec on loseRack events (durationSec is for drain); its hosts come back after recoverAfterSec",
    "bad.yaml:20: events[3].recoverAfterSec: got 100, expected no recoverAfterSec on removeHosts events (recoverAfterSec is for failHosts and loseRack)",
    "bad.yaml:21: events[4].durationSec: got 100, expected no durationSec on addHosts events (durationSec is for drain)",
  ]);
  accepted(`${TREE}events:
  - {atSec: 10, failHosts: {class: std, count: 1}, recoverAfterSec: 100}
  - {atSec: 20, drain: {rack: std-rack-0}, durationSec: 100}
  - {atSec: 30, loseRack: std-rack-1, recoverAfterSec: 100}
`);
});

/** TREE with one workload of these fields in /org/a (line 17). */
const oneWorkload = (fields: string) =>
  `${TREE}workloads:\n  - {name: w, respool: /org/a, durationSec: 10, ${fields}}\n`;

/** Each [fields, message]: oneWorkload(fields) is refused with that one error, on the workload's line. */
function refusedWith(cases: [string, string][]): void {
  for (const [fields, message] of cases) {
    assert.deepEqual(errors(oneWorkload(fields)), [`bad.yaml:17: workloads[0].${message}`], fields);
  }
}

Deno.test("instance counts are whole numbers of at least 1, fixed or as a distribution's values and bounds", () => {
  const cases: [string, string][] = [
    ["instances: 0", "instances: got 0, expected at least 1 instance"],
    ["instances: 2.5", "instances: got 2.5, expected a whole number of instances"],
    ["instances: {fixed: 0}", "instances.fixed: got 0, expected at least 1 instance"],
    ["instances: {uniform: [0, 3]}", "instances.uniform[0]: got 0, expected at least 1 instance"],
    ["instances: {uniform: [2, 4.5]}", "instances.uniform[1]: got 4.5, expected a whole number of instances"],
    [
      "instances: {choice: [[1.5, 1], [2, 1]]}",
      "instances.choice[0][0]: got 1.5, expected a whole number of instances",
    ],
  ];
  refusedWith(cases);
  // A distribution's draws are rounded (and at least 1).
  for (
    const fields of ["instances: 1", "instances: {exponential: 3}", "instances: {choice: [[1, 1], [8, 1]]}"]
  ) {
    accepted(oneWorkload(fields));
  }
});

Deno.test("maxUnavailableInstances is a whole number of at least 0, for stateless and stateful services only", () => {
  const cases: [string, string][] = [
    [
      "type: stateless, maxUnavailableInstances: -1",
      "maxUnavailableInstances: got -1, expected at least 0 instances (0: no limit)",
    ],
    [
      "type: stateless, maxUnavailableInstances: 1.5",
      "maxUnavailableInstances: got 1.5, expected a whole number of instances",
    ],
    [
      "type: stateful, maxUnavailableInstances: five",
      'maxUnavailableInstances: got "five", expected a whole number of instances, 0 for no limit',
    ],
    // Peloton's SLA is for services: a batch or daemon job would silently ignore it.
    [
      "maxUnavailableInstances: 1",
      "maxUnavailableInstances: got 1, expected no maxUnavailableInstances on BATCH workloads: Peloton " +
      "applies it to services only (type stateless or stateful)",
    ],
    [
      "type: daemon, maxUnavailableInstances: 0",
      "maxUnavailableInstances: got 0, expected no maxUnavailableInstances on DAEMON workloads: Peloton " +
      "applies it to services only (type stateless or stateful)",
    ],
    [
      "jobFile: svc.yaml, maxUnavailableInstances: 2",
      "maxUnavailableInstances: got 2, expected no maxUnavailableInstances with a jobFile: the job file's " +
      "own sla.maximumUnavailableInstances applies, set it there",
    ],
  ];
  refusedWith(cases);
  // A trace workload (where oneWorkload's durationSec is refused too: the trace gives its jobs' durations).
  assert.ok(
    errors(oneWorkload("trace: {file: t.csv, hostClass: std}, maxUnavailableInstances: 2")).includes(
      "bad.yaml:17: workloads[0].maxUnavailableInstances: got 2, expected no maxUnavailableInstances on trace " +
        "workloads: their jobs are batch jobs, which it does not apply to",
    ),
  );
  for (
    const fields of [
      "type: stateless, maxUnavailableInstances: 1",
      "type: stateful, maxUnavailableInstances: 0",
      "type: service, maxUnavailableInstances: 30",
      "type: batch",
    ]
  ) accepted(oneWorkload(fields));
  const res = parseScenario(oneWorkload("type: stateless, maxUnavailableInstances: 3"), "ok.yaml");
  assert.ok(res.ok);
  assert.equal(res.scenario.workloads[0].maxUnavailableInstances, 3);
});

Deno.test("a workload's stopSec comes after its startSec", () => {
  assert.deepEqual(errors(oneWorkload("arrival: {ratePerSec: 1}, startSec: 100, stopSec: 50")), [
    "bad.yaml:17: workloads[0].stopSec: got 50, expected more than startSec (100)",
  ]);
  assert.deepEqual(errors(oneWorkload("arrival: {ratePerSec: 1}, startSec: 100, stopSec: 100")), [
    "bad.yaml:17: workloads[0].stopSec: got 100, expected more than startSec (100)",
  ]);
  accepted(oneWorkload("arrival: {ratePerSec: 1}, startSec: 100, stopSec: 101"));
});

Deno.test("every distribution's bounds are checked: uniform in order, a normal's mean, weights and means", () => {
  const cases: [string, string][] = [
    ["instances: {uniform: [10, 5]}", "instances.uniform[1]: got 5, expected at least the lower bound (10)"],
    ["cpu: {uniform: [3, 1]}", "cpu.uniform[1]: got 1, expected at least the lower bound (3)"],
    [
      "cpuUsage: {uniform: [0.5, 0.2]}",
      "cpuUsage.uniform[1]: got 0.2, expected at least the lower bound (0.5)",
    ],
    [
      "memoryMb: {normal: {mean: -5, stddev: 1}}",
      "memoryMb.normal.mean: got -5, expected a mean of at least 0 MB: draws below 0 count as 0",
    ],
    ["cpu: {choice: [[1, 0], [2, 1]]}", "cpu.choice[0][1]: got 0, expected a weight above 0"],
    ["cpu: {exponential: 0}", "cpu.exponential: got 0, expected a mean above 0 cores"],
  ];
  refusedWith(cases);
  accepted(
    oneWorkload(
      "cpu: {uniform: [2, 2]}, cpuUsage: {uniform: [0.2, 0.5]}, memoryMb: {normal: {mean: 0, stddev: 1}}",
    ),
  );
});

Deno.test("a gang is at most the fewest instances a job can have", () => {
  const cases: [string, string][] = [
    ["instances: 3, gang: 20", "gang: got 20, expected at most instances (3)"],
    [
      "instances: {uniform: [5, 10]}, gang: 8",
      "gang: got 8, expected at most the fewest instances a job can draw (5, instances' uniform)",
    ],
    [
      "instances: {exponential: 10}, gang: 2",
      "gang: got 2, expected at most the fewest instances a job can draw (1, instances' exponential: draws are rounded, and at least 1)",
    ],
  ];
  refusedWith(cases);
  for (
    const fields of [
      "instances: 20, gang: 20",
      "instances: {choice: [[4, 1], [8, 1]]}, gang: 4",
      "instances: {exponential: 10}, gang: true",
    ]
  ) accepted(oneWorkload(fields));
});

Deno.test("an elastic job's maxInstances is at least the instances it starts with", () => {
  const grow = (max: number) => `elastic: {maxInstances: ${max}, growBy: 1, everySec: 10}`;
  const cases: [string, string][] = [
    [
      `instances: 20, ${grow(2)}`,
      "elastic.maxInstances: got 2, expected at least instances (20), the count a job starts with",
    ],
    [
      `instances: {uniform: [5, 50]}, ${grow(40)}`,
      "elastic.maxInstances: got 40, expected at least the most instances a job can draw (50, instances' uniform), the count it starts with",
    ],
    [
      `instances: {exponential: 10}, ${grow(40)}`,
      "elastic.maxInstances: got 40, expected at least the most instances a job can draw, but instances' exponential has no most: use fixed, uniform or choice",
    ],
  ];
  refusedWith(cases);
  accepted(oneWorkload(`instances: 20, ${grow(20)}`));
  accepted(oneWorkload(`instances: {uniform: [5, 50]}, ${grow(50)}`));
});

Deno.test("arrivals and starts at or after the run's durationSec are refused, as events are: they would never happen", () => {
  const e = errors(`${TREE}workloads:
  - {name: w, respool: /org/a, durationSec: 10, arrival: {at: [0, 700, 600, 599.5]}}
  - {name: x, respool: /org/b, durationSec: 10, arrival: {ratePerSec: 1}, startSec: 600}
  - {name: y, respool: /org/b, durationSec: 10, arrival: {bursts: {everySec: 60, jobs: 2, firstAtSec: 900}}}
events:
  - {atSec: 1000, failHosts: {class: std}}
  - {atSec: 600, failHosts: {class: std}}
`);
  const late =
    "expected a time before durationSec (600), when the run ends: a job arriving then would never be run";
  assert.deepEqual(e, [
    `bad.yaml:17: workloads[0].arrival.at[1]: got 700, ${late}`,
    `bad.yaml:17: workloads[0].arrival.at[2]: got 600, ${late}`,
    `bad.yaml:18: workloads[1].startSec: got 600, ${late}`,
    `bad.yaml:19: workloads[2].arrival.bursts.firstAtSec: got 900, ${late}`,
    // Checked in the order they run. An event at the end would start what the run never shows.
    "bad.yaml:22: events[1].atSec: got 600, expected a time before durationSec (600), when the run ends",
    "bad.yaml:21: events[0].atSec: got 1000, expected a time before durationSec (600), when the run ends",
  ]);
  accepted(`${TREE}events:\n  - {atSec: 599.9, drain: {class: std}, durationSec: 60}\n`);
  // Without a durationSec the run lasts until the work is done: any time can happen.
  accepted(`${TREE.replace("durationSec: 600\n", "")}workloads:
  - {name: w, respool: /org/a, durationSec: 10, arrival: {at: [0, 700]}}
events:
  - {atSec: 1000, failHosts: {class: std}}
`);
});

Deno.test("a field taking a number or a distribution says what it takes when given neither", () => {
  const e = errors(`${BASE}workloads:
  - name: w
    respool: /pool
    cpu: "2"
    memoryMb: { uniform: [1] }
    diskMb: { unifrom: [1, 2] }
    instances: "3"
    arrival: soon
    gang: "yes"
    cpuUsage: { fixd: 0.5 }
`);
  const at = (field: string) => e.find((x) => x.includes(`: workloads[0].${field}: `)) ?? e.join("\n");
  const forms = "{fixed: n}, {uniform: [low, high]}, {exponential: mean}, {normal: {mean, stddev}}, " +
    "{lognormal: {median, sigma}} or {choice: [[value, weight], ...]}";
  assert.equal(
    at("cpu"),
    `bad.yaml:11: workloads[0].cpu: got "2", expected a number of cores (at least 0), or a distribution: ${forms}`,
  );
  assert.equal(
    at("memoryMb.uniform"),
    "bad.yaml:12: workloads[0].memoryMb.uniform: expected two bounds [low, high], each a number of MB " +
      "(at least 0), the lower first",
  );
  assert.equal(
    at("diskMb"),
    `bad.yaml:13: workloads[0].diskMb: expected a number of MB (at least 0), or a distribution: ${forms}; ` +
      `got a mapping with "unifrom"`,
  );
  assert.equal(
    at("instances"),
    `bad.yaml:14: workloads[0].instances: got "3", expected a whole number of at least 1, or a distribution: ${forms}`,
  );
  assert.match(
    at("arrival"),
    /^bad\.yaml:15: workloads\[0\]\.arrival: got "soon", expected one of \{ratePerSec: n\}, /,
  );
  assert.equal(
    at("gang"),
    `bad.yaml:16: workloads[0].gang: got "yes", expected true, false or a whole number of at least 1`,
  );
  assert.match(
    at("cpuUsage"),
    /^bad\.yaml:17: workloads\[0\]\.cpuUsage: expected a fraction above 0 and at most 1, /,
  );
  assert.ok(!e.some((x) => x.includes("Invalid input")), e.join("\n"));
});

Deno.test("a bad value inside a distribution names its own path, the value and what was expected, in the field's unit", () => {
  const cases: [string, string[]][] = [
    [
      'durationSec: {lognormal: {median: "abc", sigma: 1}}',
      ['durationSec.lognormal.median: got "abc", expected a median above 0 seconds'],
    ],
    ["durationSec: {lognormal: {median: 0, sigma: 1}}", [
      "durationSec.lognormal.median: got 0, expected a median above 0 seconds",
    ]],
    ["durationSec: {lognormal: {median: 1, sigma: -1}}", [
      "durationSec.lognormal.sigma: got -1, expected a sigma of at least 0",
    ]],
    ["durationSec: {lognormal: {median: 1}}", [
      "durationSec.lognormal.sigma: missing; expected a sigma of at least 0",
    ]],
    ["durationSec: {lognormal: {median: 1, sigma: 1, mean: 3}}", [
      "durationSec.lognormal.mean: unknown key; expected median and sigma",
    ]],
    ["durationSec: {lognormal: 5}", [
      "durationSec.lognormal: got 5, expected {median, sigma}: a median above 0 seconds and a sigma of at least 0",
    ]],
    ['durationSec: {normal: {mean: "abc", stddev: 1}}', [
      'durationSec.normal.mean: got "abc", expected a mean of at least 0 seconds: draws below 0 count as 0',
    ]],
    ["durationSec: {normal: {mean: 1, stddev: -1}}", [
      "durationSec.normal.stddev: got -1, expected a stddev of at least 0 seconds",
    ]],
    ["gpu: {normal: {mean: 1, stddev: 1, x: 1}}", ["gpu.normal.x: unknown key; expected mean and stddev"]],
    ["durationSec: {exponential: 0}", ["durationSec.exponential: got 0, expected a mean above 0 seconds"]],
    ['cpu: {exponential: "x"}', ['cpu.exponential: got "x", expected a mean above 0 cores']],
    ["durationSec: {fixed: -1}", ["durationSec.fixed: got -1, expected a number of seconds (at least 0)"]],
    ['memoryMb: {uniform: [1, "x"]}', ['memoryMb.uniform[1]: got "x", expected a number of MB (at least 0)']],
    ["diskMb: {uniform: [1, 2, 3]}", [
      "diskMb.uniform: expected two bounds [low, high], each a number of MB (at least 0), the lower first",
    ]],
    ["gpu: {choice: []}", [
      "gpu.choice: expected at least one [value, weight] pair, each value a number of GPUs (at least 0) and " +
      "each weight above 0",
    ]],
    ["cpu: {choice: [[1]]}", [
      "cpu.choice[0]: expected a [value, weight] pair, the value a number of cores (at least 0) and the " +
      "weight above 0",
    ]],
    ['instances: {choice: [["a", 1]]}', [
      'instances.choice[0][0]: got "a", expected a whole number of at least 1',
    ]],
    ["instances: {exponential: 0}", ["instances.exponential: got 0, expected a mean above 0"]],
    ["durationSec: -1", ["durationSec: got -1, expected a number of seconds (at least 0)"]],
    ["cpuUsage: 2", ["cpuUsage: got 2, expected a fraction above 0 and at most 1"]],
    ["cpuUsage: {uniform: [0, 2]}", [
      "cpuUsage.uniform[0]: got 0, expected a fraction above 0 and at most 1",
      "cpuUsage.uniform[1]: got 2, expected a fraction above 0 and at most 1",
    ]],
    // A bad distribution does not hide the workload's other problems.
    ["durationSec: {exponential: 0}, instances: 3, gang: 20", [
      "durationSec.exponential: got 0, expected a mean above 0 seconds",
      "gang: got 20, expected at most instances (3)",
    ]],
  ];
  for (const [fields, messages] of cases) {
    // The case's own durationSec in place of oneWorkload's.
    const text = fields.startsWith("durationSec")
      ? oneWorkload(fields).replace("durationSec: 10, ", "")
      : oneWorkload(fields);
    const e = errors(text);
    assert.deepEqual(e, messages.map((m) => `bad.yaml:17: workloads[0].${m}`), fields);
    for (const zod of ["Too small", "Too big", "Invalid", "Unrecognized", "expected number", "received"]) {
      assert.ok(!e.some((x) => x.includes(zod)), `zod's wording in ${e.join("\n")}`);
    }
  }
});

Deno.test("schema errors and pool rule errors are listed together, pool rules run on the pools that parsed", () => {
  const e = errors(`name: t
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 40, limit: 40}
      - name: b
        resources:
          - {kind: memroy, reservation: 1, limit: 1}
      - 7
workloads:
  - {name: w, respool: /org/a, durationSec: 10, cpu: -1}
`);
  assert.equal(e.length, 5, e.join("\n"));
  assert.equal(
    e[0],
    "bad.yaml:15: respools[0].children[2]: got 7, expected a pool: a mapping with a name and resources, or a " +
      "name and a file",
  );
  assert.equal(e[1], "bad.yaml:17: workloads[0].cpu: got -1, expected a number of cores (at least 0)");
  assert.equal(
    e[2],
    "bad.yaml:11: respools[0].children[0].resources[0].limit: got 40, expected at most 32, the limit of /org",
  );
  assert.equal(
    e[3],
    "bad.yaml:11: respools[0].children[0].resources[0].reservation: got 40, expected at most 32, the " +
      "reservation of /org",
  );
  assert.match(e[4], /^bad\.yaml:14: respools\[0\]\.children\[1\]\.resources\[0\]\.kind: got "memroy", /);
});

/** The pools of a scenario's `respools` YAML, in TREE's host class and with no workloads. */
const pools = (yaml: string) =>
  `name: t\nhostClasses:\n  - {name: std, count: 4, cpu: 8, memoryMb: 16384}\nrespools:\n${yaml}`;

/** The first pool the resource manager refuses to create, in the order a run creates them, and why. */
function firstRefused(yaml: string): string | undefined {
  const tree = new RespoolTree();
  const create = (list: Record<string, unknown>[], parentId: string): string | undefined => {
    for (const [i, pool] of list.entries()) {
      const config = parseRespoolConfig(poolConfig(pool as ScenarioPool), "pool");
      if (!config.ok) return config.errors[0].message;
      const made = tree.create(`${parentId}/${i}`, parentId, config.value);
      if (!made.ok) return `${pool.name}: ${made.message}`;
      const why = create((pool.children ?? []) as Record<string, unknown>[], made.value.id);
      if (why) return why;
    }
  };
  return create(parseYaml(pools(yaml)).respools, ROOT_ID);
}

Deno.test("pools nest as the respool API requires: limits within the parent's, reservations summing within it, names apart", () => {
  const cases: [string, string[]][] = [
    [
      `  - name: org
    resources: [{kind: cpu, reservation: 32, limit: 32}, {kind: memory, reservation: 1000, limit: 1000}]
    children:
      - {name: a, resources: [{kind: cpu, reservation: 20, limit: 32}]}
      - {name: b, resources: [{kind: cpu, reservation: 20, limit: 32}]}
      - {name: c, resources: [{kind: cpu, reservation: 10, limit: 32}, {kind: memory, reservation: 10, limit: 2000}]}
      - {name: d, resources: [{kind: gpu, reservation: 0, limit: 1}]}
`,
      [
        "bad.yaml:9: respools[0].children[1].resources[0].reservation: got 20, expected at most 12: the " +
        "reservation of /org is 32, and its children before this one reserve 20",
        "bad.yaml:10: respools[0].children[2].resources[1].limit: got 2000, expected at most 1000, the limit of /org",
        "bad.yaml:11: respools[0].children[3].resources[0].limit: got 1, expected at most 0, the limit of /org, " +
        "which lists no gpu resource",
      ],
    ],
    [
      `  - {name: root, resources: [{kind: cpu, reservation: 1, limit: 1}]}
  - name: x
    resources: [{kind: cpu, reservation: 2, limit: 2}]
    children:
      - {name: y, resources: [{kind: cpu, reservation: 1, limit: 1}]}
      - {name: y, resources: [{kind: cpu, reservation: 1, limit: 1}]}
`,
      [
        'bad.yaml:5: respools[0].name: got "root", expected a name other than root for a top-level pool: ' +
        "the resource manager's root pool has it",
        'bad.yaml:10: respools[1].children[1].name: got "y", expected a name no other pool under /x has',
      ],
    ],
  ];
  for (const [yaml, messages] of cases) {
    assert.deepEqual(errors(pools(yaml)), messages, yaml);
    assert.ok(firstRefused(yaml), `the resource manager refuses the pools too:\n${yaml}`);
  }
  // Reservations up to the parent's, limits up to its limit: accepted here and by the resource manager.
  const fits = `  - name: org
    resources: [{kind: cpu, reservation: 32, limit: 32}]
    children:
      - {name: a, resources: [{kind: cpu, reservation: 20, limit: 32}]}
      - {name: b, resources: [{kind: cpu, reservation: 12, limit: 32}]}
  - {name: other, resources: [{kind: cpu, reservation: 64, limit: 64}]}
`;
  accepted(pools(fits));
  assert.equal(firstRefused(fits), undefined);
});

Deno.test("rules across fields run on the parts that parsed: a malformed field elsewhere does not hide them", () => {
  const scenario = `name: t
durationSec: 600
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
workloads:
  - {name: w, respool: /nope, durationSec: 10}
events:
  - {atSec: 10, failHosts: {hosts: [ghost-1]}}
  - {atSec: 20, updatePool: {path: /org, resources: [{kind: cpu, reservation: -1}]}}
`;
  const e = errors(`${scenario}settings: {rpcLatencyMs: "x"}\n`);
  assert.equal(e.length, 4, e.join("\n"));
  assert.match(e[0], /^bad\.yaml:14: settings\.rpcLatencyMs: got "x", /);
  assert.equal(e[1], 'bad.yaml:10: workloads[0].respool: got "/nope", expected one of the leaf pools (/org)');
  assert.equal(
    e[2],
    'bad.yaml:12: events[0].failHosts.hosts[0]: got "ghost-1", expected one of the hosts (std-0 … std-3)',
  );
  assert.match(e[3], /^bad\.yaml:13: events\[1\]\.updatePool\.resources\[0\]\.reservation: got -1, /);
  // With the host classes malformed, the hosts events name cannot be checked: no error is made up for
  // them, and the rules that do not read the classes still run.
  const classes = errors(scenario.replace("cpu: 8", 'cpu: "x"'));
  assert.equal(classes.length, 3, classes.join("\n"));
  assert.match(classes[0], /^bad\.yaml:4: hostClasses\[0\]\.cpu: got "x", /);
  assert.equal(
    classes[1],
    'bad.yaml:10: workloads[0].respool: got "/nope", expected one of the leaf pools (/org)',
  );
  assert.match(classes[2], /^bad\.yaml:13: events\[1\]\.updatePool\.resources\[0\]\.reservation: got -1, /);
});

Deno.test("a cluster with no hosts that no event adds to is refused; a class without hosts is fine beside others", () => {
  const why = "the cluster would have no hosts, and no event adds any";
  assert.deepEqual(errors(BASE.replace("count: 4", "count: 0")), [
    `bad.yaml:3: hostClasses[0].count: got 0, expected at least 1: ${why}`,
  ]);
  const twoEmpty = BASE.replace(
    "  - {name: std, count: 4, cpu: 8, memoryMb: 16384}\n",
    "  - {name: std, count: 0, cpu: 8, memoryMb: 16384}\n  - {name: big, count: 0, cpu: 64, memoryMb: 65536}\n",
  );
  assert.deepEqual(errors(twoEmpty), [
    `bad.yaml:3: hostClasses: expected a class with a count of at least 1: ${why}`,
  ]);
  accepted(twoEmpty.replace("name: big, count: 0", "name: big, count: 1"));
  accepted(`${twoEmpty}events:\n  - {atSec: 10, addHosts: {class: big, count: 2}}\n`);
});

Deno.test("fields without a message of their own get the format's wording, never zod's", () => {
  const cases: [string, string][] = [
    ["hostClasses[0].cpu: got 0, expected more than 0", BASE.replace("cpu: 8", "cpu: 0")],
    ["hostClasses[0].count: got 2.5, expected a whole number", BASE.replace("count: 4", "count: 2.5")],
    ['hostClasses[0].memoryMb: got "x", expected a number', BASE.replace("memoryMb: 16384", 'memoryMb: "x"')],
    [
      "hostClasses[0].size: unknown key; expected one of name, count, cpu, memoryMb, diskMb, gpu, attributes, " +
      "racks, zones, hostPool, portRange, portRanges",
      BASE.replace("cpu: 8,", "cpu: 8, size: 3,"),
    ],
    [
      "settings.sampleIntervalSec: got -1, expected more than 0",
      `${BASE}settings: {sampleIntervalSec: -1}\n`,
    ],
    [
      "workloads[0].arrival.ratePerSec: got -2, expected more than 0",
      `${BASE}workloads:\n  - {name: w, respool: /pool, durationSec: 1, arrival: {ratePerSec: -2}}\n`,
    ],
    [
      'workloads[0].placementStrategy: got "PACK", expected one of PACK_HOST, SPREAD_JOB',
      `${BASE}workloads:\n  - {name: w, respool: /pool, durationSec: 1, placementStrategy: PACK}\n`,
    ],
    [
      "workloads[0].name: missing; expected text",
      `${BASE}workloads:\n  - {respool: /pool, durationSec: 1}\n`,
    ],
    ["hostClasses: expected at least 1 entry", BASE.replace(/hostClasses:\n.*\n/, "hostClasses: []\n")],
  ];
  for (const [message, text] of cases) {
    const e = errors(text);
    assert.ok(e.some((x) => x.endsWith(message)), `${message}\n${e.join("\n")}`);
    for (const zod of ["Too small", "Too big", "Invalid", "Unrecognized", "expected number", "received"]) {
      assert.ok(!e.some((x) => x.includes(zod)), `zod's wording in ${e.join("\n")}`);
    }
  }
});

Deno.test("fields a workload's jobs are not built from are refused, each naming where to set it or why", () => {
  const cases: [string, string][] = [
    [
      "jobFile: svc.yaml, cpu: 4",
      "cpu: got 4, expected no cpu with a jobFile: the job file's defaultConfig.resource.cpuLimit applies, set it there",
    ],
    [
      "jobFile: svc.yaml, instances: 3",
      "instances: got 3, expected no instances with a jobFile: the job file's instanceCount applies, set it there",
    ],
    [
      "type: batch, volumeMb: 10",
      "volumeMb: got 10, expected no volumeMb on batch workloads: only stateful tasks keep a persistent volume",
    ],
    [
      "type: daemon, instances: 3",
      "instances: got 3, expected no instances on daemon workloads: a daemon job runs one task on each host it may run on",
    ],
    [
      "type: stateless, instances: 4, gang: 2",
      "gang: got 2, expected no gang on stateless workloads: Peloton places gangs (sla.minimumRunningInstances) of " +
      "batch jobs only",
    ],
    [
      "type: stateless, revocable: true, preemptible: false",
      "preemptible: got false, expected true, since revocable is true: a revocable stateless job must be preemptible",
    ],
  ];
  refusedWith(cases);
  // A trace gives its jobs' arrivals, sizes and outcomes: each field that would set them is named.
  const trace = errors(
    `${TREE}workloads:\n  - {name: w, respool: /org/a, trace: {file: t.csv, hostClass: std}, cpu: 2, ` +
      `failureRate: 0.1, arrival: {ratePerSec: 1}}\n`,
  );
  assert.deepEqual(
    trace.map((e) => /workloads\[0\]\.(\w+):/.exec(e)?.[1]).sort(),
    ["arrival", "cpu", "failureRate"],
    trace.join("\n"),
  );
  for (const e of trace) {
    assert.match(e, /on trace workloads: the trace gives each job's times, tasks, resources/);
  }
  // What they do use is still taken.
  accepted(oneWorkload("jobFile: svc.yaml, failureRate: 0.1, arrival: {ratePerSec: 1}"));
  accepted(oneWorkload("type: stateful, volumeMb: 10, instances: 2"));
  accepted(oneWorkload("type: batch, instances: 4, gang: 2, revocable: true, preemptible: true"));
});

Deno.test("a scenario nested past the YAML depth limit is refused in one line naming it", () => {
  const res = parseScenario(`name: deep\nhosts: ${"[".repeat(5_000)}${"]".repeat(5_000)}\n`, "deep.yaml");
  assert.equal(res.ok, false);
  assert.deepEqual(res.errors, ["deep.yaml:2: lists and mappings nested more than 64 levels deep"]);
});

Deno.test("a pool update that breaks the nesting rules is refused, judged against the tree as earlier updates left it", () => {
  const update = (at: number, path: string, resources: string, extra = "") =>
    `  - {atSec: ${at}, updatePool: {path: ${path}, resources: [${resources}]${extra}}}\n`;
  const e = errors(`${TREE}events:
${update(100, "/org/b", "{kind: cpu, reservation: 20, limit: 40}")}${
    update(200, "/org", "{kind: cpu, reservation: 24, limit: 24}")
  }`);
  assert.deepEqual(e, [
    "bad.yaml:17: events[0].updatePool.resources[0].limit: got 40, expected at most 32, the limit of /org at 100 s",
    "bad.yaml:17: events[0].updatePool.resources[0].reservation: got 20, expected at most 16: the reservation " +
    "of /org is 32 at 100 s, and its other children reserve 16",
    "bad.yaml:18: events[1].updatePool.resources[0].limit: got 24, expected at least 32, the cpu limit of its " +
    "child /org/a at 200 s",
    "bad.yaml:18: events[1].updatePool.resources[0].limit: got 24, expected at least 32, the cpu limit of its " +
    "child /org/b at 200 s",
    "bad.yaml:18: events[1].updatePool.resources[0].reservation: got 24, expected at least 32, what its " +
    "children reserve of cpu at 200 s",
  ]);
  // Raising the parent first makes room for the child: the tree at each update's time, not the scenario's.
  const raise = update(50, "/org", "{kind: cpu, reservation: 40, limit: 40}");
  const child = update(100, "/org/b", "{kind: cpu, reservation: 20, limit: 40}");
  accepted(`${TREE}events:\n${raise}${child}`);
  // The same updates the other way round in time: the child's comes before the parent has room.
  const later = errors(`${TREE}events:\n${raise.replace("atSec: 50", "atSec: 150")}${child}`);
  assert.equal(later.length, 2, later.join("\n"));
  assert.match(
    later[0],
    /^bad\.yaml:18: events\[1\]\.updatePool\.resources\[0\]\.limit: got 40, expected at most 32/,
  );
  // A forced update is taken as the respool API takes it, unchecked; so is one that gives no resources.
  accepted(
    `${TREE}events:\n${update(100, "/org/b", "{kind: cpu, reservation: 20, limit: 40}", ", force: true")}`,
  );
  accepted(`${TREE}events:\n  - {atSec: 100, updatePool: {path: /org, owningteam: x}}\n`);
});

Deno.test("a pool update leaving out a kind its children have is refused: Peloton fills it with 0", () => {
  const e = errors(`${
    TREE.replace(
      "      - {kind: cpu, reservation: 32, limit: 32}\n",
      "      - {kind: cpu, reservation: 32, limit: 32}\n      - {kind: memory, reservation: 100, limit: 100}\n",
    ).replace(
      "          - {kind: cpu, reservation: 16, limit: 32}\n      - name: b",
      "          - {kind: cpu, reservation: 16, limit: 32}\n          - {kind: memory, reservation: 50, limit: 100}\n      - name: b",
    )
  }events:
  - {atSec: 10, updatePool: {path: /org, resources: [{kind: cpu, reservation: 32, limit: 32}]}}
`);
  assert.deepEqual(e, [
    "bad.yaml:19: events[0].updatePool.resources: lists no memory resource, so its memory limit is 0: expected " +
    "at least 100, the memory limit of its child /org/a at 10 s",
    "bad.yaml:19: events[0].updatePool.resources: lists no memory resource, so its memory reservation is 0: " +
    "expected at least 50, what its children reserve of memory at 10 s",
  ]);
});

Deno.test("a non-finite number is quoted as the file writes it (.inf, -.inf, .nan), not as null", () => {
  const e = errors(`${BASE.replace("cpu: 8,", "cpu: .nan,")}durationSec: .inf
settings: {warmupSec: -.inf}
`);
  assert.ok(e.includes("bad.yaml:3: hostClasses[0].cpu: got .nan, expected a number"), e.join("\n"));
  assert.ok(e.includes("bad.yaml:8: durationSec: got .inf, expected a number"), e.join("\n"));
  assert.ok(e.some((x) => x.startsWith("bad.yaml:9: settings.warmupSec: got -.inf, ")), e.join("\n"));
});

Deno.test("a class name used twice is the one error: later rules read the first class of that name", () => {
  const e = errors(`name: t
durationSec: 600
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 16384, racks: 4}
  - {name: std, count: 2, cpu: 8, memoryMb: 16384, racks: 2}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
events:
  - {atSec: 100, drain: {rack: std-rack-3}, durationSec: 60}
  - {atSec: 200, failHosts: {class: std, count: 4}}
`);
  assert.deepEqual(e, ['bad.yaml:5: hostClasses[1].name: got "std", expected a name no other class has']);
});
