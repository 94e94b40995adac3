/** Pending statuses come out in (time, sequence) order, whether they wait in the heap or in a bucket. */
import assert from "node:assert/strict";
import { seededPrng } from "../core/ports/prng.ts";
import { StatusHeap } from "./status_heap.ts";

Deno.test("statuses pop by time, ties first-in first-out, across pushes made while popping", () => {
  const prng = seededPrng(5);
  const heap = new StatusHeap();
  const pushed: { time: number; n: number }[] = [];
  let now = 0, n = 0;
  const push = (time: number) => {
    heap.push(time, n, 0, n, null);
    pushed.push({ time, n: n++ });
  };
  const popped: number[] = [];
  for (let round = 0; round < 400; round++) {
    // Some due at once, some soon (many tie, some between milliseconds), some far off; later rounds push
    // into seconds already moved to the per-time lists.
    for (let i = 0; i < 20; i++) {
      const r = prng();
      push(
        r < 0.3
          ? now
          : r < 0.5
          ? now + Math.floor(prng() * 50) * 10
          : r < 0.6
          ? now + prng() * 5
          : now + Math.floor(prng() * 100_000),
      );
    }
    now += Math.floor(prng() * 800);
    while (heap.popDue(now)) popped.push(heap.task);
    assert.ok(heap.peekTime() > now);
  }
  while (heap.popDue(Infinity)) popped.push(heap.task);
  assert.equal(heap.size, 0);
  // Statuses pushed later are never due before what was already popped: the whole order is (time, n).
  const expected = [...pushed].sort((a, b) => a.time - b.time || a.n - b.n).map((p) => p.n);
  assert.deepEqual(popped, expected);
});

Deno.test("forEach sees every status not popped yet, whether it waits in a time's list or a second's", () => {
  const heap = new StatusHeap();
  const extra = { reason: "why" };
  // Due at once, within the first second (moved to their times' lists at the first pop), and seconds later.
  for (const [n, time] of [0, 5, 400, 999, 1500, 60_000].entries()) {
    heap.push(time, n, 1, n, n === 5 ? extra : null);
  }
  assert.ok(heap.popDue(0));
  const seen: [number, number, number, unknown][] = [];
  heap.forEach((task, state, generation, x) => seen.push([task, state, generation, x]));
  assert.deepEqual(seen.sort((a, b) => a[0] - b[0]), [
    [1, 1, 1, null],
    [2, 1, 2, null],
    [3, 1, 3, null],
    [4, 1, 4, null],
    [5, 1, 5, extra],
  ]);
  assert.equal(seen.length, heap.size);
});
