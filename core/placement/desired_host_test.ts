import assert from "node:assert/strict";
import { rfc3339 } from "../model/time_format.ts";
import { PELOTON_POLICIES } from "./policy.ts";
import { engineRig, lease, one } from "./testing.ts";

Deno.test("a task whose desired host is not offered backs off, says what it waits for, then falls back", () => {
  const { gangs, hosts, transport, clock } = engineRig();
  const deadline = clock.now() + PELOTON_POLICIES.BATCH.desiredHostDurationMs;
  gangs(one({ desiredHost: "h9" }));
  hosts([lease("h1")]);
  const [set] = transport.take("set-placements");
  assert.deepEqual(set.placements, []);
  assert.deepEqual(set.pending, [{
    reason: `waiting for desired host h9 until ${rfc3339(deadline)}`,
    taskIds: ["job-a-0-1"],
  }]);
  assert.deepEqual(transport.takeOne("release-hosts").leaseIds, ["h1#1"]);
  // Not retried at once: the engine long-polls for new work and leases no hosts until its backoff is out.
  for (let i = 0; i < 5; i++) gangs();
  assert.deepEqual(transport.take("acquire-hosts"), [], "no busy loop of rounds");
  // Retried, and missed again, until the desired-host deadline; then any host will do.
  let rounds = 1;
  const placed: string[] = [];
  while (!placed.length && clock.now() < deadline + PELOTON_POLICIES.BATCH.retryBackoffMaxMs) {
    clock.advance(1_000);
    gangs();
    if (!transport.peek("acquire-hosts").length) continue;
    rounds++;
    hosts([lease("h1")]);
    transport.take("release-hosts");
    placed.push(...transport.take("set-placements").flatMap((s) => s.placements).map((p) => p.hostname));
  }
  assert.deepEqual(placed, ["h1"]);
  assert.ok(clock.now() >= deadline, "placed elsewhere only past the desired-host deadline");
  assert.ok(rounds < 20, `${rounds} rounds in ${PELOTON_POLICIES.BATCH.desiredHostDurationMs} ms`);
});
