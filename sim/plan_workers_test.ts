/** A plan parses its scenario's traces once per worker: the variants after the first reuse the parse. */
import assert from "node:assert/strict";
import { plan } from "./plan.ts";
import { runVariant } from "./plan_worker.ts";
import { loadScenarioFile } from "./scenario_load.ts";
import { TRACE_EVENTS as E } from "./trace.ts";
import { writeTraceScenarioYaml } from "./testing.ts";

/** Eight tasks submitted at 0, each asking for `cpu` of a 16-core host and running 100 s. */
function trace(cpu: string, end: number = E.FINISH): string {
  return Array.from({ length: 8 }, (_, i) =>
    [
      [0, E.SUBMIT],
      [0, E.SCHEDULE],
      [100e6, end],
    ].map(([us, type]) => [us, "", "1", i, "", type, "u1", "1", "2", cpu, "0.01", "0.0001", "0"].join(","))
      .join("\n")).join("\n") + "\n";
}

async function scenario(dir: string, rows: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/t.csv`, rows);
  return await writeTraceScenarioYaml(dir, {
    file: "t.csv",
    run: "durationSec: 300",
    poolCpu: 128,
    memoryAndDisk: true,
    tail: "settings: {sampleIntervalSec: 5, taskStartupSec: 0}",
  });
}

/**
 * Rewrites the trace with rows of the same length and gives it back its modification time: a run that
 * parses the file again sees the new rows, one that kept its parse does not.
 */
function rewriteUnseen(path: string, rows: string): void {
  const before = Deno.statSync(path);
  assert.equal(new TextEncoder().encode(rows).length, before.size, "rows of the same size");
  Deno.writeTextFileSync(path, rows);
  Deno.utimeSync(path, before.atime!, before.mtime!);
}

Deno.test("runVariant parses a trace once for the variants it runs in a thread", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await scenario(dir, trace("0.0625"));
    const first = await runVariant({ file, path: "hosts.std.count", value: 1, seed: 1 });
    assert.ok(first.ok, first.ok ? "" : first.error);
    assert.equal(first.report.tasks.failed, 0);
    // Every task now fails: a variant that parsed the file again would count 8.
    rewriteUnseen(`${dir}/t.csv`, trace("0.0625", E.FAIL));
    const second = await runVariant({ file, path: "hosts.std.count", value: 2, seed: 1 });
    assert.ok(second.ok, second.ok ? "" : second.error);
    assert.equal(second.report.tasks.failed, 0, "the parse of the first variant");
    // A file changed as files change (a new modification time) is read again.
    const later = new Date(Date.now() + 3_600_000);
    await Deno.utime(`${dir}/t.csv`, later, later);
    const third = await runVariant({ file, path: "hosts.std.count", value: 3, seed: 1 });
    assert.ok(third.ok && third.report.tasks.failed === 8, JSON.stringify(third.ok && third.report.tasks));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim plan's workers run round after round and parse the trace once: a rewrite after round 1 goes unseen", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Each task takes a whole host: only 8 hosts start them all at once.
    const file = await scenario(dir, trace("1.0000"));
    const loaded = await loadScenarioFile(file);
    let rounds = 0;
    const outcome = await plan({
      loaded,
      vary: "hosts.std.count=1..8",
      target: "queueDelaySeconds.p99<=1",
      seed: 1,
      workers: 1,
      // After the first round (1 and 8 hosts), tasks that all fit on one host: a worker that read the file
      // again would find a smaller answer.
      onRound: () => {
        if (rounds++ === 0) rewriteUnseen(`${dir}/t.csv`, trace("0.0001"));
      },
    });
    assert.ok(rounds >= 2, `${rounds} rounds`);
    assert.equal(outcome.answer, 8, outcome.note);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
