/** One agent's disk quota enforcement: Mesos's `disk/du` isolator with `--enforce_container_disk_quota`. */
import { directoryUsage, diskQuotaMessage } from "./disk_usage.ts";
import { sleep } from "./sleep.ts";

/**
 * How often a running task's sandbox is measured (Mesos's `--container_disk_watch_interval`, 15 s there):
 * shorter here, as the minicluster's sandboxes share the disk with the scheduler's own store.
 */
export const DEFAULT_CONTAINER_DISK_WATCH_INTERVAL_MS = 5_000;

interface Watched {
  sandbox: string;
  quotaBytes: number;
}

/**
 * Measures the sandboxes of an agent's running tasks that have a disk quota, `intervalMs` after the
 * previous measurement ended, all in one `du`; a task whose sandbox exceeds its quota is reported once
 * through `onExceeded`, with Mesos's message, for the agent to kill. Measuring runs only while some task
 * is watched, so an agent with none has no timer and no `du` left.
 */
export class DiskQuotaWatch {
  readonly #intervalMs: number;
  readonly #onExceeded: (taskId: string, message: string) => void;
  readonly #watched = new Map<string, Watched>();
  /** The measuring loop under way, and what ends its wait or its `du` once nothing is watched. */
  #loop?: { done: Promise<void>; stop: AbortController };

  constructor(intervalMs: number, onExceeded: (taskId: string, message: string) => void) {
    if (!(intervalMs > 0)) {
      throw new Error(
        `Cannot watch sandbox disk usage: the interval is ${intervalMs} ms, expected a positive number`,
      );
    }
    this.#intervalMs = intervalMs;
    this.#onExceeded = onExceeded;
  }

  /** Starts watching a running task's sandbox against its quota (bytes, > 0). */
  watch(taskId: string, sandbox: string, quotaBytes: number): void {
    this.#watched.set(taskId, { sandbox, quotaBytes });
    if (!this.#loop || this.#loop.stop.signal.aborted) {
      const stop = new AbortController();
      const done = this.#measure(stop).catch((e) => {
        // A failing `du` must not take the agent down; its tasks go unmeasured until one is watched anew.
        stop.abort();
        console.error(`minicluster: ${e instanceof Error ? e.message : e}`);
      });
      this.#loop = { done, stop };
    }
  }

  /**
   * Stops watching a task (it ended). Once no task is left it resolves only when the loop ended, its
   * timer cleared and its `du` gone; safe to call twice.
   */
  unwatch(taskId: string): Promise<void> {
    this.#watched.delete(taskId);
    if (this.#watched.size > 0 || !this.#loop) return Promise.resolve();
    const loop = this.#loop;
    loop.stop.abort();
    return loop.done;
  }

  async #measure(stop: AbortController): Promise<void> {
    const signal = stop.signal;
    while (!signal.aborted) {
      await sleep(this.#intervalMs, signal);
      const watched = [...this.#watched];
      if (signal.aborted) return;
      // Marked ended before it ends, so that a task watched from now on starts a loop of its own.
      if (watched.length === 0) return stop.abort();
      const usage = await directoryUsage(watched.map(([, w]) => w.sandbox), signal);
      for (const [taskId, w] of watched) {
        const bytes = usage.get(w.sandbox);
        // Told once: the task is being killed, its ending already set.
        if (bytes === undefined || bytes <= w.quotaBytes || !this.#watched.has(taskId)) continue;
        this.#watched.delete(taskId);
        this.#onExceeded(taskId, diskQuotaMessage(bytes, w.quotaBytes));
      }
    }
  }
}
