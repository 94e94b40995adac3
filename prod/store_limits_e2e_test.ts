/**
 * `peloton up` on MySQL with configs over the server's max_allowed_packet: a job update, a rolling update and
 * a create are refused as invalid, naming the size and the limit, and the scheduler keeps running; with the
 * database out of reach, `/health` says so.
 */
import assert from "node:assert/strict";
import { createConnection } from "mysql2/promise";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { batchJobYaml } from "./testing_cluster.ts";
import { Outage } from "./store/outage_testing.ts";
import { cli, createDefaultPool, createJob, ROOT, startUp, waitFor, waitForJobState } from "./testing.ts";

async function maxAllowedPacket(url: string): Promise<number> {
  const conn = await createConnection({ ...parseMysqlUrl(url), database: undefined });
  try {
    const [rows] = await conn.query("SELECT @@max_allowed_packet AS p");
    return Number((rows as { p: number }[])[0].p);
  } finally {
    await conn.end();
  }
}

Deno.test({
  name: "peloton up on MySQL: configs over max_allowed_packet are refused as invalid and up keeps running",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-store-limits-" });
    const u = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
    u.pathname = `/xfix_limits_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const store = u.href;
    const up = await startUp(`${dir}/up`, ["--store", store, "--agents", "1"]);
    try {
      await createDefaultPool(up.url);
      const packet = await maxAllowedPacket(store);
      const big = `description: '${"x".repeat(packet + 1024)}'\n`;
      const batch = `${dir}/batch.yaml`,
        bigBatch = `${dir}/big_batch.yaml`,
        bigService = `${dir}/big_service.yaml`;
      await Deno.writeTextFile(batch, batchJobYaml("limits", 1, "sleep 600"));
      await Deno.writeTextFile(bigBatch, batchJobYaml("limits", 2, "sleep 600") + big);
      const service = await Deno.readTextFile(`${ROOT}/scenarios/jobs/service.yaml`);
      await Deno.writeTextFile(bigService, service.replace(/^description:.*\n/m, "") + big);
      const tooLarge = new RegExp(
        `over its limit of \\d+ bytes for one row \\(MySQL's max_allowed_packet of ${packet}`,
      );

      const jobId = await createJob(up.url, batch);

      // JobManager.Update (a batch job's resize) with a config too large to store.
      const update = await cli(up.url, "job", "update", jobId, bigBatch);
      assert.notEqual(update.code, 0, update.out);
      assert.match(update.err, /invalid-argument|InvalidArgument|invalid argument/i);
      assert.match(update.err, tooLarge);
      assert.equal(await waitForJobState(up.url, jobId, ["RUNNING"]), "RUNNING");

      // A rolling update of a service to such a config.
      const serviceId = await createJob(up.url, `${ROOT}/scenarios/jobs/service.yaml`);
      const rolling = await cli(up.url, "update", "create", serviceId, bigService, "1");
      assert.notEqual(rolling.code, 0, rolling.out);
      assert.match(rolling.err, tooLarge);

      // A create: a definite refusal, with no advice to check for the job or retry.
      const bigCreate = await cli(up.url, "job", "create", "/DefaultResPool", bigBatch);
      assert.notEqual(bigCreate.code, 0, bigCreate.out);
      assert.match(bigCreate.err, tooLarge);
      assert.doesNotMatch(bigCreate.err, /may still be created/);

      // Still serving, and the jobs are as they were.
      const status = await cli(up.url, "job", "get", jobId, "-j");
      assert.equal(status.code, 0, status.err);
      const health = await fetch(`${up.url}/health`);
      assert.equal(health.status, 200, await health.text());
      assert.equal((await up.stop()).code, 0, "peloton up exited with an error");
    } finally {
      await up.stop();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "peloton up on MySQL: /health answers 503 naming the store while it is out of reach, ok once it is back",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-store-outage-" });
    const direct = new URL(Deno.env.get("PELOTON_TEST_MYSQL_URL") || "mysql://root@127.0.0.1:3306/");
    direct.pathname = `/xfix_outage_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const outage = new Outage(parseMysqlUrl(direct.href));
    const via = new URL(direct.href);
    via.hostname = "127.0.0.1";
    via.port = String(outage.port);
    via.search = "?connectTimeout=1000";
    const up = await startUp(`${dir}/up`, ["--store", via.href, "--agents", "1"]);
    const health = async () => {
      const r = await fetch(`${up.url}/health`);
      return { status: r.status, body: await r.json() as { status: string; problem?: string } };
    };
    try {
      await createDefaultPool(up.url);
      assert.equal((await health()).status, 200);
      outage.down();
      // A write waits for the store; its first attempt finds it out of reach.
      const batch = `${dir}/batch.yaml`;
      await Deno.writeTextFile(batch, batchJobYaml("outage", 1, "sleep 600"));
      const create = cli(up.url, "-t", "60s", "job", "create", "/DefaultResPool", batch);
      const down = await waitFor("/health to report the store", async () => {
        const h = await health();
        return h.status === 503 ? h : undefined;
      });
      assert.equal(down.body.status, "unhealthy");
      assert.match(down.body.problem ?? "", /^the store cannot be reached: /);
      outage.up();
      const created = await create;
      assert.equal(created.code, 0, created.err);
      await waitFor("/health to be ok again", async () => (await health()).status === 200 || undefined);
    } catch (err) {
      console.error(up.output());
      throw err;
    } finally {
      outage.up();
      await up.stop();
      outage.down();
      await dropMysqlDatabase(parseMysqlUrl(direct.href)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
