/**
 * TaskManager Stop and Start of one instance flapping from several clients against `peloton up` on MySQL:
 * a stop's kill may overtake its launch (the launch waits for its LAUNCHING write), and no run may be left
 * alive past its kill. Afterwards every instance has one live process at most, the run the job manager
 * knows. Bounded by iterations; nothing here asserts how fast things happen.
 */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { testDatabaseUrl } from "./testing_cluster.ts";
import { apiCall, createDefaultPool, createJob, startUp, type UpProcess, waitFor } from "./testing.ts";

const TASK = "peloton.api.task.TaskManager";
const CLIENTS = 6, ROUNDS_PER_CLIENT = 500;

const SERVICE_YAML = `name: stop-start-race
type: SERVICE
owningTeam: race
instanceCount: 2
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  killGracePeriodSeconds: 1
  command:
    shell: true
    value: 'while true; do sleep 1; done # stop-start-race'
`;

/**
 * The live task processes of a job, by instance: each is the leader of its own session with the Mesos task
 * id in its environment (as the minicluster starts a task), read from `/proc`.
 */
async function liveRuns(jobId: string): Promise<Map<number, string[]>> {
  const runs = new Map<number, string[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const session = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3];
      if (session !== entry.name) continue;
      const environ = await Deno.readTextFile(`/proc/${entry.name}/environ`);
      const taskId = environ.split("\0").find((v) => v.startsWith("MESOS_TASK_ID="))?.slice(14);
      if (!taskId?.startsWith(`${jobId}-`)) continue;
      const instance = Number(taskId.split("-").at(-2));
      runs.set(instance, [...runs.get(instance) ?? [], taskId]);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return runs;
}

async function call(url: string, method: string, body: unknown): Promise<{ ok: boolean; json: unknown }> {
  const r = await apiCall(url, `${TASK}::${method}`, body);
  const text = await r.text();
  return { ok: r.ok, json: text ? JSON.parse(text) : undefined };
}

/** Each instance's current run as the job manager lists it: Mesos task id and state. */
async function knownRuns(url: string, jobId: string): Promise<Map<number, { id: string; state: string }>> {
  const { ok, json } = await call(url, "List", { jobId: { value: jobId } });
  assert.ok(ok, JSON.stringify(json));
  const tasks = Object.values((json as { result: { value: Record<string, unknown> } }).result.value) as {
    instanceId: number;
    runtime: { state: string; mesosTaskId: { value: string } };
  }[];
  return new Map(
    tasks.map((t) => [t.instanceId, { id: t.runtime.mesosTaskId.value, state: t.runtime.state }]),
  );
}

Deno.test({
  name:
    "TaskManager Stop and Start flapping on one instance leaves no run alive past its kill: one process " +
    "at most per instance, the one the job manager knows",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-stop-start-race-" });
    const store = testDatabaseUrl("stop_start_race");
    let up: UpProcess | undefined;
    try {
      up = await startUp(dir, ["--store", store, "--agents", "3"]);
      const url = up.url;
      await createDefaultPool(url);
      await Deno.writeTextFile(`${dir}/service.yaml`, SERVICE_YAML);
      const jobId = await createJob(url, `${dir}/service.yaml`);
      await waitFor("both instances RUNNING", async () => {
        const runs = await knownRuns(url, jobId);
        return runs.size === 2 && [...runs.values()].every((r) => r.state === "RUNNING") || undefined;
      });

      const instance0 = { jobId: { value: jobId }, ranges: [{ from: 0, to: 1 }] };
      await Promise.all(Array.from({ length: CLIENTS }, async (_, client) => {
        for (let round = 0; round < ROUNDS_PER_CLIENT; round++) {
          await call(url, (client + round) % 2 === 0 ? "Stop" : "Start", instance0);
        }
      }));
      const started = await call(url, "Start", instance0);
      assert.ok(started.ok, JSON.stringify(started.json));

      // Settled: each instance runs exactly the run the job manager knows, and nothing else of it lives.
      let last = "";
      try {
        await waitFor("one live process per instance, the known run", async () => {
          const [live, known] = [await liveRuns(jobId), await knownRuns(url, jobId)];
          last = JSON.stringify({ live: [...live], known: [...known] });
          for (const i of [0, 1]) {
            const k = known.get(i);
            if (k?.state !== "RUNNING" || live.get(i)?.length !== 1 || live.get(i)![0] !== k.id) return;
          }
          return live.size === 2 || undefined;
        }, 60_000);
      } catch (e) {
        throw new Error(`${(e as Error).message}: ${last}`);
      }
    } catch (e) {
      if (up) console.error(up.output());
      throw e;
    } finally {
      await up?.stop();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
});
