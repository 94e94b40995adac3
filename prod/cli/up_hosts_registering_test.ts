/**
 * `peloton up` holds the host API while its hosts register, as a new host manager leader does: a Mesos
 * master that cannot be reached is told apart from a cluster without hosts.
 */
import assert from "node:assert/strict";
import { cli, startPeloton, startUp, type UpProcess, waitFor } from "../testing.ts";

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function health(url: string): Promise<{ code: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/health`);
  return { code: res.status, body: await res.json() };
}

Deno.test({
  name:
    "peloton up --backend mesos: the host API is unavailable, its hosts registering, until the master's come",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-up-registering-" });
    const masterPort = freePort();
    let up: UpProcess | undefined, master: UpProcess | undefined;
    try {
      // Nothing listens where the master should be.
      up = await startUp(`${dir}/peloton`, [
        "--backend",
        "mesos",
        "--mesos-master",
        `http://127.0.0.1:${masterPort}`,
      ]);
      const h = await health(up.url);
      assert.equal(h.code, 200);
      assert.deepEqual(h.body, { status: "ok", role: "all", hostsRegistering: true });
      const q = await cli(up.url, "host", "query");
      assert.equal(q.code, 1, q.out);
      assert.match(q.err, /unavailable: the host manager is taking over; its hosts are registering/);

      master = await startPeloton(
        ["minicluster", "--port", String(masterPort), "--agents", "2", "--data-dir", `${dir}/master`],
        /Mesos master emulator at (http:\/\/\S+) /,
      );
      const hosts = await waitFor("the master's hosts", async () => {
        const r = await cli(up!.url, "host", "query", "-j");
        if (r.code !== 0) {
          assert.match(r.err, /its hosts are registering/);
          return undefined;
        }
        return JSON.parse(r.out).hostInfos as unknown[];
      }, 60_000);
      assert.equal(hosts.length, 2);
      assert.deepEqual((await health(up.url)).body, { status: "ok", role: "all" });
    } catch (err) {
      console.error(up?.output());
      throw err;
    } finally {
      await up?.stop();
      await master?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "peloton up with its minicluster answers the host API at once: its agents register as it starts",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-up-registering-" });
    const up = await startUp(dir, ["--agents", "2"]);
    try {
      const q = await cli(up.url, "host", "query", "-j");
      assert.equal(q.code, 0, q.err);
      assert.equal(JSON.parse(q.out).hostInfos.length, 2);
      assert.deepEqual((await health(up.url)).body, { status: "ok", role: "all" });
    } finally {
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
