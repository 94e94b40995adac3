/**
 * The yardstick placer: exact best fit by scanning every host for every group (no index, no
 * partitions, no spreading). The benchmark reports what it places next to what the engine places.
 */
import { type Chooser, PartitionPlacer } from "./partition.ts";
import { PACK, type PlacementRound, type RoundGroup, sliceHosts, unitSlots, type WorkItem } from "./round.ts";

/** Places a round's units in order with full-scan best fit; returns the host id per task slot (-1: none). */
export function bestFit(round: PlacementRound): Int32Array {
  const all = Int32Array.from({ length: round.hosts.count }, (_, i) => i);
  const placer = new PartitionPlacer(sliceHosts(round.hosts, all), round.groups, round.norms, 1, fullScan());
  const slots = unitSlots(round);
  const items: WorkItem[] = round.units.map((u, i) => {
    let slot = slots[i];
    return {
      unit: i,
      atomic: u.atomic,
      parts: u.parts.map((p) => ({ ...p, slot: (slot += p.count) - p.count })),
    };
  });
  return placer.placeItems(items).hosts;
}

/**
 * Ranks every feasible host once per group by leftover (placing on a host changes only that host's
 * score, so the ranking stays exact while the group fills hosts in order).
 */
function fullScan(): Chooser {
  let stamp = -1, at = 0;
  let list: Int32Array = new Int32Array(0);
  return (p, _gi, g, remaining) => {
    if (p.stamp !== stamp) {
      stamp = p.stamp;
      list = rank(p, g, remaining);
      at = 0;
    }
    while (at < list.length && p.feasible(list[at], g) >= 0) at++;
    return at < list.length ? list[at] : -1;
  };
}

/** The `k` best feasible hosts, best first (ties to the lower id), through a bounded max-heap. */
function rank(p: PartitionPlacer, g: RoundGroup, k: number): Int32Array {
  const n = p.h.count, sign = g.strategy === PACK ? 1 : -1;
  const rows = new Int32Array(Math.min(k, n)), scores = new Float64Array(Math.min(k, n));
  let size = 0;
  // worse(a, b): a ranks after b.
  const worse = (sa: number, ra: number, sb: number, rb: number) => sa > sb || (sa === sb && ra > rb);
  for (let r = 0; r < n; r++) {
    if (p.feasible(r, g) >= 0) continue;
    const s = sign * p.score(r, g);
    if (size < rows.length) {
      let i = size++;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if (!worse(s, r, scores[up], rows[up])) break;
        rows[i] = rows[up];
        scores[i] = scores[up];
        i = up;
      }
      rows[i] = r;
      scores[i] = s;
    } else if (size && worse(scores[0], rows[0], s, r)) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= size) break;
        const c = l + 1 < size && worse(scores[l + 1], rows[l + 1], scores[l], rows[l]) ? l + 1 : l;
        if (!worse(scores[c], rows[c], s, r)) break;
        rows[i] = rows[c];
        scores[i] = scores[c];
        i = c;
      }
      rows[i] = r;
      scores[i] = s;
    }
  }
  const order = Array.from({ length: size }, (_, i) => i)
    .sort((a, b) => scores[a] - scores[b] || rows[a] - rows[b]);
  return Int32Array.from(order, (i) => rows[i]);
}
