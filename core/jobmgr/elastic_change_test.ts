/** What a v0 job Update (a resize) may change: compared field by field, whatever order a client wrote the keys in. */
import assert from "node:assert/strict";
import { makeJobConfig } from "../testing/fixtures.ts";
import { elasticChange } from "./job_api.ts";

Deno.test("a resize with the same config in another key order is a resize; another change is refused, naming it", () => {
  const before = makeJobConfig({ instanceCount: 2, labels: [{ key: "team", value: "a" }] });
  // Every object of the config rebuilt with its keys reversed: the same config.
  const reversed = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(reversed)
      : v && typeof v === "object"
      ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)]))
      : v;
  const grown = reversed({ ...before, instanceCount: 5 }) as typeof before;
  assert.equal(elasticChange(before, grown), undefined);
  assert.equal(
    elasticChange(before, { ...grown, sla: { ...grown.sla, priority: 9 } }),
    "config.sla: a job update may change only instanceCount and new instances' configs",
  );
});
