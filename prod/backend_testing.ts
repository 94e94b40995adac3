/** Test helpers for host backends: a launch spec, and a recorder of what a backend sends to its sink. */
import type { BackendEvent, LaunchSpec, TaskStatus } from "../core/ports/host_backend.ts";

export class Recorder {
  readonly events: BackendEvent[] = [];
  readonly batches: BackendEvent[][] = [];
  #waiters: { match: (e: BackendEvent) => boolean; resolve: (e: BackendEvent) => void }[] = [];
  /** Called for every status, e.g. to acknowledge like the host manager. */
  onStatus?: (s: TaskStatus) => void;
  /** Set by a test around calls that must not reach the sink synchronously. */
  guard = false;

  sink = (batch: BackendEvent[]): void => {
    if (this.guard) throw new Error("sink called synchronously");
    this.batches.push(batch);
    for (const event of batch) {
      this.events.push(event);
      if (event.kind === "task-status") this.onStatus?.(event.status);
      this.#waiters = this.#waiters.filter((w) => !(w.match(event) && (w.resolve(event), true)));
    }
  };

  /** A task's statuses in order. */
  statuses(taskId: string): TaskStatus[] {
    return this.events.flatMap((e) =>
      e.kind === "task-status" && e.status.taskId === taskId ? [e.status] : []
    );
  }

  states(taskId: string): string[] {
    return this.statuses(taskId).map((s) => s.state);
  }

  /** The health results reported for a task, in order. */
  health(taskId: string): boolean[] {
    return this.statuses(taskId).flatMap((s) =>
      s.state === "TASK_RUNNING" && s.healthy !== undefined ? [s.healthy] : []
    );
  }

  async waitFor(
    match: (e: BackendEvent) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<BackendEvent> {
    const seen = this.events.find(match);
    if (seen) return seen;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const found = new Promise<BackendEvent>((resolve) => this.#waiters.push({ match, resolve }));
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${what}; saw ${JSON.stringify(this.events)}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([found, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves with the first status matching `match`. */
  async waitStatus(match: (s: TaskStatus) => boolean, what: string, timeoutMs?: number): Promise<TaskStatus> {
    const e = await this.waitFor((e) => e.kind === "task-status" && match(e.status), what, timeoutMs);
    return (e as { status: TaskStatus }).status;
  }

  waitState(taskId: string, state: string, timeoutMs?: number): Promise<TaskStatus> {
    return this.waitStatus((s) => s.taskId === taskId && s.state === state, `${taskId} ${state}`, timeoutMs);
  }

  waitHealth(taskId: string, healthy: boolean, timeoutMs?: number): Promise<TaskStatus> {
    return this.waitStatus(
      (s) => s.taskId === taskId && s.state === "TASK_RUNNING" && s.healthy === healthy,
      `${taskId} healthy=${healthy}`,
      timeoutMs,
    );
  }
}

/** A small task for `host`: a shell command (a string) or a program with its arguments (an array). */
export function makeSpec(
  host: { hostname: string; agentId: string },
  command: string | string[],
  overrides: Partial<LaunchSpec> = {},
): LaunchSpec {
  const jobId = crypto.randomUUID();
  return {
    taskId: `${jobId}-0-1`,
    jobId,
    instanceId: 0,
    hostname: host.hostname,
    agentId: host.agentId,
    resources: { cpuMilli: 100, memMb: 32, diskMb: 0, gpuMilli: 0 },
    ports: {},
    command: typeof command === "string"
      ? { shell: true, value: command, arguments: [] }
      : { shell: false, value: command[0], arguments: command.slice(1) },
    env: {},
    killGracePeriodMs: 1000,
    labels: [],
    ...overrides,
  };
}

/** A zombie counts as dead: it no longer runs and only waits for its parent to reap it. */
export function isAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Every file under `dir` (symlinks not followed), by path. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await filesUnder(path));
    else if (e.isFile) out.push(path);
  }
  return out;
}
