import assert from "node:assert/strict";
import { isAlive } from "./backend_testing.ts";
import {
  cli,
  createDefaultPool,
  ROOT,
  runPeloton,
  startUp,
  waitFor,
  waitForJobState,
  withUp,
} from "./testing.ts";

const JOB = `${ROOT}/scenarios/jobs/testjob.yaml`;
const FAILING = `${ROOT}/scenarios/jobs/failing_job.yaml`;
const POOL = `${ROOT}/scenarios/jobs/default_respool.yaml`;

Deno.test({
  name: "peloton up: Peloton's example job runs to SUCCEEDED with real processes, survives a restart",
  sanitizeResources: false,
  async fn(t) {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-up-" });
    let up = await startUp(dataDir);
    let jobId = "", failedId = "";
    try {
      await t.step("respool create and job create print Peloton's messages", async () => {
        const pool = await cli(up.url, "respool", "create", "/DefaultResPool", POOL);
        assert.equal(pool.code, 0, pool.err);
        assert.match(pool.out, /^Resource Pool [0-9a-f-]{36} created at \/DefaultResPool$/);
        const job = await cli(up.url, "job", "create", "/DefaultResPool", JOB);
        assert.equal(job.code, 0, job.err);
        jobId = /^Job ([0-9a-f-]{36}) created$/.exec(job.out)![1];
      });

      await t.step(
        "the job succeeds; every task ran as a process with PELOTON_* in its environment",
        async () => {
          assert.equal(await waitForJobState(up.url, jobId, ["SUCCEEDED", "FAILED", "KILLED"]), "SUCCEEDED");
          const list = await cli(up.url, "task", "list", jobId, "-j");
          const tasks = Object.values(JSON.parse(list.out).result.value) as {
            runtime: { state: string; host: string };
          }[];
          assert.equal(tasks.length, 10);
          for (const task of tasks) {
            assert.equal(task.runtime.state, "SUCCEEDED");
            assert.match(task.runtime.host, /^agent-\d$/);
          }
          const logs = await cli(up.url, "task", "logs", jobId, "3");
          assert.equal(logs.code, 0, logs.err);
          assert.equal(logs.out, `Job ${jobId} instance 3: ${jobId}-3`);
          const table = await cli(up.url, "task", "list", jobId);
          assert.match(table.out.split("\n")[0], /Instance\|.*State\|.*Task ID\|.*Host\|/);
          assert.match(table.out, /controller0\|.*SUCCEEDED/);
        },
      );

      await t.step("a job whose command exits non-zero ends FAILED with the exit code", async () => {
        const job = await cli(up.url, "job", "create", "/DefaultResPool", FAILING);
        failedId = /^Job (\S+) created$/.exec(job.out)![1];
        assert.equal(await waitForJobState(up.url, failedId, ["SUCCEEDED", "FAILED", "KILLED"]), "FAILED");
        const task = await cli(up.url, "task", "get", failedId, "0", "-j");
        const runtime = JSON.parse(task.out).result.runtime;
        assert.equal(runtime.state, "FAILED");
        assert.deepEqual(runtime.terminationStatus, {
          reason: "TERMINATION_STATUS_REASON_FAILED",
          exitCode: 3,
        });
        assert.equal(runtime.message, "Command exited with status 3");
      });

      await t.step("the seeds' curl form (Rpc-Service + JobManager.Get) is answered", async () => {
        const res = await fetch(`${up.url}/api/v1`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "Rpc-Procedure": "JobManager.Get",
            "Rpc-Service": "peloton-jobmgr",
            "Rpc-Caller": "peloton-client",
            "Context-TTL-MS": "1000",
            "Rpc-Encoding": "json",
          },
          body: JSON.stringify({ id: { value: jobId } }),
        });
        assert.equal(res.status, 200);
        const body = await res.json();
        assert.equal(body.jobInfo.runtime.state, "SUCCEEDED");
        assert.equal(body.jobInfo.config.name, "TestPelotonJob_123");
      });

      await t.step(
        "after a stop and a start on the same data dir, finished jobs and tasks are still listed",
        async () => {
          const status = await up.stop();
          assert.equal(status.code, 0, up.output());
          up = await startUp(dataDir);
          const job = await cli(up.url, "job", "status", jobId, "-j");
          assert.equal(JSON.parse(job.out).state, "SUCCEEDED");
          const list = await cli(up.url, "task", "list", jobId, "-j");
          const tasks = Object.values(JSON.parse(list.out).result.value) as { runtime: { state: string } }[];
          assert.equal(tasks.length, 10);
          assert.ok(tasks.every((t) => t.runtime.state === "SUCCEEDED"));
          assert.equal(JSON.parse((await cli(up.url, "job", "status", failedId, "-j")).out).state, "FAILED");
          assert.equal((await cli(up.url, "task", "logs", jobId, "0")).out, "Hello instance 0");
          const pools = await cli(up.url, "respool", "dump", "--format", "json");
          assert.match(pools.out, /"\/DefaultResPool"/);
        },
      );
    } finally {
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "peloton up: bad input gets a clear error and creates nothing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-up-", async (up) => {
      const bad = await Deno.makeTempFile({ suffix: ".yaml" });
      await Deno.writeTextFile(
        bad,
        "name: x\ninstanceCount: 2\ndefaultConfig:\n  resource:\n    cpuLimit: lots\n  command:\n    value: echo\n",
      );
      const r = await cli(up.url, "job", "create", "/DefaultResPool", bad);
      assert.equal(r.code, 1);
      assert.match(r.err, new RegExp(`${bad}:5: defaultConfig\\.resource\\.cpuLimit: got "lots", expected`));
      const missingPool = await cli(up.url, "job", "create", "/NoSuchPool", JOB);
      assert.equal(missingPool.code, 1);
      assert.match(missingPool.err, /NoSuchPool/);
      // The raw API rejects an invalid config in Peloton's in-body error shape, and stores nothing.
      const res = await fetch(`${up.url}/api/v1`, {
        method: "POST",
        headers: { "Rpc-Procedure": "peloton.api.job.JobManager::Create" },
        body: JSON.stringify({ config: { name: "x", instanceCount: -1 } }),
      });
      const body = await res.json();
      assert.ok(body.error?.invalidConfig?.message, JSON.stringify(body));
      const query = await fetch(`${up.url}/api/v1`, {
        method: "POST",
        headers: { "Rpc-Procedure": "peloton.api.job.JobManager::Query" },
        body: "{}",
      });
      assert.deepEqual((await query.json()).records, []);
      const unknown = await fetch(`${up.url}/api/v1`, {
        method: "POST",
        headers: { "Rpc-Procedure": "Nope::Nope" },
        body: "{}",
      });
      assert.equal(unknown.status, 501);
      assert.equal(unknown.headers.get("rpc-error-code"), "unimplemented");
      assert.equal(await unknown.text(), "unknown procedure Nope::Nope\n");
      await Deno.remove(bad);
    });
  },
});

Deno.test({
  name: "peloton up --agents-file: each agent's resources and attributes, visible through host query",
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-up-" });
    const agents = `${dataDir}/agents.yaml`;
    await Deno.writeTextFile(
      agents,
      "- {cpu: 2, memoryMb: 4096, attributes: {rack: r1, zone: a}}\n- {hostname: big, cpu: 8, memoryMb: 16384, attributes: {rack: r2}}\n",
    );
    const up = await startUp(dataDir, ["--agents-file", agents]);
    try {
      const r = await cli(up.url, "host", "query", "-j");
      const hosts = JSON.parse(r.out).hostInfos as {
        hostname: string;
        labels: unknown[];
        resources: { total: { cpuLimit: number } };
      }[];
      assert.deepEqual(hosts.map((h) => [h.hostname, h.resources.total.cpuLimit]), [["agent-0", 2], [
        "big",
        8,
      ]]);
      assert.deepEqual(hosts[0].labels.filter((l) => (l as { key: string }).key !== "host_pool"), [
        { key: "rack", value: "r1" },
        { key: "zone", value: "a" },
      ]);
      const bad = await cli(up.url, "host", "query", "-s", "HOST_STATE_NOPE");
      assert.equal(bad.code, 1);
      assert.match(bad.err, /hostStates: got "HOST_STATE_NOPE", expected one of/);
      // A field by its proto name (`host_states`, as a hand-written call may send it) is read as protobuf's
      // JSON parser reads it: the filter applies, rather than every host coming back.
      const query = async (body: unknown) => {
        const res = await fetch(`${up.url}/api/v1`, {
          method: "POST",
          headers: { "rpc-procedure": "peloton.api.v0.host.svc.HostService::QueryHosts" },
          body: JSON.stringify(body),
        });
        return ((await res.json()).hostInfos as unknown[]).length;
      };
      assert.equal(await query({}), 2);
      assert.equal(await query({ host_states: ["HOST_STATE_DRAINING"] }), 0);
      assert.equal(await query({ host_states: ["HOST_STATE_UP"] }), 2);
    } finally {
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

/** Task id to pid of every task process the server's minicluster has recorded (and not yet reaped). */
function taskProcesses(dataDir: string): Record<string, number> {
  const found: Record<string, number> = {};
  const agents = `${dataDir}/minicluster/agents`;
  for (const agent of Deno.readDirSync(agents)) {
    try {
      for (const task of Deno.readDirSync(`${agents}/${agent.name}/processes`)) {
        found[task.name] =
          JSON.parse(Deno.readTextFileSync(`${agents}/${agent.name}/processes/${task.name}`)).pid;
      }
    } catch { /* an agent without tasks */ }
  }
  return found;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

Deno.test({
  name: "peloton up: one live server per data dir; a second is refused, a crashed one's dir is taken over",
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-up-" });
    const spare = await Deno.makeTempDir({ prefix: "peloton-up-spare-" });
    const service = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(
      service,
      "name: sleepers\ntype: SERVICE\ninstanceCount: 4\ndefaultConfig:\n" +
        "  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 1}\n  command: {value: sleep 300}\n",
    );
    let up = await startUp(dataDir, ["--agents", "2"]);
    try {
      await createDefaultPool(up.url);
      const jobId =
        /^Job (\S+) created$/.exec((await cli(up.url, "job", "create", "/DefaultResPool", service)).out)![1];
      assert.equal(await waitForJobState(up.url, jobId, ["RUNNING"]), "RUNNING");
      const running = await waitFor("4 task processes", () => {
        const found = taskProcesses(dataDir);
        return Promise.resolve(Object.keys(found).length === 4 ? found : undefined);
      });
      const pids = Object.values(running);

      // The same command again, and again on a free port: refused in one line, naming the live server.
      const port = new URL(up.url).port;
      for (const p of [port, "0"]) {
        const again = await runPeloton(["up", "--port", p, "--data-dir", dataDir, "--agents", "2"]);
        assert.equal(again.code, 1, again.err);
        const dir = escape(dataDir), pid = up.child.pid;
        const holder = `data dir ${dir} is in use by pid ${pid} \\(peloton up, started [^)]+\\)`;
        assert.match(again.err, new RegExp(`^peloton up: ${holder}$`));
      }
      // Nothing was touched: the same processes run the same tasks, and the job runs on.
      assert.deepEqual(taskProcesses(dataDir), running);
      assert.deepEqual(pids.filter(isAlive), pids);
      assert.equal(JSON.parse((await cli(up.url, "job", "status", jobId, "-j")).out).state, "RUNNING");

      // A taken port: one line, and the data dir it would have used is left as it was (no owner, no store).
      const busy = await runPeloton(["up", "--port", port, "--data-dir", spare]);
      assert.equal(busy.code, 1, busy.err);
      assert.equal(
        busy.err,
        `peloton up: port ${port} on 127.0.0.1 is already in use; pick another with --port`,
      );
      assert.deepEqual([...Deno.readDirSync(spare)], []);

      // kill -9: its tasks run on as orphans, and the restart on the dir takes it over and ends them.
      up.child.kill("SIGKILL");
      await up.stop();
      assert.deepEqual(pids.filter(isAlive), pids);
      up = await startUp(dataDir, ["--agents", "2"]);
      await waitFor(
        "the crashed server's tasks to end",
        () => Promise.resolve(pids.some(isAlive) ? undefined : true),
      );
      assert.equal((await up.stop()).code, 0, up.output());
      assert.throws(
        () => Deno.statSync(`${dataDir}/owner`),
        Deno.errors.NotFound,
        "a stopped server holds its dir",
      );
    } finally {
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
      await Deno.remove(spare, { recursive: true });
      await Deno.remove(service);
    }
  },
});
