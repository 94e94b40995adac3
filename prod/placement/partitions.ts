/**
 * Partitions of the rounds in flight, by round id, and a round placed over several of them: the
 * coordinating worker runs the plan, so merging and leftover rotation never wait for the main thread.
 */
import { type ItemResults, PartitionPlacer } from "../../core/placement/partition.ts";
import { RoundPlan } from "../../core/placement/plan.ts";
import type {
  PlacementResult,
  PlacementRound,
  RoundGroup,
  RoundHosts,
  WorkItem,
} from "../../core/placement/round.ts";

/** One partition of each round in flight, here or in another worker. */
export interface Partition {
  /** Takes the partition of a new round and places its first items. */
  start(
    round: number,
    hosts: RoundHosts,
    groups: RoundGroup[],
    norms: [number, number, number],
    scoreLimit: number,
    items: WorkItem[],
  ): ItemResults | Promise<ItemResults>;
  /** Places more items (another partition's leftovers) on the same partition. */
  more(round: number, items: WorkItem[]): ItemResults | Promise<ItemResults>;
  /** Drops the round's partition. */
  end(round: number): void | Promise<void>;
}

/** The partitions this thread holds: rounds are sent as soon as they are built, so several can be in flight. */
export class LocalPartitions implements Partition {
  readonly #placers = new Map<number, PartitionPlacer>();

  start(
    round: number,
    hosts: RoundHosts,
    groups: RoundGroup[],
    norms: [number, number, number],
    scoreLimit: number,
    items: WorkItem[],
  ): ItemResults {
    const p = new PartitionPlacer(hosts, groups, norms, scoreLimit);
    this.#placers.set(round, p);
    return p.placeItems(items);
  }

  more(round: number, items: WorkItem[]): ItemResults {
    const p = this.#placers.get(round);
    if (!p) throw new Error(`Cannot place items of round ${round}: its partition was not started here`);
    return p.placeItems(items);
  }

  end(round: number): void {
    this.#placers.delete(round);
  }

  /** Rounds whose partition is held. */
  get rounds(): number {
    return this.#placers.size;
  }
}

/**
 * Places a round over the partitions (partition 0 is usually this thread's): the plan's gang phase
 * here, then every partition at once, leftovers rotated partition to partition; the same result as
 * `placeRound` with as many partitions.
 */
export async function placeOver(
  id: number,
  round: PlacementRound,
  parts: Partition[],
): Promise<PlacementResult> {
  const n = parts.length;
  const plan = new RoundPlan(round, n);
  if (round.hosts.count === 0) return plan.noHosts();
  const hosts = plan.partitionHosts();
  let items = plan.firstItems();
  // Others first: they work while this thread places its own partition.
  const first: (ItemResults | Promise<ItemResults>)[] = new Array(n);
  for (let w = n - 1; w >= 0; w--) {
    first[w] = parts[w].start(id, hosts[w], round.groups, round.norms, round.scoreLimit, items[w]);
  }
  (await Promise.all(first)).forEach((res, w) => plan.absorb(w, items[w], res));
  for (let rotation = 1; rotation < n; rotation++) {
    items = plan.nextItems();
    const more: (ItemResults | Promise<ItemResults>)[] = new Array(n);
    for (let w = n - 1; w >= 0; w--) more[w] = parts[w].more(id, items[w]);
    (await Promise.all(more)).forEach((res, w) => plan.absorb(w, items[w], res));
  }
  await Promise.all(parts.map((p) => p.end(id)));
  return plan.finish();
}
