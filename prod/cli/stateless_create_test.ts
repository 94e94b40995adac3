/** `peloton job stateless create` against `peloton up`: Peloton's CreateSpec flags reach the rolling start. */
import assert from "node:assert/strict";
import { cli, STATELESS_SPECS, waitFor, withUp } from "../testing.ts";

Deno.test({
  name: "job stateless create --start-paused --opaque-data: no pod starts until the workflow is resumed",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-create-", async (up) => {
      const spec = `${STATELESS_SPECS}/test_stateless_job_spec.yaml`;
      const bad = await cli(
        up.url,
        "job",
        "stateless",
        "create",
        "/DefaultResPool",
        spec,
        "1",
        "--maxInstanceRetries",
        "x",
      );
      assert.equal(bad.code, 2, bad.out);
      assert.match(bad.err, /--maxInstanceRetries: got "x", expected a whole number/);

      const created = await cli(
        up.url,
        // Batch size 0: all at once once resumed (the default 10 s each batch must run would make it slow).
        ...["job", "stateless", "create", "/DefaultResPool", spec, "0"],
        ...["--start-paused", "--opaque-data", "rollout-7", "--maxInstanceRetries", "2"],
      );
      assert.equal(created.code, 0, created.err);
      const [, job] = /^Job (\S+) created, version (\S+)$/.exec(created.out)!;
      const workflow = async () =>
        JSON.parse((await cli(up.url, "job", "stateless", "list-updates", job, "--limit", "1", "-j")).out)
          .workflowInfos[0];
      const paused = await workflow();
      assert.equal(paused.status.state, "WORKFLOW_STATE_PAUSED");
      assert.deepEqual(paused.opaqueData, { data: "rollout-7" });
      const stats = async () =>
        JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out)
          .jobInfo.status.podStats ?? {};
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      assert.equal(
        (await stats()).POD_STATE_RUNNING,
        0,
        "no pod runs while the start is paused (every state is listed)",
      );

      const resumed = await cli(up.url, "job", "stateless", "workflow", "resume", job, "--opaque-data", "go");
      assert.equal(resumed.code, 0, resumed.err);
      assert.deepEqual((await workflow()).opaqueData, { data: "go" }, "the resume replaced it");
      const total = JSON.parse((await cli(up.url, "job", "stateless", "get", job, "-j")).out).jobInfo.spec
        .instanceCount;
      await waitFor(
        "every pod running",
        async () => (await stats()).POD_STATE_RUNNING === total || undefined,
        60_000,
      );
    });
  },
});
