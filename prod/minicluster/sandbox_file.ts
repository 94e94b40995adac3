/**
 * Opens a file of a task's sandbox for reading only if it is one: a regular file with no other name, in the
 * sandbox's own directory, reached through no symlink. A task runs as the scheduler's user and may put a link
 * where its `stderr` was; followed, it would serve whatever file the scheduler can read to anyone allowed to
 * browse sandboxes. Secrets refuse a path through a symlink in the sandbox the same way (`secrets.ts`).
 */
import { sandboxPath } from "./agent.ts";

/** A file that is there but is not the sandbox's own; its message says which and why. */
export class SandboxFileRefused extends Error {
  override name = "SandboxFileRefused";
}

/**
 * The file `name` of the task's sandbox on the agent, opened; undefined when there is nothing at its path.
 * Throws SandboxFileRefused, naming the file and task, for a symlink, a hard link, anything but a regular
 * file, or a sandbox reached through a symlink (its directory, or one above it below `dataDir`).
 * Deno has no open without following links, so the path is looked at (lstat) before it is opened, which
 * keeps a FIFO from blocking the open, and the opened file is then checked to be the one found there.
 */
export async function openSandboxFile(
  dataDir: string,
  agentId: string,
  taskId: string,
  name: string,
): Promise<Deno.FsFile | undefined> {
  const sandbox = sandboxPath(dataDir, agentId, taskId);
  const path = `${sandbox}/${name}`;
  const what = `${name} of task ${taskId}`;
  const before = await lstatOrUndefined(path);
  if (!before) return undefined;
  refuseUnlessOwnFile(before, what);
  let opened: Deno.FsFile;
  try {
    opened = await Deno.open(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  try {
    const [handle, after] = await Promise.all([opened.stat(), lstatOrUndefined(path)]);
    refuseUnlessOwnFile(handle, what);
    if (!after || after.isSymlink || after.dev !== handle.dev || after.ino !== handle.ino) {
      throw new SandboxFileRefused(`${what} was replaced while it was opened; not served`);
    }
    // A link above the file (the sandbox directory, or one holding it) leads out as well.
    if (await Deno.realPath(sandbox) !== sandboxPath(await Deno.realPath(dataDir), agentId, taskId)) {
      throw new SandboxFileRefused(`${what} is reached through a symlink, out of its sandbox; not served`);
    }
    return opened;
  } catch (e) {
    opened.close();
    throw e;
  }
}

function refuseUnlessOwnFile(info: Deno.FileInfo, what: string): void {
  if (info.isSymlink) {
    throw new SandboxFileRefused(`${what} is a symlink, a link out of its sandbox; not served`);
  }
  if (!info.isFile) throw new SandboxFileRefused(`${what} is not a regular file; not served`);
  // Another name of the file may be anywhere on its file system: the scheduler's store, say.
  if ((info.nlink ?? 1) > 1) {
    throw new SandboxFileRefused(
      `${what} is a hard link (the file has other names, out of its sandbox); not served`,
    );
  }
}

async function lstatOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}
