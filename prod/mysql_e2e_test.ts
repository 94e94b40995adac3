/** Production on MySQL: `peloton up --store mysql://...`, and the separate daemons across a MySQL crash. */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { batchJobYaml, DaemonCluster, PrivateMariaDb, testDatabaseUrl } from "./testing_cluster.ts";
import { cli, ROOT, startPeloton, startUp, waitFor, waitForJobState } from "./testing.ts";

const POOL = `${ROOT}/scenarios/jobs/default_respool.yaml`;

Deno.test({
  name: "peloton up --store mysql://: the schema is made, a job runs, and a restart finds it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-up-mysql-" });
    const store = testDatabaseUrl("up");
    let up = await startUp(dir, ["--store", store]);
    try {
      assert.equal((await cli(up.url, "respool", "create", "/DefaultResPool", POOL)).code, 0);
      const r = await cli(up.url, "job", "create", "/DefaultResPool", `${ROOT}/scenarios/jobs/testjob.yaml`);
      const jobId = /^Job (\S+) created$/.exec(r.out)![1];
      assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");
      assert.equal((await up.stop()).code, 0);
      up = await startUp(dir, ["--store", store]);
      assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED"]), "SUCCEEDED");
      const list = JSON.parse((await cli(up.url, "task", "list", jobId, "-j")).out).result.value;
      assert.equal(Object.keys(list).length, 10);
    } finally {
      await up.stop();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "MySQL crash: SIGKILLed and restarted during a job, the daemons wait it out and nothing is lost",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-mysql-crash-" });
    const db = await PrivateMariaDb.create(`${dir}/mariadb`);
    const ranLog = `${dir}/ran.log`;
    const master = await startPeloton(
      [
        "minicluster",
        "--port",
        "0",
        "--agents",
        "3",
        "--agent-cpus",
        "3",
        "--data-dir",
        `${dir}/master`,
        "--status-retry-ms",
        "1000",
        "--max-completed-tasks",
        "2000",
      ],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    // Leases outlive the outage, so the daemons wait for the database instead of stepping down.
    const cluster = new DaemonCluster(db.url, `${dir}/peloton`, 15_000, {
      hostmgr: ["--backend", "mesos", "--mesos-master", master.url],
    });
    try {
      for (const name of ["resmgr", "hostmgr", "placement", "jobmgr"]) await cluster.start(name);
      const url = cluster.url("jobmgr");
      assert.equal((await cli(url, "respool", "create", "/DefaultResPool", POOL)).code, 0);
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(
        file,
        batchJobYaml("mysql", 400, `echo $PELOTON_INSTANCE_ID >> ${ranLog}; sleep 0.5`),
      );
      const created = await cli(url, "job", "create", "/DefaultResPool", file);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];
      await waitFor("100 tasks to succeed", async () => {
        const r = await cli(url, "job", "status", jobId, "-j");
        return r.code === 0 && (JSON.parse(r.out).taskStats.SUCCEEDED ?? 0) >= 100 ? true : undefined;
      }, 60_000);
      await db.kill();
      await new Promise((r) => setTimeout(r, 1500));
      await db.start();
      assert.equal(await waitForJobState(url, jobId, ["SUCCEEDED", "FAILED", "KILLED"], 90_000), "SUCCEEDED");
      const ran = new Set((await Deno.readTextFile(ranLog)).trim().split("\n").map(Number));
      for (let i = 0; i < 400; i++) assert.ok(ran.has(i), `instance ${i} never ran`);
      assert.match(cluster.output("jobmgr"), /Store unreachable, retrying writes/, "the outage was seen");
      // A fresh job manager (the old one SIGKILLed) comes to the same answer. Task writes still being
      // retried when it died are not lost: their status updates were never acknowledged, so the
      // backend delivers them again and the new job manager stores them.
      await cluster.restart("jobmgr");
      await waitFor("the restarted job manager to count 400 SUCCEEDED", async () => {
        const r = await cli(cluster.url("jobmgr"), "job", "status", jobId, "-j");
        return r.code === 0 && JSON.parse(r.out).taskStats.SUCCEEDED === 400 ? true : undefined;
      }, 60_000);
    } catch (err) {
      console.error(cluster.tail(15));
      throw err;
    } finally {
      await cluster.stopAll();
      await master.stop();
      await db.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
