/** `peloton job stateless patch` against `peloton up`: a merge patch becomes a rolling update; bad ones change nothing. */
import assert from "node:assert/strict";
import { cli, createStatelessJob, waitFor, withUp } from "../testing.ts";

Deno.test({
  name:
    "job stateless patch: only the fields given change, through a rolling update; bad patches change nothing",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-patch-", async (up, dataDir) => {
      const { job, version: first } = await createStatelessJob(up.url);
      const get = async () => JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out);
      const before = (await get()).jobInfo.spec;
      const patch = (body: string, ...argv: string[]) =>
        Deno.writeTextFile(`${dataDir}/patch.yaml`, body).then(() =>
          cli(up.url, "job", "stateless", "patch", job, `${dataDir}/patch.yaml`, ...argv)
        );

      const refusals: [string, string[], number, RegExp][] = [
        ["- 1\n", ["0"], 1, /patch\.yaml: expected the spec fields to change, as a mapping$/],
        ["instanceCount: 4\n", ["two"], 2, /BATCH-SIZE: got "two", expected a whole number/],
        ["instanceCount: -1\n", ["0"], 1, /spec: instanceCount: got -1, expected a whole number, at least 1/],
        ["instanceCount: 4\n", ["0", "9-1-0"], 1, /9-1-0/],
        // Unknown keys alone would make a new version identical to the last.
        [
          "bogusTop: 1\n",
          ["0"],
          1,
          /^warning: \S+patch\.yaml:1: bogusTop: unknown key, ignored \(known keys: name, [^\n]*\npeloton job stateless patch: \S+patch\.yaml: changes no field of a stateless job spec \(unknown keys, ignored: bogusTop\); expected at least one of its fields/,
        ],
        [
          "defaultSpec:\n  bogus: 1\nelse: null\n",
          ["0"],
          1,
          /:2: defaultSpec\.bogus: unknown key, ignored [^\n]*\n.*changes no field of a stateless job spec \(unknown keys, ignored: defaultSpec\.bogus, else\)/,
        ],
        ["defaultSpec: {}\n", ["0"], 1, /patch\.yaml: changes no field of a stateless job spec; expected/],
        // One a typo away from a known key is refused, as in a job file.
        [
          "instanceCont: 4\n",
          ["0"],
          1,
          /patch\.yaml:1: instanceCont: unknown key; did you mean instanceCount\?/,
        ],
      ];
      for (const [body, argv, code, message] of refusals) {
        const r = await patch(body, ...argv);
        assert.equal(r.code, code, `${body.trim()} ${argv}: ${r.out} ${r.err}`);
        assert.match(r.err, message);
      }
      assert.equal((await get()).jobInfo.status.version.value, first, "nothing changed");

      const grown = await patch(
        `instanceCount: ${before.instanceCount + 1}\nbogus: 1\n`,
        "0",
        "--min-running-seconds",
        "0",
      );
      assert.equal(grown.code, 0, grown.err);
      assert.match(grown.out, new RegExp(`^Job ${job} patched, new version 2-`));
      assert.match(grown.err, /^warning: \S+patch\.yaml:2: bogus: unknown key, ignored \(known keys: /);
      const after = await waitFor("the added pod to run", async () => {
        const j = await get();
        return j.jobInfo.status.workflowId === undefined &&
            j.jobInfo.status.podStats?.POD_STATE_RUNNING === before.instanceCount + 1
          ? j.jobInfo.spec
          : undefined;
      }, 60_000);
      assert.equal(after.instanceCount, before.instanceCount + 1);
      const { instanceCount: _a, revision: _b, ...rest } = after;
      const { instanceCount: _c, revision: _d, ...restBefore } = before;
      assert.deepEqual(rest, restBefore, "every other field as it was");

      // A stopped job: --start-pods starts the pods the patch changes, on the new spec.
      const podCount = before.instanceCount + 1;
      const stopped = await cli(up.url, "job", "stateless", "stop", job);
      assert.equal(stopped.code, 0, stopped.err);
      await waitFor("every pod killed", async () => {
        const s = (await get()).jobInfo.status;
        return s.podStats?.POD_STATE_KILLED === podCount || undefined;
      }, 60_000);
      const started = await patch(
        'defaultSpec:\n  labels: [{key: "patched", value: "yes"}]\n',
        "0",
        "--start-pods",
        "--min-running-seconds",
        "0",
      );
      assert.equal(started.code, 0, started.err);
      const [workflow] = JSON.parse(
        (await cli(up.url, "job", "stateless", "list-updates", job, "--limit", "1", "-j")).out,
      ).workflowInfos;
      assert.equal(workflow.updateSpec.startPods, true);
      await waitFor("every pod running the patched spec", async () => {
        const j = await get();
        if (j.jobInfo.status.workflowId !== undefined) return undefined;
        if (j.jobInfo.status.podStats?.POD_STATE_RUNNING !== podCount) return undefined;
        const tasks = Object.values(
          JSON.parse((await cli(up.url, "task", "list", job, "-j")).out).result.value,
        ) as { runtime: { configVersion: number } }[];
        return tasks.every((t) => t.runtime.configVersion === 3) || undefined;
      }, 60_000);
      assert.equal((await get()).jobInfo.status.desiredState, "JOB_STATE_RUNNING");
    });
  },
});
