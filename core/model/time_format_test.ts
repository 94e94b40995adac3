import assert from "node:assert/strict";
import { rfc3339 } from "./time_format.ts";

Deno.test("rfc3339 matches Date.toISOString across eras, leap days and millisecond edges", () => {
  const samples = [
    0,
    1,
    999,
    86_399_999,
    951_782_400_000,
    1_709_164_800_123,
    4_102_444_799_999,
    1_795_000_000_000,
  ];
  let x = 12345;
  for (let i = 0; i < 2000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    samples.push(Math.floor((x / 2147483648) * 4_200_000_000_000));
  }
  for (const ms of samples) assert.equal(rfc3339(ms), new Date(ms).toISOString(), `at ${ms}`);
});
