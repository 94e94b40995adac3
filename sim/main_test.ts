import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runNames, summaryLine } from "./main.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario, ROOT, runSim } from "./testing.ts";

const sim = (...args: string[]) => runSim(args);

Deno.test("deno task sim writes report.json and a self-contained report.html", async () => {
  const dir = await Deno.makeTempDir();
  const r = await sim(`${ROOT}/scenarios/testjob.yaml`, "--seed", "5", "--out", dir);
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(await Deno.readTextFile(`${dir}/report.json`));
  for (const k of ["scenario", "seed", "hosts", "simulatedSeconds", "wallSeconds", "tasks"]) {
    assert.ok(k in report, k);
  }
  assert.equal(report.scenario, "testjob");
  assert.equal(report.seed, 5);
  assert.equal(report.hosts, 3);
  assert.deepEqual(
    {
      submitted: report.tasks.submitted,
      launched: report.tasks.launched,
      succeeded: report.tasks.succeeded,
      failed: report.tasks.failed,
    },
    { submitted: 12, launched: 12, succeeded: 10, failed: 2 },
  );
  const html = await Deno.readTextFile(`${dir}/report.html`);
  assert.match(html, /uPlot/);
  assert.doesNotMatch(html, /<script src=/, "no external scripts");
  assert.doesNotMatch(html, /Partial report/, "a whole run has no partial-report banner");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a bad scenario is refused with the file, line and field", async () => {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    file,
    "name: x\nhostClasses:\n  - {name: h, count: -3, cpu: 4, memoryMb: 100}\nrespools: []\nworkloads: []\n",
  );
  const r = await sim(file, "--out", "/tmp/never");
  await Deno.remove(file);
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`${file}:3: hostClasses\\[0\\]\\.count: got -3`));
});

Deno.test("bad arguments are refused", async () => {
  const r = await sim(`${ROOT}/scenarios/testjob.yaml`, "--seed", "abc");
  assert.equal(r.code, 2);
  assert.match(r.err, /--seed: got "abc", expected an integer from 0 to 4294967295/);
});

Deno.test("a seed the 32-bit PRNG cannot take as given is refused, not silently wrapped", async () => {
  // 4294967297 ran as seed 1 (the PRNG takes seed >>> 0) yet was recorded as 4294967297; "" ran as 0.
  for (const seed of ["4294967296", "4294967297", "", "1e3"]) {
    const out = `/tmp/never-seed-${Deno.pid}`;
    for (const args of [[], ["plan"]]) {
      const plan = args.length ? ["--vary", "hosts.agent.count=1..3", "--target", "tasks.unplaced<=0"] : [];
      const r = await sim(...args, `${ROOT}/scenarios/testjob.yaml`, "--seed", seed, ...plan, "--out", out);
      assert.equal(r.code, 2, `${args.join("")} --seed ${JSON.stringify(seed)}: exit code\n${r.err}`);
      assert.ok(
        r.err.includes(`--seed: got "${seed}", expected an integer from 0 to 4294967295`),
        `${args.join("")} --seed ${JSON.stringify(seed)}: ${r.err}`,
      );
      assert.equal(await Deno.stat(out).then(() => true, () => false), false, `wrote ${out}`);
    }
  }
  // The largest 32-bit seed runs and is recorded as given.
  const dir = await Deno.makeTempDir();
  try {
    const r = await sim(`${ROOT}/scenarios/testjob.yaml`, "--seed", "4294967295", "--out", dir);
    assert.equal(r.code, 0, r.err);
    assert.equal(JSON.parse(await Deno.readTextFile(`${dir}/report.json`)).seed, 4294967295);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an --out that cannot be written is refused before the run, with one line and exit code 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/afile`;
    await Deno.writeTextFile(file, "in the way");
    const cases: [string, RegExp][] = [
      [file, new RegExp(`^--out ${file}: cannot write the report there: it is a file, not a directory$`)],
      [`${file}/sub`, new RegExp(`^--out ${file}/sub: cannot write the report there: `)],
    ];
    for (const [out, message] of cases) {
      const r = await sim(`${ROOT}/scenarios/testjob.yaml`, "--out", out);
      assert.equal(r.code, 2, `--out ${out}: exit code\n${r.err}`);
      assert.match(r.err.trim(), message);
      assert.equal(r.err.trim().split("\n").length, 1, `one line, no stack trace:\n${r.err}`);
      assert.equal(r.out, "", "no run summary: nothing was simulated");
    }
    assert.equal(await Deno.readTextFile(file), "in the way");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an open-ended scenario with a job no host can take stops and says which job and why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/stuck.yaml`;
    await Deno.writeTextFile(
      file,
      `name: stuck
hostClasses:
  - { name: std, count: 2, cpu: 4, memoryMb: 8192, diskMb: 10000 }
respools:
  - { name: p, resources: [{ kind: cpu, reservation: 8, limit: 8 }, { kind: memory, reservation: 16384, limit: 16384 }] }
workloads:
  - { name: ok, respool: /p, instances: 2, durationSec: 5, cpu: 1 }
  - { name: huge, respool: /p, instances: 1, durationSec: 5, cpu: 6 }
`,
    );
    // The old runner never stopped: give up after a minute instead of hanging the suite.
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/sim/main.ts`, file, "--out", dir],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.match(stdout, /^stuck: 2 hosts, \d+s simulated in [\d.]+s \(stopped: 1 job can never start\);/);
    assert.match(
      stdout,
      /^ {2}never starts: job \S+ \(huge, 1 task waiting\): placement: no host with 6 free cpus/m,
    );
    const report = JSON.parse(await Deno.readTextFile(`${dir}/report.json`));
    assert.equal(report.endedEarly, false);
    assert.equal(report.jobs.stuck, 1);
    assert.equal(report.stuckJobs[0].workload, "huge");
    assert.equal(report.tasks.unplaced, 1);
    const html = await Deno.readTextFile(`${dir}/report.html`);
    assert.match(html, /Stopped with work left:<\/b> at [\d,]+ simulated seconds/);
    assert.match(html, /no host with 6 free cpus/);
    assert.doesNotMatch(html, /Partial report/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a scenario with an unknown pool key runs, and the key is named in a warning", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/s.yaml`,
    `name: x
durationSec: 10
hostClasses:
  - {name: h, count: 1, cpu: 4, memoryMb: 8192}
respools:
  - name: A
    foo: 3
    resources:
      - {kind: cpu, reservation: 4, limit: 4}
`,
  );
  const r = await sim(`${dir}/s.yaml`, "--out", `${dir}/out`);
  assert.equal(r.code, 0, r.err);
  assert.match(
    r.err,
    new RegExp(`^warning: ${dir}/s\\.yaml:7: respools\\[0\\]\\.foo: unknown key, ignored`, "m"),
  );
  assert.ok((await Deno.stat(`${dir}/out/report.json`)).isFile);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a pool update the respool API would refuse is refused with the scenario, naming its line and field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/refused.yaml`;
    await Deno.writeTextFile(
      file,
      `name: refused
durationSec: 60
hostClasses:
  - { name: std, count: 2, cpu: 8, memoryMb: 16384 }
respools:
  - name: org
    resources: [{ kind: cpu, reservation: 16, limit: 16 }, { kind: memory, reservation: 32768, limit: 32768 }]
    children:
      - { name: a, resources: [{ kind: cpu, reservation: 8, limit: 16 }, { kind: memory, reservation: 16384, limit: 32768 }] }
workloads:
  - { name: w, respool: /org/a, instances: 2, durationSec: 5, cpu: 1 }
events:
  - { atSec: 20, updatePool: { path: /org/a, resources: [{ kind: cpu, reservation: 8, limit: 32 }] } }
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/sim/main.ts`, file, "--out", dir],
      stdout: "piped",
      stderr: "piped",
    }).output();
    // It would fail at its time and leave the run answering for a scenario without it: refused up front.
    assert.equal(out.code, 2, new TextDecoder().decode(out.stdout));
    assert.equal(
      new TextDecoder().decode(out.stderr),
      `${file}:13: events[0].updatePool.resources[0].limit: got 32, expected at most 16, the limit of /org at ` +
        "20 s\n",
    );
    await assert.rejects(Deno.stat(`${dir}/report.json`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an --out holding an earlier run's report loses it before the run: a run that fails leaves none", async () => {
  const { prepareOut } = await import("./main.ts");
  const dir = await Deno.makeTempDir();
  try {
    for (const f of ["report.json", "report.html", "series.csv", "pools.csv", "notes.txt"]) {
      await Deno.writeTextFile(`${dir}/${f}`, "earlier");
    }
    await prepareOut(dir, ["report.json", "report.html", "series.csv", "pools.csv"]);
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assert.deepEqual(left, ["notes.txt"], "only what the run writes is removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the summary line says which window each figure covers: counts the whole run, rates after the warm-up", async () => {
  // 40 tasks at 0 s and 40 at 100 s over 600 s, 50 s of them warm-up: 80 launched in all, 40 after it.
  const yaml = (warmup: number) =>
    `name: w
durationSec: 600
hostClasses:
  - {name: std, count: 10, cpu: 8, memoryMb: 32768}
respools:
  - {name: a, resources: [{kind: cpu, reservation: 80, limit: 80}, {kind: memory, reservation: 327680, limit: 327680}]}
workloads:
  - {name: w, respool: /a, arrival: {at: [0, 100]}, instances: 40, durationSec: 60, cpu: 2, memoryMb: 1024}
settings: {sampleIntervalSec: 10, warmupSec: ${warmup}}
`;
  const line = async (warmup: number) => {
    const scenario = inlineScenario(yaml(warmup));
    const report = buildReport(scenario, await runScenario(scenario, { seed: 1 }), 1, {
      wallSeconds: 1,
      peakRssBytes: 0,
    });
    return summaryLine(report, "out/w", scenario.durationSec);
  };
  assert.match(
    await line(50),
    /; whole run \(600s\): tasks submitted 80, launched 80, .*; after the 50s warm-up \(550s\): 0\.0727 launches\/s; queue delay p50 [\d.]+s p99 [\d.]+s; peak RSS/,
  );
  // Without a warm-up the two windows are one: nothing to tell apart.
  assert.match(await line(0), /; tasks submitted 80, launched 80, .*; 0\.1333 launches\/s; queue delay/);
});

Deno.test("compare names each run so that runs tell apart: a report.json by its directory, '.' by its real name", () => {
  const cwd = "/work/out/a";
  const names = (...paths: string[]) => runNames(paths, cwd);
  // Were "report.json" and "report.json (2)", and ".".
  assert.deepEqual(names("/tmp/x/a/report.json", "/tmp/x/b/report.json"), ["a", "b"]);
  // `compare . ../b` reads these.
  assert.deepEqual(names("./report.json", "../b/report.json"), ["a", "b"]);
  assert.deepEqual(names("/tmp/x/w.json", "/tmp/x/a/report.json"), ["w.json", "a"]);
  // Names alike take their parent directories until they differ.
  assert.deepEqual(names("/tmp/x/run/report.json", "/tmp/y/run/report.json"), ["x/run", "y/run"]);
  assert.deepEqual(names("/r/report.json", "/x/r/report.json"), ["/r", "x/r"]);
  // The same report twice: numbered, as before.
  assert.deepEqual(names("./report.json", "/work/out/a/report.json"), ["a", "a (2)"]);
  assert.deepEqual(names("/report.json", "/tmp/report.json"), ["/", "tmp"]);
});
