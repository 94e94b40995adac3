/** One live process at a time per data dir: an exclusive lock on `<dir>/owner`, a file naming its holder. */
import { startTicks } from "./_task_records.ts";

/**
 * The lock is the kernel's (`flock`), so it ends with its process however that ends, kill -9 included: a
 * crashed owner never blocks a restart, and a pid reused since cannot pass for the owner. The file only
 * says who holds it. Task processes do not inherit it (Deno opens files close-on-exec).
 */
export const OWNER_FILE = "owner";

/** What `<dir>/owner` says about the process that holds the dir. */
export interface DirOwner {
  pid: number;
  /** `/proc/<pid>/stat` field 22; absent where there is no `/proc`. */
  startTicks?: string;
  /** When it took the dir (ISO 8601). */
  startedAt: string;
  /** What took it, e.g. `peloton up`. */
  by: string;
}

/** Thrown when another live process holds the dir; nothing in the dir was touched. */
export class DataDirInUseError extends Error {
  override readonly name = "DataDirInUseError";

  constructor(readonly dir: string, readonly owner: DirOwner | undefined) {
    super(
      owner
        ? `data dir ${dir} is in use by pid ${owner.pid} (${owner.by}, started ${owner.startedAt})`
        : `data dir ${dir} is in use by another process`,
    );
  }
}

/** A held data dir. */
export class DataDirOwnership {
  #file?: Deno.FsFile;

  constructor(readonly dir: string, file: Deno.FsFile) {
    this.#file = file;
  }

  get held(): boolean {
    return this.#file !== undefined;
  }

  /** Removes the owner file and gives the dir up; safe to call twice. */
  release(): void {
    const file = this.#file;
    if (!file) return;
    this.#file = undefined;
    // Removed while still locked: whoever opened it meanwhile sees that it is no longer the dir's file.
    try {
      Deno.removeSync(ownerPath(this.dir));
    } catch { /* removed already */ }
    file.close();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

export function ownerPath(dir: string): string {
  return `${dir}/${OWNER_FILE}`;
}

/**
 * Takes `dir` (created if missing) for this process, or throws `DataDirInUseError` naming the live process
 * that holds it. A dir whose owner died is taken over; its owner file is rewritten.
 */
export function ownDataDir(dir: string, by: string): DataDirOwnership {
  Deno.mkdirSync(dir, { recursive: true });
  const path = ownerPath(dir);
  for (;;) {
    const file = Deno.openSync(path, { read: true, write: true, create: true });
    let locked: boolean;
    try {
      locked = file.tryLockSync(true);
    } catch (e) {
      file.close();
      throw e;
    }
    if (!locked) {
      file.close();
      throw new DataDirInUseError(dir, liveOwner(path));
    }
    // An owner releasing the dir removed the file after we opened it: its lock no longer guards the dir.
    if (!isFileAt(file, path)) {
      file.close();
      continue;
    }
    const me: DirOwner = {
      pid: Deno.pid,
      startTicks: startTicks(Deno.pid),
      startedAt: new Date().toISOString(),
      by,
    };
    try {
      file.truncateSync(0);
      writeAll(file, new TextEncoder().encode(JSON.stringify(me) + "\n"));
    } catch (e) {
      file.close();
      throw e;
    }
    return new DataDirOwnership(dir, file);
  }
}

/** The holder the owner file names, unless the file is not yet written or names a process since gone. */
export function liveOwner(path: string): DirOwner | undefined {
  let owner: DirOwner;
  try {
    owner = JSON.parse(Deno.readTextFileSync(path));
  } catch {
    return undefined;
  }
  if (!Number.isInteger(owner?.pid)) return undefined;
  // The file of an owner that died, read in the instant before its successor rewrote it.
  return startTicks(owner.pid) === owner.startTicks ? owner : undefined;
}

function isFileAt(file: Deno.FsFile, path: string): boolean {
  try {
    const open = file.statSync(), there = Deno.statSync(path);
    return open.ino === null || (open.ino === there.ino && open.dev === there.dev);
  } catch {
    return false; // removed
  }
}

function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length;) at += file.writeSync(bytes.subarray(at));
}
