import assert from "node:assert/strict";
import type { ApiReply } from "../messages.ts";
import { JOB_ID, JobmgrRig } from "../testing/jobmgr_rig.ts";
import { mergePatch, STATELESS_SERVICE } from "./stateless_api.ts";

type Body = Record<string, unknown>;

const container = (cmd: string) => ({
  name: "c",
  entrypoint: { value: cmd },
  resource: { cpuLimit: 0.1, memLimitMb: 8 },
});

function call(rig: JobmgrRig, method: string, body: Body): ApiReply {
  rig.call(STATELESS_SERVICE, method, { jobId: { value: JOB_ID }, ...body });
  return rig.replies()[0];
}

/** A 2-instance service with a secret, created through the v1alpha JobService; its entity version. */
function service(rig: JobmgrRig): string {
  rig.call(STATELESS_SERVICE, "CreateJob", {
    jobId: { value: JOB_ID },
    spec: {
      name: "web",
      instanceCount: 2,
      labels: [{ key: "team", value: "a" }],
      defaultSpec: { containers: [container("sleep 60")] },
      respoolId: { value: "pool-a" },
    },
    secrets: [{ path: "key", value: { data: btoa("k") } }],
  });
  rig.answerPool();
  rig.store.settle();
  const reply = rig.replies()[0];
  assert.equal(reply.error, undefined, JSON.stringify(reply));
  return (reply.body as { version: { value: string } }).version.value;
}

Deno.test("mergePatch is RFC 7386: objects merge field by field, lists and values replace, null removes", () => {
  const target = { a: 1, b: { c: 2, d: [1, 2] }, e: "x" };
  assert.deepEqual(mergePatch(target, { b: { d: [3] }, e: null, f: { g: 1 } }), {
    a: 1,
    b: { c: 2, d: [3] },
    f: { g: 1 },
  });
  assert.deepEqual(target, { a: 1, b: { c: 2, d: [1, 2] }, e: "x" }, "the target is not changed");
  assert.deepEqual(mergePatch({ a: 1 }, [1]), [1], "a list replaces an object");
});

Deno.test("PatchJob: a rolling update to the job's spec with the given fields changed; the rest and the secrets stay", () => {
  const rig = new JobmgrRig();
  const version = service(rig);
  const grown = call(rig, "PatchJob", { version: { value: version }, spec: { instanceCount: 3 } });
  assert.equal(grown.error, undefined, JSON.stringify(grown));
  const job = rig.job();
  assert.equal(job.config.instanceCount, 3);
  assert.equal(job.config.name, "web");
  assert.deepEqual(job.config.labels, [{ key: "team", value: "a" }]);
  assert.equal(job.config.defaultConfig.command?.value, "sleep 60", "the containers are kept");
  assert.deepEqual(job.secrets.map((s) => [s.path, s.version]), [["key", 1]], "secrets untouched");
  const update = [...rig.jm.updates.values()].find((u) => u.jobId === JOB_ID)!;
  assert.equal(update.type, "UPDATE");
  assert.deepEqual(update.instancesAdded, [2]);

  const next = (grown.body as { version: { value: string } }).version.value;
  const relabeled = call(rig, "PatchJob", {
    version: { value: next },
    spec: { labels: null, defaultSpec: { containers: [container("sleep 120")] } },
  });
  assert.equal(relabeled.error, undefined, JSON.stringify(relabeled));
  assert.deepEqual(rig.job().config.labels, [], "null removed the labels");
  assert.equal(rig.job().config.defaultConfig.command?.value, "sleep 120");
  assert.equal(rig.job().config.instanceCount, 3);
});

Deno.test("PatchJob: a bad patch, a stale version or a patch that makes a bad spec changes nothing", () => {
  const rig = new JobmgrRig();
  const version = service(rig);
  const before = rig.job().configVersion;
  const list = call(rig, "PatchJob", { version: { value: version }, spec: [1] });
  assert.deepEqual(list.error, {
    code: "invalid-argument",
    message: "spec: got [1], expected the JobSpec fields to change",
  });
  // No spec is missing, never JavaScript's "got undefined".
  for (const missing of [{}, { spec: null }]) {
    assert.deepEqual(call(rig, "PatchJob", { version: { value: version }, ...missing }).error, {
      code: "invalid-argument",
      message: "spec: missing, expected the JobSpec fields to change",
    });
  }
  const stale = call(rig, "PatchJob", { version: { value: "9-1-0" }, spec: { instanceCount: 3 } });
  assert.equal(stale.error?.code, "aborted");
  const bad = call(rig, "PatchJob", { version: { value: version }, spec: { instanceCount: -1 } });
  assert.equal(bad.error?.code, "invalid-argument");
  assert.equal(bad.error!.message, "spec: instanceCount: got -1, expected a whole number, at least 1");
  const secret = call(rig, "PatchJob", {
    version: { value: version },
    spec: { instanceCount: 3 },
    secrets: [{ path: "other", value: { data: btoa("o") } }],
  });
  assert.match(secret.error?.message ?? "", /^secrets: missing the job's secret/);
  assert.equal(rig.job().configVersion, before);
  assert.equal(rig.job().config.instanceCount, 2);
  assert.deepEqual([...rig.jm.updates.values()].map((u) => u.create), [true], "only the create's workflow");
});
