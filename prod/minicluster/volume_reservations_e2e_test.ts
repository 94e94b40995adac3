/**
 * `peloton up` on the minicluster: a stopped stateful task's volume keeps its space on its host (the host
 * manager holds it for the task), so other work cannot take it and the task comes back to its volume.
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, createJob, upSession, waitFor } from "../testing.ts";

/** A counter whose volume fits the one agent's disk once (1510 of 2048 MB), as two instances want it. */
const STATEFUL = (instances: number) => `
name: big-volume
type: SERVICE
instanceCount: ${instances}
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  volume: { containerPath: data, sizeMB: 1500 }
  killGracePeriodSeconds: 1
  command:
    shell: true
    value: 'echo run >> data/runs; echo "runs: $(wc -l < data/runs) on $HOST"; while true; do sleep 1; done'
`;

type Task = { runtime: { state: string; host?: string; mesosTaskId?: { value: string } } };

async function tasks(url: string, job: string): Promise<Record<string, Task>> {
  const r = await cli(url, "task", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out).result.value;
}

/** Waits until the instance runs (in run `run` when given); its host. */
function running(url: string, job: string, instance: number, run?: number): Promise<string> {
  return waitFor(`${job}-${instance} RUNNING${run ? ` in run ${run}` : ""}`, async () => {
    const t = (await tasks(url, job))[String(instance)];
    const at = Number(t?.runtime.mesosTaskId?.value.split("-").at(-1));
    return t?.runtime.state === "RUNNING" && (run === undefined || at === run) ? t.runtime.host : undefined;
  }, 60_000);
}

const ON_A_HOST = ["PLACED", "LAUNCHING", "LAUNCHED", "STARTING", "RUNNING"];

/** The instance is launched nowhere for `ms`: it would have to take the stopped task's volume space. */
async function staysUnplaced(url: string, job: string, instance: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const t = (await tasks(url, job))[String(instance)];
    assert.ok(
      !ON_A_HOST.includes(t.runtime.state),
      `${job}-${instance} took the stopped task's volume space: ${t.runtime.state} on ${t.runtime.host}`,
    );
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stdout(url: string, job: string, instance: number): Promise<string> {
  return await waitFor(`the stdout of ${job}-${instance}`, async () => {
    const out = (await cli(url, "task", "logs", job, String(instance))).out;
    return /^runs: \d+ on /.test(out) ? out : undefined;
  });
}

Deno.test({
  name:
    "a stopped stateful task's volume space is not given to other work; the task comes back to its volume",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-volume-holds-" });
    const dataDir = `${dir}/data`;
    const agents = `${dir}/agents.yaml`;
    await Deno.writeTextFile(agents, "- {diskMb: 2048}\n");
    const file = `${dir}/job.yaml`;
    await Deno.writeTextFile(file, STATEFUL(2));
    const other = `${dir}/other.yaml`;
    await Deno.writeTextFile(other, STATEFUL(1));
    try {
      let job = "", second = "";
      await upSession(dataDir, ["--agents-file", agents], async (up) => {
        await createDefaultPool(up.url);
        job = await createJob(up.url, file);
        assert.equal(await running(up.url, job, 0), "agent-0");
        assert.equal(await stdout(up.url, job, 0), "runs: 1 on agent-0");
        await staysUnplaced(up.url, job, 1, 1_000);

        // Instance 0 stopped: its volume's space stays its own, not instance 1's.
        assert.equal((await cli(up.url, "task", "stop", job, "-r", "0:1")).code, 0);
        await waitFor(
          `${job}-0 KILLED`,
          async () => (await tasks(up.url, job))["0"].runtime.state === "KILLED" || undefined,
        );
        await staysUnplaced(up.url, job, 1, 4_000);

        // Back: it runs on its volume again.
        assert.equal((await cli(up.url, "task", "start", job, "-r", "0:1")).code, 0);
        assert.equal(await running(up.url, job, 0, 2), "agent-0");
        assert.equal(await stdout(up.url, job, 0), "runs: 2 on agent-0");
        await staysUnplaced(up.url, job, 1, 1_000);

        // The whole job stopped: nor is the space another job's.
        assert.equal((await cli(up.url, "job", "stop", job)).code, 0);
        await waitFor(
          `${job}-0 KILLED`,
          async () => (await tasks(up.url, job))["0"].runtime.state === "KILLED" || undefined,
        );
        second = await createJob(up.url, other);
        await staysUnplaced(up.url, second, 0, 4_000);
      });

      // After a restart of `up` (a new host manager, the agent registered again), still held.
      await upSession(dataDir, ["--agents-file", agents], async (up) => {
        await staysUnplaced(up.url, second, 0, 4_000);
        // Out of the pool's way: a task waiting for placement keeps its pool's entitlement.
        assert.equal((await cli(up.url, "job", "stop", second)).code, 0);
        assert.equal((await cli(up.url, "task", "start", job)).code, 0);
        assert.equal(await running(up.url, job, 0, 3), "agent-0");
        assert.equal(await stdout(up.url, job, 0), "runs: 3 on agent-0");
        await staysUnplaced(up.url, job, 1, 1_000);
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
