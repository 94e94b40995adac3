/**
 * `peloton up`: a rolling update that grows stateful instances' volumes past what their host's disk holds.
 * The instance that no longer fits on its volume's host is a failed instance of the update: with
 * `--rollbackOnFailure` the update rolls back and every instance runs again at the old size; never an update
 * that waits for ever with the instance down.
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, createJob, startUp, waitFor } from "./testing.ts";

const STATEFUL = (sizeMB: number) => `
name: sf
type: SERVICE
instanceCount: 2
sla: { priority: 10, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  volume: { containerPath: data, sizeMB: ${sizeMB} }
  killGracePeriodSeconds: 1
  command:
    shell: true
    value: 'while true; do sleep 1; done'
`;

type Task = { runtime: { state: string; host?: string; configVersion?: number } };

async function tasks(url: string, job: string): Promise<Task[]> {
  const r = await cli(url, "task", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  const byId = JSON.parse(r.out).result.value as Record<string, Task>;
  return [0, 1].map((i) => byId[String(i)]);
}

async function volumeSizes(url: string, job: string): Promise<number[]> {
  const r = await cli(url, "volume", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  const volumes = Object.values(JSON.parse(r.out).volumes ?? {}) as { instanceId: number; sizeMB: number }[];
  return volumes.sort((a, b) => a.instanceId - b.instanceId).map((v) => v.sizeMB);
}

Deno.test({
  name:
    "an update growing a volume past its host's disk fails that instance and rolls back: every instance runs",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-pinned-room-" });
    const agents = `${dir}/agents.yaml`;
    // Both instances on agent-0; agent-1, without the memory to run one, gives the pool the disk to admit the
    // bigger runs, so they get as far as placement on agent-0, as on a cluster of several hosts.
    await Deno.writeTextFile(agents, "- {diskMb: 2048}\n- {diskMb: 2048, memoryMb: 8}\n");
    const small = `${dir}/sf.yaml`, big = `${dir}/sfbig.yaml`;
    await Deno.writeTextFile(small, STATEFUL(16));
    await Deno.writeTextFile(big, STATEFUL(1500));
    const up = await startUp(`${dir}/data`, ["--agents-file", agents]);
    try {
      await createDefaultPool(up.url);
      const job = await createJob(up.url, small);
      await waitFor("both instances RUNNING on agent-0", async () => {
        const ts = await tasks(up.url, job);
        return ts.every((t) => t?.runtime.state === "RUNNING" && t.runtime.host === "agent-0") || undefined;
      }, 60_000);
      const created = await cli(
        up.url,
        "update",
        "create",
        job,
        big,
        "1",
        "--min-running-seconds",
        "1",
        "--maxfailureInstances",
        "1",
        "--rollbackOnFailure",
      );
      assert.equal(created.code, 0, created.err);
      const updateId = /^Update (\S+) created$/.exec(created.out)![1];
      const info = await waitFor("the update to end", async () => {
        const r = JSON.parse((await cli(up.url, "update", "get", updateId, "-j")).out).updateInfo;
        return ["SUCCEEDED", "FAILED", "ABORTED", "ROLLED_BACK"].includes(r.status.state) ? r : undefined;
      }, 90_000);
      assert.equal(info.status.state, "ROLLED_BACK", JSON.stringify(info.status));
      await waitFor("both instances RUNNING again", async () => {
        const ts = await tasks(up.url, job);
        return ts.every((t) => t?.runtime.state === "RUNNING") || undefined;
      }, 60_000);
      assert.deepEqual(await volumeSizes(up.url, job), [16, 16]);
    } catch (err) {
      console.error(up.output());
      throw err;
    } finally {
      await up.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
