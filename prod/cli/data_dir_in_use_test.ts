/**
 * Server commands on a data dir another live process holds, or on a taken port: one line, exit 1. The daemons
 * of a cluster share a data dir; `peloton up` holds one alone.
 */
import assert from "node:assert/strict";
import { DataDirInUseError, ownDataDir } from "../minicluster/data_dir_owner.ts";
import { cli, type CliResult, ROOT, runPeloton, startPeloton, startUp, type UpProcess } from "../testing.ts";

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

const SERVING = /serving at (http:\/\/\S+)/;

async function healthy(url: string): Promise<boolean> {
  const res = await fetch(`${url}/health`);
  return res.ok && (await res.json()).status === "ok";
}

const listing = (dir: string) => [...Deno.readDirSync(dir)].map((e) => e.name).sort();

/**
 * Runs a server command that should be refused at once, to its exit. One still running after `waitMs` was not
 * refused: it is stopped and the test fails.
 */
async function runRefused(args: string[], waitMs = 15_000): Promise<CliResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), waitMs)));
  const first = await Promise.race([child.status, late]);
  clearTimeout(timer);
  if (first === "late") {
    child.kill("SIGINT");
    await child.status;
    const [out, err] = await output;
    assert.fail(
      `peloton ${args[0]} still runs ${waitMs} ms after it should have been refused:\n${out}${err}`,
    );
  }
  const [out, err] = await output;
  return { code: first.code, out: out.trimEnd(), err: err.trimEnd() };
}

Deno.test({
  name: "peloton up on a dir a daemon shares: one line naming the daemon, exit 1; the daemon keeps serving",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "data_dir_in_use_" });
    const daemons: UpProcess[] = [];
    try {
      const jobmgr = await startPeloton(["jobmgr", "--port", "0", "--data-dir", dir], SERVING);
      daemons.push(jobmgr);
      const before = listing(dir);
      const up = await runRefused(["up", "--port", "0", "--data-dir", dir, "--agents", "1"]);
      assert.equal(up.code, 1, up.err);
      const holder =
        `data dir ${dir} is in use by pid ${jobmgr.child.pid} \\(peloton jobmgr, started [^)]+\\)`;
      assert.match(up.err, new RegExp(`^peloton up: ${holder}$`));
      assert.deepEqual(listing(dir), before, "the refused up touched nothing");
      assert.ok(await healthy(jobmgr.url), "the job manager serves on");
      // Two daemons of a role on one dir are a cluster (job managers share the jobs; standbys wait to lead).
      const second = await startPeloton(["jobmgr", "--port", "0", "--data-dir", dir], SERVING);
      daemons.push(second);
      assert.ok(await healthy(second.url) && await healthy(jobmgr.url));
    } finally {
      for (const d of daemons) await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a daemon on a dir peloton up holds: one line naming up, exit 1, nothing touched; up keeps serving",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "data_dir_in_use_" });
    let up: UpProcess | undefined;
    try {
      up = await startUp(dir, ["--agents", "1"]);
      const before = listing(dir);
      for (const role of ["resmgr", "jobmgr"]) {
        const r = await runRefused([role, "--port", "0", "--data-dir", dir, "--lease-ttl-ms", "300"]);
        assert.equal(r.code, 1, r.err);
        const holder = `data dir ${dir} is in use by pid ${up.child.pid} \\(peloton up, started [^)]+\\)`;
        assert.match(r.err, new RegExp(`^peloton ${role}: ${holder}$`));
      }
      assert.deepEqual(listing(dir), before, "the refused daemons touched nothing");
      const query = await cli(up.url, "job", "query", "-j");
      assert.equal(query.code, 0, query.err);
      assert.deepEqual(JSON.parse(query.out).results, []);
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("peloton up and a daemon on a data dir that cannot be made or an address that is none: one line, exit 1; on a port fetch refuses, exit 2", async () => {
  const file = await Deno.makeTempFile({ prefix: "not_a_dir_" });
  try {
    for (const role of ["up", "jobmgr"]) {
      const r = await cli(NOWHERE, role, "--port", "0", "--data-dir", `${file}/x`);
      assert.equal(r.code, 1, r.err);
      assert.match(r.err, new RegExp(`^peloton ${role}: data dir ${file}/x cannot be used: Not a directory`));
    }
    const dir = await Deno.makeTempDir({ prefix: "bad_host_" });
    const r = await cli(NOWHERE, "up", "--port", "0", "--host", "999.1.1.1", "--data-dir", dir);
    await Deno.remove(dir, { recursive: true });
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /^peloton up: cannot listen on 999\.1\.1\.1:0: /);
    // A port fetch refuses to connect to: the CLI could not reach the server it would start.
    for (const role of ["up", "jobmgr", "minicluster"]) {
      const blocked = await cli(NOWHERE, role, "--port", "6000", "--data-dir", `${file}/x`);
      assert.equal(blocked.code, 2, blocked.err);
      assert.match(
        blocked.err,
        new RegExp(`^peloton ${role}: --port: got 6000, a port browsers and fetch refuse`),
      );
    }
  } finally {
    await Deno.remove(file);
  }
});
