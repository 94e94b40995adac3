/** `sliceHosts` against a row-by-row reference: every column, the port ranges and the static ports taken. */
import assert from "node:assert/strict";
import { randomInt, seededPrng } from "../ports/prng.ts";
import { type RoundHosts, sliceHosts } from "./round.ts";

function randomHosts(seed: number, count: number): RoundHosts {
  const prng = seededPrng(seed);
  const col = (max: number) => Int32Array.from({ length: count }, () => randomInt(prng, 0, max));
  const portStart = new Int32Array(count + 1);
  for (let r = 0; r < count; r++) portStart[r + 1] = portStart[r] + randomInt(prng, 0, 3);
  const portRanges = Int32Array.from({ length: portStart[count] * 2 }, (_, k) => 31000 + k * 10);
  const statics: number[] = [];
  for (let r = 0; r < count; r++) {
    if (randomInt(prng, 0, 4) === 0) statics.push(r, 31000 + randomInt(prng, 0, 100));
  }
  return {
    count,
    ids: Int32Array.from({ length: count }, (_, r) => r),
    cpu: col(32000),
    mem: col(65536),
    disk: col(100000),
    gpu: col(4000),
    slack: col(8000),
    flags: Uint8Array.from({ length: count }, () => randomInt(prng, 0, 4)),
    portStart,
    portRanges,
    portNext: col(40000),
    portFree: col(1000),
    portStatic: Int32Array.from(statics),
    attrs: [col(5), col(50)],
    labels: [col(3), col(2), col(7)],
  };
}

function reference(h: RoundHosts, rows: number[]): RoundHosts {
  const pick = <T extends Int32Array | Uint8Array>(a: T) => rows.map((r) => a[r]);
  const ranges: number[] = [], starts = [0], statics: number[] = [];
  for (const r of rows) {
    for (let k = h.portStart[r] * 2; k < h.portStart[r + 1] * 2; k++) ranges.push(h.portRanges[k]);
    starts.push(ranges.length / 2);
  }
  for (let k = 0; k < h.portStatic.length; k += 2) {
    const i = rows.indexOf(h.portStatic[k]);
    if (i >= 0) statics.push(i, h.portStatic[k + 1]);
  }
  return {
    count: rows.length,
    ids: Int32Array.from(pick(h.ids)),
    cpu: Int32Array.from(pick(h.cpu)),
    mem: Int32Array.from(pick(h.mem)),
    disk: Int32Array.from(pick(h.disk)),
    gpu: Int32Array.from(pick(h.gpu)),
    slack: Int32Array.from(pick(h.slack)),
    flags: Uint8Array.from(pick(h.flags)),
    portStart: Int32Array.from(starts),
    portRanges: Int32Array.from(ranges),
    portNext: Int32Array.from(pick(h.portNext)),
    portFree: Int32Array.from(pick(h.portFree)),
    portStatic: Int32Array.from(statics),
    attrs: h.attrs.map((a) => Int32Array.from(pick(a))),
    labels: h.labels.map((a) => Int32Array.from(pick(a))),
  };
}

Deno.test("sliceHosts: each partition's rows (row mod n) and an arbitrary subset give the reference's columns", () => {
  for (let seed = 1; seed <= 20; seed++) {
    const h = randomHosts(seed, 1 + seed * 7);
    const subsets: number[][] = [];
    for (let n = 1; n <= 4; n++) {
      for (let w = 0; w < n; w++) subsets.push([...Array(h.count).keys()].filter((r) => r % n === w));
    }
    subsets.push([...Array(h.count).keys()].filter((r) => r % 3 !== 1).reverse(), []);
    for (const rows of subsets) {
      assert.deepEqual(
        sliceHosts(h, Int32Array.from(rows)),
        reference(h, rows),
        `seed ${seed}, rows ${rows}`,
      );
    }
  }
});
