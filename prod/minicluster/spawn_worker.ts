/** The worker thread of `WorkerSpawner`: spawns task processes and reports their pids and ends in batches. */
/// <reference lib="deno.worker" />
import { PosixSpawner } from "./posix_spawner.ts";
import {
  spawnHere,
  type SpawnReply,
  type SpawnRequest,
  type TaskProcess,
  type WorkerHello,
  type WorkerOptions,
} from "./spawner.ts";

/**
 * Spawns per turn of the event loop. Between turns the loop reaps the children that exited: each one
 * unreaped keeps a pidfd (Deno.Command) or a zombie (posix_spawn) around, and replies go out.
 */
const SPAWNS_PER_TURN = 16;

type Start = (req: SpawnRequest) => TaskProcess;

/**
 * posix_spawn through libc unless told `setsid`, or libc cannot be used here; told `posix_spawn`, it
 * refuses every spawn rather than fall back.
 */
function choose({ mode, libraryPath }: WorkerOptions): { start: Start; hello: WorkerHello } {
  const setsid = (why?: string): { start: Start; hello: WorkerHello } => {
    if (mode !== "posix_spawn") return { start: spawnHere, hello: { mode: "setsid", why } };
    const refuse = () => {
      throw new Error(`cannot start processes with posix_spawn: ${why}`);
    };
    return { start: refuse, hello: { mode: "none", why } };
  };
  if (mode === "setsid") return setsid();
  // Asked first: trying dlopen without the permission would prompt on a terminal.
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") {
    return setsid("no FFI permission (--allow-ffi)");
  }
  try {
    const posix = new PosixSpawner(libraryPath);
    return { start: (req) => posix.spawnSync(req), hello: { mode: "posix_spawn" } };
  } catch (e) {
    return setsid(e instanceof Error ? e.message : String(e));
  }
}

const { start, hello } = choose(JSON.parse(self.name || "{}"));
self.postMessage(hello);

let out: SpawnReply[] = [];
let flushing = false;
const queue: (SpawnRequest & { id: number })[] = [];
let draining = false;

// Replies made in one turn go back in one message.
function send(r: SpawnReply): void {
  out.push(r);
  if (flushing) return;
  flushing = true;
  setTimeout(() => {
    flushing = false;
    const batch = out;
    out = [];
    self.postMessage(batch);
  }, 0);
}

function spawnOne({ id, ...req }: SpawnRequest & { id: number }): void {
  let started;
  try {
    started = start(req);
  } catch (err) {
    send({ id, error: err instanceof Error ? err.message : String(err) });
    return;
  }
  send({ id, pid: started.pid });
  started.status.then(
    (s) => send({ id, status: { success: s.success, code: s.code, signal: s.signal } }),
    (err) => send({ id, error: `lost track of the process: ${err}` }),
  );
}

function drain(): void {
  for (let i = 0; i < SPAWNS_PER_TURN && queue.length; i++) spawnOne(queue.shift()!);
  if (queue.length) setTimeout(drain, 0);
  else draining = false;
}

self.onmessage = (e: MessageEvent<SpawnRequest & { id: number }>) => {
  queue.push(e.data);
  if (draining) return;
  draining = true;
  setTimeout(drain, 0);
};
