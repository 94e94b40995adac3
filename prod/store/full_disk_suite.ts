/**
 * A suite for the SQL stores on a disk that fills up: writes stall in order, the store says why, and they go
 * in once space is freed; as for a database out of reach.
 */
import { deepStrictEqual as equal, match, ok, rejects } from "node:assert/strict";
import { type Store, storeFailure, StoreUnavailableError, type StoreWrite } from "../../core/ports/store.ts";
import { orWithin } from "../settle.ts";
import { makeJob, put } from "./store_suite.ts";

/** A store on a database of its own whose disk a test fills and frees (SQL stores). */
export interface FullDisk {
  store: Store;
  /** The store's `unreachable()`: why its writes are stalled, as its daemon's /health says. */
  unreachable(): string | undefined;
  /** Fills the disk: from now on a write that needs more room fails as the database fails it then. */
  fill(): Promise<void>;
  /** Makes room again. */
  free(): Promise<void>;
  /** What a full disk's message names: the store's file, or its database. */
  where: string;
  /** Closes the store and removes its database. */
  close(): Promise<void>;
}

/** Opens a `FullDisk`; `onLostWrite` and `retryForMs` go to its store. */
export type OpenFullDisk = (
  options: { onLostWrite: (err: Error) => void; retryForMs?: number },
) => Promise<FullDisk>;

/** A job whose config no store finds room for in the pages it already has. */
function bigJob(jobId: string, version: number): StoreWrite {
  return { kind: "job.put", job: makeJob(jobId, { description: "x".repeat(2 * 1024 * 1024) }, { version }) };
}

const PENDING = Symbol("pending");

/** Polls `fn` until it returns a value, for up to `ms`. */
async function eventually<T>(what: string, fn: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function withFullDisk(
  open: OpenFullDisk,
  options: { retryForMs?: number },
  fn: (d: FullDisk, lost: Error[]) => Promise<void>,
): Promise<void> {
  const lost: Error[] = [];
  const d = await open({ ...options, onLostWrite: (err) => lost.push(err) });
  try {
    await fn(d, lost);
  } finally {
    await d.free();
    await d.close();
  }
}

/**
 * Registers the suite as one Deno test with a step per property; `open` gives each a database of its own.
 * `ignore` where the way to fill a disk cannot be had (mounting a file system needs root).
 */
export function fullDiskSuite(name: string, open: OpenFullDisk, options: { ignore?: boolean } = {}): void {
  const steps: Record<string, () => Promise<void>> = {
    "a full disk stalls writes in order, says so, and they go in once space is freed": () =>
      withFullDisk(open, {}, async (d, lost) => {
        const id = (n: number) => `full-${n}`;
        equal(await put(d.store, [bigJob(id(1), 1)]), undefined);
        await d.fill();
        const first = put(d.store, [bigJob(id(2), 1)]);
        // No done: a write no caller waits on, which would be a lost write (the process exits) if it failed.
        d.store.write([bigJob(id(2), 2)]);
        const third = put(d.store, [bigJob(id(3), 1)]);
        const why = await eventually("the store to say its disk is full", () => d.unreachable());
        match(why, /^the store's disk is full \(/);
        ok(why.includes(d.where), `"${why}" names ${d.where}`);
        // As for a database out of reach: a read behind the stalled writes is answered unavailable at once.
        await rejects(d.store.getJob(id(1)), (err: Error) => {
          ok(err instanceof StoreUnavailableError, String(err));
          match(err.message, /disk is full/);
          return true;
        });
        await new Promise((r) => setTimeout(r, 500));
        equal(await orWithin(first, 0, PENDING), PENDING, "the write waits for space");
        equal(lost, []);
        await d.free();
        equal(await orWithin(first, 20_000, PENDING), undefined);
        equal(await orWithin(third, 20_000, PENDING), undefined);
        await d.store.flush();
        equal(lost, []);
        equal((await d.store.getJob(id(2)))?.runtime.version, 2, "the writes went in, in order");
        ok(await d.store.getJob(id(3)));
        equal(d.unreachable(), undefined);
      }),

    "a write still stalled by a full disk at the retry bound fails unavailable, naming the disk": () =>
      withFullDisk(open, { retryForMs: 300 }, async (d, lost) => {
        const id = (n: number) => `bound-${n}`;
        await d.fill();
        const err = await put(d.store, [bigJob(id(1), 1)]);
        ok(err instanceof StoreUnavailableError, String(err));
        match(err.message, /^the store's disk is full \(/);
        ok(err.message.includes(d.where), `"${err.message}" names ${d.where}`);
        // What the API answers a create with: unavailable, which a client may retry.
        equal(storeFailure(err, "storing job").code, "unavailable");
        d.store.write([bigJob(id(2), 1)]);
        await d.store.flush();
        equal(lost.map((e) => e.name), ["StoreUnavailableError"]);
        await d.free();
        equal(await put(d.store, [bigJob(id(3), 1)]), undefined);
        equal(await d.store.getJob(id(1)), undefined, "nothing of the failed write was applied");
        equal(await d.store.getJob(id(2)), undefined);
      }),
  };
  Deno.test({
    name: `${name}: a full disk`,
    ignore: options.ignore,
    async fn(t) {
      for (const [what, fn] of Object.entries(steps)) await t.step(what, fn);
    },
  });
}
