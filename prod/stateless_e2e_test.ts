/** Peloton's v1alpha stateless job commands end to end through `peloton up`, with its integration-test spec files. */
import assert from "node:assert/strict";
import { PelotonClient } from "./cli/client.ts";
import { cli, ROOT, waitFor, withUp } from "./testing.ts";

const SPECS = `${ROOT}/core/model/testdata/peloton/tests/integration/test_configs`;
Deno.test({
  name: "job stateless create / get / replace / restart / stop with Peloton's own spec files",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-stateless-", async (up) => {
      const created = await cli(
        up.url,
        "job",
        "stateless",
        "create",
        "/DefaultResPool",
        `${SPECS}/test_stateless_job_spec.yaml`,
        "2",
      );
      assert.equal(created.code, 0, created.err);
      const [, job, version] = /^Job (\S+) created, version (\S+)$/.exec(created.out)!;
      assert.equal(version, "1-1-1", "config 1, desired state 1, one workflow (the batched start)");
      const status = async () =>
        JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out).jobInfo.status;
      await waitFor(
        "3 running pods",
        async () => (await status()).podStats.POD_STATE_RUNNING === 3 || undefined,
      );
      assert.equal((await status()).state, "JOB_STATE_RUNNING");

      // A stale entity version is refused, given in Peloton's form (JOB SPEC BATCH-SIZE RESPOOL VERSION) or ours.
      for (const given of [["/DefaultResPool", "9-9-9"], ["9-9-9"]]) {
        const stale = await cli(
          up.url,
          "job",
          "stateless",
          "replace",
          job,
          `${SPECS}/test_update_stateless_job_spec.yaml`,
          "1",
          ...given,
        );
        assert.equal(stale.code, 1, `${given.join(" ")}: ${stale.err}`);
        assert.match(stale.err, /unexpected entity version: got 9-9-9/);
      }

      const replaced = await cli(
        up.url,
        "job",
        "stateless",
        "replace",
        job,
        `${SPECS}/test_update_stateless_job_spec.yaml`,
        "1",
        "--min-running-seconds",
        "1",
      );
      assert.equal(replaced.code, 0, replaced.err);
      await waitFor("the replace workflow to finish", async () => {
        const s = await status();
        return s.workflowId === undefined && s.podStats.POD_STATE_RUNNING === 3 ? true : undefined;
      }, 60_000);
      const list = JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value;
      for (const t of Object.values(list) as { runtime: { configVersion: number } }[]) {
        assert.equal(t.runtime.configVersion, 2);
      }
      assert.match((await cli(up.url, "task", "logs", job, "0")).out, /updated/);
      // The replace's steps on pod 0, newest first, in Peloton's `workflow events` table.
      const steps = await cli(up.url, "job", "stateless", "workflow", "events", job, "0");
      assert.equal(steps.code, 0, steps.err);
      assert.deepEqual(
        steps.out.split("\n").map((line) => line.split("|").map((c) => c.trim()).slice(0, 2)),
        [
          ["Workflow State", "Workflow Type"],
          ["WORKFLOW_STATE_SUCCEEDED", "WORKFLOW_TYPE_UPDATE"],
          ["WORKFLOW_STATE_ROLLING_FORWARD", "WORKFLOW_TYPE_UPDATE"],
          ["WORKFLOW_STATE_INITIALIZED", "WORKFLOW_TYPE_UPDATE"],
        ],
      );
      const newest = JSON.parse(
        (await cli(up.url, "job", "stateless", "workflow", "events", job, "2", "--limit", "1", "-j")).out,
      );
      assert.deepEqual(newest.events.map((e: { state: string }) => e.state), ["WORKFLOW_STATE_SUCCEEDED"]);
      // Every workflow of the job, newest first, with its pods' events: the replace, then the create's start.
      type Info = {
        status: { type: unknown };
        instanceEvents: { instanceId: number; events: { state: string }[] }[];
      };
      const infos: Info[] = JSON.parse(
        (await cli(up.url, "job", "stateless", "list-updates", job, "--instance-events", "-j")).out,
      ).workflowInfos;
      // The create's rolling start is Peloton's RollingCreate, an UPDATE too.
      assert.deepEqual(infos.map((w) => w.status.type), ["WORKFLOW_TYPE_UPDATE", "WORKFLOW_TYPE_UPDATE"]);
      assert.deepEqual(
        infos[0].instanceEvents.map((i) => [i.instanceId, i.events[0].state]),
        [0, 1, 2].map((i) => [i, "WORKFLOW_STATE_SUCCEEDED"]),
      );
      // The start had taken pod 2 and was waiting for it to stay up when the replace aborted it.
      assert.deepEqual(
        infos[1].instanceEvents.map((i) => [i.instanceId, i.events.at(-1)!.state]),
        [0, 1, 2].map((i) => [i, "WORKFLOW_STATE_INITIALIZED"]),
      );
      const listed = await cli(up.url, "job", "stateless", "list-updates", job, "--limit", "1");
      assert.match(listed.out, /^Index 0:\nworkflowId:\n.*\nstatus:\n {2}type: WORKFLOW_TYPE_UPDATE\n/);
      assert.doesNotMatch(listed.out, /Index 1:|instanceEvents/);
      const unknown = await cli(
        up.url,
        "job",
        "stateless",
        "workflow",
        "events",
        "00000000-0000-4000-8000-000000000000",
        "0",
      );
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, /not-found: job 00000000-0000-4000-8000-000000000000 not found/);
      // The v1alpha pod API over HTTP: the pod's current run, on the new config, and the run before it.
      const client = new PelotonClient({ url: up.url });
      const got = await client.call<{ current: { status: Record<string, unknown> }; previous: unknown[] }>(
        "peloton.api.v1alpha.pod.svc.PodService::GetPod",
        { podName: { value: `${job}-0` }, statusOnly: true },
      );
      assert.equal(got.current.status.state, "POD_STATE_RUNNING");
      assert.deepEqual(got.current.status.version, { value: "2-0-0" });
      assert.ok(got.previous.length >= 1, "the run before the replace");
      const before = got.previous[got.previous.length - 1] as { status: Record<string, unknown> };
      assert.deepEqual(before.status.version, { value: "1-0-0" }, "the first run ran config 1");
      // The same through Peloton's `pod` commands.
      const name = `${job}-0`;
      const table = await cli(up.url, "pod", "get", name, "--statusonly");
      assert.equal(table.code, 0, table.err);
      assert.match(table.out.split("\n")[1], new RegExp(`${name}-\\d+\\|\\s+POD_STATE_RUNNING\\|`));
      assert.match((await cli(up.url, "pod", "logs", name)).out, /updated/);
      assert.match((await cli(up.url, "pod", "logs", name, "--id", `${name}-1`)).out, /running 3/);
      // With -j, JSON like every other command's.
      const logs = JSON.parse((await cli(up.url, "-j", "pod", "logs", name)).out);
      assert.deepEqual([logs.podName, logs.file], [name, "stdout"]);
      assert.match(logs.data, /updated/);
      const taskLogs = JSON.parse((await cli(up.url, "-j", "task", "logs", job, "0")).out);
      assert.deepEqual([taskLogs.file, typeof taskLogs.taskId], ["stdout", "string"]);
      assert.match(taskLogs.data, /updated/);
      assert.match((await cli(up.url, "pod", "events-v1alpha", name)).out, /POD_STATE_RUNNING/);
      // What replacing with the first spec again would do: update the 3 pods now on the second.
      const diff = await cli(
        up.url,
        "job",
        "stateless",
        "replace-diff",
        job,
        `${SPECS}/test_stateless_job_spec.yaml`,
      );
      assert.equal(diff.code, 0, diff.err);
      assert.equal(diff.out, "added: none\nremoved: none\nupdated: 0-2\nunchanged: none");
      const cached = JSON.parse((await cli(up.url, "job", "stateless", "cache", job)).out);
      assert.equal(cached.status.state, "JOB_STATE_RUNNING");
      assert.equal(
        (await cli(up.url, "job", "stateless", "refresh", job)).out,
        `Job ${job}: refresh requested`,
      );
      const pods = await cli(up.url, "job", "stateless", "list-pods", job);
      assert.equal(pods.code, 0, pods.err);
      assert.equal(pods.out.split("\n").length, 4, `a header and 3 pods:\n${pods.out}`);
      const running = await cli(up.url, "pod", "query", job, "-s", "RUNNING", "-n", "2");
      assert.equal(running.code, 0, running.err);
      assert.match(running.out, /\npods 1-2 of 3$/);
      const backwards = await cli(up.url, "pod", "query", job, "--sort", "instanceId", "-a", "DESC", "-j");
      assert.deepEqual(
        JSON.parse(backwards.out).pods.map((p: { status: { podId: { value: string } } }) =>
          p.status.podId.value
        ),
        [2, 1, 0].map((i) => `${job}-${i}-2`),
        backwards.err,
      );
      const deleted = await cli(up.url, "pod", "delete-events", name, `${name}-1`);
      assert.equal(deleted.out, `Pod ${name}: events of runs up to ${name}-1 deleted`, deleted.err);
      const firstEvents = await cli(up.url, "pod", "events-v1alpha", name, "--id", `${name}-1`, "-j");
      assert.deepEqual(JSON.parse(firstEvents.out).events, []);
      assert.equal((await cli(up.url, "pod", "restart", name)).out, `Pod ${name}: restart requested`);
      const bad = await cli(up.url, "pod", "get", "nope");
      assert.equal(bad.code, 2);
      assert.match(bad.err, /NAME: got "nope", expected a pod name <jobId>-<instanceId>/);
      // Peloton's TASKID argument: an earlier run's sandbox, here the first run's, before the replace.
      const first = await cli(up.url, "task", "logs", job, "0", `${job}-0-1`);
      assert.equal(first.code, 0, first.err);
      assert.match(first.out, /running 3/);
      assert.doesNotMatch(first.out, /updated/);
      const wrong = await cli(up.url, "task", "logs", job, "0", `${job}-1-1`);
      assert.equal(wrong.code, 1);
      assert.match(wrong.err, new RegExp(`taskId: got "${job}-1-1", expected a run of ${job}-0`));

      const restart = await cli(up.url, "job", "stateless", "restart", job, "--batch-size", "1");
      assert.equal(restart.code, 0, restart.err);
      await waitFor("every pod in its next run", async () => {
        const tasks = Object.values(
          JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value,
        ) as {
          runtime: { state: string; mesosTaskId: { value: string } };
        }[];
        return tasks.every((t) =>
            t.runtime.state === "RUNNING" && Number(t.runtime.mesosTaskId.value.split("-").at(-1)) >= 3
          )
          ? true
          : undefined;
      }, 60_000);

      assert.equal((await cli(up.url, "job", "stateless", "stop", job)).code, 0);
      await waitFor(
        "the job to be killed",
        async () => (await status()).state === "JOB_STATE_KILLED" || undefined,
      );
      const del = await cli(up.url, "job", "stateless", "delete", job);
      assert.equal(del.code, 0, del.err);
      const gone = await cli(up.url, "job", "get", job);
      assert.equal(gone.code, 1);
      assert.match(gone.err, /not found/);
    });
  },
});
