/**
 * A graceful stop of `peloton up` in the middle of a batch job, then a start on the same data dir: every
 * instance succeeds exactly once. The stop launches nothing once it began; a task that ends by itself while
 * the stop waits (here for a download left unread) is recorded, and so is one that ignores the stop's SIGTERM
 * and exits 0 before its kill grace ends; a task the stop kills runs again at the next start, as documented.
 */
import assert from "node:assert/strict";
import { jsonLogger } from "./log.ts";
import { type PelotonServer, startPeloton } from "./server.ts";
import { cli, createDefaultPool, createJob, waitFor, waitForJobState } from "./testing.ts";
import { batchJobYaml } from "./testing_cluster.ts";

/** One agent of 1 cpu: the wave job's 0.2-cpu tasks four at a time beside the two 0.1-cpu ones. */
const AGENT = { resources: { cpuMilli: 1000, memMb: 1024, diskMb: 1024, gpuMilli: 0 } };
const WAVE = 4;
/** Each wave task runs this long, ignoring SIGTERM as it does. */
const WAVE_S = 2;

function start(dataDir: string, lines: string[]): Promise<PelotonServer> {
  return startPeloton({
    dataDir,
    port: 0,
    agents: 1,
    agentOptions: [AGENT],
    log: jsonLogger({ daemon: "all" }, (l) => lines.push(l), "warn"),
  });
}

function taskOf(server: PelotonServer, jobId: string, instance: number) {
  return server.jobmgr.jobs.get(jobId)?.tasks.get(instance);
}

/** How many instances of the job are in `state`. */
function count(server: PelotonServer, jobId: string, state: string): number {
  return [...server.jobmgr.jobs.get(jobId)?.tasks.values() ?? []].filter((t) => t.state === state).length;
}

/** Each run's sandbox of the job's instances (`<job>-<instance>-<run>`): its stdout, by task id. */
async function sandboxes(dataDir: string, jobId: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const agents = `${dataDir}/minicluster/agents`;
  for await (const agent of Deno.readDir(agents)) {
    const tasks = `${agents}/${agent.name}/tasks`;
    for await (const t of Deno.readDir(tasks)) {
      if (!t.name.startsWith(`${jobId}-`)) continue;
      out.set(t.name, await Deno.readTextFile(`${tasks}/${t.name}/stdout`).catch(() => ""));
    }
  }
  return out;
}

/**
 * Holds the stop in its HTTP step: a download of a sandbox file too large for the sockets' buffers, left
 * unread, keeps the server's shutdown waiting (5 s at most) until `release`.
 */
async function downloadHeldOpen(url: string, taskId: string): Promise<{ release(): Promise<void> }> {
  const res = await fetch(`${url}/sandbox/${taskId}/stdout`);
  assert.equal(res.status, 200);
  return { release: () => res.body!.cancel() };
}

Deno.test("peloton up: a graceful restart during a batch job runs no instance twice", async () => {
  const dir = await Deno.makeTempDir({ prefix: "peloton-stop-once-" });
  const dataDir = `${dir}/data`;
  const lines: string[] = [];
  let server: PelotonServer | undefined = await start(dataDir, lines);
  try {
    await createDefaultPool(server.url);
    const create = async (name: string, yaml: string) => {
      await Deno.writeTextFile(`${dir}/${name}.yaml`, yaml);
      return await createJob(server!.url, `${dir}/${name}.yaml`);
    };
    const running = (jobId: string, n: number) =>
      waitFor(`${n} of job ${jobId} running`, () => {
        return Promise.resolve(count(server!, jobId, "RUNNING") === n || undefined);
      }, 20_000);
    // Its output is what the stop's download holds open.
    const big = await create(
      "big",
      batchJobYaml("big", 1, "head -c 33554432 /dev/zero").replace("disklimitmb: 1", "disklimitmb: 64"),
    );
    await waitFor("the big output", () => Promise.resolve(count(server!, big, "SUCCEEDED") || undefined));
    // Killed by the stop's SIGTERM: runs again at the next start.
    const killed = await create("killed", batchJobYaml("killed", 1, "sleep 600"));
    // Still running when the stop kills what is left; it ignores SIGTERM and exits 0 well within its grace.
    const late = await create("late", batchJobYaml("late", 1, `trap "" TERM; sleep 8; echo "done late"`));
    await running(killed, 1);
    await running(late, 1);
    // Twice the room left: one wave runs, the next waits for it.
    const waves = await create(
      "waves",
      batchJobYaml("waves", 2 * WAVE, `trap "" TERM; sleep ${WAVE_S}; echo "done $PELOTON_INSTANCE_ID"`, 0.2),
    );
    await running(waves, WAVE);

    const download = await downloadHeldOpen(server.url, `${big}-0-1`);
    const stopped = server.stop();
    const step = "shutting the HTTP server down";
    await waitFor(
      "the stop held by the download",
      () => Promise.resolve(server!.stopStep() === step || undefined),
    );
    // The first wave ends by itself while the stop waits; the second must not start meanwhile.
    await waitFor("the first wave to succeed", () => {
      return Promise.resolve(count(server!, waves, "SUCCEEDED") === WAVE || undefined);
    }, (WAVE_S + 2) * 1000);
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(server.stopStep(), step, "the stop is still held");
    await download.release();
    await stopped;
    server = undefined;
    assert.equal(
      (await sandboxes(dataDir, waves)).size,
      WAVE,
      "no wave task was launched once the stop began",
    );

    server = await start(dataDir, lines);
    await waitFor("the wave job to succeed", () => {
      return Promise.resolve(count(server!, waves, "SUCCEEDED") === 2 * WAVE || undefined);
    }, 20_000);
    const runs = await sandboxes(dataDir, waves);
    for (let i = 0; i < 2 * WAVE; i++) {
      const mine = [...runs].filter(([taskId]) => taskId.startsWith(`${waves}-${i}-`));
      const done = mine.flatMap(([, out]) => out.split("\n")).filter((l) => l === `done ${i}`);
      assert.equal(done.length, 1, `instance ${i} succeeded once`);
      assert.deepEqual(mine.map(([taskId]) => taskId), [`${waves}-${i}-1`], `instance ${i}'s runs`);
    }
    // Its exit 0 came after the stop's SIGTERM, and was stored: it does not run again.
    assert.equal(await waitForJobState(server.url, late, ["SUCCEEDED"], 1_000), "SUCCEEDED");
    const got = await cli(server.url, "task", "get", late, "0", "-j");
    const runtime = JSON.parse(got.out).result.runtime;
    assert.equal(runtime.mesosTaskId.value, `${late}-0-1`);
    assert.equal(
      runtime.message,
      "Minicluster stopped; Command exited with status 0",
      "it ended in the stop",
    );
    assert.deepEqual([...await sandboxes(dataDir, late)], [[`${late}-0-1`, "done late\n"]]);
    // The one the stop killed runs again, on a new run.
    await waitFor("the killed task's next run", () => {
      const t = taskOf(server!, killed, 0);
      return Promise.resolve(t?.runId === 2 && t.state === "RUNNING" || undefined);
    }, 20_000);
  } catch (e) {
    console.error(lines.join("\n"));
    throw e;
  } finally {
    await server?.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
