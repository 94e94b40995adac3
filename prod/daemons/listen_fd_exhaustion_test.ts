/**
 * A burst of connections past the open files limit does not take a server down: `peloton up` and a daemon,
 * started with few descriptors allowed, log that they cannot accept, serve again once the connections close,
 * and still stop gracefully.
 */
import assert from "node:assert/strict";
import { ROOT, waitFor } from "../testing.ts";
import { settlesWithin } from "../settle.ts";

/** Few enough that 200 idle connections exhaust them (a process starts with some 50 open). */
const OPEN_FILES = 128;

/** `peloton <args>` under `ulimit` (`-n OPEN_FILES`), until it prints its URL. */
async function startLimited(args: string[], ready: RegExp, ulimit = `ulimit -n ${OPEN_FILES}`) {
  const cmd = [Deno.execPath(), "run", "-A", `${ROOT}/prod/cli/main.ts`, ...args].map((a) => `'${a}'`);
  const child = new Deno.Command("sh", {
    args: ["-c", `${ulimit} && exec ${cmd.join(" ")}`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const decoder = new TextDecoder();
  const pumps = Promise.all([child.stdout, child.stderr].map(async (stream) => {
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  }));
  let exited = false;
  void child.status.then(() => (exited = true));
  const url = await waitFor(`peloton ${args[0]} to start`, () => {
    if (exited) throw new Error(`peloton ${args[0]} exited:\n${out}`);
    return Promise.resolve(ready.exec(out)?.[1]);
  }, 30_000);
  return { child, url, output: () => out, exited: () => exited, pumps };
}

/** Opens `n` TCP connections to `url` that send nothing, and holds them. */
async function idleConnections(url: string, n: number): Promise<Deno.TcpConn[]> {
  const port = Number(new URL(url).port);
  const conns: Deno.TcpConn[] = [];
  for (let i = 0; i < n; i++) {
    try {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      break; // the backlog full, or the listener being bound again: enough to exhaust it
    }
  }
  return conns;
}

async function burstThenServe(args: string[], ready: RegExp) {
  const server = await startLimited(args, ready);
  try {
    const conns = await idleConnections(server.url, 2 * OPEN_FILES);
    // The accept loop has hit the limit by now (each connection it took is a descriptor).
    await waitFor("the server to say it cannot accept", () => {
      if (server.exited()) throw new Error(`the server exited:\n${server.output()}`);
      return Promise.resolve(/cannot accept connections/.test(server.output()) || undefined);
    }, 10_000);
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed by the server */ }
    }
    await waitFor("the server to serve again", async () => {
      if (server.exited()) throw new Error(`the server exited:\n${server.output()}`);
      try {
        const res = await fetch(`${server.url}/health`);
        await res.body?.cancel();
        return res.status === 200 || undefined;
      } catch {
        return undefined;
      }
    }, 10_000);
    assert.match(server.output(), /"level":"error","msg":"cannot accept connections; listening again/);
    assert.match(server.output(), /Too many open files/);
    server.child.kill("SIGTERM");
    assert.ok(await settlesWithin(server.child.status, 20_000), server.output());
    assert.equal((await server.child.status).code, 0, server.output());
  } finally {
    if (!server.exited()) server.child.kill("SIGKILL");
    await server.child.status;
    await server.pumps;
  }
}

Deno.test("peloton up out of file descriptors under a burst of connections keeps serving", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-emfile-up-" });
  try {
    await burstThenServe(
      ["up", "--port", "0", "--agents", "1", "--data-dir", dir],
      /API at (http:\/\/[^\s]+)\/api\/v1/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a daemon out of file descriptors under a burst of connections keeps serving", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-emfile-daemon-" });
  try {
    await burstThenServe(
      ["resmgr", "--port", "0", "--data-dir", dir, "--lease-ttl-ms", "1000"],
      /serving at (http:\/\/\S+)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "a daemon raises its soft open files limit to the hard one at start",
  ignore: !hasPrlimit(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-nofile-" });
    const server = await startLimited(
      ["placement", "--port", "0", "--data-dir", dir, "--lease-ttl-ms", "1000"],
      /serving at (http:\/\/\S+)/,
      `ulimit -Sn ${OPEN_FILES} && ulimit -Hn ${OPEN_FILES * 4}`,
    );
    try {
      const limits = await Deno.readTextFile(`/proc/${server.child.pid}/limits`);
      assert.match(limits, new RegExp(`^Max open files\\s+${OPEN_FILES * 4}\\s+${OPEN_FILES * 4}\\s`, "m"));
      // Still below FEW_OPEN_FILES: said once at start.
      assert.match(server.output(), /"level":"warn","msg":"few open files allowed/);
    } finally {
      server.child.kill("SIGTERM");
      await server.child.status;
      await server.pumps;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

function hasPrlimit(): boolean {
  try {
    return new Deno.Command("prlimit", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}
