/**
 * A host DOWN for maintenance stays in its host pool across a SIGKILL restart of the host manager, though its
 * agent does not register again: a separate host manager on MySQL driving `peloton minicluster`, the
 * project's emulator of the documented Mesos protocol (verified against that emulator, not a real master).
 * The daemons serve on free ports, or on PELOTON_TEST_PORT_BASE and the next ports when it is set.
 */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { poolsOf, registered, testDatabaseUrl } from "./testing_cluster.ts";
import { cli, startPeloton, type UpProcess, waitFor } from "./testing.ts";

type Host = { hostname: string; agentId: string; state: string; currentPool?: string };

const portBase = Number(Deno.env.get("PELOTON_TEST_PORT_BASE") ?? 0);
const port = (i: number) => String(portBase ? portBase + i : 0);

async function hosts(url: string): Promise<Host[]> {
  const r = await cli(url, "host", "query", "-j");
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out).hostInfos;
}

function isDown(url: string, host: string): Promise<true> {
  return waitFor(`${host} DOWN`, async () => {
    const h = (await hosts(url)).find((h) => h.hostname === host);
    return h?.state === "HOST_STATE_DOWN" || undefined;
  });
}

Deno.test({
  name: "hostmgr --backend mesos on MySQL: a DOWN host whose agent is gone keeps its host pool across a " +
    "SIGKILL restart, and can change pools",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-hostpool-down-" });
    const store = testDatabaseUrl("hostpool_down");
    const master = await startPeloton(
      ["minicluster", "--port", port(0), "--agents", "3", "--data-dir", `${dir}/master`],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const hostmgrArgs = [
      "hostmgr",
      ...["--port", port(2), "--data-dir", `${dir}/peloton`, "--store", store, "--lease-ttl-ms", "500"],
      ...["--backend", "mesos", "--mesos-master", master.url],
    ];
    let hostmgr: UpProcess | undefined = await startPeloton(hostmgrArgs, /serving at (http:\/\/\S+)/);
    try {
      let hm = hostmgr.url;
      await registered<Host>(hm, 3);
      assert.equal((await cli(hm, "host", "pool", "create", "xcpool")).code, 0);
      const change = await cli(hm, "host", "pool", "change", "agent-0", "xcpool");
      assert.equal(change.code, 0, change.err);
      // agent-0 in the pool an operator put it in, agent-1 in the one its agent names: both DOWN.
      for (const name of ["agent-0", "agent-1"]) {
        const start = await cli(hm, "host", "maintenance", "start", name);
        assert.equal(start.code, 0, start.err);
        await isDown(hm, name);
      }
      // Answered once stored, after the DOWN states written before it (the store writes in order): the
      // restart does not find agent-1 stored DRAINING, which would keep it so for Mesos's re-register timeout.
      assert.equal((await cli(hm, "host", "pool", "create", "spare")).code, 0);

      hostmgr.child.kill("SIGKILL");
      await hostmgr.child.status;
      await hostmgr.stop();
      hostmgr = undefined;
      hostmgr = await startPeloton(hostmgrArgs, /serving at (http:\/\/\S+)/);
      hm = hostmgr.url;
      const after = await registered<Host>(hm, 1);
      assert.deepEqual(after.map((h) => [h.hostname, h.state, h.currentPool]), [
        ["agent-2", "HOST_STATE_UP", "shared"],
        ["agent-0", "HOST_STATE_DOWN", "xcpool"],
        ["agent-1", "HOST_STATE_DOWN", "shared"],
      ]);
      assert.deepEqual(await poolsOf(hm), {
        default: [],
        shared: ["agent-1", "agent-2"],
        spare: [],
        xcpool: ["agent-0"],
      });
      assert.equal((await cli(hm, "host", "pool", "list-hosts", "xcpool")).out, "agent-0");

      const back = await cli(hm, "host", "pool", "change", "agent-0", "shared");
      assert.equal(back.code, 0, back.err);
      assert.deepEqual(await poolsOf(hm), {
        default: [],
        shared: ["agent-0", "agent-1", "agent-2"],
        spare: [],
        xcpool: [],
      });
      // MoveHosts gives up the host with an agent first, hosts in maintenance last (by name).
      const moved = await cli(hm, "host", "pool", "move", "shared", "xcpool", "2");
      assert.equal(moved.code, 0, moved.err);
      assert.equal(moved.out, "Moved 2 hosts from host pool shared to xcpool: agent-2, agent-0");

      const complete = await cli(hm, "host", "maintenance", "complete", "agent-0");
      assert.equal(complete.code, 0, complete.err);
      const up = await waitFor("agent-0 back UP", async () => {
        const h = (await hosts(hm)).find((h) => h.hostname === "agent-0");
        return h?.state === "HOST_STATE_UP" ? h : undefined;
      });
      assert.equal(up.currentPool, "xcpool", "the pool it was moved to while DOWN");
    } catch (err) {
      console.error(hostmgr?.output().split("\n").slice(-30).join("\n"));
      throw err;
    } finally {
      await hostmgr?.stop();
      await master.stop();
      await dropMysqlDatabase(parseMysqlUrl(store));
      await Deno.remove(dir, { recursive: true });
    }
  },
});
