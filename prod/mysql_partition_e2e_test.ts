/** Production on MySQL across a network partition: the database stops answering, with no reset to notice. */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { PartitionProxy } from "./store/partition_proxy.ts";
import { testDatabaseUrl } from "./testing_cluster.ts";
import { cli, createDefaultPool, ROOT, startUp, type UpProcess, waitForJobState } from "./testing.ts";

Deno.test({
  name: "peloton up whose MySQL is partitioned away answers reads unavailable, stops when told to, exits 1 " +
    "naming the write it lost, and a restart finds the job it had accepted",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-partition-" });
    const store = testDatabaseUrl("partition");
    const target = parseMysqlUrl(store);
    const proxy = new PartitionProxy(target);
    const via = new URL(store);
    via.hostname = "127.0.0.1";
    via.port = String(proxy.port);
    via.search = "?statementTimeout=1000&connectTimeout=1000";
    let up: UpProcess | undefined = await startUp(dir, ["--store", via.href]);
    try {
      await createDefaultPool(up.url);
      const create = async () => {
        const r = await cli(
          up!.url,
          "job",
          "create",
          "/DefaultResPool",
          `${ROOT}/scenarios/jobs/testjob.yaml`,
        );
        assert.equal(r.code, 0, r.err);
        return /^Job (\S+) created$/.exec(r.out)![1];
      };
      const done = await create();
      assert.equal(await waitForJobState(up.url, done, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");

      // A read of what only the store holds fails as unavailable (HTTP 503, a call a client may make again),
      // not internal, and not a call that waits for good: once its statement goes unanswered (or, if the
      // job's last writes were still on their way, once the call times out waiting for them).
      await new Promise((r) => setTimeout(r, 500));
      proxy.partition();
      const events = await cli(up.url, "task", "events", done, "0");
      assert.equal(events.code, 1, events.out);
      assert.match(events.err, /GetPodEvents: unavailable: /, events.err);

      // New connections get through again; the old ones stay cut off.
      proxy.heal();
      const jobId = await create();
      // The job's tasks go on changing state, and their writes find no database. Without a bound on a
      // statement the stop waits on the first of them for good (the harness kills it at 30 s and fails).
      proxy.partition();
      await new Promise((r) => setTimeout(r, 500));
      const status = await up.stop();
      const output = up.output();
      up = undefined;
      assert.equal(status.code, 1, output);
      assert.match(output, /^peloton up: stopped, but a store write failed: /m, output);

      // The partition ends (the proxy's connections close, as the server's would time out) and `up` starts
      // again on the database: the job it answered for is there.
      await proxy.close();
      up = await startUp(dir, ["--store", store]);
      const got = await cli(up.url, "job", "get", jobId, "-j");
      assert.equal(got.code, 0, got.err);
    } finally {
      await up?.stop();
      await proxy.close();
      await dropMysqlDatabase(target).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
