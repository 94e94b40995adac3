/**
 * AdminService lockdown through the CLI: `peloton up` keeps a lockdown across a SIGKILL restart, and job
 * managers running as separate processes on one store take up a lockdown made through either.
 */
import assert from "node:assert/strict";
import { batchJobYaml, DaemonCluster } from "./testing_cluster.ts";
import { cli, createDefaultPool, startUp, type UpProcess, waitFor, waitForJobState } from "./testing.ts";

async function create(url: string, file: string) {
  return await cli(url, "job", "create", "/DefaultResPool", file);
}

Deno.test({
  name:
    "peloton admin lock Write refuses writes, not reads; the lock outlives a SIGKILL restart; unlock lifts it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-lockdown-" });
    const file = `${dir}/job.yaml`;
    await Deno.writeTextFile(file, batchJobYaml("locked", 2, "true"));
    let up: UpProcess | undefined = await startUp(`${dir}/peloton`, ["--agents", "2"]);
    try {
      await createDefaultPool(up.url);
      const locked = await cli(up.url, "admin", "lock", "Write", "Kill");
      assert.equal(locked.code, 0, locked.err);
      assert.equal(locked.out, "Write, Kill locked down");
      const refused = await create(up.url, file);
      assert.equal(refused.code, 1);
      assert.match(refused.err, /All write APIs are locked down/);
      assert.doesNotMatch(refused.err, /may still be created/, "a lockdown is a definite refusal");
      assert.equal((await cli(up.url, "job", "query")).code, 0, "reads still answer");

      up.child.kill("SIGKILL");
      await up.stop();
      up = undefined;
      up = await startUp(`${dir}/peloton`, ["--agents", "2"]);
      assert.match((await create(up.url, file)).err, /All write APIs are locked down/, "still locked");

      const unlocked = await cli(up.url, "admin", "unlock", "Write", "Kill");
      assert.equal(unlocked.code, 0, unlocked.err);
      const created = await create(up.url, file);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];
      assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");

      const bad = await cli(up.url, "admin", "lock", "Everything");
      assert.equal(bad.code, 1);
      assert.match(bad.err, /components: got "Everything", expected a list of components/);
      assert.equal((await cli(up.url, "admin", "lock")).code, 2, "a component is required");
    } catch (err) {
      if (up) console.error(up.output());
      throw err;
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "separate job managers on one store: a lockdown made through one is taken up by the other",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-lockdown-daemons-" });
    const cluster = new DaemonCluster(`sqlite:${dir}/peloton.sqlite`, dir, 2000, {
      hostmgr: ["--agents", "1"],
    });
    try {
      await cluster.start("resmgr");
      await cluster.start("hostmgr");
      await Promise.all(["placement", "jobmgr-1", "jobmgr-2"].map((n) => cluster.start(n)));
      const [j1, j2] = [cluster.url("jobmgr-1"), cluster.url("jobmgr-2")];
      await createDefaultPool(cluster.url("resmgr"));
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, batchJobYaml("locked", 1, "true"));

      assert.equal((await cli(j1, "admin", "lock", "Write")).code, 0);
      await waitFor("the other job manager to take the lockdown up", async () => {
        // Until it does, a create is accepted (and runs): harmless here.
        const r = await create(j2, file);
        return /All write APIs are locked down/.test(r.err) || undefined;
      }, 15_000);

      assert.equal((await cli(j2, "admin", "unlock", "Write")).code, 0);
      let last = "";
      const created = await waitFor("the first job manager to take the unlock up", async () => {
        const r = await create(j1, file);
        last = r.err;
        return r.code === 0 ? r : undefined;
      }, 15_000).catch((e) => {
        throw new Error(`${e.message}; its last answer: ${last}`);
      });
      assert.match(created.out, /^Job \S+ created$/);
    } catch (err) {
      console.error(cluster.tail());
      throw err;
    } finally {
      await cluster.stopAll();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
