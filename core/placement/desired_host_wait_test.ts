import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import { rfc3339 } from "../model/time_format.ts";
import { makeHost, makeLease } from "../testing/fixtures.ts";
import { PELOTON_POLICIES } from "./policy.ts";
import { engineRig, one } from "./testing.ts";

/** Service instances of 1.5 cpu (an in-place update to `cpuLimit: 1.5`) with their own hosts as desired hosts. */
const instance = (instanceId: number, desiredHost: string, extra: Partial<RmTask> = {}) =>
  one({
    jobId: "s3",
    instanceId,
    taskType: "STATELESS",
    desiredHost,
    resources: { cpuMilli: 1500, memMb: 128, diskMb: 0, gpuMilli: 0 },
    ...extra,
  });

/** A 2-cpu host with `freeCpuMilli` free. */
const host = (name: string, freeCpuMilli = 2000) => {
  const h = makeHost(name, { cpu: 2 });
  return makeLease(h, { free: { ...h.resources, cpuMilli: freeCpuMilli } });
};

Deno.test("a task waiting for its busy desired host leases no other host, and another goes to its own free one", () => {
  const { gangs, hosts, transport, clock } = engineRig();
  const waitEnd = clock.now() + PELOTON_POLICIES.STATELESS.maxDurationMs;
  gangs(instance(0, "h0"), instance(1, "h1"));
  // h0 runs a batch task of 0.9 cpu: instance 0 does not fit there; h1 is free.
  const filters = hosts([host("h0", 1100), host("h1")]);
  assert.deepEqual(filters.map((f) => f.requiredHost), ["h0", "h1"], "each bound to its desired host");
  const [set] = transport.take("set-placements");
  assert.deepEqual(set.placements.map((p) => [p.hostname, p.tasks.map((t) => t.taskId)]), [["h1", [
    "s3-1-1",
  ]]]);
  assert.deepEqual(set.pending, [{
    reason: `waiting for desired host h0 until ${rfc3339(waitEnd)}`,
    taskIds: ["s3-0-1"],
  }]);
  // Retried until its wait ends, it asks for h0 alone every time.
  let rounds = 0;
  while (clock.now() < waitEnd) {
    clock.advance(1_000);
    gangs();
    if (!transport.peek("acquire-hosts").length) continue;
    rounds++;
    const fs = hosts([host("h0", 1100)]);
    transport.take("release-hosts");
    const placed = transport.take("set-placements").flatMap((s) => s.placements);
    if (clock.now() < waitEnd) {
      assert.deepEqual(fs.map((f) => f.requiredHost), ["h0"]);
      assert.deepEqual(placed, []);
    } else assert.deepEqual(fs.map((f) => f.requiredHost), [undefined], "any host once the wait is over");
  }
  assert.ok(rounds > 1 && rounds < 20, `${rounds} rounds`);
});

Deno.test("the time a task waits for its desired host is the one kept: the earlier of its two deadlines", () => {
  const { gangs, hosts, transport, clock } = engineRig();
  const start = clock.now();
  const p = PELOTON_POLICIES.STATELESS;
  assert.ok(p.maxDurationMs < p.desiredHostDurationMs, "the case of the report");
  gangs(instance(0, "h0"));
  hosts([host("h0", 1100), host("h2")]);
  const [set] = transport.take("set-placements");
  assert.deepEqual(set.pending?.map((x) => x.reason), [
    `waiting for desired host h0 until ${rfc3339(start + p.maxDurationMs)}`,
  ]);
  transport.take("release-hosts");
  // Placed elsewhere exactly when the message said, not before.
  let placedAt = -1;
  while (placedAt < 0 && clock.now() < start + p.desiredHostDurationMs) {
    clock.advance(1_000);
    gangs();
    if (!transport.peek("acquire-hosts").length) continue;
    hosts([host("h0", 1100), host("h2")]);
    transport.take("release-hosts");
    if (transport.take("set-placements").some((s) => s.placements.length)) placedAt = clock.now();
  }
  assert.equal(placedAt, start + p.maxDurationMs);
});

Deno.test("a task falling back to any host comes after those still waiting for theirs, which lease first", () => {
  const { gangs, hosts, transport, clock } = engineRig();
  const waitEnd = clock.now() + PELOTON_POLICIES.STATELESS.maxDurationMs;
  const busy = () => hosts([host("h0", 1100), host("h1", 1000)]);
  gangs(instance(0, "h0"));
  busy();
  let fallback: (string | undefined)[] | undefined;
  while (!fallback) {
    clock.advance(1_000);
    // Admitted later, instance 1 waits for its busy h1 while instance 0's wait ends.
    if (clock.now() === waitEnd - 5_000) gangs(instance(1, "h1"));
    else gangs();
    if (!transport.peek("acquire-hosts").length) continue;
    if (clock.now() < waitEnd) busy();
    else fallback = hosts([host("h1"), host("h2")]).map((f) => f.requiredHost);
    transport.take("release-hosts");
  }
  assert.deepEqual(fallback, ["h1", undefined], "instance 1, still waiting, leases first");
  const placed = transport.take("set-placements").flatMap((s) => s.placements);
  assert.deepEqual(placed.map((x) => [x.hostname, x.tasks[0].taskId]).sort(), [
    ["h1", "s3-1-1"],
    ["h2", "s3-0-1"],
  ]);
});
