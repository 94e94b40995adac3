/** Starts task processes, in this thread or in a worker thread so that the event loop is not held up. */
import { sessionCommand, signalGroup } from "./_session.ts";

/** A task's command, run in `cwd` (made if missing) in a session of its own, its output already redirected. */
export interface SpawnRequest {
  program: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * A started process: its pid (also its process group id) and how it ended. By the time `status` settles,
 * whatever the process left running in its group was SIGKILLed too.
 */
export interface TaskProcess {
  pid: number;
  status: Promise<Deno.CommandStatus>;
}

export interface Spawner {
  /** Rejects when the process could not be started. */
  spawn(req: SpawnRequest): Promise<TaskProcess>;
  /** Ends the spawner; processes it started go on, but their ends are no longer reported. */
  close(): Promise<void>;
}

/** Deno's spawn call is synchronous: about a millisecond of the event loop for each task. */
export function spawnHere(req: SpawnRequest): TaskProcess {
  try {
    Deno.mkdirSync(req.cwd, { recursive: true });
  } catch (e) {
    throw new Error(`cannot create sandbox ${req.cwd}: ${e instanceof Error ? e.message : e}`);
  }
  const child = sessionCommand(req.program, req.args, {
    cwd: req.cwd,
    env: req.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const ended = (s: Deno.CommandStatus) => {
    signalGroup(child.pid, "SIGKILL");
    return s;
  };
  return { pid: child.pid, status: child.status.then(ended) };
}

export const inProcessSpawner: Spawner = {
  spawn: (req) => Promise.resolve().then(() => spawnHere(req)),
  close: () => Promise.resolve(),
};

/** What the worker sends back. */
export type SpawnReply =
  | { id: number; pid: number }
  | { id: number; error: string }
  | { id: number; status: { success: boolean; code: number; signal: Deno.Signal | null } };

interface Waiting {
  started?: { resolve: (p: TaskProcess) => void; reject: (e: Error) => void };
  ended?: { resolve: (s: Deno.CommandStatus) => void; reject: (e: Error) => void };
}

/**
 * Spawns in a worker thread: a burst of a thousand launches then costs the daemon's event loop a few
 * messages instead of a second of blocking calls, and uses the machine's other core.
 */
export class WorkerSpawner implements Spawner {
  readonly #worker = new Worker(new URL("./spawn_worker.ts", import.meta.url).href, { type: "module" });
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  #closed = false;

  constructor() {
    this.#worker.onmessage = (e: MessageEvent<SpawnReply[]>) => {
      for (const r of e.data) this.#reply(r);
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      this.#failAll(new Error(`the spawner thread failed: ${e.message}`));
    };
  }

  spawn(req: SpawnRequest): Promise<TaskProcess> {
    if (this.#closed) return Promise.reject(new Error("the spawner is closed"));
    const id = this.#nextId++;
    const w: Waiting = {};
    this.#waiting.set(id, w);
    const started = new Promise<TaskProcess>((resolve, reject) => (w.started = { resolve, reject }));
    this.#worker.postMessage({ id, ...req });
    return started;
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#worker.terminate();
      this.#failAll(new Error("the spawner was closed"));
    }
    return Promise.resolve();
  }

  #reply(r: SpawnReply): void {
    const w = this.#waiting.get(r.id);
    if (!w) return;
    if ("pid" in r) {
      const status = new Promise<Deno.CommandStatus>((resolve, reject) => (w.ended = { resolve, reject }));
      w.started?.resolve({ pid: r.pid, status });
      w.started = undefined;
    } else if ("error" in r) {
      this.#waiting.delete(r.id);
      w.started?.reject(new Error(r.error));
      w.ended?.reject(new Error(r.error));
    } else {
      this.#waiting.delete(r.id);
      w.ended?.resolve(r.status);
    }
  }

  #failAll(err: Error): void {
    for (const w of this.#waiting.values()) {
      w.started?.reject(err);
      w.ended?.reject(err);
    }
    this.#waiting.clear();
  }
}
