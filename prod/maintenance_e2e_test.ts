/**
 * Host maintenance outlives restarts: `peloton up` (minicluster; SQLite killed with SIGKILL, MySQL stopped
 * with SIGTERM) and a separate host manager on MySQL driving `peloton minicluster`, the project's emulator
 * of the documented Mesos protocol (verified against that emulator, not a real master).
 */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { batchJobYaml, DaemonCluster, testDatabaseUrl } from "./testing_cluster.ts";
import {
  cli,
  createDefaultPool,
  startPeloton,
  startUp,
  type UpProcess,
  waitFor,
  waitForJobState,
} from "./testing.ts";

type Host = { hostname: string; agentId: string; state: string };

async function hosts(url: string): Promise<Host[]> {
  const r = await cli(url, "host", "query", "-j");
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out).hostInfos;
}

async function stateOf(url: string, host: string): Promise<string | undefined> {
  return (await hosts(url)).find((h) => h.hostname === host)?.state;
}

/**
 * Every agent registered (a host in maintenance without an agent is listed too, with none). A restarted
 * host manager answers once it leads, when the lease of the one killed has run out.
 */
function registered(url: string, count: number): Promise<Host[]> {
  return waitFor(`${count} agents registered`, async () => {
    const r = await cli(url, "host", "query", "-j");
    const list: Host[] = r.code === 0 ? JSON.parse(r.out).hostInfos : [];
    return list.filter((h) => h.agentId).length === count ? list : undefined;
  });
}

for (const kind of ["sqlite", "mysql"] as const) {
  const crash = kind === "sqlite" ? "SIGKILL" : "SIGTERM";
  Deno.test({
    name:
      `peloton up on ${kind}: a host in maintenance goes DOWN, stays DOWN across a ${crash} restart, takes ` +
      "no work, and complete brings it UP",
    sanitizeResources: false,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "peloton-maint-" });
      const store = kind === "mysql" ? testDatabaseUrl("maint") : undefined;
      const args = ["--agents", "3", ...(store ? ["--store", store] : [])];
      let up: UpProcess | undefined = await startUp(`${dir}/peloton`, args);
      try {
        await registered(up.url, 3);
        await createDefaultPool(up.url);
        const start = await cli(up.url, "host", "maintenance", "start", "agent-2");
        assert.equal(start.code, 0, start.err);
        // Nothing runs there: DRAINED at once, then its machine goes down (the minicluster's agent leaves).
        await waitFor(
          "agent-2 DOWN",
          async () => (await stateOf(up!.url, "agent-2")) === "HOST_STATE_DOWN" || undefined,
        );

        if (crash === "SIGKILL") up.child.kill("SIGKILL");
        await up.stop();
        up = undefined;
        up = await startUp(`${dir}/peloton`, args);

        const after = await registered(up.url, 3);
        assert.deepEqual(
          after.map((h) => [h.hostname, h.state]),
          [["agent-0", "HOST_STATE_UP"], ["agent-1", "HOST_STATE_UP"], ["agent-2", "HOST_STATE_DOWN"]],
        );
        const file = `${dir}/job.yaml`;
        await Deno.writeTextFile(file, batchJobYaml("maint", 6, "true"));
        const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
        assert.equal(created.code, 0, created.err);
        const jobId = /^Job (\S+) created$/.exec(created.out)![1];
        assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");
        const tasks = Object.values(
          JSON.parse((await cli(up.url, "task", "list", jobId, "-j")).out).result.value,
        ) as {
          runtime: { host: string };
        }[];
        assert.equal(tasks.length, 6);
        assert.ok(tasks.every((t) => t.runtime.host !== "agent-2"), "no task on the host in maintenance");

        const complete = await cli(up.url, "host", "maintenance", "complete", "agent-2");
        assert.equal(complete.code, 0, complete.err);
        assert.notEqual(await stateOf(up.url, "agent-2"), "HOST_STATE_DOWN", "no longer DOWN");
        // Its machine comes up and its agent registers again.
        await waitFor(
          "agent-2 UP",
          async () => (await stateOf(up!.url, "agent-2")) === "HOST_STATE_UP" || undefined,
        );
      } catch (err) {
        if (up) console.error(up.output());
        throw err;
      } finally {
        await up?.stop();
        if (store) await dropMysqlDatabase(parseMysqlUrl(store));
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

/** The master's maintenance status, from its operator API. */
async function downMachines(master: string): Promise<string[]> {
  const res = await fetch(`${master}/api/v1`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ type: "GET_MAINTENANCE_STATUS" }),
  });
  const status = (await res.json()).get_maintenance_status.status as {
    down_machines?: { hostname: string }[];
  };
  return (status.down_machines ?? []).map((m) => m.hostname);
}

Deno.test({
  name: "hostmgr --backend mesos on MySQL: a host DOWN for maintenance is listed after a SIGKILL restart, " +
    "and complete brings it back",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-maint-mesos-" });
    const store = testDatabaseUrl("maint_mesos");
    const master = await startPeloton(
      ["minicluster", "--port", "0", "--agents", "3", "--data-dir", `${dir}/master`],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const cluster = new DaemonCluster(store, `${dir}/peloton`, 500, {
      hostmgr: ["--backend", "mesos", "--mesos-master", master.url],
    });
    try {
      await cluster.start("hostmgr");
      await registered(cluster.url("hostmgr"), 3);
      const start = await cli(cluster.url("hostmgr"), "host", "maintenance", "start", "agent-2");
      assert.equal(start.code, 0, start.err);
      // No tasks there: DRAINED at once, then down at the master, its agent gone.
      await waitFor(
        "agent-2 down at the master",
        async () => (await downMachines(master.url)).includes("agent-2") || undefined,
      );
      await waitFor(
        "agent-2 DOWN in Peloton",
        async () => (await stateOf(cluster.url("hostmgr"), "agent-2")) === "HOST_STATE_DOWN" || undefined,
      );

      await cluster.restart("hostmgr");
      const hm = cluster.url("hostmgr");
      await registered(hm, 2);
      assert.equal(await stateOf(hm, "agent-2"), "HOST_STATE_DOWN", "listed though its agent is gone");
      const complete = await cli(hm, "host", "maintenance", "complete", "agent-2");
      assert.equal(complete.code, 0, complete.err);
      await waitFor(
        "agent-2 up at the master",
        async () => (await downMachines(master.url)).length === 0 || undefined,
      );
      await waitFor(
        "agent-2 back UP",
        async () => (await stateOf(hm, "agent-2")) === "HOST_STATE_UP" || undefined,
      );
    } catch (err) {
      console.error(cluster.tail(20));
      throw err;
    } finally {
      await cluster.stopAll();
      await master.stop();
      await dropMysqlDatabase(parseMysqlUrl(store));
      await Deno.remove(dir, { recursive: true });
    }
  },
});
