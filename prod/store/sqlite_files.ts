/**
 * Owner-only SQLite store files. The store holds jobs' secrets (base64, readable as they are), so its files
 * are 0600 and the data dir they live in 0700, set before SQLite creates or writes anything.
 */
import { OWNER_FILE } from "../minicluster/data_dir_owner.ts";

/** The files SQLite keeps beside a database (the WAL, its index, a rollback journal) and the store's claim. */
export const SQLITE_SIDE_FILES = ["-wal", "-shm", "-journal", ".claim"];

/**
 * Makes `path`'s database owner-only: its directory is tightened to 0700 if it is a Peloton data dir (one
 * holding an `owner` or `<role>.<instance>.owner` file: `peloton up` and the daemons lock theirs before they
 * open the store); a directory of the operator's own choosing (`--store sqlite:/srv/x.sqlite`) is left as it
 * is, since other files may live there, and one missing is not made (opening the store fails, naming it). The database file is created 0600 before SQLite opens it, so that SQLite gives the
 * WAL and its index that mode too (it copies the database's); existing ones are tightened to 0600.
 * `:memory:` has no files. Throws naming the file that could not be made private.
 */
export function guardSqliteFiles(path: string): void {
  if (path === "" || path === ":memory:" || path.startsWith("file:")) return;
  const slash = path.lastIndexOf("/");
  const dir = slash < 0 ? "." : slash === 0 ? "/" : path.slice(0, slash);
  let stat: Deno.FileInfo;
  try {
    stat = Deno.statSync(dir);
  } catch {
    return; // No directory to put it in: opening it fails, naming the file.
  }
  if (!stat.isDirectory) return;
  if (groupOrOther(stat) && isDataDir(dir)) at(dir, () => Deno.chmodSync(dir, 0o700));
  at(path, () => {
    Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 }).close();
    tighten(path);
  });
  for (const suffix of SQLITE_SIDE_FILES) at(path + suffix, () => tighten(path + suffix));
}

/** Sets `file` to 0600 if it exists and others may read it. */
function tighten(file: string): void {
  const stat = statIfThere(file);
  if (stat?.isFile && groupOrOther(stat)) Deno.chmodSync(file, 0o600);
}

function groupOrOther(stat: Deno.FileInfo): boolean {
  return stat.mode !== null && (stat.mode & 0o077) !== 0;
}

function isDataDir(dir: string): boolean {
  for (const e of Deno.readDirSync(dir)) {
    if (e.isFile && (e.name === OWNER_FILE || e.name.endsWith(`.${OWNER_FILE}`))) return true;
  }
  return false;
}

function statIfThere(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

function at(path: string, fn: () => void): void {
  try {
    fn();
  } catch (e) {
    throw new Error(`Cannot make SQLite store file ${path} private: ${(e as Error).message}`, { cause: e });
  }
}
