/** A round without hosts skips the placers: its result is what placing it over no hosts gives. */
import assert from "node:assert/strict";
import { randomInt, seededPrng } from "../ports/prng.ts";
import { placeRound, placeWithPlacers } from "./plan.ts";
import { PELOTON_POLICIES } from "./policy.ts";
import { RoundBuilder } from "./round_build.ts";
import { randomWork } from "./testing.ts";

Deno.test("a round without hosts gives the placers' result: nothing placed, every unit rejected by no host", () => {
  for (let seed = 1; seed <= 40; seed++) {
    const prng = seededPrng(seed);
    const work = randomWork(prng, randomInt(prng, 1, 30));
    const units = work.map((w) => ({
      tasks: Array.isArray(w) ? w : [w],
      gang: Array.isArray(w),
      policy: PELOTON_POLICIES[(Array.isArray(w) ? w[0] : w).taskType],
    }));
    const partitions = 1 + (seed % 3);
    const round = () => new RoundBuilder(units).build([], 16);
    const fast = placeRound(round(), partitions);
    assert.deepEqual(fast, placeWithPlacers(round(), partitions), `seed ${seed}`);
    assert.ok(fast.hosts.every((h) => h === -1));
    assert.ok(fast.failures.every((f) => f !== null && f.every((k) => k === 0)), `seed ${seed}`);
  }
});
