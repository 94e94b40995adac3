/** The job manager's workload types in the simulator, driven through the public API on virtual time. */
import assert from "node:assert/strict";
import type { ApiReply } from "../core/messages.ts";
import { createSimulation, type Simulation } from "./runner.ts";
import { inlineScenario } from "./testing.ts";

const JOB = "peloton.api.job.JobManager";
const TASK = "peloton.api.task.TaskManager";
const UPDATE = "peloton.api.v0.update.svc.UpdateService";

const SCENARIO = `
name: workloads
hostClasses:
  - {name: h, count: 6, cpu: 8, memoryMb: 16384, diskMb: 100000, racks: 3}
respools:
  - name: pool
    resources:
      - {kind: cpu, reservation: 48, limit: 48}
      - {kind: memory, reservation: 98304, limit: 98304}
      - {kind: disk, reservation: 600000, limit: 600000}
settings: {sampleIntervalSec: 1, recordTaskEvents: true}
`;

/** A simulation with its pool created. */
async function sim(): Promise<Simulation> {
  const s = createSimulation(inlineScenario(SCENARIO), { seed: 4, checkInvariants: true });
  await s.advanceTo(1000);
  return s;
}

/** Calls the API and runs virtual time until it answers. */
async function call(s: Simulation, procedure: string, body: unknown): Promise<ApiReply> {
  let reply: ApiReply | undefined;
  const p = s.api(procedure, body).then((r) => (reply = r));
  for (let i = 0; i < 100 && !reply; i++) await s.advanceTo(s.queue.now + 10);
  await p;
  return reply!;
}

function config(over: Record<string, unknown>, task: Record<string, unknown> = {}) {
  return {
    name: "w",
    instanceCount: 1,
    sla: { priority: 1, preemptible: false },
    defaultConfig: {
      resource: { cpuLimit: 1, memLimitMb: 256, diskLimitMb: 10 },
      command: { shell: true, value: "sleep 100000" },
      ...task,
    },
    ...over,
  };
}

async function create(s: Simulation, c: Record<string, unknown>): Promise<string> {
  const r = await call(s, `${JOB}::Create`, {
    config: { ...c, respoolID: { value: s.poolIds.get("/pool") } },
  });
  const body = r.body as { jobId?: { value: string }; error?: unknown };
  assert.ok(body.jobId, JSON.stringify(r));
  return body.jobId.value;
}

const job = (s: Simulation, id: string) => s.jobmgr.jobs.get(id)!;
const states = (s: Simulation, id: string) => [...job(s, id).tasks.values()].map((t) => t.state);

Deno.test("batch: failures are retried up to maxFailures; maxRunningTime kills; the job's state follows", async () => {
  const s = await sim();
  const flaky = await create(
    s,
    config({ instanceCount: 2 }, {
      command: { value: "sleep 5; exit 2" },
      restartPolicy: { maxFailures: 2 },
    }),
  );
  const slow = await create(s, config({ sla: { maxRunningTime: 30 } }, { command: { value: "sleep 1000" } }));
  await s.advanceTo(120_000);
  assert.deepEqual(states(s, flaky), ["FAILED", "FAILED"]);
  assert.deepEqual([...job(s, flaky).tasks.values()].map((t) => t.runId), [2, 2], "maxFailures counts runs");
  assert.equal(job(s, flaky).runtime.state, "FAILED");
  assert.deepEqual(states(s, slow), ["KILLED"]);
  assert.equal(job(s, slow).tasks.get(0)!.terminationReason, "DEADLINE_TIMEOUT_EXCEEDED");
  await s.close();
});

Deno.test("batch: maximumRunningInstances lets only so many run at once", async () => {
  const s = await sim();
  const id = await create(
    s,
    config({ instanceCount: 6, sla: { maximumRunningInstances: 2 } }, { command: { value: "sleep 10" } }),
  );
  let peak = 0;
  for (let t = 2_000; t <= 60_000; t += 1_000) {
    await s.advanceTo(t);
    peak = Math.max(peak, states(s, id).filter((x) => x === "RUNNING").length);
  }
  assert.equal(peak, 2);
  assert.equal(job(s, id).runtime.state, "SUCCEEDED");
  await s.close();
});

Deno.test("services: failed instances restart with Peloton's throttled backoff", async () => {
  const s = await sim();
  const id = await create(
    s,
    config({ type: "SERVICE", instanceCount: 1 }, { command: { value: "sleep 1; exit 1" } }),
  );
  await s.advanceTo(100_000);
  const t = job(s, id).tasks.get(0)!;
  // Runs last ~2 s (1 s start + 1 s); restarts wait 30 s, 60 s, ...: by 100 s only a few runs happened.
  assert.ok(t.runId >= 3 && t.runId <= 4, `run ${t.runId}`);
  assert.equal(t.goalState, "RUNNING");
  if (t.state === "FAILED") assert.equal(t.message, "Task throttled due to failure");
  await s.close();
});

Deno.test("a rolling update of 10 instances in batches of 3 finishes; a failing one rolls back", async () => {
  const s = await sim();
  const base = config({ type: "SERVICE", instanceCount: 10 }, {
    resource: { cpuLimit: 0.5, memLimitMb: 64 },
  });
  const id = await create(s, base);
  await s.advanceTo(10_000);
  const v2 = {
    ...base,
    defaultConfig: { ...base.defaultConfig, command: { value: "sleep 99999" } },
    changeLog: { version: 1 },
  };
  const r = await call(s, `${UPDATE}::CreateUpdate`, {
    jobId: { value: id },
    jobConfig: v2,
    updateConfig: { batchSize: 3 },
  });
  const updateId = (r.body as { updateID: { value: string } }).updateID.value;
  let maxCurrent = 0;
  for (let t = 11_000; t <= 120_000; t += 500) {
    await s.advanceTo(t);
    const u = s.jobmgr.updates.get(updateId);
    if (!u) break;
    maxCurrent = Math.max(maxCurrent, u.instancesCurrent.length);
  }
  assert.equal(maxCurrent, 3);
  assert.ok([...job(s, id).tasks.values()].every((t) => t.configVersion === 2 && t.state === "RUNNING"));
  const broken = {
    ...base,
    defaultConfig: {
      ...base.defaultConfig,
      command: { value: "sleep 99998" },
      healthCheck: {
        enabled: true,
        type: "COMMAND",
        commandCheck: { command: "exit 1" },
        intervalSecs: 1,
        initialIntervalSecs: 1,
        maxConsecutiveFailures: 1,
      },
    },
    changeLog: { version: 2 },
  };
  const r2 = await call(s, `${UPDATE}::CreateUpdate`, {
    jobId: { value: id },
    jobConfig: broken,
    updateConfig: { batchSize: 3, maxInstanceAttempts: 1, maxFailureInstances: 1, rollbackOnFailure: true },
  });
  const badId = (r2.body as { updateID: { value: string } }).updateID.value;
  await s.advanceTo(400_000);
  const info = await call(s, `${UPDATE}::GetUpdate`, { updateId: { value: badId } });
  assert.equal(
    (info.body as { updateInfo: { status: { state: string } } }).updateInfo.status.state,
    "ROLLED_BACK",
  );
  for (const t of job(s, id).tasks.values()) {
    assert.equal(t.state, "RUNNING");
    assert.equal(
      job(s, id).versions.get(t.configVersion)!.config.defaultConfig.command!.value,
      "sleep 99999",
    );
  }
  await s.close();
});

Deno.test("a stateful task goes back to the host of its volume after it fails", async () => {
  const s = await sim();
  const id = await create(
    s,
    config({ type: "SERVICE" }, {
      command: { value: "sleep 20; exit 1" },
      volume: { containerPath: "data", sizeMB: 100 },
    }),
  );
  await s.advanceTo(10_000);
  const host = job(s, id).tasks.get(0)!.hostname!;
  assert.ok(host);
  await s.advanceTo(200_000);
  const t = job(s, id).tasks.get(0)!;
  assert.ok(t.runId >= 3, `run ${t.runId}`);
  assert.deepEqual([...new Set((t.history ?? []).map((r) => r.hostname))], [host]);
  assert.equal(t.requiredHost, host);
  await s.close();
});

Deno.test("a daemon job follows hosts added at runtime", async () => {
  const s = await sim();
  const id = await create(
    s,
    config({ type: "DAEMON", instanceCount: 0 }, { resource: { cpuLimit: 0.1, memLimitMb: 32 } }),
  );
  await s.advanceTo(10_000);
  assert.equal(job(s, id).tasks.size, 6);
  s.cluster.addHosts([{
    hostname: "late-0",
    agentId: "late-0-S0",
    resources: { cpuMilli: 4000, memMb: 8192, diskMb: 10000, gpuMilli: 0 },
    attributes: {},
    portRanges: [[31000, 32000]],
  }], "late");
  await s.advanceTo(20_000);
  const hosts = [...job(s, id).tasks.values()].map((t) => t.hostname).sort();
  assert.equal(hosts.length, 7);
  assert.ok(hosts.includes("late-0"));
  assert.ok(states(s, id).every((x) => x === "RUNNING"));
  await s.close();
});

Deno.test("elastic jobs grow and shrink through JobManager.Update; query finds jobs by label", async () => {
  const s = await sim();
  const c = config({ instanceCount: 2, labels: [{ key: "team", value: "spark" }] });
  const id = await create(s, c);
  await s.advanceTo(5_000);
  await call(s, `${JOB}::Update`, {
    id: { value: id },
    config: { ...c, instanceCount: 5, respoolID: { value: s.poolIds.get("/pool") } },
  });
  await s.advanceTo(10_000);
  assert.deepEqual(states(s, id), Array(5).fill("RUNNING"));
  await call(s, `${JOB}::Update`, {
    id: { value: id },
    config: { ...c, instanceCount: 3, respoolID: { value: s.poolIds.get("/pool") } },
  });
  await s.advanceTo(20_000);
  assert.deepEqual([...job(s, id).tasks.keys()], [0, 1, 2]);
  const q = await call(s, `${JOB}::Query`, { spec: { labels: [{ key: "team", value: "spark" }] } });
  assert.deepEqual((q.body as { records: { id: { value: string } }[] }).records.map((r) => r.id.value), [id]);
  const ev = await call(s, `${TASK}::GetPodEvents`, { jobId: { value: id }, instanceId: 4 });
  const seen = (ev.body as { result: { actualState: string }[] }).result.map((e) => e.actualState);
  assert.equal(seen[0], "KILLED", "instance 4's last event: stopped when the job shrank");
  await s.close();
});
