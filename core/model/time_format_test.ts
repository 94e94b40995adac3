import assert from "node:assert/strict";
import { parseRfc3339, rfc3339 } from "./time_format.ts";

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

Deno.test("parseRfc3339 reads back what rfc3339 writes, offsets and long fractions included, as Date.parse", () => {
  let x = 777;
  for (let i = 0; i < 2000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const ms = Math.floor((x / 2147483648) * 4_200_000_000_000);
    assert.equal(parseRfc3339(rfc3339(ms)), ms, `at ${ms}`);
  }
  for (const s of ["2024-02-29T23:59:59+05:30", "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.123456789Z"]) {
    assert.equal(parseRfc3339(s), Date.parse(s), s);
  }
  for (const bad of ["", "yesterday", "2026-13-01T00:00:00Z", "2026-01-01", "2026-01-01T00:00:00"]) {
    assert.equal(parseRfc3339(bad), undefined, bad);
  }
});
