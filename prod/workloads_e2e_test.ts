/** Each workload type end to end through `peloton up` with real processes: services, updates, daemons, stateful. */
import assert from "node:assert/strict";
import { cli, createDefaultPool, ROOT, startUp, type UpProcess, waitFor } from "./testing.ts";

const JOBS = `${ROOT}/scenarios/jobs`;

type Task = {
  instanceId: number;
  runtime: { state: string; host?: string; mesosTaskId: { value: string }; configVersion: number };
};

async function tasks(url: string, job: string): Promise<Task[]> {
  const r = await cli(url, "task", "list", job, "-j");
  if (r.code !== 0) throw new Error(r.err);
  return (Object.values(JSON.parse(r.out).result.value) as Task[]).sort((a, b) =>
    a.instanceId - b.instanceId
  );
}

/**
 * An instance's stdout once it matches `pattern`. RUNNING comes when the process is started, which may be
 * before its shell has written its first line.
 */
function logsOf(url: string, job: string, instance: number, pattern: RegExp): Promise<string> {
  return waitFor(`${pattern} in the stdout of ${job}-${instance}`, async () => {
    const out = (await cli(url, "task", "logs", job, String(instance))).out;
    return pattern.test(out) ? out : undefined;
  });
}

function runId(t: Task): number {
  return Number(t.runtime.mesosTaskId.value.split("-").at(-1));
}

/** Runs `fn` against a fresh `peloton up` with a DefaultResPool, then stops it. */
async function withPeloton(fn: (up: UpProcess, dataDir: string) => Promise<void>, extra: string[] = []) {
  const dataDir = await Deno.makeTempDir({ prefix: "peloton-workloads-" });
  const up = await startUp(dataDir, ["--task-restart-backoff-ms", "200", ...extra]);
  try {
    await createDefaultPool(up.url);
    await fn(up, dataDir);
  } finally {
    await up.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}

async function create(url: string, file: string): Promise<string> {
  const r = await cli(url, "job", "create", "/DefaultResPool", `${JOBS}/${file}`);
  assert.equal(r.code, 0, r.err);
  return /^Job (\S+) created$/.exec(r.out)![1];
}

const allRunning = (list: Task[], n: number) =>
  list.length === n && list.every((t) => t.runtime.state === "RUNNING");

/** Kills processes whose command line carries `marker`, as an operator's `kill -9` would. */
async function killFromOutside(marker: string): Promise<void> {
  const r = await new Deno.Command("pkill", { args: ["-KILL", "-f", marker] }).output();
  assert.equal(r.code, 0, `no process matched ${marker}`);
}

Deno.test({
  name: "a service keeps running: an instance killed from outside is restarted",
  sanitizeResources: false,
  async fn() {
    await withPeloton(async (up) => {
      const job = await create(up.url, "service.yaml");
      await waitFor(
        "10 running instances",
        async () => allRunning(await tasks(up.url, job), 10) || undefined,
      );
      await killFromOutside("peloton-service-v1");
      const after = await waitFor("every instance running again in a new run", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 10) && list.every((t) => runId(t) === 2) ? list : undefined;
      });
      assert.equal(after.length, 10);
      const events = await cli(up.url, "task", "events", job, "0", "-j");
      const states = (JSON.parse(events.out).result as { actualState: string }[]).map((e) => e.actualState);
      assert.ok(states.includes("FAILED"), `the killed run ended FAILED: ${states}`);
      assert.equal(JSON.parse((await cli(up.url, "job", "status", job, "-j")).out).state, "RUNNING");
    });
  },
});

Deno.test({
  name: "a rolling update moves 10 instances in batches of 3, and a failing one rolls back",
  sanitizeResources: false,
  async fn() {
    await withPeloton(async (up) => {
      const job = await create(up.url, "service.yaml");
      await waitFor(
        "10 running instances",
        async () => allRunning(await tasks(up.url, job), 10) || undefined,
      );
      // Each batch counts as done after 1 s RUNNING (the default, 10 s, is for real services).
      const created = await cli(
        up.url,
        "update",
        "create",
        job,
        `${JOBS}/service_v2.yaml`,
        "3",
        "--min-running-seconds",
        "1",
      );
      assert.equal(created.code, 0, created.err);
      const updateId = /^Update (\S+) created$/.exec(created.out)![1];
      let maxCurrent = 0;
      const state = await waitFor("the update to finish", async () => {
        const r = JSON.parse((await cli(up.url, "update", "get", updateId, "-j")).out).updateInfo;
        maxCurrent = Math.max(maxCurrent, r.status.instancesCurrent?.length ?? 0);
        return ["SUCCEEDED", "FAILED", "ABORTED"].includes(r.status.state) ? r.status.state : undefined;
      }, 60_000);
      assert.equal(state, "SUCCEEDED");
      assert.ok(maxCurrent > 0 && maxCurrent <= 3, `at most 3 instances at a time, saw ${maxCurrent}`);
      const v2 = await tasks(up.url, job);
      assert.ok(allRunning(v2, 10));
      assert.ok(v2.every((t) => t.runtime.configVersion === 2));
      await logsOf(up.url, job, 9, /^v2 /);

      const bad = await cli(
        up.url,
        "update",
        "create",
        job,
        `${JOBS}/service_broken.yaml`,
        "3",
        "--maxattempts",
        "1",
        "--maxfailureInstances",
        "1",
        "--rollbackOnFailure",
        "--min-running-seconds",
        "1",
      );
      assert.equal(bad.code, 0, bad.err);
      const badId = /^Update (\S+) created$/.exec(bad.out)![1];
      const end = await waitFor("the failed update to roll back", async () => {
        const r = JSON.parse((await cli(up.url, "update", "get", badId, "-j")).out).updateInfo;
        return ["ROLLED_BACK", "FAILED", "SUCCEEDED"].includes(r.status.state) ? r.status.state : undefined;
      }, 60_000);
      assert.equal(end, "ROLLED_BACK");
      const back = await waitFor("all instances running v2 again", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 10) ? list : undefined;
      });
      for (const t of back) await logsOf(up.url, job, t.instanceId, /^v2 /);
      const list = JSON.parse((await cli(up.url, "update", "list", job, "-j")).out).updateInfo;
      assert.deepEqual(list.map((u: { status: { state: string } }) => u.status.state), [
        "ROLLED_BACK",
        "SUCCEEDED",
      ]);
    });
  },
});

Deno.test({
  name: "a daemon job runs on every agent and follows an agent added at runtime",
  sanitizeResources: false,
  async fn() {
    await withPeloton(async (up) => {
      const job = await create(up.url, "daemon.yaml");
      const three = await waitFor("one instance per agent", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 3) ? list : undefined;
      });
      assert.deepEqual(three.map((t) => t.runtime.host).sort(), ["agent-0", "agent-1", "agent-2"]);
      const added = await fetch(`${up.url}/admin/agents`, {
        method: "POST",
        body: JSON.stringify({ hostname: "agent-late", cpu: 2, attributes: { rack: "r9" } }),
      });
      assert.equal(added.status, 200, await added.clone().text());
      await added.body?.cancel();
      const four = await waitFor("an instance on the new agent", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 4) ? list : undefined;
      });
      assert.deepEqual(four.map((t) => t.runtime.host).sort(), [
        "agent-0",
        "agent-1",
        "agent-2",
        "agent-late",
      ]);
      const late = four.find((t) => t.runtime.host === "agent-late")!;
      assert.equal(await logsOf(up.url, job, late.instanceId, /^agent on /), "agent on agent-late");

      // agent-0 goes into maintenance: its instance is removed; task get says so, by its id, not by the count.
      const gone = String(four.find((t) => t.runtime.host === "agent-0")!.instanceId);
      assert.equal((await cli(up.url, "host", "maintenance", "start", "agent-0")).code, 0);
      await waitFor(
        "the instance on agent-0 removed",
        async () => (await tasks(up.url, job)).length === 3 || undefined,
      );
      for (const cmd of ["get", "logs"]) {
        const removed = await cli(up.url, "task", cmd, job, gone);
        assert.equal(removed.code, 1, removed.out);
        assert.match(
          removed.err,
          new RegExp(
            `instance ${gone} of job ${job} was removed when its host agent-0 left the daemon job's hosts`,
          ),
        );
      }
      const events = await cli(up.url, "task", "events", job, gone);
      assert.equal(events.code, 0, events.err);
      assert.match(events.out, /KILLED/, "its history is still there");
      assert.equal(
        (await cli(up.url, "task", "get", job, String(late.instanceId))).code,
        0,
        "id 3 of 3 instances",
      );
    });
  },
});

Deno.test({
  name: "a stateful task comes back to its host and finds its volume",
  sanitizeResources: false,
  async fn() {
    await withPeloton(async (up) => {
      const job = await create(up.url, "stateful.yaml");
      const [first] = await waitFor("the stateful task running", async () => {
        const list = await tasks(up.url, job);
        return allRunning(list, 1) ? list : undefined;
      });
      await logsOf(up.url, job, 0, /^runs: 1 on /);
      for (let run = 2; run <= 3; run++) {
        await killFromOutside("peloton-stateful");
        const [again] = await waitFor(`run ${run}`, async () => {
          const list = await tasks(up.url, job);
          return allRunning(list, 1) && runId(list[0]) === run ? list : undefined;
        });
        assert.equal(again.runtime.host, first.runtime.host, "back on the volume's host");
        assert.equal(
          await logsOf(up.url, job, 0, new RegExp(`^runs: ${run} on `)),
          `runs: ${run} on ${first.runtime.host}`,
        );
      }
      const vols = JSON.parse((await cli(up.url, "volume", "list", job, "-j")).out).volumes;
      assert.deepEqual(Object.values(vols).map((v) => (v as { hostname: string }).hostname), [
        first.runtime.host,
      ]);
    });
  },
});
