/**
 * An OR of a HOST and a TASK label constraint, through the engine and a real host manager: the host manager
 * evaluates only HOST labels, so it must not turn down a host the TASK branch would take.
 */
import assert from "node:assert/strict";
import { hostmgrRig } from "../hostmgr/testing.ts";
import type { Constraint } from "../model/config_types.ts";
import { resources } from "../model/resources.ts";
import { makeRmTask } from "../testing/harness.ts";
import { engineRig } from "./testing.ts";

const hostnameIs = (value: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "HOST", condition: "EQUAL", label: { key: "hostname", value }, requirement: 1 },
});
const tasksWith = (key: string, value: string): Constraint => ({
  type: "LABEL_CONSTRAINT",
  labelConstraint: { kind: "TASK", condition: "GREATER_THAN", label: { key, value }, requirement: 0 },
});
const either: Constraint = {
  type: "OR_CONSTRAINT",
  orConstraint: { constraints: [hostnameIs("a2"), tasksWith("app", "y")] },
};

function wired() {
  const hm = hostmgrRig([["a0", { cpu: 2 }], ["a1", { cpu: 2 }], ["a2", { cpu: 2 }], ["a3", { cpu: 2 }]]);
  // A service labelled app=y runs on a3.
  hm.launch("svc-0-1", "a3", 0, { labels: [{ key: "app", value: "y" }] });
  hm.transport.drain();
  return hm;
}

Deno.test("the host manager leases a host an OR's TASK branch may match, though its HOST branch fails", () => {
  const hm = wired();
  const r = hm.acquire({
    minResources: resources(500, 10),
    constraint: either,
    maxHosts: 4,
    tasks: 8,
    countLabels: ["app=y"],
  });
  assert.ok(r.leases.some((l) => l.hostname === "a3"), JSON.stringify(r.rejections));
  assert.deepEqual(r.leases.find((l) => l.hostname === "a3")!.labelCounts, { "app=y": 1 });
});

Deno.test("a batch job with OR(hostname=a2, tasks with app=y > 0) fills a2, then a3 through the TASK branch", () => {
  const hm = wired();
  const pe = engineRig();
  const relay = () => {
    while (
      pe.transport.deliverTo("hostmgr", hm.hm).length + hm.transport.deliverTo("placement", pe.pe).length
    );
  };
  const batch = Array.from(
    { length: 8 },
    (_, i) =>
      makeRmTask({ jobId: "batch", instanceId: i, resources: resources(500, 10), constraint: either }),
  );
  pe.gangs(...batch.map((t) => ({ tasks: [t] })));
  relay();
  const sets = pe.transport.take("set-placements", "resmgr");
  const where = sets.flatMap((s) => s.placements).flatMap((p) => p.tasks.map(() => p.hostname)).sort();
  assert.deepEqual(where, ["a2", "a2", "a2", "a2", "a3", "a3", "a3", "a3"]);
  assert.deepEqual(sets.flatMap((s) => s.pending ?? []), []);
});
