/**
 * The processes a task started, found through Linux's `/proc`, so a kill or the task's end reaches every one
 * of them (as a Mesos container's launcher does: the POSIX one by the process tree, cgroups by container).
 *
 * A task's process leads a session of its own, and each of its processes is the task's when any of these
 * holds:
 * - it is in that session (the session id is the leader's pid, kept by Linux while any member lives, even
 *   after the leader exited): what `timeout` (a process group of its own) or a shell's job control starts;
 * - its environment carries the run's mark (`RUN_ENV`), which every descendant inherits unless it clears its
 *   environment: what `setsid`, `nohup` or a daemon's double fork started, even once re-parented to init;
 * - its parent is the task's (by the parent pid chain);
 * - an earlier look found it the task's, and it is still that process (same start time).
 *
 * What still escapes: a process that both clears its environment (`env -i`) and leaves the session, and was
 * re-parented away from the task's processes before any look (e.g. the task exits right after starting it
 * as a double-forked daemon with an empty environment). Cgroups would catch it; there are none here.
 */

/** Set in every task process's environment to its run's mark (`runMark`). */
export const RUN_ENV = "PELOTON_MINICLUSTER_RUN";

/** A run's mark: unique per data dir, agent and task id (a task id names one run of an instance). */
export function runMark(dataDirMark: string, agentId: string, taskId: string): string {
  return `${dataDirMark}/agents/${agentId}/tasks/${taskId}`;
}

interface ProcStat {
  ppid: number;
  sid: number;
  /** Clock ticks since boot (`/proc/<pid>/stat` field 22): tells a process from a later one with its pid. */
  start: number;
}

/** One look at `/proc`; environments are read only when asked for, at most once each. */
export class ProcSnapshot {
  readonly stats = new Map<number, ProcStat>();
  readonly #environ = new Map<number, string[] | null>();

  /** Undefined where `/proc` cannot be listed (not Linux, or no permission): group signals alone apply. */
  static take(): ProcSnapshot | undefined {
    let entries: Iterable<Deno.DirEntry>;
    try {
      entries = Deno.readDirSync("/proc");
    } catch {
      return undefined;
    }
    const snap = new ProcSnapshot();
    try {
      for (const e of entries) {
        const pid = Number(e.name);
        if (!Number.isInteger(pid) || pid <= 1 || pid === Deno.pid) continue;
        let stat: string;
        try {
          stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
        } catch {
          continue; // exited meanwhile
        }
        // Fields from the third on: the command name (field 2) may hold spaces and parentheses.
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (f[0] === "Z") continue; // exited, only waiting to be reaped
        snap.stats.set(pid, { ppid: Number(f[4 - 3]), sid: Number(f[6 - 3]), start: Number(f[22 - 3]) });
      }
    } catch {
      return undefined;
    }
    return snap;
  }

  environ(pid: number): string[] | null {
    let env = this.#environ.get(pid);
    if (env === undefined) {
      try {
        env = Deno.readTextFileSync(`/proc/${pid}/environ`).split("\0");
      } catch {
        env = null; // gone, or another user's
      }
      this.#environ.set(pid, env);
    }
    return env;
  }
}

/** What is known of a run's processes between looks. */
export interface ProcessTree {
  /** The task's process: its pid is the session id. */
  leader: number;
  /** Its start time, when it was read: no process of the task started before it. */
  leaderStart?: number;
  /** `RUN_ENV=<mark>`. */
  mark: string;
  /** Every process found the task's so far, with its start time. */
  known: Map<number, number>;
}

/**
 * The sessions of the tasks of this process's agents that run now (their leaders' pids): a process in
 * another task's session is that task's, so its environment need not be read for this one's mark (with
 * many tasks running, those reads were most of a look's cost).
 */
export const taskSessions = new Set<number>();

/** The tree's processes alive in `snap` (its leader among them while it runs); `known` learns them. */
export function membersOf(tree: ProcessTree, snap: ProcSnapshot): number[] {
  const members = new Set<number>();
  for (const [pid, st] of snap.stats) {
    if (st.sid === tree.leader || tree.known.get(pid) === st.start) members.add(pid);
  }
  const since = tree.leaderStart ?? 0;
  for (const [pid, st] of snap.stats) {
    if (members.has(pid) || st.start < since || taskSessions.has(st.sid)) continue;
    if (snap.environ(pid)?.includes(tree.mark)) members.add(pid);
  }
  // Descendants, whatever their session or environment: until no new child turns up.
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, st] of snap.stats) {
      if (!members.has(pid) && members.has(st.ppid)) {
        members.add(pid);
        grew = true;
      }
    }
  }
  for (const pid of members) tree.known.set(pid, snap.stats.get(pid)!.start);
  for (const pid of tree.known.keys()) if (!members.has(pid)) tree.known.delete(pid);
  return [...members];
}

/** Signals each pid; one gone meanwhile is not an error. */
export function signalEach(pids: number[], signal: Deno.Signal): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, signal);
    } catch { /* exited meanwhile */ }
  }
}

/**
 * Snapshots shared by every caller within `windowMs`: a burst of task ends (a busy cluster ends hundreds a
 * second) costs one look at `/proc`, not one per task; a task's end is reported that much later.
 */
export class ProcScanner {
  #next?: Promise<ProcSnapshot | undefined>;

  constructor(readonly windowMs = 20) {}

  snapshot(): Promise<ProcSnapshot | undefined> {
    this.#next ??= new Promise((resolve) =>
      setTimeout(() => {
        this.#next = undefined;
        resolve(ProcSnapshot.take());
      }, this.windowMs)
    );
    return this.#next;
  }
}
