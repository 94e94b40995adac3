/** Why PENDING tasks wait, through the real job manager and resource manager of a simulated cluster. */
import assert from "node:assert/strict";
import type { ApiReply } from "../core/messages.ts";
import { createSimulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

type Body = Record<string, unknown>;

// Pool /p may hold 4 cores of the 8-core host: 4 of the 6 long tasks run, 2 wait for admission; a GPU job,
// which the pool may never hold, waits too.
const SCENARIO = `
name: waits
durationSec: 120
hostClasses:
  - {name: h, count: 1, cpu: 8, memoryMb: 65536, diskMb: 10000}
respools:
  - name: p
    resources:
      - {kind: cpu, reservation: 4, limit: 4}
      - {kind: memory, reservation: 32768, limit: 32768}
      - {kind: disk, reservation: 4000, limit: 4000}
workloads:
  - {name: long, respool: /p, arrival: {at: [0]}, instances: 6, durationSec: 5000, cpu: 1, memoryMb: 512}
  - {name: gpu, respool: /p, arrival: {at: [1]}, instances: 1, durationSec: 60, cpu: 1, memoryMb: 512, gpu: 1}
settings:
  sampleIntervalSec: 10
`;

Deno.test("task List of a simulated cluster: PENDING tasks say what their pool lacks, from the real resource manager", async () => {
  const sim = createSimulation(inlineScenario(SCENARIO), { seed: 1, checkInvariants: true });
  await sim.advanceTo(30_000);
  const [long, gpu] = sim.submissions.map((s) => s.jobId);
  const list = async (jobId: string) => {
    let reply: ApiReply | undefined;
    sim.api("peloton.api.task.TaskManager::List", { jobId: { value: jobId } }).then((r) => reply = r);
    await sim.advanceTo(sim.queue.now + 1_000);
    assert.ok(reply && !reply.error, JSON.stringify(reply?.error));
    const value = ((reply.body as Body).result as Body).value as Record<string, { runtime: Body }>;
    return Object.values(value).map((t) => [t.runtime.state, t.runtime.message]);
  };
  const pending =
    "resource pool /p has no room in its entitlement for the first task in line: cpu 4 of 4 in " +
    "use; it asks for cpu 1, memory 512 MB";
  const waiting = (await list(long)).filter(([state]) => state === "PENDING");
  assert.deepEqual(waiting, [["PENDING", pending], ["PENDING", pending]]);
  assert.deepEqual(await list(gpu), [[
    "PENDING",
    "the task asks for more than resource pool /p may ever hold: gpu 1 (its limit: 0); it will not be " +
    "admitted unless the pool's limit is raised",
  ]]);
  await sim.close();
});
