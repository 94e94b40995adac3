/**
 * Writes `scenarios/traces/google-2011-sample.csv`: a small synthetic trace in the layout of Google's
 * cluster-data 2011 `task_events` tables (13 columns, times in µs), so the replay scenario runs offline.
 * `deno run -A tools/make_trace_sample.ts` makes the same file every time (fixed seed).
 */
import { seededPrng } from "../core/ports/prng.ts";

const prng = seededPrng(2011);
const rows: [number, string][] = [];
const TRACE_START_US = 600e6; // The 2011 trace's window starts 600 s in.
let jobId = 6_250_000_000;
for (let j = 0; j < 200; j++) {
  jobId += 1 + Math.floor(prng() * 5000);
  const submit = TRACE_START_US + Math.floor(prng() * 3600e6);
  const tasks = 1 + Math.floor(-Math.log(1 - prng()) * 12);
  const priority = prng() < 0.15 ? 9 : Math.floor(prng() * 5);
  const cpu = (0.005 + prng() * 0.06).toFixed(5);
  const mem = (0.005 + prng() * 0.05).toFixed(5);
  const disk = (prng() * 0.0005).toFixed(6);
  const spread = prng() < 0.1 ? 1 : 0;
  const user = `user${Math.floor(prng() * 40)}`;
  for (let i = 0; i < tasks; i++) {
    const row = (t: number, type: number, machine = "") =>
      rows.push([
        t,
        [t, "", jobId, i, machine, type, user, Math.floor(prng() * 4), priority, cpu, mem, disk, spread].join(
          ",",
        ),
      ]);
    const sub = submit + Math.floor(prng() * 2e6);
    row(sub, 0);
    const start = sub + Math.floor(prng() * 5e6);
    const machine = String(1_000_000 + Math.floor(prng() * 12_000));
    row(start, 1, machine);
    const run = Math.floor(-Math.log(1 - prng()) * 600e6);
    const end = prng();
    if (end < 0.05) continue; // Still running when the trace ends.
    if (end < 0.08) {
      // Evicted, then scheduled again elsewhere and finished.
      row(start + run / 2, 2, machine);
      row(start + run / 2 + 3e6, 1, String(1_000_000 + Math.floor(prng() * 12_000)));
      row(start + run + 3e6, 4, machine);
      continue;
    }
    row(start + run, end < 0.9 ? 4 : end < 0.96 ? 3 : 5, machine);
  }
}
rows.sort((a, b) => a[0] - b[0]);
const out = new URL("../scenarios/traces/google-2011-sample.csv", import.meta.url);
await Deno.writeTextFile(out, rows.map(([, r]) => r).join("\n") + "\n");
console.log(`${rows.length} events written to ${out.pathname}`);
