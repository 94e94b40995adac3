/**
 * The placement worker. Every worker holds one partition of each round in flight; worker 0 also
 * coordinates: the main thread sends it whole rounds, and it drives the other workers over
 * MessagePorts (comlink), so a round needs the main thread only to send it and to take the result.
 */
import * as Comlink from "comlink";
import type { ItemResults } from "../../core/placement/partition.ts";
import type { PlacementResult, PlacementRound, RoundHosts } from "../../core/placement/round.ts";
import { hostBuffers } from "../../core/placement/round.ts";
import { CLOSING } from "./closing.ts";
import { LocalPartitions, type Partition, placeOver } from "./partitions.ts";

const local = new LocalPartitions();
let peers: Partition[] = [];

function transferResults(r: ItemResults): ItemResults {
  return Comlink.transfer(
    r,
    [r.hosts.buffer, r.ports.buffer, r.failures.buffer, r.failed.buffer] as ArrayBuffer[],
  );
}

/** Another worker's partitions, through a port: hosts go over transferred, not copied. */
function remote(port: MessagePort): Partition {
  const api = Comlink.wrap<PartitionApi>(port);
  return {
    start: (round, hosts, groups, norms, scoreLimit, items) =>
      api.start(round, Comlink.transfer(hosts, hostBuffers(hosts)), groups, norms, scoreLimit, items),
    more: (round, items) => api.more(round, items),
    end: (round) => api.end(round),
  };
}

/** What the coordinating worker calls on the others. */
const partitionApi = {
  start(
    round: number,
    hosts: RoundHosts,
    groups: PlacementRound["groups"],
    norms: [number, number, number],
    scoreLimit: number,
    items: Parameters<Partition["more"]>[1],
  ): ItemResults {
    return transferResults(local.start(round, hosts, groups, norms, scoreLimit, items));
  },
  more(round: number, items: Parameters<Partition["more"]>[1]): ItemResults {
    return transferResults(local.more(round, items));
  },
  end(round: number): void {
    local.end(round);
  },
};
export type PartitionApi = typeof partitionApi;

/** What the executor on the main thread calls. */
export const workerApi = {
  /** Serves this worker's partitions to the coordinator over `port`. */
  serve(port: MessagePort): void {
    Comlink.expose(partitionApi, port);
  },
  /** Makes this worker the coordinator of itself and the workers behind `ports`. */
  coordinate(ports: MessagePort[]): void {
    peers = ports.map(remote);
  },
  /** Places a whole round over this worker's partition and its peers'. */
  async place(id: number, round: PlacementRound): Promise<PlacementResult> {
    const r = await placeOver(id, round, [local, ...peers]);
    const buffers = [r.hosts.buffer, r.ports.buffer];
    for (const f of r.failures) if (f) buffers.push(f.buffer);
    return Comlink.transfer(r, buffers as ArrayBuffer[]);
  },
};

export type WorkerApi = typeof workerApi;

// Whatever closes this worker says so first, so the executor fails the rounds it holds. (The worker's
// global scope, typed here as the slice used: the project's types are the main thread's.)
const scope = globalThis as unknown as { close(): void; postMessage(message: unknown): void };
const closeWorker = scope.close;
scope.close = () => {
  scope.postMessage({ kind: CLOSING });
  closeWorker();
};

Comlink.expose(workerApi);
