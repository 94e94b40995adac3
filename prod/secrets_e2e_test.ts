/**
 * Job secrets end to end, with `peloton up` (SQLite) and the CLI: a secret given at create lands in each
 * task's sandbox before its command runs, `job get` names it by path but never shows its data, and after a
 * SIGKILL restart a `job update` that rotates it gives the new instances the new data.
 */
import assert from "node:assert/strict";
import { batchJobYaml } from "./testing_cluster.ts";
import { cli, createDefaultPool, startUp, type UpProcess, waitFor, waitForJobState } from "./testing.ts";

const SECRET = "hunter2-not-in-any-log", ROTATED = "rotated-0xC0FFEE";

Deno.test({
  name:
    "peloton job create --secret-path/--secret-data: tasks read the secret; job get and logs never show it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-secrets-" });
    let up: UpProcess | undefined = await startUp(`${dir}/peloton`, ["--agents", "2", "-v"]);
    const outputs: string[] = [];
    let jobId = "";
    try {
      await createDefaultPool(up.url);
      const file = `${dir}/job.yaml`;
      // Each instance prints the secret and then stays up, so the job can grow later.
      await Deno.writeTextFile(file, batchJobYaml("with-secret", 1, "cat etc/app/token; sleep 600"));
      const bad = await cli(up.url, "job", "create", "/DefaultResPool", file, "--secret-data", SECRET);
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--secret-path: expected the path to write the secret at, with --secret-data/);

      const created = await cli(
        up.url,
        ...["job", "create", "/DefaultResPool", file, "--secret-path", "/etc/app/token"],
        ...["--secret-data", SECRET],
      );
      assert.equal(created.code, 0, created.err);
      jobId = /^Job (\S+) created$/.exec(created.out)![1];
      const printed = (instance: number) =>
        waitFor(`instance ${instance} to print its secret`, async () => {
          const r = await cli(up!.url, "task", "logs", jobId, String(instance));
          return r.code === 0 && r.out !== "" ? r.out : undefined;
        });
      assert.equal(await printed(0), SECRET);

      const got = await cli(up.url, "job", "get", jobId);
      assert.equal(got.code, 0, got.err);
      assert.match(got.out, /secrets:\n {2}- id:\n {6}value: [0-9a-f-]{36}\n {4}path: \/etc\/app\/token/);
      assert.ok(!got.out.includes(SECRET) && !got.out.includes(btoa(SECRET)), "no data in job get");

      // The data outlives a crash: the restarted job manager launches the grown job's new instance with the
      // rotated secret. (Instance 0 runs again too: a minicluster restarted on the same data dir ends the
      // processes the crashed one left, and whether it relaunches before or after the update is a race.)
      up.child.kill("SIGKILL");
      await up.stop();
      outputs.push(up.output());
      up = await startUp(`${dir}/peloton`, ["--agents", "2", "-v"]);
      await Deno.writeTextFile(file, batchJobYaml("with-secret", 2, "cat etc/app/token; sleep 600"));
      const missing = await cli(up.url, "job", "update", jobId, file);
      assert.equal(missing.code, 1);
      assert.match(missing.err, /secrets: got 0, expected every one of the job's 1 secrets/);
      const rotated = await cli(
        up.url,
        ...["job", "update", jobId, file, "--secret-path", "/etc/app/token", "--secret-data", ROTATED],
      );
      assert.equal(rotated.code, 0, rotated.err);
      assert.equal(await printed(1), ROTATED);

      // Stopped the moment instance 1 printed: its RUNNING status may still be on its way, and must not
      // cancel the stop (the job stayed KILLING for good when it did).
      assert.equal((await cli(up.url, "job", "stop", jobId)).code, 0);
      assert.equal(await waitForJobState(up.url, jobId, ["KILLED", "SUCCEEDED", "FAILED"]), "KILLED");
      outputs.push(up.output());
      for (const text of outputs) {
        for (const s of [SECRET, ROTATED, btoa(SECRET), btoa(ROTATED)]) {
          assert.ok(!text.includes(s), "the server's own output never holds a secret");
        }
      }
    } catch (err) {
      if (up) console.error(up.output(), jobId && (await cli(up.url, "task", "list", jobId, "-j")).out);
      throw err;
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
