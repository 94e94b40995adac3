/** The worker thread of `WorkerSpawner`: spawns task processes and reports their pids and ends in batches. */
/// <reference lib="deno.worker" />
import { spawnHere, type SpawnReply, type SpawnRequest } from "./spawner.ts";

/**
 * Spawns per turn of the event loop. Between turns the loop reaps the children that exited: each one
 * unreaped keeps a pidfd open, and every spawn copies and closes the whole descriptor table, so a backlog
 * of thousands makes each spawn slower.
 */
const SPAWNS_PER_TURN = 16;

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
    started = spawnHere(req);
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
