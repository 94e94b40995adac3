/** A report's wallSeconds covers the whole run, loading the scenario and its trace included. */
import assert from "node:assert/strict";
import { runVariant } from "./plan_worker.ts";
import { TRACE_EVENTS as E } from "./trace.ts";
import { ROOT, writeTraceScenario } from "./testing.ts";

/** How long the trace takes to come, in s: the load takes at least this, the run itself far less. */
const SLOW_LOAD_SEC = 1.5;

const TRACE = [[0, E.SUBMIT], [1e6, E.SCHEDULE], [11e6, E.FINISH]]
  .map(([us, type]) => [us, "", "1", 0, "", type, "u1", "1", "2", "0.0625", "0.01", "0.0001", "0"].join(","))
  .join("\n") + "\n";

/** A scenario whose trace is a pipe the test writes to; its path. */
async function scenario(dir: string): Promise<string> {
  const mkfifo = await new Deno.Command("mkfifo", { args: [`${dir}/t.csv`] }).output();
  assert.ok(mkfifo.success, "mkfifo");
  return await writeTraceScenario(dir, "t.csv", 30);
}

/**
 * Writes the trace into the pipe `SLOW_LOAD_SEC` after the reader opens it, unless `gone` settles first
 * (the reader ended without opening it).
 */
async function writeSlowly(pipe: string, gone: Promise<unknown>): Promise<void> {
  const opening = Deno.open(pipe, { write: true });
  const opened = await Promise.race([opening, gone.then(() => undefined)]);
  if (!opened) {
    // Unblocks the open still waiting for a reader, then closes both ends.
    const reader = await Deno.open(pipe, { read: true });
    (await opening).close();
    reader.close();
    return;
  }
  await new Promise((r) => setTimeout(r, SLOW_LOAD_SEC * 1000));
  await opened.write(new TextEncoder().encode(TRACE));
  opened.close();
}

Deno.test("sim's wallSeconds, in report.json and the summary line, counts the time loading the trace took", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(dir);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/sim/main.ts`, file, "--out", `${dir}/out`],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = child.output();
    await writeSlowly(`${dir}/t.csv`, output);
    const { code, stdout, stderr } = await output;
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    const report = JSON.parse(await Deno.readTextFile(`${dir}/out/report.json`));
    assert.ok(report.wallSeconds >= SLOW_LOAD_SEC, `wallSeconds ${report.wallSeconds}`);
    assert.match(new TextDecoder().decode(stdout), new RegExp(`simulated in ${report.wallSeconds}s`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a plan run's wallSeconds counts the time loading its scenario and trace took", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(dir);
    const run = runVariant({ file, path: "hosts.std.count", value: 1, seed: 1 });
    await writeSlowly(`${dir}/t.csv`, run);
    const r = await run;
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.ok(r.report.wallSeconds >= SLOW_LOAD_SEC, `wallSeconds ${r.report.wallSeconds}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
