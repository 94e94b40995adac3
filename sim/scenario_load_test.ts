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

Deno.test("a pool read from a respool file nests within its parent, or the scenario is refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/s.yaml`, SCENARIO.slice(0, SCENARIO.indexOf("  - name: j\n")));
    await Deno.mkdir(`${dir}/pools`);
    // /org reserves 8 cores, 4 of them for a, and limits its children to 8.
    const pool = (reservation: number, limit: number) =>
      Deno.writeTextFile(
        `${dir}/pools/b.yaml`,
        `name: b\nresources:\n  - {kind: cpu, reservation: ${reservation}, limit: ${limit}, share: 1}\n`,
      );
    await pool(6, 16);
    const errors = await loadScenarioFile(`${dir}/s.yaml`).then(
      () => assert.fail("loaded a pool over its parent's limit and reservation"),
      (e: Error) => (e as ScenarioError).errors,
    );
    const at = `${dir}/s.yaml:14: respools[0].children[1].file: ${dir}/pools/b.yaml: resources[0]`;
    assert.deepEqual(errors, [
      `${at}.limit: got 16, expected at most 8, the limit of /org`,
      `${at}.reservation: got 6, expected at most 4: the reservation of /org is 8, and its children before ` +
      "this one reserve 4",
    ]);
    await pool(4, 8);
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    assert.equal(loaded.scenario.respools[0].children?.[1].name, "b");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a workload whose every task asks for more than its pool's limit is warned of, with its line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/b.yaml`,
      `name: b
resources:
  - {kind: cpu, reservation: 2, limit: 4}
  - {kind: memory, reservation: 1024, limit: 4096}
`,
    );
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 16384}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 4, limit: 8}
  - {name: b, file: b.yaml}
workloads:
  - {name: nomem, respool: /a, durationSec: 10}
  - name: big
    respool: /b
    durationSec: 10
    cpu: {uniform: [6, 8]}
    memoryMb: {choice: [[512, 0.5], [2048, 0.5]]}
  - {name: fits, respool: /b, durationSec: 10, cpu: 4, memoryMb: 4096}
  - {name: maybe, respool: /b, durationSec: 10, cpu: {lognormal: {median: 2, sigma: 1}}, memoryMb: 1024}
  - {name: onslack, respool: /b, durationSec: 10, cpu: 6, memoryMb: 200, revocable: true}
`,
    );
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    assert.deepEqual(loaded.warnings, [
      `${dir}/s.yaml:11: workloads[0].memoryMb: every task of nomem asks for at least 1024 MB, more than /a ` +
      "can ever hold (it lists no memory resource, so its memory limit is 0): the resource manager will admit " +
      "none of them, and they will wait for the whole run",
      `${dir}/s.yaml:15: workloads[1].cpu: every task of big asks for at least 6 cores, more than /b can ever ` +
      "hold (its cpu limit is 4): the resource manager will admit none of them, and they will wait for the " +
      "whole run",
    ]);
    // Revocable cpu comes from slack, admitted against the slack entitlement, which the limit does not cap
    // (its 200 MB are within its slack limit, 20% of the 1024 MB reservation).
    assert.ok(!loaded.warnings.some((w) => w.includes("onslack")), loaded.warnings.join("\n"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a workload whose every task is bigger than any host is warned of, with its line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 2, cpu: 32, memoryMb: 65536, diskMb: 1000}
  - {name: wide, count: 0, cpu: 128, memoryMb: 1048576, diskMb: 1000}
  - {name: fat, count: 1, cpu: 8, memoryMb: 524288, diskMb: 1000}
  - {name: later, count: 0, cpu: 96, memoryMb: 65536, diskMb: 1000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 0, limit: 256}
      - {kind: memory, reservation: 0, limit: 2097152}
      - {kind: disk, reservation: 0, limit: 10000}
      - {kind: gpu, reservation: 0, limit: 8}
workloads:
  - {name: reports, respool: /p, durationSec: 10, cpu: 100}
  - {name: drawn, respool: /p, durationSec: 10, cpu: {uniform: [40, 48]}, gpu: {choice: [[2, 1], [3, 1]]}}
  - {name: both, respool: /p, durationSec: 10, cpu: 16, memoryMb: 262144}
  - {name: some, respool: /p, durationSec: 10, cpu: {uniform: [16, 128]}}
  - {name: tail, respool: /p, durationSec: 10, cpu: {lognormal: {median: 8, sigma: 2}}}
  - {name: fits, respool: /p, durationSec: 10, cpu: 8, memoryMb: 524288}
  - {name: added, respool: /p, durationSec: 10, cpu: 96}
events:
  - {atSec: 10, addHostClass: {name: gpu, count: 1, cpu: 48, memoryMb: 65536, diskMb: 1000, gpu: 1}}
  - {atSec: 20, addHosts: {class: later, count: 1}}
`,
    );
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    const never = ": none of them will ever be placed";
    // wide never has hosts; later and gpu get theirs from events. Only a task's least ask is judged.
    assert.deepEqual(loaded.warnings, [
      `${dir}/s.yaml:16: workloads[0].cpu: every task of reports asks for at least 100 cores, more than any ` +
      `host class has (96 at most)${never}`,
      `${dir}/s.yaml:17: workloads[1].gpu: every task of drawn asks for at least 2 GPUs, more than any host ` +
      `class has (1 at most)${never}`,
      `${dir}/s.yaml:18: workloads[2]: every task of both asks for at least cpu 16, memory 262144 MB, which no ` +
      "host class has at once (std: cpu 32, memory 65536 MB; fat: cpu 8, memory 524288 MB; later: cpu 96, " +
      `memory 65536 MB; gpu: cpu 48, memory 65536 MB)${never}`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a workload whose host attributes or constraint no host class meets is warned of, with its line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 4, cpu: 32, memoryMb: 65536, diskMb: 1000, racks: 2}
  - {name: gpu, count: 1, cpu: 32, memoryMb: 65536, diskMb: 1000, gpu: 8, hostPool: gpu}
  - {name: spare, count: 0, cpu: 32, memoryMb: 65536, diskMb: 1000, hostPool: spare}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 0, limit: 256}
      - {kind: memory, reservation: 0, limit: 2097152}
      - {kind: disk, reservation: 0, limit: 10000}
      - {kind: gpu, reservation: 0, limit: 8}
workloads:
  - {name: dashboards, respool: /p, durationSec: 10, cpu: 1, hostAttributes: {host_pool: nope}}
  - {name: pinned, respool: /p, durationSec: 10, cpu: 1, hostAttributes: {host_pool: gpu},
     constraint: {type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, condition: EQUAL,
       label: {key: rack, value: std-rack-0}, requirement: 1}}}
  - {name: byname, respool: /p, durationSec: 10, cpu: 1,
     constraint: {type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, condition: EQUAL,
       label: {key: hostname, value: std-9}, requirement: 1}}}
  - {name: default, respool: /p, durationSec: 10, cpu: 1, hostAttributes: {host_pool: default}}
  - {name: rack, respool: /p, durationSec: 10, cpu: 1, hostAttributes: {rack: std-rack-1}}
  - {name: grown, respool: /p, durationSec: 10, cpu: 1, hostAttributes: {host_pool: spare}}
  - {name: later, respool: /p, durationSec: 10, cpu: 1,
     constraint: {type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, condition: EQUAL,
       label: {key: hostname, value: std-4}, requirement: 1}}}
events:
  - {atSec: 20, addHosts: {class: spare, count: 1}}
  - {atSec: 20, addHosts: {class: std, count: 1}}
`,
    );
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    const never = ": none of them will ever be placed";
    // The default pool, a rack, a class events give hosts, a host an event adds: each is some host's.
    assert.deepEqual(loaded.warnings, [
      `${dir}/s.yaml:15: workloads[0].hostAttributes: every task of dashboards needs a host where ` +
      "host_pool=nope, which no host class has (std: host_pool=default; gpu: host_pool=gpu; spare: " +
      `host_pool=spare)${never}`,
      `${dir}/s.yaml:17: workloads[1].constraint: every task of pinned needs a host where (host_pool=gpu and ` +
      "rack=std-rack-0), which no host class has (std: host_pool=default, rack=std-rack-0, rack=std-rack-1; " +
      `gpu: host_pool=gpu, no rack; spare: host_pool=spare, no rack)${never}`,
      `${dir}/s.yaml:20: workloads[2].constraint: every task of byname needs a host where hostname=std-9, ` +
      "which no host class has (std: hosts std-0 … std-4; gpu: hosts gpu-0; spare: hosts spare-0)" +
      never,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pool read from a respool file may use one anchor many times", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // The yaml library's own bound (100 uses of an anchor) threw here.
    const uses = Array.from({ length: 150 }, () => "*d").join(", ");
    await Deno.writeTextFile(
      `${dir}/b.yaml`,
      `name: b\ndescription: &d pool b\nresources:\n  - {kind: cpu, reservation: 2, limit: 4}\nnotes: [${uses}]\n`,
    );
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 16384}
respools:
  - {name: b, file: b.yaml}
`,
    );
    const loaded = await loadScenarioFile(`${dir}/s.yaml`);
    assert.equal(loaded.scenario.respools[0].description, "pool b");
    assert.equal((loaded.scenario.respools[0].notes as string[]).length, 150);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("top-level pools reserving more than the cluster ever has are warned of; hosts events add count", async () => {
  const dir = await Deno.makeTempDir();
  const scenario = (events: string) =>
    `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 16384}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 12, limit: 16}
  - name: b
    resources:
      - {kind: cpu, reservation: 8, limit: 16}
workloads:
  - {name: w, respool: /a, durationSec: 10, cpu: 1, memoryMb: 0}
${events}`;
  try {
    await Deno.writeTextFile(`${dir}/s.yaml`, scenario(""));
    assert.deepEqual((await loadScenarioFile(`${dir}/s.yaml`)).warnings, [
      `${dir}/s.yaml:6: respools: the top-level pools reserve 20 cores, more than the cluster ever has (16 ` +
      "cores): entitlements add up to more than the cluster, so admitted tasks may wait for hosts (Peloton " +
      "refuses such pools: its root pool's reservation is the cluster's capacity)",
    ]);
    // Hosts added later make room for the reservation.
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      scenario("events:\n  - {atSec: 30, addHosts: {class: std, count: 1}}"),
    );
    assert.deepEqual((await loadScenarioFile(`${dir}/s.yaml`)).warnings, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pool update making the top-level pools reserve more than the cluster ever has is warned of", async () => {
  const dir = await Deno.makeTempDir();
  const scenario = (reservation: number) =>
    `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 2, cpu: 8, memoryMb: 16384}
respools:
  - name: a
    resources:
      - {kind: cpu, reservation: 8, limit: 16}
  - name: b
    resources:
      - {kind: cpu, reservation: 8, limit: 16}
workloads:
  - {name: w, respool: /a, durationSec: 10, cpu: 1, memoryMb: 0}
events:
  - {atSec: 30, updatePool: {path: /b, resources: [{kind: cpu, reservation: ${reservation}, limit: 16}]}}
`;
  try {
    await Deno.writeTextFile(`${dir}/s.yaml`, scenario(12));
    assert.deepEqual((await loadScenarioFile(`${dir}/s.yaml`)).warnings, [
      `${dir}/s.yaml:15: events[0].updatePool.resources: after this update at 30 s the top-level pools reserve ` +
      "20 cores, more than the cluster ever has (16 cores): entitlements add up to more than the cluster, so " +
      "admitted tasks may wait for hosts (Peloton refuses such pools: its root pool's reservation is the " +
      "cluster's capacity)",
    ]);
    await Deno.writeTextFile(`${dir}/s.yaml`, scenario(8));
    assert.deepEqual((await loadScenarioFile(`${dir}/s.yaml`)).warnings, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a gang bigger than its pool's limit or than the cluster is warned of, with its line", async () => {
  const dir = await Deno.makeTempDir();
  const scenario = (workloads: string) =>
    `name: s
durationSec: 60
hostClasses:
  - {name: gpu, count: 4, cpu: 64, memoryMb: 65536, gpu: 8}
respools:
  - name: ml
    resources:
      - {kind: cpu, reservation: 256, limit: 1000}
      - {kind: memory, reservation: 262144, limit: 262144}
      - {kind: gpu, reservation: 32, limit: 32}
workloads:
${workloads}`;
  const gang = (name: string, instances: string, gang: string, cpu: number, gpu: number) =>
    `  - {name: ${name}, respool: /ml, durationSec: 10, instances: ${instances}, gang: ${gang}, cpu: ${cpu}, ` +
    `memoryMb: 1024, gpu: ${gpu}}\n`;
  try {
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      scenario(
        gang("big", "6", "true", 8, 8) + gang("wide", "{uniform: [40, 60]}", "40", 8, 0) +
          // Gangs that fit, one only at its fewest tasks: not warned of.
          gang("fits", "4", "true", 8, 8) + gang("some", "{uniform: [2, 6]}", "true", 8, 8),
      ),
    );
    const { warnings } = await loadScenarioFile(`${dir}/s.yaml`);
    const still =
      "a gang is admitted whole or not at all, so the resource manager will admit none of them, and " +
      "they will wait for the whole run (and work queued behind them in /ml with them)";
    assert.deepEqual(warnings, [
      `${dir}/s.yaml:12: workloads[0].gang: every gang of big has at least 6 tasks, which ask for at least 48 ` +
      // Over the pool's limit it is passed over at admission, so nothing behind it waits with it.
      `GPUs, more than /ml can ever hold (its gpu limit is 32): ${
        still.replace(" (and work queued behind them in /ml with them)", "")
      }`,
      `${dir}/s.yaml:13: workloads[1].gang: every gang of wide has at least 40 tasks, which ask for at least ` +
      `320 cores, more than the cluster ever has (256 cores): ${still}`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a gang needing more hosts at once than the cluster ever has room on is warned of", async () => {
  const dir = await Deno.makeTempDir();
  const gang = (name: string, instances: number, gpu: number) =>
    `  - {name: ${name}, respool: /ml, durationSec: 10, instances: ${instances}, gang: true, cpu: 1, ` +
    `memoryMb: 1024, gpu: ${gpu}}\n`;
  try {
    // Three hosts, one more added later: four could take a 6-GPU member, and each two 4-GPU members.
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: gpu, count: 3, cpu: 16, memoryMb: 16384, gpu: 8}
respools:
  - name: ml
    resources:
      - {kind: cpu, reservation: 64, limit: 64}
      - {kind: memory, reservation: 65536, limit: 65536}
      - {kind: gpu, reservation: 32, limit: 32}
workloads:
${gang("odd", 5, 6)}${gang("spread", 4, 6)}${gang("shared", 8, 4)}events:
  - {atSec: 30, addHosts: {class: gpu, count: 1}}
`,
    );
    const { warnings } = await loadScenarioFile(`${dir}/s.yaml`);
    assert.deepEqual(warnings, [
      `${dir}/s.yaml:12: workloads[0].gang: every gang of odd has at least 5 tasks, which ask for at least ` +
      "1 cores, 1024 MB of memory, 6 GPUs each, and only 4 hosts ever have room for one: a gang is placed " +
      "whole or not at all, so none of them will ever be placed, and admitted, they hold /ml's allocation " +
      "(work queued behind them in /ml waits with them)",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("revocable work over its pool's slack limit is warned of, as work over its limit is", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      `name: s
durationSec: 60
hostClasses:
  - {name: std, count: 10, cpu: 10, memoryMb: 10000}
respools:
  - name: R
    slackLimit: {maxPercent: 10}
    resources:
      - {kind: cpu, reservation: 0, limit: 100}
      - {kind: memory, reservation: 1000, limit: 100000}
  - name: D
    resources:
      - {kind: cpu, reservation: 0, limit: 100}
      - {kind: memory, reservation: 1000, limit: 100000}
workloads:
  - {name: over, respool: /R, durationSec: 10, cpu: 1, memoryMb: 200, revocable: true}
  - {name: fits, respool: /R, durationSec: 10, cpu: 1, memoryMb: 50, revocable: true}
  - {name: regular, respool: /R, durationSec: 10, cpu: 1, memoryMb: 200}
  - {name: gang, respool: /R, durationSec: 10, instances: 4, gang: true, cpu: 1, memoryMb: 50, revocable: true}
  - {name: default, respool: /D, durationSec: 10, cpu: 1, memoryMb: 300, revocable: true}
`,
    );
    const { warnings } = await loadScenarioFile(`${dir}/s.yaml`);
    assert.deepEqual(warnings, [
      `${dir}/s.yaml:16: workloads[0].memoryMb: every task of over asks for at least 200 MB, more than /R ` +
      "can ever hold of revocable work (its memory slack limit is 100: 10% of its reservation of 1000): the " +
      "resource manager will admit none of them, and they will wait for the whole run",
      `${dir}/s.yaml:20: workloads[4].memoryMb: every task of default asks for at least 300 MB, more than /D ` +
      "can ever hold of revocable work (its memory slack limit is 200: 20% of its reservation of 1000): the " +
      "resource manager will admit none of them, and they will wait for the whole run",
      `${dir}/s.yaml:19: workloads[3].gang: every gang of gang has at least 4 tasks, which ask for at least ` +
      "200 MB, more than /R can ever hold of revocable work (its memory slack limit is 100: 10% of its " +
      "reservation of 1000): a gang is admitted whole or not at all, so the resource manager will admit " +
      "none of them, and they will wait for the whole run",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
