/** Which job a job manager call names, and whether any job manager may answer it. */
import assert from "node:assert/strict";
import type { Store } from "../../core/ports/store.ts";
import { jobCallOf, watchHolder } from "./api_jobs.ts";

const JOB = "11111111-2222-4333-8444-555555555555";
// The calls below name their job in the body: nothing is looked up.
const store = {} as Store;

Deno.test("JobManagerService: a call naming a job goes to its owner, even a Get; the others stay where they land", async () => {
  const svc = "peloton.private.jobmgr.JobManagerService";
  for (const method of ["GetInstanceAvailabilityInfoForJob", "GetJobCache", "RefreshJob"]) {
    assert.deepEqual(
      await jobCallOf(`${svc}::${method}`, { jobId: { value: JOB }, instances: [0] }, store),
      { jobId: JOB, read: false },
      method,
    );
  }
  for (
    const [method, body] of [["GetThrottledPods", {}], ["QueryJobCache", { spec: { name: "web" } }]] as const
  ) {
    assert.equal((await jobCallOf(`${svc}::${method}`, body, store)).jobId, undefined, method);
  }
  // The v1alpha JobService's reads of the store go to whichever job manager is asked.
  const get = await jobCallOf(
    "peloton.api.v1alpha.job.stateless.svc.JobService::GetJob",
    { jobId: JOB },
    store,
  );
  assert.deepEqual(get, { jobId: JOB, read: true, create: undefined });
});

Deno.test("JobManager's debug calls: Refresh and GetCache go to the job's owner; GetActiveJobs (the store) anywhere", async () => {
  const svc = "peloton.api.job.JobManager";
  for (const method of ["Refresh", "GetCache"]) {
    assert.deepEqual(
      await jobCallOf(`${svc}::${method}`, { id: { value: JOB } }, store),
      { jobId: JOB, read: false, create: undefined },
      method,
    );
  }
  assert.deepEqual(await jobCallOf(`${svc}::GetActiveJobs`, {}, store), {
    jobId: undefined,
    read: true,
    create: undefined,
  });
});

Deno.test("WatchService: a pod watch naming a job goes to its owner; a Cancel to the watch's job manager", async () => {
  const svc = "peloton.api.v1alpha.watch.svc.WatchService";
  assert.deepEqual(
    await jobCallOf(`${svc}::Watch`, { podFilter: { jobId: { value: JOB } } }, store),
    { jobId: JOB, read: false },
  );
  // Every job's pods, or stateless jobs: the job manager that receives the watch serves it.
  assert.equal((await jobCallOf(`${svc}::Watch`, { podFilter: {} }, store)).jobId, undefined);
  assert.equal((await jobCallOf(`${svc}::Watch`, { statelessJobFilter: {} }, store)).jobId, undefined);
  assert.equal(
    (await jobCallOf(`${svc}::Cancel`, { watchId: "pod-1@jobmgr@1a2b3c4d" }, store)).jobId,
    undefined,
  );
  assert.equal(watchHolder({ watchId: "pod-1@jobmgr@1a2b3c4d" }), "jobmgr@1a2b3c4d");
  assert.equal(watchHolder({ watchId: "job-7@jobmgr" }), "jobmgr");
  assert.equal(watchHolder({ watchId: "nonsense" }), undefined);
  assert.equal(watchHolder({}), undefined);
});
