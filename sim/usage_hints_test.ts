/** The simulator's CLI names a mistyped flag or subcommand with the one meant, and its help gives defaults. */
import assert from "node:assert/strict";
import { ROOT, runSim } from "./testing.ts";

const sim = (...args: string[]) => runSim(args);
const simIn = (cwd: string, ...args: string[]) => runSim(args, cwd);

Deno.test("a mistyped flag or subcommand is named with the one it is closest to, then the usage", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string[], string][] = [
      [[`${ROOT}/scenarios/testjob.yaml`, "--sed", "3"], "unknown flag --sed; did you mean --seed?"],
      [["compare", "a", "b", "--ot", dir], "compare: unknown flag --ot; did you mean --out?"],
      [["plan", "x.yaml", "--worker", "2"], "plan: unknown flag --worker; did you mean --workers?"],
      [[`${ROOT}/scenarios/testjob.yaml`, "--bogus"], "unknown flag --bogus"],
      [["compre", `${dir}/a`], '"compre": no such scenario file; did you mean `deno task sim compare`?'],
      [
        ["plann", "x.yaml", "--vary", "a=1..2"],
        '"plann": no such scenario file; did you mean `deno task sim plan`?',
      ],
    ];
    for (const [argv, message] of cases) {
      const r = await sim(...argv);
      assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
      const [first, usage] = r.err.split("\n");
      assert.equal(first, message);
      assert.equal(usage, "usage:");
      assert.equal(r.out, "");
    }
    // Nothing was run: no report directory was made for the mistyped subcommand as a scenario.
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a scenario file whose name is close to a subcommand's is read as a scenario", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/plans`,
      "name: x\nhostClasses:\n  - {name: h, count: -3, cpu: 4, memoryMb: 100}\nrespools: []\nworkloads: []\n",
    );
    const r = await simIn(dir, "plans", "--out", "out");
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^plans:3: hostClasses\[0\]\.count: got -3/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task sim --help gives --seed's and --out's defaults", async () => {
  const r = await sim("--help");
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /--seed N: .*\(default 1\)/);
  assert.match(r.out, /--out DIR: .*\(default out\/SCENARIO-SEED for a run/);
  assert.match(r.out, /compare and plan write none without it/);
});
