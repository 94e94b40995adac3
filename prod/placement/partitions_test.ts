import assert from "node:assert/strict";
import { placeRound } from "../../core/placement/plan.ts";
import { randomRound } from "../../core/placement/testing.ts";
import { LocalPartitions, type Partition, placeOver } from "./partitions.ts";
import { assertSamePlacement } from "./testing.ts";

/** Partitions that answer late, the later the lower their number: the merge must not follow arrival order. */
function slow(inner: LocalPartitions, w: number): Partition {
  const later = <T>(f: () => T) =>
    new Promise<T>((resolve, reject) =>
      setTimeout(() => {
        try {
          resolve(f());
        } catch (e) {
          reject(e);
        }
      }, 3 - w)
    );
  return {
    start: (...args) => later(() => inner.start(...args)),
    more: (round, items) => later(() => inner.more(round, items)),
    end: (round) => later(() => inner.end(round)),
  };
}

Deno.test("a round placed over partitions gives placeRound's result, whenever the partitions answer", async () => {
  for (const n of [1, 2, 3]) {
    for (let seed = 1; seed <= 10; seed++) {
      const expected = placeRound(randomRound(seed), n);
      const here = Array.from({ length: n }, () => new LocalPartitions());
      assertSamePlacement(
        await placeOver(seed, randomRound(seed), here),
        expected,
        `seed ${seed}, ${n} partitions`,
      );
      const late = Array.from({ length: n }, (_, w) => slow(new LocalPartitions(), w));
      assertSamePlacement(
        await placeOver(seed, randomRound(seed), late),
        expected,
        `seed ${seed}, ${n} late partitions`,
      );
    }
  }
});

Deno.test("rounds in flight at once keep their partitions apart, and each is dropped when done", async () => {
  const parts = [new LocalPartitions(), new LocalPartitions()];
  const seeds = [3, 4, 5, 6];
  // Started together: their starts and rotations interleave in the same partitions.
  const results = await Promise.all(seeds.map((s, i) => placeOver(i, randomRound(s), parts)));
  results.forEach((r, i) => assertSamePlacement(r, placeRound(randomRound(seeds[i]), 2), `seed ${seeds[i]}`));
  assert.deepEqual(parts.map((p) => p.rounds), [0, 0]);
});

Deno.test("more items for a round the partition never started is an error that names the round", () => {
  assert.throws(() => new LocalPartitions().more(7, []), /round 7: its partition was not started/);
});
