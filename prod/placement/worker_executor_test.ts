import assert from "node:assert/strict";
import { placeRound } from "../../core/placement/plan.ts";
import { randomRound } from "../../core/placement/testing.ts";
import { WorkerExecutor } from "./worker_executor.ts";
import { assertSamePlacement } from "./testing.ts";

Deno.test("workers place a round exactly as the in-process plan with the same partition count", async () => {
  for (const partitions of [1, 2, 3]) {
    const exec = new WorkerExecutor(partitions);
    try {
      for (let seed = 1; seed <= 12; seed++) {
        const expected = placeRound(randomRound(seed), partitions);
        const got = await exec.run(randomRound(seed));
        assertSamePlacement(got, expected, `seed ${seed}, ${partitions} workers`);
      }
    } finally {
      await exec.close();
    }
  }
});

Deno.test("place() sends rounds at once, several in flight; each result comes back once, in order", async () => {
  const exec = new WorkerExecutor(2);
  try {
    const got: number[] = [];
    const done = new Promise<void>((resolve) => {
      for (const seed of [3, 4, 5]) {
        exec.place(randomRound(seed), (r) => {
          got.push(seed);
          assertSamePlacement(r, placeRound(randomRound(seed), 2), `seed ${seed}`);
          if (got.length === 3) resolve();
        });
      }
    });
    await done;
    assert.deepEqual(got, [3, 4, 5]);
  } finally {
    await exec.close();
  }
});
