import assert from "node:assert/strict";
import { jsonName, withJsonNames } from "./proto_json.ts";

Deno.test("proto field names are renamed to their JSON names at any depth; values and instance keys stay", () => {
  assert.equal(jsonName("host_states"), "hostStates");
  assert.equal(jsonName("max_instance_retries"), "maxInstanceRetries");
  assert.equal(jsonName("jobId"), "jobId");
  assert.deepEqual(
    withJsonNames({
      job_id: { value: "a_b" },
      update_spec: { batch_size: 2, start_pods: true },
      spec: { instance_spec: { 0: { pod_name: "x" } }, labels: [{ key: "team_name", value: "v_1" }] },
    }),
    {
      jobId: { value: "a_b" },
      updateSpec: { batchSize: 2, startPods: true },
      spec: { instanceSpec: { 0: { podName: "x" } }, labels: [{ key: "team_name", value: "v_1" }] },
    },
  );
  // Given both ways, the JSON name's value is kept.
  assert.deepEqual(withJsonNames({ jobId: 1, job_id: 2 }), { jobId: 1 });
});
