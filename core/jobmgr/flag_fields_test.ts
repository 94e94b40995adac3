/** Bool request fields (`summaryOnly`, `statusOnly`, `checkSla`, `instanceEvents`): true or false, anything else refused naming it. */
import assert from "node:assert/strict";
import { JOB_ID, JobmgrRig, runningService } from "../testing/jobmgr_rig.ts";
import { POD_SERVICE } from "./pod_api.ts";
import { STATELESS_SERVICE } from "./stateless_api.ts";

const JOB = "peloton.api.job.JobManager";

/** Values a client may mean as true or false, none of them a bool: each was read as false before. */
const NOT_BOOLS: [unknown, string][] = [
  ["true", '"true"'],
  ["false", '"false"'],
  [1, "1"],
  [0, "0"],
  [{}, "{}"],
  [[true], "[true]"],
];

async function call(rig: JobmgrRig, service: string, method: string, body: Record<string, unknown>) {
  rig.call(service, method, body);
  await rig.reads();
  const replies = rig.replies();
  assert.equal(replies.length, 1, `${method}: ${JSON.stringify(replies)}`);
  return replies[0];
}

function serviceJob(): JobmgrRig {
  const rig = new JobmgrRig();
  rig.create({ type: "SERVICE", instanceCount: 2 });
  return rig;
}

Deno.test("a summaryOnly that is not true or false is refused, naming it, by GetJob, QueryPods and Query", async () => {
  const rig = serviceJob();
  const before = structuredClone(rig.job().runtime);
  const calls: [string, string, Record<string, unknown>][] = [
    [STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID } }],
    [STATELESS_SERVICE, "QueryPods", { jobId: { value: JOB_ID } }],
    [JOB, "Query", { spec: {} }],
  ];
  for (const [service, method, body] of calls) {
    for (const [summaryOnly, got] of NOT_BOOLS) {
      const reply = await call(rig, service, method, { ...body, summaryOnly });
      assert.deepEqual(reply.error, {
        code: "invalid-argument",
        message: `summaryOnly: got ${got}, expected true or false`,
      }, `${method} ${got}`);
    }
  }
  assert.deepEqual(rig.job().runtime, before, "nothing changed");
});

Deno.test("summaryOnly true, false, absent or null is taken as before", async () => {
  const rig = serviceJob();
  const getJob = async (extra: Record<string, unknown>) =>
    Object.keys((await call(rig, STATELESS_SERVICE, "GetJob", { jobId: { value: JOB_ID }, ...extra })).body!);
  assert.deepEqual(await getJob({ summaryOnly: true }), ["summary"]);
  for (const off of [{ summaryOnly: false }, { summaryOnly: null }, {}]) {
    assert.ok(!(await getJob(off)).includes("summary"), JSON.stringify(off));
  }
  const pods = async (summaryOnly: unknown) => {
    const reply = await call(rig, STATELESS_SERVICE, "QueryPods", { jobId: { value: JOB_ID }, summaryOnly });
    return (reply.body as { pods: Record<string, unknown>[] }).pods.map((p) => Object.keys(p).sort());
  };
  assert.deepEqual(await pods(true), [["status"], ["status"]]);
  assert.deepEqual(await pods(false), [["spec", "status"], ["spec", "status"]]);
  const query = async (summaryOnly: unknown) =>
    (await call(rig, JOB, "Query", { spec: {}, summaryOnly })).body as Record<string, unknown>;
  assert.equal((await query(true)).records, undefined);
  assert.equal(((await query(false)).records as unknown[]).length, 1);
  assert.equal(((await query(undefined)).records as unknown[]).length, 1);
});

Deno.test("statusOnly, checkSla and instanceEvents that are not true or false are refused, naming them", async () => {
  const rig = runningService(2);
  const before = structuredClone(rig.job().runtime);
  const podName = { value: `${JOB_ID}-0` };
  const calls: [string, string, Record<string, unknown>, string][] = [
    [POD_SERVICE, "GetPod", { podName }, "statusOnly"],
    [POD_SERVICE, "RestartPod", { podName }, "checkSla"],
    [STATELESS_SERVICE, "ListJobWorkflows", { jobId: { value: JOB_ID } }, "instanceEvents"],
  ];
  for (const [service, method, body, field] of calls) {
    for (const [value, got] of NOT_BOOLS) {
      const reply = await call(rig, service, method, { ...body, [field]: value });
      assert.deepEqual(reply.error, {
        code: "invalid-argument",
        message: `${field}: got ${got}, expected true or false`,
      }, `${method} ${got}`);
    }
  }
  rig.store.settle();
  assert.deepEqual(rig.transport.take("kill-tasks"), [], "no pod was restarted");
  assert.deepEqual(rig.job().runtime, before, "nothing changed");
  // A bool is taken; StartPod has no checkSla and does not read one.
  const status = await call(rig, POD_SERVICE, "GetPod", { podName, statusOnly: true });
  assert.equal(status.error, undefined);
  const start = await call(rig, POD_SERVICE, "StartPod", { podName, checkSla: "yes" });
  assert.equal(start.error, undefined);
});
