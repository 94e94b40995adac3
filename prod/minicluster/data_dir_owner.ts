/**
 * Data dir ownership. A process that needs a dir alone (`peloton up`, a minicluster) holds an exclusive lock
 * on `<dir>/owner`, a file naming it. The daemons of a multi-process cluster share their data dir (several
 * job managers, a leader and its standbys, the host manager's minicluster under it): each locks a file of its
 * own, `<dir>/<role>.<instance>.owner`, and none starts while a process holds the dir alone, nor that process
 * while any of them lives.
 */
import { endRecordedProcesses, startTicks } from "./_task_records.ts";

/**
 * The locks are the kernel's (`flock`), so they end with their process however that ends, kill -9 included:
 * a crashed holder never blocks a restart, and a pid reused since cannot pass for the holder. The files only
 * say who holds them. Task processes do not inherit them (Deno opens files close-on-exec).
 */
export const OWNER_FILE = "owner";
/** How the file of a daemon sharing the dir ends. */
const SHARER_SUFFIX = ".owner";

/** What an owner file says about the process that holds it. */
export interface DirOwner {
  pid: number;
  /** `/proc/<pid>/stat` field 22; absent where there is no `/proc`. */
  startTicks?: string;
  /** When it took the dir (ISO 8601). */
  startedAt: string;
  /** What took it, e.g. `peloton up`. */
  by: string;
}

/** A data dir that cannot be made or used (a path through a file, no permission), with the system's reason. */
export class DataDirError extends Error {
  override readonly name = "DataDirError";

  constructor(readonly dir: string, cause: Error) {
    super(`data dir ${dir} cannot be used: ${cause.message}`, { cause });
  }
}

/** Thrown when another live process holds the dir, or shares it; nothing in the dir was touched. */
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

/** A held (or, for a daemon, shared) data dir. */
export class DataDirOwnership {
  #file?: Deno.FsFile;

  /** `path`: the locked owner file, `<dir>/owner` unless the dir is shared. */
  constructor(readonly dir: string, file: Deno.FsFile, readonly path = ownerPath(dir)) {
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
      Deno.removeSync(this.path);
    } catch { /* removed already */ }
    file.close();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/**
 * Creates the data dir if missing, owner-only (0700: it holds task sandboxes, volumes and secrets, whatever
 * the store; a dir that exists is left as the operator made it); `DataDirError` when it cannot be.
 */
function makeDataDir(dir: string): void {
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new DataDirError(dir, e as Error);
  }
}

export function ownerPath(dir: string): string {
  return `${dir}/${OWNER_FILE}`;
}

/**
 * Takes `dir` (created if missing) for this process alone, or throws `DataDirInUseError` naming the live
 * process that holds it or a daemon that shares it. A dir whose owner died is taken over (its owner file is
 * rewritten), and files left by daemons that died are removed.
 */
export function ownDataDir(dir: string, by: string): DataDirOwnership {
  makeDataDir(dir);
  const path = ownerPath(dir);
  const file = inDataDir(
    dir,
    () => lockFile(path, () => new DataDirInUseError(dir, liveOwner(path) ?? liveSharer(dir))),
  );
  const owned = new DataDirOwnership(dir, file);
  // Held, the dir's owner lock keeps new daemons out (they check it once their own file is locked); the
  // ones that came before hold their files' locks.
  const stale: [string, Deno.FsFile][] = [];
  try {
    for (const sharer of inDataDir(dir, () => sharerPaths(dir))) {
      const other = openIfThere(sharer);
      if (!other) continue;
      if (other.tryLockSync(true)) {
        stale.push([sharer, other]);
        continue;
      }
      other.close();
      throw new DataDirInUseError(dir, liveOwner(sharer));
    }
    for (const [sharer] of stale) removeIfThere(sharer);
    writeOwner(dir, file, path, by);
  } catch (e) {
    owned.release();
    throw e;
  } finally {
    for (const [, other] of stale) other.close();
  }
  return owned;
}

/**
 * `ownDataDir` for a process whose agents run tasks under `dir` (a minicluster, the Mesos master emulator),
 * called before any of its agents comes up: once the dir is held, the task processes a holder that died left
 * running are ended (`endRecordedProcesses`). Not adopted: an agent cannot wait on a process it did not start
 * (a Mesos agent restarting without its checkpoints kills its executors too), so each would run on unseen
 * beside the one the scheduler launches once reconciliation finds the task unknown.
 */
export function takeOverDataDir(dir: string, by: string): DataDirOwnership {
  const owned = ownDataDir(dir, by);
  try {
    endRecordedProcesses(dir);
  } catch (e) {
    owned.release();
    throw e;
  }
  return owned;
}

/**
 * Joins the daemons sharing `dir` (created if missing) under `<dir>/<name>.owner`; `name` is unique to this
 * process (`jobmgr.<instance>`). Throws `DataDirInUseError` naming the process that holds the dir alone,
 * having left the dir as it was. Files left by daemons that died are removed.
 */
export function shareDataDir(dir: string, name: string, by: string): DataDirOwnership {
  makeDataDir(dir);
  const path = `${dir}/${name}${SHARER_SUFFIX}`;
  const file = inDataDir(dir, () =>
    lockFile(
      path,
      () => new Error(`Cannot share data dir ${dir}: ${path} is held by another process`),
    ));
  const shared = new DataDirOwnership(dir, file, path);
  try {
    // Written before the check, so that an owner starting now can name this process.
    writeOwner(dir, file, path, by);
    const alone = inDataDir(dir, () => openIfThere(ownerPath(dir)));
    if (alone) {
      // A shared lock: daemons checking at once do not stand in each other's way.
      const free = alone.tryLockSync(false);
      alone.close();
      if (!free) throw new DataDirInUseError(dir, liveOwner(ownerPath(dir)));
    }
  } catch (e) {
    shared.release();
    throw e;
  }
  for (const other of sharerPaths(dir)) {
    if (other === path) continue;
    const f = openIfThere(other);
    if (f?.tryLockSync(true)) removeIfThere(other);
    f?.close();
  }
  return shared;
}

/**
 * Opens `path` (created if missing) and takes its exclusive lock, or throws `busy()`. A holder releasing it
 * removes the file while still locked: a lock taken on a file no longer at `path` is taken again.
 */
function lockFile(path: string, busy: () => Error): Deno.FsFile {
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
      throw busy();
    }
    if (isFileAt(file, path)) return file;
    file.close();
  }
}

/** Writes what the owner file `path` says; `DataDirError` naming it when it cannot (a full disk). */
function writeOwner(dir: string, file: Deno.FsFile, path: string, by: string): void {
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
    throw new DataDirError(dir, new Error(`cannot write ${path}: ${(e as Error).message}`, { cause: e }));
  }
}

/**
 * `fn`'s result; a file system error in it (no permission, a full disk) as `DataDirError`, so that a start
 * says in one line which dir it could not use and why.
 */
function inDataDir<T>(dir: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof DataDirInUseError || e instanceof DataDirError || !(e instanceof Error)) throw e;
    throw new DataDirError(dir, e);
  }
}

/** The owner files of the daemons that share `dir` (live or not). */
function sharerPaths(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (e.isFile && e.name.endsWith(SHARER_SUFFIX) && e.name !== OWNER_FILE) out.push(`${dir}/${e.name}`);
  }
  return out.sort();
}

/** A live daemon sharing `dir`, for naming it when its lock was in the way. */
function liveSharer(dir: string): DirOwner | undefined {
  for (const path of sharerPaths(dir)) {
    const owner = liveOwner(path);
    if (owner) return owner;
  }
  return undefined;
}

function openIfThere(path: string): Deno.FsFile | undefined {
  try {
    return Deno.openSync(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

function removeIfThere(path: string): void {
  try {
    Deno.removeSync(path);
  } catch { /* removed already */ }
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
