/** Production on MySQL: `peloton up --store mysql://...`, and the separate daemons across a MySQL crash. */
import assert from "node:assert/strict";
import { createConnection } from "mysql2/promise";
import { dropMysqlDatabase, parseMysqlUrl, redact } from "./store/mysql_dialect.ts";
import { batchJobYaml, DaemonCluster, PrivateMariaDb, testDatabaseUrl } from "./testing_cluster.ts";
import {
  cli,
  createDefaultPool,
  ROOT,
  runPeloton,
  startPeloton,
  startUp,
  type UpProcess,
  waitFor,
  waitForJobState,
} from "./testing.ts";

Deno.test({
  name: "peloton up --store mysql://: the schema is made, a job runs, and a restart finds it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-up-mysql-" });
    const store = testDatabaseUrl("up");
    let up = await startUp(dir, ["--store", store]);
    try {
      await createDefaultPool(up.url);
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

/**
 * Runs `peloton up` until it exits or reports that it serves (a refusal expected, an old build that serves
 * anyway); one that serves is stopped, and its code reported as "served".
 */
async function upUntilExit(args: string[]): Promise<{ code: number | "served"; output: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/prod/cli/main.ts`, "up", ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const served = waitFor(
    "the second up to serve",
    () => Promise.resolve(/API at/.test(output) || undefined),
    60_000,
  );
  const result = await Promise.race([child.status.then((s) => s.code), served.then(() => "served" as const)]);
  if (result === "served") child.kill("SIGINT");
  await child.status;
  await pumps;
  return { code: result, output: output.trim() };
}

/** What the store holds of the job and its task, for "the refused process touched nothing". */
async function storedJob(url: string, jobId: string): Promise<unknown[]> {
  const conn = await createConnection({ ...parseMysqlUrl(url) });
  try {
    const [jobs] = await conn.query("SELECT state, goal_state, version FROM jobs WHERE job_id = ?", [jobId]);
    const [tasks] = await conn.query("SELECT instance_id, version, record FROM tasks WHERE job_id = ?", [
      jobId,
    ]);
    const [events] = await conn.query("SELECT COUNT(*) AS n FROM task_events WHERE job_id = ?", [jobId]);
    return [jobs, tasks, events];
  } finally {
    await conn.end();
  }
}

Deno.test({
  name:
    "peloton up --store mysql://: a second up on the database is refused, the first goes on, kill -9 frees it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-up-claim-" });
    const store = testDatabaseUrl("claim");
    const first = await startUp(`${dir}/a`, ["--store", store, "--agents", "1"]);
    let next: UpProcess | undefined;
    try {
      await createDefaultPool(first.url);
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, batchJobYaml("claim", 1, "sleep 600"));
      const created = await cli(first.url, "job", "create", "/DefaultResPool", file);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];
      assert.equal(await waitForJobState(first.url, jobId, ["RUNNING"]), "RUNNING");
      // Its rows once the first process has stored the job RUNNING and writes no more (the API answers
      // before the write lands): what the refused processes must leave as they are.
      let last = "";
      const before = await waitFor("the RUNNING job to be stored, and nothing more", async () => {
        const rows = await storedJob(store, jobId);
        const [[job]] = rows as { state: string }[][];
        const now = JSON.stringify(rows);
        const settled = job?.state === "RUNNING" && now === last;
        last = now;
        if (!settled) await new Promise((resolve) => setTimeout(resolve, 300));
        return settled ? rows : undefined;
      });

      // Another data dir, the same database: refused before it reads or writes anything.
      const second = await upUntilExit([
        "--port",
        "0",
        "--data-dir",
        `${dir}/b`,
        "--agents",
        "1",
        "--store",
        store,
      ]);
      assert.equal(second.code, 1, second.output);
      const holder = `pid ${first.child.pid} on \\S+ \\(peloton up at ${first.url}, started [^)]+\\)`;
      const named = new RegExp(
        `^peloton up: store ${redact(store).replace(/[.$]/g, "\\$&")} is in use by ${holder}$`,
      );
      assert.match(second.output, named);
      // A separately started daemon may not join it either.
      const jobmgr = await runPeloton(["jobmgr", "--port", "0", "--data-dir", `${dir}/j`, "--store", store]);
      assert.equal(jobmgr.code, 1, jobmgr.err);
      assert.match(jobmgr.err, new RegExp(named.source.replace("^peloton up:", "^peloton jobmgr:")));
      assert.deepEqual(await storedJob(store, jobId), before, "a refused process wrote to the store");

      // The first still owns the store: its stop is stored.
      const stop = await cli(first.url, "job", "stop", jobId);
      assert.equal(stop.code, 0, stop.err);
      assert.equal(await waitForJobState(first.url, jobId, ["KILLED"]), "KILLED");
      await waitFor("the stop to be stored", async () => {
        const [jobs] = await storedJob(store, jobId) as { state: string; goal_state: string }[][];
        return jobs[0].state === "KILLED" && jobs[0].goal_state === "KILLED" ? true : undefined;
      });

      // Killed, it frees the store at once (the server drops its lock with its connection).
      first.child.kill("SIGKILL");
      await first.stop();
      const started = Date.now();
      next = await startUp(`${dir}/c`, ["--store", store, "--agents", "1"]);
      assert.ok(Date.now() - started < 20_000, `the next up took ${Date.now() - started} ms to start`);
      assert.equal(await waitForJobState(next.url, jobId, ["KILLED"]), "KILLED");
    } finally {
      await first.stop();
      await next?.stop();
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
      await createDefaultPool(url);
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
