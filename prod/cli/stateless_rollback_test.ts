/** `peloton job stateless rollback` against `peloton up`: back to an earlier spec, and refusals that change nothing. */
import assert from "node:assert/strict";
import { cli, createStatelessJob, STATELESS_SPECS as SPECS, waitFor, withUp } from "../testing.ts";

Deno.test({
  name: "job stateless rollback: a rolling update to an earlier version's spec; bad arguments change nothing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-rollback-", async (up) => {
      const { job, version: first } = await createStatelessJob(up.url);
      const get = async (...extra: string[]) =>
        JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j", ...extra)).out);
      const version = async () => (await get("--summaryonly")).summary.status.version.value as string;
      const rollback = (...argv: string[]) => cli(up.url, "job", "stateless", "rollback", job, ...argv);

      // One config version only: nothing to roll back to, and nothing is started.
      const only = await rollback("1", first);
      assert.equal(only.code, 1, only.out);
      assert.equal(
        only.err,
        `peloton job stateless rollback: ENTITY-VERSION: got "${first}": job ${job} has no earlier ` +
          `configuration to roll back to (it is at config version 1, entity version ${first})`,
      );
      assert.equal(await version(), first);

      const replaced = await cli(
        up.url,
        "job",
        "stateless",
        "replace",
        job,
        `${SPECS}/test_update_stateless_job_spec.yaml`,
        "0",
        "--min-running-seconds",
        "0",
      );
      assert.equal(replaced.code, 0, replaced.err);
      const settled = (config: number) =>
        waitFor(`every pod running config ${config}`, async () => {
          const s = (await get()).jobInfo.status;
          if (s.workflowId !== undefined || s.podStats.POD_STATE_RUNNING !== 3) return undefined;
          const tasks = Object.values(
            JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value,
          ) as { runtime: { configVersion: number; state: string } }[];
          return tasks.every((t) => t.runtime.configVersion === config && t.runtime.state === "RUNNING")
            ? s.version.value as string
            : undefined;
        }, 60_000);
      const second = await settled(2);

      // Refused before anything is asked of the server, or after reading the job: each names the argument.
      const refusals: [string[], number, RegExp][] = [
        [["two", first], 2, /BATCH-SIZE: got "two", expected a whole number/],
        [["1", "v1"], 2, /ENTITY-VERSION: got "v1", expected an entity version CONFIG-DESIRED-WORKFLOW/],
        [["1", first, "--maxInstanceRetries", "x"], 2, /--maxInstanceRetries: got "x", expected a whole/],
        [
          ["1", second],
          1,
          new RegExp(
            `ENTITY-VERSION: got "${second}": config version 2 is the job's current one; job ${job} is at ` +
              `${second}, expected an entity version of config version 1 to 1$`,
          ),
        ],
        [["1", "9-1-1"], 1, /ENTITY-VERSION: got "9-1-1": config version 9 is not an earlier one/],
        [["1", "0-1-1"], 1, /ENTITY-VERSION: got "0-1-1": config version 0 is not an earlier one/],
      ];
      for (const [argv, code, message] of refusals) {
        const r = await rollback(...argv);
        assert.equal(r.code, code, `${argv.join(" ")}: ${r.out}`);
        assert.match(r.err, message, argv.join(" "));
      }
      const malformed = await cli(up.url, "job", "stateless", "rollback", "nope", "1", "1-1-1");
      assert.equal(malformed.code, 1);
      assert.match(malformed.err, /invalid-argument: jobId: got \{"value":"nope"\}, expected a job id/);
      const unknownId = "00000000-0000-4000-8000-000000000000";
      const unknown = await cli(up.url, "job", "stateless", "rollback", unknownId, "1", "1-1-1");
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, new RegExp(`not-found: job ${unknownId} not found`));
      assert.equal(await version(), second, "no refusal changed the job");
      assert.match(JSON.stringify((await get()).jobInfo.spec.defaultSpec), /echo updated/);

      // Back to the first spec: a new config version holding it, through a workflow with the flags given.
      const back = await rollback(
        "1",
        first,
        "--start-paused",
        "--maxInstanceRetries",
        "2",
        "--maxTolerableInstanceFailures",
        "1",
        "--min-running-seconds",
        "0",
      );
      assert.equal(back.code, 0, back.err);
      const [, newVersion] = /^Job \S+ rolling back to config version 1, new version (\S+)$/.exec(back.out)!;
      assert.match(newVersion, /^3-/);
      const [workflow] = JSON.parse(
        (await cli(up.url, "job", "stateless", "list-updates", job, "--limit", "1", "-j")).out,
      ).workflowInfos;
      assert.equal(workflow.status.state, "WORKFLOW_STATE_PAUSED");
      assert.deepEqual(workflow.updateSpec, {
        batchSize: 1,
        rollbackOnFailure: false,
        maxInstanceRetries: 2,
        maxTolerableInstanceFailures: 1,
        startPaused: true,
        inPlace: false,
        startPods: false,
      });
      const resumed = await cli(up.url, "job", "stateless", "workflow", "resume", job);
      assert.equal(resumed.code, 0, resumed.err);
      await settled(3);
      const spec = (v: string) => get("--jobversion", v).then((r) => r.jobInfo.spec);
      const { revision: _a, ...was } = await spec(first);
      const { revision: _b, ...now } = await spec(await version());
      assert.deepEqual(now, was, "config 3 is config 1's spec");
      await waitFor(
        "pod 0 running the first spec's command",
        async () => /running 3/.test((await cli(up.url, "task", "logs", job, "0")).out) || undefined,
      );
    });
  },
});
