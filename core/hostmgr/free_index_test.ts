import assert from "node:assert/strict";
import {
  cellCpuLevel,
  cellLow,
  cellMemLevel,
  cellOf,
  cellOrder,
  CELLS,
  CPU_LADDER,
  FreeIndex,
  level,
} from "./free_index.ts";

Deno.test("levels are the largest ladder step at or below the value", () => {
  assert.equal(level(CPU_LADDER, -5), 0);
  assert.equal(level(CPU_LADDER, 0), 0);
  assert.equal(level(CPU_LADDER, 999), 3);
  assert.equal(level(CPU_LADDER, 1000), 4);
  assert.equal(level(CPU_LADDER, 10_000_000), CPU_LADDER.length - 1);
  const c = cellOf(2500, 4096);
  assert.deepEqual(cellLow(c), [2500, 4096]);
  assert.equal(cellOf(2999, 6143), c, "values inside a step share its cell");
});

Deno.test("cell lookup tables agree with the ladders everywhere", () => {
  for (let cpu = 0; cpu <= 300_000; cpu += 125) {
    assert.equal(cellCpuLevel(cellOf(cpu, 0)), level(CPU_LADDER, cpu), `cpu ${cpu}`);
  }
  assert.equal(cellMemLevel(cellOf(0, 3_000_000)), cellMemLevel(cellOf(0, 2_097_152)));
});

Deno.test("hosts move between cells and pools in O(1) and are counted", () => {
  const ix = new FreeIndex(2, 2);
  ix.set(0, 0, 4000, 8192);
  ix.set(1, 0, 4000, 8192);
  ix.set(2, 1, 1000, 1024);
  const c = cellOf(4000, 8192);
  assert.equal(ix.count(0, c), 2);
  assert.equal(ix.size(0), 2);
  assert.equal(ix.size(1), 1);
  ix.set(0, 0, 500, 512);
  assert.equal(ix.count(0, c), 1);
  const seen: number[] = [];
  for (let h = ix.first(0, c); h >= 0; h = ix.next(h)) seen.push(h);
  assert.deepEqual(seen, [1]);
  ix.remove(1);
  ix.remove(1);
  assert.equal(ix.count(0, c), 0, "removing twice is harmless");
  assert.equal(ix.has(1), false);
  assert.equal(ix.size(0), 1);
});

Deno.test("the best-fit order starts at the emptiest cell and ends at the fullest", () => {
  const order = cellOrder(32_000, 131_072);
  assert.equal(order.length, CELLS);
  assert.equal(order[0], 0);
  const key = (cell: number) => cellLow(cell)[0] / 32_000 + cellLow(cell)[1] / 131_072;
  for (let i = 1; i < order.length; i++) assert.ok(key(order[i - 1]) <= key(order[i]));
});
