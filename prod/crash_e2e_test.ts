/**
 * Crash recovery: the four daemons as separate processes on MySQL (the CI's MariaDB) against the
 * minicluster (`peloton minicluster`, an emulator of the documented Mesos protocol); each daemon is
 * SIGKILLed in turn during a 1,000-task batch job and started again.
 */
import assert from "node:assert/strict";
import { dropMysqlDatabase, parseMysqlUrl } from "./store/mysql_dialect.ts";
import { batchJobYaml, DaemonCluster, testDatabaseUrl } from "./testing_cluster.ts";
import { cli, createDefaultPool, startPeloton, waitFor } from "./testing.ts";

const TASKS = 1000;

/** Task counts by state, through whichever job manager serves now. */
async function stats(cluster: DaemonCluster, jobId: string): Promise<Record<string, number>> {
  const r = await cli(cluster.url("jobmgr"), "job", "status", jobId, "-j");
  return r.code === 0 ? JSON.parse(r.out).taskStats ?? {} : {};
}

Deno.test({
  name:
    "crash recovery: each daemon SIGKILLed in turn during a 1,000-task job; the job completes, nothing lost",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-crash-" });
    const store = testDatabaseUrl("crash");
    const ranLog = `${dir}/ran.log`;
    const master = await startPeloton(
      [
        "minicluster",
        "--port",
        "0",
        "--agents",
        "4",
        "--agent-cpus",
        "3",
        "--data-dir",
        `${dir}/master`,
        "--heartbeat-seconds",
        "1",
        "--status-retry-ms",
        "1000",
        "--max-completed-tasks",
        "5000",
      ],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const cluster = new DaemonCluster(store, `${dir}/peloton`, 3000, {
      hostmgr: ["--backend", "mesos", "--mesos-master", master.url],
    });
    try {
      for (const name of ["resmgr", "hostmgr", "placement", "jobmgr"]) await cluster.start(name);
      await createDefaultPool(cluster.url("jobmgr"));
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(
        file,
        batchJobYaml("crash", TASKS, `echo $PELOTON_INSTANCE_ID $PELOTON_TASK_ID >> ${ranLog}; sleep 1`),
      );
      const created = await cli(cluster.url("jobmgr"), "job", "create", "/DefaultResPool", file);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];

      // Kill each daemon in turn once the job has made some progress since the last restart.
      let done = 0;
      const accepted: string[] = [];
      for (const name of ["jobmgr", "resmgr", "hostmgr", "placement"]) {
        const target = Math.min(TASKS - 100, done + 120);
        done = await waitFor(`${target} tasks to succeed before killing ${name}`, async () => {
          const n = (await stats(cluster, jobId)).SUCCEEDED ?? 0;
          return n >= target ? n : undefined;
        }, 90_000);
        await cluster.kill(name);
        // A job created while a daemon is down is accepted (or refused), never lost once accepted.
        const small = `${dir}/small-${name}.yaml`;
        await Deno.writeTextFile(small, batchJobYaml(`small-${name}`, 3, "true"));
        if (name !== "jobmgr") {
          const r = await cli(cluster.url("jobmgr"), "job", "create", "/DefaultResPool", small);
          if (r.code === 0) accepted.push(/^Job (\S+) created$/.exec(r.out)![1]);
        }
        await cluster.start(name);
      }

      let last: unknown;
      const final = await waitFor("the job to finish", async () => {
        const r = await cli(cluster.url("jobmgr"), "job", "status", jobId, "-j");
        const rt = r.code === 0 ? JSON.parse(r.out) : undefined;
        last = rt?.taskStats;
        return ["SUCCEEDED", "FAILED", "KILLED"].includes(rt?.state) ? rt : undefined;
      }, 150_000).catch((err) => {
        throw new Error(`${err.message}; tasks: ${JSON.stringify(last)}`);
      });
      assert.equal(final.state, "SUCCEEDED", JSON.stringify(final));
      assert.equal(final.taskStats.SUCCEEDED, TASKS);

      // Every instance ran at least once.
      const ran = new Set(
        (await Deno.readTextFile(ranLog)).trim().split("\n").map((l) => Number(l.split(" ")[0])),
      );
      for (let i = 0; i < TASKS; i++) assert.ok(ran.has(i), `instance ${i} never ran`);

      // Nothing accepted is lost: jobs created while daemons were down ran too.
      assert.ok(accepted.length >= 2, `only ${accepted.length} jobs were accepted while daemons were down`);
      for (const id of accepted) {
        await waitFor(`job ${id} to succeed`, async () => {
          const r = await cli(cluster.url("jobmgr"), "job", "status", id, "-j");
          return r.code === 0 && JSON.parse(r.out).state === "SUCCEEDED" ? true : undefined;
        }, 60_000);
      }

      // States agree with the backend: the run Peloton records as succeeded is FINISHED at the master,
      // and nothing of ours still runs there.
      const tasks = await masterTasks(master.url);
      const list = await cli(cluster.url("jobmgr"), "task", "list", jobId, "-j");
      const records = Object.values(JSON.parse(list.out).result.value) as {
        runtime: { state: string; mesosTaskId: { value: string } };
      }[];
      assert.equal(records.length, TASKS);
      for (const t of records) {
        const id = t.runtime.mesosTaskId.value;
        assert.equal(tasks.get(id), "TASK_FINISHED", `${id} is ${tasks.get(id)} at the master`);
      }
      const live = [...tasks].filter(([, s]) =>
        ["TASK_RUNNING", "TASK_STAGING", "TASK_STARTING"].includes(s)
      );
      assert.deepEqual(live, [], "tasks still running at the master");
    } catch (err) {
      console.error(cluster.tail());
      for (const name of ["resmgr", "hostmgr", "jobmgr"]) {
        const m = await (await fetch(`${cluster.url(name)}/metrics`)).text().catch(() => "");
        console.error(
          `--- ${name} metrics\n${
            m.split("\n").filter((l) => /^peloton_(resmgr|hostmgr|jobmgr)/.test(l)).join("\n")
          }`,
        );
      }
      throw err;
    } finally {
      await cluster.stopAll();
      await master.stop();
      await dropMysqlDatabase(parseMysqlUrl(store)).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

/** Every task the master knows, by id, with its latest state (operator GET_TASKS). */
async function masterTasks(url: string): Promise<Map<string, string>> {
  const res = await fetch(`${url}/api/v1`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ type: "GET_TASKS" }),
  });
  const body = await res.json();
  const out = new Map<string, string>();
  const t = body.get_tasks ?? {};
  for (const list of [t.tasks, t.completed_tasks, t.unreachable_tasks, t.orphan_tasks]) {
    for (const task of list ?? []) out.set(task.task_id.value, task.state);
  }
  return out;
}
