/** End-to-end tests of the simulator CLI as a real process: `compare`, `plan`, Ctrl-C and the progress line. */
import assert from "node:assert/strict";
import { formatNumber } from "../reports/charts.ts";
import type { Comparison } from "../reports/compare.ts";
import type { Report } from "../reports/report.ts";
import type { PlanOutcome } from "./plan.ts";
import { Progress } from "./progress.ts";
import { loadScenario, PLAN_SCENARIO, ROOT } from "./testing.ts";

const dec = new TextDecoder();

function simCommand(args: string[], stderr: "piped" | "null" = "piped"): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/sim/main.ts`, ...args],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr,
  });
}

async function sim(...args: string[]) {
  const out = await simCommand(args).output();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(path)) as T;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

const unplacedWith = (hosts: number) => Math.max(0, 40 - 4 * hosts);

async function planScenario(dir: string): Promise<string> {
  const file = `${dir}/plan-small.yaml`;
  await Deno.writeTextFile(file, PLAN_SCENARIO);
  return file;
}

Deno.test("sim compare puts both reports' numbers side by side, in the terminal, compare.json and compare.html", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Two different scenarios, so that no number of one can stand in for the other's.
    const runs = await Promise.all([
      sim(`${ROOT}/scenarios/testjob.yaml`, "--seed", "3", "--out", `${dir}/small`),
      sim(`${ROOT}/scenarios/elastic-sharing.yaml`, "--seed", "4", "--out", `${dir}/shared`),
    ]);
    for (const r of runs) assert.equal(r.code, 0, r.err);
    const a = await readJson<Report>(`${dir}/small/report.json`);
    const b = await readJson<Report>(`${dir}/shared/report.json`);

    const r = await sim("compare", `${dir}/small`, `${dir}/shared/`, "--out", `${dir}/cmp`);
    assert.equal(r.code, 0, r.err);
    const c = await readJson<Comparison>(`${dir}/cmp/compare.json`);
    assert.deepEqual(c.names, ["small", "shared"]);
    assert.deepEqual(c.endedEarly, [false, false]);
    assert.doesNotMatch(r.out, /partial/);
    const lines = r.out.split("\n");
    assert.match(lines[0], /^metric\s+small\s+shared$/);
    const html = await Deno.readTextFile(`${dir}/cmp/compare.html`);
    assert.doesNotMatch(html, /Partial report|\(partial\)/, "whole runs are not marked partial");
    const checked: [string, string, number, number][] = [
      ["hosts", "hosts", a.hosts, b.hosts],
      ["simulated s", "simulatedSeconds", a.simulatedSeconds, b.simulatedSeconds],
      ["tasks submitted", "tasks.submitted", a.tasks.submitted, b.tasks.submitted],
      ["tasks launched", "tasks.launched", a.tasks.launched, b.tasks.launched],
      ["tasks succeeded", "tasks.succeeded", a.tasks.succeeded, b.tasks.succeeded],
      ["tasks preempted", "tasks.preempted", a.tasks.preempted, b.tasks.preempted],
      ["tasks unplaced", "tasks.unplaced", a.tasks.unplaced, b.tasks.unplaced],
      ["launches/s", "launchesPerSec", a.launchesPerSec!, b.launchesPerSec!],
      ["queue delay p99 s", "queueDelaySeconds.p99", a.queueDelaySeconds.p99!, b.queueDelaySeconds.p99!],
      ["utilization cpu", "utilization.cpu", a.utilization.cpu!, b.utilization.cpu!],
    ];
    for (const [label, path, x, y] of checked) {
      const row = c.rows.find((row) => row.path === path);
      assert.ok(row, `compare.json has no row for ${path}`);
      assert.deepEqual(row.values, [x, y], path);
      const change = x === 0 ? [null, null] : [0, Math.round(((y - x) / x) * 1e4) / 1e4];
      assert.deepEqual(row.change, change, `${path}: change against the first report`);
      // The terminal table: the label, then each report's number, in order.
      const line = lines.find((l) => l.startsWith(`${label}  `));
      assert.ok(line, `no terminal row "${label}" in:\n${r.out}`);
      const cells = line.slice(label.length).trim().split(/\s{2,}/).map((s) => Number(s.replace(/,/g, "")));
      assert.deepEqual(cells, [x, y], `terminal row "${label}"`);
      // The page's table: the label's row holds both numbers as the page formats them.
      const cell = (v: number) => `<td class="n">${formatNumber(v)}</td>`;
      assert.ok(
        html.includes(`<tr><td>${label}</td>${cell(x)}${cell(y)}`),
        `compare.html has no row "${label}" with ${x} and ${y}`,
      );
    }
    assert.notEqual(a.hosts, b.hosts, "the two reports differ");
    // Pools of either report appear, with the other report's value missing.
    for (const pool of [...Object.keys(a.pools), ...Object.keys(b.pools)]) {
      assert.ok(c.pools.some((p) => p.pool === pool), `pool ${pool} is compared`);
    }
    const only = c.pools.find((p) => p.pool === "/DefaultResPool" && p.metric === "avgAllocationCpu");
    assert.deepEqual(only?.values, [a.pools["/DefaultResPool"].avgAllocationCpu, null]);
    // Runs named by their directories however they are given: a report.json path, ".", "../shared".
    const byFile = await sim("compare", `${dir}/small/report.json`, `${dir}/shared/report.json`);
    assert.equal(byFile.code, 0, byFile.err);
    assert.match(byFile.out.split("\n")[0], /^metric\s+small\s+shared$/);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/sim/main.ts`, "compare", ".", "../shared"],
      cwd: `${dir}/small`,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, dec.decode(out.stderr));
    assert.match(dec.decode(out.stdout).split("\n")[0], /^metric\s+small\s+shared$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim compare refuses bad arguments with a clear error, a non-zero exit and nothing written", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = await sim(`${ROOT}/scenarios/testjob.yaml`, "--out", `${dir}/run`);
    assert.equal(run.code, 0, run.err);
    await Deno.writeTextFile(`${dir}/plan.json`, JSON.stringify({ scenario: "x", points: [] }));
    await Deno.writeTextFile(`${dir}/broken.json`, "{ not json");
    // It has the four objects compare once checked alone, and crashed rendering compare.html.
    await Deno.writeTextFile(`${dir}/w.json`, '{"tasks":{},"pools":{},"series":{},"poolSeries":{}}');
    const real = await readJson<Report>(`${dir}/run/report.json`);
    await Deno.writeTextFile(`${dir}/typed.json`, JSON.stringify({ ...real, simulatedSeconds: "120" }));
    const cases: [string[], RegExp][] = [
      [[`${dir}/run`], /compare: expected at least two report directories, got 1/],
      [[], /compare: expected at least two report directories, got 0/],
      [[`${dir}/run`, `${dir}/missing`], new RegExp(`compare: cannot read ${dir}/missing/report\\.json`)],
      [[`${dir}/run`, `${dir}/broken.json`], new RegExp(`compare: cannot read ${dir}/broken\\.json`)],
      [
        [`${dir}/run`, `${dir}/plan.json`],
        new RegExp(`compare: ${dir}/plan\\.json is not a simulation report`),
      ],
      [
        [`${dir}/run`, `${dir}/w.json`],
        new RegExp(
          `^compare: ${dir}/w\\.json is not a simulation report \\(no "scenario", "description", "seed", ` +
            `"simulatedSeconds", "series\\.t"\\)$`,
          "m",
        ),
      ],
      [
        [`${dir}/run`, `${dir}/typed.json`],
        new RegExp(
          `^compare: ${dir}/typed\\.json is not a simulation report \\("simulatedSeconds" is a string, ` +
            `expected a number\\)$`,
          "m",
        ),
      ],
      [[`${dir}/run`, `${dir}/run`, "--bogus"], /^compare: unknown flag --bogus$/m],
    ];
    for (const [args, message] of cases) {
      const out = `${dir}/out`;
      const r = await sim("compare", ...args, "--out", out);
      assert.equal(r.code, 2, `compare ${args.join(" ")}: exit code\n${r.err}`);
      assert.match(r.err, message);
      assert.doesNotMatch(r.err, /^\s+at /m, "no stack trace");
      assert.equal(r.out, "", `compare ${args.join(" ")}: nothing on stdout`);
      assert.equal(await exists(out), false, `compare ${args.join(" ")} wrote ${out}`);
    }
    // An --out that is a file is refused before anything is printed or written.
    await Deno.writeTextFile(`${dir}/afile`, "in the way");
    const r = await sim("compare", `${dir}/run`, `${dir}/run`, "--out", `${dir}/afile`);
    assert.equal(r.code, 2, r.err);
    // After the scenario's warnings (its pool reserves more than the small cluster has, on purpose).
    assert.equal(
      r.err.trim().split("\n").at(-1),
      `--out ${dir}/afile: cannot write the report there: it is a file, not a directory`,
    );
    assert.equal(r.out, "", "no table printed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim plan --workers 2 finds the smallest host count that places every task and reports the curve", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await planScenario(dir);
    const vary = "hosts.std.count=1..20", target = "tasks.unplaced<=0";
    const r = await sim(
      "plan",
      file,
      "--vary",
      vary,
      "--target",
      target,
      "--workers",
      "2",
      "--out",
      `${dir}/p2`,
    );
    assert.equal(r.code, 0, r.err);
    const o = await readJson<PlanOutcome>(`${dir}/p2/plan.json`);
    assert.equal(o.resolution, 1);
    assert.equal(o.answer, 10);
    assert.match(r.out, /smallest hosts\.std\.count meeting tasks\.unplaced<=0: 10 \(within 1;/);
    // The curve: every run's value of the target's field, which here is known exactly.
    assert.deepEqual(o.points.map((p) => p.value), [...o.points.map((p) => p.value)].sort((x, y) => x - y));
    for (const p of o.points) {
      assert.equal(p.error, undefined, `run ${p.value}: ${p.error}`);
      assert.equal(p.metric, unplacedWith(p.value), `tasks.unplaced with ${p.value} hosts`);
      assert.equal(p.met, p.metric === 0, `run ${p.value} meets the target`);
      assert.match(r.out, new RegExp(`^${p.value}\\t${p.metric}\\t${p.met}$`, "m"));
      assert.match(
        r.err,
        new RegExp(`^  hosts\\.std\\.count=${p.value}: ${p.metric} \\((meets|misses) target\\)$`, "m"),
      );
    }
    // Smallest within the resolution: the value one resolution below the answer was run and misses.
    assert.ok(o.points.some((p) => p.value === 10 - o.resolution && !p.met), "9 hosts was run and misses");
    assert.deepEqual([o.points[0].value, o.points.at(-1)!.value], [1, 20], "the range's ends were run");
    // Two workers: every round ran two variants side by side; one worker bisects, one variant a round.
    assert.equal(o.points.length, 2 * o.rounds, `${o.points.length} runs in ${o.rounds} rounds`);
    const r1 = await sim(
      "plan",
      file,
      "--vary",
      vary,
      "--target",
      target,
      "--workers",
      "1",
      "--out",
      `${dir}/p1`,
    );
    assert.equal(r1.code, 0, r1.err);
    const o1 = await readJson<PlanOutcome>(`${dir}/p1/plan.json`);
    assert.equal(o1.answer, 10);
    assert.equal(o1.points.length, o1.rounds + 1, `${o1.points.length} runs in ${o1.rounds} rounds`);
    assert.ok(o.rounds < o1.rounds, `2 workers took ${o.rounds} rounds, 1 worker ${o1.rounds}`);
    const html = await Deno.readTextFile(`${dir}/p2/plan.html`);
    assert.match(html, /smallest hosts\.std\.count meeting tasks\.unplaced&lt;=0: 10/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim plan reports a target no value in the range meets", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await planScenario(dir);
    const r = await sim(
      "plan",
      file,
      "--vary",
      "hosts.std.count=1..5",
      "--target",
      "tasks.unplaced<=0",
      "--workers",
      "2",
      "--out",
      `${dir}/p`,
    );
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^no value up to 5 meets tasks\.unplaced<=0$/m);
    const o = await readJson<PlanOutcome>(`${dir}/p/plan.json`);
    assert.equal(o.answer, undefined);
    assert.deepEqual(o.points.map((p) => [p.value, p.metric, p.met]), [[1, 36, false], [5, 20, false]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim plan refuses a bad --vary or --target with an error naming the argument and writes nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await planScenario(dir);
    const cases: [string, string, RegExp][] = [
      [
        "hosts.std.count",
        "tasks.unplaced<=0",
        /^plan: --vary: expected PATH=LO\.\.HI, got "hosts\.std\.count"$/m,
      ],
      ["hosts.std.count=5..1", "tasks.unplaced<=0", /^plan: --vary: expected LO < HI in "5\.\.1"$/m],
      [
        "hosts.std.count=a..b",
        "tasks.unplaced<=0",
        /^plan: --vary: expected a range LO\.\.HI, got "a\.\.b"$/m,
      ],
      [
        "hosts.nope.count=1..5",
        "tasks.unplaced<=0",
        /^plan: --vary hosts\.nope\.count: no host class "nope" \(std\)$/m,
      ],
      [
        "hosts.std.bogus=1..5",
        "tasks.unplaced<=0",
        /^plan: --vary hosts\.std\.bogus: hostClasses\[0\]\.bogus: unknown key; expected one of name, count, /m,
      ],
      [
        "hosts.std.count=-5..5",
        "tasks.unplaced<=0",
        /^plan: --vary hosts\.std\.count=-5: hostClasses\[0\]\.count: got -5, /m,
      ],
      // Every value the search may run is checked first: here only the range's lowest fails.
      [
        "hosts.std.count=0..20",
        "tasks.unplaced<=0",
        /^plan: --vary hosts\.std\.count=0: hostClasses\[0\]\.count: got 0, expected at least 1: the cluster would have no hosts, and no event adds any$/m,
      ],
      [
        "hosts.std.count=1..5",
        "tasks.unplaced<<0",
        /^plan: --target: expected a target like .*, got "tasks\.unplaced<<0"$/m,
      ],
      [
        "hosts.std.count=1..5",
        "tasks.nope<=0",
        /^plan: --target tasks\.nope<=0: the report has no field tasks\.nope; expected one of tasks\.submitted, /m,
      ],
      [
        "hosts.std.count=1..5",
        "queueDelaySeconds.p999<=60",
        /^plan: --target queueDelaySeconds\.p999<=60: the report has no field queueDelaySeconds\.p999; expected one of queueDelaySeconds\.p50, queueDelaySeconds\.p90, queueDelaySeconds\.p99, /m,
      ],
      [
        "hosts.std.count=1..5",
        "endedEarly<=0",
        /^plan: --target endedEarly<=0: the report has no field endedEarly; expected a number under one of hosts, /m,
      ],
      [
        "hosts.std.count=1..5",
        "workloads.nope.queueDelaySeconds.p99<=60",
        /^plan: --target workloads\.nope\.queueDelaySeconds\.p99<=60: .*the scenario has no workload "nope" \(w\)$/m,
      ],
      [
        "hosts.std.count=1..5",
        "pools./q.preempted<=0",
        /^plan: --target pools\.\/q\.preempted<=0: .*the scenario has no pool "\/q" \(\/p\)$/m,
      ],
      [
        "hosts.std.count=1..5",
        "jobs.byState.DONE<=0",
        /^plan: --target jobs\.byState\.DONE<=0: the report has no field jobs\.byState\.DONE; /m,
      ],
    ];
    for (const [vary, target, message] of cases) {
      const out = `${dir}/out`;
      const r = await sim("plan", file, "--vary", vary, "--target", target, "--workers", "2", "--out", out);
      assert.equal(r.code, 2, `--vary ${vary} --target ${target}: exit code\n${r.err}`);
      assert.match(r.err, message);
      assert.doesNotMatch(r.err, /^\s+at /m, "no stack trace");
      assert.equal(await exists(out), false, `--vary ${vary} --target ${target} wrote ${out}`);
    }
    // An --out that is a file is refused before any run.
    await Deno.writeTextFile(`${dir}/afile`, "in the way");
    const r = await sim(
      "plan",
      file,
      "--vary",
      "hosts.std.count=1..5",
      "--target",
      "tasks.unplaced<=0",
      "--out",
      `${dir}/afile`,
    );
    assert.equal(r.code, 2, r.err);
    // After the scenario's warnings (its pool reserves more than the small cluster has, on purpose).
    assert.equal(
      r.err.trim().split("\n").at(-1),
      `--out ${dir}/afile: cannot write the report there: it is a file, not a directory`,
    );
    assert.equal(r.out, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Ctrl-C stops a plan and writes the runs done so far as a partial plan, exit 130", async () => {
  const dir = await Deno.makeTempDir();
  // One worker runs the first round's ends in turn: 1 host, quick, then 100,000 hosts for an hour, which
  // the signal stops long before it ends.
  const file = `${dir}/plan.yaml`;
  await Deno.writeTextFile(file, PLAN_SCENARIO.replace("durationSec: 120", "durationSec: 3600"));
  const out = `${dir}/out`;
  await Deno.mkdir(out);
  await Deno.writeTextFile(`${out}/plan.json`, "an earlier plan's");
  const target = "tasks.unplaced<=0";
  const child = simCommand([
    "plan",
    file,
    "--vary",
    "hosts.std.count=1..100000",
    "--target",
    target,
    "--workers",
    "1",
    "--out",
    out,
  ]).spawn();
  try {
    const stdout = new Response(child.stdout).text();
    let err = "", interrupted = false;
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      err += chunk;
      // The first run is done (its line shows as soon as it is): interrupt the second.
      if (!interrupted && /^ {2}hosts\.std\.count=1: /m.test(err)) {
        child.kill("SIGINT");
        interrupted = true;
      }
    }
    const { code } = await child.status;
    assert.equal(code, 130, err);
    assert.match(
      err,
      new RegExp(
        `^plan: interrupted: partial plan, no answer: the runs done are in ${out}/plan\\.json, marked partial$`,
        "m",
      ),
    );
    const note =
      `partial plan: interrupted (Ctrl-C) after 1 run in 1 round, so there is no answer; every value ` +
      `run so far (1) misses ${target}`;
    const text = await stdout;
    assert.ok(text.startsWith(`${note}\nvalue\tmetric\tmeets\n1\t36\tfalse\n`), text);
    const o = await readJson<PlanOutcome>(`${out}/plan.json`);
    assert.equal(o.partial, true);
    assert.equal(o.answer, undefined);
    assert.equal(o.note, note);
    assert.deepEqual(o.points.map((p) => [p.value, p.metric, p.met]), [[1, unplacedWith(1), false]]);
    const html = await Deno.readTextFile(`${out}/plan.html`);
    assert.ok(html.includes("partial plan: interrupted (Ctrl-C)"), "plan.html says it is partial");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already exited */ }
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Whether the process has a handler installed for SIGINT (bit 2 of SigCgt in /proc/PID/status); undefined
 * where there is no /proc.
 */
async function catchesSigint(pid: number): Promise<boolean | undefined> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => undefined);
  const mask = status && /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  return mask ? (BigInt(`0x${mask}`) & 2n) !== 0n : undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("Ctrl-C stops a run early and still writes a partial report", async () => {
  // 3,000 simulated seconds on 1,600 hosts: several seconds of work, so the signal lands mid-run.
  const file = `${ROOT}/scenarios/rack-maintenance.yaml`;
  const durationSec = (await loadScenario(file)).scenario.durationSec!;
  const dir = await Deno.makeTempDir();
  const child = simCommand([file, "--seed", "1", "--out", dir]).spawn();
  let exited = false;
  child.status.then(() => (exited = true));
  try {
    // The CLI listens for SIGINT just before the simulation starts; before that Ctrl-C would just kill it.
    // Wait for the listener, seen in the kernel's signal mask (without /proc, give it a moment), then let
    // it simulate a little.
    if (await catchesSigint(Deno.pid) === undefined) await sleep(1500);
    else while (!exited && !(await catchesSigint(child.pid))) await sleep(20);
    assert.equal(exited, false, "the run ended before it could be interrupted");
    await sleep(500);
    child.kill("SIGINT");
    const out = await child.output();
    // 130, as a shell reports a command ended by SIGINT: a script can tell the report is partial.
    assert.equal(out.code, 130, dec.decode(out.stderr));
    assert.match(dec.decode(out.stdout), /\(interrupted: partial report\)/);
    const report = await readJson<Report>(`${dir}/report.json`);
    assert.equal(report.endedEarly, true);
    assert.ok(report.simulatedSeconds > 0, `simulated ${report.simulatedSeconds} s`);
    assert.ok(
      report.simulatedSeconds < durationSec,
      `simulated ${report.simulatedSeconds} s of the scenario's ${durationSec} s`,
    );
    assert.equal(report.series.t.at(-1), report.simulatedSeconds, "the series stop where the run stopped");
    const html = await Deno.readTextFile(`${dir}/report.html`);
    assert.match(html, /uPlot/);
    const at = report.simulatedSeconds.toLocaleString("en-US");
    const of = durationSec.toLocaleString("en-US");
    assert.ok(
      html.includes(`<b>Partial report:</b> the run was interrupted at ${at} of ${of} simulated seconds`),
      "report.html says it is a partial report",
    );
    assert.ok((await Deno.readTextFile(`${dir}/series.csv`)).split("\n").length > 2, "series.csv has rows");
    // compare marks the partial run in its table, compare.json and compare.html.
    const name = dir.replace(/^.*\//, "");
    const cmp = await sim("compare", dir, dir, "--out", `${dir}/cmp`);
    assert.equal(cmp.code, 0, cmp.err);
    assert.match(cmp.out.split("\n")[0], new RegExp(`^metric\\s+${name}\\*\\s+${name} \\(2\\)\\*$`));
    assert.match(
      cmp.out,
      new RegExp(`^\\* ${name}: partial report, the run was interrupted at ${at} simulated s$`, "m"),
    );
    const c = await readJson<Comparison>(`${dir}/cmp/compare.json`);
    assert.deepEqual(c.endedEarly, [true, true]);
    const page = await Deno.readTextFile(`${dir}/cmp/compare.html`);
    assert.match(page, /<b>Partial reports:<\/b>/);
    assert.ok(page.includes(`<th>${name} (partial)</th>`), "the headline table marks the partial run");
    assert.ok(
      page.includes(`<td>partial: interrupted at ${at} simulated s</td>`),
      "the list of runs says so",
    );
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already exited */ }
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("without a terminal on stderr the CLI draws no progress line", async () => {
  // What the progress line looks like, so the checks below look for the right thing.
  const sample = new Progress(1200, false).line(600_000, 1000);
  assert.match(sample, /events\/s/);
  const dir = await Deno.makeTempDir();
  try {
    const r = await sim(`${ROOT}/scenarios/elastic-sharing.yaml`, "--seed", "1", "--out", dir);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /elastic-sharing: 100 hosts/);
    for (const mark of ["\r", "\x1b[K", "events/s", "% ·", " s left"]) {
      assert.ok(
        !r.err.includes(mark),
        `stderr has ${JSON.stringify(mark)}: ${JSON.stringify(r.err.slice(0, 300))}`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a refused scenario leaves no earlier run's report in --out", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    for (const f of ["report.json", "report.html", "series.csv", "pools.csv"]) {
      await Deno.writeTextFile(`${out}/${f}`, "an earlier run's");
    }
    const bad = `${dir}/bad.yaml`;
    await Deno.writeTextFile(
      bad,
      "name: bad\ndurationSec: 60\nhostClasses:\n  - {name: std, count: 0, cpu: 8}\n",
    );
    const r = await sim(bad, "--out", out);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /hostClasses\[0\]\./, "refused, naming the field");
    const left = [];
    for await (const e of Deno.readDir(out)) left.push(e.name);
    assert.deepEqual(left, [], "the refused run left no older answer behind");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
