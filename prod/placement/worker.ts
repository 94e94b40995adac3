/** The placement worker: holds one partition of a round's hosts and places the work items it is sent. */
import * as Comlink from "comlink";
import { type ItemResults, PartitionPlacer } from "../../core/placement/partition.ts";
import type { RoundGroup, RoundHosts, WorkItem } from "../../core/placement/round.ts";

let placer: PartitionPlacer | undefined;

function transferable(r: ItemResults): ItemResults {
  return Comlink.transfer(
    r,
    [r.hosts.buffer, r.ports.buffer, r.failures.buffer, r.failed.buffer] as ArrayBuffer[],
  );
}

/** What the executor calls, over comlink. */
export const workerApi = {
  /** Takes a partition for a new round and places its first items. */
  start(
    hosts: RoundHosts,
    groups: RoundGroup[],
    norms: [number, number, number],
    scoreLimit: number,
    items: WorkItem[],
  ): ItemResults {
    placer = new PartitionPlacer(hosts, groups, norms, scoreLimit);
    return transferable(placer.placeItems(items));
  },
  /** Places more items (another partition's leftovers) on the same partition. */
  more(items: WorkItem[]): ItemResults {
    if (!placer) throw new Error("Cannot place items: no partition was started in this worker");
    return transferable(placer.placeItems(items));
  },
  /** Drops the partition at the end of a round. */
  end(): void {
    placer = undefined;
  },
};

export type WorkerApi = typeof workerApi;

Comlink.expose(workerApi);
