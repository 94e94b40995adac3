/**
 * Workflows and host changes of daemons and rolling creates through `peloton up` with real processes: a
 * daemon's rolling update, a daemon left without a host, and the pods an aborted rolling create never reached.
 */
import assert from "node:assert/strict";
import { cli, ROOT, STATELESS_SPECS, type UpProcess, waitFor, waitForJobState, withUp } from "./testing.ts";

type Task = {
  instanceId: number;
  runtime: { state: string; host?: string; configVersion: number; message?: string };
};

async function tasks(url: string, job: string): Promise<Task[]> {
  const r = await cli(url, "task", "list", job, "-j");
  if (r.code !== 0) throw new Error(r.err);
  return (Object.values(JSON.parse(r.out).result?.value ?? {}) as Task[]).sort((a, b) =>
    a.instanceId - b.instanceId
  );
}

const allRunning = (list: Task[], n: number) =>
  list.length === n && list.every((t) => t.runtime.state === "RUNNING");

async function create(url: string, file: string): Promise<string> {
  const r = await cli(url, "job", "create", "/DefaultResPool", file);
  assert.equal(r.code, 0, r.err);
  return /^Job (\S+) created$/.exec(r.out)![1];
}

async function hostState(url: string, hostname: string): Promise<string | undefined> {
  const r = await cli(url, "host", "query", "-j");
  assert.equal(r.code, 0, r.err);
  return (JSON.parse(r.out).hostInfos as { hostname: string; state: string }[])
    .find((h) => h.hostname === hostname)?.state;
}

/** daemon.yaml pinned to one host by a hostname constraint, under its own name. */
async function pinnedDaemon(dir: string, hostname: string): Promise<string> {
  const file = `${dir}/pinned.yaml`;
  const daemon = await Deno.readTextFile(`${ROOT}/scenarios/jobs/daemon.yaml`);
  await Deno.writeTextFile(
    file,
    daemon.replace("name: node-agent", "name: pinned-agent").replace(
      "defaultConfig:\n",
      "defaultConfig:\n  constraint: {type: LABEL_CONSTRAINT, labelConstraint: {kind: HOST, " +
        `condition: CONDITION_EQUAL, label: {key: hostname, value: ${hostname}}, requirement: 1}}\n`,
    ),
  );
  return file;
}

Deno.test({
  name: "a daemon's rolling update rolls its instances in batches and keeps one per agent",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-daemon-update-", async (up: UpProcess, dir: string) => {
      const job = await create(up.url, `${ROOT}/scenarios/jobs/daemon.yaml`);
      await waitFor(
        "one instance per agent",
        async () => allRunning(await tasks(up.url, job), 3) || undefined,
      );
      const v2 = `${dir}/daemon_v2.yaml`;
      const daemon = await Deno.readTextFile(`${ROOT}/scenarios/jobs/daemon.yaml`);
      await Deno.writeTextFile(v2, daemon.replaceAll("agent on", "agent v2 on"));
      const created = await cli(up.url, "update", "create", job, v2, "1", "--min-running-seconds", "1");
      assert.equal(created.code, 0, created.err);
      const updateId = /^Update (\S+) created$/.exec(created.out)![1];
      let maxCurrent = 0;
      const info = await waitFor("the update to finish", async () => {
        const r = JSON.parse((await cli(up.url, "update", "get", updateId, "-j")).out).updateInfo;
        maxCurrent = Math.max(maxCurrent, r.status.instancesCurrent?.length ?? 0);
        return ["SUCCEEDED", "FAILED", "ABORTED"].includes(r.status.state) ? r : undefined;
      }, 60_000);
      // Before, it SUCCEEDED at once having removed all three, and left the job without instances.
      assert.equal(info.status.state, "SUCCEEDED");
      assert.deepEqual([info.status.numTasksDone, info.instancesRemoved ?? []], [3, []]);
      assert.equal(maxCurrent, 1, "one instance at a time");
      const list = await tasks(up.url, job);
      assert.ok(allRunning(list, 3));
      assert.deepEqual(list.map((t) => t.runtime.configVersion), [2, 2, 2]);
      assert.deepEqual(list.map((t) => t.runtime.host).sort(), ["agent-0", "agent-1", "agent-2"]);
      const got = JSON.parse((await cli(up.url, "job", "get", job, "-j")).out);
      assert.equal(got.jobInfo?.config?.instanceCount ?? got.config?.instanceCount, 3);
      assert.equal(await waitForJobState(up.url, job, ["RUNNING"]), "RUNNING");
      const logs = await waitFor("the new config's output", async () => {
        const out = (await cli(up.url, "task", "logs", job, "0")).out;
        return out.startsWith("agent v2 on") ? out : undefined;
      });
      assert.equal(logs, "agent v2 on agent-0");
    });
  },
});

Deno.test({
  name: "a daemon whose only host goes into maintenance waits PENDING and runs there again once it is back",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-daemon-host-", async (up: UpProcess, dir: string) => {
      const job = await create(up.url, await pinnedDaemon(dir, "agent-2"));
      await waitFor(
        "its instance on agent-2",
        async () => allRunning(await tasks(up.url, job), 1) || undefined,
      );
      assert.equal((await cli(up.url, "host", "maintenance", "start", "agent-2")).code, 0);
      await waitFor(
        "agent-2 DOWN",
        async () => (await hostState(up.url, "agent-2")) === "HOST_STATE_DOWN" || undefined,
      );
      await waitFor("its instance removed", async () => (await tasks(up.url, job)).length === 0 || undefined);
      // Before, it was KILLED for good.
      assert.equal(await waitForJobState(up.url, job, ["PENDING"]), "PENDING");
      assert.equal((await cli(up.url, "host", "maintenance", "complete", "agent-2")).code, 0);
      const [back] = await waitFor("an instance on agent-2 again", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 1) ? list : undefined;
      });
      assert.equal(back.runtime.host, "agent-2");
      assert.equal(await waitForJobState(up.url, job, ["RUNNING"]), "RUNNING");
    });
  },
});

Deno.test({
  name:
    "pods an aborted rolling create never reached stay unstarted through a refresh, until the job is started",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-aborted-create-", async (up: UpProcess) => {
      const r = await cli(
        up.url,
        "job",
        "stateless",
        "create",
        "/DefaultResPool",
        `${STATELESS_SPECS}/test_stateless_job_spec.yaml`,
        "1",
        "--start-paused",
      );
      assert.equal(r.code, 0, r.err);
      const job = /^Job (\S+) created/.exec(r.out)![1];
      const workflow = (verb: string) => cli(up.url, "job", "stateless", "workflow", verb, job);
      assert.equal((await workflow("resume")).code, 0);
      await waitFor(
        "pod 0 running",
        async () => (await tasks(up.url, job))[0]?.runtime.state === "RUNNING" || undefined,
      );
      assert.equal((await workflow("pause")).code, 0);
      assert.equal((await workflow("abort")).code, 0);
      assert.equal((await cli(up.url, "job", "stateless", "refresh", job)).code, 0);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const list = await tasks(up.url, job);
      // Before, the refresh launched them.
      assert.deepEqual(list.map((t) => t.runtime.state), ["RUNNING", "INITIALIZED", "INITIALIZED"]);
      assert.match(
        list[1].runtime.message ?? "",
        /^not started: the job's create workflow \S+ was aborted; start or update the job to run it$/,
      );
      assert.equal((await cli(up.url, "job", "stateless", "start", job)).code, 0);
      await waitFor("every pod running", async () => allRunning(await tasks(up.url, job), 3) || undefined);
    });
  },
});
