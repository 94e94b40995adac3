/** Task processes started by libc's posix_spawn, each leading its own session (production's, in a worker). */
import { PosixSpawn } from "./_posix_spawn.ts";
import { resolveProgramSync } from "./_session.ts";
import type { Spawner, SpawnRequest, TaskProcess } from "./spawner.ts";

const SIGKILL = 9;

/**
 * posix_spawn through libc (FFI) with POSIX_SPAWN_SETSID: no `setsid` program runs before each task (that
 * exec cost as much CPU as the task's own shell). Each spawn holds the calling thread until the child has
 * exec'd, so production calls it from the spawner's worker thread (`spawn_worker.ts`). It is synchronous
 * on purpose: spawning from Deno's blocking pool instead (FFI `nonblocking`) woke several threads per task,
 * and at 2,000 tasks/s that slowed every other process on a 2-core machine (MySQL's answers) several times.
 */
export class PosixSpawner implements Spawner {
  readonly #spawn: PosixSpawn;
  /**
   * Deno.Command's children get the daemon's environment under their own; so do these. Read once: a
   * daemon does not change its environment.
   */
  readonly #env = Object.entries(Deno.env.toObject()).map(([k, v]) => [k, `${k}=${v}`]);

  /** Throws when libc cannot be used (no FFI permission, no such library, a libc too old). */
  constructor(libraryPath?: string) {
    this.#spawn = new PosixSpawn(libraryPath);
  }

  /** Makes the sandbox and starts the process; throws when either cannot be done. */
  spawnSync(req: SpawnRequest): TaskProcess {
    try {
      Deno.mkdirSync(req.cwd, { recursive: true });
    } catch (e) {
      throw new Error(`cannot create sandbox ${req.cwd}: ${e instanceof Error ? e.message : e}`);
    }
    const env: string[] = [];
    for (const [k, entry] of this.#env) if (!(k in req.env)) env.push(entry);
    for (const k in req.env) env.push(`${k}=${req.env[k]}`);
    const program = req.program.includes("/")
      ? req.program
      : resolveProgramSync(req.program, req.cwd, req.env.PATH ?? Deno.env.get("PATH"));
    const child = this.#spawn.spawn({ program, args: req.args, cwd: req.cwd, env });
    const ended = (s: Deno.CommandStatus) => {
      // Usually nothing is left: libc's kill answers that without the cost of an exception.
      this.#spawn.killGroup(child.pid, SIGKILL);
      return s;
    };
    return { pid: child.pid, status: child.status.then(ended) };
  }

  spawn(req: SpawnRequest): Promise<TaskProcess> {
    return Promise.resolve().then(() => this.spawnSync(req));
  }

  close(): Promise<void> {
    this.#spawn.close();
    return Promise.resolve();
  }
}
