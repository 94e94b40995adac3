/**
 * Host pools through the CLI against `peloton up --use-host-pool` (minicluster, SQLite): pools and moves
 * (`change` of one host, `move` of a number of hosts) outlive a SIGKILL restart, and non-preemptible batch work waits for a host in `batch_reserved`, then runs
 * only there.
 */
import assert from "node:assert/strict";
import { batchJobYaml, poolsOf, registered } from "./testing_cluster.ts";
import { cli, createDefaultPool, startUp, type UpProcess, waitFor, waitForJobState } from "./testing.ts";

type Host = { hostname: string; agentId: string; currentPool: string };
type Task = { runtime: { host?: string; message?: string } };

Deno.test({
  name:
    "peloton host pool create|change|move|delete; --use-host-pool places batch work in its pool; a SIGKILL restart keeps both",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-hostpool-" });
    const args = ["--agents", "3", "--use-host-pool"];
    let up: UpProcess | undefined = await startUp(`${dir}/peloton`, args);
    try {
      await registered<Host>(up.url, 3);
      assert.deepEqual(await poolsOf(up.url), { default: [], shared: ["agent-0", "agent-1", "agent-2"] });
      await createDefaultPool(up.url);

      const created = await cli(up.url, "host", "pool", "create", "stateless");
      assert.equal(created.code, 0, created.err);
      assert.equal(created.out, "Host pool stateless created");
      const wrong = await cli(up.url, "host", "pool", "change", "agent-1", "stateless", "-s", "default");
      assert.equal(wrong.code, 1);
      assert.match(wrong.err, /sourcePool: host agent-1 is in host pool shared, not "default"/);
      const moved = await cli(up.url, "host", "pool", "change", "agent-1", "stateless", "-s", "shared");
      assert.equal(moved.code, 0, moved.err);
      assert.equal(moved.out, "Host agent-1 moved to host pool stateless");

      // Non-preemptible batch work goes to batch_reserved, which has no host yet: it waits, saying why.
      const file = `${dir}/job.yaml`;
      // 12 tasks of 1 cpu need three of the 4-cpu agents, or one three times over.
      await Deno.writeTextFile(file, batchJobYaml("reserved", 12, "true", 1));
      const job = await cli(up.url, "job", "create", "/DefaultResPool", file);
      assert.equal(job.code, 0, job.err);
      const jobId = /^Job (\S+) created$/.exec(job.out)![1];
      await waitFor("the tasks to say they wait for a batch_reserved host", async () => {
        const r = await cli(up!.url, "task", "list", jobId, "-j");
        const tasks = r.code === 0 ? Object.values(JSON.parse(r.out).result.value) as Task[] : [];
        const waiting = tasks.length === 12 &&
          tasks.every((t) => /host_pool=batch_reserved/.test(t.runtime.message ?? ""));
        return waiting || undefined;
      });

      // Of shared's two idle hosts, alike but for their names, MoveHosts takes the first by name.
      const tooMany = await cli(up.url, "host", "pool", "move", "shared", "stateless", "3");
      assert.equal(tooMany.code, 1);
      assert.match(
        tooMany.err,
        /moves 3 hosts into host pool stateless \(it has 1\), but host pool shared has only 2/,
      );
      const move = await cli(up.url, "host", "pool", "move", "shared", "stateless", "1");
      assert.equal(move.code, 0, move.err);
      assert.equal(move.out, "Moved 1 host from host pool shared to stateless: agent-0");

      up.child.kill("SIGKILL");
      await up.stop();
      up = undefined;
      up = await startUp(`${dir}/peloton`, args);
      const hosts = await registered<Host>(up.url, 3);
      assert.deepEqual(hosts.map((h) => [h.hostname, h.currentPool]), [
        ["agent-0", "stateless"],
        ["agent-1", "stateless"],
        ["agent-2", "shared"],
      ]);
      const listed = await cli(up.url, "host", "pool", "list-hosts", "stateless");
      assert.equal(listed.out, "agent-0\nagent-1");

      assert.equal((await cli(up.url, "host", "pool", "create", "batch_reserved")).code, 0);
      const reserve = await cli(up.url, "host", "pool", "change", "agent-2", "batch_reserved");
      assert.equal(reserve.code, 0, reserve.err);
      assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");
      const tasks = Object.values(
        JSON.parse((await cli(up.url, "task", "list", jobId, "-j")).out).result.value,
      ) as Task[];
      assert.deepEqual([...new Set(tasks.map((t) => t.runtime.host))], ["agent-2"], "only the pool's host");

      const deleted = await cli(up.url, "host", "pool", "delete", "stateless");
      assert.equal(deleted.code, 0, deleted.err);
      // shared, named only by its agents, went with its last host.
      assert.deepEqual(await poolsOf(up.url), {
        batch_reserved: ["agent-2"],
        default: ["agent-0", "agent-1"],
      });
      const gone = await cli(up.url, "host", "pool", "delete", "stateless");
      assert.equal(gone.code, 1);
      assert.match(gone.err, /host pool stateless not found/);
    } catch (err) {
      if (up) console.error(up.output());
      throw err;
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
