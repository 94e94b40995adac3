/**
 * A daemon whose store fails its own writes (its heartbeat) is unhealthy: /health answers 503 naming the
 * store and the error, the failure is logged at error level once it has lasted longer than a lease, and
 * /health is ok again once a heartbeat is stored.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { jsonLogger } from "../log.ts";
import { waitFor } from "../testing.ts";
import { startResmgr } from "./resmgr_daemon.ts";

const LEASE_TTL_MS = 600;

Deno.test({
  name:
    "a daemon whose heartbeat the store refuses answers /health 503 naming the store, until it is stored again",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-health-store-" });
    const logs: string[] = [];
    const d = await startResmgr({
      host: "127.0.0.1",
      port: 0,
      store: `sqlite:${dir}/peloton.sqlite`,
      dataDir: dir,
      leaseTtlMs: LEASE_TTL_MS,
      log: jsonLogger({ daemon: "resmgr" }, (l) => logs.push(l)),
    });
    const db = new DatabaseSync(`${dir}/peloton.sqlite`);
    // The daemon's own writes hold the file's lock now and then, and finish only on this thread's event
    // loop (its transactions span awaits): a DROP blocking here would wait on them for ever. It is tried
    // again instead, the loop turning in between.
    db.exec("PRAGMA busy_timeout = 0");
    const execWhenFree = async (statement: string) => {
      for (let tries = 0;; tries++) {
        try {
          return db.exec(statement);
        } catch (e) {
          if (tries > 500 || !/database is locked|busy/i.test(String(e))) throw e;
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    };
    const health = async () => {
      const res = await fetch(`${d.process.url}/health`);
      return { status: res.status, body: await res.json() };
    };
    try {
      assert.equal((await health()).status, 200);
      // The membership table goes, as a dropped database's tables do: every heartbeat fails from now on.
      // `all`, not `get`: a statement left mid-step would keep its read transaction open.
      const [{ sql }] = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'members'")
        .all() as { sql: string }[];
      await execWhenFree("DROP TABLE members");
      const sick = await waitFor("/health to say unhealthy", async () => {
        const h = await health();
        return h.status === 503 ? h.body : undefined;
      }, 5_000);
      assert.equal(sick.status, "unhealthy");
      assert.match(
        sick.problem,
        new RegExp(`^store sqlite:${dir}/peloton.sqlite fails: this process's heartbeat`),
      );
      assert.match(sick.problem, /no such table: members/);
      await waitFor("the failure logged at error level", () =>
        Promise.resolve(
          logs.some((l) => /"level":"error","msg":"heartbeat failed for longer than a lease/.test(l)) ||
            undefined,
        ), 5_000);

      await execWhenFree(sql);
      await waitFor(
        "/health to be ok again",
        async () => ((await health()).status === 200 || undefined),
        5_000,
      );
      assert.ok(logs.some((l) => /"msg":"heartbeat stored again"/.test(l)));
    } finally {
      db.close();
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
