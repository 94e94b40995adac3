/** Prng port: seeded randomness, passed in as an argument like Deno std's `random/_types.ts`. */

/** Returns a float in [0, 1). */
export type Prng = () => number;

/**
 * xoshiro128** seeded through splitmix32: fast, 32-bit, and identical on every platform, so one
 * seed reproduces a whole simulation. Production seeds it from the OS's entropy.
 */
export function seededPrng(seed: number): Prng {
  let x = seed >>> 0;
  const split = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split(), b = split(), c = split(), d = split();
  return () => {
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result / 4294967296;
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** An integer in [min, max]. */
export function randomInt(prng: Prng, min: number, max: number): number {
  return min + Math.floor(prng() * (max - min + 1));
}

/** A version-4-shaped UUID drawn from the PRNG (deterministic under a seed). */
export function randomUuid(prng: Prng): string {
  const hex: string[] = [];
  for (let i = 0; i < 16; i++) {
    let byte = Math.floor(prng() * 256);
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    if (i === 8) byte = (byte & 0x3f) | 0x80;
    hex.push(byte.toString(16).padStart(2, "0"));
  }
  const s = hex.join("");
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}
