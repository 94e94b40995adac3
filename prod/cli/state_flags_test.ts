/**
 * `-s STATES` of the stateless and pod commands takes the v1alpha names Peloton's CLI reads
 * (`JOB_STATE_KILLED`, `POD_STATE_RUNNING`) as well as the bare ones, in any case.
 */
import assert from "node:assert/strict";
import { cli, createStatelessJob, withUp } from "../testing.ts";
import { jobStates } from "./update_commands.ts";

/** Runs `argv` against a server that records each call's spec and answers an empty page. */
async function specsSent(
  argvs: string[][],
): Promise<{ specs: unknown[]; results: { code: number; err: string }[] }> {
  const specs: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    specs.push((await req.json()).spec);
    return Response.json({ records: [], pods: [], pagination: { offset: 0, limit: 0, total: 0 } });
  });
  try {
    const results = [];
    for (const argv of argvs) results.push(await cli(`http://127.0.0.1:${server.addr.port}`, ...argv));
    return { specs, results };
  } finally {
    await server.shutdown();
  }
}

Deno.test("job stateless query -s takes JOB_STATE_ names and bare ones, in any case", async () => {
  const { specs, results } = await specsSent([
    ["job", "stateless", "query", "-s", "JOB_STATE_KILLED"],
    ["job", "stateless", "query", "-s", "job_state_running,Pending,KILLING"],
    ["job", "stateless", "query", "-s", "JOB_STATE_INVALID"],
    ["job", "stateless", "query", "-s", "unknown,RUNNING"],
  ]);
  assert.deepEqual(results.map((r) => [r.code, r.err]), [[0, ""], [0, ""], [0, ""], [0, ""]]);
  // v1alpha's JobState has no JOB_STATE_UNKNOWN: v0's UNKNOWN is its JOB_STATE_INVALID.
  assert.deepEqual(specs.map((s) => (s as { jobStates: string[] }).jobStates), [
    ["JOB_STATE_KILLED"],
    ["JOB_STATE_RUNNING", "JOB_STATE_PENDING", "JOB_STATE_KILLING"],
    ["JOB_STATE_INVALID"],
    ["JOB_STATE_INVALID", "JOB_STATE_RUNNING"],
  ]);
});

Deno.test({
  name: "job stateless query -s UNKNOWN and -s JOB_STATE_INVALID are taken by a real server",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-state-flags-", async (up) => {
      const { job } = await createStatelessJob(up.url);
      for (
        const states of ["UNKNOWN", "JOB_STATE_INVALID", "job_state_invalid,RUNNING,PENDING,INITIALIZED"]
      ) {
        const r = await cli(up.url, "job", "stateless", "query", "-s", states, "-j");
        assert.equal(r.code, 0, `-s ${states}: ${r.err}`);
        const ids = (JSON.parse(r.out).records ?? []).map((j: { jobId: { value: string } }) => j.jobId.value);
        assert.equal(ids.includes(job), states.includes(","), `-s ${states}: ${ids}`);
      }
    });
  },
});

Deno.test("job stateless query -s refuses a name of neither form, saying both", async () => {
  const { specs, results } = await specsSent([
    ["job", "stateless", "query", "-s", "JOB_STATE_NOPE"],
    ["job", "stateless", "query", "-s", "JOB_STATE_UNKNOWN"],
  ]);
  assert.deepEqual(specs, [], "nothing sent");
  const expected =
    "expected one of UNKNOWN, INITIALIZED, PENDING, RUNNING, SUCCEEDED, FAILED, KILLED, KILLING, " +
    "UNINITIALIZED, DELETED or a JOB_STATE_ name (JOB_STATE_RUNNING; JOB_STATE_INVALID for UNKNOWN)";
  assert.deepEqual(results.map((r) => [r.code, r.err]), [
    [2, `peloton job stateless query: --states: got "JOB_STATE_NOPE", ${expected}`],
    [2, `peloton job stateless query: --states: got "JOB_STATE_UNKNOWN", ${expected}`],
  ]);
});

Deno.test("v0's job states are v0's names alone, as Peloton's v0 CLI reads them", () => {
  assert.deepEqual(jobStates("killed,RUNNING"), ["KILLED", "RUNNING"]);
  assert.throws(
    () => jobStates("JOB_STATE_KILLED"),
    /--states: got "JOB_STATE_KILLED", expected one of UNKNOWN,/,
  );
});

Deno.test("pod query -s takes POD_STATE_ names and bare ones, in any case", async () => {
  const { specs, results } = await specsSent([[
    "pod",
    "query",
    "j1",
    "-s",
    "POD_STATE_RUNNING,killed,pod_state_failed",
  ]]);
  assert.deepEqual(results.map((r) => [r.code, r.err]), [[0, ""]]);
  assert.deepEqual((specs[0] as { podStates: string[] }).podStates, [
    "POD_STATE_RUNNING",
    "POD_STATE_KILLED",
    "POD_STATE_FAILED",
  ]);
});
