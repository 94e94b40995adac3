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
