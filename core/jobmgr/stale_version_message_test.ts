/**
 * The loser of a v0 version race (JobManager::Update at a configuration version no longer the job's) is
 * refused with Peloton's code and leading text, and the job's current version to retry at.
 */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { jobConfigJson, STALE_VERSION_MESSAGE } from "./job_api.ts";

Deno.test("two JobManager.Update at one version: the second is refused naming the job's current version", () => {
  const rig = new JobmgrRig();
  rig.create({ instanceCount: 1 });
  const config = jobConfigJson(rig.job().config);
  const resize = (instanceCount: number, version: unknown) =>
    rig.api("job", "Update", {
      id: { value: JOB_ID },
      config: { ...config, instanceCount, changeLog: { version } },
    });
  resize(2, 1);
  resize(3, 1);
  const replies = rig.replies();
  // The loser is answered at once; the winner once its write is durable.
  const won = replies.find((r) => !r.error)!, lost = replies.find((r) => r.error)!;
  assert.equal(replies.length, 2);
  assert.ok(won && lost, JSON.stringify(replies));
  assert.equal(rig.job().configVersion, 2);
  assert.deepEqual(lost.error, {
    code: "invalid-argument",
    message: "invalid job configuration version: got 1, the job is at 2",
  });
  assert.ok(lost.error!.message.startsWith(STALE_VERSION_MESSAGE), "Peloton's text leads, for its clients");
  resize(3, "1");
  assert.equal(rig.replies()[0].error?.message, "invalid job configuration version: got 1, the job is at 2");
  assert.equal(rig.job().tasks.size, 2, "the loser changed nothing");
});
