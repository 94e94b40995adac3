/** Test helpers for placement executors: two runs of a round agree host for host, port for port. */
import assert from "node:assert/strict";
import type { PlacementResult } from "../../core/placement/round.ts";

export function assertSamePlacement(a: PlacementResult, b: PlacementResult, what: string): void {
  assert.deepEqual([...a.hosts], [...b.hosts], `${what}: hosts`);
  assert.deepEqual([...a.ports], [...b.ports], `${what}: ports`);
  assert.deepEqual(
    a.failures.map((f) => f && [...f]),
    b.failures.map((f) => f && [...f]),
    `${what}: failures`,
  );
}
