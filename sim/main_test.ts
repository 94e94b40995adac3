import assert from "node:assert/strict";
import { ROOT } from "./testing.ts";

async function sim(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/sim/main.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

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
  assert.match(r.err, /--seed: got "abc", expected a non-negative integer/);
});
