/**
 * A PlacementExecutor on virtual time: each result arrives as an event at call time plus a modelled
 * placement latency, whatever executor computes it. With workers, virtual time runs on while a round
 * is out and stops only where its result is due and not back yet, so a seed still fixes the run.
 */
import type { PlacementResult, PlacementRound } from "../core/placement/round.ts";
import type { PlacementExecutor } from "../core/ports/placement_executor.ts";
import type { EventQueue } from "./event_queue.ts";

/** Modelled time a round takes: a fixed cost plus per task and per candidate host (about 200k tasks/s). */
export function placementLatencyMs(round: PlacementRound): number {
  let tasks = 0;
  for (const u of round.units) for (const p of u.parts) tasks += p.count;
  return Math.ceil(1 + tasks * 0.005 + round.hosts.count * 0.0005);
}

interface Outstanding {
  /** Virtual time of the result's delivery event. */
  atMs: number;
  back: Promise<void>;
}

export class SimPlacementExecutor implements PlacementExecutor {
  /** Rounds whose result has not come back, in delivery order. */
  #out: Outstanding[] = [];

  constructor(
    private readonly inner: PlacementExecutor,
    private readonly queue: EventQueue,
    private readonly latencyMs: (round: PlacementRound) => number = placementLatencyMs,
  ) {}

  get partitions(): number {
    return this.inner.partitions;
  }

  /** A round is out in workers. */
  get busy(): boolean {
    return this.#out.length > 0;
  }

  /** Whether virtual time must stop before `timeMs`: a result due by then is not back yet. */
  blocks(timeMs: number): boolean {
    return this.#out.length > 0 && this.#out[0].atMs <= timeMs;
  }

  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void {
    let result: PlacementResult | undefined;
    const atMs = this.queue.now + this.latencyMs(round);
    // The delivery takes its place in the event order now, however long the workers take.
    this.queue.schedule(atMs, () => {
      if (!result) {
        throw new Error("Cannot deliver a placement result: the runner did not wait for the workers");
      }
      onResult(result);
    });
    let resolve = () => {};
    const entry: Outstanding = { atMs, back: new Promise<void>((r) => (resolve = r)) };
    this.inner.place(round, (r) => {
      result = r;
      this.#out = this.#out.filter((o) => o !== entry);
      resolve();
    });
    if (!result) {
      this.#out.push(entry);
      this.#out.sort((a, b) => a.atMs - b.atMs);
    }
  }

  /** Resolves when the round due first is back. */
  async next(): Promise<void> {
    if (this.#out.length) await this.#out[0].back;
  }

  /** Resolves once every round handed out so far is back. */
  async settle(): Promise<void> {
    await Promise.all(this.#out.map((o) => o.back));
  }
}

/**
 * Runs the queue to `until` (or until `done`), waiting for workers only where a result is due and
 * not back: the events run in the same order whether placement runs in workers or in process.
 */
export async function runWithPlacement(
  queue: EventQueue,
  executor: SimPlacementExecutor,
  until: number,
  done: () => boolean = () => false,
): Promise<void> {
  for (;;) {
    while (executor.blocks(queue.peekTime())) await executor.next();
    if (done()) return;
    queue.runUntil(until, () => done() || executor.blocks(queue.peekTime()));
    if (done() || (queue.peekTime() > until && !executor.blocks(queue.peekTime()))) return;
    if (queue.size === 0 && !executor.busy) return;
  }
}
