/**
 * Stateful tasks in the simulator: a stopped task's volume keeps its space on its host (the simulated
 * cluster reports its volumes' reservations, as the minicluster and Mesos do) until the volume is deleted.
 */
import assert from "node:assert/strict";
import type { ApiReply } from "../core/messages.ts";
import { createSimulation, type Simulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const VOLUME = "peloton.api.v0.volume.svc.VolumeService";

/** One host whose disk holds one 1500 MB volume. */
const SCENARIO = `
name: volume-holds
hostClasses:
  - {name: h, count: 1, cpu: 8, memoryMb: 16384, diskMb: 2048}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 8, limit: 8}
      - {kind: memory, reservation: 16384, limit: 16384}
      - {kind: disk, reservation: 20480, limit: 20480}
`;

async function sim(): Promise<Simulation> {
  const s = createSimulation(inlineScenario(SCENARIO), { seed: 7, checkInvariants: true });
  await s.advanceTo(1000);
  return s;
}

/** Calls the API and runs virtual time until it answers; fails on an error. */
async function call(s: Simulation, procedure: string, body: unknown): Promise<unknown> {
  let reply: ApiReply | undefined;
  const p = s.api(procedure, body).then((r) => (reply = r));
  for (let i = 0; i < 100 && !reply; i++) await s.advanceTo(s.queue.now + 10);
  await p;
  assert.ok(reply && !reply.error, JSON.stringify(reply));
  return reply.body;
}

async function createStateful(s: Simulation, instanceCount: number): Promise<string> {
  const body = await call(s, `${JOB}::Create`, {
    config: {
      name: "counter",
      type: "SERVICE",
      instanceCount,
      sla: { priority: 1, preemptible: false },
      respoolID: { value: s.poolIds.get("/pool") },
      defaultConfig: {
        resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 },
        volume: { containerPath: "data", sizeMB: 1500 },
        command: { shell: true, value: "sleep 100000" },
      },
    },
  }) as { jobId: { value: string } };
  return body.jobId.value;
}

const task = (s: Simulation, job: string, i: number) => s.jobmgr.jobs.get(job)!.tasks.get(i)!;
const range = (job: string, i: number) => ({ jobId: { value: job }, ranges: [{ from: i, to: i + 1 }] });

Deno.test("a stopped stateful task's volume space is held for it: others wait, it comes back to its volume", async () => {
  const s = await sim();
  const job = await createStateful(s, 2);
  await s.advanceTo(20_000);
  assert.equal(task(s, job, 0).state, "RUNNING");
  assert.notEqual(task(s, job, 1).state, "RUNNING", "one volume fits the host");
  const host = task(s, job, 0).hostname;
  const volumeId = task(s, job, 0).volumeId;

  await call(s, `${TASK}::Stop`, range(job, 0));
  await s.advanceTo(s.queue.now + 60_000);
  assert.equal(task(s, job, 0).state, "KILLED");
  assert.notEqual(task(s, job, 1).state, "RUNNING", "instance 1 did not take instance 0's volume space");
  const other = await createStateful(s, 1);
  await s.advanceTo(s.queue.now + 60_000);
  assert.notEqual(task(s, other, 0).state, "RUNNING", "nor did another job");

  await call(s, `${TASK}::Start`, range(job, 0));
  await s.advanceTo(s.queue.now + 60_000);
  assert.equal(task(s, job, 0).state, "RUNNING");
  assert.deepEqual([task(s, job, 0).hostname, task(s, job, 0).volumeId], [host, volumeId], "on its volume");

  // Deleted, the volume's space is free: stopped again and its volume deleted, another task takes it.
  await call(s, `${TASK}::Stop`, range(job, 0));
  await s.advanceTo(s.queue.now + 60_000);
  await call(s, `${VOLUME}::DeleteVolume`, { id: { value: volumeId } });
  await s.advanceTo(s.queue.now + 60_000);
  const running = [task(s, job, 1), task(s, other, 0)].filter((t) => t.state === "RUNNING");
  assert.equal(running.length, 1, "the released space went to one of the waiting tasks");
  await s.close();
});
