/** Port ranges of a host: what is free, and picking ports for tasks. */

/** Number of ports in the ranges not in `used`. */
export function countFree(ranges: [number, number][], used: ReadonlySet<number>): number {
  let total = 0;
  for (const [lo, hi] of ranges) total += hi - lo + 1;
  for (const p of used) if (ranges.some(([lo, hi]) => p >= lo && p <= hi)) total--;
  return total;
}

/** The ranges with `used` ports cut out. */
export function freePortRanges(ranges: [number, number][], used: ReadonlySet<number>): [number, number][] {
  if (!used.size) return ranges.map(([lo, hi]) => [lo, hi]);
  const taken = [...used].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (const [lo, hi] of ranges) {
    let start = lo;
    for (const p of taken) {
      if (p < start || p > hi) continue;
      if (p > start) out.push([start, p - 1]);
      start = p + 1;
    }
    if (start <= hi) out.push([start, hi]);
  }
  return out;
}

/**
 * Picks ports for a task from free ranges: static ports must be free, dynamic ones (value 0) take
 * the lowest free port. Returns undefined when the ranges cannot satisfy the request. `taken`
 * holds ports already picked on this host in the same round and is updated.
 */
export function pickPorts(
  wanted: { name: string; value: number }[],
  free: [number, number][],
  taken: Set<number>,
): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  const inFree = (p: number) => free.some(([lo, hi]) => p >= lo && p <= hi);
  const picked: number[] = [];
  for (const w of wanted) {
    if (w.value === 0) continue;
    if (!inFree(w.value) || taken.has(w.value) || picked.includes(w.value)) return undefined;
    out[w.name] = w.value;
    picked.push(w.value);
  }
  for (const w of wanted) {
    if (w.value !== 0) continue;
    let found: number | undefined;
    for (const [lo, hi] of free) {
      for (let p = lo; p <= hi; p++) {
        if (!taken.has(p) && !picked.includes(p)) {
          found = p;
          break;
        }
      }
      if (found !== undefined) break;
    }
    if (found === undefined) return undefined;
    out[w.name] = found;
    picked.push(found);
  }
  for (const p of picked) taken.add(p);
  return out;
}
