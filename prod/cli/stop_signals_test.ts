/**
 * Stop signals of `peloton up` and the daemons: SIGHUP (a closed terminal) stops gracefully as SIGTERM does;
 * a stop that waits for tasks' kill grace says so, and a signal during the stop says it is under way.
 */
import assert from "node:assert/strict";
import { createDefaultPool, createJob, startPeloton, startUp, waitFor, waitForJobState } from "../testing.ts";
import { batchJobYaml } from "../testing_cluster.ts";
import { settlesWithin } from "../settle.ts";

const GRACE_S = 3;

Deno.test("peloton up: SIGHUP stops gracefully, says it waits for the tasks' kill grace, and a second signal says it is stopping", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-stop-signals-" });
  const up = await startUp(`${dir}/data`, ["--agents", "1"]);
  try {
    await createDefaultPool(up.url);
    // A task that ignores SIGTERM (and its sleep inherits that): it ends at SIGKILL, after its grace.
    const file = `${dir}/job.yaml`;
    await Deno.writeTextFile(
      file,
      batchJobYaml("trap-term", 1, 'trap "" TERM; sleep 60') + `  killgraceperiodseconds: ${GRACE_S}\n`,
    );
    const jobId = await createJob(up.url, file);
    await waitForJobState(up.url, jobId, ["RUNNING"]);
    up.child.kill("SIGHUP");
    const said = (re: RegExp) =>
      waitFor(`peloton up to say ${re}`, () => Promise.resolve(re.test(up.output()) || undefined), 15_000);
    await said(/^peloton up: stopping \(SIGHUP\)$/m);
    await said(
      new RegExp(
        `^peloton up: ending 1 task: SIGTERM now, SIGKILL to any still running after its kill grace period ` +
          `\\(the longest ${GRACE_S} s, bounded by 30 s\\), so for up to ${GRACE_S} s$`,
        "m",
      ),
    );
    up.child.kill("SIGTERM");
    await said(
      /^peloton up: SIGTERM: already stopping \(ending 1 task: .*\); not forced: the stop ends within 60 s/m,
    );
    assert.ok(await settlesWithin(up.child.status, 20_000), up.output());
    const status = await up.child.status;
    assert.equal(status.signal, null, up.output());
    assert.equal(status.code, 0, up.output());
  } catch (e) {
    console.error(up.output());
    throw e;
  } finally {
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** Starts `peloton ARGS` on a fresh data dir, sends it SIGHUP, and checks it exits 0 having said `said`. */
async function stopsOnSighup(args: string[], ready: RegExp, said: RegExp[]): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-stop-sighup-" });
  const p = await startPeloton([...args, "--port", "0", "--data-dir", dir], ready);
  try {
    p.child.kill("SIGHUP");
    assert.ok(await settlesWithin(p.child.status, 20_000), p.output());
    const status = await p.child.status;
    assert.equal(status.signal, null, p.output());
    assert.equal(status.code, 0, p.output());
    for (const re of said) assert.match(p.output(), re);
  } finally {
    await p.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a daemon stops gracefully on SIGHUP", async () => {
  await stopsOnSighup(["resmgr", "--lease-ttl-ms", "1000"], /serving at (http:\/\/\S+)/, [
    /"msg":"stopping","daemon":"resmgr","signal":"SIGHUP"/,
    /"msg":"daemon stopped"/,
  ]);
});

Deno.test("peloton minicluster stops gracefully on SIGHUP instead of dying of it", async () => {
  await stopsOnSighup(["minicluster", "--agents", "1"], /emulator at (http:\/\/\S+) /, [
    /^peloton minicluster: stopping \(SIGHUP\)$/m,
  ]);
});
