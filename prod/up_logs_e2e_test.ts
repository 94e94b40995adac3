/**
 * `peloton up`'s logs without -v: its warnings and errors (a failing job archiver) go to stderr as JSON
 * lines with their level and daemon, as the separately started daemons' do; the per-call lines need -v.
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, createJob, startUp, waitFor, waitForJobState } from "./testing.ts";
import { batchJobYaml } from "./testing_cluster.ts";

Deno.test("peloton up without -v logs a failing archiver run as a warning of the jobmgr, and no per-call lines", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-up-logs-" });
  // The archive dir under a file: every archiver run that has a job to export fails.
  await Deno.writeTextFile(`${dir}/not-a-dir`, "");
  const up = await startUp(`${dir}/data`, [
    "--agents",
    "1",
    "--archive-after",
    "1ms",
    "--archive-every",
    "1s",
    "--archive-dir",
    `${dir}/not-a-dir/archive`,
  ]);
  try {
    await createDefaultPool(up.url);
    await Deno.writeTextFile(`${dir}/job.yaml`, batchJobYaml("done", 1, "true"));
    const jobId = await createJob(up.url, `${dir}/job.yaml`);
    assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED");
    const line = await waitFor(
      "the archiver's failure on stderr",
      () =>
        Promise.resolve(up.output().split("\n").find((l) => l.includes('"msg":"job archiver run failed"'))),
      15_000,
    );
    const logged = JSON.parse(line);
    assert.equal(logged.level, "warn", line);
    assert.equal(logged.daemon, "jobmgr", line);
    assert.match(logged.error, /not-a-dir/, line);
    assert.equal((await cli(up.url, "job", "get", jobId)).code, 0, "the job stays");
    assert.doesNotMatch(up.output(), /"msg":"api call"/, "per-call lines need -v");
  } catch (e) {
    console.error(up.output());
    throw e;
  } finally {
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
