/** A standby's /health: it names the leader, and a step-down it recovered from is reported as past. */
import assert from "node:assert/strict";
import { DaemonCluster } from "./testing_cluster.ts";
import { waitFor } from "./testing.ts";

async function health(url: string): Promise<Record<string, unknown>> {
  return await (await fetch(`${url}/health`)).json();
}

Deno.test({
  name:
    "a standby resource manager's /health names the leader; one that stepped down (frozen past its lease) " +
    "reports it as lastSteppedDown once it is a healthy standby",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-standby-health-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 1_000);
    let frozen: Deno.ChildProcess | undefined;
    try {
      await cluster.start("resmgr-1");
      const [r1] = [cluster.url("resmgr-1")];
      const leader = await waitFor("resmgr-1 to lead", async () => {
        const h = await health(r1);
        return h.leader ? h : undefined;
      });
      await cluster.start("resmgr-2");
      const r2 = cluster.url("resmgr-2");
      const standby = await waitFor("resmgr-2 to name the leader", async () => {
        const h = await health(r2);
        return h.leaderInstance ? h : undefined;
      });
      assert.equal(standby.leader, false);
      assert.deepEqual([standby.leaderInstance, standby.leaderUrl], [leader.instance, r1]);

      // Frozen past its lease: resmgr-2 takes the lead, and resmgr-1, resumed, steps down.
      frozen = cluster.daemons.get("resmgr-1")!.proc.child;
      frozen.kill("SIGSTOP");
      await waitFor("resmgr-2 to lead", async () => (await health(r2)).leader || undefined);
      frozen.kill("SIGCONT");
      frozen = undefined;
      await waitFor(
        "resmgr-1 to step down",
        () =>
          Promise.resolve(
            cluster.output("resmgr-1").includes("lost the resmgr lease; stepping down") || undefined,
          ),
      );
      const after = await waitFor("resmgr-1 to be a healthy standby", async () => {
        const h = await health(r1);
        return h.status === "ok" && h.leaderInstance === standby.instance ? h : undefined;
      });
      await new Promise((r) => setTimeout(r, 1_000));
      const later = await health(r1);
      assert.equal(later.steppedDown, undefined, JSON.stringify(later));
      const last = later.lastSteppedDown as { reason: string; at: string };
      assert.ok(last?.reason && Date.parse(last.at) > 0, JSON.stringify(later));
      assert.equal(after.leader, false);
    } catch (err) {
      console.error(cluster.tail(20));
      throw err;
    } finally {
      frozen?.kill("SIGCONT");
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
