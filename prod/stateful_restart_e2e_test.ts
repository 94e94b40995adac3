/**
 * A stateful task on an agent added at run time, through restarts of `peloton up`: the host keeps its agent
 * id, so its task finds its volume again; a job deleted while the host is away has its volume destroyed, and
 * a job created again under its id starts with an empty one.
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, type UpProcess, upSession, waitFor } from "./testing.ts";

const JOB = "5ca1ab1e-0000-4000-8000-00000000a8e8";
const HOST = "agent-8";

/** scenarios/jobs/stateful.yaml's counter, pinned to HOST. */
const STATEFUL_ON_HOST = `
name: counter-store
type: SERVICE
instanceCount: 1
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  volume: { containerPath: data, sizeMB: 16 }
  killGracePeriodSeconds: 1
  constraint:
    type: LABEL_CONSTRAINT
    labelConstraint:
      kind: HOST
      condition: CONDITION_EQUAL
      label: { key: hostname, value: ${HOST} }
      requirement: 1
  command:
    shell: true
    value: 'echo run >> data/runs; echo "runs: $(wc -l < data/runs) on $HOST"; while true; do sleep 1; done'
`;

async function addAgent(up: UpProcess, hostname: string): Promise<string> {
  const res = await fetch(`${up.url}/admin/agents`, { method: "POST", body: JSON.stringify({ hostname }) });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text).agentId;
}

/** Instance 0's stdout once its run `run` wrote it. */
function runsLine(url: string, run: number): Promise<string> {
  return waitFor(`the stdout of run ${run} of ${JOB}-0`, async () => {
    const list = await cli(url, "task", "list", JOB, "-j");
    const t = list.code === 0 ? JSON.parse(list.out).result.value["0"] : undefined;
    const at = Number(t?.runtime.mesosTaskId.value.split("-").at(-1));
    if (t?.runtime.state !== "RUNNING" || at !== run) return undefined;
    const out = (await cli(url, "task", "logs", JOB, "0")).out;
    return /^runs: \d+ on /.test(out) ? out : undefined;
  }, 60_000);
}

Deno.test({
  name:
    "a host added at run time keeps its volumes across restarts; a job made again under a deleted one's id starts empty",
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-stateful-restart-" });
    const spec = `${dataDir}/stateful.yaml`;
    await Deno.writeTextFile(spec, STATEFUL_ON_HOST);
    try {
      let agentId = "";
      await upSession(dataDir, ["--agents", "2"], async (up) => {
        await createDefaultPool(up.url);
        agentId = await addAgent(up, HOST);
        const created = await cli(up.url, "job", "create", "/DefaultResPool", spec, "-i", JOB);
        assert.equal(created.code, 0, created.err);
        assert.equal(await runsLine(up.url, 1), `runs: 1 on ${HOST}`);
      });

      await upSession(dataDir, ["--agents", "2"], async (up) => {
        // Another host added first: before, it took agent-8's directory, volumes and all.
        assert.notEqual(await addAgent(up, "agent-5"), agentId);
        assert.equal(await addAgent(up, HOST), agentId, "agent-8's own agent id");
        // Its task runs again there (the restart ended its run), and finds its volume.
        const line = await runsLine(up.url, 2);
        assert.equal(line, `runs: 2 on ${HOST}`);
      });

      await upSession(dataDir, ["--agents", "2"], async (up) => {
        // agent-8 is not back: the job is stopped and deleted meanwhile; its volume is destroyed all the same.
        const [volumeId] = Object.keys(
          JSON.parse((await cli(up.url, "volume", "list", JOB, "-j")).out).volumes,
        );
        const dir = `${dataDir}/minicluster/agents/${agentId}/volumes/${volumeId}`;
        assert.ok(await Deno.stat(dir).then(() => true, () => false), `${dir} is there`);
        assert.equal((await cli(up.url, "job", "stop", JOB)).code, 0);
        await waitFor("the job stopped", async () => {
          const status = await cli(up.url, "job", "status", JOB);
          return /KILLED/.test(status.out) || undefined;
        }, 60_000);
        const deleted = await cli(up.url, "job", "delete", JOB);
        assert.equal(deleted.code, 0, deleted.err);
        await waitFor("its volume's directory removed", async () => {
          return !await Deno.stat(dir).then(() => true, () => false) || undefined;
        });
        assert.doesNotMatch(up.output(), /Cannot destroy volume/);

        assert.equal(await addAgent(up, HOST), agentId);
        const again = await cli(up.url, "job", "create", "/DefaultResPool", spec, "-i", JOB);
        assert.equal(again.code, 0, again.err);
        assert.equal(await runsLine(up.url, 1), `runs: 1 on ${HOST}`, "a new job, a new, empty volume");
        const [made] = Object.keys(JSON.parse((await cli(up.url, "volume", "list", JOB, "-j")).out).volumes);
        assert.notEqual(made, volumeId);
      });
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
