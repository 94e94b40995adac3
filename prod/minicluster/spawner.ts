/** Starts task processes: through libc's posix_spawn, in this thread, or in a worker thread. */
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

/** Which spawner a minicluster uses; "auto" is production's. */
export type SpawnerKind = "auto" | "posix_spawn" | "setsid" | "in-process";

/**
 * "auto": a worker thread that starts processes with posix_spawn where libc can be used, else through
 * `setsid`; "posix_spawn" and "setsid" insist on one way (tests); "in-process": Deno.Command in this thread.
 */
export function createSpawner(kind: SpawnerKind, libraryPath?: string): Spawner {
  return kind === "in-process" ? inProcessSpawner : new WorkerSpawner(kind, libraryPath);
}

/** How a worker starts processes. */
export type SpawnerMode = "posix_spawn" | "setsid";

/**
 * A worker's first message: how it starts processes ("none": told to use posix_spawn, it cannot), and why
 * not with posix_spawn.
 */
export interface WorkerHello {
  mode: SpawnerMode | "none";
  why?: string;
}

/** What `spawn_worker.ts` is told through its name. */
export interface WorkerOptions {
  mode: "auto" | SpawnerMode;
  libraryPath?: string;
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

/**
 * Worker threads that spawn. A spawn holds its thread until the child has exec'd, which on a busy machine
 * takes up to a millisecond (the child waits for a CPU): one thread then caps launches near 1,000/s. More
 * than two competed with the daemon's own thread for the 2-core machine the benchmark runs on.
 */
const SPAWN_THREADS = 2;

interface Waiting {
  started?: { resolve: (p: TaskProcess) => void; reject: (e: Error) => void };
  ended?: { resolve: (s: Deno.CommandStatus) => void; reject: (e: Error) => void };
}

/**
 * Spawns in worker threads: a burst of a thousand launches then costs the daemon's event loop a few
 * messages instead of a second of blocking calls, and uses the machine's other core.
 */
export class WorkerSpawner implements Spawner {
  readonly #workers: Worker[] = [];
  readonly #waiting = new Map<number, Waiting>();
  readonly #hello = Promise.withResolvers<WorkerHello>();
  #nextId = 1;
  #closed = false;

  constructor(mode: "auto" | SpawnerMode = "auto", libraryPath?: string) {
    const name = JSON.stringify({ mode, libraryPath } satisfies WorkerOptions);
    for (let i = 0; i < SPAWN_THREADS; i++) {
      const worker = new Worker(new URL("./spawn_worker.ts", import.meta.url).href, { type: "module", name });
      worker.onmessage = (e: MessageEvent<SpawnReply[] | WorkerHello>) => {
        if (!Array.isArray(e.data)) return this.#hello.resolve(e.data);
        for (const r of e.data) this.#reply(r);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        this.#failAll(new Error(`the spawner thread failed: ${e.message}`));
      };
      this.#workers.push(worker);
    }
  }

  spawn(req: SpawnRequest): Promise<TaskProcess> {
    if (this.#closed) return Promise.reject(new Error("the spawner is closed"));
    const id = this.#nextId++;
    const w: Waiting = {};
    this.#waiting.set(id, w);
    const started = new Promise<TaskProcess>((resolve, reject) => (w.started = { resolve, reject }));
    this.#workers[id % this.#workers.length].postMessage({ id, ...req });
    return started;
  }

  /** How the worker starts processes (posix_spawn, or setsid and why). */
  mode(): Promise<WorkerHello> {
    return this.#hello.promise;
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const worker of this.#workers) worker.terminate();
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
