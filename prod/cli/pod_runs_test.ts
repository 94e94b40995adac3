/** `pod events -r/-l`, `task events` and `pod get --limit` against a real `peloton up`: which runs they show. */
import assert from "node:assert/strict";
import { cli, createDefaultPool, startUp, waitFor } from "../testing.ts";
import { PelotonClient } from "./client.ts";

/** A batch task that fails three times (its `maxFailures`): three runs, the last one FAILED. */
const RETRIED = `name: Retried
instanceCount: 1
sla: { priority: 1 }
defaultConfig:
  resource: { cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10 }
  restartPolicy: { maxFailures: 3 }
  command: { shell: true, value: "exit 3" }
`;

/** The runs a `-j` answer of `task|pod events` holds events of, in order. */
function eventRuns(out: string): number[] {
  const result = JSON.parse(out).result as { taskId: { value: string } }[];
  const runs = result.map((e) => Number(e.taskId.value.split("-").at(-1)));
  return runs.filter((r, i) => runs[i - 1] !== r);
}

Deno.test({
  name: "pod events -r/-l, task events and pod get --limit pick a task's runs, as Peloton's CLI",
  sanitizeResources: false,
  async fn(t) {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-runs-" });
    const spec = `${dataDir}/retried.yaml`;
    await Deno.writeTextFile(spec, RETRIED);
    const up = await startUp(dataDir, ["--agents", "1"]);
    try {
      await createDefaultPool(up.url);
      const created = await cli(up.url, "job", "create", "/DefaultResPool", spec);
      assert.equal(created.code, 0, created.err);
      const job = /Job (\S+) created/.exec(created.out)![1];
      const run = (r: number) => `${job}-0-${r}`;
      // The task, not the job: the job may read FAILED for a moment between a failed run and its retry.
      await waitFor("the third run to fail", async () => {
        const r = await cli(up.url, "task", "get", job, "0", "-j");
        const runtime = r.code === 0 ? JSON.parse(r.out).result.runtime : undefined;
        return runtime?.mesosTaskId?.value === run(3) && runtime.state === "FAILED" ? true : undefined;
      });

      await t.step("pod events: every run by default, -l N the latest N, -r one run alone", async () => {
        const events = async (...flags: string[]) => {
          const r = await cli(up.url, "pod", "events", job, "0", "-j", ...flags);
          assert.equal(r.code, 0, r.err);
          return eventRuns(r.out);
        };
        assert.deepEqual(await events(), [3, 2, 1]);
        assert.deepEqual(await events("-l", "2"), [3, 2]);
        assert.deepEqual(await events("--limit", "0"), [3, 2, 1], "0 is Peloton's default, 10 runs");
        assert.deepEqual(await events("-r", run(2)), [2]);
        assert.deepEqual(await events("--run", run(1), "-l", "3"), [1], "a run named is that run alone");
        const table = await cli(up.url, "pod", "events", job, "0", "-r", run(3));
        assert.match(table.out, new RegExp(`\\|\\s*${run(3)}\\|\\s*FAILED\\|`));
        assert.doesNotMatch(table.out, new RegExp(run(2)));
        const task = await cli(up.url, "task", "events", job, "0", "-j");
        assert.deepEqual(eventRuns(task.out), [3, 2, 1], "task events: Peloton's, the latest 10 runs");
      });

      await t.step("pod get --limit N: N runs in all, the current one among them; 0 all", async () => {
        const runs = async (...flags: string[]) => {
          const r = await cli(up.url, "pod", "get", `${job}-0`, "--statusonly", "-j", ...flags);
          assert.equal(r.code, 0, r.err);
          const got = JSON.parse(r.out);
          return [got.current, ...got.previous].map((p) => p.status.podId.value);
        };
        assert.deepEqual(await runs(), [run(3), run(2), run(1)]);
        assert.deepEqual(await runs("--limit", "1"), [run(3)]);
        assert.deepEqual(await runs("--limit", "2"), [run(3), run(2)]);
        assert.deepEqual(await runs("--limit", "0"), [run(3), run(2), run(1)]);
        const table = await cli(up.url, "pod", "get", `${job}-0`, "--limit", "1");
        assert.equal(table.out.split("\n").length, 2, `a header and the current run:\n${table.out}`);
      });

      await t.step(
        "a bad --limit or --run is a usage error naming it; the server refuses them too",
        async () => {
          const usage: [string[], RegExp][] = [
            [["pod", "events", job, "0", "--limit=-1"], /--limit: got "-1", expected an integer >= 0/],
            [["pod", "events", job, "0", "-l", "all"], /--limit: got "all", expected an integer >= 0/],
            [
              ["pod", "events", job, "0", "-r", "2"],
              new RegExp(`--run: got "2", expected a run of ${job}-0: ${job}-0-RUN`),
            ],
            [
              ["pod", "events", job, "0", "-r", `${job}-1-2`],
              new RegExp(`--run: got "${job}-1-2", expected a run of`),
            ],
            [["pod", "get", `${job}-0`, "--limit", "1.5"], /--limit: got "1.5", expected an integer >= 0/],
          ];
          for (const [argv, message] of usage) {
            const r = await cli(up.url, ...argv);
            assert.equal(r.code, 2, `${argv.join(" ")}: ${r.out}`);
            assert.match(r.err, message);
          }
          const client = new PelotonClient({ url: up.url });
          const refused: [string, Record<string, unknown>, string][] = [
            [
              "peloton.api.task.TaskManager::GetPodEvents",
              { jobId: { value: job }, instanceId: 0, limit: -1 },
              "invalid-argument: limit: got -1, expected a whole number of runs from 0 to 9007199254740991 (0 for the default, 10)",
            ],
            [
              "peloton.api.task.TaskManager::GetPodEvents",
              { jobId: { value: job }, instanceId: 0, runId: "2" },
              `invalid-argument: runId: got "2", expected a run of ${job}-0: ${job}-0-RUN`,
            ],
            [
              "peloton.api.v1alpha.pod.svc.PodService::GetPod",
              { podName: { value: `${job}-0` }, limit: -1 },
              "invalid-argument: limit: got -1, expected a whole number of runs from 0 to 4294967295 (1 for the current run alone, 0 for all)",
            ],
          ];
          for (const [procedure, body, message] of refused) {
            await assert.rejects(client.call(procedure, body), (e: Error) => {
              assert.equal(e.message, `${procedure}: ${message}`);
              return true;
            });
          }
        },
      );
    } finally {
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
