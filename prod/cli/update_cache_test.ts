/** `peloton update cache UPDATE-ID` (UpdateService::GetUpdateCache, Peloton's debug call) against `peloton up`. */
import assert from "node:assert/strict";
import { cli, createJob, ROOT, withUp } from "../testing.ts";

const JOBS = `${ROOT}/scenarios/jobs`;

Deno.test({
  name:
    "update cache shows an update as the job manager holds it: a table, or -j its JSON; an unknown one is not found",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-update-cache-", async (up) => {
      const job = await createJob(up.url, `${JOBS}/service.yaml`);
      // Paused, it stays in the job manager's cache, as it is, while the test reads it.
      const made = await cli(
        up.url,
        "update",
        "create",
        job,
        `${JOBS}/service_v2.yaml`,
        "2",
        "--start-paused",
      );
      assert.equal(made.code, 0, made.err);
      const id = /^Update (\S+) created$/.exec(made.out)![1];

      const json = await cli(up.url, "update", "cache", id, "-j");
      assert.equal(json.code, 0, json.err);
      assert.deepEqual(JSON.parse(json.out), {
        jobId: { value: job },
        state: "PAUSED",
        instancesTotal: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        instancesDone: [],
        instancesCurrent: [],
        instancesAdded: [],
        instancesUpdated: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        instancesFailed: [],
      });

      const text = await cli(up.url, "update", "cache", id);
      assert.equal(text.code, 0, text.err);
      const [header, row] = text.out.split("\n").map((l) => l.split("|").map((c) => c.trim()));
      assert.deepEqual(header, [
        "Job",
        "State",
        "Instances",
        "Done",
        "Current",
        "Added",
        "Updated",
        "Failed",
        "",
      ]);
      assert.deepEqual(row, [job, "PAUSED", "0-9", "", "", "", "0-9", "", ""]);

      const unknown = "00000000-0000-4000-8000-000000000000";
      const missing = await cli(up.url, "update", "cache", unknown);
      assert.equal(missing.code, 1, missing.out);
      assert.equal(
        missing.err,
        `peloton update cache: peloton.api.v0.update.svc.UpdateService::GetUpdateCache: not-found: update ` +
          `${unknown} not found in cache`,
      );
      const bare = await cli(up.url, "update", "cache");
      assert.equal(bare.code, 2, bare.out);
      assert.match(bare.err, /UPDATE-ID/);
    });
  },
});
