/**
 * Peloton's host limit written as its own example writes it (TASK label EQUAL 0 on the tasks' own label):
 * a gang of 4 on 4 idle hosts is placed whole in one round, as with LESS_THAN 1.
 */
import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import type { Constraint } from "../model/config_types.ts";
import { resources } from "../model/resources.ts";
import { makeRmTask } from "../testing/fixtures.ts";
import { perHostLimit } from "./constraints.ts";
import { engineRig } from "./testing.ts";

const label = { key: "app", value: "g" };
const hostLimit = (condition: "EQUAL" | "LESS_THAN", requirement: number): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "TASK", condition, label, requirement },
});

Deno.test("EQUAL 0 on the tasks' own label is a host limit of one, as LESS_THAN 1 is", () => {
  assert.equal(perHostLimit(hostLimit("EQUAL", 0), [label]), 1);
  assert.equal(perHostLimit(hostLimit("LESS_THAN", 1), [label]), 1);
  assert.equal(perHostLimit(hostLimit("EQUAL", 0), [{ key: "app", value: "other" }]), undefined);
  assert.equal(perHostLimit(hostLimit("EQUAL", 2), [label]), undefined);
});

for (const [condition, requirement] of [["EQUAL", 0], ["LESS_THAN", 1]] as const) {
  Deno.test(`a gang of 4 limited to one a host (${condition} ${requirement}) is placed whole on 4 idle hosts`, () => {
    const hm = hostmgrRig([["h1", { cpu: 8 }], ["h2", { cpu: 8 }], ["h3", { cpu: 8 }], ["h4", { cpu: 8 }]]);
    const pe = engineRig();
    const tasks = [0, 1, 2, 3].map((instanceId) =>
      makeRmTask({
        jobId: "ganghl",
        instanceId,
        resources: resources(200, 50),
        labels: [label],
        constraint: hostLimit(condition, requirement),
        minInstances: 4,
      })
    );
    pe.gangs({ tasks });
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
    const sets = pe.transport.take("set-placements", "resmgr");
    const hosts = sets.flatMap((s) => s.placements).flatMap((p) => p.tasks.map(() => p.hostname));
    assert.deepEqual(
      hosts.sort(),
      ["h1", "h2", "h3", "h4"],
      JSON.stringify(sets.flatMap((s) => s.pending ?? [])),
    );
  });
}

/**
 * The reason a gang of `n` tasks of 1 cpu and 1024 MB, limited to `limit` a host, hears after a round on
 * `hosts` idle hosts of `cpu` cpus.
 */
function limitedGangReason(hosts: number, n: number, limit: number, cpu = 8): string | undefined {
  const hm = hostmgrRig(Array.from({ length: hosts }, (_, i) => [`h${i}`, { cpu, mem: 65_536 }]));
  const pe = engineRig();
  const tasks = Array.from({ length: n }, (_, instanceId) =>
    makeRmTask({
      jobId: "ganghl",
      instanceId,
      resources: resources(1000, 1024),
      labels: [label],
      constraint: hostLimit("LESS_THAN", limit),
      minInstances: n,
    }));
  pe.gangs({ tasks });
  while (
    pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
  );
  const sets = pe.transport.take("set-placements", "resmgr");
  assert.deepEqual(sets.flatMap((s) => s.placements), []);
  return sets.flatMap((s) => s.pending ?? []).find((p) => p.taskIds.includes(tasks[0].taskId))?.reason;
}

Deno.test("a gang its host limit keeps off enough hosts is told of the limit, not of room", () => {
  // Every host has room for 8 of its tasks; one a host makes 10 hosts too few for 11.
  assert.equal(
    limitedGangReason(10, 11, 1),
    "gang of 11 could not be placed whole: at most 1 of its tasks per host (maxPerHost/host limit): " +
      "10 hosts with room, not for all 11",
  );
  assert.equal(
    limitedGangReason(3, 7, 2),
    "gang of 7 could not be placed whole: at most 2 of its tasks per host (maxPerHost/host limit): " +
      "3 hosts with room, not for all 7",
  );
});

Deno.test("a gang with a host limit its hosts' room keeps it under is told of room, as without one", () => {
  // Up to 4 a host would take 12 on 3 hosts, but each has room for 2: the hosts' cpu is what is short.
  assert.equal(
    limitedGangReason(3, 7, 4, 2),
    "gang of 7 could not be placed whole: too few hosts with room for its tasks (1 cpu, 1024 MB memory " +
      "each): room for one on 3 hosts, not for all 7",
  );
});
