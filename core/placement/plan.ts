/**
 * A round over partitions: gangs, and work that spreads over a failure domain or takes the most free host,
 * first over all hosts (a partition sees only its hosts, so it would spread and rank by them alone); then
 * the rest split over disjoint partitions (host row mod N), leftovers rotated to the next partition; merged
 * in a fixed order, so the result depends only on the round and the partition count. With one partition
 * nothing is split or copied: one placer takes the gangs, then the rest. Placing consumes the round's host
 * columns.
 */
import { type ItemResults, PartitionPlacer } from "./partition.ts";
import {
  MOST_FREE,
  type PlacementResult,
  type PlacementRound,
  portOffsets,
  REASONS,
  type RoundHosts,
  sliceHosts,
  unitSlots,
  type WorkItem,
} from "./round.ts";

export class RoundPlan {
  readonly slots: Int32Array;
  readonly portOf: Int32Array;
  readonly #result: PlacementResult;
  /** Latest rejection counts per unit and partition (index `partitions` holds the gang phase's). */
  readonly #diag = new Map<number, Int32Array>();
  #left: WorkItem[][];
  #hosts?: RoundHosts[];

  constructor(readonly round: PlacementRound, readonly partitions: number) {
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new Error(`Cannot plan a round over ${partitions} partitions: expected a positive integer`);
    }
    this.slots = unitSlots(round);
    this.portOf = portOffsets(round, this.slots);
    const total = this.slots[this.slots.length - 1];
    this.#result = {
      hosts: new Int32Array(total).fill(-1),
      ports: new Int32Array(this.portOf[total]),
      failures: round.units.map(() => null),
    };
    this.#left = Array.from({ length: partitions }, () => []);
  }

  /**
   * Places the gangs, then the work that must see every host (`#global`), over all hosts (here, on this
   * thread), then splits the hosts into partitions.
   */
  partitionHosts(): RoundHosts[] {
    if (this.#hosts) return this.#hosts;
    const r = this.round;
    // One partition: its placer takes the gangs first (`firstItems`), on the round's own columns.
    if (this.partitions === 1) return this.#hosts = [r.hosts];
    const items = this.#gangItems();
    r.units.forEach((u, i) => {
      if (u.atomic || !this.#global(i)) return;
      for (const p of u.parts) {
        items.push({
          unit: i,
          atomic: false,
          parts: [{ ...p, slot: this.slots[i] + this.#partStart(i, p) }],
        });
      }
    });
    let hosts = r.hosts;
    if (items.length) {
      const placer = new PartitionPlacer(r.hosts, r.groups, r.norms, r.scoreLimit);
      const res = placer.placeItems(items);
      this.absorb(this.partitions, items, res);
      hosts = placer.state();
    }
    const rows: number[][] = Array.from({ length: this.partitions }, () => []);
    for (let row = 0; row < hosts.count; row++) rows[row % this.partitions].push(row);
    return this.#hosts = rows.map((list) => sliceHosts(hosts, Int32Array.from(list)));
  }

  /** Each partition's share of the units that are not gangs (with one partition, the gangs first). */
  firstItems(): WorkItem[][] {
    const n = this.partitions, out: WorkItem[][] = Array.from({ length: n }, () => []);
    if (n === 1) out[0] = this.#gangItems();
    this.round.units.forEach((u, i) => {
      if (u.atomic || (n > 1 && this.#global(i))) return;
      for (const p of u.parts) {
        const g = this.round.groups[p.group];
        const slot0 = this.slots[i] + this.#partStart(i, p);
        // Work bound to one host goes to the partition that holds it.
        const owner = g.requireHost >= 0 ? g.requireHost % n : g.preferHost >= 0 ? g.preferHost % n : -1;
        if (owner >= 0 || p.count === 1) {
          out[owner >= 0 ? owner : i % n].push({ unit: i, atomic: false, parts: [{ ...p, slot: slot0 }] });
          continue;
        }
        const base = Math.floor(p.count / n), extra = p.count % n;
        let off = 0;
        for (let k = 0; k < n; k++) {
          const count = base + (k < extra ? 1 : 0);
          if (count) {
            out[(i + k) % n].push({
              unit: i,
              atomic: false,
              parts: [{ group: p.group, count, slot: slot0 + off }],
            });
          }
          off += count;
        }
      }
    });
    return out;
  }

  /**
   * Work placed over all hosts before the split: spreading over a failure domain counts the tasks per domain,
   * and most free first compares hosts, over every host of the round, as with one partition.
   */
  #global(unit: number): boolean {
    const groups = this.round.groups;
    return this.round.units[unit].parts.some((p) =>
      groups[p.group].domain >= 0 || groups[p.group].strategy === MOST_FREE
    );
  }

  #gangItems(): WorkItem[] {
    const gangs: WorkItem[] = [];
    this.round.units.forEach((u, i) => {
      if (!u.atomic) return;
      let slot = this.slots[i];
      gangs.push({
        unit: i,
        atomic: true,
        parts: u.parts.map((p) => ({ group: p.group, count: p.count, slot: (slot += p.count) - p.count })),
      });
    });
    return gangs;
  }

  /** What partition `from` left unplaced goes to the next partition. */
  nextItems(): WorkItem[][] {
    const n = this.partitions, left = this.#left;
    this.#left = Array.from({ length: n }, () => []);
    return Array.from({ length: n }, (_, w) => left[(w - 1 + n) % n]);
  }

  /** Records a partition's (or the gang phase's) results for its items. */
  absorb(partition: number, items: WorkItem[], res: ItemResults): void {
    const out = this.#result;
    let at = 0, portAt = 0;
    items.forEach((it, i) => {
      for (const p of it.parts) {
        out.hosts.set(res.hosts.subarray(at, at + p.count), p.slot);
        const dyn = this.round.groups[p.group].dynamicPorts;
        if (dyn) out.ports.set(res.ports.subarray(portAt, portAt + p.count * dyn), this.portOf[p.slot]);
        if (!it.atomic && res.failed[i]) {
          let placed = 0;
          while (placed < p.count && res.hosts[at + placed] >= 0) placed++;
          if (partition < this.partitions) {
            this.#left[partition].push({
              unit: it.unit,
              atomic: false,
              parts: [{ group: p.group, count: p.count - placed, slot: p.slot + placed }],
            });
          }
        }
        at += p.count;
        portAt += p.count * dyn;
      }
      if (res.failed[i]) {
        let d = this.#diag.get(it.unit);
        if (!d) this.#diag.set(it.unit, d = new Int32Array((this.partitions + 1) * REASONS));
        d.set(res.failures.subarray(i * REASONS, (i + 1) * REASONS), partition * REASONS);
      }
    });
  }

  /**
   * The result of a round without hosts, which placing would give: nothing placed, and each unit with a
   * task rejected by no host (all counts 0). Without the placers' columns and indexes, as a saturated
   * cluster runs many such rounds (each freed host is leased, and taken, at once).
   */
  noHosts(): PlacementResult {
    const out = this.#result;
    this.round.units.forEach((_, i) => {
      if (this.slots[i + 1] > this.slots[i]) out.failures[i] = new Int32Array(REASONS);
    });
    return out;
  }

  /** The merged result: a unit with an unplaced task carries the rejection counts over all hosts. */
  finish(): PlacementResult {
    const out = this.#result;
    this.round.units.forEach((_, i) => {
      let whole = true;
      for (let s = this.slots[i]; s < this.slots[i + 1]; s++) if (out.hosts[s] < 0) whole = false;
      const d = this.#diag.get(i);
      if (whole || !d) return;
      const sum = new Int32Array(REASONS);
      // Gangs and work that must see every host were tried over every host at once; the rest partition by
      // partition.
      const allHosts = this.partitions > 1 && (this.round.units[i].atomic || this.#global(i));
      const from = allHosts ? this.partitions : 0;
      const to = allHosts ? this.partitions + 1 : this.partitions;
      for (let w = from; w < to; w++) for (let k = 0; k < REASONS; k++) sum[k] += d[w * REASONS + k];
      out.failures[i] = sum;
    });
    return out;
  }

  #partStart(unit: number, part: { group: number; count: number }): number {
    let off = 0;
    for (const p of this.round.units[unit].parts) {
      if (p === part) return off;
      off += p.count;
    }
    return off;
  }
}

/** Places a round on this thread, partition after partition: the same result worker placement gives. */
export function placeRound(round: PlacementRound, partitions = 1): PlacementResult {
  if (round.hosts.count === 0) return new RoundPlan(round, partitions).noHosts();
  return placeWithPlacers(round, partitions);
}

/** `placeRound` without its shortcut for a round without hosts: placers over every partition. */
export function placeWithPlacers(round: PlacementRound, partitions = 1): PlacementResult {
  const plan = new RoundPlan(round, partitions);
  const placers = plan.partitionHosts().map((h) =>
    new PartitionPlacer(h, round.groups, round.norms, round.scoreLimit)
  );
  let items = plan.firstItems();
  for (let r = 0;; r++) {
    placers.forEach((p, w) => plan.absorb(w, items[w], p.placeItems(items[w])));
    if (r + 1 >= partitions) break;
    items = plan.nextItems();
  }
  return plan.finish();
}
