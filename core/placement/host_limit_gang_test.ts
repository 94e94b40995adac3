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
