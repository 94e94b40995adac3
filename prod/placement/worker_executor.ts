/** The PlacementExecutor over Deno workers (comlink): one worker per host partition, the same result as in process. */
import * as Comlink from "comlink";
import { RoundPlan } from "../../core/placement/plan.ts";
import { hostBuffers, type PlacementResult, type PlacementRound } from "../../core/placement/round.ts";
import type { PlacementExecutor } from "../../core/ports/placement_executor.ts";
import type { WorkerApi } from "./worker.ts";

export class WorkerExecutor implements PlacementExecutor {
  readonly #workers: Worker[] = [];
  readonly #remotes: Comlink.Remote<WorkerApi>[] = [];
  /** Rounds run one after another (an engine has one in flight; several engines queue here). */
  #tail: Promise<unknown> = Promise.resolve();
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
  }

  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void {
    if (this.#closed) throw new Error("Cannot place a round: the placement workers were closed");
    const run = this.#tail.then(() => this.run(round));
    // A worker that throws is a broken invariant: fail loudly rather than leave the engine waiting.
    this.#tail = run.then(onResult, (err) => {
      queueMicrotask(() => {
        throw err;
      });
    });
  }

  /** Places one round over the workers and merges their results in partition order. */
  async run(round: PlacementRound): Promise<PlacementResult> {
    const plan = new RoundPlan(round, this.partitions);
    const hosts = plan.partitionHosts();
    let items = plan.firstItems();
    const first = await Promise.all(
      this.#remotes.map((r, w) =>
        r.start(
          Comlink.transfer(hosts[w], hostBuffers(hosts[w])),
          round.groups,
          round.norms,
          round.scoreLimit,
          items[w],
        )
      ),
    );
    first.forEach((res, w) => plan.absorb(w, items[w], res));
    for (let rotation = 1; rotation < this.partitions; rotation++) {
      items = plan.nextItems();
      const more = await Promise.all(this.#remotes.map((r, w) => r.more(items[w])));
      more.forEach((res, w) => plan.absorb(w, items[w], res));
    }
    await Promise.all(this.#remotes.map((r) => r.end()));
    return plan.finish();
  }

  /** Waits for queued rounds, then stops the workers. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail.catch(() => undefined);
    for (const r of this.#remotes) r[Comlink.releaseProxy]();
    for (const w of this.#workers) w.terminate();
  }
}
