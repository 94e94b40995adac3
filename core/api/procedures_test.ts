import assert from "node:assert/strict";
import { routeProcedure } from "./procedures.ts";

Deno.test("canonical, versioned and short procedure names route to the serving daemon", () => {
  assert.deepEqual(routeProcedure("peloton.api.job.JobManager::Create"), {
    procedure: "peloton.api.job.JobManager::Create",
    daemon: "jobmgr",
  });
  assert.deepEqual(routeProcedure("peloton.api.v0.job.JobManager::Get"), {
    procedure: "peloton.api.job.JobManager::Get",
    daemon: "jobmgr",
  });
  assert.deepEqual(routeProcedure("JobManager.Get"), {
    procedure: "peloton.api.job.JobManager::Get",
    daemon: "jobmgr",
  });
  assert.equal(routeProcedure("ResourceManager.LookupResourcePoolID")?.daemon, "resmgr");
  assert.equal(routeProcedure("peloton.api.v0.host.svc.HostService::QueryHosts")?.daemon, "hostmgr");
});

Deno.test("unknown services and malformed names do not route", () => {
  assert.equal(routeProcedure("Nope.Get"), undefined);
  assert.equal(routeProcedure("peloton.api.job.JobManager::"), undefined);
  assert.equal(routeProcedure(""), undefined);
});

Deno.test("the private JobManagerService routes to the job manager by its full and short names", () => {
  const full = "peloton.private.jobmgr.JobManagerService::GetThrottledPods";
  assert.deepEqual(routeProcedure(full), { procedure: full, daemon: "jobmgr" });
  assert.deepEqual(routeProcedure("JobManagerService.QueryJobCache"), {
    procedure: "peloton.private.jobmgr.JobManagerService::QueryJobCache",
    daemon: "jobmgr",
  });
});
