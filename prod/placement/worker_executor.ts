/**
 * The PlacementExecutor over Deno workers (comlink): one worker per host partition, the same result as
 * in process. A round goes to worker 0 the moment it is placed, and worker 0 drives the others.
 */
import * as Comlink from "comlink";
import {
  hostBuffers,
  type PlacementResult,
  type PlacementRound,
  portOffsets,
  REASONS,
  unitSlots,
} from "../../core/placement/round.ts";
import type { PlacementExecutor } from "../../core/ports/placement_executor.ts";
import { isClosingNotice } from "./closing.ts";
import type { WorkerApi } from "./worker.ts";

export interface WorkerExecutorOptions {
  /** The worker module (default `./worker.ts`); tests point it at one that dies. */
  module?: URL;
  /**
   * With rounds out, how long the workers may go without answering one before they count as hung (an
   * endless loop, a deadlock): the set fails as if a worker had died. Off by default (wall time has no
   * place in a simulation); production daemons set `PRODUCTION_ROUND_TIMEOUT_MS`.
   */
  roundTimeoutMs?: number;
}

/**
 * A round of 50,000 hosts takes well under a second; a minute without any answer is a hang, not a slow
 * machine.
 */
export const PRODUCTION_ROUND_TIMEOUT_MS = 60_000;

/** How long `close` waits for rounds in flight before it answers them itself. */
const CLOSE_GRACE_MS = 5_000;

/** One set of workers, wired together; replaced whole when any of them fails. */
interface Generation {
  workers: Worker[];
  remotes: Comlink.Remote<WorkerApi>[];
  /** Rounds sent and not back, by id: each fails with the generation's reason. */
  rounds: Map<number, (why: string) => void>;
  /** Why it failed, once it has. */
  failed?: string;
  stopped: boolean;
  /** Fires when the set has gone `roundTimeoutMs` with rounds out and none answered. */
  watchdog?: ReturnType<typeof setTimeout>;
}

/**
 * A worker that fails (an error event, a message it cannot send, closing itself, a rejected call) fails
 * every round its generation holds: each gets a result placing nothing, with the reason, so the engine
 * carries on as after any round that placed nothing. The survivors are stopped, and the next round starts
 * a fresh set (not at once: workers that die on start-up cost a failed round each, not a restart loop).
 */
export class WorkerExecutor implements PlacementExecutor {
  readonly #module: URL;
  readonly #roundTimeoutMs: number | undefined;
  #gen: Generation;
  /** Results are handed over in the order the rounds were placed. */
  #tail: Promise<void> = Promise.resolve();
  /** Every round out, sent by `place` or `run`: `close` waits for them all. */
  readonly #out = new Set<Promise<PlacementResult>>();
  #rounds = 0;
  #closed = false;

  constructor(readonly partitions: number, options: WorkerExecutorOptions = {}) {
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new Error(`Cannot start ${partitions} placement workers: expected a positive integer`);
    }
    this.#module = options.module ?? new URL("./worker.ts", import.meta.url);
    const timeout = options.roundTimeoutMs;
    if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
      throw new Error(
        `Cannot watch placement workers with roundTimeoutMs ${timeout}: expected a positive number`,
      );
    }
    this.#roundTimeoutMs = timeout;
    this.#gen = this.#start();
  }

  place(round: PlacementRound, onResult: (result: PlacementResult) => void): void {
    // Posted now, not when the rounds before it are back: worker 0 queues it while this thread goes on.
    const result = this.run(round);
    // `result` never rejects; an error here is the engine's own, and stays loud without stopping the queue.
    this.#tail = this.#tail.then(() => result).then(onResult).catch(reportError);
  }

  /** Places one round in the workers (posted before this returns); a failed worker fails the round. */
  run(round: PlacementRound): Promise<PlacementResult> {
    if (this.#closed) throw new Error("Cannot place a round: the placement workers were closed");
    if (this.#gen.failed !== undefined) this.#gen = this.#start();
    const gen = this.#gen;
    const id = this.#rounds++;
    const out = new Promise<PlacementResult>((resolve) => {
      // Units and groups are copied, not transferred: a failed result can still be shaped from them.
      gen.rounds.set(id, (why) => resolve(nothingPlaced(round, why)));
      if (gen.rounds.size === 1) this.#watch(gen);
      gen.remotes[0].place(id, Comlink.transfer(round, hostBuffers(round.hosts))).then((result) => {
        gen.rounds.delete(id);
        // An answer is progress: the next round out gets the whole timeout again.
        this.#watch(gen);
        resolve(result);
      }, (err) => this.#fail(gen, 0, err));
    });
    this.#out.add(out);
    // A round's promise never rejects: it resolves with the result, or with nothing placed and why.
    out.then(() => this.#out.delete(out));
    return out;
  }

  /**
   * Waits for every round in flight, placed through `place` or `run` (a failed worker fails them), then
   * stops the workers. Rounds still out after `graceMs` (hung workers, whatever the round timeout) are
   * answered placing nothing, so that a stop never waits on them for long.
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const drained = (async () => {
      while (this.#out.size) await Promise.all(this.#out);
      await this.#tail;
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), graceMs));
    const outcome = await Promise.race([drained, late]);
    clearTimeout(timer);
    if (outcome === "late") {
      const gen = this.#gen;
      const why = `placement workers closed with rounds unanswered after ${graceMs} ms`;
      for (const fail of gen.rounds.values()) fail(why);
      gen.rounds.clear();
      await drained;
    }
    this.#stop(this.#gen);
  }

  #start(): Generation {
    const gen: Generation = { workers: [], remotes: [], rounds: new Map(), stopped: false };
    for (let i = 0; i < this.partitions; i++) {
      const w = new Worker(this.#module, { type: "module", name: `placement-${i}` });
      // Unhandled, a worker's error event would end this process.
      w.addEventListener("error", (e) => {
        e.preventDefault();
        this.#fail(gen, i, e.message);
      });
      w.addEventListener("messageerror", () => this.#fail(gen, i, "a message it sent could not be read"));
      w.addEventListener("message", (e) => {
        if (isClosingNotice(e.data)) this.#fail(gen, i, "it closed itself");
      });
      gen.workers.push(w);
      gen.remotes.push(Comlink.wrap<WorkerApi>(w));
    }
    // Worker 0 coordinates; the others serve their partitions to it over their own channel. Rounds queue
    // in order behind these messages, so they need not wait for the answers.
    const ports: MessagePort[] = [];
    for (let i = 1; i < this.partitions; i++) {
      const { port1, port2 } = new MessageChannel();
      ports.push(port1);
      gen.remotes[i].serve(Comlink.transfer(port2, [port2])).catch((err) => this.#fail(gen, i, err));
    }
    gen.remotes[0].coordinate(Comlink.transfer(ports, ports)).catch((err) => this.#fail(gen, 0, err));
    return gen;
  }

  /** (Re)arms the set's watchdog while it has rounds out; disarms it when it has none. */
  #watch(gen: Generation): void {
    if (this.#roundTimeoutMs === undefined) return;
    clearTimeout(gen.watchdog);
    gen.watchdog = undefined;
    if (!gen.rounds.size || gen.stopped) return;
    const ms = this.#roundTimeoutMs;
    gen.watchdog = setTimeout(() => this.#fail(gen, -1, `no round answered in ${ms} ms`), ms);
    // The watchdog alone does not keep a process alive.
    Deno.unrefTimer(gen.watchdog);
  }

  /** The first failure in a generation (worker -1: the set as a whole): logged once, workers stopped. */
  #fail(gen: Generation, worker: number, error: unknown): void {
    if (gen.failed !== undefined || gen.stopped) return;
    const text = error instanceof Error ? error.message : String(error);
    const who = worker < 0 ? "placement workers" : `placement worker ${worker}`;
    gen.failed = `${who} failed: ${text}`;
    console.error(
      `${worker < 0 ? "Placement workers" : `Placement worker ${worker}`} (of ${this.partitions}) failed; ` +
        `their rounds in flight place nothing, and the next round starts new workers:`,
      error,
    );
    this.#stop(gen);
    for (const fail of gen.rounds.values()) fail(gen.failed);
    gen.rounds.clear();
  }

  #stop(gen: Generation): void {
    if (gen.stopped) return;
    gen.stopped = true;
    clearTimeout(gen.watchdog);
    for (const r of gen.remotes) r[Comlink.releaseProxy]();
    for (const w of gen.workers) w.terminate();
  }
}

/** A round the workers could not run: every task unplaced, no stage counts, and why. */
function nothingPlaced(round: PlacementRound, error: string): PlacementResult {
  const slots = unitSlots(round);
  const ports = portOffsets(round, slots);
  return {
    hosts: new Int32Array(slots[slots.length - 1]).fill(-1),
    ports: new Int32Array(ports[ports.length - 1]),
    failures: round.units.map(() => new Int32Array(REASONS)),
    error,
  };
}
