/**
 * A task with a static port against `peloton up`: the agents have disjoint port ranges (31000 + 1000·i), so
 * only one offers the port, and the task runs there whichever agent best fit would pick.
 */
import assert from "node:assert/strict";
import { cli, waitFor, withUp } from "./testing.ts";

const JOB = `
name: static
instanceCount: 1
sla: { priority: 1, preemptible: false }
defaultConfig:
  resource: { cpuLimit: 0.5, memLimitMb: 10, diskLimitMb: 10 }
  ports: [{ name: http, value: 31003, envName: HTTP }]
  command: { shell: true, value: 'echo $HTTP; sleep 600' }
`;

type Task = { runtime: { state: string; host?: string; ports?: Record<string, number>; message?: string } };

Deno.test({
  name: "a task with a static port only one agent offers runs on that agent",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-static-ports-", async (up, dataDir) => {
      await Deno.writeTextFile(`${dataDir}/static.yaml`, JOB);
      const created = await cli(up.url, "job", "create", "/DefaultResPool", `${dataDir}/static.yaml`);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];
      let last: Task | undefined;
      const running = await waitFor("the static-port task to run", async () => {
        const r = await cli(up.url, "task", "list", jobId, "-j");
        assert.equal(r.code, 0, r.err);
        last = (Object.values(JSON.parse(r.out).result.value) as Task[])[0];
        return last?.runtime.state === "RUNNING" ? last : undefined;
      }, 30_000).catch((err) => {
        throw new Error(`${err.message}; last seen: ${JSON.stringify(last?.runtime)}`);
      });
      // The agent whose range holds 31003 is the first (31000-31999); the port is the one asked for.
      assert.match(running.runtime.host ?? "", /0$/, JSON.stringify(running.runtime));
      assert.equal(running.runtime.ports?.http, 31003, JSON.stringify(running.runtime));
    }, ["--agents", "3"]);
  },
});
