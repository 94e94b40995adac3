/** Auth over real HTTP against `peloton up --auth-config`: every call is checked before it is routed. */
import assert from "node:assert/strict";
import { ROOT, startUp } from "../testing.ts";
import { replyError } from "../daemons/http_errors.ts";

const AUTH = `${ROOT}/prod/auth/testdata/security_example.yaml`;
const basic = (user: string, password: string) => `Basic ${btoa(`${user}:${password}`)}`;

Deno.test({
  name:
    "peloton up --auth-config: a procedure no daemon serves is refused 401/403 before it is found unimplemented",
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-auth-" });
    const up = await startUp(dataDir, ["--agents", "1", "--auth-config", AUTH]);
    const call = async (procedure: string | undefined, authorization?: string) => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (procedure !== undefined) headers["rpc-procedure"] = procedure;
      if (authorization) headers.authorization = authorization;
      const res = await fetch(`${up.url}/api/v1`, { method: "POST", headers, body: "{}" });
      // Errors in yarpc's form (the code in Rpc-Error-Code, the message as text), read as the CLI reads them.
      const body = res.ok ? await res.json() : replyError(res.status, res.headers, await res.text());
      return { status: res.status, body };
    };
    try {
      // Peloton's v0 ResourcePoolService: the admin role accepts it, and no daemon here serves it.
      const unserved = "peloton.api.v0.respool.ResourcePoolService::CreateResourcePool";
      // The default user (no credentials) may only read jobs and pods: 401, so that it knows to log in.
      const anon = await call(unserved);
      assert.deepEqual(anon, {
        status: 401,
        body: { code: "unauthenticated", message: `calls without credentials may not call ${unserved}` },
      });
      assert.equal((await call(unserved, basic("peloton", "nope"))).status, 401, "a wrong password");
      // Admin may call it: it learns it is not served. Peloton's v0 JobService it may not call.
      const admin = basic("admin", "password2");
      assert.equal((await call(unserved, admin)).status, 501);
      assert.equal((await call("peloton.api.v0.job.svc.JobService::CreateJob", admin)).status, 403);
      assert.equal((await call("No.Such.Thing", admin)).status, 403, "dot form: No.Such::Thing");
      const root = await call(unserved, basic("peloton", "password1"));
      assert.deepEqual(root, {
        status: 501,
        body: { code: "unimplemented", message: `unknown procedure ${unserved}` },
      });
      // A Watch is checked as any call: refused without credentials, answered (here: refused by the job
      // manager, as a plain error) for a role that accepts the WatchService.
      const watch = "peloton.api.v1alpha.watch.svc.WatchService::Watch";
      assert.equal((await call(watch)).status, 401);
      assert.deepEqual(await call(watch, admin), {
        status: 400,
        body: {
          code: "invalid-argument",
          message: "podFilter, statelessJobFilter: expected exactly one of them",
        },
      });
      // A served procedure the default user may call still works without credentials.
      const list = await call("peloton.api.v1alpha.job.stateless.svc.JobService::ListJobs");
      assert.deepEqual(list, { status: 200, body: { jobs: [] } });
      assert.equal(
        (await call(undefined, basic("peloton", "nope"))).status,
        401,
        "no procedure, wrong password",
      );
      assert.equal((await call(undefined)).status, 400, "no procedure, the default user");

      // Sandbox files are BrowseSandbox's; adding an agent takes a role that accepts every call.
      const get = async (path: string, authorization?: string, method = "GET") => {
        const res = await fetch(`${up.url}${path}`, {
          method,
          headers: authorization ? { authorization } : {},
          body: method === "POST" ? "{}" : undefined,
        });
        return { status: res.status, text: await res.text() };
      };
      const sandbox = `/sandbox/${"0".repeat(8)}-0000-4000-8000-000000000000-0-1/stdout`;
      assert.equal((await get(sandbox)).status, 401);
      assert.equal((await get(sandbox, admin)).status, 403);
      assert.deepEqual(await get(sandbox, basic("peloton", "password1")), {
        status: 404,
        text: `no sandbox for task ${"0".repeat(8)}-0000-4000-8000-000000000000-0-1\n`,
      });
      assert.equal((await get("/admin/agents", undefined, "POST")).status, 401);
      assert.equal((await get("/admin/agents", admin, "POST")).status, 403);
    } finally {
      await up.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
