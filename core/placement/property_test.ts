import assert from "node:assert/strict";
import { randomInt, seededPrng } from "../ports/prng.ts";
import { evaluate, HOST_KIND } from "./constraints.ts";
import { leases, place, randomHosts, randomWork } from "./testing.ts";

Deno.test("property: no host is over-committed, ports never collide, gangs are whole or absent, constraints hold", () => {
  for (let seed = 1; seed <= 60; seed++) {
    const prng = seededPrng(seed);
    const rows = randomHosts(prng, randomInt(prng, 1, 40));
    const work = randomWork(prng, randomInt(prng, 1, 30));
    const partitions = 1 + (seed % 4);
    const p = place(rows, work, { partitions, scoreLimit: 1 + (seed % 16) });
    const byHost = new Map(leases(rows).map((l) => [l.hostname, l]));
    const all = work.flat();
    const used = new Map<
      string,
      { cpu: number; mem: number; gpu: number; slack: number; ports: Set<number>; svc: number }
    >();
    for (const t of all) {
      const host = p.where[t.taskId];
      if (!host) continue;
      const l = byHost.get(host)!;
      const u = used.get(host) ?? { cpu: 0, mem: 0, gpu: 0, slack: 0, ports: new Set<number>(), svc: 0 };
      if (t.revocable) u.slack += t.resources.cpuMilli;
      else u.cpu += t.resources.cpuMilli;
      u.mem += t.resources.memMb;
      u.gpu += t.resources.gpuMilli;
      for (const port of Object.values(p.ports[t.taskId])) {
        assert.ok(!u.ports.has(port), `seed ${seed}: port ${port} twice on ${host}`);
        assert.ok(
          l.freePorts.some(([lo, hi]) => port >= lo && port <= hi),
          `seed ${seed}: port ${port} outside ${host}'s ranges`,
        );
        u.ports.add(port);
      }
      if (t.labels.some((x) => x.value === "svc")) u.svc++;
      used.set(host, u);
      if (t.constraint) {
        const ok = evaluate(
          t.constraint,
          { hostname: host, attributes: l.attributes, taskLabels: [] },
          HOST_KIND,
        );
        assert.notEqual(ok, "mismatch", `seed ${seed}: ${t.taskId} on ${host} breaks its HOST constraint`);
      }
      if (l.keptForGpu && t.requiredHost === undefined) {
        assert.ok(t.resources.gpuMilli > 0, `seed ${seed}: non-GPU task on kept GPU host`);
      }
      if ("peloton/exclusive" in l.attributes) assert.fail(`seed ${seed}: ${t.taskId} on an exclusive host`);
    }
    for (const [host, u] of used) {
      const f = byHost.get(host)!;
      const where = `seed ${seed} host ${host}`;
      assert.ok(
        u.cpu <= f.free.cpuMilli && u.mem <= f.free.memMb && u.gpu <= f.free.gpuMilli,
        `${where} over-committed`,
      );
      assert.ok(u.slack <= f.freeSlack.cpuMilli, `${where} slack over-committed`);
      assert.ok(u.svc <= 2, `${where}: host limit of 2 exceeded`);
    }
    for (const w of work) {
      if (!Array.isArray(w)) continue;
      const placed = w.filter((t) => p.where[t.taskId]).length;
      assert.ok(
        placed === 0 || placed === w.length,
        `seed ${seed}: gang ${w[0].jobId} placed ${placed} of ${w.length}`,
      );
    }
    const again = place(rows, work, { partitions, scoreLimit: 1 + (seed % 16) });
    assert.deepEqual(again.where, p.where, `seed ${seed}: not deterministic`);
    assert.deepEqual(again.ports, p.ports);
  }
});
