/** Tests for the what-if file format: parsing, Peloton-refusal warnings, errors, JSON and table output. */

import assert from "node:assert/strict";
import { makeRespoolConfig } from "../testing/harness.ts";
import { RespoolTree, ROOT_ID } from "./respool_tree.ts";
import {
  formatIssue,
  formatWhatIfJson,
  formatWhatIfTable,
  parseWhatIf,
  runWhatIf,
  type WhatIfError,
  type WhatIfFile,
  type WhatIfWarning,
} from "./whatif.ts";

const GUIDE = Deno.readTextFileSync(new URL("./testdata/whatif_guide.yaml", import.meta.url));

function parseOk(text: string): { value: WhatIfFile; warnings: WhatIfWarning[] } {
  const parsed = parseWhatIf(text, "test.yaml");
  if (!parsed.ok) throw new Error(parsed.errors.map(formatIssue).join("\n"));
  return parsed;
}

function parseErrors(text: string): string[] {
  const parsed = parseWhatIf(text, "bad.yaml");
  assert.equal(parsed.ok, false, "expected the file to be refused");
  return (parsed as { errors: WhatIfError[] }).errors.map(formatIssue);
}

const cpuOf = (text: string) =>
  Object.fromEntries(
    Object.entries(runWhatIf(parseOk(text).value).pools).map(([k, v]) => [k, v.entitlement.cpu]),
  );

Deno.test("user guide file: demands 10/80/80 give 10/45/45, without warnings", () => {
  const { warnings } = parseOk(GUIDE);
  assert.deepEqual(warnings, []);
  assert.deepEqual(cpuOf(GUIDE), { "/": 100, "/rp1": 10, "/rp2": 45, "/rp3": 45 });
});

Deno.test("user guide, RP1 wanting 50: 33.33 each", () => {
  const text = GUIDE.replace(/demand: \{ ?cpu: 10 ?\}/, "demand: {cpu: 50}");
  assert.notEqual(text, GUIDE);
  const cpu = cpuOf(text);
  assert.deepEqual(cpu, {
    "/": 100,
    "/rp1": 33.333333333333336,
    "/rp2": 33.333333333333336,
    "/rp3": 33.33333333333333,
  });
});

Deno.test("JSON output has exactly pools → path → three scalars of cpu, memory, disk, gpu", () => {
  const json = formatWhatIfJson(runWhatIf(parseOk(GUIDE).value));
  const parsed = JSON.parse(json);
  assert.deepEqual(Object.keys(parsed), ["pools"]);
  assert.deepEqual(Object.keys(parsed.pools), ["/", "/rp1", "/rp2", "/rp3"]);
  for (const pool of Object.values(parsed.pools) as Record<string, Record<string, number>>[]) {
    assert.deepEqual(Object.keys(pool), ["entitlement", "nonSlackEntitlement", "slackEntitlement"]);
    for (const s of Object.values(pool)) assert.deepEqual(Object.keys(s), ["cpu", "memory", "disk", "gpu"]);
  }
  assert.deepEqual(parsed.pools["/rp2"], {
    entitlement: { cpu: 45, memory: 0, disk: 0, gpu: 0 },
    nonSlackEntitlement: { cpu: 45, memory: 0, disk: 0, gpu: 0 },
    slackEntitlement: { cpu: 0, memory: 0, disk: 0, gpu: 0 },
  });
  // Peloton never sets the root's non-slack entitlement.
  assert.deepEqual(parsed.pools["/"].nonSlackEntitlement, { cpu: 0, memory: 0, disk: 0, gpu: 0 });
  assert.ok(json.startsWith('{\n  "pools": {\n    "/": {\n      "entitlement": {\n        "cpu": 100,'));
  assert.ok(json.endsWith("}\n"));
});

Deno.test("table output: one aligned row per pool, entitlement then slack", () => {
  const text = GUIDE.replace("capacity:", "slackCapacity: {cpu: 30}\ncapacity:").replace(
    /demand: \{ ?cpu: 80 ?\}/,
    "demand: {cpu: 80}\n    slackDemand: {cpu: 12.5}",
  );
  assert.ok(text.includes("slackDemand"));
  assert.equal(
    formatWhatIfTable(runWhatIf(parseOk(text).value)),
    [
      "POOL     CPU  MEMORY  DISK   GPU  SLACK CPU  SLACK MEMORY  SLACK DISK  SLACK GPU",
      "/     100.00    0.00  0.00  0.00      30.00          0.00        0.00       0.00",
      "/rp1   10.00    0.00  0.00  0.00       5.83          0.00        0.00       0.00",
      "/rp2   45.00    0.00  0.00  0.00      18.33          0.00        0.00       0.00",
      "/rp3   45.00    0.00  0.00  0.00       5.83          0.00        0.00       0.00",
      "",
    ].join("\n"),
  );
});

const REFUSED_TREE = `capacity: {cpu: 100, memory: 10}
slackCapacity: {cpu: 80, memory: 5}
pools:
  - name: a
    resources:
      - {kind: cpu, reservation: 80, limit: 200, share: 1}
    demand: {cpu: 5}
    children:
      - name: b
        resources:
          - {kind: cpu, reservation: 50, limit: 40, share: 1}
          - {kind: memory, reservation: 0, limit: 5, share: 1}
        demand: {cpu: 100}
      - name: c
        resources:
          - {kind: cpu, reservation: 50, limit: 60, share: 1, type: STATIC}
  - name: d
    resources:
      - {kind: cpu, reservation: 30, limit: 100, share: 1}
    demand: {cpu: 100}
`;

Deno.test("trees Peloton's API would refuse are computed anyway, with a warning per broken rule", () => {
  const { value, warnings } = parseOk(REFUSED_TREE);
  assert.deepEqual(warnings.map((w) => [w.line, w.rule, w.pool]), [
    [2, "non-cpu-slack-capacity-ignored", "/"],
    [4, "reservations-above-capacity", "/"],
    [6, "limit-above-capacity", "/a"],
    [7, "input-on-non-leaf-ignored", "/a"],
    [9, "children-reservations-above-parent", "/a"],
    [11, "reservation-above-limit", "/a/b"],
    [12, "limit-above-parent-limit", "/a/b"],
  ]);
  assert.equal(
    formatIssue(warnings[1]),
    "test.yaml:4: warning: /: children of / reserve 110 cpu, more than 100, the cluster capacity; " +
      "the respool API accepts them, as the root pool sets no limits, but the cluster cannot honour them " +
      "all: entitlements can add up to more than it has, and work admitted past it waits for hosts",
  );
  assert.match(
    warnings[6].message,
    /memory limit 5 exceeds 0, the limit of \/a, which does not configure memory/,
  );
  // Phase 1 gives /a its 80 and /d its 30 out of 100; /a's children then get 40 (b, capped by its limit)
  // and 50 (c, STATIC) out of /a's 80.
  const cpu = Object.fromEntries(
    Object.entries(runWhatIf(value).pools).map(([k, v]) => [k, v.entitlement.cpu]),
  );
  assert.deepEqual(cpu, { "/": 100, "/a": 80, "/a/b": 40, "/a/c": 50, "/d": 30 });
});

/** The same numbers under the root (over the cluster's capacity) and under a pool (over its parent). */
const OVER_CAPACITY = `capacity: {cpu: 100}
pools:
  - name: a
    resources:
      - {kind: cpu, reservation: 150, limit: 200, share: 1}
    children:
      - name: x
        resources:
          - {kind: cpu, reservation: 100, limit: 300, share: 1}
        demand: {cpu: 300}
      - name: y
        resources:
          - {kind: cpu, reservation: 100, limit: 100, share: 1}
  - name: b
    resources:
      - {kind: cpu, reservation: 0, limit: 300, share: 1}
    demand: {cpu: 300}
`;

Deno.test("over-capacity pools at the top are accepted, as the live respool API accepts them; below, both refuse", () => {
  const { value, warnings } = parseOk(OVER_CAPACITY);
  const refusal = /would refuse/;
  assert.deepEqual(warnings.map((w) => [w.rule, w.pool, refusal.test(w.message)]), [
    ["reservations-above-capacity", "/", false],
    ["limit-above-capacity", "/a", false],
    ["children-reservations-above-parent", "/a", true],
    ["limit-above-parent-limit", "/a/x", true],
    ["limit-above-capacity", "/b", false],
  ]);
  assert.equal(
    warnings[1].message,
    "cpu limit 200 exceeds 100, the cluster capacity; the respool API accepts it, as the root pool sets no " +
      "limits, but the pool can never run more than the cluster has",
  );
  // The live API: the top-level pools go in; /a/x (limit over /a's) and /a/y (reservations over /a's) do not.
  const tree = new RespoolTree();
  const cpu = (reservation: number, limit: number) => ({ cpu: { reservation, limit } });
  assert.ok(tree.create("a", ROOT_ID, makeRespoolConfig("a", cpu(150, 200))).ok);
  assert.ok(tree.create("b", ROOT_ID, makeRespoolConfig("b", cpu(0, 300))).ok);
  const x = tree.create("x", "a", makeRespoolConfig("x", cpu(100, 300)));
  assert.match(x.ok ? "" : x.message, /limit 300 exceeds the parent's limit 200/);
  assert.ok(tree.create("x", "a", makeRespoolConfig("x", cpu(100, 200))).ok);
  const y = tree.create("y", "a", makeRespoolConfig("y", cpu(100, 100)));
  assert.match(y.ok ? "" : y.message, /reservations 200 exceed the parent's reservation 150/);
  // And what the warning promises: /a is entitled to its 150, more than the cluster has.
  assert.equal(runWhatIf(value).pools["/a"].entitlement.cpu, 150);
});

Deno.test("Peloton's own spelling: lower-case keys, numeric type, respool metadata", () => {
  const { value, warnings } = parseOk(`capacity: {cpu: 10}
pools:
  - name: batch
    owningteam: team6
    ldapgroups: [money]
    description: "pasted from a respool file"
    policy: 1
    controllerlimit: {maxpercent: 10}
    slacklimit: {maxpercent: 30}
    resources:
      - {kind: cpu, reservation: 4, limit: 10, share: 1, type: 2}
    slackdemand: {cpu: 1}
    allocation: {nonslack: {cpu: 1}}
`);
  assert.deepEqual(warnings, []);
  const pool = value.pools[0];
  assert.deepEqual(pool.resources, [{ kind: "cpu", reservation: 4, limit: 10, share: 1, type: "STATIC" }]);
  assert.deepEqual(pool.slackLimit, { maxPercent: 30 });
  assert.equal(pool.slackDemand.cpu, 1);
  assert.equal(pool.allocation.nonSlack.cpu, 1);
});

Deno.test("errors name the field, the line and what was expected", () => {
  const errors = parseErrors(`capacity: {cpu: -1, mem: 3}
pools:
  - name: a
    resources:
      - {kind: cpus, reservation: "10", limit: 5, share: 1, type: FOO}
      - {kind: cpu, reservation: 10, limit: 5}
    demand: {cpu: x}
    colour: red
`);
  assert.deepEqual(errors, [
    "bad.yaml:1:17: capacity.cpu: expected a number >= 0, got -1",
    'bad.yaml:1:26: capacity.mem: unknown resource kind "mem"; expected cpu, memory, disk or gpu',
    'bad.yaml:5:16: pools[0].resources[0].kind: expected one of cpu, memory, disk, gpu, got "cpus"',
    'bad.yaml:5:35: pools[0].resources[0].reservation: expected a number, got "10"',
    'bad.yaml:5:67: pools[0].resources[0].type: expected ELASTIC, STATIC, 1 or 2, got "FOO"',
    "bad.yaml:6:9: pools[0].resources[1].share: missing; expected a number (Peloton would read it as 0)",
    'bad.yaml:7:19: pools[0].demand.cpu: expected a number, got "x"',
    'bad.yaml:8:13: pools[0].colour: unknown field "colour"',
  ]);
});

Deno.test("missing capacity, an empty file and a list are refused", () => {
  assert.deepEqual(parseErrors("pools: []\n"), ["bad.yaml:1:1: capacity: missing; expected a mapping"]);
  assert.deepEqual(parseErrors(""), [
    "bad.yaml: expected a mapping with capacity and pools, got an empty file",
  ]);
  assert.deepEqual(parseErrors("- 1\n"), [
    "bad.yaml:1:1: expected a mapping with capacity and pools, got a list",
  ]);
});

Deno.test("duplicate sibling names, duplicate kinds and slashes in names are refused", () => {
  const errors = parseErrors(`capacity: {cpu: 10}
pools:
  - name: a
    resources:
      - {kind: cpu, reservation: 1, limit: 2, share: 1}
      - {kind: cpu, reservation: 1, limit: 2, share: 1}
  - name: a
  - name: b/c
    children:
      - name: x
      - name: x
`);
  assert.deepEqual(errors, [
    "bad.yaml:6:16: pools[0].resources[1].kind: resource kind cpu is configured twice",
    'bad.yaml:7:11: pools[1].name: duplicate pool name "a" under / (also [0])',
    'bad.yaml:8:11: pools[2].name: pool name "b/c" must not contain "/"',
    'bad.yaml:11:15: pools[2].children[1].name: duplicate pool name "x" under /b/c (also [0])',
  ]);
});

Deno.test("YAML syntax errors and keys given twice are refused with their line", () => {
  const syntax = parseErrors("capacity: {cpu: 10\npools: []\n");
  assert.ok(
    syntax.length > 0 && syntax.every((e) => /^bad\.yaml:\d+:\d+: invalid YAML: /.test(e)),
    syntax.join(),
  );
  const twice = parseErrors(
    "capacity: {cpu: 1}\npools:\n  - {name: a, slackLimit: {maxPercent: 1}, slacklimit: {maxPercent: 2}}\n",
  );
  assert.deepEqual(twice, [
    'bad.yaml:3:56: pools[0].slacklimit: "slacklimit" is slackLimit again, given twice',
  ]);
});

Deno.test("a share of 0 with unmet demand would hang Peloton: computed, with a warning", () => {
  const { value } = parseOk(`capacity: {cpu: 100}
pools:
  - {name: zero, resources: [{kind: cpu, reservation: 0, limit: 100, share: 0}], demand: {cpu: 50}}
  - {name: one, resources: [{kind: cpu, reservation: 0, limit: 100, share: 1}], demand: {cpu: 10}}
`);
  const result = runWhatIf(value);
  assert.deepEqual(result.warnings.map((w) => [w.rule, w.pool]), [["share-loop-stalled", "/"]]);
  assert.match(
    formatIssue(result.warnings[0]),
    /^warning: \/: Peloton's calculator would loop forever sharing out cpu/,
  );
  assert.equal(result.pools["/zero"].entitlement.cpu, 0);
  assert.equal(result.pools["/one"].entitlement.cpu, 100);
});

Deno.test("runWhatIf leaves its input alone, so running it twice gives the same answer", () => {
  const { value } = parseOk(REFUSED_TREE);
  const before = structuredClone(value);
  const first = formatWhatIfJson(runWhatIf(value));
  assert.deepEqual(value, before);
  assert.equal(formatWhatIfJson(runWhatIf(value)), first);
});

Deno.test("a file whose aliases expand too far is an error naming the file, not an exception", () => {
  const levels = ["a: &l0 [x, x, x, x, x, x, x, x, x, x]"];
  for (let i = 1; i < 9; i++) levels.push(`l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(", ")}]`);
  const parsed = parseWhatIf(levels.join("\n") + "\n", "bomb.yaml");
  assert.equal(parsed.ok, false);
  if (parsed.ok) return;
  assert.equal(parsed.errors.length, 1);
  assert.equal(parsed.errors[0].file, "bomb.yaml");
  assert.match(parsed.errors[0].message, /^invalid YAML: .*alias/i);
});

Deno.test("a what-if file nested past the YAML depth limit is refused in one line naming it", () => {
  assert.deepEqual(parseErrors(`capacity: {cpu: 1}\npools: ${"[".repeat(5_000)}${"]".repeat(5_000)}\n`), [
    "bad.yaml:2:71: invalid YAML: lists and mappings nested more than 64 levels deep",
  ]);
});
