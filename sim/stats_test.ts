import assert from "node:assert/strict";
import { buildReport } from "../reports/report.ts";
import { runScenario } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

const TREE = `
name: tree
durationSec: 120
hostClasses:
  - {name: std, count: 4, cpu: 8, memoryMb: 32768, diskMb: 10000}
respools:
  - name: org
    resources:
      - {kind: cpu, reservation: 32, limit: 32}
      - {kind: memory, reservation: 131072, limit: 131072}
    children:
      - name: a
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
      - name: b
        resources:
          - {kind: cpu, reservation: 16, limit: 32}
          - {kind: memory, reservation: 65536, limit: 131072}
workloads:
  - {name: wa, respool: /org/a, arrival: {at: [0]}, instances: 10, durationSec: 600, cpu: 1, memoryMb: 1024}
  - {name: wb, respool: /org/b, arrival: {at: [30]}, instances: 40, durationSec: 600, cpu: 1, memoryMb: 1024}
`;

Deno.test("pool series: parents first, aligned with time, a parent's allocation and demand sum its leaves", async () => {
  const scenario = inlineScenario(TREE);
  const sim = await runScenario(scenario, { seed: 1, checkInvariants: true });
  const report = buildReport(scenario, sim, 1, { wallSeconds: 0, peakRssBytes: 0 });
  assert.deepEqual(Object.keys(report.poolSeries), ["/org", "/org/a", "/org/b"]);
  const [org, a, b] = ["/org", "/org/a", "/org/b"].map((p) => report.poolSeries[p]);
  const n = report.series.t.length;
  for (const s of [org, a, b]) assert.equal(s.allocationCpu.length, n);
  for (let i = 0; i < n; i++) {
    assert.equal(org.allocationCpu[i], a.allocationCpu[i] + b.allocationCpu[i]);
    assert.equal(org.demandMemMb[i], a.demandMemMb[i] + b.demandMemMb[i]);
  }
  const end = n - 1;
  assert.deepEqual([a.allocationCpu[end], b.allocationCpu[end], b.demandCpu[end]], [10, 22, 18]);
  assert.equal(report.pools["/org"].allocationCpu, 32);
  assert.deepEqual(report.preemptions, { total: 0, running: 0, waiting: 0, slack: 0, maintenance: 0 });
});
