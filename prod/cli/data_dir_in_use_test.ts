/** Server commands on a data dir another live process holds, or on a taken port: one line, exit 1. */
import assert from "node:assert/strict";
import { DataDirInUseError, ownDataDir } from "../minicluster/data_dir_owner.ts";
import { cli, runPeloton } from "../testing.ts";

const NOWHERE = "http://127.0.0.1:9";

/** Fails unless `dir` can be taken (and gives it back at once). */
function assertFree(dir: string): void {
  try {
    ownDataDir(dir, "test").release();
  } catch (e) {
    if (e instanceof DataDirInUseError) assert.fail(`${dir} is left held: ${e.message}`);
    throw e;
  }
}

Deno.test("peloton minicluster: a held data dir and a taken port are each one line, exit 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data_dir_in_use_" });
  const blocker = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const minicluster = (port: number) =>
      cli(NOWHERE, "minicluster", "--port", String(port), "--data-dir", dir, "--agents", "1");
    const held = ownDataDir(dir, "test");
    const refused = await minicluster(0);
    held.release();
    assert.equal(refused.code, 1, refused.err);
    const holder = `data dir ${dir} is in use by pid ${Deno.pid} \\(test, started [^)]+\\)`;
    assert.match(refused.err, new RegExp(`^peloton minicluster: ${holder}$`));

    const port = blocker.addr.port;
    const busy = await minicluster(port);
    assert.equal(busy.code, 1, busy.err);
    assert.equal(
      busy.err,
      `peloton minicluster: port ${port} on 127.0.0.1 is already in use; pick another with --port`,
    );
    assertFree(dir);
  } finally {
    blocker.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "peloton hostmgr: elected while another process holds its minicluster's dir, it steps down, exit 1",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "data_dir_in_use_" });
    const held = ownDataDir(`${dir}/minicluster`, "test");
    try {
      const args = ["--port", "0", "--data-dir", dir, "--lease-ttl-ms", "300", "--agents", "1"];
      const r = await runPeloton(["hostmgr", ...args]);
      assert.equal(r.code, 1, r.err);
      const holder = `data dir ${dir}/minicluster is in use by pid ${Deno.pid} \\(test, started [^)]+\\)`;
      assert.match(r.err.split("\n").at(-1)!, new RegExp(`^peloton hostmgr: ${holder}; exiting$`));
    } finally {
      held.release();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("peloton resmgr on a taken port: one line, exit 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "daemon_port_" });
  const blocker = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = blocker.addr.port;
    const r = await runPeloton(["resmgr", "--port", String(port), "--data-dir", dir]);
    assert.equal(r.code, 1, r.err);
    assert.equal(
      r.err.trim(),
      `peloton resmgr: port ${port} on 127.0.0.1 is already in use; pick another with --port`,
    );
  } finally {
    blocker.close();
    await Deno.remove(dir, { recursive: true });
  }
});
