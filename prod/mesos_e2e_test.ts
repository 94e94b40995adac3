/**
 * `peloton up --backend mesos` against `peloton minicluster`, the project's emulator of the documented
 * Mesos v1 protocol (verified against that emulator; set MESOS_MASTER_URL to run against a real master).
 */
import assert from "node:assert/strict";
import {
  cli,
  createDefaultPool,
  createJob,
  ROOT,
  startPeloton,
  startUp,
  waitFor,
  waitForJobState,
} from "./testing.ts";
import { startTestMaster } from "./mesos/_testing.ts";

const JOBS = `${ROOT}/scenarios/jobs`;

Deno.test({
  name:
    "peloton up --backend mesos: Peloton's example job runs to SUCCEEDED, updates acknowledged after processing",
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-mesos-" });
    const real = Deno.env.get("MESOS_MASTER_URL");
    const master = real ? undefined : await startPeloton(
      ["minicluster", "--port", "0", "--agents", "3", "--data-dir", `${dataDir}/master`],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const up = await startUp(`${dataDir}/peloton`, [
      "--backend",
      "mesos",
      "--mesos-master",
      real ?? master!.url,
    ]);
    try {
      await createDefaultPool(up.url);
      const job = /^Job (\S+) created$/.exec(
        (await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/testjob.yaml`)).out,
      )![1];
      assert.equal(
        await waitForJobState(up.url, job, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
        "SUCCEEDED",
      );
      const failing = /^Job (\S+) created$/.exec(
        (await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/failing_job.yaml`)).out,
      )![1];
      assert.equal(
        await waitForJobState(up.url, failing, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
        "FAILED",
      );
      if (!real) {
        assert.equal((await cli(up.url, "task", "logs", job, "3")).out, `Job ${job} instance 3: ${job}-3`);
      }
      // The emulator's agents, not a real master's: it would need Docker and this machine's files.
      if (!real) {
        // Peloton's HelloWorld: a Docker container whose env parameters the command reads (two instances,
        // no sleep). Its ContainerInfo goes to the master; the emulator's agents run the command on the host
        // with those parameters as its environment, and say so first in its stderr.
        const file = `${dataDir}/helloworld_job.yaml`;
        const hello =
          (await Deno.readTextFile(`${ROOT}/core/model/testdata/peloton/example/helloworld_job.yaml`))
            .replace("instancecount: 10", "instancecount: 2").replace("SLEEP_SECONDS=300", "SLEEP_SECONDS=0");
        await Deno.writeTextFile(file, hello);
        const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
        const helloJob = /^Job (\S+) created$/.exec(created.out)?.[1];
        assert.ok(helloJob, created.err);
        assert.equal(
          await waitForJobState(up.url, helloJob, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
          "SUCCEEDED",
        );
        assert.equal((await cli(up.url, "task", "logs", helloJob, "1")).out, "HelloWorld");
        assert.equal(
          (await cli(up.url, "task", "logs", helloJob, "1", "-f", "stderr")).out,
          "minicluster: no container runtime here: image debian is not used, the command runs on the host " +
            "with the container's env parameters",
        );
        // A command's URIs go with it to the agent, whose fetcher puts them in the sandbox first.
        await Deno.writeTextFile(`${dataDir}/greeting.txt`, "fetched hello");
        await Deno.writeTextFile(
          `${dataDir}/fetch_job.yaml`,
          `name: fetch
owningteam: team6
instancecount: 1
sla: { priority: 1, preemptible: true }
defaultconfig:
  resource: { cpulimit: 0.1, memlimitmb: 16, disklimitmb: 10 }
  command:
    shell: true
    value: cat greeting.txt
    uris:
      - value: file://${dataDir}/greeting.txt
        executable: false
`,
        );
        const fetchJob = /^Job (\S+) created$/.exec(
          (await cli(up.url, "job", "create", "/DefaultResPool", `${dataDir}/fetch_job.yaml`)).out,
        )![1];
        assert.equal(
          await waitForJobState(up.url, fetchJob, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
          "SUCCEEDED",
        );
        assert.equal((await cli(up.url, "task", "logs", fetchJob, "0")).out, "fetched hello");
      }
    } finally {
      await up.stop();
      await master?.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

/** Calls the master's operator API. */
async function operator(url: string, type: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/api/v1`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ type }),
  });
  return (await res.json())[type.toLowerCase()];
}

async function hostState(url: string, host: string): Promise<string | undefined> {
  const r = await cli(url, "host", "query", "-j");
  // `unavailable` while its hosts register (the master's first offers): not known yet.
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.out).hostInfos as { hostname: string; state: string }[]).find((h) =>
    h.hostname === host
  )
    ?.state;
}

Deno.test({
  name: "peloton host maintenance with --backend mesos: the master's schedule, machine down, machine up",
  sanitizeResources: false,
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-mesos-maint-" });
    const master = await startPeloton(
      ["minicluster", "--port", "0", "--agents", "2", "--data-dir", `${dataDir}/master`],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const up = await startUp(`${dataDir}/peloton`, ["--backend", "mesos", "--mesos-master", master.url]);
    try {
      await waitFor(
        "both hosts",
        async () => (await hostState(up.url, "agent-1")) === "HOST_STATE_UP" || undefined,
      );
      assert.equal((await cli(up.url, "host", "maintenance", "start", "agent-0")).code, 0);
      // No tasks there: DRAINED at once, so the machine goes down at the master and its agent leaves.
      await waitFor("agent-0 down at the master", async () => {
        const status = (await operator(master.url, "GET_MAINTENANCE_STATUS")).status as {
          down_machines?: { hostname: string }[];
        };
        return status.down_machines?.some((m) => m.hostname === "agent-0") || undefined;
      });
      await waitFor(
        "agent-0 DOWN in Peloton",
        async () => (await hostState(up.url, "agent-0")) === "HOST_STATE_DOWN" || undefined,
      );
      assert.equal((await cli(up.url, "host", "maintenance", "complete", "agent-0")).code, 0);
      await waitFor("agent-0 up at the master", async () => {
        const status = (await operator(master.url, "GET_MAINTENANCE_STATUS")).status as {
          down_machines?: unknown[];
          draining_machines?: unknown[];
        };
        const schedule = (await operator(master.url, "GET_MAINTENANCE_SCHEDULE")).schedule as {
          windows?: unknown[];
        };
        return !status.down_machines?.length && !status.draining_machines?.length &&
            !schedule.windows?.length ||
          undefined;
      });
      // Its agent registers again and the host takes work.
      await waitFor("agent-0 back with offers", async () => {
        const r = await cli(up.url, "host", "query", "-j");
        const h = (JSON.parse(r.out).hostInfos as {
          hostname: string;
          state: string;
          resources: { free: { cpu: number } };
        }[])
          .find((x) => x.hostname === "agent-0");
        return h?.state === "HOST_STATE_UP" || undefined;
      });
      await createDefaultPool(up.url);
      const job = /^Job (\S+) created$/.exec(
        (await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/testjob.yaml`)).out,
      )![1];
      assert.equal(
        await waitForJobState(up.url, job, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
        "SUCCEEDED",
      );
    } finally {
      await up.stop();
      await master.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "peloton up --backend mesos with --mesos-principal and --mesos-secret-file: an authenticating master runs its job",
  sanitizeResources: false,
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-mesos-auth-" });
    // Not the default principal: the FrameworkInfo must name it too, or the master refuses the SUBSCRIBE.
    const credentials = { principal: "alice", secret: "a secret" };
    const master = await startTestMaster({ credentials: [credentials], agents: 3 });
    await Deno.writeTextFile(`${dataDir}/secret`, `${credentials.secret}\n`);
    const up = await startUp(`${dataDir}/peloton`, [
      "--backend",
      "mesos",
      "--mesos-master",
      master.url,
      "--mesos-principal",
      credentials.principal,
      "--mesos-secret-file",
      `${dataDir}/secret`,
    ]);
    try {
      await createDefaultPool(up.url);
      const job = await createJob(up.url, `${JOBS}/testjob.yaml`);
      assert.equal(
        await waitForJobState(up.url, job, ["SUCCEEDED", "FAILED", "KILLED"], 60_000),
        "SUCCEEDED",
      );
      // Through the agent's `/files`, which takes the credentials too.
      assert.equal((await cli(up.url, "task", "logs", job, "3")).out, `Job ${job} instance 3: ${job}-3`);
      const subscribe = master.calls.find((c) => (c as { type: string }).type === "SUBSCRIBE") as {
        subscribe: { framework_info: { principal: string } };
      };
      assert.equal(subscribe.subscribe.framework_info.principal, "alice");
      assert.doesNotMatch(up.output(), /a secret|401/);
    } finally {
      await up.stop();
      await master.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
