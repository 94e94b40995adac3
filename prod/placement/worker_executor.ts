/**
 * The PlacementExecutor over Deno workers (comlink): one worker per host partition, the same result as
 * in process. A round goes to worker 0 the moment it is placed, and worker 0 drives the others.
 */
import * as Comlink from "comlink";
import { hostBuffers, type PlacementResult, type PlacementRound } from "../../core/placement/round.ts";
import type { PlacementExecutor } from "../../core/ports/placement_executor.ts";
import type { WorkerApi } from "./worker.ts";

export class WorkerExecutor implements PlacementExecutor {
  readonly #workers: Worker[] = [];
  readonly #remotes: Comlink.Remote<WorkerApi>[] = [];
  /** Results are handed over in the order the rounds were placed. */
  #tail: Promise<unknown> = Promise.resolve();
  #rounds = 0;
  #closed = false;

  constructor(readonly partitions: number) {
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new Error(`Cannot start ${partitions} placement workers: expected a positive integer`);
    }
    for (let i = 0; i < partitions; i++) {
      const w = new Worker(new URL("./worker.ts", import.meta.url), {
        type: "module",
        name: `placement-${i}`,
      });
      this.#workers.push(w);
      this.#remotes.push(Comlink.wrap<WorkerApi>(w));
    }
    // Worker 0 coordinates; the others serve their partitions to it over their own channel.
    const ports: MessagePort[] = [];
    const setup: Promise<void>[] = [];
    for (let i = 1; i < partitions; i++) {
      const { port1, port2 } = new MessageChannel();
      ports.push(port1);
      setup.push(this.#remotes[i].serve(Comlink.transfer(port2, [port2])));
    }
    setup.push(this.#remotes[0].coordinate(Comlink.transfer(ports, ports)));
    // Messages queue in order behind these, so rounds need not wait for them; a failure is loud.
    this.#tail = Promise.all(setup);
  }

  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void {
    if (this.#closed) throw new Error("Cannot place a round: the placement workers were closed");
    // Posted now, not when the rounds before it are back: worker 0 queues it while this thread goes on.
    const run = this.run(round);
    const prev = this.#tail;
    // A worker that throws is a broken invariant: fail loudly rather than leave the engine waiting.
    this.#tail = prev.then(() => run).then(onResult, (err) => {
      queueMicrotask(() => {
        throw err;
      });
    });
  }

  /** Places one round in the workers (posted before this returns). */
  run(round: PlacementRound): Promise<PlacementResult> {
    const id = this.#rounds++;
    return this.#remotes[0].place(id, Comlink.transfer(round, hostBuffers(round.hosts)));
  }

  /** Waits for rounds in flight, then stops the workers. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail.catch(() => undefined);
    for (const r of this.#remotes) r[Comlink.releaseProxy]();
    for (const w of this.#workers) w.terminate();
  }
}
