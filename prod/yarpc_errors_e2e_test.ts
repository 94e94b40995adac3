/**
 * Error replies on the wire, against a real `peloton up`: yarpc's HTTP form (the code in `Rpc-Error-Code`,
 * yarpc's status, the message as text), which Go and Python yarpc clients read, and this project's CLI too.
 */
import assert from "node:assert/strict";
import { cli, createStatelessJob, ROOT, withUp } from "./testing.ts";

const JOBS = `${ROOT}/scenarios/jobs`;
const UPDATE = "peloton.api.v0.update.svc.UpdateService";
const JOB = "peloton.api.job.JobManager";

/** A raw API call, as a yarpc client makes it. */
function post(url: string, procedure: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/api/v1`, {
    method: "POST",
    headers: {
      "rpc-procedure": procedure,
      "rpc-encoding": "json",
      "rpc-caller": "e2e",
      "context-ttl-ms": "10000",
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** What a yarpc-go outbound reads of an error reply. */
async function yarpcError(res: Response) {
  return {
    status: res.status,
    code: res.headers.get("rpc-error-code"),
    rpcStatus: res.headers.get("rpc-status"),
    contentType: res.headers.get("content-type"),
    body: await res.text(),
  };
}

Deno.test({
  name:
    "errors go in yarpc's HTTP form; a stale version is Peloton's InvalidArgument; a late call is deadline-exceeded",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-yarpc-errors-", async (up) => {
      const unknown = crypto.randomUUID();
      assert.deepEqual(
        await yarpcError(await post(up.url, `${UPDATE}::GetUpdate`, { updateId: { value: unknown } })),
        {
          status: 404,
          code: "not-found",
          rpcStatus: "error",
          contentType: "text/plain; charset=utf8",
          body: `update ${unknown} not found\n`,
        },
      );
      // A reply that is not an error: yarpc-go's ApplicationSuccessStatus, its only other value being error.
      const found = await post(up.url, "peloton.api.respool.ResourceManager::LookupResourcePoolID", {
        path: { value: "/DefaultResPool" },
      });
      assert.deepEqual([found.status, found.headers.get("rpc-status")], [200, "success"]);
      assert.ok((await found.json()).id.value);
      // A yarpc-go outbound asks for the message in a header, and gets it there.
      const both = await post(up.url, `${UPDATE}::GetUpdate`, { updateId: { value: unknown } }, {
        "rpc-accepts-both-response-error": "true",
      });
      assert.equal(both.headers.get("rpc-both-response-error"), "true");
      assert.equal(both.headers.get("rpc-error-message"), `update ${unknown} not found`);
      assert.equal(await both.text(), "");
      // Refused before any handler: yarpc leaves Rpc-Status at success there.
      assert.deepEqual(await yarpcError(await post(up.url, "No.Such::Thing", {})), {
        status: 501,
        code: "unimplemented",
        rpcStatus: "success",
        contentType: "text/plain; charset=utf8",
        body: "unknown procedure No.Such::Thing\n",
      });

      // 409 is both aborted and already-exists: the header tells them apart.
      const { job: stateless } = await createStatelessJob(up.url);
      const spec = (await (await post(
        up.url,
        "peloton.api.v1alpha.job.stateless.svc.JobService::GetJob",
        { jobId: { value: stateless } },
      )).json()).jobInfo.spec;
      const again = await yarpcError(
        await post(up.url, "peloton.api.v1alpha.job.stateless.svc.JobService::CreateJob", {
          jobId: { value: stateless },
          spec,
        }),
      );
      assert.deepEqual([again.status, again.code], [409, "already-exists"], again.body);

      // A stale configuration version: Peloton's code and exact message, which its clients retry on.
      const svc = await cli(up.url, "job", "create", "/DefaultResPool", `${JOBS}/service.yaml`);
      assert.equal(svc.code, 0, svc.err);
      const id = /Job (\S+) created/.exec(svc.out)![1];
      const config = (await (await post(up.url, `${JOB}::Get`, { id: { value: id } })).json()).jobInfo.config;
      const stale = await post(up.url, `${UPDATE}::CreateUpdate`, {
        jobId: { value: id },
        jobConfig: { ...config, changeLog: { version: 7 } },
        updateConfig: { batchSize: 1 },
      });
      assert.deepEqual(await yarpcError(stale), {
        status: 400,
        code: "invalid-argument",
        rpcStatus: "error",
        contentType: "text/plain; charset=utf8",
        body: "invalid job configuration version\n",
      });
      const restart = await post(up.url, `${JOB}::Restart`, { id: { value: id }, resourceVersion: 7 });
      assert.deepEqual(
        [restart.status, restart.headers.get("rpc-error-code"), await restart.text()],
        [400, "invalid-argument", "invalid job configuration version\n"],
      );
      // The CLI reads the code and the message from the new form, and says which flag gave the version and
      // what the job's current one is.
      const update = await cli(up.url, "update", "create", id, `${JOBS}/service_v2.yaml`, "1", "-c", "7");
      assert.equal(update.code, 1, update.out);
      assert.deepEqual(update.err.split("\n"), [
        "peloton update create: peloton.api.v0.update.svc.UpdateService::CreateUpdate: invalid-argument: " +
        "invalid job configuration version",
        `peloton update create: -c/--configuration-version: got 7, expected job ${id}'s current ` +
        "configuration version, 1 (or leave -c out: the job's current one is used)",
      ]);
      const rolling = await cli(up.url, "job", "rolling-restart", id, "1", "--resourceVersion", "7");
      assert.equal(rolling.code, 1, rolling.out);
      assert.match(
        rolling.err,
        new RegExp(
          "invalid-argument: invalid job configuration version\npeloton job rolling-restart: " +
            `--resourceVersion: got 7, expected job ${id}'s current configuration version, 1 \\(or leave`,
        ),
      );
      assert.equal(JSON.parse((await cli(up.url, "update", "list", id, "-j")).out).updateInfo.length, 0);
      const missing = await cli(up.url, "update", "get", unknown);
      assert.equal(missing.code, 1, missing.out);
      assert.match(missing.err, new RegExp(`not-found: update ${unknown} not found$`));

      // Out of its deadline: deadline-exceeded (504), not unavailable, which clients retry. A create waits for
      // its store write, far past 1 ms.
      const late = await yarpcError(
        await post(up.url, `${JOB}::Create`, { id: { value: crypto.randomUUID() }, config }, {
          "context-ttl-ms": "1",
        }),
      );
      assert.deepEqual(
        [late.status, late.code, late.rpcStatus],
        [504, "deadline-exceeded", "error"],
        late.body,
      );
      assert.match(late.body, /timed out after 1 ms\n$/);
    });
  },
});
